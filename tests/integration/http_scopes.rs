//! `regent serve --enforce-scopes`: a `tools/call` runs only when the
//! caller's token grants the OAuth scopes its resolved `securitySchemes`
//! need. Tokens are ES256 JWTs signed here (jwt_support) and verified by
//! the real binary against a JWKS file; the tool touches a marker file, so
//! "nothing ran" is a file that does not exist. Over stdio the scopes come
//! from `--caller-file` claims.

use crate::common;

use crate::jwt_support::{AUDIENCE, ISSUER, Signer, now};

use common::http::{HttpServer, McpHttp};
use common::{Era, Server};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// `git` pushes or fetches; its rules say `push` needs `repo:write` and
/// `fetch` `repo:read`. It runs `touch <dir>/ran-<action>`.
fn tools(dir: &Path) -> String {
    format!(
        r#"tools:
  - name: git
    description: pushes or fetches a repository
    inputSchema:
      type: object
      properties: {{action: {{type: string, enum: [push, fetch]}}}}
      required: [action]
    annotations: {{readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false}}
    securitySchemes: [{{type: oauth2, scopes: [repo:read, repo:write]}}]
    resolve:
      - when: {{action: push}}
        securitySchemes: [{{type: oauth2, scopes: [repo:write]}}]
      - when: {{action: fetch}}
        annotations: {{readOnlyHint: true, destructiveHint: false, idempotentHint: true}}
        securitySchemes: [{{type: oauth2, scopes: [repo:read]}}]
    run: {{cli: {{program: touch, args: ["{}/ran-{{action}}"], timeout: 5s}}}}
"#,
        dir.display()
    )
}

/// A catalog, a key and its JWKS, a decision log, in one directory.
struct Setup {
    dir: tempfile::TempDir,
    signer: Signer,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let s = Setup {
            dir,
            signer: Signer::new("k1"),
        };
        std::fs::create_dir(s.path("catalog")).unwrap();
        std::fs::create_dir(s.path("out")).unwrap();
        std::fs::write(s.path("catalog/git.yaml"), tools(&s.path("out"))).unwrap();
        std::fs::write(s.path("jwks.json"), s.signer.jwks().to_string()).unwrap();
        s
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn arg(&self, rel: &str) -> String {
        self.path(rel).display().to_string()
    }

    /// A token for `sub` with `extra` claims (`scope`, `scp`).
    fn token(&self, sub: &str, extra: Value) -> String {
        let mut claims = json!({
            "sub": sub, "iss": ISSUER, "aud": AUDIENCE,
            "iat": now(), "exp": now() + 300,
        });
        for (k, v) in extra.as_object().unwrap() {
            claims[k] = v.clone();
        }
        self.signer.sign(&claims)
    }

    fn serve(&self, enforce: bool) -> HttpServer {
        let (jwks, log, catalog) = (
            self.arg("jwks.json"),
            self.arg("decisions.jsonl"),
            self.arg("catalog"),
        );
        let mut args = vec![
            "--no-watch",
            "--jwt-jwks-file",
            &jwks,
            "--jwt-issuer",
            ISSUER,
            "--jwt-audience",
            AUDIENCE,
            "--decision-log",
            &log,
        ];
        if enforce {
            args.push("--enforce-scopes");
        }
        args.push(&catalog);
        HttpServer::start(&args)
    }

    /// Whether the tool ran for `action`, and forget it.
    fn ran(&self, action: &str) -> bool {
        std::fs::remove_file(self.path(&format!("out/ran-{action}"))).is_ok()
    }

    /// The decision line of call `id` (waiting for the writer thread).
    fn decision(&self, id: &str) -> Value {
        let deadline = std::time::Instant::now() + common::WAIT;
        loop {
            let text = std::fs::read_to_string(self.path("decisions.jsonl")).unwrap_or_default();
            let complete = text.rfind('\n').map_or("", |end| &text[..=end]);
            if let Some(line) = common::decision_lines(complete)
                .into_iter()
                .find(|l| l["id"] == json!(id))
            {
                return line;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no decision line {id} in:\n{text}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// The decision lines whose `refused` starts with `insufficient_scope`,
    /// once there are at least `n`.
    fn scope_refusals(&self, n: usize) -> Vec<Value> {
        let deadline = std::time::Instant::now() + common::WAIT;
        loop {
            let text = std::fs::read_to_string(self.path("decisions.jsonl")).unwrap_or_default();
            let complete = text.rfind('\n').map_or("", |end| &text[..=end]);
            let lines: Vec<Value> = common::decision_lines(complete)
                .into_iter()
                .filter(|l| {
                    l["refused"]
                        .as_str()
                        .is_some_and(|r| r.starts_with("insufficient_scope"))
                })
                .collect();
            if lines.len() >= n {
                return lines;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{n} scope refusals never logged:\n{text}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

fn client(http: &HttpServer, era: Era, token: &str) -> McpHttp {
    McpHttp::connect_with(
        http.addr,
        era,
        vec![("Authorization".into(), format!("Bearer {token}"))],
    )
}

/// Calls `git` with `action`: the HTTP response and the JSON-RPC answer.
fn call(c: &mut McpHttp, action: &str) -> (common::http::Resp, Value) {
    let msg = c.message(
        "tools/call",
        json!({"name": "git", "arguments": {"action": action}}),
    );
    let resp = c.post(&msg, "tools/call");
    let answer = resp.response_to(&msg["id"]);
    (resp, answer)
}

/// Asserts `answer` ran the tool without error.
fn ran_ok(answer: &Value, what: &str) {
    let r = answer
        .get("result")
        .unwrap_or_else(|| panic!("{what}: {answer}"));
    assert_eq!(r["isError"], json!(false), "{what}: {answer}");
}

/// Asserts `answer` is the scope refusal naming `scopes` and `missing`.
fn refused(answer: &Value, scopes: Value, missing: Value, what: &str) -> String {
    refused_as(answer, "git", scopes, missing, what)
}

/// [`refused`], for `tool`.
fn refused_as(answer: &Value, tool: &str, scopes: Value, missing: Value, what: &str) -> String {
    let e = answer
        .get("error")
        .unwrap_or_else(|| panic!("{what} should be refused: {answer}"));
    assert_eq!(e["code"], json!(-32003), "{what}: {answer}");
    assert_eq!(
        e["data"],
        json!({"reason": "insufficient_scope", "tool": tool, "scopes": scopes, "missing": missing}),
        "{what}: {answer}"
    );
    e["message"].as_str().unwrap().to_string()
}

const CHALLENGE_WRITE: &str = r#"Bearer realm="regent", error="insufficient_scope", error_description="the access token lacks scopes this tool call needs", scope="repo:write""#;

#[test]
fn a_token_without_the_scope_runs_only_what_its_scopes_allow() {
    let s = Setup::new();
    let http = s.serve(true);
    let read = s.token("alice", json!({"scope": "openid repo:read"}));
    for era in Era::ALL {
        let mut c = client(&http, era, &read);
        let (resp, answer) = call(&mut c, "fetch");
        assert_eq!(resp.status, 200, "{era:?}: {}", resp.text());
        ran_ok(&answer, "fetch with repo:read");
        assert!(s.ran("fetch"), "{era:?}: fetch ran");

        let (resp, answer) = call(&mut c, "push");
        let message = refused(
            &answer,
            json!(["repo:write"]),
            json!(["repo:write"]),
            "push",
        );
        assert!(
            message.contains("the token lacks \"repo:write\""),
            "{era:?}: {message}"
        );
        match era {
            // A 2026-07-28 answer is one JSON body: the 403 challenge.
            Era::Modern => {
                assert_eq!(resp.status, 403, "{}", resp.text());
                assert_eq!(
                    resp.header("www-authenticate"),
                    Some(CHALLENGE_WRITE),
                    "{:?}",
                    resp.headers
                );
                assert!(!resp.is_sse());
            }
            // A 2025-11-25 session's answer streams as SSE, under a 200
            // sent before the answer was known: the JSON-RPC error alone.
            Era::Legacy => {
                assert_eq!(resp.status, 200, "{}", resp.text());
                assert!(resp.is_sse(), "{:?}", resp.headers);
                assert_eq!(resp.header("www-authenticate"), None);
            }
        }
        assert!(!s.ran("push"), "{era:?}: push must not run");

        // tools/resolve still tells the client what push needs.
        let r = c.resolve("git", json!({"action": "push"}));
        assert_eq!(
            r["tool"]["securitySchemes"],
            json!([{"type": "oauth2", "scopes": ["repo:write"]}]),
            "{era:?}: {r}"
        );
    }
    // Each refusal is in the decision log: the policy allowed, the scope
    // check refused, with the scopes.
    let lines = s.scope_refusals(2);
    assert_eq!(lines.len(), 2, "{lines:?}");
    for line in &lines {
        assert_eq!(line["tool"], json!("git"), "{line}");
        assert_eq!(line["decision"], json!("allowed"), "{line}");
        assert_eq!(
            line["insufficientScope"],
            json!({"scopes": ["repo:write"], "missing": ["repo:write"]}),
            "{line}"
        );
        assert_eq!(line["caller"]["subject"], json!("alice"), "{line}");
        assert!(line.get("outcome").is_none(), "nothing ran: {line}");
    }
    assert_eq!(
        http.metric(Some(&read), "regent_calls_scope_refused_total"),
        Some(2.0)
    );
    assert_eq!(
        http.metric(
            Some(&read),
            r#"regent_requests_total{method="tools/call",outcome="insufficient_scope"}"#
        ),
        Some(2.0)
    );
}

#[test]
fn the_scopes_may_come_as_scope_or_scp_and_a_wrong_type_is_refused() {
    let s = Setup::new();
    let http = s.serve(true);
    for (claims, what) in [
        (json!({"scope": "repo:read repo:write"}), "scope string"),
        (json!({"scp": ["repo:write"]}), "scp array"),
        (json!({"scp": "repo:write repo:read"}), "scp string"),
    ] {
        let token = s.token("bob", claims);
        for era in Era::ALL {
            let mut c = client(&http, era, &token);
            let (resp, answer) = call(&mut c, "push");
            assert_eq!(resp.status, 200, "{what} {era:?}: {}", resp.text());
            ran_ok(&answer, what);
            assert!(s.ran("push"), "{what} {era:?}: push ran");
            let id = common::decision_id(&answer["result"]);
            assert!(s.decision(&id).get("refused").is_none());
        }
    }
    // A scope claim of the wrong type grants nothing: refused, saying why.
    for (claims, why) in [
        (json!({"scope": ["repo:write"]}), "the `scope` claim is"),
        (json!({"scp": [true]}), "the `scp` claim has"),
        (
            json!({"scope": "repo:write", "scp": "repo:read"}),
            "name different scopes",
        ),
    ] {
        let token = s.token("carol", claims.clone());
        let mut c = client(&http, Era::Modern, &token);
        let (resp, answer) = call(&mut c, "push");
        assert_eq!(resp.status, 403, "{claims}: {}", resp.text());
        assert_eq!(resp.header("www-authenticate"), Some(CHALLENGE_WRITE));
        let message = refused(&answer, json!(["repo:write"]), json!(["repo:write"]), why);
        assert!(message.contains(why), "{claims}: {message}");
        assert!(!s.ran("push"), "{claims}: push must not run");
    }
}

#[test]
fn without_enforce_scopes_the_scopes_are_only_advice() {
    let s = Setup::new();
    let http = s.serve(false);
    let read = s.token("alice", json!({"scope": "repo:read"}));
    for era in Era::ALL {
        let mut c = client(&http, era, &read);
        let (resp, answer) = call(&mut c, "push");
        assert_eq!(resp.status, 200, "{era:?}: {}", resp.text());
        ran_ok(&answer, "push without --enforce-scopes");
        assert!(s.ran("push"), "{era:?}");
    }
    assert_eq!(
        http.metric(Some(&read), "regent_calls_scope_refused_total"),
        Some(0.0)
    );
}

#[test]
fn over_stdio_the_caller_files_claims_grant_the_scopes() {
    let s = Setup::new();
    let catalog = s.arg("catalog");
    let reader = s.path("reader.yaml");
    std::fs::write(&reader, "subject: ci\nclaims: {scope: repo:read}\n").unwrap();
    let writer = s.path("writer.json");
    std::fs::write(
        &writer,
        r#"{"subject": "ci", "claims": {"scp": ["repo:read", "repo:write"]}}"#,
    )
    .unwrap();
    let call = |server: &mut Server, action: &str| {
        server.request(
            "tools/call",
            json!({"name": "git", "arguments": {"action": action}}),
        )
    };
    for era in Era::ALL {
        let mut server = Server::start(
            era,
            &[
                "--no-watch",
                "--enforce-scopes",
                "--caller-file",
                reader.to_str().unwrap(),
                &catalog,
            ],
        );
        ran_ok(&call(&mut server, "fetch"), "fetch as reader");
        assert!(s.ran("fetch"));
        refused(
            &call(&mut server, "push"),
            json!(["repo:write"]),
            json!(["repo:write"]),
            "push as reader",
        );
        assert!(!s.ran("push"), "{era:?}: push must not run");
        assert!(server.finish().success());
    }

    let mut server = Server::start(
        Era::Modern,
        &[
            "--no-watch",
            "--enforce-scopes",
            "--caller-file",
            writer.to_str().unwrap(),
            &catalog,
        ],
    );
    ran_ok(&call(&mut server, "push"), "push as writer");
    assert!(s.ran("push"));
    assert!(server.finish().success());

    // No caller at all: a call that needs a scope is refused.
    let mut server = Server::start(Era::Legacy, &["--no-watch", "--enforce-scopes", &catalog]);
    let message = refused(
        &call(&mut server, "fetch"),
        json!(["repo:read"]),
        json!(["repo:read"]),
        "fetch without a caller",
    );
    assert!(message.contains("there is no caller"), "{message}");
    assert!(!s.ran("fetch"));
    assert!(server.finish().success());
}

/// `deploy` asks for a confirmation; its policy's `security_schemes`
/// rule says which scope it needs.
const DEPLOY: &str = r#"tools:
  - name: deploy
    description: deploys
    inputSchema: {type: object, properties: {marker: {type: string}}, required: [marker]}
    annotations: {readOnlyHint: false, destructiveHint: true}
    policy: tools.deploy
    run: {cli: {program: touch, args: ["--", "{marker}"], cwd: .}}
"#;

fn deploy_policy(scope: &str) -> String {
    format!(
        r#"package tools.deploy

import rego.v1

confirm := "Deploy?"

security_schemes := [{{"type": "oauth2", "scopes": ["{scope}"]}}]
"#
    )
}

#[test]
fn a_call_decided_again_after_a_reload_is_held_to_the_new_scopes() {
    let dir = common::catalog(&[
        ("deploy.yaml", DEPLOY),
        ("deploy.rego", &deploy_policy("deploy:read")),
    ]);
    // The caller file lives outside the catalog, which reads every file.
    let outside = tempfile::tempdir().unwrap();
    let caller = outside.path().join("caller.yaml");
    std::fs::write(&caller, "subject: ci\nclaims: {scope: deploy:read}\n").unwrap();
    let mut server = Server::start_with(
        Era::Legacy,
        &[
            "--enforce-scopes",
            "--caller-file",
            caller.to_str().unwrap(),
            dir.path().to_str().unwrap(),
        ],
        json!({"elicitation": {"form": {}}}),
    );
    let marker = dir.path().join("deployed");
    let args = json!({"marker": marker.to_str().unwrap()});
    let id = server.send_request("tools/call", json!({"name": "deploy", "arguments": args}));
    // The caller's scope met the policy: regent asks to confirm.
    let deadline = std::time::Instant::now() + common::WAIT;
    let asked = loop {
        let m = server.next_message(deadline);
        if m["method"] == json!("elicitation/create") {
            break m;
        }
    };
    // While the question is open, the policy comes to need deploy:write.
    std::fs::write(
        dir.path().join("deploy.rego"),
        deploy_policy("deploy:write"),
    )
    .unwrap();
    loop {
        let r = server.resolve("deploy", args.clone());
        if r["tool"]["securitySchemes"][0]["scopes"] == json!(["deploy:write"]) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not reloaded: {r}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    server.send_line(
        &json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {}}})
            .to_string(),
    );
    let r = server.wait_for_id(&json!(id));
    refused_as(
        &r,
        "deploy",
        json!(["deploy:write"]),
        json!(["deploy:write"]),
        "deploy after the reload",
    );
    assert!(!marker.exists(), "the call ran on the stale decision");
    assert!(server.finish().success());
}
