//! The policy decides at call time exactly as at resolve time: a non-empty
//! `deny` (from Rego or from a YAML rule) stops execution, the result and
//! the decision log say why, and `tools/resolve` reported it beforehand.
//! A policy that fails is fail-closed: nothing runs.

use crate::common;
use crate::exec_support;

use common::{Era, decision_id, is_error, text};
use exec_support::{Start, catalog};
use serde_json::json;

const TOOLS: &str = r#"
tools:
  - name: touch
    inputSchema:
      type: object
      properties: {name: {type: string}}
      required: [name]
    annotations: {readOnlyHint: false, destructiveHint: false}
    policy: tools.touch
    run: {cli: {program: touch, args: ["--", "{name}"], cwd: work}}
  - name: touch_yaml
    inputSchema:
      type: object
      properties: {name: {type: string}}
      required: [name]
    resolve:
      - when: {name: forbidden}
        deny: the yaml rule forbids this name
    run: {cli: {program: touch, args: ["--", "{name}"], cwd: work}}
  - name: touch_broken_policy
    inputSchema:
      type: object
      properties: {name: {type: string}}
      required: [name]
    policy: tools.broken
    run: {cli: {program: touch, args: ["--", "{name}"], cwd: work}}
"#;

const POLICY: &str = r#"
package tools.touch

import rego.v1

deny contains "names starting with `forbidden` are refused" if startswith(input.arguments.name, "forbidden")

deny contains sprintf("%s is reserved", [input.arguments.name]) if input.arguments.name == "forbidden-reserved"
"#;

// `deny` must be a set of strings; this one is a boolean for one name.
const BROKEN: &str = r#"
package tools.broken

import rego.v1

deny := true if input.arguments.name == "boom"
"#;

fn setup() -> tempfile::TempDir {
    let dir = catalog(&[
        ("tools.yaml", TOOLS),
        ("touch.rego", POLICY),
        ("broken.rego", BROKEN),
    ]);
    std::fs::create_dir(dir.path().join("work")).unwrap();
    dir
}

#[tokio::test]
async fn a_denying_policy_stops_execution_and_says_why() {
    for era in Era::ALL {
        let dir = setup();
        let marker = dir.path().join("work/forbidden-reserved");
        let r = Start::new(dir.path())
            .arg("--skip-load-check")
            .connect(era)
            .await;
        let args = json!({"name": "forbidden-reserved"});
        let reasons = json!([
            "forbidden-reserved is reserved",
            "names starting with `forbidden` are refused"
        ]);

        // tools/resolve tells the client beforehand.
        let resolved = r.resolve("touch", args.clone()).await;
        assert_eq!(
            resolved["_meta"]["regent/decision"],
            json!({"allowed": false, "reasons": reasons}),
            "{era:?}: {resolved}"
        );

        let res = r.call("touch", args.clone()).await;
        assert!(is_error(&res), "{era:?}: {res}");
        assert!(!marker.exists(), "{era:?}: a denied call ran");
        let t = text(&res);
        assert!(t.contains("refused to run touch"), "{t}");
        assert!(t.contains("forbidden-reserved is reserved"), "{t}");
        let decision = &res["_meta"]["regent/decision"];
        assert_eq!(decision["allowed"], json!(false));
        assert_eq!(decision["reasons"], reasons);
        assert!(res["_meta"].get("regent/execution").is_none(), "{res}");

        let logged = r.decision(&decision_id(&res));
        assert_eq!(logged["kind"], json!("call"));
        assert_eq!(logged["tool"], json!("touch"));
        assert_eq!(logged["decision"], json!("denied"));
        assert_eq!(logged["reasons"], reasons);
        assert!(logged.get("outcome").is_none(), "{logged}");
        assert!(
            logged.get("arguments").is_none(),
            "arguments logged unasked: {logged}"
        );
        assert!(
            logged["argumentsDigest"]
                .as_str()
                .unwrap()
                .starts_with("sha256:")
        );
        assert_eq!(logged["revision"].as_str().unwrap().len(), 64, "{logged}");
        assert_eq!(
            logged["annotations"]["readOnlyHint"],
            json!(false),
            "{logged}"
        );

        // The resolve was logged too, with the same digest and decision.
        let resolves: Vec<_> = r
            .decisions()
            .into_iter()
            .filter(|d| d["kind"] == json!("resolve"))
            .collect();
        assert_eq!(resolves.len(), 1);
        assert_eq!(resolves[0]["argumentsDigest"], logged["argumentsDigest"]);
        assert_eq!(resolves[0]["reasons"], reasons);
        assert_ne!(resolves[0]["id"], logged["id"]);

        // The same tool runs for arguments the policy allows.
        let res = r.call("touch", json!({"name": "fine"})).await;
        assert!(!is_error(&res), "{res}");
        assert!(dir.path().join("work/fine").exists());
        let logged = r.decision(&decision_id(&res));
        assert_eq!(logged["decision"], json!("allowed"));
        assert_eq!(logged["outcome"], json!({"exitCode": 0}));
        assert!(logged["durationMs"].as_f64().unwrap() > 0.0);
        r.close().await;
    }
}

#[tokio::test]
async fn a_yaml_rule_can_deny() {
    let dir = setup();
    let r = Start::new(dir.path())
        .arg("--skip-load-check")
        .connect(Era::Modern)
        .await;
    let res = r.call("touch_yaml", json!({"name": "forbidden"})).await;
    assert!(is_error(&res));
    assert_eq!(
        res["_meta"]["regent/decision"]["reasons"],
        json!(["the yaml rule forbids this name"])
    );
    assert!(!dir.path().join("work/forbidden").exists());
    let res = r.call("touch_yaml", json!({"name": "other"})).await;
    assert!(!is_error(&res), "{res}");
    assert!(dir.path().join("work/other").exists());
    r.close().await;
}

#[tokio::test]
async fn a_failing_policy_runs_nothing() {
    for era in Era::ALL {
        let dir = setup();
        let r = Start::new(dir.path())
            .arg("--skip-load-check")
            .connect(era)
            .await;
        let err = r
            .try_call("touch_broken_policy", json!({"name": "boom"}))
            .await
            .unwrap_err();
        match err {
            rmcp::ServiceError::McpError(e) => assert_eq!(e.code.0, -32603, "{e:?}"),
            other => panic!("{other:?}"),
        }
        assert!(!dir.path().join("work/boom").exists(), "{era:?}");
        let log = r.decisions_when(|l| !l.is_empty());
        assert_eq!(log.len(), 1, "{log:?}");
        assert_eq!(log[0]["decision"], json!("error"));
        assert!(
            log[0]["error"]
                .as_str()
                .unwrap()
                .contains("deny must be a set"),
            "{}",
            log[0]
        );
        r.close().await;
    }
}
