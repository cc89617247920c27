//! The kit regent's tests and benches drive the real `regent` binary with:
//! start it and talk to it over stdio with newline-delimited JSON-RPC, in
//! either protocol era ([`Server`]), or over HTTP ([`http`]).
//!
//! This client is deliberately raw: it asserts on exactly what the server
//! writes. rmcp's own client ([`rmcp_client`], for the tests and benches
//! that want an independent, typed one) re-types results and drops the
//! fields the tool-resolution proposals add.
//!
//! The binary is the one Cargo built beside the test or bench that links
//! this kit ([`binary`]); a target can name another with [`set_binary`].
//!
//! [`upstream`] is the other side: a small upstream MCP server that
//! misbehaves on demand (slow, crashing, malformed, huge), for the tests of
//! how regent governs one; [`suite`] serves the conformance suite's tools
//! that need an upstream (binary `regent-suite-upstream`) on the same loop.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

pub mod draft_client;
pub mod http;
pub mod rmcp_client;
pub mod suite;
pub mod upstream;

use serde_json::{Value, json};

/// How long any single wait may take before the test fails with what it saw.
pub const WAIT: Duration = Duration::from_secs(20);

/// How long a server may take to load its catalog (its readiness line,
/// `catalog loaded`) before the test fails: generous, because what a load
/// runs grows with the catalog (`check`'s load-time exercise of every rule,
/// a hostile policy evaluated up to its memory budget) and shares the
/// machine with the other tests. A bound on a wait for an event, never a
/// measure of speed ([`Server::spawn_loaded`]).
pub const LOAD_WAIT: Duration = Duration::from_secs(180);

/// The line `regent serve` writes on stderr once its catalog is loaded,
/// checked and about to serve.
pub const READY_LINE: &str = "catalog loaded";

static BINARY: OnceLock<PathBuf> = OnceLock::new();

/// Makes `path` the binary the kit starts, e.g. a bench's
/// `set_binary(env!("CARGO_BIN_EXE_regent"))`. Only before the first start.
pub fn set_binary(path: impl Into<PathBuf>) {
    let path = path.into();
    if BINARY.set(path.clone()).is_err() {
        assert_eq!(binary(), path, "the kit already starts another binary");
    }
}

/// The `regent` binary the kit starts: the one given to [`set_binary`],
/// else the one Cargo built for the running test or bench. Cargo puts
/// those in `target/<profile>/deps/` and the binary in `target/<profile>/`
/// (the layout `CARGO_BIN_EXE_regent` names, which a library cannot read).
pub fn binary() -> &'static Path {
    BINARY.get_or_init(|| {
        if let Some(path) = std::env::var_os("CARGO_BIN_EXE_regent") {
            return path.into();
        }
        let exe = std::env::current_exe().expect("the test's own path");
        let mut dir = exe.parent().expect("the test's directory");
        if dir.ends_with("deps") {
            dir = dir.parent().expect("the profile directory");
        }
        let path = dir.join(format!("regent{}", std::env::consts::EXE_SUFFIX));
        assert!(
            path.is_file(),
            "no regent binary at {} (beside {}): call regent_testkit::set_binary",
            path.display(),
            exe.display()
        );
        path
    })
}

/// `regent` with no `RUST_LOG` and no colour: add the subcommand and arguments.
pub fn regent() -> Command {
    regent_at(binary())
}

/// [`regent`] for the binary at `bin` (the load generator measures any build).
pub fn regent_at(bin: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env_remove("RUST_LOG").env("NO_COLOR", "1");
    cmd
}

/// `regent serve --no-watch CATALOG` with standard input closed: the
/// catalog loads (or is refused) and, with no client, serving ends at once.
pub fn serve_once(catalog: &Path) -> std::process::Output {
    regent()
        .args(["serve", "--no-watch"])
        .arg(catalog)
        .stdin(Stdio::null())
        .output()
        .expect("the regent binary runs")
}

/// A loopback port that refuses every connection for as long as this
/// lives, and that no other socket can take meanwhile: a TCP socket bound
/// to it (without `SO_REUSEADDR`) and never listening. A connection to it
/// is refused at once, and the kernel gives the port to no other `bind`
/// nor to an outgoing connection as its source port, so "nothing answers
/// there" holds however many tests run beside (which a port bound and
/// released at once cannot promise: another process may take it
/// meanwhile).
pub struct ClosedPort {
    socket: socket2::Socket,
}

impl ClosedPort {
    pub fn new() -> ClosedPort {
        ClosedPort::bind(false)
    }

    /// A closed port for a server the test starts itself and must name a
    /// port to (`redis-server --port`), kept for it across its starts and
    /// stops: bound with `SO_REUSEADDR` and never listening, so a server
    /// that binds with `SO_REUSEADDR` (as servers do, redis-server among
    /// them) may listen on it, while a plain `bind` and the kernel's
    /// choice of a source port still pass it by. While the server is down
    /// the port refuses connections, as [`ClosedPort::new`]'s does.
    pub fn for_server() -> ClosedPort {
        ClosedPort::bind(true)
    }

    fn bind(reuse: bool) -> ClosedPort {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("a TCP socket");
        socket.set_reuse_address(reuse).expect("set SO_REUSEADDR");
        let any: std::net::SocketAddr = "127.0.0.1:0".parse().expect("an address");
        socket.bind(&any.into()).expect("bind 127.0.0.1:0");
        ClosedPort { socket }
    }

    pub fn addr(&self) -> std::net::SocketAddr {
        self.socket
            .local_addr()
            .expect("a bound socket's address")
            .as_socket()
            .expect("an IP address")
    }

    pub fn port(&self) -> u16 {
        self.addr().port()
    }
}

impl Default for ClosedPort {
    fn default() -> Self {
        ClosedPort::new()
    }
}

/// The repository's root: the kit lives in `crates/testkit`.
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("crates/testkit is two levels below the root")
}

/// `rel` under the repository's root (examples, fixtures, cases).
pub fn repo_path(rel: &str) -> PathBuf {
    repo_root().join(rel)
}

/// `git -C repo args…`, which must succeed; its standard output. Without
/// the user's or the system's configuration, and with an identity of its
/// own (`t`, `t@example.invalid`) for the commits it makes; a repository's
/// own configuration (`git config user.name …`) still applies to commits
/// made by others in it (a server under test).
pub fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .expect("git is installed");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("git's output is UTF-8")
}

/// A catalog in a fresh temp dir: each file `(name, content)`, where a
/// name may have directories (made as needed). The dir goes when dropped.
pub fn catalog(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, content) in files {
        let path = dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("catalog subdirectory");
        }
        std::fs::write(path, content).expect("catalog file");
    }
    dir
}

/// All text content of a `tools/call` result, joined.
pub fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// Whether a `tools/call` result is an error result.
pub fn is_error(result: &Value) -> bool {
    result["isError"] == json!(true)
}

/// A decision log's lines, one per decision: a call that ran also has an
/// `intent` line, written before it ran, which its `outcome` line repeats;
/// the intent line is left out.
pub fn decision_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad log line {l}: {e}")))
        .filter(|l: &Value| l["phase"] != "intent")
        .collect()
}

/// The decision id a `tools/call` result carries.
pub fn decision_id(result: &Value) -> String {
    result["_meta"]["regent/decision"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no decision id in {result}"))
        .to_string()
}

/// The `result` of the response `r` to `what`; an error response panics.
fn result_of(r: &Value, what: impl std::fmt::Display) -> Value {
    match r.get("result") {
        Some(res) => res.clone(),
        None => panic!("{what} failed: {r}"),
    }
}

/// The two protocol eras regent serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `initialize` handshake, protocol 2025-11-25.
    Legacy,
    /// No handshake; `_meta` on every request, protocol 2026-07-28.
    Modern,
}

impl Era {
    pub const ALL: [Era; 2] = [Era::Legacy, Era::Modern];
}

pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    /// The thread copying stderr into `stderr`: finished once it read the
    /// pipe's end, and only then is `stderr` all of it.
    stderr_reader: std::thread::JoinHandle<()>,
    next_id: i64,
    pub era: Era,
    /// The client capabilities: in `initialize` (legacy), or in `_meta` on
    /// every request (modern; change it between requests to vary them).
    pub capabilities: Value,
    /// Notifications seen while waiting for responses.
    pub notifications: Vec<Value>,
}

impl Server {
    /// Starts `regent serve ARGS...` and, for the legacy era, performs the handshake.
    pub fn start(era: Era, args: &[&str]) -> Server {
        let mut cmd = regent();
        cmd.arg("serve").args(args);
        Self::spawn(era, cmd)
    }

    /// [`Server::start`] for a client with `capabilities`.
    pub fn start_with(era: Era, args: &[&str], capabilities: Value) -> Server {
        let mut cmd = regent();
        cmd.arg("serve").args(args);
        Self::spawn_with(era, cmd, capabilities)
    }

    pub fn spawn(era: Era, cmd: Command) -> Server {
        Self::spawn_with(era, cmd, json!({}))
    }

    pub fn spawn_with(era: Era, cmd: Command, capabilities: Value) -> Server {
        let mut s = Self::launch(era, cmd, capabilities);
        s.handshake();
        s
    }

    /// [`Server::spawn`] for a catalog whose load may take long: waits for
    /// the server's readiness line ([`READY_LINE`]) up to [`LOAD_WAIT`]
    /// (failing at once, with its stderr, if it exits first), and only then
    /// sends the first request, whose answer gets the usual [`WAIT`].
    pub fn spawn_loaded(era: Era, cmd: Command) -> Server {
        let mut s = Self::launch(era, cmd, json!({}));
        s.wait_loaded();
        s.handshake();
        s
    }

    /// Waits for [`READY_LINE`] on stderr, up to [`LOAD_WAIT`].
    fn wait_loaded(&mut self) {
        let deadline = Instant::now() + LOAD_WAIT;
        loop {
            if self.stderr().contains(READY_LINE) {
                return;
            }
            if let Some(status) = self.child.try_wait().expect("wait") {
                // Its last lines may still be in the pipe: let the reader
                // thread catch up before showing them.
                let text = self.stderr_until(|t| t.contains(READY_LINE));
                assert!(
                    text.contains(READY_LINE),
                    "regent exited ({status}) before loading its catalog\nstderr:\n{text}"
                );
                return;
            }
            assert!(
                Instant::now() < deadline,
                "regent did not load its catalog within {LOAD_WAIT:?}\nstderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts the process and its readers; no request sent yet.
    fn launch(era: Era, mut cmd: Command, capabilities: Value) -> Server {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start regent");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = child.stderr.take().expect("stderr");
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = log.clone();
        let stderr_reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                sink.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        let stdin = child.stdin.take();
        Server {
            child,
            stdin,
            lines: rx,
            stderr: log,
            stderr_reader,
            next_id: 0,
            era,
            capabilities,
            notifications: Vec::new(),
        }
    }

    /// The legacy era's `initialize` handshake; nothing for the modern one.
    fn handshake(&mut self) {
        if self.era == Era::Legacy {
            let r = self.request(
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": self.capabilities.clone(),
                    "clientInfo": {"name": "regent-tests", "version": "1"}
                }),
            );
            assert!(r.get("result").is_some(), "initialize failed: {r}");
            self.notify("notifications/initialized", json!({}));
        }
    }

    /// What the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// stderr once `done` holds for it, or as it is after [`WAIT`]. The
    /// server writes logs before it answers, but another thread reads them.
    pub fn stderr_until(&self, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let log = self.stderr();
            if done(&log) || Instant::now() > deadline {
                return log;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Writes one raw line to the server.
    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        let msg = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send_line(&msg.to_string());
    }

    /// The `_meta` a 2026-07-28 client puts on every request.
    fn modern_meta(&self) -> Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": self.capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "regent-tests", "version": "1"}
        })
    }

    /// Sends a request and returns the whole response message.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.wait_for_id(&json!(id))
    }

    /// [`Server::request`] with the message's text passed through `edit`
    /// before it is sent: a test that spells a value by hand (`1.50`, which
    /// a `Value` writes `1.5`) puts a placeholder string in `params` and
    /// replaces it here.
    pub fn request_edited(
        &mut self,
        method: &str,
        params: Value,
        edit: impl FnOnce(String) -> String,
    ) -> Value {
        let id = self.send_request_edited(method, params, edit);
        self.wait_for_id(&json!(id))
    }

    /// Sends a request without waiting for its response; returns its id
    /// (for [`Server::wait_for_id`], or to match a stream's notifications).
    pub fn send_request(&mut self, method: &str, params: Value) -> i64 {
        self.send_request_edited(method, params, |line| line)
    }

    /// [`Server::send_request`], the message's text passed through `edit`.
    fn send_request_edited(
        &mut self,
        method: &str,
        params: Value,
        edit: impl FnOnce(String) -> String,
    ) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        let mut params = params;
        if self.era == Era::Modern
            && let Some(obj) = params.as_object_mut()
        {
            obj.insert("_meta".into(), self.modern_meta());
        }
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_line(&edit(msg.to_string()));
        id
    }

    /// Waits for the response whose id is `id`, keeping notifications.
    pub fn wait_for_id(&mut self, id: &Value) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let msg = self.next_message(deadline);
            if msg.get("id") == Some(id) && msg.get("method").is_none() {
                return msg;
            }
            if msg.get("method").is_some() && msg.get("id").is_none() {
                self.notifications.push(msg);
            }
        }
    }

    /// The next message the server writes, whatever it is.
    pub fn next_message(&mut self, deadline: Instant) -> Value {
        self.try_next_message(deadline).unwrap_or_else(|| {
            panic!(
                "no message from the server within {WAIT:?}\nstderr:\n{}",
                self.stderr()
            )
        })
    }

    /// The next message the server writes before `deadline`, if any.
    pub fn try_next_message(&mut self, deadline: Instant) -> Option<Value> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(line) => {
                Some(serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("server wrote a line that is not JSON ({e}): {line}")
                }))
            }
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => {
                panic!("the server closed stdout\nstderr:\n{}", self.stderr())
            }
        }
    }

    /// Waits (up to [`WAIT`]) for a notification with `method` beyond the
    /// first `seen` ones, keeping every notification; returns it.
    /// Responses that arrive meanwhile are dropped.
    pub fn wait_notification(&mut self, method: &str, seen: usize) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(n) = self
                .notifications
                .iter()
                .filter(|n| n["method"] == method)
                .nth(seen)
            {
                return n.clone();
            }
            match self.try_next_message(deadline) {
                Some(msg) if msg.get("method").is_some() && msg.get("id").is_none() => {
                    self.notifications.push(msg)
                }
                Some(_) => {}
                None => panic!(
                    "no {method} notification within {WAIT:?}; got {:?}\nstderr:\n{}",
                    self.notifications,
                    self.stderr()
                ),
            }
        }
    }

    /// How many notifications with `method` were kept so far.
    pub fn count_notifications(&self, method: &str) -> usize {
        self.notifications
            .iter()
            .filter(|n| n["method"] == method)
            .count()
    }

    /// `tools/resolve`; returns the result, panicking on an error.
    pub fn resolve(&mut self, tool: &str, args: Value) -> Value {
        let r = self.request("tools/resolve", json!({"name": tool, "arguments": args}));
        result_of(&r, format_args!("tools/resolve {tool} {args}"))
    }

    /// `tools/resolve`; returns the whole response, result or error.
    pub fn resolve_response(&mut self, tool: &str, args: Value) -> Value {
        self.request("tools/resolve", json!({"name": tool, "arguments": args}))
    }

    /// The names `tools/list` lists, in order.
    pub fn tool_names(&mut self) -> Vec<String> {
        let r = self.request("tools/list", json!({}));
        crate::listed_names(&r)
    }

    /// `regent/status`: the reload status document.
    pub fn status(&mut self) -> Value {
        let r = self.request("regent/status", json!({}));
        result_of(&r, "regent/status")
    }

    /// The server's process id (to signal it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a request that must fail; returns its `error` object.
    pub fn expect_error(&mut self, method: &str, params: Value) -> Value {
        let r = self.request(method, params.clone());
        match r.get("error") {
            Some(e) => e.clone(),
            None => panic!("{method} {params} was expected to fail but answered {r}"),
        }
    }

    /// Closes stdin and waits for the process to exit.
    pub fn finish(self) -> std::process::ExitStatus {
        self.finish_with_stderr().0
    }

    /// [`Server::finish`], and all the server wrote on stderr: once it
    /// exited, the copy is waited for up to the pipe's end (within [`WAIT`];
    /// a process it left running may hold the pipe open, and then the text
    /// is what was read by then).
    pub fn finish_with_stderr(mut self) -> (std::process::ExitStatus, String) {
        drop(self.stdin.take());
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                while !self.stderr_reader.is_finished() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
                return (status, self.stderr());
            }
            assert!(
                Instant::now() < deadline,
                "regent did not exit after stdin closed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A 2026-07-28 client driving `tools/call` of one tool through its
/// `input_required` rounds over raw JSON lines, for tests that check the
/// exact `inputRequests` and `requestState` on the wire.
pub struct Rounds {
    pub server: Server,
    tool: String,
}

impl Rounds {
    /// Rounds of `tool` on `server` (a [`Era::Modern`] one, whose
    /// capabilities go in every request's `_meta`).
    pub fn new(server: Server, tool: &str) -> Rounds {
        Rounds {
            server,
            tool: tool.to_string(),
        }
    }

    /// One `tools/call` with `args`, and `responses` as `inputResponses`
    /// and `state` as `requestState` when given; the whole response.
    pub fn call(&mut self, args: Value, responses: Option<Value>, state: Option<&str>) -> Value {
        let mut params = json!({"name": self.tool, "arguments": args});
        if let Some(r) = responses {
            params["inputResponses"] = r;
        }
        if let Some(s) = state {
            params["requestState"] = json!(s);
        }
        self.server.request("tools/call", params)
    }
}

/// The `requestState` of an `input_required` response; panics, showing the
/// response, when it has none.
pub fn state_of(response: &Value) -> String {
    response["result"]["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("no requestState in {response}"))
        .to_string()
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The tool names a `tools/list` response lists, in its order (either
/// client's).
pub fn listed_names(response: &Value) -> Vec<String> {
    response["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools/list failed: {response}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// Fails with both values printed when `actual` does not contain every key
/// of `expected` with an equal value (recursively for objects).
pub fn assert_subset(expected: &Value, actual: &Value, context: &str) {
    if let Err(path) = subset(expected, actual, String::new()) {
        panic!(
            "{context}: mismatch at {path}\n  expected (subset): {}\n  actual:            {}",
            serde_json::to_string_pretty(expected).unwrap(),
            serde_json::to_string_pretty(actual).unwrap()
        );
    }
}

fn subset(expected: &Value, actual: &Value, path: String) -> Result<(), String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, ev) in e {
                let p = format!("{path}/{k}");
                match a.get(k) {
                    Some(av) => subset(ev, av, p)?,
                    None => return Err(p),
                }
            }
            Ok(())
        }
        (e, a) if e == a => Ok(()),
        _ => Err(if path.is_empty() { "/".into() } else { path }),
    }
}
