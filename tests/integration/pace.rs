//! A slow evaluation holds up nothing else of a stdio session (issue 28
//! item 6, `protocol::pace`), for the evaluations beside a resolve's and a
//! call's decision (those are `protocol::a_slow_evaluation_holds_up_nothing_else`):
//! a call's policy resolvers and a resolve's preflight of them, `tools/list`'s
//! `visible` rules, an upstream's request during a forwarded call, and a
//! call decided again after a reload. Each runs into the policy time limit
//! (the runaway comprehension of tests/cases/runaway_policy), and a `ping`
//! sent meanwhile is answered first.

use crate::common;
use crate::upstream_edges::declaration;

use common::{Era, Server};
use serde_json::{Value, json};

/// A comprehension that runs far past any time limit once `n` is large.
fn spin(n: &str) -> String {
    // `j < 0` never holds, so the comprehension collects nothing: the
    // evaluation is slow without growing (a collecting one reached the
    // memory budget in a fraction of a second once `*` ran natively).
    format!("count([1 | some i in numbers.range(1, {n}); some j in numbers.range(1, {n}); j < 0])")
}

/// Asserts that the next two answers `s` writes are `ping`'s, then
/// `slow`'s (notifications and requests to the client are skipped).
pub(crate) fn answered_first(s: &mut Server, slow: i64, ping: i64) {
    let deadline = std::time::Instant::now() + common::WAIT;
    let mut ids = Vec::new();
    while ids.len() < 2 {
        let m = s.next_message(deadline);
        if m.get("method").is_none() {
            ids.push(m["id"].as_i64().unwrap());
        }
    }
    assert_eq!(ids, [ping, slow], "the ping waited for the slow evaluation");
}

/// Starts `regent serve` on `dir` (the load check off: the policies are
/// slow on purpose) for a client with `caps`.
fn serve(era: Era, dir: &std::path::Path, extra: &[&str], caps: Value) -> Server {
    let mut args = vec!["--skip-load-check"];
    args.extend_from_slice(extra);
    args.push(dir.to_str().unwrap());
    let mut s = Server::start_with(era, &args, caps);
    s.request("ping", json!({}));
    s
}

fn write(dir: &std::path::Path, tools: &str, rego: &str) {
    std::fs::write(dir.join("tools.yaml"), tools).unwrap();
    std::fs::write(dir.join("policy.rego"), rego).unwrap();
}

/// A policy resolver filling `m` from `n`: a call's fill, and a resolve's
/// preflight of it, slow for a large `n`.
#[test]
fn a_slow_resolver_holds_up_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "tools:\n  - name: fill\n    description: runs nothing of note\n    inputSchema:\n      type: object\n      properties:\n        n: {type: integer}\n        m: {type: integer}\n      required: [n, m]\n    policy: tools.fill\n    resolvers:\n      m: {policy: m}\n    run:\n      cli:\n        program: \"true\"\n",
        &format!(
            "package tools.fill\n\nimport rego.v1\n\nm := {}\n",
            spin("input.arguments.n")
        ),
    );
    let slow = json!({"name": "fill", "arguments": {"n": 100000}});
    let fast = json!({"name": "fill", "arguments": {"n": 2}});
    for era in Era::ALL {
        let mut s = serve(era, tmp.path(), &[], json!({}));
        // The call's fill.
        let id = s.send_request("tools/call", slow.clone());
        let ping = s.send_request("ping", json!({}));
        answered_first(&mut s, id, ping);

        // A resolve's preflight, once the tool has earned its place on the
        // session's thread: its one slow evaluation there moves it off.
        for _ in 0..2 * 8 {
            let r = s.request("tools/resolve", fast.clone());
            assert!(r.get("result").is_some(), "{r}");
        }
        s.expect_error("tools/resolve", slow.clone());
        let id = s.send_request("tools/resolve", slow.clone());
        let ping = s.send_request("ping", json!({}));
        answered_first(&mut s, id, ping);
    }
}

/// A `visible` rule that runs into the time limit for the session's caller
/// (`--caller-file`; the tool is hidden, and the set is not kept, so every
/// listing evaluates it again).
#[test]
fn a_slow_visible_rule_holds_up_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let tool = |name: &str| {
        format!(
            "  - name: {name}\n    description: runs nothing of note\n    inputSchema: {{type: object}}\n    policy: tools.{name}\n    run:\n      cli:\n        program: \"true\"\n"
        )
    };
    write(
        tmp.path(),
        &format!("tools:\n{}{}", tool("hidden"), tool("plain")),
        &format!(
            "package tools.hidden\n\nimport rego.v1\n\nvisible if {} > 0\n",
            spin("input.caller.claims.n")
        ),
    );
    let elsewhere = tempfile::tempdir().unwrap();
    let caller = elsewhere.path().join("caller.yaml");
    std::fs::write(&caller, "subject: alice\nclaims: {n: 100000}\n").unwrap();
    let caller = ["--caller-file", caller.to_str().unwrap()];
    std::fs::write(
        tmp.path().join("plain.rego"),
        "package tools.plain\n\nimport rego.v1\n\nannotations := {\"readOnlyHint\": true}\n",
    )
    .unwrap();
    for era in Era::ALL {
        let mut s = serve(era, tmp.path(), &caller, json!({}));
        let id = s.send_request("tools/list", json!({}));
        let ping = s.send_request("ping", json!({}));
        answered_first(&mut s, id, ping);
        assert_eq!(s.tool_names(), ["plain"], "a failing visible rule hides");

        // A resolve of another tool sees only what the caller may see, so it
        // evaluates the set too: it never earns its place on the thread.
        // (This part held before the rules were paced too: the policy's
        // own check of the caller was timed.)
        for _ in 0..8 + 2 {
            let r = s.request("tools/resolve", json!({"name": "plain", "arguments": {}}));
            assert!(r.get("result").is_some(), "{r}");
        }
        let id = s.send_request("tools/resolve", json!({"name": "plain", "arguments": {}}));
        let ping = s.send_request("ping", json!({}));
        answered_first(&mut s, id, ping);
    }
}

/// An upstream's `sampling/createMessage` during a forwarded call, decided
/// by an `upstream_request` rule that runs into the time limit (3 s here):
/// a ping sent while it runs is answered before it ends (its decision-log
/// line is not written yet). 2025-11-25 only: on 2026-07-28 the request is
/// decided by the same `CallAsker`, on the parked call's task.
#[test]
fn a_slow_upstream_request_rule_holds_up_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let calls = tmp.path().join("calls.log");
    let tools = "    tools:\n      - name: ask\n        policy: tools.ask\n";
    std::fs::write(
        tmp.path().join("upstreams.yaml"),
        format!("upstreams:\n{}", declaration("edge", &calls, tools)),
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("ask.rego"),
        format!(
            "package tools.ask\n\nimport rego.v1\n\nupstream_request := \"refuse\" if {{\n\tinput.request.method == \"sampling/createMessage\"\n\t{} > 0\n}}\n",
            // Slow for the kit's request (`maxTokens: 10`), not for the
            // start-up check's sample (no params).
            spin("input.request.params.maxTokens * 10000")
        ),
    )
    .unwrap();
    let caps = json!({"sampling": {}});
    // rmcp's service logs each request it receives (debug): the line for
    // the upstream's request is the moment regent has it and goes on to
    // decide it, which is when the ping must be sent.
    let mut cmd = common::regent();
    cmd.arg("serve")
        .args(["--skip-load-check", "--policy-timeout-ms", "3000"])
        .arg(tmp.path())
        .env(
            "RUST_LOG",
            "regent=info,rmcp=error,rmcp::service=debug,rmcp::transport::worker=off",
        );
    let mut s = Server::spawn_with(Era::Legacy, cmd, caps);
    let id = s.send_request(
        "tools/call",
        json!({"name": "ask", "arguments": {"ask": ["sample"]}}),
    );
    let received = |l: &str| l.contains("received request") && l.contains("CreateMessage");
    let log = s.stderr_until(|t| t.lines().any(received));
    assert!(
        log.lines().any(received),
        "regent never received the upstream's request:\n{log}"
    );
    let ping = s.request("ping", json!({}));
    assert!(ping.get("result").is_some(), "{ping}");
    let decided = |s: &Server| s.stderr().contains("\"kind\":\"upstream_request\"");
    assert!(
        !decided(&s),
        "the ping waited for the upstream's request to be decided:\n{}",
        s.stderr()
    );
    let r = s.wait_for_id(&json!(id));
    let text = common::text(&r["result"]);
    assert!(text.contains("\"error\""), "the request was refused: {r}");
    // The decision-log line and the answer travel apart (the log has a
    // writer thread of its own, the kit reads stderr on another): wait.
    let log = s.stderr_until(|l| l.contains("\"kind\":\"upstream_request\""));
    assert!(log.contains("\"kind\":\"upstream_request\""), "{log}");
}

/// A call decided again after a reload while its user was asked to confirm
/// it, on a policy that now runs into the time limit for its arguments.
#[test]
fn a_slow_decision_after_a_reload_holds_up_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let policy = "package tools.go\n\nimport rego.v1\n\nconfirm := \"go?\"\n";
    write(
        tmp.path(),
        "tools:\n  - name: go\n    description: runs nothing of note\n    inputSchema:\n      type: object\n      properties:\n        n: {type: integer}\n    policy: tools.go\n    run:\n      cli:\n        program: \"true\"\n",
        policy,
    );
    let caps = json!({"elicitation": {"form": {}}});
    let mut s = serve(Era::Legacy, tmp.path(), &[], caps);
    let args = json!({"n": 100000});
    let id = s.send_request("tools/call", json!({"name": "go", "arguments": args}));
    let deadline = std::time::Instant::now() + common::WAIT;
    let asked = loop {
        let m = s.next_message(deadline);
        if m["method"] == json!("elicitation/create") {
            break m;
        }
    };
    // While the user is asked, the policy turns slow for these arguments
    // (and denies `n: 1`, to see the reload).
    std::fs::write(
        tmp.path().join("policy.rego"),
        format!(
            "{policy}\nannotations := {{\"readOnlyHint\": true}} if {} > 0\n\ndeny contains \"reloaded\" if input.arguments.n == 1\n",
            spin("input.arguments.n")
        ),
    )
    .unwrap();
    loop {
        let r = s.request(
            "tools/resolve",
            json!({"name": "go", "arguments": {"n": 1}}),
        );
        if r.to_string().contains("reloaded") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no reload: {r}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    s.send_line(
        &json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {}}})
            .to_string(),
    );
    let ping = s.send_request("ping", json!({}));
    answered_first(&mut s, id, ping);
}
