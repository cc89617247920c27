//! Shadow policies and decision-log masking, through the built binary: a
//! shadow policy that denies what the enforced one allows lets the call run
//! and logs its deny; a shadow policy that fails leaves the request alone
//! and logs its error; `regent test` judges a shadow policy with `shadow:
//! true`; `--decision-log-mask` erases the paths it names and nothing else.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};

const TOOLS: &str = r#"tools:
  - name: write_note
    inputSchema:
      type: object
      properties:
        path: {type: string}
        password: {type: string}
        opts:
          type: object
          properties:
            token: {type: string}
            keep: {type: integer}
      required: [path]
    annotations: {readOnlyHint: false, destructiveHint: false}
    policy: tools.notes
    shadow_policy: tools.notes_next
    run: {cli: {program: "true"}}
  - name: count
    inputSchema:
      type: object
      properties:
        path: {type: string}
        n: {type: integer}
    annotations: {readOnlyHint: true}
    policy: tools.count
    shadow_policy: tools.count_next
    run: {cli: {program: "true"}}
"#;

const COUNT: &str = r#"package tools.count

import rego.v1

deny contains "negative" if input.arguments.n < 0
"#;

/// Far slower than any time limit for a large `n`, without allocating.
const COUNT_NEXT: &str = r#"package tools.count_next

import rego.v1

deny contains "negative" if input.arguments.n < 0

deny contains "no pair" if {
	some i in numbers.range(1, input.arguments.n)
	some j in numbers.range(1, input.arguments.n)
	i * j < 0
}

# Outside the native subset (a time-dependent builtin): the plan runs on
# regorus, whose time limit the timeout test checks.
deny contains "before 1970" if time.now_ns() < 0
"#;

const ENFORCED: &str = r#"package tools.notes

import rego.v1

deny contains "forbidden is forbidden" if input.arguments.path == "forbidden"
"#;

/// The policy under test: stricter than the enforced one, and broken for
/// one path (a confirmation that is not a message string).
const SHADOW: &str = r#"package tools.notes_next

import rego.v1

deny contains "forbidden is forbidden" if input.arguments.path == "forbidden"

deny contains "secrets are off limits" if startswith(input.arguments.path, "secret/")

confirm := 5 if input.arguments.path == "boom"
"#;

const CASES: &str = r#"cases:
  - name: the enforced policy lets secrets through
    tool: write_note
    arguments: {path: secret/a}
    expect: {deny: []}
  - name: the new policy denies them
    tool: write_note
    arguments: {path: secret/a}
    shadow: true
    expect: {deny: [secrets are off limits]}
  - name: the new policy is broken for boom
    tool: write_note
    arguments: {path: boom}
    shadow: true
    expect: {error: "policy evaluation failed"}
"#;

fn catalog(dir: &Path) -> PathBuf {
    let cat = dir.join("catalog");
    std::fs::create_dir(&cat).unwrap();
    std::fs::write(cat.join("tools.yaml"), TOOLS).unwrap();
    std::fs::write(cat.join("notes.rego"), ENFORCED).unwrap();
    std::fs::write(cat.join("notes_next.rego"), SHADOW).unwrap();
    std::fs::write(cat.join("count.rego"), COUNT).unwrap();
    std::fs::write(cat.join("count_next.rego"), COUNT_NEXT).unwrap();
    cat
}

const HANDSHAKE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n"
);

/// Sends `requests` (method, arguments) with ids 1.. to `regent serve` with
/// `extra` flags; returns the answers by id and the decision-log lines.
fn serve(dir: &Path, extra: &[&str], requests: &[(&str, &str, Value)]) -> (Vec<Value>, Vec<Value>) {
    let cat = catalog(dir);
    let mut input = HANDSHAKE.to_string();
    for (i, (method, tool, args)) in requests.iter().enumerate() {
        let msg = json!({"jsonrpc": "2.0", "id": i + 1, "method": method,
            "params": {"name": tool, "arguments": args}});
        input.push_str(&msg.to_string());
        input.push('\n');
    }
    let requests_file = dir.join("requests.jsonl");
    std::fs::write(&requests_file, input).unwrap();
    let log = dir.join("decisions.jsonl");
    let out = common::regent()
        .args(["serve", "--no-watch", "--decision-log"])
        .arg(&log)
        .args(extra)
        .arg(&cat)
        .stdin(std::fs::File::open(&requests_file).unwrap())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut answers: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|m: &Value| m.get("id").and_then(Value::as_u64).is_some_and(|id| id > 0))
        .collect();
    answers.sort_by_key(|m| m["id"].as_u64());
    let lines = common::decision_lines(&std::fs::read_to_string(&log).unwrap());
    assert_eq!(answers.len(), requests.len(), "{answers:?}");
    assert_eq!(lines.len(), requests.len(), "{lines:?}");
    (answers, lines)
}

/// The log line of the request with arguments `path`.
fn line_for<'a>(lines: &'a [Value], kind: &str, path: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["kind"] == kind && l["input"]["arguments"]["path"] == path)
        .unwrap_or_else(|| panic!("no {kind} line for {path}: {lines:?}"))
}

#[test]
fn a_shadow_deny_is_logged_and_the_call_runs_anyway() {
    let tmp = tempfile::tempdir().unwrap();
    let (answers, lines) = serve(
        tmp.path(),
        &["--log-arguments"],
        &[
            ("tools/call", "write_note", json!({"path": "secret/a"})),
            ("tools/resolve", "write_note", json!({"path": "secret/a"})),
            ("tools/call", "write_note", json!({"path": "notes/a"})),
            ("tools/call", "write_note", json!({"path": "forbidden"})),
        ],
    );
    // The enforced policy decides: the call ran, and said so.
    let ran = &answers[0]["result"];
    assert_eq!(ran["isError"], json!(false), "{ran}");
    assert_eq!(ran["_meta"]["regent/decision"]["allowed"], json!(true));
    assert_eq!(ran["_meta"]["regent/execution"]["exitCode"], json!(0));
    let resolved = &answers[1]["result"];
    assert_eq!(
        resolved["_meta"]["regent/decision"]["reasons"],
        json!([]),
        "the shadow deny never reaches an answer: {resolved}"
    );

    let call = line_for(&lines, "call", "secret/a");
    assert_eq!(call["decision"], json!("allowed"));
    assert_eq!(call["outcome"]["exitCode"], json!(0));
    assert_eq!(call["result"]["allowed"], json!(true));
    let shadow = &call["shadow"];
    assert_eq!(shadow["policy"], json!("tools.notes_next"));
    assert_eq!(shadow["result"]["allowed"], json!(false));
    assert_eq!(shadow["result"]["deny"], json!(["secrets are off limits"]));
    assert_eq!(
        shadow["result"]["annotations"],
        call["result"]["annotations"]
    );
    assert_eq!(shadow["agrees"], json!(false));
    assert!(
        shadow["metrics"]["timer_regent_eval_ns"].is_u64(),
        "{shadow}"
    );

    let resolve = line_for(&lines, "resolve", "secret/a");
    assert_eq!(resolve["shadow"]["result"]["allowed"], json!(false));

    // Where the two agree, the line says so.
    let agreed = line_for(&lines, "call", "notes/a");
    assert_eq!(agreed["shadow"]["agrees"], json!(true), "{agreed}");
    assert_eq!(agreed["shadow"]["result"], agreed["result"]);

    // An enforced deny refuses the call; the shadow decision is still there.
    assert_eq!(answers[3]["result"]["isError"], json!(true));
    let denied = line_for(&lines, "call", "forbidden");
    assert_eq!(denied["decision"], json!("denied"));
    assert!(denied.get("outcome").is_none(), "nothing ran: {denied}");
    assert_eq!(
        denied["shadow"]["result"]["deny"],
        json!(["forbidden is forbidden"])
    );
    assert_eq!(denied["shadow"]["agrees"], json!(true));
}

#[test]
fn a_failing_shadow_policy_leaves_the_request_alone_and_logs_its_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (answers, lines) = serve(
        tmp.path(),
        &["--log-arguments"],
        &[
            ("tools/call", "write_note", json!({"path": "boom"})),
            ("tools/resolve", "write_note", json!({"path": "boom"})),
        ],
    );
    assert_eq!(answers[0]["result"]["isError"], json!(false), "{answers:?}");
    assert!(answers[1].get("result").is_some(), "{answers:?}");
    for kind in ["call", "resolve"] {
        let line = line_for(&lines, kind, "boom");
        assert_eq!(line["decision"], json!("allowed"), "{line}");
        let result = &line["shadow"]["result"];
        assert_eq!(result["allowed"], json!(false), "{line}");
        let error = result["error"].as_str().unwrap();
        assert!(
            error.contains("tools.notes_next.confirm must be a non-empty message string"),
            "{error}"
        );
        assert_eq!(line["shadow"]["agrees"], json!(false));
    }
}

#[test]
fn a_shadow_policy_that_times_out_leaves_the_call_alone_and_logs_the_timeout() {
    let tmp = tempfile::tempdir().unwrap();
    let (answers, lines) = serve(
        tmp.path(),
        &["--log-arguments"],
        &[("tools/call", "count", json!({"path": "slow", "n": 20000}))],
    );
    assert_eq!(answers[0]["result"]["isError"], json!(false), "{answers:?}");
    let line = line_for(&lines, "call", "slow");
    assert_eq!(line["decision"], json!("allowed"), "{line}");
    assert_eq!(line["outcome"]["exitCode"], json!(0), "{line}");
    let result = &line["shadow"]["result"];
    assert_eq!(result["allowed"], json!(false), "{line}");
    assert!(
        result["error"]
            .as_str()
            .is_some_and(|e| e.contains("time limit")),
        "{line}"
    );
}

#[test]
fn regent_test_judges_the_shadow_policy_when_a_case_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    std::fs::write(cat.join("notes.test.yaml"), CASES).unwrap();
    let out = common::regent().arg("test").arg(&cat).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("3 passed"), "{stdout}");

    // The same expectation against the enforced policy fails: the case
    // really is judged by the shadow package.
    let wrong = CASES.replace(
        "    shadow: true\n    expect: {deny: [secrets",
        "    expect: {deny: [secrets",
    );
    assert_ne!(wrong, CASES);
    std::fs::write(cat.join("notes.test.yaml"), wrong).unwrap();
    let out = common::regent().arg("test").arg(&cat).output().unwrap();
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn shadow_plans_run_on_the_native_evaluator_when_they_lower() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let source = regent::source::Source::load(&[cat]).unwrap();
    let catalog = regent::catalog::build(&source, &Default::default()).unwrap();
    let t = catalog.tool("write_note").unwrap();
    assert!(t.is_native());
    assert!(t.is_shadow_native(), "the shadow plan lowers too");
    // A plan outside the subset is still evaluated, by regorus: the
    // timeout test above runs on it.
    let count = catalog.tool("count").unwrap();
    assert!(count.is_native() && !count.is_shadow_native());
}

#[test]
fn a_shadow_policy_failing_at_load_is_a_warning_and_serving_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    // Two values for one complete rule whatever the arguments: a conflict
    // on the sample arguments at load, and on every request.
    std::fs::write(
        cat.join("notes_next.rego"),
        "package tools.notes_next\n\nimport rego.v1\n\nconfirm := \"a\" if input.arguments.path != \"~\"\n\nconfirm := \"b\" if input.arguments.path != \"~\"\n",
    )
    .unwrap();
    let requests = tmp.path().join("requests.jsonl");
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "write_note", "arguments": {"path": "x"}}});
    std::fs::write(&requests, format!("{HANDSHAKE}{call}\n")).unwrap();
    let log = tmp.path().join("decisions.jsonl");
    let out = common::regent()
        .args(["serve", "--no-watch", "--decision-log"])
        .arg(&log)
        .arg(&cat)
        .stdin(std::fs::File::open(&requests).unwrap())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: shadow policy `tools.notes_next` (log-only) fails"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let answer: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    // The call's outcome line: its intent line came before it ran.
    let text = std::fs::read_to_string(&log).unwrap();
    let line: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(line["phase"], json!("outcome"), "{text}");
    assert_eq!(line["decision"], json!("allowed"));
    let error = line["shadow"]["result"]["error"].as_str().unwrap();
    assert!(error.contains("conflict"), "{error}");
}

#[test]
fn a_shadow_policy_naming_no_package_is_a_load_error_with_a_hint() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    std::fs::write(
        cat.join("tools.yaml"),
        TOOLS.replace(
            "shadow_policy: tools.notes_next",
            "shadow_policy: tools.notes_nxt",
        ),
    )
    .unwrap();
    let out = common::regent().arg("check").arg(&cat).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("shadow_policy package `tools.notes_nxt` is not defined by any .rego file"),
        "{text}"
    );
    assert!(text.contains("did you mean `tools.notes_next`?"), "{text}");
}

#[test]
fn masking_erases_the_configured_paths_and_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let caller = tmp.path().join("caller.yaml");
    std::fs::write(
        &caller,
        "subject: alice@example.com\nissuer: https://idp.example.com\n",
    )
    .unwrap();
    let args = json!({"path": "notes/a", "password": "hunter2",
        "opts": {"token": "t0ken", "keep": 1}});
    let (_, lines) = serve(
        tmp.path(),
        &[
            "--log-arguments",
            "--caller-file",
            caller.to_str().unwrap(),
            "--decision-log-mask",
            "/input/arguments/password",
            "--decision-log-mask",
            "/input/arguments/opts/token",
            "--decision-log-mask",
            "/input/arguments/not_sent",
            "--decision-log-mask",
            "/input/caller/subject",
        ],
        &[
            ("tools/call", "write_note", args.clone()),
            ("tools/resolve", "write_note", args),
        ],
    );
    let kept = json!({"path": "notes/a", "opts": {"keep": 1}});
    for line in &lines {
        let text = line.to_string();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(!text.contains("t0ken"), "{text}");
        assert!(!text.contains("alice@example.com"), "{text}");
        assert_eq!(line["arguments"], kept, "{text}");
        assert_eq!(line["input"]["arguments"], kept, "{text}");
        assert_eq!(line["input"]["tool"], json!("write_note"));
        assert_eq!(
            line["caller"],
            json!({"issuer": "https://idp.example.com"}),
            "{text}"
        );
        assert_eq!(line["input"]["caller"], line["caller"]);
        assert_eq!(
            line["erased"],
            json!([
                "/input/arguments/password",
                "/input/arguments/opts/token",
                "/input/caller/subject"
            ]),
            "an absent path erases nothing and is not listed: {text}"
        );
        // The digest is of what the line shows, so it cannot confirm a
        // guess of the erased values.
        assert_eq!(
            line["argumentsDigest"],
            json!(regent::decisions::arguments_digest(&kept))
        );
        assert_eq!(line["decision"], json!("allowed"));
    }
}

#[test]
fn a_mask_outside_the_logged_input_is_refused_with_a_hint() {
    for (mask, why) in [
        ("/arguments/password", "is not a path into the logged input"),
        ("/input/tool", "would erase the tool name"),
        ("/input/arguments", "would erase every argument"),
        ("/input/arguments//x", "has an empty key"),
    ] {
        let out = common::regent()
            .args(["serve", "--decision-log-mask", mask, "."])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{mask}: {err}");
        assert!(err.contains(why), "{mask}: {err}");
        assert!(err.contains("/input/arguments"), "a hint: {err}");
    }
}
