//! What a catalog keeps once loaded (issue 32 item 2). A tool whose every
//! planned rule runs on `native` keeps no regorus engine after the build
//! has warmed, checked and lowered it (`policy::engine::EnginePool::shed`):
//! what needs regorus (here native's fallback on a builtin's error, which
//! regorus raises again with its location) makes the engine again, and the
//! answers are those of a kept engine. A policy that fails at load still
//! refuses the catalog: the checks run before anything is dropped.

use crate::common;
use common::{Era, Server};
use serde_json::json;

const TOOLS: &str = "tools:\n  - name: t\n    description: converts\n    inputSchema:\n      type: object\n      properties:\n        s: {type: string}\n      required: [s]\n    policy: tools.t\n";

#[test]
fn a_fallback_to_regorus_makes_the_engine_again() {
    // `to_number("abc")` is an error in OPA: native declines it, and
    // regorus, made again for it, fails the request as a kept one did.
    let rego = "package tools.t\n\nimport rego.v1\n\nannotations := {\"readOnlyHint\": to_number(input.arguments.s) > 1} if input.arguments.s != \"\"\n";
    let dir = common::catalog(&[("tools.yaml", TOOLS), ("t.rego", rego)]);
    // The load check's exercise would meet the error too, on purpose here.
    let mut s = Server::start(
        Era::Legacy,
        &[
            "--no-watch",
            "--skip-load-check",
            dir.path().to_str().unwrap(),
        ],
    );
    // Twice: the second fallback takes the engine the first one made.
    for _ in 0..2 {
        let r = s.resolve("t", json!({"s": "5"}));
        assert_eq!(r["annotations"]["readOnlyHint"], true, "{r}");
        let r = s.resolve("t", json!({"s": "0"}));
        assert_eq!(r["annotations"]["readOnlyHint"], false, "{r}");
        let e = s.expect_error(
            "tools/resolve",
            json!({"name": "t", "arguments": {"s": "abc"}}),
        );
        assert_eq!(e["code"], -32603, "{e}");
        assert_eq!(e["data"]["reason"], "policy-error", "{e}");
    }
}

#[test]
fn a_policy_failing_at_load_still_refuses_the_catalog() {
    // Two complete definitions that disagree on every input: the warm-up
    // on the sample arguments meets the conflict before anything is shed.
    let rego = "package tools.t\n\nimport rego.v1\n\nannotations := {\"readOnlyHint\": true}\n\nannotations := {\"readOnlyHint\": false} if count(input.arguments.s) >= 0\n";
    let dir = common::catalog(&[("tools.yaml", TOOLS), ("t.rego", rego)]);
    let out = common::serve_once(dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("t.rego:7:1: error: rules conflict"),
        "{stderr}"
    );
}
