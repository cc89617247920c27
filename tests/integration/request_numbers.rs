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
    /// For the `picks` tool, which indexes an array by `n`, when the case
    /// says.
    #[serde(default)]
    picks: Option<Expected>,
    /// For the `tenth` tool, which compares `n` with 0.1, when the case
    /// says.
    #[serde(default)]
    tenth: Option<Expected>,
    /// For the `adds` tool, which gives `n` to `time.add_date`, when the
    /// case says.
    #[serde(default)]
    adds: Option<Expected>,
    /// For the `ranks` tool, which looks `max([n, 0.1])` up by key, when
    /// the case says.
    #[serde(default)]
    ranks: Option<Expected>,
}

impl Case {
    /// The tools this case is sent to, with what each answers.
    fn tools(&self) -> Vec<(&'static str, &Expected)> {
        let mut out = vec![("writes", &self.writes), ("compares", &self.compares)];
        out.extend(self.picks.as_ref().map(|p| ("picks", p)));
        out.extend(self.tenth.as_ref().map(|p| ("tenth", p)));
        out.extend(self.adds.as_ref().map(|p| ("adds", p)));
        out.extend(self.ranks.as_ref().map(|p| ("ranks", p)));
        out
    }
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

/// A `method` request (`tools/resolve`, `tools/call`) of `tool` with empty
/// arguments, as a client of `era` sends it over stdio.
fn request(id: u64, method: &str, tool: &str, era: Era) -> Value {
    let mut params = json!({"name": tool, "arguments": {}});
    if era == Era::Modern {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
        });
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
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
    let want = case
        .tools()
        .into_iter()
        .find(|(t, _)| *t == tool)
        .map(|(_, w)| w)
        .expect("the case names the tool");
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
        for (tool, _) in case.tools() {
            for (how, server) in [("stdio 2025", &mut legacy), ("stdio 2026", &mut modern)] {
                for method in ["tools/resolve", "tools/call"] {
                    id += 1;
                    let msg = request(id, method, tool, server.era);
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
        for (tool, _) in case.tools() {
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
        for (tool, want) in case.tools() {
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

/// Arguments beyond the cases file's for the decision log: numbers longer
/// than a double, and a masked member (`secret`, which must not be logged
/// whatever its spelling).
const LOGGED_TOO: &[&str] = &[
    r#"{"n": 12345678901234567890123, "m": 0.1000000000000000000001}"#,
    r#"{"n": -1.0E+2, "secret": 7.50, "deep": {"a": [1.50, {"b": 2E0}]}}"#,
];

/// The decision-log flags: arguments logged, `secret` masked.
const LOG_FLAGS: &[&str] = &[
    "--log-arguments",
    "--decision-log-mask",
    "/input/arguments/secret",
];

/// Every arguments text the decision-log tests send.
fn logged_arguments() -> Vec<String> {
    let mut all: Vec<String> = cases().into_iter().map(|c| c.arguments).collect();
    all.extend(LOGGED_TOO.iter().map(|s| s.to_string()));
    all
}

/// `text`, JSON, without the blanks between its tokens (its strings have
/// no escaped quote), and without its `secret` member (masked): the
/// arguments as a line must show them, numbers as spelled.
fn compact(text: &str) -> String {
    let mut out = String::new();
    let mut in_string = false;
    for c in text.chars() {
        if c == '"' {
            in_string = !in_string;
        }
        if in_string || !c.is_whitespace() {
            out.push(c);
        }
    }
    match out.find(r#""secret":"#) {
        Some(at) => {
            let end = at + out[at..].find(',').unwrap() + 1;
            format!("{}{}", &out[..at], &out[end..])
        }
        None => out,
    }
}

/// `log` without its lines' `"durationMs":<number>` members, which a
/// timing may spell like a masked argument (`7.501`).
fn without_durations(log: &str) -> String {
    let mut out = String::with_capacity(log.len());
    let mut rest = log;
    while let Some(at) = rest.find(r#""durationMs":"#) {
        out.push_str(&rest[..at]);
        let after = &rest[at + r#""durationMs":"#.len()..];
        let end = after
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(after.len());
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Waits until the decision log at `path` has a line for each of `sent`
/// (tool, arguments text as sent), showing the arguments twice (`arguments`
/// and `input.arguments`) with their numbers as the client spelled them,
/// and holding no `secret`.
fn logged_as_sent(path: &std::path::Path, sent: &[(&str, String)]) {
    let deadline = std::time::Instant::now() + common::WAIT;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let complete = text.rfind('\n').map_or("", |end| &text[..end]);
        let lines: Vec<&str> = complete
            .lines()
            .filter(|l| !l.contains(r#""phase":"intent""#))
            .collect();
        let missing: Vec<String> = sent
            .iter()
            .filter_map(|(tool, arguments)| {
                let shown = compact(arguments);
                let want = [
                    format!(r#""tool":"{tool}","argumentsDigest":"#),
                    format!(r#","arguments":{shown},"#),
                    format!(r#""input":{{"tool":"{tool}","arguments":{shown}"#),
                ];
                let found = lines
                    .iter()
                    .any(|l| want.iter().all(|w| l.contains(w.as_str())));
                (!found).then(|| format!("{tool} {shown}"))
            })
            .collect();
        if missing.is_empty() {
            // Masked, whatever its spelling: listed as erased, not shown.
            // A call's `durationMs` may happen to be `7.501`: not looked at.
            let shown = without_durations(complete);
            assert!(
                !shown.contains(r#""secret":"#)
                    && !shown.contains(":7.50")
                    && !shown.contains(":7.5,")
                    && !shown.contains(":7.5}"),
                "a masked member was logged:\n{complete}"
            );
            assert!(complete.contains(r#""erased":["/input/arguments/secret"]"#));
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not logged as sent: {missing:#?}\nlog:\n{complete}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn hand_spelled_numbers_are_logged_as_sent_over_stdio() {
    let cat = catalog();
    let tmp = tempfile::tempdir().unwrap();
    let mut sent = Vec::new();
    for era in [Era::Legacy, Era::Modern] {
        let log = tmp.path().join(format!("{era:?}.jsonl"));
        let mut args = LOG_FLAGS.to_vec();
        args.extend(["--decision-log", log.to_str().unwrap(), &cat]);
        let mut server = Server::start(era, &args);
        let mut id = 2000;
        let mut these = Vec::new();
        for arguments in logged_arguments() {
            for tool in ["writes", "compares"] {
                for method in ["tools/resolve", "tools/call"] {
                    id += 1;
                    let msg = request(id, method, tool, era);
                    server.send_line(&spelled(&msg, &arguments));
                    server.wait_for_id(&json!(id));
                    these.push((tool, arguments.clone()));
                }
            }
        }
        logged_as_sent(&log, &these);
        sent.extend(these);
    }
    assert_eq!(sent.len(), 2 * logged_arguments().len() * 4);
}

#[test]
fn hand_spelled_numbers_are_logged_as_sent_over_http() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("decisions.jsonl");
    let mut cmd = regent();
    cmd.arg("serve")
        .arg("--http")
        .arg("127.0.0.1:0")
        .args(LOG_FLAGS)
        .arg("--decision-log")
        .arg(&log)
        .arg(catalog());
    let http = HttpServer::spawn(cmd);
    let mut modern = McpHttp::connect(http.addr, Era::Modern);
    let mut legacy = McpHttp::connect(http.addr, Era::Legacy);
    let mut sent = Vec::new();
    for arguments in logged_arguments() {
        for tool in ["writes", "compares"] {
            for method in ["tools/resolve", "tools/call"] {
                // The direct path (a plain stateless resolve), rmcp's (an
                // `Origin` header), and a 2025-11-25 session's.
                let msg = modern.message(method, json!({"name": tool, "arguments": {}}));
                let req = modern.req(&msg, method);
                let body = spelled(&msg, &arguments).into_bytes();
                let r = send(http.addr, &req.clone().body(body.clone()));
                r.response_to(&msg["id"]);
                let r = send(
                    http.addr,
                    &req.header("Origin", "http://localhost:9").body(body),
                );
                r.response_to(&msg["id"]);
                let msg = legacy.message(method, json!({"name": tool, "arguments": {}}));
                let req = legacy
                    .req(&msg, method)
                    .body(spelled(&msg, &arguments).into_bytes());
                send(http.addr, &req).response_to(&msg["id"]);
                sent.extend(std::iter::repeat_n((tool, arguments.clone()), 3));
            }
        }
    }
    logged_as_sent(&log, &sent);
}

/// A written caller's claims (`regent resolve --caller`, `serve
/// --caller-file`) are scanned in the document's text as a token's are: a
/// claim spelled `1E2` fails closed where a policy writes it, and is
/// answered where it is compared.
#[test]
fn a_written_callers_numbers_spelled_by_hand_are_refused_where_written() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = tmp.path().join("catalog");
    std::fs::create_dir(&cat).unwrap();
    crate::http_jwt_claims::write_level_tools(&cat);
    let cat = cat.to_str().unwrap().to_string();
    for (name, text, spelled) in [
        (
            "c.json",
            r#"{"subject": "alice", "claims": {"level": 1E2}}"#,
            Some("1E2"),
        ),
        (
            "c.yaml",
            "subject: alice\nclaims: {level: 75.50}\n",
            Some("75.50"),
        ),
        (
            "plain.json",
            r#"{"subject": "alice", "claims": {"level": 75.5}}"#,
            None,
        ),
    ] {
        let path = tmp.path().join(name);
        std::fs::write(&path, text).unwrap();
        let path = path.to_str().unwrap();
        let resolve = |tool: &str| {
            regent()
                .args(["resolve", "--config", &cat, "--caller", path, tool, "{}"])
                .output()
                .unwrap()
        };
        let out = resolve("writes_level");
        let stderr = String::from_utf8_lossy(&out.stderr);
        match spelled {
            Some(t) => {
                assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
                let want = format!("the caller's claims spelled the number {t}");
                assert!(stderr.contains(&want), "{name}: {stderr}");
            }
            None => assert_eq!(out.status.code(), Some(0), "{name}: {stderr}"),
        }
        let out = resolve("compares_level");
        assert_eq!(out.status.code(), Some(0), "{name}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("level over 50"));

        // `serve --caller-file`, over stdio.
        let mut server = Server::start(Era::Legacy, &["--caller-file", path, &cat]);
        let r = server.resolve_response("writes_level", json!({}));
        match spelled {
            Some(t) => {
                assert!(r.get("error").is_some(), "{name}: {r}");
                let want = format!("the caller's claims spelled the number {t}");
                server.stderr_until(|l| l.contains(&want));
            }
            None => assert!(r.to_string().contains("level 75.5"), "{name}: {r}"),
        }
        let r = server.resolve_response("compares_level", json!({}));
        assert!(r.to_string().contains("level over 50"), "{name}: {r}");
    }
}
