//! Numbers a client spells by hand in a request (`1.50`, `1E3`): OPA writes
//! the spelling back (`json.marshal`), regent no longer has it, so an
//! evaluation that would write such a number fails closed, and one that only
//! compares it is answered as OPA answers (`policy::spelled`). The cases,
//! `tests/fixtures/request_numbers/cases.yaml`, go as raw text through
//! every way a request's arguments reach a policy: stdio's direct path and
//! rmcp's (a 2026-07-28 request, a `tools/call`), HTTP's direct path and
//! rmcp's (an `Origin` header, a 2025-11-25 session, a `tools/call`).

use crate::common;

use common::http::{HttpServer, McpHttp, send};
use common::{Era, Server, regent, repo_path};
use serde_json::{Value, json};

/// What the cases file says of one tool.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    #[serde(default)]
    deny: Option<Vec<String>>,
    #[serde(default)]
    refused: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    arguments: String,
    writes: Expected,
    compares: Expected,
}

fn cases() -> Vec<Case> {
    let text =
        std::fs::read_to_string(repo_path("tests/fixtures/request_numbers/cases.yaml")).unwrap();
    yaml_serde::from_str(&text).unwrap()
}

fn catalog() -> String {
    repo_path("tests/fixtures/request_numbers/catalog")
        .to_str()
        .unwrap()
        .to_string()
}

/// `message` as text, with its arguments replaced by `arguments`, the
/// client's own text.
fn spelled(message: &Value, arguments: &str) -> String {
    let mut m = message.clone();
    m["params"]["arguments"] = json!("@ARGUMENTS@");
    m.to_string().replace("\"@ARGUMENTS@\"", arguments)
}

/// The reasons of a decision (a resolve's or a call's result), or the error
/// the evaluation's failure is.
enum Seen {
    Deny(Vec<String>),
    Failed,
}

fn seen(response: &Value) -> Seen {
    if response.get("error").is_some() {
        return Seen::Failed;
    }
    let result = &response["result"];
    let reasons = result["_meta"]["regent/decision"]["reasons"]
        .as_array()
        .map(|r| r.iter().map(|s| s.as_str().unwrap().to_string()).collect())
        .unwrap_or_default();
    Seen::Deny(reasons)
}

/// Holds `response` (to `tool` with `case`'s arguments, sent by `how`) to
/// what the case expects; a refusal's message is looked for in `log`, the
/// server's standard error, once it is there.
fn check(how: &str, case: &Case, tool: &str, response: &Value, log: impl Fn(&str) -> String) {
    let want = if tool == "writes" {
        &case.writes
    } else {
        &case.compares
    };
    let what = format!("{how}: {tool} {}: {response}", case.arguments);
    match (seen(response), want) {
        (Seen::Deny(got), Expected { deny: Some(d), .. }) => assert_eq!(&got, d, "{what}"),
        (
            Seen::Failed,
            Expected {
                refused: Some(why), ..
            },
        ) => {
            let log = log(why);
            assert!(log.contains(why.as_str()), "{what}\nstderr:\n{log}");
        }
        _ => panic!("{what}: expected {want:?}"),
    }
}

#[test]
fn hand_spelled_numbers_over_stdio() {
    let cases = cases();
    let cat = catalog();
    // A 2025-11-25 session: resolves on the direct path, calls through rmcp.
    let mut legacy = Server::start(Era::Legacy, &[&cat]);
    // 2026-07-28: every request through rmcp (it brings `_meta`).
    let mut modern = Server::start(Era::Modern, &[&cat]);
    let mut id = 1000;
    for case in &cases {
        for tool in ["writes", "compares"] {
            for (how, server) in [("stdio 2025", &mut legacy), ("stdio 2026", &mut modern)] {
                for method in ["tools/resolve", "tools/call"] {
                    id += 1;
                    let mut params = json!({"name": tool, "arguments": {}});
                    if server.era == Era::Modern {
                        params["_meta"] = json!({
                            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                            "io.modelcontextprotocol/clientCapabilities": {},
                            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
                        });
                    }
                    let msg =
                        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
                    server.send_line(&spelled(&msg, &case.arguments));
                    let response = server.wait_for_id(&json!(id));
                    let stderr = |why: &str| server.stderr_until(|l| l.contains(why));
                    check(&format!("{how} {method}"), case, tool, &response, stderr);
                }
            }
        }
    }
}

#[test]
fn hand_spelled_numbers_over_http() {
    let cases = cases();
    let mut cmd = regent();
    cmd.arg("serve")
        .arg("--http")
        .arg("127.0.0.1:0")
        .arg(catalog());
    let http = HttpServer::spawn(cmd);
    let mut modern = McpHttp::connect(http.addr, Era::Modern);
    let mut legacy = McpHttp::connect(http.addr, Era::Legacy);
    for case in &cases {
        for tool in ["writes", "compares"] {
            for method in ["tools/resolve", "tools/call"] {
                let log = |why: &str| http.wait_for_stderr(why);
                // The direct path (a plain stateless resolve), and rmcp's.
                let msg = modern.message(method, json!({"name": tool, "arguments": {}}));
                let req = modern.req(&msg, method);
                let body = spelled(&msg, &case.arguments).into_bytes();
                let r = send(http.addr, &req.clone().body(body.clone()));
                check(
                    &format!("http 2026 {method}"),
                    case,
                    tool,
                    &r.response_to(&msg["id"]),
                    log,
                );
                let r = send(
                    http.addr,
                    &req.header("Origin", "http://localhost:9").body(body),
                );
                check(
                    &format!("http 2026 rmcp {method}"),
                    case,
                    tool,
                    &r.response_to(&msg["id"]),
                    log,
                );
                // A 2025-11-25 session: rmcp's, with a session.
                let msg = legacy.message(method, json!({"name": tool, "arguments": {}}));
                let req = legacy
                    .req(&msg, method)
                    .body(spelled(&msg, &case.arguments).into_bytes());
                let r = send(http.addr, &req);
                check(
                    &format!("http 2025 {method}"),
                    case,
                    tool,
                    &r.response_to(&msg["id"]),
                    log,
                );
            }
        }
    }
}

#[test]
fn hand_spelled_numbers_in_regent_resolve() {
    // `regent resolve` reads the arguments' text too, and answers as
    // `serve` does: the policy's refusal on stderr, exit 1.
    for case in cases() {
        for (tool, want) in [("writes", &case.writes), ("compares", &case.compares)] {
            let out = regent()
                .args(["resolve", "--config", &catalog(), tool, &case.arguments])
                .output()
                .unwrap();
            let stdout: Value = serde_json::from_slice(&out.stdout).unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            let what = format!("resolve {tool} {}: {stdout}\n{stderr}", case.arguments);
            match want {
                Expected { deny: Some(d), .. } => {
                    assert_eq!(out.status.code(), Some(0), "{what}");
                    let got = stdout["_meta"]["regent/decision"]["reasons"]
                        .as_array()
                        .map_or(0, Vec::len);
                    assert_eq!(got, d.len(), "{what}");
                }
                Expected {
                    refused: Some(why), ..
                } => {
                    assert_eq!(out.status.code(), Some(1), "{what}");
                    assert!(stderr.contains(why.as_str()), "{what}");
                }
                _ => panic!("{what}: a case says deny or refused"),
            }
        }
    }
}
