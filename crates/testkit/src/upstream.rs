//! A small upstream MCP server that misbehaves on demand, for the tests of
//! regent's upstream edge cases (issue 20), and the one JSON-RPC loop the
//! kit's upstream servers share ([`serve_with`], around a [`Tools`]; the
//! conformance suite's tools in [`crate::suite`] are the other one). It
//! speaks newline-delimited JSON-RPC by hand (std and serde_json only, no
//! SDK), so that it can send what no SDK would: an ill-typed result, an
//! answer after a cancellation. A tool may also ask the client something
//! during its call ([`Call::request`]); the loop hands the client's answer
//! to the call waiting for it.
//!
//! The misbehaving server's tools ([`serve`]):
//!
//! - `echo {text}`: answers with `text`.
//! - `slow {ms}`: sleeps `ms` milliseconds, then answers anyway (it notes a
//!   `notifications/cancelled` but does not stop).
//! - `crash`: writes to standard error and exits with status 3, mid-call.
//! - `malformed`: answers with a result whose `content` is not a list.
//! - `huge {bytes}`: answers with one text block of `bytes` bytes of `x`.
//! - `progress {steps, ms}`: first a `debug` log message `starting`, then
//!   for each step `i` of `steps`, `ms` milliseconds apart, a
//!   `notifications/progress` for the request's `_meta.progressToken` (when
//!   it has one: `progress` i, `total` steps, `message` `step i of steps`)
//!   and an `info` log message `step i of steps` (logger `edge`); then answers
//!   `did {steps} steps`.
//! - `announce`: sends `notifications/tools/list_changed`, then answers.
//! - `ask {ask: [..]}`: during the call, sends regent (as the client) each
//!   request named, in order, and waits for its answer: `elicit` an
//!   `elicitation/create` in form mode (message `pick a colour`, one string
//!   field `colour`), `elicit_url` one in URL mode, `roots` a `roots/list`,
//!   `sample` a `sampling/createMessage` (one user message `say hi`); then
//!   answers with a JSON object of what each got (`{"result": ..}` or
//!   `{"error": ..}`), as text. Other words are left for the policy.
//!
//! Its listing can change while it runs: [`TOOLS_FILE_ENV`] names a JSON
//! file read at each `tools/list`, whose fields are merged into the tools
//! it names (a changed description, annotations).
//!
//! Each call, each cancellation and each answer sent is appended to the log
//! file, if given: `call NAME ID`, `cancelled ID` and `answered NAME ID`
//! (the JSON of the request id), one a line; a test waits for a late
//! answer by its line, not for a time.
//!
//! [`serve`] runs it on any reader and writer; the tests host it in their
//! own binary (see `tests/integration/upstream_edges.rs`).

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use serde_json::{Value, json};

/// What `malformed` writes as its result: well-formed JSON, ill-typed MCP.
pub const MALFORMED_MARK: &str = "MALFORMED-PAYLOAD";

/// Names of more tools to list, as a JSON array in this variable (each
/// with an empty schema): for tests of names regent must leave out.
pub const EXTRA_TOOLS_ENV: &str = "EDGE_EXTRA_TOOLS";

/// A file of changes to the listing, read at each `tools/list`: a JSON
/// object `{TOOL: {FIELD: VALUE, ...}}`, each field set on that tool (a
/// tool it names that is not listed is added). Absent or unreadable: no
/// change. For tests of drift from a pinned snapshot.
pub const TOOLS_FILE_ENV: &str = "EDGE_TOOLS_FILE";

fn tools() -> Value {
    let object = |props: Value| json!({"type": "object", "properties": props});
    let extra: Vec<String> = std::env::var(EXTRA_TOOLS_ENV)
        .ok()
        .and_then(|v| serde_json::from_str(&v).ok())
        .unwrap_or_default();
    let mut tools = fixed_tools();
    for name in extra {
        tools.as_array_mut().unwrap().push(
            json!({"name": name, "description": "An extra tool.", "inputSchema": object(json!({}))}),
        );
    }
    let changes: serde_json::Map<String, Value> = std::env::var_os(TOOLS_FILE_ENV)
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let list = tools.as_array_mut().unwrap();
    for (name, fields) in changes {
        let i = match list.iter().position(|t| t["name"] == name.as_str()) {
            Some(i) => i,
            None => {
                list.push(json!({"name": name, "inputSchema": object(json!({}))}));
                list.len() - 1
            }
        };
        for (k, v) in fields.as_object().into_iter().flatten() {
            list[i][k] = v.clone();
        }
    }
    tools
}

fn fixed_tools() -> Value {
    let object = |props: Value| json!({"type": "object", "properties": props});
    json!([
        {"name": "echo", "description": "Answers with its text.",
         "inputSchema": object(json!({"text": {"type": "string"}}))},
        {"name": "slow", "description": "Sleeps, then answers, cancelled or not.",
         "inputSchema": object(json!({"ms": {"type": "integer"}}))},
        {"name": "crash", "description": "Exits mid-call.", "inputSchema": object(json!({}))},
        {"name": "malformed", "description": "Answers with an ill-typed result.",
         "inputSchema": object(json!({}))},
        {"name": "huge", "description": "Answers with that many bytes of text.",
         "inputSchema": object(json!({"bytes": {"type": "integer"}}))},
        {"name": "progress", "description": "Reports progress and logs, then answers.",
         "inputSchema": object(json!({"steps": {"type": "integer"}, "ms": {"type": "integer"}}))},
        {"name": "announce", "description": "Says its tools changed, then answers.",
         "inputSchema": object(json!({}))},
        {"name": "ask", "description": "Asks the client, then answers with what it got.",
         "inputSchema": object(json!({"ask": {"type": "array", "items": {"type": "string"}}}))},
    ])
}

fn note(log: &Option<PathBuf>, line: &str) {
    if let Some(path) = log
        && let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
    {
        let _ = writeln!(f, "{line}");
    }
}

fn send(out: &Mutex<dyn Write + Send>, message: Value) {
    let mut o = out.lock().unwrap_or_else(|p| p.into_inner());
    let _ = writeln!(o, "{message}");
    let _ = o.flush();
}

/// What one server of the kit serves; [`serve_with`] runs the loop around it.
pub trait Tools: Send + Sync + 'static {
    /// `serverInfo.name` in the answer to `initialize`.
    fn server_name(&self) -> &'static str;
    /// The capabilities it declares.
    fn capabilities(&self) -> Value {
        json!({"tools": {}})
    }
    /// The `tools` of its `tools/list` answer.
    fn list(&self) -> Value;
    /// The result of one `tools/call`, on a thread of its own.
    fn call(&self, call: &Call) -> Value;
}

/// The writer to the client and the calls waiting for its answers.
#[derive(Clone)]
struct Peer {
    out: Arc<Mutex<dyn Write + Send>>,
    waiting: Arc<Mutex<HashMap<String, mpsc::Sender<Value>>>>,
    next_id: Arc<AtomicU64>,
}

impl Peer {
    fn send(&self, message: Value) {
        send(&self.out, message);
    }
}

/// One `tools/call` as a tool sees it.
pub struct Call {
    /// The tool's name.
    pub name: String,
    /// `params.arguments` (null when absent).
    pub arguments: Value,
    /// `params._meta` (null when absent).
    pub meta: Value,
    /// The capabilities the client declared in `initialize`.
    pub client_capabilities: Value,
    peer: Peer,
}

impl Call {
    /// Sends the client a notification.
    pub fn notify(&self, method: &str, params: Value) {
        self.peer
            .send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends `notifications/progress` for the call's progress token; nothing
    /// when the call has none.
    pub fn progress(&self, progress: u64, total: u64, message: Option<String>) {
        let token = &self.meta["progressToken"];
        if token.is_null() {
            return;
        }
        let mut params = json!({"progressToken": token, "progress": progress, "total": total});
        if let Some(message) = message {
            params["message"] = message.into();
        }
        self.notify("notifications/progress", params);
    }

    /// Asks the client (`sampling/createMessage`, `elicitation/create`, ...)
    /// and waits up to `timeout` for its answer: `Ok(result)`, or
    /// `Err(error)` with the client's JSON-RPC error (or one of the kit's
    /// own saying it never came).
    pub fn request(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, Value> {
        let id = format!(
            "{}-{}",
            method,
            self.peer.next_id.fetch_add(1, Ordering::Relaxed)
        );
        let (tx, rx) = mpsc::channel();
        lock(&self.peer.waiting).insert(json!(id).to_string(), tx);
        self.peer
            .send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let answer = rx.recv_timeout(timeout);
        lock(&self.peer.waiting).remove(&json!(id).to_string());
        match answer {
            Ok(message) if message.get("result").is_some() => Ok(message["result"].clone()),
            Ok(message) => Err(message["error"].clone()),
            Err(_) => Err(json!({"code": -32001,
                                 "message": format!("no answer to {method} within {timeout:?}")})),
        }
    }
}

fn lock<T: ?Sized>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The misbehaving server of the module's doc.
struct Edge;

impl Tools for Edge {
    fn server_name(&self) -> &'static str {
        "edge-upstream"
    }

    /// It says when its tools change (`announce`).
    fn capabilities(&self) -> Value {
        json!({"tools": {"listChanged": true}})
    }

    fn list(&self) -> Value {
        tools()
    }

    fn call(&self, call: &Call) -> Value {
        let args = &call.arguments;
        let text = |t: String| json!({"content": [{"type": "text", "text": t}]});
        match call.name.as_str() {
            "echo" => text(args["text"].as_str().unwrap_or_default().into()),
            "slow" => {
                let ms = args["ms"].as_u64().unwrap_or(0);
                std::thread::sleep(Duration::from_millis(ms));
                text(format!("slept {ms} ms"))
            }
            "crash" => {
                eprintln!("edge-upstream: crashing on purpose");
                std::process::exit(3);
            }
            "malformed" => json!({"content": MALFORMED_MARK, "isError": "perhaps"}),
            "progress" => {
                let steps = args["steps"].as_u64().unwrap_or(0);
                let ms = args["ms"].as_u64().unwrap_or(0);
                let log = |level: &str, data: String| {
                    call.notify(
                        "notifications/message",
                        json!({"level": level, "logger": "edge", "data": data}),
                    );
                };
                log("debug", "starting".into());
                for i in 1..=steps {
                    if i > 1 {
                        std::thread::sleep(Duration::from_millis(ms));
                    }
                    call.progress(i, steps, Some(format!("step {i} of {steps}")));
                    log("info", format!("step {i} of {steps}"));
                }
                text(format!("did {steps} steps"))
            }
            "announce" => {
                call.notify("notifications/tools/list_changed", json!({}));
                text("announced".into())
            }
            "ask" => {
                let mut got = serde_json::Map::new();
                for what in args["ask"].as_array().into_iter().flatten() {
                    let what = what.as_str().unwrap_or_default();
                    let (method, params) = match what {
                        "elicit" => (
                            "elicitation/create",
                            json!({
                            "mode": "form", "message": "pick a colour",
                            "requestedSchema": {"type": "object",
                                "properties": {"colour": {"type": "string"}},
                                "required": ["colour"]}}),
                        ),
                        "elicit_url" => (
                            "elicitation/create",
                            json!({
                            "mode": "url", "message": "sign in",
                            "url": "https://example.com/sign-in",
                            "elicitationId": "e-1"}),
                        ),
                        "roots" => ("roots/list", json!({})),
                        // A float in the request: rmcp parses it before
                        // regent sees its text.
                        "sample_warm" => (
                            "sampling/createMessage",
                            json!({
                            "messages": [{"role": "user",
                                "content": {"type": "text", "text": "say hi"}}],
                            "maxTokens": 10, "temperature": 0.5}),
                        ),
                        "sample" => (
                            "sampling/createMessage",
                            json!({
                            "messages": [{"role": "user",
                                "content": {"type": "text", "text": "say hi"}}],
                            "maxTokens": 10}),
                        ),
                        // A word for the policy under test.
                        _ => continue,
                    };
                    let answer = match call.request(method, params, Duration::from_secs(30)) {
                        Ok(result) => json!({"result": result}),
                        Err(error) => json!({"error": error}),
                    };
                    got.insert(what.to_string(), answer);
                }
                text(Value::Object(got).to_string())
            }
            "huge" => {
                let n = args["bytes"].as_u64().unwrap_or(0) as usize;
                text("x".repeat(n))
            }
            name => {
                json!({"content": [{"type": "text", "text": format!("no tool {name}")}], "isError": true})
            }
        }
    }
}

/// Serves the misbehaving server until `input` ends.
pub fn serve(input: impl BufRead, output: impl Write + Send + 'static, log: Option<&Path>) {
    serve_with(Edge, input, output, log);
}

/// Serves `tools` until `input` ends. Each `tools/call` runs on a thread of
/// its own, so a slow call does not hold up the next message, and an answer
/// of the client to a call's request reaches the call that is waiting for it.
pub fn serve_with(
    tools: impl Tools,
    input: impl BufRead,
    output: impl Write + Send + 'static,
    log: Option<&Path>,
) {
    let tools = Arc::new(tools);
    let peer = Peer {
        out: Arc::new(Mutex::new(output)),
        waiting: Arc::default(),
        next_id: Arc::default(),
    };
    let log = log.map(Path::to_path_buf);
    let mut client_capabilities = Value::Null;
    for line in input.lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let id = msg["id"].clone();
        let answer = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
        let Some(method) = msg["method"].as_str() else {
            // An answer of the client to one of the calls' requests.
            if let Some(waiting) = lock(&peer.waiting).get(&id.to_string()) {
                let _ = waiting.send(msg);
            }
            continue;
        };
        match method {
            "initialize" => {
                client_capabilities = msg["params"]["capabilities"].clone();
                let version = msg["params"]["protocolVersion"].clone();
                peer.send(answer(json!({
                    "protocolVersion": version,
                    "capabilities": tools.capabilities(),
                    "serverInfo": {"name": tools.server_name(), "version": "1"},
                })));
            }
            "ping" | "logging/setLevel" => peer.send(answer(json!({}))),
            "tools/list" => peer.send(answer(json!({"tools": tools.list()}))),
            "notifications/cancelled" => {
                note(&log, &format!("cancelled {}", msg["params"]["requestId"]));
            }
            "tools/call" => {
                let call = Call {
                    name: msg["params"]["name"].as_str().unwrap_or_default().into(),
                    arguments: msg["params"]["arguments"].clone(),
                    meta: msg["params"]["_meta"].clone(),
                    client_capabilities: client_capabilities.clone(),
                    peer: peer.clone(),
                };
                let (tools, log) = (tools.clone(), log.clone());
                std::thread::spawn(move || {
                    note(&log, &format!("call {} {id}", call.name));
                    let result = tools.call(&call);
                    call.peer
                        .send(json!({"jsonrpc": "2.0", "id": id, "result": result}));
                    note(&log, &format!("answered {} {id}", call.name));
                });
            }
            // Notifications need no answer; an unknown request gets an error.
            m if id.is_null() || m.starts_with("notifications/") => {}
            m => peer.send(json!({"jsonrpc": "2.0", "id": id,
                                  "error": {"code": -32601, "message": format!("no method {m}")}})),
        }
    }
}
