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
//! - `announce`: sends `notifications/tools/list_changed`, then answers.
//!
//! Its listing can change while it runs: [`TOOLS_FILE_ENV`] names a JSON
//! file read at each `tools/list`, whose fields are merged into the tools
//! it names (a changed description, annotations).
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

/// Serves until `input` ends. Each `tools/call` runs on a thread of its own,
/// so a slow call does not hold up the next message.
pub fn serve(input: impl BufRead, output: impl Write + Send + 'static, log: Option<&Path>) {
    let out: Arc<Mutex<dyn Write + Send>> = Arc::new(Mutex::new(output));
    let log = log.map(Path::to_path_buf);
    for line in input.lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let id = msg["id"].clone();
        let answer = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
        match msg["method"].as_str().unwrap_or_default() {
            "initialize" => {
                let version = msg["params"]["protocolVersion"].clone();
                send(
                    &out,
                    answer(json!({
                        "protocolVersion": version,
                        "capabilities": {"tools": {"listChanged": true}},
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
                let (out, log) = (out.clone(), log.clone());
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
                        "announce" => {
                            send(
                                &out,
                                json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
                            );
                            text("announced".into())
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
