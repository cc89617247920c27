//! Upstream MCP servers reached over Streamable HTTP (`url:`), end to end
//! with real servers on 127.0.0.1: regent A serves a small catalog with
//! `serve --http`; regent B declares A as a `url:` upstream and is driven
//! over stdio. B imports A's tools, decides each call by its own policy,
//! forwards only the allowed ones (A's decision log shows which reached it),
//! fails closed while A is down and reconnects when A is back on its port.
//! A bearer token read from a file opens an A that requires one; a wrong one
//! is reported with the url and the refusal. `basic` and `header`
//! credentials go through a gate in front of A that checks the exact header
//! value it receives.
//! Reloads and changed upstreams are in `upstream_http_reload`; shadow
//! policies, pins and the message limit in `upstream_http_edges`.

use crate::common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use common::http::HttpServer;
use common::{Era, Server, WAIT, regent};
use serde_json::{Value, json};

/// A's catalog: one CLI tool that echoes its text.
pub(crate) fn upstream_catalog(dir: &Path) {
    std::fs::write(
        dir.join("a.yaml"),
        r#"
tools:
  - name: echo_text
    description: Echo the text.
    inputSchema:
      type: object
      properties:
        text: {type: string}
      required: [text]
    annotations: {readOnlyHint: true, openWorldHint: false}
    run:
      cli:
        program: printf
        args: ["%s", "{text}"]
"#,
    )
    .unwrap();
}

/// B's catalog: A at `url`, its tool under B's policy (texts starting with
/// `secret` are refused), with `auth` when given.
pub(crate) fn governing_catalog(dir: &Path, url: &str, auth: &str) {
    std::fs::write(
        dir.join("b.yaml"),
        format!(
            r#"
upstreams:
  - name: a
    url: {url}
    start_timeout: 10s
    timeout: 10s{auth}
    tools:
      - name: echo_text
        as: echo
        policy: tools.echo
        annotations: {{readOnlyHint: true, destructiveHint: false}}
"#
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("echo.rego"),
        r#"package tools.echo

import rego.v1

deny contains "secrets are not echoed" if startswith(input.arguments.text, "secret")
"#,
    )
    .unwrap();
}

/// Starts regent A on `addr` (port 0: any), its decisions in `log`.
pub(crate) fn start_upstream(dir: &Path, addr: &str, log: &Path, extra: &[&str]) -> HttpServer {
    let mut cmd = regent();
    cmd.arg("serve")
        .arg("--no-watch")
        .arg("--http")
        .arg(addr)
        .arg("--decision-log")
        .arg(log)
        .arg("--log-arguments")
        .args(extra)
        .arg(dir);
    HttpServer::spawn(cmd)
}

pub(crate) fn start_governor(era: Era, dir: &Path) -> Server {
    let mut cmd = regent();
    cmd.arg("serve").arg("--no-watch").arg(dir);
    Server::spawn(era, cmd)
}

pub(crate) fn call(s: &mut Server, text: &str) -> Value {
    s.request(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": text}}),
    )
}

/// Calls until `done` holds for the result, or fails after [`WAIT`].
pub(crate) fn call_until(s: &mut Server, text: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let r = call(s, text);
        if done(&r["result"]) {
            return r;
        }
        assert!(
            Instant::now() < deadline,
            "never got the expected answer; last: {r}\n{}",
            s.stderr()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

pub(crate) fn decisions(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

/// A's decision log once it holds `needle`. The log is written after the
/// answer, so a line is waited for; a call that was never made there is
/// proved absent by a later call's line (lines are written in order).
pub(crate) fn decisions_with(log: &Path, needle: &str) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        let text = decisions(log);
        if text.contains(needle) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "`{needle}` never reached the upstream:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn error_text(r: &Value) -> String {
    r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_url_upstream_is_governed_forwarded_and_reconnected() {
    let a_dir = tempfile::tempdir().unwrap();
    let b_dir = tempfile::tempdir().unwrap();
    upstream_catalog(a_dir.path());
    let log = a_dir.path().join("decisions.jsonl");
    let a = start_upstream(a_dir.path(), "127.0.0.1:0", &log, &[]);
    let addr: SocketAddr = a.addr;
    let url = a.url("/mcp");
    governing_catalog(b_dir.path(), &url, "");

    for era in Era::ALL {
        let mut b = start_governor(era, b_dir.path());
        let listed = b.request("tools/list", json!({}));
        let tools = listed["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{era:?}: {listed}\n{}", b.stderr()));
        assert_eq!(tools.len(), 1, "{era:?}: {listed}");
        assert_eq!(tools[0]["name"], "echo");
        assert_eq!(tools[0]["description"], "Echo the text.");
        assert_eq!(tools[0]["inputSchema"]["required"], json!(["text"]));
        // B's listing: the team's hints, A's claim for the hint B left unsaid.
        assert_eq!(tools[0]["annotations"]["destructiveHint"], false);
        assert_eq!(tools[0]["annotations"]["openWorldHint"], false);

        // Denied by B's policy: refused by B, never seen by A.
        let r = call(&mut b, &format!("secret-{era:?}"));
        assert_eq!(r["result"]["isError"], true, "{era:?}: {r}");
        assert_eq!(
            r["result"]["_meta"]["regent/decision"]["allowed"], false,
            "{r}"
        );

        // Allowed: forwarded, and A's result passed through unchanged.
        let r = call(&mut b, &format!("hello-{era:?}"));
        let res = &r["result"];
        assert_eq!(res["isError"], false, "{era:?}: {r}\n{}", b.stderr());
        assert_eq!(
            res["content"],
            json!([{"type": "text", "text": format!("hello-{era:?}")}]),
            "{r}"
        );
        assert_eq!(res["_meta"]["regent/decision"]["allowed"], true, "{r}");
        // The allowed call reached A; the denied one, made before it, did not.
        let seen = decisions_with(&log, &format!("hello-{era:?}"));
        assert!(
            !seen.contains(&format!("secret-{era:?}")),
            "{era:?}: a denied call reached the upstream:\n{seen}"
        );
    }

    // A goes away: B's calls fail closed, naming the upstream and its url.
    let mut b = start_governor(Era::Legacy, b_dir.path());
    let r = call(&mut b, "before");
    assert_eq!(r["result"]["isError"], false, "{r}\n{}", b.stderr());
    drop(a);
    let r = call_until(&mut b, "while-down", |res| {
        res["isError"] == true
            && res["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("is down"))
    });
    let text = error_text(&r);
    assert!(
        text.contains("upstream `a`") && text.contains(&url),
        "the error names neither the upstream nor its url: {text}"
    );
    assert!(
        text.contains("a ping failed") || text.contains("its connection closed"),
        "the error does not say why the upstream is down: {text}"
    );
    // B's log says why, and that it is reconnecting rather than restarting.
    let log_b = b.stderr_until(|e| e.contains("reconnecting to it"));
    assert!(log_b.contains("upstream went down"), "{log_b}");

    // A is back on the same port: B reconnects (a new session) and forwards again.
    let _a = start_upstream(a_dir.path(), &addr.to_string(), &log, &[]);
    let r = call_until(&mut b, "after", |res| res["isError"] == false);
    assert_eq!(
        r["result"]["content"],
        json!([{"type": "text", "text": "after"}]),
        "{r}"
    );
    let seen = decisions_with(&log, "\"after\"");
    assert!(
        !seen.contains("while-down"),
        "a call reached the upstream while it was down:\n{seen}"
    );
}

/// The document `regent upstream snapshot DIR` pins; `context` says more
/// when it fails.
pub(crate) fn snapshot(dir: &Path, context: impl Fn() -> String) -> Value {
    let out = regent()
        .args(["upstream", "snapshot"])
        .arg(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}: {stdout}\n{}",
        context(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap()
}

/// `regent serve DIR` refuses to start because upstream `a` at `url`
/// (declared at `b.yaml:4:5`) could not be reached; its standard error.
fn refused_as_unreachable(dir: &Path, url: &str) -> String {
    let out = common::serve_once(dir);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("b.yaml:4:5")
            && stderr.contains(&format!("upstream `a` at {url} could not be reached")),
        "{stderr}"
    );
    stderr
}

#[test]
fn a_bearer_token_from_a_file_opens_the_upstream_and_a_wrong_one_is_reported() {
    let a_dir = tempfile::tempdir().unwrap();
    let b_dir = tempfile::tempdir().unwrap();
    upstream_catalog(a_dir.path());
    let token_file = a_dir.path().join("token");
    std::fs::write(&token_file, "s3cret-token-for-a\n").unwrap();
    let log = a_dir.path().join("decisions.jsonl");
    let a = start_upstream(
        a_dir.path(),
        "127.0.0.1:0",
        &log,
        &["--auth-token-file", token_file.to_str().unwrap()],
    );
    let url = a.url("/mcp");
    let auth = "\n    auth:\n      bearer: {file: a.token}";
    governing_catalog(b_dir.path(), &url, auth);

    // The right token: the tools are listed (`regent upstream snapshot`)
    // and a call is forwarded.
    std::fs::write(b_dir.path().join("a.token"), "s3cret-token-for-a\n").unwrap();
    let pinned = snapshot(b_dir.path(), String::new);
    assert_eq!(pinned["upstreams"]["a"]["tools"][0]["name"], "echo_text");
    let mut b = start_governor(Era::Modern, b_dir.path());
    let r = call(&mut b, "with-token");
    assert_eq!(r["result"]["isError"], false, "{r}\n{}", b.stderr());
    drop(b);

    // A wrong token: B does not serve, and says which upstream, where, and why.
    std::fs::write(b_dir.path().join("a.token"), "wrong\n").unwrap();
    let stderr = refused_as_unreachable(b_dir.path(), &url);
    assert!(
        stderr.contains("401") || stderr.to_lowercase().contains("auth"),
        "{stderr}"
    );
    // `check --start-upstreams` reports the same, at the same place.
    let out = regent()
        .args(["check", "--start-upstreams"])
        .arg(b_dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains("could not be reached") && stdout.contains(&url),
        "{stdout}"
    );
}

/// A gate on 127.0.0.1 in front of A: it records the value of one header
/// of each request it receives and lets through only a request whose value
/// is `expected` (the connection is then piped to A as it is); any other
/// gets `401`. What regent A cannot check itself (`basic`, a header of the
/// team's choosing), the gate does, on the bytes the upstream receives.
struct Gate {
    addr: SocketAddr,
    seen: std::sync::Arc<std::sync::Mutex<Vec<Option<String>>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Gate {
    fn start(upstream: SocketAddr, header: &'static str, expected: &str) -> Gate {
        use std::io::{Read, Write};
        use std::net::{TcpListener, TcpStream};

        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (log, stopped, expected) = (seen.clone(), stop.clone(), expected.to_string());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if stopped.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                let (log, expected) = (log.clone(), expected.clone());
                std::thread::spawn(move || {
                    let mut client = client;
                    client.set_read_timeout(Some(WAIT)).ok();
                    // The request head, byte by byte: what follows is piped as is.
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") && head.len() < 64 * 1024 {
                        match client.read(&mut byte) {
                            Ok(1) => head.push(byte[0]),
                            _ => return,
                        }
                    }
                    let text = String::from_utf8_lossy(&head).to_string();
                    let value = text.lines().skip(1).find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.trim()
                            .eq_ignore_ascii_case(header)
                            .then(|| v.trim().to_string())
                    });
                    let pass = value.as_deref() == Some(expected.as_str());
                    log.lock().unwrap().push(value);
                    if !pass {
                        let _ = client.write_all(
                            b"HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Basic realm=\"gate\"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                        );
                        return;
                    }
                    let Ok(mut server) = TcpStream::connect(upstream) else {
                        return;
                    };
                    server.set_read_timeout(Some(WAIT)).ok();
                    if server.write_all(&head).is_err() {
                        return;
                    }
                    let (mut to_server, mut from_client) =
                        (server.try_clone().unwrap(), client.try_clone().unwrap());
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from_client, &mut to_server);
                        let _ = to_server.shutdown(std::net::Shutdown::Write);
                    });
                    let _ = std::io::copy(&mut server, &mut client);
                    let _ = client.shutdown(std::net::Shutdown::Both);
                });
            }
        });
        Gate { addr, seen, stop }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The header's value in each request so far (`None`: not sent).
    fn seen(&self) -> Vec<Option<String>> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Wakes the accept loop, which then sees `stop`.
        let _ = std::net::TcpStream::connect(self.addr);
    }
}

#[test]
fn basic_and_header_credentials_reach_the_upstream_and_wrong_ones_are_reported() {
    // (`auth` as declared, its secret file, what the gate checks, the exact
    // value it must see, a right secret, a wrong one and the value it makes)
    for (auth, file, header, expected, right, wrong, sent) in [
        (
            "\n    auth:\n      basic: {username: bob, password: {file: a.password}}",
            "a.password",
            "authorization",
            // base64("bob:pa55 word")
            "Basic Ym9iOnBhNTUgd29yZA==",
            "pa55 word\n",
            "pa55 w0rd\n",
            "Basic Ym9iOnBhNTUgdzByZA==",
        ),
        (
            "\n    auth:\n      header: {name: X-Api-Key, value: {file: a.key}}",
            "a.key",
            "x-api-key",
            "key-for-a",
            "key-for-a\n",
            "not-the-key\n",
            "not-the-key",
        ),
    ] {
        let a_dir = tempfile::tempdir().unwrap();
        let b_dir = tempfile::tempdir().unwrap();
        upstream_catalog(a_dir.path());
        let log = a_dir.path().join("decisions.jsonl");
        let a = start_upstream(a_dir.path(), "127.0.0.1:0", &log, &[]);
        let gate = Gate::start(a.addr, header, expected);
        let url = gate.url("/mcp");
        governing_catalog(b_dir.path(), &url, auth);

        // The right secret: the gate saw exactly the expected value on every
        // request, A listed its tools, and a call is forwarded.
        std::fs::write(b_dir.path().join(file), right).unwrap();
        let pinned = snapshot(b_dir.path(), || {
            format!("{auth}: gate saw {:?}", gate.seen())
        });
        assert_eq!(pinned["upstreams"]["a"]["tools"][0]["name"], "echo_text");
        let seen = gate.seen();
        assert!(
            !seen.is_empty() && seen.iter().all(|v| v.as_deref() == Some(expected)),
            "{auth}: the gate saw {seen:?}"
        );
        let mut b = start_governor(Era::Modern, b_dir.path());
        let r = call(&mut b, "with-credentials");
        assert_eq!(r["result"]["isError"], false, "{r}\n{}", b.stderr());
        decisions_with(&log, "with-credentials");
        drop(b);

        // A wrong secret: the gate refuses it, and B does not serve, saying
        // which upstream, where, and why.
        std::fs::write(b_dir.path().join(file), wrong).unwrap();
        let stderr = refused_as_unreachable(b_dir.path(), &url);
        assert!(stderr.contains("401"), "{auth}: {stderr}");
        assert!(
            gate.seen().last() == Some(&Some(sent.to_string())),
            "{auth}: the gate never saw the wrong secret: {:?}",
            gate.seen()
        );
    }
}

#[test]
fn an_upstream_needs_exactly_one_of_command_and_url() {
    for (yaml, at, says) in [
        (
            "upstreams:\n  - name: u\n",
            "b.yaml:2:5",
            "gives neither `command` nor `url`",
        ),
        (
            "upstreams:\n  - name: u\n    command: x\n    url: http://127.0.0.1:1/mcp\n",
            "b.yaml:4:5",
            "gives both `command` and `url`",
        ),
        (
            "upstreams:\n  - name: u\n    url: ftp://example.com/mcp\n",
            "b.yaml:3:5",
            "is not an http or https url",
        ),
        (
            "upstreams:\n  - name: u\n    url: http://127.0.0.1:1/mcp\n    args: [x]\n",
            "b.yaml:4:5",
            "applies only to a `command:` upstream",
        ),
        (
            "upstreams:\n  - name: u\n    command: x\n    auth: {bearer: {env: T}}\n",
            "b.yaml:4:5",
            "applies only to a `url:` upstream",
        ),
        (
            "upstreams:\n  - name: u\n    url: http://127.0.0.1:1/mcp\n    auth:\n      bearer: {env: T, file: t}\n",
            "b.yaml:5:7",
            "`auth` of upstream `u`: give exactly one of `env` (a variable name) or `file` (a path)",
        ),
        (
            "upstreams:\n  - name: u\n    url: http://127.0.0.1:1/mcp\n    auth: {}\n",
            "b.yaml:4:5",
            "`auth` of upstream `u`: auth needs exactly one of `bearer`, `basic` or `header`",
        ),
        (
            "upstreams:\n  - name: u\n    url: http://127.0.0.1:1/mcp\n    auth:\n      bearer: {env: T}\n      header: {name: X-Key, value: {env: K}}\n",
            "b.yaml:4:5",
            "auth needs exactly one of `bearer`, `basic` or `header`",
        ),
        (
            "upstreams:\n  - name: u\n    url: http://127.0.0.1:1/mcp\n    auth:\n      header: {value: {env: K}}\n",
            "b.yaml:5:15",
            "missing field `name`",
        ),
        (
            "upstreams:\n  - name: u\n    url: http://127.0.0.1:1/mcp\n    auth:\n      header: {name: \"bad name\", value: {env: K}}\n",
            "b.yaml:5:16",
            "`bad name` is not a valid header name",
        ),
        (
            "upstreams:\n  - name: u\n    url: http://127.0.0.1:1/mcp\n    auth:\n      basic: {username: me}\n",
            "b.yaml:5:14",
            "missing field `password`",
        ),
        (
            "upstreams:\n  - name: u\n    url: http://127.0.0.1:1/mcp\n    auth:\n      basic: {username: me, password: {env: P, default: x}}\n",
            "b.yaml:5:48",
            "a secret cannot have a default written in the catalog",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.yaml"), yaml).unwrap();
        let out = regent().arg("check").arg(dir.path()).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "{yaml}: {stdout}");
        assert!(
            stdout.contains(at) && stdout.contains(says),
            "{yaml}: expected `{says}` at {at}:\n{stdout}"
        );
    }
}

/// Issue 20: `check --start-upstreams` starts each upstream alone; the error
/// of the second must point at the second's own declaration, not the first's.
#[test]
fn check_start_upstreams_reports_each_failure_at_its_own_declaration() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 1: both fail, each at its own `url`.
    std::fs::write(
        dir.path().join("b.yaml"),
        "upstreams:\n  - name: first\n    url: http://127.0.0.1:1/first\n  - name: second\n    url: http://127.0.0.1:1/second\n",
    )
    .unwrap();
    let out = regent()
        .args(["check", "--start-upstreams", "--format", "json"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let text = report.to_string();
    let at = |name: &str| -> String {
        let d = report["diagnostics"]
            .as_array()
            .unwrap_or_else(|| panic!("{text}"))
            .iter()
            .find(|d| {
                d["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(&format!("upstream `{name}`")))
            })
            .unwrap_or_else(|| panic!("no diagnostic for `{name}`: {text}"));
        let l = &d["location"];
        assert!(
            l["file"].as_str().is_some_and(|f| f.ends_with("b.yaml")),
            "{text}"
        );
        format!("{}:{}", l["line"], l["column"])
    };
    assert_eq!(at("first"), "3:5", "{text}");
    assert_eq!(at("second"), "5:5", "{text}");
}
