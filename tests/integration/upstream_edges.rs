//! Upstream edge cases without Python: a slow tool past the upstream's
//! `timeout`, a crash mid-call, a malformed result and a huge one, against
//! the misbehaving upstream of the kit (`regent_testkit::upstream`).
//!
//! The upstream runs in this very test binary, as the `upstream` bench
//! binary is its own upstream: regent starts `/bin/sh -c 'exec BIN
//! --ignored --exact upstream_edges::edge_upstream ...'` with
//! `REGENT_EDGE_UPSTREAM` set, and [`edge_upstream`] serves. Cargo builds
//! this binary for the tests anyway, where a `[[bin]]` of the kit would not
//! be built for regent's tests (Cargo sets no `CARGO_BIN_EXE_` across
//! packages), and regent's own binary stays free of test code. The test
//! harness prints its banner on standard output, so the shell moves the
//! harness's standard output to standard error and hands the upstream the
//! pipe to regent as descriptor 3.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{Era, Server, regent};
use serde_json::{Value, json};

const MODE_ENV: &str = "REGENT_EDGE_UPSTREAM";
const LOG_ENV: &str = "EDGE_LOG";

/// Not a test: the upstream regent starts for the tests below. Run alone
/// (without `REGENT_EDGE_UPSTREAM`) it does nothing.
#[test]
#[ignore = "the upstream the upstream_edges tests start, not a test"]
fn edge_upstream() {
    if std::env::var_os(MODE_ENV).is_none() {
        return;
    }
    let log = std::env::var_os(LOG_ENV).map(std::path::PathBuf::from);
    common::upstream::serve(std::io::stdin().lock(), pipe_to_regent(), log.as_deref());
}

/// The pipe to regent, where an upstream hosted in this binary answers
/// (descriptor 3; see the module doc).
pub(crate) fn pipe_to_regent() -> std::fs::File {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/fd/3")
        .expect("descriptor 3 is the pipe to regent")
}

/// The `command`, `args` and `env` lines of an upstream declaration that
/// starts the ignored test `test` of this binary as the upstream (see the
/// module doc), `set` holding `env` (`KEY: VALUE, ...`).
pub(crate) fn hosted(test: &str, env: &str) -> String {
    let exe = std::env::current_exe().unwrap();
    let script =
        format!("exec \"$0\" --ignored --exact {test} --nocapture --test-threads=1 3>&1 1>&2");
    format!(
        "    command: /bin/sh\n    args: [-c, {script}, {exe}]\n    env:\n      set: {{{env}}}\n",
        script = json!(script),
        exe = json!(exe.display().to_string()),
    )
}

/// A declaration of the kit's upstream as `name`, with `extra` lines.
pub(crate) fn declaration(name: &str, log: &Path, extra: &str) -> String {
    declaration_env(name, log, "", extra)
}

/// [`declaration`] with more environment entries (`, KEY: VALUE`...).
pub(crate) fn declaration_env(name: &str, log: &Path, env: &str, extra: &str) -> String {
    let log = json!(log.display().to_string());
    let hosted = hosted(
        "upstream_edges::edge_upstream",
        &format!("{MODE_ENV}: \"1\", {LOG_ENV}: {log}{env}"),
    );
    format!("  - name: {name}\n{hosted}{extra}")
}

pub(crate) fn start(dir: &Path, upstreams: &[String]) -> Server {
    std::fs::write(
        dir.join("upstreams.yaml"),
        format!("upstreams:\n{}", upstreams.concat()),
    )
    .unwrap();
    let mut cmd = regent();
    cmd.arg("serve").arg("--no-watch").arg(dir);
    Server::spawn(Era::Legacy, cmd)
}

fn call(s: &mut Server, tool: &str, args: Value) -> Value {
    s.request("tools/call", json!({"name": tool, "arguments": args}))
}

fn texts(r: &Value) -> Vec<String> {
    r["result"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["text"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn log(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The log once `done` holds for it (or [`common::WAIT`] passed).
fn log_until(path: &Path, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + common::WAIT;
    loop {
        let l = log(path);
        if done(&l) || Instant::now() > deadline {
            return l;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `regent/status` of upstream `name` once `done` holds for it.
fn status_until(s: &mut Server, name: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + common::WAIT;
    loop {
        let r = s.request("regent/status", json!({}));
        let st = r["result"]["upstreams"][name].clone();
        if done(&st) || Instant::now() > deadline {
            return st;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_slow_call_past_the_timeout_is_cancelled_upstream_and_its_late_answer_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.log");
    let mut s = start(
        dir.path(),
        &[declaration("edge", &calls, "    timeout: 500ms\n")],
    );
    let before = status_until(&mut s, "edge", |st| st["up"] == true);

    // Far longer than any wait of the kit: that an answer comes at all
    // says regent did not wait for the upstream's.
    let r = call(&mut s, "slow", json!({"ms": 600_000}));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(
        texts(&r),
        [
            "the call to slow did not complete: upstream `edge` did not answer within 500ms; the call was cancelled upstream (raise the upstream's `timeout` if it needs longer)"
        ],
        "{r}"
    );
    let execution = &r["result"]["_meta"]["regent/execution"];
    assert_eq!(execution["upstream"], "edge", "{r}");
    assert!(
        execution["error"]
            .as_str()
            .is_some_and(|e| e.contains("did not answer within 500ms")),
        "{r}"
    );

    // The upstream is told which request to cancel: the one it was sent.
    let l = log_until(&calls, |l| l.contains("cancelled"));
    let lines: Vec<&str> = l.lines().collect();
    let id = lines[0].strip_prefix("call slow ").expect(&l);
    assert_eq!(
        lines,
        [format!("call slow {id}"), format!("cancelled {id}")]
    );

    // Another slow call, past the timeout too, that the upstream answers
    // anyway, late (its log says when it sent the answer): that answer is
    // dropped, and the same process keeps serving the next calls, each
    // with its own answer.
    let r = call(&mut s, "slow", json!({"ms": 1000}));
    assert_eq!(r["result"]["isError"], true, "{r}");
    let l = log_until(&calls, |l| l.contains("answered slow"));
    assert!(
        l.contains("answered slow"),
        "the late answer was never sent:\n{l}"
    );
    for text in ["after", "again"] {
        let r = call(&mut s, "echo", json!({"text": text}));
        assert_ne!(r["result"]["isError"], true, "{r}");
        assert_eq!(texts(&r), [text], "{r}");
    }
    let after = status_until(&mut s, "edge", |st| st["up"] == true);
    assert_eq!(after["pid"], before["pid"], "{after}");
    assert_eq!(after["restarts"], 0, "{after}");
    assert!(s.finish().success());
}

#[test]
fn a_crash_mid_call_fails_closed_is_not_retried_and_the_restarted_upstream_serves() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.log");
    let mut s = start(dir.path(), &[declaration("edge", &calls, "")]);
    let first = status_until(&mut s, "edge", |st| st["up"] == true);

    let r = call(&mut s, "crash", json!({}));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(
        texts(&r),
        [
            "the call to crash did not complete: upstream `edge` went down during the call (its process exited); the call was not retried, and regent is restarting it"
        ],
        "{r}"
    );
    assert_eq!(
        r["result"]["_meta"]["regent/decision"]["allowed"], true,
        "{r}"
    );

    // Restarted: a new process, and the next call reaches it.
    let st = status_until(&mut s, "edge", |st| st["restarts"] == 1 && st["up"] == true);
    assert_eq!(st["restarts"], 1, "{st}\n{}", s.stderr());
    assert_ne!(st["pid"], first["pid"], "{st}");
    let r = call(&mut s, "echo", json!({"text": "back"}));
    assert_eq!(texts(&r), ["back"], "{r}");
    // The crashed call was sent once, never again.
    let l = log(&calls);
    assert_eq!(l.matches("call crash").count(), 1, "{l}");
    assert_eq!(
        l.lines()
            .rfind(|x| x.starts_with("call "))
            .map(|x| x.starts_with("call echo")),
        Some(true),
        "{l}"
    );
    assert!(s.finish().success());
}

#[test]
fn a_malformed_result_is_an_error_and_none_of_it_reaches_the_client() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.log");
    let mut s = start(dir.path(), &[declaration("edge", &calls, "")]);
    let before = status_until(&mut s, "edge", |st| st["up"] == true);

    let r = call(&mut s, "malformed", json!({}));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(
        texts(&r),
        [
            "the call to malformed did not complete: upstream `edge` answered with a malformed result (not a `tools/call` result); regent passed none of it on"
        ],
        "{r}"
    );
    assert!(
        !r.to_string().contains(common::upstream::MALFORMED_MARK),
        "{r}"
    );

    // regent and the upstream keep serving, on the same process.
    let r = call(&mut s, "echo", json!({"text": "fine"}));
    assert_eq!(texts(&r), ["fine"], "{r}");
    let after = status_until(&mut s, "edge", |st| st["up"] == true);
    assert_eq!(after["pid"], before["pid"], "{after}");
    assert_eq!(after["restarts"], 0, "{after}");
    assert!(s.finish().success());
}

#[test]
fn a_huge_result_is_capped_as_command_output_is() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.log");
    let mut s = start(
        dir.path(),
        &[
            declaration(
                "edge",
                &calls,
                "    prefix: small_\n    max_output: 64KiB\n",
            ),
            declaration("roomy", &calls, "    prefix: roomy_\n"),
        ],
    );

    // Up to the cap, as the upstream gave it.
    let r = call(&mut s, "small_huge", json!({"bytes": 65536}));
    assert_ne!(r["result"]["isError"], true, "{}", &r.to_string()[..300]);
    assert_eq!(texts(&r), ["x".repeat(65536)]);
    assert!(
        r["result"]["_meta"]["regent/execution"]
            .get("outputCapped")
            .is_none()
    );

    // Past it: the first 64 KiB and why, an error, as a command's output.
    let r = call(&mut s, "small_huge", json!({"bytes": 65537}));
    let res = &r["result"];
    assert_eq!(res["isError"], true, "{}", &r.to_string()[..300]);
    let t = texts(&r);
    assert_eq!(t.len(), 2, "{}", &r.to_string()[..300]);
    assert_eq!(t[0], "x".repeat(65536));
    assert_eq!(
        t[1],
        "the output passed the cap of 65536 bytes; regent stopped the call and kept the first 65536 bytes; the upstream's result was cut to its text"
    );
    assert_eq!(res["_meta"]["regent/execution"]["outputCapped"], 65536);
    assert_eq!(res["_meta"]["regent/execution"]["upstream"], "edge");

    // Without `max_output`, the cap of `run.cli`: 1 MiB.
    let r = call(&mut s, "roomy_huge", json!({"bytes": 2_000_000}));
    let res = &r["result"];
    assert_eq!(res["isError"], true);
    assert_eq!(texts(&r)[0].len(), 1024 * 1024);
    assert_eq!(
        res["_meta"]["regent/execution"]["outputCapped"],
        1024 * 1024
    );
    let r = call(&mut s, "roomy_huge", json!({"bytes": 1024 * 1024}));
    assert_ne!(r["result"]["isError"], true);
    assert_eq!(texts(&r)[0].len(), 1024 * 1024);
    assert!(s.finish().success());
}

/// Issue 28 item 8: an answer past what regent reads of one message (16
/// MiB, rmcp's line limit) was dropped by the transport and the call waited
/// for its whole `timeout` ("did not answer within ..."). It now fails at
/// once saying the result passed the cap. The timeout here is longer than
/// the kit's wait for an answer, so the old behaviour fails the test.
#[test]
fn a_result_past_the_message_limit_says_it_passed_the_cap_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.log");
    let mut s = start(
        dir.path(),
        &[declaration(
            "edge",
            &calls,
            "    timeout: 120s\n    max_output: 64KiB\n",
        )],
    );
    let r = call(&mut s, "huge", json!({"bytes": 17 * 1024 * 1024}));
    let res = &r["result"];
    assert_eq!(
        res["isError"],
        true,
        "{}",
        &r.to_string()[..300.min(r.to_string().len())]
    );
    let t = texts(&r).concat();
    assert_eq!(
        t,
        "the upstream's result passed the output cap of 65536 bytes (`max_output` of upstream `edge`): its answer was more than 16777216 bytes, the most regent reads of one message, so regent passed none of it on",
        "{r}"
    );
    assert_eq!(
        res["_meta"]["regent/execution"]["outputCapped"], 65536,
        "{r}"
    );
    // The upstream keeps serving.
    let r = call(&mut s, "echo", json!({"text": "still here"}));
    assert_eq!(texts(&r), ["still here"], "{r}");
    assert!(s.finish().success());
}

#[test]
fn a_bad_upstream_max_output_is_a_load_error_at_its_place() {
    crate::upstream_stdio::serve_refuses(
        "upstreams:\n  - name: edge\n    command: /no/such/program\n    max_output: lots\n",
        "upstreams.yaml:4:5",
        "`max_output` of upstream `edge` is not a size: `lots`",
    );
}

#[test]
fn tools_an_upstream_lists_under_bad_or_taken_names_are_left_out_and_the_rest_serves() {
    // The kit's upstream lists `echo`, the catalog's own tool is named so
    // too; it also lists names MCP's guidance refuses. Before, serve
    // refused to start (every own tool gone).
    let dir = tempfile::tempdir().unwrap();
    let log_file = dir.path().join("edge.log");
    std::fs::write(
        dir.path().join("tools.yaml"),
        "tools:\n  - name: echo\n    inputSchema: {type: object}\n    annotations: {readOnlyHint: true}\n",
    )
    .unwrap();
    let extra = json!([
        "",
        "../../etc",
        "tools/call",
        "evil\u{202e}txt.exe",
        "x".repeat(300)
    ]);
    let env = format!(
        ", {}: {}",
        common::upstream::EXTRA_TOOLS_ENV,
        json!(extra.to_string())
    );
    let decl = declaration_env("edge", &log_file, &env, "");
    let mut s = start(dir.path(), &[decl]);
    let names = s.tool_names();
    assert!(names.contains(&"echo".to_string()), "{names:?}");
    for good in ["slow", "crash", "huge"] {
        assert!(
            names.contains(&good.to_string()),
            "{good} missing: {names:?}"
        );
    }
    for bad in ["", "../../etc", "tools/call"] {
        assert!(
            !names.contains(&bad.to_string()),
            "{bad:?} listed: {names:?}"
        );
    }
    assert!(
        names
            .iter()
            .all(|n| n.len() <= 128 && !n.contains('\u{202e}')),
        "{names:?}"
    );
    // `echo` is the catalog's own (it has no `run`, so a call says so),
    // not the upstream's.
    let r = call(&mut s, "echo", json!({"text": "hi"}));
    assert!(
        texts(&r).concat().contains("declares no `run` section"),
        "{r}"
    );
    let stderr = s.stderr();
    assert!(stderr.contains("left out"), "{stderr}");
}
