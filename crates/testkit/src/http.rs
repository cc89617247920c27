//! Test support for `regent serve --http`: start the real binary on an
//! ephemeral loopback port, and talk to it with a deliberately raw HTTP/1.1
//! client over `std::net::TcpStream`, so tests control every header and byte
//! (wrong `Host`, half-sent bodies, dropped connections) and see exactly what
//! the server writes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{Era, WAIT, regent};

/// A running `regent serve --http 127.0.0.1:0 ...`.
pub struct HttpServer {
    child: Child,
    pub addr: SocketAddr,
    log: Arc<Mutex<String>>,
    /// Set by the thread that copies stderr into `log` once it has read
    /// the last byte (the pipe's end): only then is `log` all of it.
    stderr_done: Arc<AtomicBool>,
}

impl HttpServer {
    /// Starts `regent serve --http 127.0.0.1:0 ARGS...` and waits until it listens.
    pub fn start(args: &[&str]) -> HttpServer {
        let mut cmd = regent();
        cmd.arg("serve").arg("--http").arg("127.0.0.1:0").args(args);
        Self::spawn(cmd)
    }

    pub fn spawn(mut cmd: Command) -> HttpServer {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start regent");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let sink = log.clone();
        let stderr_done = Arc::new(AtomicBool::new(false));
        let done = stderr_done.clone();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.split("serving MCP at http://").nth(1)
                    && let Some(addr) = rest.split("/mcp").next()
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(addr.to_string());
                }
                sink.lock().unwrap().push_str(&(line + "\n"));
            }
            done.store(true, Ordering::SeqCst);
        });
        let addr = match rx.recv_timeout(WAIT) {
            Ok(a) => a.parse().expect("listening address"),
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "regent did not start listening\nstderr:\n{}",
                    log.lock().unwrap()
                );
            }
        };
        HttpServer {
            child,
            addr,
            log,
            stderr_done,
        }
    }

    /// What the server wrote to stderr so far, as the copying thread has
    /// read it: a line the server just wrote may not be here yet (wait for
    /// one with [`HttpServer::wait_for_stderr`]); after
    /// [`HttpServer::wait_exit`], it is all of it.
    pub fn stderr(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Waits until stderr holds `needle` (polling; fails after [`WAIT`]),
    /// and returns stderr so far.
    pub fn wait_for_stderr(&self, needle: &str) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let text = self.stderr();
            if text.contains(needle) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "stderr never said {needle:?}:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's process id (under `prlimit`, which execs it, regent's).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a signal to the server (SIGTERM = 15, SIGINT = 2).
    pub fn signal(&self, sig: i32) {
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill")
            .success();
        assert!(ok, "kill -{sig} failed");
    }

    /// Waits for the server to exit on its own, then for the copy of its
    /// stderr to reach the pipe's end, so that [`HttpServer::stderr`] is
    /// complete (an exited process's last lines can still be in the pipe).
    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                // A process the server started and left running would hold
                // the pipe open: then the deadline ends the wait, and the
                // test sees what was read.
                while !self.stderr_done.load(Ordering::SeqCst) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "regent did not exit\nstderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// One request on a fresh connection.
    pub fn send(&self, req: &Req) -> Resp {
        send(self.addr, req)
    }

    /// `GET /metrics` (with `token` when given), as text.
    pub fn metrics(&self, token: Option<&str>) -> String {
        let mut r = Req::get("/metrics");
        if let Some(t) = token {
            r = r.header("Authorization", &format!("Bearer {t}"));
        }
        let resp = self.send(&r);
        assert_eq!(resp.status, 200, "GET /metrics: {}", resp.text());
        resp.text()
    }

    /// The value of one sample in `/metrics` (a line `name{labels} value`).
    pub fn metric(&self, token: Option<&str>, series: &str) -> Option<f64> {
        self.metrics(token).lines().find_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            (name == series).then(|| value.parse().ok())?
        })
    }

    /// Waits until `series` reads `value` (polling; fails after [`WAIT`]).
    pub fn wait_for_metric(&self, token: Option<&str>, series: &str, value: f64) {
        let deadline = Instant::now() + WAIT;
        loop {
            if self.metric(token, series) == Some(value) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{series} never became {value}:\n{}",
                self.metrics(token)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP request as the test wants it written.
#[derive(Clone, Debug)]
pub struct Req {
    pub method: String,
    pub path: String,
    /// Headers in order. `Host` is added unless given.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Req {
    pub fn get(path: &str) -> Req {
        Req {
            method: "GET".into(),
            path: path.into(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// A POST to /mcp with the headers every Streamable HTTP client sends.
    pub fn mcp(body: &Value) -> Req {
        Req {
            method: "POST".into(),
            path: "/mcp".into(),
            headers: vec![
                ("Content-Type".into(), "application/json".into()),
                (
                    "Accept".into(),
                    "application/json, text/event-stream".into(),
                ),
            ],
            body: body.to_string().into_bytes(),
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Req {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn body(mut self, body: Vec<u8>) -> Req {
        self.body = body;
        self
    }

    /// The bytes of the request head (through the blank line).
    pub fn head(&self, addr: SocketAddr) -> Vec<u8> {
        let mut s = format!("{} {} HTTP/1.1\r\n", self.method, self.path);
        if !self
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("host"))
        {
            s.push_str(&format!("Host: {addr}\r\n"));
        }
        for (k, v) in &self.headers {
            s.push_str(&format!("{k}: {v}\r\n"));
        }
        if !self.body.is_empty() || self.method == "POST" {
            s.push_str(&format!("Content-Length: {}\r\n", self.body.len()));
        }
        s.push_str("Connection: close\r\n\r\n");
        s.into_bytes()
    }
}

/// A response as the server wrote it (chunked bodies decoded).
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The JSON-RPC messages in the body: the one JSON message, or each SSE
    /// `data:` line that holds one.
    pub fn messages(&self) -> Vec<Value> {
        let ct = self.header("content-type").unwrap_or("");
        if ct.starts_with("application/json") {
            return vec![
                serde_json::from_slice(&self.body)
                    .unwrap_or_else(|e| panic!("response body is not JSON ({e}): {}", self.text())),
            ];
        }
        if ct.starts_with("text/event-stream") {
            return self
                .sse_data()
                .map(|d| {
                    serde_json::from_slice(d).unwrap_or_else(|e| {
                        panic!("SSE data is not JSON ({e}): {}", String::from_utf8_lossy(d))
                    })
                })
                .collect();
        }
        panic!(
            "status {} with content-type {ct:?}: {}",
            self.status,
            self.text()
        );
    }

    /// Whether the body is an SSE stream (`text/event-stream`).
    pub fn is_sse(&self) -> bool {
        self.header("content-type")
            .is_some_and(|t| t.starts_with("text/event-stream"))
    }

    /// The non-empty `data:` of each SSE line of the body, unparsed.
    pub fn sse_data(&self) -> impl Iterator<Item = &[u8]> {
        self.body
            .split(|b| *b == b'\n')
            .filter_map(|l| l.strip_prefix(b"data:"))
            .map(<[u8]>::trim_ascii)
            .filter(|d| !d.is_empty())
    }

    /// The response to request `id` among the messages.
    pub fn response_to(&self, id: &Value) -> Value {
        self.messages()
            .into_iter()
            .find(|m| m.get("id") == Some(id) && m.get("method").is_none())
            .unwrap_or_else(|| panic!("no response to id {id} in: {}", self.text()))
    }
}

/// Writes `req` on a new connection and reads the whole response.
pub fn send(addr: SocketAddr, req: &Req) -> Resp {
    let mut stream = connect(addr);
    stream.write_all(&req.head(addr)).expect("write head");
    stream.write_all(&req.body).expect("write body");
    read_response(&mut stream)
}

pub fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    stream.set_read_timeout(Some(WAIT)).unwrap();
    stream
}

/// Reads a response to the end of the connection (`Connection: close`).
pub fn read_response(stream: &mut TcpStream) -> Resp {
    let mut raw = Vec::new();
    if let Err(e) = stream.read_to_end(&mut raw) {
        panic!(
            "reading the response failed ({e}); got so far: {}",
            String::from_utf8_lossy(&raw)
        );
    }
    parse_response(&raw)
}

pub fn parse_response(raw: &[u8]) -> Resp {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| {
            panic!(
                "no complete response head: {}",
                String::from_utf8_lossy(raw)
            )
        });
    let (status, headers) =
        parse_head(&String::from_utf8_lossy(&raw[..split])).unwrap_or_else(|e| panic!("{e}"));
    let rest = &raw[split + 4..];
    let body = if is_chunked(&headers) {
        dechunk(rest)
    } else {
        rest.to_vec()
    };
    Resp {
        status,
        headers,
        body,
    }
}

/// Reads one response off a keep-alive connection, leaving the connection
/// at the next one: the head, then `Content-Length` bytes or the chunks
/// (decoded), or no body. `Err` says what failed, for a load generator that
/// must report a broken connection rather than panic.
pub fn read_keepalive(r: &mut impl BufRead) -> Result<Resp, String> {
    let mut line = String::new();
    let read_line = |r: &mut dyn BufRead, line: &mut String| -> Result<(), String> {
        line.clear();
        match r.read_line(line) {
            Ok(0) => Err("connection closed".into()),
            Ok(_) => Ok(()),
            Err(e) => Err(format!("receive: {e}")),
        }
    };
    let mut head = String::new();
    loop {
        read_line(r, &mut line)?;
        if line.trim_end().is_empty() {
            break;
        }
        head.push_str(&line);
    }
    let (status, headers) = parse_head(&head)?;
    let mut body = Vec::new();
    let length = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok());
    if is_chunked(&headers) {
        loop {
            read_line(r, &mut line)?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or("0"), 16)
                .map_err(|_| format!("bad chunk size {line:?}"))?;
            if size == 0 {
                read_line(r, &mut line)?; // the blank line after the last chunk
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            r.read_exact(&mut body[start..])
                .map_err(|e| format!("receive: {e}"))?;
            read_line(r, &mut line)?; // CRLF after the chunk
        }
    } else if let Some(n) = length {
        body.resize(n, 0);
        r.read_exact(&mut body)
            .map_err(|e| format!("receive: {e}"))?;
    }
    Ok(Resp {
        status,
        headers,
        body,
    })
}

/// The status and headers of a response head (lines, CRLF or LF).
fn parse_head(head: &str) -> Result<(u16, Vec<(String, String)>), String> {
    let mut lines = head.lines();
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad status line: {status_line}"))?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    Ok((status, headers))
}

fn is_chunked(headers: &[(String, String)]) -> bool {
    headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    })
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = data.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size_text = String::from_utf8_lossy(&data[..eol]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16)
            .unwrap_or_else(|_| panic!("bad chunk size {size_text:?}"));
        data = &data[eol + 2..];
        if size == 0 || data.len() < size {
            out.extend_from_slice(&data[..size.min(data.len())]);
            return out;
        }
        out.extend_from_slice(&data[..size]);
        data = data.get(size + 2..).unwrap_or_default();
    }
}

/// An MCP client over HTTP in one protocol era: 2025-11-25 with a session
/// (`initialize`, then `Mcp-Session-Id` on every request) or 2026-07-28
/// (every request self-contained, with `_meta` and the standard headers).
pub struct McpHttp {
    pub addr: SocketAddr,
    pub era: Era,
    pub session: Option<String>,
    /// Extra headers on every request (e.g. `Authorization`).
    pub extra: Vec<(String, String)>,
    /// The client capabilities: in `initialize` (legacy), or in `_meta` on
    /// every request (modern; change it between requests to vary them).
    pub capabilities: Value,
    next_id: i64,
}

impl McpHttp {
    pub fn connect(addr: SocketAddr, era: Era) -> McpHttp {
        Self::connect_with(addr, era, Vec::new())
    }

    pub fn connect_with(addr: SocketAddr, era: Era, extra: Vec<(String, String)>) -> McpHttp {
        Self::connect_caps(addr, era, extra, json!({}))
    }

    /// A client with `capabilities` (see [`McpHttp::capabilities`]).
    pub fn connect_caps(
        addr: SocketAddr,
        era: Era,
        extra: Vec<(String, String)>,
        capabilities: Value,
    ) -> McpHttp {
        let mut c = McpHttp {
            addr,
            era,
            session: None,
            extra,
            capabilities,
            next_id: 0,
        };
        if era == Era::Legacy {
            let init = json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": c.capabilities,
                    "clientInfo": {"name": "regent-tests", "version": "1"}
                }
            });
            let resp = c.post(&init, "initialize");
            assert_eq!(resp.status, 200, "initialize: {}", resp.text());
            c.session = Some(
                resp.header("mcp-session-id")
                    .expect("initialize answers with Mcp-Session-Id")
                    .to_string(),
            );
            let r = resp.response_to(&json!(0));
            assert!(r.get("result").is_some(), "initialize failed: {r}");
            let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            let resp = c.post(&note, "notifications/initialized");
            assert_eq!(resp.status, 202, "initialized: {}", resp.text());
        }
        c
    }

    /// The `_meta` a 2026-07-28 client puts on every request.
    pub fn modern_meta(&self) -> Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": self.capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "regent-tests", "version": "1"}
        })
    }

    /// The request this client would send for `message`.
    pub fn req(&self, message: &Value, method: &str) -> Req {
        let mut r = Req::mcp(message);
        match self.era {
            Era::Legacy => {
                if let Some(s) = &self.session {
                    r = r
                        .header("Mcp-Session-Id", s)
                        .header("MCP-Protocol-Version", "2025-11-25");
                }
            }
            Era::Modern => {
                r = r
                    .header("MCP-Protocol-Version", "2026-07-28")
                    .header("Mcp-Method", method);
                if method == "tools/call"
                    && let Some(name) = message.pointer("/params/name").and_then(Value::as_str)
                {
                    r = r.header("Mcp-Name", name);
                }
            }
        }
        for (k, v) in &self.extra {
            r = r.header(k, v);
        }
        r
    }

    pub fn post(&self, message: &Value, method: &str) -> Resp {
        send(self.addr, &self.req(message, method))
    }

    /// The JSON-RPC request message for `method` with `params`.
    pub fn message(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let mut params = params;
        if self.era == Era::Modern
            && let Some(obj) = params.as_object_mut()
        {
            obj.insert("_meta".into(), self.modern_meta());
        }
        json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
    }

    /// Sends a request and returns the whole response message.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let msg = self.message(method, params);
        let resp = self.post(&msg, method);
        resp.response_to(&msg["id"])
    }

    /// The names `tools/list` gives, in its order.
    pub fn tool_names(&mut self) -> Vec<String> {
        let r = self.request("tools/list", json!({}));
        crate::listed_names(&r)
    }

    pub fn resolve(&mut self, tool: &str, args: Value) -> Value {
        let r = self.request("tools/resolve", json!({"name": tool, "arguments": args}));
        crate::result_of(&r, format_args!("tools/resolve {tool} {args}"))
    }

    pub fn expect_error(&mut self, method: &str, params: Value) -> Value {
        let r = self.request(method, params.clone());
        match r.get("error") {
            Some(e) => e.clone(),
            None => panic!("{method} {params} was expected to fail but answered {r}"),
        }
    }
}
