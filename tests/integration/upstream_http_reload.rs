//! `url:` upstreams across changes: an upstream whose tool list changes is
//! imported again, a changed url is reconnected to and the old upstream
//! left, and upstreams added or removed by a reload are started and stopped.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use crate::upstream_http::{
    call, call_until, decisions, decisions_with, error_text, governing_catalog, start_governor,
    start_upstream, upstream_catalog,
};
use common::http::HttpServer;
use common::{Era, Server, WAIT, regent};
use serde_json::{Value, json};

/// A: `upstream_catalog` in `dir` served over HTTP, watching its catalog
/// (it reloads on a change and tells its sessions
/// `notifications/tools/list_changed`), with its decision log, whose path
/// comes back beside it.
pub(crate) fn watched_upstream(dir: &Path) -> (HttpServer, std::path::PathBuf) {
    upstream_catalog(dir);
    let log = dir.join("decisions.jsonl");
    let mut cmd = regent();
    cmd.args(["serve", "--http", "127.0.0.1:0", "--decision-log"])
        .arg(&log)
        .arg(dir);
    (HttpServer::spawn(cmd), log)
}

#[test]
fn an_upstreams_list_changed_over_http_reimports_its_tools() {
    let a_dir = tempfile::tempdir().unwrap();
    let b_dir = tempfile::tempdir().unwrap();
    let (a, _log) = watched_upstream(a_dir.path());
    std::fs::write(
        b_dir.path().join("b.yaml"),
        format!(
            "upstreams:\n  - name: a\n    url: {}\n    prefix: a_\n",
            a.url("/mcp")
        ),
    )
    .unwrap();
    let mut b = start_governor(Era::Legacy, b_dir.path());
    assert_eq!(b.tool_names(), ["a_echo_text"]);
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
    while b.tool_names() != ["a_echo_text", "a_shout"] {
        assert!(
            Instant::now() < deadline,
            "B never re-imported A's tools: {:?}\nB:\n{}\nA:\n{}",
            b.tool_names(),
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

/// B watching its catalog (no `--no-watch`), driven over stdio.
fn start_watching_governor(dir: &Path) -> Server {
    let mut cmd = regent();
    cmd.arg("serve").arg(dir);
    Server::spawn(Era::Legacy, cmd)
}

/// B's `regent/status` for upstream `name`, once `done` holds for it.
fn upstream_status_until(b: &mut Server, name: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let st = b.status()["upstreams"][name].clone();
        if done(&st) {
            return st;
        }
        assert!(
            Instant::now() < deadline,
            "upstream `{name}` never reached the expected status; last: {st}\n{}",
            b.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Issue 20: a reload applies a changed `url`. B's upstream `a` moves from
/// A1 to A2: calls reach A2 and nothing more reaches A1. Moved again to a
/// port nothing listens on: B fails closed, says why, and shows `a` down.
#[test]
fn a_changed_url_is_reconnected_to_and_the_old_upstream_left() {
    let a_dir = tempfile::tempdir().unwrap();
    let b_dir = tempfile::tempdir().unwrap();
    upstream_catalog(a_dir.path());
    let (log1, log2) = (a_dir.path().join("a1.jsonl"), a_dir.path().join("a2.jsonl"));
    let a1 = start_upstream(a_dir.path(), "127.0.0.1:0", &log1, &[]);
    let a2 = start_upstream(a_dir.path(), "127.0.0.1:0", &log2, &[]);
    governing_catalog(b_dir.path(), &a1.url("/mcp"), "");
    let mut b = start_watching_governor(b_dir.path());
    let r = call(&mut b, "to-a1");
    assert_eq!(r["result"]["isError"], false, "{r}\n{}", b.stderr());
    decisions_with(&log1, "to-a1");

    governing_catalog(b_dir.path(), &a2.url("/mcp"), "");
    let deadline = Instant::now() + WAIT;
    for n in 0.. {
        let text = format!("moving-{n}");
        let r = call(&mut b, &text);
        if r["result"]["isError"] == false && decisions(&log2).contains(&text) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "calls never reached A2; last: {r}\nB:\n{}",
            b.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    for n in 0..3 {
        let r = call(&mut b, &format!("after-{n}"));
        assert_eq!(r["result"]["isError"], false, "{r}\n{}", b.stderr());
        assert_eq!(
            r["result"]["content"],
            json!([{"type": "text", "text": format!("after-{n}")}]),
            "{r}"
        );
        decisions_with(&log2, &format!("after-{n}"));
    }
    // A call made to A1 directly is logged after anything B sent it.
    let mut direct = common::http::McpHttp::connect(a1.addr, Era::Legacy);
    direct.request(
        "tools/call",
        json!({"name": "echo_text", "arguments": {"text": "marker"}}),
    );
    let seen = decisions_with(&log1, "marker");
    assert!(
        !seen.contains("after-"),
        "a call reached A1 after the url changed:\n{seen}"
    );
    let st = upstream_status_until(&mut b, "a", |s| s["up"] == true);
    assert_eq!(st["restarts"], 0, "a new declaration starts afresh: {st}");

    // A declaration that cannot be reached: calls are refused, A2 sees none.
    let closed_port = common::ClosedPort::new();
    let closed = format!("http://{}/mcp", closed_port.addr());
    governing_catalog(b_dir.path(), &closed, "");
    // Refused while it starts, then with the reason its start failed.
    let r = call_until(&mut b, "refused", |r| {
        r["isError"] == true
            && r["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("is not connected (connection failed"))
    });
    let text = error_text(&r);
    assert!(
        text.contains(&format!("upstream `a` at {closed} is not connected"))
            && text.contains("connection failed"),
        "{r}"
    );
    assert_eq!(
        r["result"]["_meta"]["regent/decision"]["allowed"], true,
        "{r}"
    );
    let st = upstream_status_until(&mut b, "a", |s| {
        s["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("connection failed"))
    });
    assert_eq!(st["up"], false, "{st}");
    // Still listed (as last imported), and refused before anything is sent.
    assert_eq!(b.tool_names(), ["echo"]);
    let r = call(&mut b, "once-refused");
    assert!(error_text(&r).contains("is not connected"), "{r}");
    let mut direct = common::http::McpHttp::connect(a2.addr, Era::Legacy);
    direct.request(
        "tools/call",
        json!({"name": "echo_text", "arguments": {"text": "marker"}}),
    );
    let seen = decisions_with(&log2, "marker");
    assert!(
        !seen.contains("once-refused"),
        "a refused call reached A2:\n{seen}"
    );
}

/// B's catalog with regent itself as `command:` upstreams over stdio, each
/// serving A's catalog at `a_dir` under its own prefix.
fn stdio_catalog(dir: &Path, a_dir: &Path, names: &[&str]) {
    stdio_catalog_with(dir, a_dir, names, "");
}

/// [`stdio_catalog`], each upstream's declaration ending with `extra`.
fn stdio_catalog_with(dir: &Path, a_dir: &Path, names: &[&str], extra: &str) {
    let mut yaml = String::from("upstreams:\n");
    for name in names {
        yaml.push_str(&format!(
            "  - name: {name}\n    command: {}\n    args: [serve, --no-watch, {}]\n    prefix: {name}_\n{extra}",
            common::binary().display(),
            a_dir.display()
        ));
    }
    std::fs::write(dir.join("b.yaml"), yaml).unwrap();
}

fn tool_names_until(b: &mut Server, want: &[&str]) {
    let deadline = Instant::now() + WAIT;
    loop {
        let names = b.tool_names();
        if names == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "tools/list never became {want:?}; last: {names:?}\n{}",
            b.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn echo_via(b: &mut Server, tool: &str, text: &str) -> Value {
    b.request(
        "tools/call",
        json!({"name": tool, "arguments": {"text": text}}),
    )
}

/// Issue 20: a reload starts an upstream newly declared and stops one no
/// longer declared (its process ends); the other keeps its process.
#[test]
fn upstreams_added_and_removed_by_a_reload_are_started_and_stopped() {
    let a_dir = tempfile::tempdir().unwrap();
    let b_dir = tempfile::tempdir().unwrap();
    upstream_catalog(a_dir.path());
    stdio_catalog(b_dir.path(), a_dir.path(), &["x"]);
    let mut b = start_watching_governor(b_dir.path());
    assert_eq!(b.tool_names(), ["x_echo_text"]);
    let x = upstream_status_until(&mut b, "x", |s| s["up"] == true);
    let x_pid = x["pid"].as_u64().unwrap();

    // Added: started, its tools imported and forwarded to.
    stdio_catalog(b_dir.path(), a_dir.path(), &["x", "y"]);
    tool_names_until(&mut b, &["x_echo_text", "y_echo_text"]);
    let r = echo_via(&mut b, "y_echo_text", "to-y");
    assert_eq!(r["result"]["content"][0]["text"], "to-y", "{r}");
    let y = upstream_status_until(&mut b, "y", |s| s["up"] == true);
    let y_pid = y["pid"].as_u64().unwrap();
    assert_ne!(y_pid, x_pid);
    // `x`, declared as before, was not restarted.
    let x = upstream_status_until(&mut b, "x", |s| s["up"] == true);
    assert_eq!(x["pid"], x_pid, "{x}");

    // Removed: its tools are gone, its process ends, it leaves the status.
    stdio_catalog(b_dir.path(), a_dir.path(), &["y"]);
    tool_names_until(&mut b, &["y_echo_text"]);
    let proc = std::path::PathBuf::from(format!("/proc/{x_pid}"));
    let deadline = Instant::now() + WAIT;
    while proc.exists() {
        assert!(
            Instant::now() < deadline,
            "the removed upstream's process {x_pid} still runs\n{}",
            b.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(b.status()["upstreams"].get("x").is_none(), "{}", b.status());
    let r = echo_via(&mut b, "x_echo_text", "to-x");
    assert!(
        r.get("error").is_some() || r["result"]["isError"] == true,
        "{r}"
    );
    let r = echo_via(&mut b, "y_echo_text", "still-y");
    assert_eq!(r["result"]["content"][0]["text"], "still-y", "{r}");
    let y = upstream_status_until(&mut b, "y", |s| s["up"] == true);
    assert_eq!(y["pid"], y_pid, "{y}");

    // Declared differently (its environment): restarted as now declared,
    // the old process gone; a new prefix alone would not have restarted it.
    stdio_catalog_with(
        b_dir.path(),
        a_dir.path(),
        &["y"],
        "    env: {set: {REGENT_TEST_MARK: changed}}\n",
    );
    let y = upstream_status_until(&mut b, "y", |s| {
        s["up"] == true && s["pid"].as_u64().is_some_and(|p| p != y_pid)
    });
    let new_pid = y["pid"].as_u64().unwrap();
    let environ = std::fs::read(format!("/proc/{new_pid}/environ")).unwrap_or_default();
    assert!(
        String::from_utf8_lossy(&environ).contains("REGENT_TEST_MARK=changed"),
        "the new process does not run as now declared"
    );
    let old = std::path::PathBuf::from(format!("/proc/{y_pid}"));
    let deadline = Instant::now() + WAIT;
    while old.exists() {
        assert!(
            Instant::now() < deadline,
            "the old process {y_pid} still runs\n{}",
            b.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let r = echo_via(&mut b, "y_echo_text", "new-y");
    assert_eq!(r["result"]["content"][0]["text"], "new-y", "{r}");
}
