//! Upstream MCP servers reached over Streamable HTTP (`url:`), end to end
//! with real servers on 127.0.0.1: regent A serves a small catalog with
//! `serve --http`; regent B declares A as a `url:` upstream and is driven
//! over stdio. B imports A's tools, decides each call by its own policy,
//! forwards only the allowed ones (A's decision log shows which reached it),
//! fails closed while A is down and reconnects when A is back on its port.
//! A bearer token read from a file opens an A that requires one; a wrong one
//! is reported with the url and the refusal.

use crate::common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use common::http::HttpServer;
use common::{Era, Server, WAIT, regent};
use serde_json::{Value, json};

/// A's catalog: one CLI tool that echoes its text.
fn upstream_catalog(dir: &Path) {
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
fn governing_catalog(dir: &Path, url: &str, auth: &str) {
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
fn start_upstream(dir: &Path, addr: &str, log: &Path, extra: &[&str]) -> HttpServer {
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

fn start_governor(era: Era, dir: &Path) -> Server {
    let mut cmd = regent();
    cmd.arg("serve").arg("--no-watch").arg(dir);
    Server::spawn(era, cmd)
}

fn call(s: &mut Server, text: &str) -> Value {
    s.request(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": text}}),
    )
}

/// Calls until `done` holds for the result, or fails after [`WAIT`].
fn call_until(s: &mut Server, text: &str, done: impl Fn(&Value) -> bool) -> Value {
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

fn decisions(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

/// A's decision log once it holds `needle`. The log is written after the
/// answer, so a line is waited for; a call that was never made there is
/// proved absent by a later call's line (lines are written in order).
fn decisions_with(log: &Path, needle: &str) -> String {
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

fn error_text(r: &Value) -> String {
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
    let out = regent()
        .args(["upstream", "snapshot"])
        .arg(b_dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pinned: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(pinned["upstreams"]["a"]["tools"][0]["name"], "echo_text");
    let mut b = start_governor(Era::Modern, b_dir.path());
    let r = call(&mut b, "with-token");
    assert_eq!(r["result"]["isError"], false, "{r}\n{}", b.stderr());
    drop(b);

    // A wrong token: B does not serve, and says which upstream, where, and why.
    std::fs::write(b_dir.path().join("a.token"), "wrong\n").unwrap();
    let out = common::serve_once(b_dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("b.yaml:4:5")
            && stderr.contains(&format!("upstream `a` at {url} could not be reached"))
            && (stderr.contains("401") || stderr.to_lowercase().contains("auth")),
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
            "needs exactly one of `env` or `file`",
        ),
        (
            "upstreams:\n  - name: u\n    url: http://127.0.0.1:1/mcp\n    auth: {}\n",
            "b.yaml:4:5",
            "gives no `bearer`",
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

#[test]
fn an_upstreams_list_changed_over_http_reimports_its_tools() {
    let a_dir = tempfile::tempdir().unwrap();
    let b_dir = tempfile::tempdir().unwrap();
    upstream_catalog(a_dir.path());
    let log = a_dir.path().join("decisions.jsonl");
    // Watching its catalog: A reloads on a change and tells its sessions
    // `notifications/tools/list_changed`.
    let mut cmd = regent();
    cmd.args(["serve", "--http", "127.0.0.1:0", "--decision-log"])
        .arg(&log)
        .arg(a_dir.path());
    let a = HttpServer::spawn(cmd);
    std::fs::write(
        b_dir.path().join("b.yaml"),
        format!(
            "upstreams:\n  - name: a\n    url: {}\n    prefix: a_\n",
            a.url("/mcp")
        ),
    )
    .unwrap();
    let mut b = start_governor(Era::Legacy, b_dir.path());
    let names = |b: &mut Server| -> Vec<String> {
        let listed = b.request("tools/list", json!({}));
        listed["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{listed}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&mut b), ["a_echo_text"]);
    let mut yaml = std::fs::read_to_string(a_dir.path().join("a.yaml")).unwrap();
    yaml.push_str(
        r#"  - name: shout
    description: Shout the text.
    inputSchema: {type: object, properties: {text: {type: string}}, required: [text]}
    run:
      cli: {program: printf, args: ["%s!", "{text}"]}
"#,
    );
    std::fs::write(a_dir.path().join("a.yaml"), yaml).unwrap();
    let deadline = Instant::now() + WAIT;
    while names(&mut b) != ["a_echo_text", "a_shout"] {
        assert!(
            Instant::now() < deadline,
            "B never re-imported A's tools: {:?}\nB:\n{}\nA:\n{}",
            names(&mut b),
            b.stderr(),
            a.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let r = b.request(
        "tools/call",
        json!({"name": "a_shout", "arguments": {"text": "hey"}}),
    );
    assert_eq!(
        r["result"]["content"],
        json!([{"type": "text", "text": "hey!"}]),
        "{r}"
    );
}
