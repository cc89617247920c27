//! Confirmation before `tools/call` runs a tool, against the real binary.
//!
//! Through rmcp's client (which answers `elicitation/create` on 2025-11-25
//! sessions and drives `input_required` rounds on 2026-07-28) in both eras:
//! accept runs, decline and cancel refuse, a client without the
//! elicitation capability gets an error. Over raw JSON lines on 2026-07-28:
//! the exact `input_required` shape, and that a tampered `requestState`, a
//! state replayed with other arguments, an expired state and an answer
//! without a state are all refused. A marker file the tool would create
//! proves whether it ran.

use crate::common;
use crate::exec_support;

use std::io::Write;

use common::{Era, Rounds, Server, decision_id, is_error, state_of, text};
use exec_support::{Start, catalog};
use rmcp::model::ElicitationAction;
use serde_json::{Value, json};

/// `touch` writes `marker` in the catalog directory; `mode: danger` asks
/// first, by a YAML rule (`mark_yaml`) or by the policy (`mark_policy`).
const TOOLS: &str = r#"
tools:
  - name: mark_yaml
    description: creates a marker file
    inputSchema:
      type: object
      properties:
        marker: {type: string}
        mode: {type: string, enum: [safe, danger]}
      required: [marker, mode]
    annotations: {readOnlyHint: false, destructiveHint: true}
    resolve:
      - when: {mode: danger}
        annotations: {destructiveHint: true}
        confirm: Really create the marker?
      - when: {mode: safe}
        annotations: {destructiveHint: false}
    run:
      cli: {program: touch, args: ["--", "{marker}"], cwd: .}
  - name: mark_policy
    description: creates a marker file
    inputSchema:
      type: object
      properties:
        marker: {type: string}
        mode: {type: string, enum: [safe, danger]}
      required: [marker, mode]
    annotations: {readOnlyHint: false, destructiveHint: true}
    policy: tools.mark_policy
    run:
      cli: {program: touch, args: ["--", "{marker}"], cwd: .}
"#;

const POLICY: &str = r#"
package tools.mark_policy

import rego.v1

annotations := {"destructiveHint": input.arguments.mode == "danger"}

confirm := sprintf("Create %s?", [input.arguments.marker]) if annotations.destructiveHint
"#;

pub(crate) fn tools() -> tempfile::TempDir {
    catalog(&[("tools.yaml", TOOLS), ("mark.rego", POLICY)])
}

#[tokio::test]
async fn accept_decline_cancel_and_no_capability_in_both_eras() {
    let dir = tools();
    for era in Era::ALL {
        for tool in ["mark_yaml", "mark_policy"] {
            let answers = [
                ("accept", Some(ElicitationAction::Accept)),
                ("decline", Some(ElicitationAction::Decline)),
                ("cancel", Some(ElicitationAction::Cancel)),
                ("none", None),
            ];
            for (label, answer) in answers {
                let marker = format!("{tool}-{era:?}-{label}.marker");
                let path = dir.path().join(&marker);
                let r = Start::new(dir.path())
                    .elicit(answer.clone())
                    .connect(era)
                    .await;
                let args = json!({"marker": marker, "mode": "danger"});
                let res = r.try_call(tool, args).await;
                let ctx = format!("{era:?} {tool} {label}");
                match label {
                    "accept" => {
                        let res = res.unwrap_or_else(|e| panic!("{ctx}: {e}"));
                        assert!(!is_error(&res), "{ctx}: {res}");
                        assert!(path.exists(), "{ctx}: the tool did not run");
                        assert_eq!(r.asked().len(), 1, "{ctx}: {:?}", r.asked());
                    }
                    "decline" | "cancel" => {
                        let res = res.unwrap_or_else(|e| panic!("{ctx}: {e}"));
                        assert!(is_error(&res), "{ctx}: {res}");
                        assert!(
                            text(&res).contains(&format!("answered {label}")),
                            "{ctx}: {}",
                            text(&res)
                        );
                        assert!(!path.exists(), "{ctx}: the tool ran");
                        let d = r.decision(&decision_id(&res));
                        assert!(
                            d["refused"].as_str().unwrap_or("").contains(label),
                            "{ctx}: {d}"
                        );
                    }
                    _ => {
                        let e =
                            res.expect_err(&format!("{ctx}: a call without the capability ran"));
                        let msg = e.to_string();
                        assert!(msg.contains("elicitation capability"), "{ctx}: {msg}");
                        assert!(!path.exists(), "{ctx}: the tool ran");
                        assert!(r.asked().is_empty());
                    }
                }
                // A safe call never asks, with or without the capability.
                let safe = format!("{tool}-{era:?}-{label}-safe.marker");
                let res = r.call(tool, json!({"marker": safe, "mode": "safe"})).await;
                assert!(!is_error(&res), "{ctx}: {res}");
                assert!(dir.path().join(&safe).exists(), "{ctx}");
                assert!(r.asked().len() <= 1, "{ctx}: {:?}", r.asked());
                r.close().await;
            }
        }
    }
}

#[tokio::test]
async fn resolve_reports_the_confirmation() {
    let dir = tools();
    let r = Start::new(dir.path()).connect(Era::Legacy).await;
    let res = r
        .resolve("mark_policy", json!({"marker": "m", "mode": "danger"}))
        .await;
    assert_eq!(
        res["_meta"]["regent/decision"]["confirm"],
        json!("Create m?")
    );
    let res = r
        .resolve("mark_yaml", json!({"marker": "m", "mode": "safe"}))
        .await;
    assert_eq!(
        res["_meta"]["regent/decision"].get("confirm"),
        None,
        "{res}"
    );
    r.close().await;
}

/// A raw 2026-07-28 client that can answer elicitation, calling
/// `mark_policy` on `regent serve DIR EXTRA...`.
fn raw(dir: &std::path::Path, extra: &[&str]) -> Rounds {
    let mut args = vec![dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    let caps = json!({"elicitation": {"form": {}}});
    Rounds::new(Server::start_with(Era::Modern, &args, caps), "mark_policy")
}

pub(crate) fn accept() -> Value {
    json!({"regent/confirm": {"action": "accept", "content": {}}})
}

#[test]
fn input_required_round_trip_and_refused_states() {
    let dir = tools();
    let mut raw = raw(dir.path(), &[]);
    let args = json!({"marker": "raw.marker", "mode": "danger"});
    let marker = dir.path().join("raw.marker");

    // Round one: the question and a sealed state, nothing run.
    let first = raw.call(args.clone(), None, None);
    let result = &first["result"];
    assert_eq!(result["resultType"], json!("input_required"), "{first}");
    let question = &result["inputRequests"]["regent/confirm"];
    assert_eq!(question["method"], json!("elicitation/create"), "{first}");
    assert_eq!(question["params"]["message"], json!("Create raw.marker?"));
    let state = state_of(&first);
    assert!(!marker.exists());

    // An answer without the state that asked is refused.
    let r = raw.call(args.clone(), Some(accept()), None);
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    assert!(!marker.exists());

    // A tampered state: one character of the tag changed.
    let mut tampered = state.clone().into_bytes();
    let last = tampered.len() - 1;
    tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let r = raw.call(args.clone(), Some(accept()), Some(&tampered));
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("requestState"),
        "{r}"
    );
    assert!(!marker.exists());

    // The state replayed for other arguments.
    let other = dir.path().join("other.marker");
    let r = raw.call(
        json!({"marker": "other.marker", "mode": "danger"}),
        Some(accept()),
        Some(&state),
    );
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    assert!(
        !other.exists(),
        "a replayed state ran the tool for other arguments"
    );

    // Declined with a valid state: refused, not run.
    let declined = json!({"regent/confirm": {"action": "decline"}});
    let r = raw.call(args.clone(), Some(declined), Some(&state));
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    assert!(!marker.exists());

    // A state is spent once opened: the same one, now answered accept,
    // is refused, so a recorded answer cannot be replayed.
    let r = raw.call(args.clone(), Some(accept()), Some(&state));
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    assert!(!marker.exists(), "a spent state ran the tool");

    // A fresh round, accepted: runs.
    let again = raw.call(args.clone(), None, None);
    let state = state_of(&again);
    let r = raw.call(args.clone(), Some(accept()), Some(&state));
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    assert_eq!(r["result"]["resultType"], json!("complete"), "{r}");
    assert!(marker.exists());
}

#[test]
fn client_without_elicitation_gets_an_error_on_2026() {
    let dir = tools();
    let mut server = common::Server::start(common::Era::Modern, &[dir.path().to_str().unwrap()]);
    // common::Server declares no client capabilities at all.
    let r = server.request(
        "tools/call",
        json!({"name": "mark_policy", "arguments": {"marker": "none.marker", "mode": "danger"}}),
    );
    assert_eq!(r["error"]["code"], json!(-32021), "{r}");
    assert!(!dir.path().join("none.marker").exists());
}

#[test]
fn expired_state_and_configured_key() {
    let dir = tools();
    let key_dir = tempfile::tempdir().unwrap();
    let key = key_dir.path().join("state.key");
    std::fs::File::create(&key)
        .unwrap()
        .write_all(b"0123456789abcdef0123456789abcdef-test-key")
        .unwrap();
    let key_arg = key.to_str().unwrap().to_string();
    let args = json!({"marker": "keyed.marker", "mode": "danger"});

    // A state sealed by one server opens on another with the same key...
    let mut a = raw(dir.path(), &["--request-state-key-file", &key_arg]);
    let first = a.call(args.clone(), None, None);
    let state = state_of(&first);
    let mut b = raw(dir.path(), &["--request-state-key-file", &key_arg]);
    let r = b.call(args.clone(), Some(accept()), Some(&state));
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    std::fs::remove_file(dir.path().join("keyed.marker")).unwrap();

    // ...but not on one with a generated key.
    let mut c = raw(dir.path(), &[]);
    let r = c.call(args.clone(), Some(accept()), Some(&state));
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    assert!(!dir.path().join("keyed.marker").exists());

    // A state past its time limit is refused.
    let mut d = raw(dir.path(), &["--request-state-ttl", "1"]);
    let first = d.call(args.clone(), None, None);
    let state = state_of(&first);
    // The time passing is what is tested, not a wait for an event: the
    // state's 1 s limit (whole seconds) is over a second past by then, and
    // a slower host only makes it older.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let r = d.call(args.clone(), Some(accept()), Some(&state));
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    assert!(!dir.path().join("keyed.marker").exists());

    // A short key is refused at start, naming the file.
    let short = key_dir.path().join("short.key");
    std::fs::write(&short, "too short").unwrap();
    let out = common::regent()
        .args([
            "serve",
            dir.path().to_str().unwrap(),
            "--request-state-key-file",
        ])
        .arg(&short)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("short.key"), "{stderr}");
}

/// Rewrites the catalog's policy to `rego` and waits until `server`
/// resolves `args` as `done` says the new policy does (hot reload).
fn reload_policy(
    dir: &std::path::Path,
    server: &mut Server,
    rego: &str,
    args: &Value,
    done: impl Fn(&Value) -> bool,
) {
    std::fs::write(dir.join("mark.rego"), rego).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let r = server.resolve("mark_policy", args.clone());
        if done(&r) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the new policy was not loaded: {r}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The policy with a `deny` for `mode: danger` added.
fn denying() -> String {
    format!("{POLICY}\ndeny contains \"no more markers\" if input.arguments.mode == \"danger\"\n")
}

#[test]
fn a_confirmation_answered_after_a_reload_that_denies_runs_nothing_on_2025() {
    let dir = tools();
    let caps = json!({"elicitation": {"form": {}}});
    let mut server = Server::start_with(Era::Legacy, &[dir.path().to_str().unwrap()], caps);
    let args = json!({"marker": "stale.marker", "mode": "danger"});
    let id = server.send_request(
        "tools/call",
        json!({"name": "mark_policy", "arguments": args}),
    );
    // regent asks the user; while the question is open, the policy gains
    // a deny for these arguments and is reloaded.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let asked = loop {
        let m = server.next_message(deadline);
        if m["method"] == json!("elicitation/create") {
            break m;
        }
    };
    assert_eq!(asked["params"]["message"], json!("Create stale.marker?"));
    reload_policy(dir.path(), &mut server, &denying(), &args, |r| {
        r["result"]["_meta"]["regent/decision"]["allowed"] == json!(false)
            || r.to_string().contains("no more markers")
    });
    // The user accepts the question the old policy asked.
    server.send_line(
        &json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {}}})
            .to_string(),
    );
    let r = server.wait_for_id(&json!(id));
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    let t = text(&r["result"]);
    assert!(
        t.contains("the policy changed while the user was asked") && t.contains("no more markers"),
        "{t}"
    );
    assert!(
        !dir.path().join("stale.marker").exists(),
        "the stale decision ran the tool"
    );
}

#[test]
fn a_retry_answering_a_confirmation_the_policy_no_longer_asks_runs_nothing_on_2026() {
    let dir = tools();
    let mut raw = raw(dir.path(), &[]);
    let args = json!({"marker": "retry.marker", "mode": "danger"});
    let first = raw.call(args.clone(), None, None);
    let state = state_of(&first);
    // The confirmation's text changes before the user's answer comes back.
    let reworded = POLICY.replace("Create %s?", "Create %s, overwriting it?");
    reload_policy(dir.path(), &mut raw.server, &reworded, &args, |r| {
        r.to_string().contains("overwriting it")
    });
    let r = raw.call(args.clone(), Some(accept()), Some(&state));
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    let t = text(&r["result"]);
    assert!(
        t.contains("they answered \"Create retry.marker?\"")
            && t.contains("it now asks \"Create retry.marker, overwriting it?\""),
        "{t}"
    );
    assert!(!dir.path().join("retry.marker").exists());
    // A fresh round asks the new question, and its answer runs the tool.
    let again = raw.call(args.clone(), None, None);
    let r = raw.call(args.clone(), Some(accept()), Some(&state_of(&again)));
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    assert!(dir.path().join("retry.marker").exists());
}
