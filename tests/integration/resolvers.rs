//! Parameter resolvers end to end, against the real binary: a `deploy` tool
//! whose organisation comes from the server's environment, whose region a
//! policy computes from the organisation, whose approver the user names
//! (the question shows both), and whose working directory is the client's
//! first root. Driven by rmcp's client in both protocol eras, and by raw
//! JSON lines on 2026-07-28 to see every round and tamper with its state.

use crate::common;
use crate::exec_support;

use common::{Era, Rounds, is_error, state_of, text};
use exec_support::{Start, catalog};
use rmcp::model::ElicitationAction;
use serde_json::{Value, json};

/// The catalog: tests/fixtures/resolvers (shared with the Python interop).
struct Fixture(std::path::PathBuf);

impl Fixture {
    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

fn tools() -> Fixture {
    Fixture(common::repo_path("tests/fixtures/resolvers"))
}

const ROOT: &str = "file:///srv/work%20tree/";

#[tokio::test]
async fn a_chain_of_resolvers_fills_the_call_in_both_eras() {
    let dir = tools();
    for era in Era::ALL {
        let r = Start::new(dir.path())
            .env("DEPLOY_ORG", "eu-acme")
            .roots(&[ROOT, "file:///second"])
            .answer("approver", json!("alice"))
            .connect(era)
            .await;

        // tools/list shows only what the model provides.
        let listed = r.client.list_all_tools().await.unwrap();
        let schema = serde_json::to_value(&listed[0].input_schema).unwrap();
        let props: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(props, ["service"], "{era:?}: {schema}");
        assert_eq!(schema["required"], json!(["service"]), "{era:?}");

        let res = r.call("deploy", json!({"service": "api"})).await;
        assert!(!is_error(&res), "{era:?}: {res}");
        assert_eq!(text(&res), "api|eu-acme|eu-west-1|alice|/srv/work tree");
        // Each question once, with what the earlier resolvers found.
        assert_eq!(
            r.asked(),
            ["Who approves deploying api to eu-west-1 for eu-acme?"],
            "{era:?}"
        );
        assert_eq!(r.roots_listed(), 1, "{era:?}");

        // The preflight fills what the server can by itself (org, region),
        // so the policy's deny shows before anyone is asked anything.
        let resolved = r.resolve("deploy", json!({"service": "frozen"})).await;
        assert_eq!(
            resolved["_meta"]["regent/decision"]["reasons"],
            json!(["eu deploys of frozen are paused"]),
            "{era:?}: {resolved}"
        );
        assert_eq!(r.asked().len(), 1, "{era:?}: the preflight asked the user");

        // The model cannot supply a parameter the server fills.
        let err = r
            .try_call("deploy", json!({"service": "api", "org": "evil"}))
            .await
            .expect_err("org is filled by the server");
        assert!(
            err.to_string().contains("filled by the server"),
            "{era:?}: {err}"
        );

        // A policy-driven confirmation comes after the resolvers, and the
        // approver is not asked again for it.
        let res = r.call("deploy", json!({"service": "billing"})).await;
        assert!(!is_error(&res), "{era:?}: {res}");
        assert_eq!(
            r.asked()[1..],
            [
                "Who approves deploying billing to eu-west-1 for eu-acme?",
                "Deploy billing, approved by alice?"
            ],
            "{era:?}"
        );
        r.close().await;
    }
}

#[tokio::test]
async fn decline_cancel_and_missing_capabilities_refuse_the_call() {
    let dir = tools();
    for era in Era::ALL {
        for action in [ElicitationAction::Decline, ElicitationAction::Cancel] {
            let r = Start::new(dir.path())
                .env("DEPLOY_ORG", "us-acme")
                .roots(&[ROOT])
                .elicit(Some(action.clone()))
                .connect(era)
                .await;
            let res = r.call("deploy", json!({"service": "api"})).await;
            assert!(is_error(&res), "{era:?} {action:?}: {res}");
            let word = if action == ElicitationAction::Decline {
                "decline"
            } else {
                "cancel"
            };
            assert!(
                text(&res).contains(&format!("asked for `approver` and answered {word}")),
                "{era:?}: {}",
                text(&res)
            );
            assert!(!text(&res).contains("api|"), "the tool ran: {res}");
            // The audit log says the call was refused before any decision
            // (its only line, written a moment after the answer).
            let last = r
                .decisions_when(|l| !l.is_empty())
                .pop()
                .expect("a decision-log line");
            assert!(
                last["refused"]
                    .as_str()
                    .unwrap_or_default()
                    .contains(&format!("answered {word}")),
                "{last}"
            );
            assert!(
                last["error"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with("no decision"),
                "{last}"
            );
            r.close().await;
        }

        // No elicitation capability, or no roots capability: an error,
        // nothing runs.
        let us = || Start::new(dir.path()).env("DEPLOY_ORG", "us-acme");
        for (start, missing) in [
            (us().roots(&[ROOT]).elicit(None), "elicitation capability"),
            (us().answer("approver", json!("bob")), "roots capability"),
        ] {
            let r = start.connect(era).await;
            let err = r
                .try_call("deploy", json!({"service": "api"}))
                .await
                .expect_err(&format!("no {missing}"));
            assert!(err.to_string().contains(missing), "{era:?}: {err}");
            r.close().await;
        }

        // A value the server cannot get refuses the call before anyone is asked.
        let asked = || {
            Start::new(dir.path())
                .roots(&[ROOT])
                .answer("approver", json!("bob"))
        };
        let not_set = "environment variable DEPLOY_ORG, which is not set";
        let r = refused(asked().without("DEPLOY_ORG"), era, not_set).await;
        assert!(r.asked().is_empty(), "{era:?}: asked {:?}", r.asked());
        r.close().await;

        // A resolved value is checked against the parameter's schema.
        let bad = "`org` from environment variable DEPLOY_ORG does not match its schema";
        let r = refused(asked().env("DEPLOY_ORG", "Not An Org"), era, bad).await;
        r.close().await;
    }
}

/// A session started as `start` in `era`, whose `deploy` of `api` has just
/// been refused with `want` in its text.
async fn refused(start: Start<'_>, era: Era, want: &str) -> exec_support::Regent {
    let r = start.connect(era).await;
    let res = r.call("deploy", json!({"service": "api"})).await;
    assert!(is_error(&res), "{era:?}: {res}");
    assert!(text(&res).contains(want), "{}", text(&res));
    r
}

/// A raw 2026-07-28 client with elicitation and roots, calling `deploy`
/// with `DEPLOY_ORG=eu-acme`.
fn raw(dir: &std::path::Path) -> Rounds {
    let mut cmd = common::regent();
    cmd.arg("serve").arg(dir).env("DEPLOY_ORG", "eu-acme");
    let caps = json!({"elicitation": {"form": {}}, "roots": {}});
    Rounds::new(common::Server::spawn_with(Era::Modern, cmd, caps), "deploy")
}

fn answers(approver: &str) -> Value {
    json!({
        "regent/elicit/approver": {"action": "accept", "content": {"approver": approver}},
        "regent/roots": {"roots": [{"uri": ROOT}]}
    })
}

#[test]
fn three_resolvers_in_one_round_and_refused_states() {
    let dir = tools();
    let mut raw = raw(dir.path());
    let args = json!({"service": "api"});

    // Round one: env and policy are filled by the server; the user's
    // question (which shows them) and the roots request come together.
    let first = raw.call(args.clone(), None, None);
    let result = &first["result"];
    assert_eq!(result["resultType"], json!("input_required"), "{first}");
    let requests = result["inputRequests"].as_object().unwrap();
    let keys: Vec<&String> = requests.keys().collect();
    assert_eq!(keys, ["regent/elicit/approver", "regent/roots"], "{first}");
    let question = &requests["regent/elicit/approver"];
    assert_eq!(question["method"], json!("elicitation/create"));
    assert_eq!(
        question["params"]["message"],
        json!("Who approves deploying api to eu-west-1 for eu-acme?")
    );
    assert_eq!(
        question["params"]["requestedSchema"],
        json!({"type": "object", "properties": {"approver": {"type": "string", "minLength": 1}}, "required": ["approver"]})
    );
    assert_eq!(requests["regent/roots"]["method"], json!("roots/list"));
    let state = state_of(&first);

    // A tampered state.
    let mut tampered = state.clone().into_bytes();
    let last = tampered.len() - 1;
    tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
    let r = raw.call(
        args.clone(),
        Some(answers("alice")),
        Some(&String::from_utf8(tampered).unwrap()),
    );
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    assert_eq!(
        r["error"]["data"]["reason"],
        json!("invalid-request-state"),
        "{r}"
    );

    // The state replayed for other arguments.
    let r = raw.call(
        json!({"service": "db"}),
        Some(answers("alice")),
        Some(&state),
    );
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");

    // Answers without any state.
    let r = raw.call(args.clone(), Some(answers("alice")), None);
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");

    // Round two: every answer at once; the tool runs.
    let done = raw.call(args.clone(), Some(answers("alice")), Some(&state));
    assert_eq!(done["result"]["resultType"], json!("complete"), "{done}");
    assert_eq!(done["result"]["isError"], json!(false), "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"],
        json!("api|eu-acme|eu-west-1|alice|/srv/work tree")
    );

    // The same state again: spent.
    let r = raw.call(args.clone(), Some(answers("mallory")), Some(&state));
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");

    // An answer that fails the requested schema refuses the call.
    let first = raw.call(args.clone(), None, None);
    let r = raw.call(args.clone(), Some(answers("")), Some(&state_of(&first)));
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("does not match the question's schema"),
        "{r}"
    );

    // A confirmation is a third round; the approver is not asked again.
    let billing = json!({"service": "billing"});
    let first = raw.call(billing.clone(), None, None);
    let second = raw.call(
        billing.clone(),
        Some(answers("alice")),
        Some(&state_of(&first)),
    );
    let keys: Vec<&String> = second["result"]["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("{second}"))
        .keys()
        .collect();
    assert_eq!(keys, ["regent/confirm"], "{second}");
    let confirm = json!({"regent/confirm": {"action": "accept", "content": {}}});
    let third = raw.call(billing.clone(), Some(confirm), Some(&state_of(&second)));
    assert_eq!(third["result"]["isError"], json!(false), "{third}");
    assert_eq!(
        third["result"]["content"][0]["text"],
        json!("billing|eu-acme|eu-west-1|alice|/srv/work tree")
    );
}

/// `regent check` reports resolver cycles (tests/corpus/check/resolver-errors);
/// serving refuses to start on one.
#[test]
fn a_resolver_cycle_stops_the_server_from_starting() {
    let dir = catalog(&[(
        "cycle.yaml",
        r#"tools:
  - name: cyclic
    inputSchema:
      type: object
      properties:
        a: {type: string}
        b: {type: string}
    resolvers:
      a: {env: A, needs: [b]}
      b: {elicit: {message: "b, given {a}?"}}
"#,
    )]);
    let out = common::regent()
        .arg("serve")
        .arg(dir.path())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "serve started with a cycle: {stderr}"
    );
    assert!(stderr.contains("form a cycle: a -> b -> a"), "{stderr}");
    assert!(stderr.contains("cycle.yaml:9:7"), "{stderr}");
}
