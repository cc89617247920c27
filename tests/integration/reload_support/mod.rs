//! A real MCP client for tests: spawns the built `regent` binary and talks
//! newline-delimited JSON-RPC over its stdin/stdout, keeping its stderr.
//!
//! Raw JSON lines rather than rmcp's client, because the tests assert wire
//! shapes (scoped notifications, `_meta`) that a typed client would hide.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The bound for anything a test waits for. Generous: tests run in
/// parallel on a small machine, and nothing here is a speed assertion.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// The `_meta` every 2026-07-28 request carries.
pub fn meta_2026() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "regent-tests", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

pub struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Value>,
    stderr: Arc<Mutex<String>>,
    next_id: u64,
    /// Notifications received so far, in order.
    pub notifications: Vec<Value>,
    /// Set for 2026-07-28 sessions: requests carry the era's `_meta`.
    era_2026: bool,
}

impl Server {
    /// Starts `regent serve ARGS...` in `cwd`.
    pub fn start(cwd: &Path, args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_regent"))
            .arg("serve")
            .args(args)
            .current_dir(cwd)
            .env("RUST_LOG", "regent=debug,rmcp=error")
            .env_remove("RUST_BACKTRACE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn regent");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let stderr_pipe = child.stderr.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("server wrote a line that is not json ({e}): {line}")
                });
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr_pipe).lines() {
                let Ok(line) = line else { break };
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        Server {
            child,
            stdin,
            lines,
            stderr,
            next_id: 1,
            notifications: Vec::new(),
            era_2026: false,
        }
    }

    /// Starts a server and opens a 2025-11-25 session (`initialize`).
    pub fn legacy(cwd: &Path, args: &[&str]) -> Server {
        let mut s = Server::start(cwd, args);
        let r = s.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "regent-tests", "version": "0"}}),
        );
        assert!(
            r.get("result").is_some(),
            "initialize failed: {r}\nstderr:\n{}",
            s.stderr()
        );
        s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    /// Starts a server and opens a 2026-07-28 session (`server/discover`).
    pub fn modern(cwd: &Path, args: &[&str]) -> Server {
        let mut s = Server::start(cwd, args);
        s.era_2026 = true;
        let r = s.request("server/discover", json!({}));
        assert!(
            r.get("result").is_some(),
            "discover failed: {r}\nstderr:\n{}",
            s.stderr()
        );
        s
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub fn send(&mut self, msg: Value) {
        let mut line = serde_json::to_vec(&msg).unwrap();
        line.push(b'\n');
        self.stdin.write_all(&line).expect("write to regent");
        self.stdin.flush().unwrap();
    }

    /// Sends a request without waiting; returns its id.
    pub fn send_request(&mut self, method: &str, mut params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        if self.era_2026 {
            params["_meta"] = meta_2026();
        }
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Sends a request and returns its response (the whole message),
    /// keeping any notifications that arrive before it.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.response(id)
    }

    pub fn response(&mut self, id: u64) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let msg = self.next_message(deadline).unwrap_or_else(|| {
                panic!(
                    "no response to request {id} within {PATIENCE:?}\nstderr:\n{}",
                    self.stderr()
                )
            });
            if msg.get("id") == Some(&json!(id)) && msg.get("method").is_none() {
                return msg;
            }
        }
    }

    /// The next message; notifications are also recorded.
    fn next_message(&mut self, deadline: Instant) -> Option<Value> {
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(wait) {
            Ok(msg) => {
                if msg.get("method").is_some() && msg.get("id").is_none() {
                    self.notifications.push(msg.clone());
                }
                Some(msg)
            }
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => {
                panic!("regent closed its stdout\nstderr:\n{}", self.stderr())
            }
        }
    }

    /// Waits (up to [`PATIENCE`]) for a notification with `method` beyond
    /// the first `seen` ones; returns it.
    pub fn wait_notification(&mut self, method: &str, seen: usize) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(n) = self
                .notifications
                .iter()
                .filter(|n| n["method"] == method)
                .nth(seen)
            {
                return n.clone();
            }
            if self.next_message(deadline).is_none() {
                panic!(
                    "no {method} notification within {PATIENCE:?}; got {:?}\nstderr:\n{}",
                    self.notifications,
                    self.stderr()
                );
            }
        }
    }

    pub fn count_notifications(&self, method: &str) -> usize {
        self.notifications
            .iter()
            .filter(|n| n["method"] == method)
            .count()
    }

    pub fn resolve(&mut self, tool: &str, arguments: Value) -> Value {
        self.request(
            "tools/resolve",
            json!({"name": tool, "arguments": arguments}),
        )
    }

    pub fn tool_names(&mut self) -> Vec<String> {
        let r = self.request("tools/list", json!({}));
        r["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("tools/list failed: {r}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    }

    pub fn status(&mut self) -> Value {
        let r = self.request("regent/status", json!({}));
        r.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("regent/status failed: {r}"))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `f` until it returns `Some`, for at most [`PATIENCE`].
pub fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() > deadline {
            panic!("{what}: not within {PATIENCE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
