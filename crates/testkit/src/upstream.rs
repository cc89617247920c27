//! A small upstream MCP server that misbehaves on demand, for the tests of
//! regent's upstream edge cases (issue 20). It speaks newline-delimited
//! JSON-RPC by hand (std and serde_json only, no SDK), so that it can send
//! what no SDK would: an ill-typed result, an answer after a cancellation.
//!
//! Its tools:
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
//!   `did {steps} steps` (as the conformance suite's
//!   `test_tool_with_progress` and `test_tool_with_logging`).
//! - `ask {ask: [..]}`: during the call, sends regent (as the client) each
//!   request named, in order, and waits for its answer: `elicit` an
//!   `elicitation/create` in form mode (message `pick a colour`, one string
//!   field `colour`), `elicit_url` one in URL mode, `roots` a `roots/list`,
//!   `sample` a `sampling/createMessage` (one user message `say hi`); then
//!   answers with a JSON object of what each got (`{"result": ..}` or
//!   `{"error": ..}`), as text. Other words are left for the policy.
//!
//! Each call and each cancellation is appended to the log file, if given:
//! `call NAME ID` and `cancelled ID` (the JSON of the request id), one a line.
//!
//! [`serve`] runs it on any reader and writer; the tests host it in their
//! own binary (see `tests/integration/upstream_edges.rs`).

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// What `malformed` writes as its result: well-formed JSON, ill-typed MCP.
pub const MALFORMED_MARK: &str = "MALFORMED-PAYLOAD";

/// Names of more tools to list, as a JSON array in this variable (each
/// with an empty schema): for tests of names regent must leave out.
pub const EXTRA_TOOLS_ENV: &str = "EDGE_EXTRA_TOOLS";

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

/// `ask`'s requests waiting for their answers, by id (as JSON text).
type Pending = Arc<Mutex<std::collections::HashMap<String, std::sync::mpsc::Sender<Value>>>>;

/// Sends regent a request and waits for its answer (the whole message).
fn request(
    out: &Arc<Mutex<dyn Write + Send>>,
    pending: &Pending,
    method: &str,
    params: Value,
) -> Value {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let id = json!(format!(
        "ask-{}",
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let (tx, rx) = std::sync::mpsc::channel();
    pending.lock().unwrap().insert(id.to_string(), tx);
    send(
        out,
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
    );
    rx.recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| json!({"error": {"code": 0, "message": "no answer within 30 s"}}))
}

/// Serves until `input` ends. Each `tools/call` runs on a thread of its own,
/// so a slow call does not hold up the next message.
pub fn serve(input: impl BufRead, output: impl Write + Send + 'static, log: Option<&Path>) {
    let out: Arc<Mutex<dyn Write + Send>> = Arc::new(Mutex::new(output));
    let log = log.map(Path::to_path_buf);
    let pending: Pending = Default::default();
    for line in input.lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let id = msg["id"].clone();
        // An answer to one of `ask`'s requests.
        if msg.get("method").is_none() {
            if let Some(tx) = pending.lock().unwrap().remove(&id.to_string()) {
                let _ = tx.send(msg);
            }
            continue;
        }
        let answer = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
        match msg["method"].as_str().unwrap_or_default() {
            "initialize" => {
                let version = msg["params"]["protocolVersion"].clone();
                send(
                    &out,
                    answer(json!({
                        "protocolVersion": version,
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "edge-upstream", "version": "1"},
                    })),
                );
            }
            "ping" => send(&out, answer(json!({}))),
            "tools/list" => send(&out, answer(json!({"tools": tools()}))),
            "notifications/cancelled" => {
                note(&log, &format!("cancelled {}", msg["params"]["requestId"]));
            }
            "tools/call" => {
                let (out, log, pending) = (out.clone(), log.clone(), pending.clone());
                std::thread::spawn(move || {
                    let name = msg["params"]["name"].as_str().unwrap_or_default();
                    let args = &msg["params"]["arguments"];
                    note(&log, &format!("call {name} {id}"));
                    let text = |t: String| json!({"content": [{"type": "text", "text": t}]});
                    let result = match name {
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
                            let token = msg["params"]["_meta"]["progressToken"].clone();
                            let log = |level: &str, data: String| {
                                json!({"jsonrpc": "2.0", "method": "notifications/message",
                                       "params": {"level": level, "logger": "edge", "data": data}})
                            };
                            send(&out, log("debug", "starting".into()));
                            for i in 1..=steps {
                                if i > 1 {
                                    std::thread::sleep(Duration::from_millis(ms));
                                }
                                if !token.is_null() {
                                    send(
                                        &out,
                                        json!({"jsonrpc": "2.0", "method": "notifications/progress",
                                               "params": {"progressToken": token, "progress": i, "total": steps,
                                                          "message": format!("step {i} of {steps}")}}),
                                    );
                                }
                                send(&out, log("info", format!("step {i} of {steps}")));
                            }
                            text(format!("did {steps} steps"))
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
                                let answer = request(&out, &pending, method, params);
                                let answer = match answer.get("error") {
                                    Some(e) => json!({"error": e}),
                                    None => json!({"result": answer["result"]}),
                                };
                                got.insert(what.to_string(), answer);
                            }
                            text(Value::Object(got).to_string())
                        }
                        "huge" => {
                            let n = args["bytes"].as_u64().unwrap_or(0) as usize;
                            text("x".repeat(n))
                        }
                        _ => {
                            json!({"content": [{"type": "text", "text": format!("no tool {name}")}], "isError": true})
                        }
                    };
                    send(&out, json!({"jsonrpc": "2.0", "id": id, "result": result}));
                });
            }
            // Notifications need no answer; an unknown request gets an error.
            m if id.is_null() || m.starts_with("notifications/") => {}
            m => send(
                &out,
                json!({"jsonrpc": "2.0", "id": id,
                       "error": {"code": -32601, "message": format!("no method {m}")}}),
            ),
        }
    }
}
