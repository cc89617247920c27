//! `regent resolve` must print exactly what `regent serve` answers to
//! `tools/resolve`, results and errors alike. Both run as the built binary
//! on the same catalog in a temp dir; the server is spoken to over stdio
//! with a 2026-07-28 request, whose result carries `resultType`.

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

fn server_answers(dir: &Path, requests: &[Value]) -> Vec<Value> {
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
        let msg =
            json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/resolve", "params": params});
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
    ];
    let answers = server_answers(tmp.path(), &requests);
    for (req, answer) in requests.iter().zip(&answers) {
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
    }
    // The cases cover a result, a riskier-than-listed error, invalid
    // arguments, an unknown tool and a tool that cannot be resolved.
    assert!(answers[0]["result"]["resultType"] == "complete");
    assert!(answers[2]["error"]["code"] == -32603);
    assert!(answers[3]["error"]["code"] == -32602);
    assert!(answers[5]["error"]["data"]["reason"] == "not-resolvable");
}
