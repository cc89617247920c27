//! MCP over Streamable HTTP: a minimal HTTP/1.1 keep-alive client on a raw
//! `TcpStream` (no HTTP library between the measurement and the wire), one
//! connection per client, one request at a time on each.
//!
//! Measured: regent (`regent serve --http ADDR`, issue 8) once the binary
//! has it, and the TypeScript peer over the SDK's Streamable HTTP transport.
//! The era is probed: a handshake-free 2026-07-28 request first (stateless,
//! `MCP-Protocol-Version`/`Mcp-Method`/`Mcp-Name` headers), then the
//! 2025-11-25 session (`initialize`, `Mcp-Session-Id`). Responses may be
//! JSON or an SSE stream; either is read to its end so the connection can be
//! reused.

use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use regent_testkit::http::read_keepalive;
use serde_json::Value;

use crate::floor::Floor;
use crate::stdio::{RunOut, Spawn};
use crate::workload::{Era, Workload, initialize, is_error, response_id};
use crate::{Cell, Mode, Opts, all_at_once, peer};

/// A server process listening on 127.0.0.1.
struct Server {
    child: Child,
    log: PathBuf,
}

impl Server {
    fn start(spawn: &Spawn, port: u16, log: &Path) -> Result<Server, String> {
        let file = std::fs::File::create(log).map_err(|e| e.to_string())?;
        let child = spawn
            .command()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(file))
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", spawn.program.display()))?;
        let mut s = Server {
            child,
            log: log.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(s);
            }
            if let Ok(Some(status)) = s.child.try_wait() {
                return Err(format!(
                    "exited with {status} before listening: {}",
                    s.stderr()
                ));
            }
            if Instant::now() > deadline {
                return Err(format!("not listening on port {port} after 60 s"));
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    fn stderr(&self) -> String {
        let t = std::fs::read_to_string(&self.log).unwrap_or_default();
        t.lines().rev().take(3).collect::<Vec<_>>().join(" / ")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free port on 127.0.0.1 (bound, then released for the server to take).
fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// One client: a keep-alive connection, and a session in the legacy era.
struct Client {
    r: BufReader<TcpStream>,
    w: TcpStream,
    port: u16,
    host: String,
    era: Era,
    session: Option<String>,
    next_id: u64,
}

/// A response's status, the headers we use, and the JSON-RPC message in it.
struct Reply {
    status: u16,
    session: Option<String>,
    message: Option<Vec<u8>>,
}

impl Client {
    fn connect(port: u16, era: Era) -> Result<Client, String> {
        let s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
        s.set_nodelay(true).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(Duration::from_secs(30)))
            .map_err(|e| e.to_string())?;
        let w = s.try_clone().map_err(|e| e.to_string())?;
        Ok(Client {
            r: BufReader::with_capacity(64 * 1024, s),
            w,
            port,
            host: format!("127.0.0.1:{port}"),
            era,
            session: None,
            next_id: 1,
        })
    }

    /// A fresh connection (and session) to the same server. Servers close
    /// keep-alive connections left idle for a few seconds (node's default is
    /// 5 s), and a client waits that long while the cells with fewer clients
    /// run, so every cell starts on new connections, outside the timing.
    fn reconnect(&mut self) -> Result<(), String> {
        let mut fresh = Client::connect(self.port, self.era)?;
        fresh.next_id = self.next_id;
        fresh.open()?;
        *self = fresh;
        Ok(())
    }

    /// Opens the session (legacy) or checks that a handshake-free request
    /// is answered (2026-07-28).
    fn open(&mut self) -> Result<(), String> {
        match self.era {
            Era::Legacy => {
                let id = self.take_id();
                let init = initialize(id);
                let reply = self.post(init.to_string().as_bytes(), "initialize", None)?;
                check_reply(&reply)?;
                self.session = reply.session;
                let reply = self.post(
                    br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                    "notifications/initialized",
                    None,
                )?;
                if !(200..300).contains(&reply.status) {
                    return Err(format!("notifications/initialized: HTTP {}", reply.status));
                }
                Ok(())
            }
            Era::Modern => {
                let id = self.take_id();
                let mut line = Vec::new();
                Workload::List.write_line(Era::Modern, id, &mut line);
                let reply = self.post(&line, "tools/list", None)?;
                check_reply(&reply)
            }
        }
    }

    fn take_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id - 1
    }

    fn post(&mut self, body: &[u8], method: &str, name: Option<&str>) -> Result<Reply, String> {
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.host,
            body.len()
        );
        match self.era {
            Era::Legacy => head.push_str("MCP-Protocol-Version: 2025-11-25\r\n"),
            Era::Modern => {
                head.push_str("MCP-Protocol-Version: 2026-07-28\r\n");
                head.push_str(&format!("Mcp-Method: {method}\r\n"));
                if let Some(n) = name {
                    head.push_str(&format!("Mcp-Name: {n}\r\n"));
                }
            }
        }
        if let Some(s) = &self.session {
            head.push_str(&format!("Mcp-Session-Id: {s}\r\n"));
        }
        head.push_str("\r\n");
        let mut req = head.into_bytes();
        req.extend_from_slice(body);
        self.w.write_all(&req).map_err(|e| format!("send: {e}"))?;
        self.read_reply()
    }

    fn read_reply(&mut self) -> Result<Reply, String> {
        let resp = read_keepalive(&mut self.r)?;
        let session = resp.header("mcp-session-id").map(str::to_string);
        let message = if resp.is_sse() {
            // The JSON-RPC response is the `data:` of an event; skip others.
            resp.sse_data()
                .find(|d| response_id(d).is_some())
                .map(<[u8]>::to_vec)
        } else if resp.body.is_empty() {
            None
        } else {
            Some(resp.body)
        };
        Ok(Reply {
            status: resp.status,
            session,
            message,
        })
    }

    /// `n` requests one at a time; every 997th answer checked against the
    /// SEP's table when `check` (not the floor's fixed answers).
    fn run_serial(&mut self, w: Workload, n: usize, check: bool, barrier: &Barrier) -> RunOut {
        let mut line = Vec::with_capacity(1024);
        let name = match w {
            Workload::Resolve | Workload::Annotations => Some("manage_files"),
            Workload::Call => Some("echo"),
            _ => None,
        };
        RunOut::serial(n, barrier, |i, out| {
            let id = self.take_id();
            line.clear();
            w.write_line(self.era, id, &mut line);
            let t = Instant::now();
            let reply = self.post(&line, w.method(), name);
            let elapsed = t.elapsed().as_nanos() as u64;
            let reply = match reply {
                Ok(r) => r,
                Err(e) => {
                    out.note(e);
                    return false;
                }
            };
            let Some(msg) = reply.message.filter(|_| reply.status == 200) else {
                out.note(format!("HTTP {} without a JSON-RPC answer", reply.status));
                return false;
            };
            if response_id(&msg) != Some(id) {
                out.note(format!(
                    "expected the answer to {id}: {}",
                    String::from_utf8_lossy(&msg)
                ));
                return false;
            }
            out.samples.record(elapsed);
            if is_error(&msg) {
                out.note(String::from_utf8_lossy(&msg).into_owned());
            } else if check && i % 997 == 0 {
                match serde_json::from_slice::<Value>(&msg) {
                    Ok(v) => {
                        if let Err(e) = w.check(id, &v) {
                            out.note(e);
                        }
                    }
                    Err(e) => out.note(format!("unparsable answer: {e}")),
                }
            }
            true
        })
    }
}

fn check_reply(r: &Reply) -> Result<(), String> {
    match &r.message {
        Some(m) if r.status == 200 && !is_error(m) => Ok(()),
        Some(m) => Err(format!("HTTP {}: {}", r.status, String::from_utf8_lossy(m))),
        None => Err(format!("HTTP {} without a JSON-RPC answer", r.status)),
    }
}

/// A server over HTTP and the clients connected to it.
struct Target {
    server: &'static str,
    era: Era,
    workloads: Vec<Workload>,
    clients: Vec<Client>,
    // What serves it, a process or the floor in this one, held until the
    // target is dropped (after the clients: fields drop in order).
    _running: Box<dyn std::any::Any>,
}

/// The name of the floor's cells.
pub const FLOOR: &str = "bare axum";

fn connect(port: u16, n: usize, eras: &[Era]) -> Result<(Era, Vec<Client>), String> {
    let mut last = String::new();
    for &era in eras {
        let mut clients = Vec::new();
        let opened = (0..n).try_for_each(|_| {
            let mut c = Client::connect(port, era)?;
            c.open()?;
            clients.push(c);
            Ok::<(), String>(())
        });
        match opened {
            Ok(()) => return Ok((era, clients)),
            Err(e) => last = format!("{} era: {e}", era.label()),
        }
    }
    Err(last)
}

/// Measures every HTTP server that can run. Returns the cells and a note for
/// each server that could not be measured.
pub fn run(
    opts: &Opts,
    regent: Option<&Spawn>,
    peer_ok: bool,
    logs: &Path,
) -> (Vec<Cell>, Vec<String>) {
    let max_clients = opts.http_clients.iter().copied().max().unwrap_or(1);
    let mut notes = Vec::new();
    let mut targets = Vec::new();
    let mut add = |server: &'static str,
                   spawn: Result<(Spawn, u16), String>,
                   eras: &[Era],
                   workloads: Vec<Workload>| {
        let started = spawn.and_then(|(spawn, port)| {
            eprintln!("load: starting {server} over HTTP on port {port}");
            let process = Server::start(&spawn, port, &logs.join(format!("http-{port}.stderr")))?;
            let (era, clients) = connect(port, max_clients, eras)
                .map_err(|e| format!("{e} (server log: {})", process.stderr()))?;
            Ok(Target {
                server,
                era,
                workloads,
                clients,
                _running: Box::new(process),
            })
        });
        match started {
            Ok(t) => targets.push(t),
            Err(e) => notes.push(format!("{server} over HTTP could not be measured: {e}")),
        }
    };
    if let Some(spawn) = regent {
        // Twice: stateless 2026-07-28 requests (what the floor is compared
        // with), and 2025-11-25 sessions (`Mcp-Session-Id`, through rmcp's
        // Streamable HTTP service), each in a process of its own.
        for eras in [&[Era::Modern, Era::Legacy][..], &[Era::Legacy][..]] {
            let with_port = free_port().map(|port| {
                let mut s = spawn.clone();
                // `regent serve --http ADDR PATH...`: the address goes before the catalog.
                s.args.insert(1, "--http".into());
                s.args.insert(2, format!("127.0.0.1:{port}"));
                (s, port)
            });
            add(
                "regent",
                with_port,
                eras,
                vec![Workload::List, Workload::Resolve, Workload::Annotations],
            );
        }
    }
    if peer_ok {
        add(
            "TypeScript SDK (SEP reference)",
            free_port().map(|p| (peer::http_spawn(p), p)),
            &[Era::Legacy],
            vec![Workload::List, Workload::Resolve],
        );
    }
    // The floor, when regent is measured: the ratio is what it is for.
    if regent.is_some() {
        let started = Floor::start().and_then(|floor| {
            eprintln!("load: starting the bare-axum floor on port {}", floor.port);
            let (era, clients) = connect(floor.port, max_clients, &[Era::Modern])?;
            Ok(Target {
                server: FLOOR,
                era,
                workloads: vec![Workload::List, Workload::Resolve],
                clients,
                _running: Box::new(floor),
            })
        });
        match started {
            Ok(t) => targets.push(t),
            Err(e) => notes.push(format!("{FLOOR} could not be measured: {e}")),
        }
    }
    // Warm up each client (the peer's JIT in particular).
    for t in &mut targets {
        let check = t.server != FLOOR;
        for c in &mut t.clients {
            for &w in &t.workloads {
                let _ = c.run_serial(w, opts.serial_requests / 5, check, &Barrier::new(1));
            }
        }
    }
    let mut cells: Vec<Cell> = Vec::new();
    for round in 0..opts.rounds {
        eprintln!("load: HTTP round {}/{}", round + 1, opts.rounds);
        for &clients in &opts.http_clients {
            for w in [Workload::List, Workload::Resolve, Workload::Annotations] {
                for t in &mut targets {
                    let check = t.server != FLOOR;
                    if !t.workloads.contains(&w) {
                        continue;
                    }
                    let n = opts.serial_requests;
                    let reconnected = t.clients[..clients]
                        .iter_mut()
                        .try_for_each(Client::reconnect);
                    let outs: Vec<RunOut> = if let Err(e) = reconnected {
                        let mut o = RunOut::default();
                        o.note(format!("reconnect: {e}"));
                        vec![o]
                    } else {
                        all_at_once(&mut t.clients[..clients], |c, b| {
                            c.run_serial(w, n, check, b)
                        })
                    };
                    // A target speaks one era and HTTP is measured serially
                    // only, so the server, request and clients name the cell.
                    let fresh = Cell::new(t.server, t.era, w, Mode::Serial, clients, n);
                    Cell::record(&mut cells, fresh, outs);
                }
            }
        }
    }
    (cells, notes)
}
