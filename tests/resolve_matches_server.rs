//! `regent resolve` must print exactly what `regent serve` answers to
//! `tools/resolve`, results and errors alike. Both run as the built binary
//! on the same catalog in a temp dir; the server is spoken to over stdio
//! with a 2026-07-28 request, whose result carries `resultType`.
//!
//! Over stdio the server writes these answers as text around the tool's
//! listed members serialized once (`protocol::answer`), while `regent
//! resolve` builds them as JSON values: this test is what holds the two
//! equal, so its catalog uses every member a resolved tool can have.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

const TOOLS: &str = r#"tools:
  - name: files
    inputSchema:
      type: object
      properties:
        path: {type: string}
        action: {type: string, enum: [read, delete]}
        force: {type: boolean}
      required: [path, action]
    annotations: {readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false}
    meta: {team: storage}
    policy: tools.files
  - name: static
    inputSchema: {type: object}
  - name: rich
    title: Rich tool
    description: Every member a resolved tool can carry
    inputSchema:
      type: object
      properties:
        mode: {type: string, enum: [plain, secret, risky, ask]}
      required: [mode]
    outputSchema:
      type: object
      properties:
        ok: {type: boolean}
    annotations: {title: Rich, readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true}
    meta: {team: "quotes \" and \\ and ünïcode"}
    securitySchemes: [{type: noauth}]
    resolve:
      - when: {mode: plain}
        annotations: {readOnlyHint: true, destructiveHint: false}
        meta: {rule: plain}
      - when: {mode: secret}
        securitySchemes: [{type: oauth2, scopes: [read]}]
      - when: {mode: risky}
        deny: [too risky, "and \"quoted\""]
      - when: {mode: ask}
        confirm: Really do it?
"#;

const POLICY: &str = r#"package tools.files

import rego.v1

annotations.readOnlyHint := true if input.arguments.action == "read"

annotations.destructiveHint := true if {
	input.arguments.action == "delete"
	input.arguments.force
}

meta := {"scratch": true} if startswith(input.arguments.path, "/tmp/")
"#;

fn server_answers(dir: &Path, requests: &[Value], method: &str) -> Vec<Value> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_regent"))
        .args(["serve", "catalog"])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut answers = Vec::new();
    for (i, r) in requests.iter().enumerate() {
        let mut params = r.clone();
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let msg = json!({"jsonrpc": "2.0", "id": i + 1, "method": method, "params": params});
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the server answers within 30 s");
        answers.push(serde_json::from_str(&line).unwrap());
    }
    drop(stdin);
    let _ = child.wait();
    answers
}

fn cli_answer(dir: &Path, name: &str, args: &Value) -> (i32, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_regent"))
        .args(["resolve", "--config", "catalog", name, &args.to_string()])
        .current_dir(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("regent resolve printed no json ({e}): {stdout}"));
    (out.status.code().unwrap_or(-1), v)
}

#[test]
fn cli_prints_what_the_server_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let catalog = tmp.path().join("catalog");
    std::fs::create_dir(&catalog).unwrap();
    std::fs::write(catalog.join("tools.yaml"), TOOLS).unwrap();
    std::fs::write(catalog.join("files.rego"), POLICY).unwrap();

    let requests = vec![
        json!({"name": "files", "arguments": {"path": "/tmp/a", "action": "read"}}),
        json!({"name": "files", "arguments": {"path": "/a", "action": "delete"}}),
        json!({"name": "files", "arguments": {"path": "/a", "action": "delete", "force": true}}),
        json!({"name": "files", "arguments": {"path": 7, "action": "read"}}),
        json!({"name": "nope", "arguments": {}}),
        json!({"name": "static", "arguments": {}}),
        json!({"name": "rich", "arguments": {"mode": "plain"}}),
        json!({"name": "rich", "arguments": {"mode": "secret"}}),
        json!({"name": "rich", "arguments": {"mode": "risky"}}),
        json!({"name": "rich", "arguments": {"mode": "ask"}}),
    ];
    let answers = server_answers(tmp.path(), &requests, "tools/resolve");
    let annotations = server_answers(tmp.path(), &requests, "tools/annotations");
    for ((req, answer), annotated) in requests.iter().zip(&answers).zip(&annotations) {
        let (code, printed) =
            cli_answer(tmp.path(), req["name"].as_str().unwrap(), &req["arguments"]);
        let expected = match (answer.get("result"), answer.get("error")) {
            (Some(r), None) => {
                assert_eq!(code, 0, "{req}");
                r.clone()
            }
            (None, Some(e)) => {
                assert_eq!(code, 1, "{req}");
                e.clone()
            }
            _ => panic!("not a JSON-RPC answer: {answer}"),
        };
        assert_eq!(
            printed,
            expected,
            "regent resolve and the server differ for {req}\n--- cli:\n{}\n--- server:\n{}",
            serde_json::to_string_pretty(&printed).unwrap(),
            serde_json::to_string_pretty(&expected).unwrap()
        );
        // tools/annotations answers with the same annotations, or the
        // same error.
        let expected = match printed.get("annotations") {
            Some(a) if code == 0 => json!({"resultType": "complete", "annotations": a}),
            _ => printed.clone(),
        };
        let got = annotated
            .get("result")
            .or_else(|| annotated.get("error"))
            .unwrap_or_else(|| panic!("not a JSON-RPC answer: {annotated}"));
        assert_eq!(got, &expected, "tools/annotations for {req}");
    }
    // The cases cover a result, a riskier-than-listed error, invalid
    // arguments, an unknown tool and a tool that cannot be resolved.
    assert!(answers[0]["result"]["resultType"] == "complete");
    assert!(answers[2]["error"]["code"] == -32603);
    assert!(answers[3]["error"]["code"] == -32602);
    assert!(answers[5]["error"]["data"]["reason"] == "not-resolvable");
    let tool = &answers[6]["result"]["tool"];
    for key in ["title", "description", "outputSchema", "securitySchemes"] {
        assert!(tool.get(key).is_some(), "no {key} in {tool}");
    }
    assert_eq!(tool["annotations"]["title"], "Rich");
    assert_eq!(answers[6]["result"]["_meta"]["rule"], "plain");
    assert_eq!(
        answers[7]["result"]["tool"]["securitySchemes"][0]["type"],
        "oauth2"
    );
    assert_eq!(
        answers[8]["result"]["_meta"]["regent/decision"]["allowed"],
        false
    );
    assert_eq!(
        answers[9]["result"]["_meta"]["regent/decision"]["confirm"],
        "Really do it?"
    );
}
