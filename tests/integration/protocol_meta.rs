//! What a decision carries beside its annotations, over stdio: `securitySchemes`
//! and `_meta` resolved per call, each travelling only under its own
//! extension, a shared policy library beside a catalog, and `regent resolve`
//! printing the same answer as a negotiating request.

use crate::common;

use crate::protocol::{negotiating, serve};
use common::draft_client::{self, DECISION, EXTENSION, SECURITY};
use common::{Era, Server, assert_subset, regent, repo_path};
use serde_json::{Value, json};

#[test]
fn security_schemes_and_meta_resolve_per_call() {
    let mut s = serve(Era::Legacy, "examples/github_api", json!({}));
    let listed = s.request("tools/list", json!({}))["result"]["tools"][0].clone();
    assert_eq!(
        listed["securitySchemes"],
        json!([{"type": "oauth2", "scopes": ["repo"]}])
    );
    let r = s.resolve(
        "github_api",
        json!({"method": "GET", "owner": "microsoft", "repo": "regorus"}),
    );
    assert_eq!(r["tool"]["securitySchemes"], json!([{"type": "noauth"}]));
    assert_subset(
        &json!({"io.github/visibility": "public"}),
        &r["_meta"],
        "result _meta",
    );
    assert_subset(
        &json!({"io.github/visibility": "public"}),
        &r["tool"]["_meta"],
        "tool _meta",
    );
}

#[test]
fn shared_policy_library_serves_beside_a_catalog() {
    let mut s = Server::start(
        Era::Legacy,
        &[
            repo_path("policies/lib").to_str().unwrap(),
            repo_path("tests/cases/policy_library").to_str().unwrap(),
        ],
    );
    for (path, inside) in [
        ("notes.txt", true),
        ("a/b/../c.txt", true),
        ("./a/./b", true),
        ("a/../../etc/passwd", false),
        ("../x", false),
        ("/etc/passwd", false),
        ("", false),
        ("a/..", true),
    ] {
        let r = s.resolve("read_file", json!({"path": path}));
        assert_eq!(
            r["_meta"]["example.com/inside-root"],
            json!(inside),
            "path {path:?}: {r}"
        );
    }
}

#[test]
fn security_schemes_travel_only_under_their_own_extension() {
    for era in Era::ALL {
        for advertised in [
            vec![EXTENSION],
            vec![EXTENSION, DECISION],
            vec![EXTENSION, SECURITY],
            vec![EXTENSION, DECISION, SECURITY],
        ] {
            let (mut s, listed) = negotiating(era, "examples/github_api", &advertised);
            // A write to a public repository needs only `public_repo`.
            let r = s.resolve(
                "github_api",
                json!({"method": "POST", "owner": "microsoft", "repo": "regorus", "path": "issues"}),
            );
            draft_client::validate(&r, "github_api", &listed, &advertised)
                .unwrap_or_else(|e| panic!("{era:?} {advertised:?}: {e}: {r}"));
            let schemes = r.pointer(&format!("/_meta/{}", SECURITY.replace('/', "~1")));
            if advertised.contains(&SECURITY) {
                assert_eq!(
                    schemes,
                    Some(
                        &json!({"securitySchemes": [{"type": "oauth2", "scopes": ["public_repo"]}]})
                    ),
                    "{era:?}: {r}"
                );
            } else {
                assert_eq!(schemes, None, "{era:?}: {r}");
            }
            assert_eq!(
                r.get("_meta").is_some(),
                advertised.len() > 1,
                "{era:?} {advertised:?}: {r}"
            );
        }
    }
}

#[test]
fn policy_meta_travels_only_under_regent_s_own_extension() {
    for era in Era::ALL {
        for advertised in [vec![EXTENSION], vec![EXTENSION, DECISION]] {
            let (mut s, listed) = negotiating(era, "examples/github_api", &advertised);
            let r = s.resolve(
                "github_api",
                json!({"method": "GET", "owner": "microsoft", "repo": "regorus"}),
            );
            draft_client::validate(&r, "github_api", &listed, &advertised)
                .unwrap_or_else(|e| panic!("{era:?} {advertised:?}: {e}: {r}"));
            if advertised.contains(&DECISION) {
                assert_eq!(
                    r["_meta"][DECISION]["meta"]["io.github/visibility"],
                    json!("public"),
                    "{era:?}: {r}"
                );
            } else {
                assert!(r.get("_meta").is_none(), "{era:?}: {r}");
            }
        }
    }
}

#[test]
fn regent_resolve_prints_the_same_answer_for_a_negotiating_request() {
    let out = regent()
        .args(["resolve", "--config"])
        .arg(repo_path("examples/manage_files"))
        .args([
            "--extension",
            EXTENSION,
            "--extension",
            DECISION,
            "manage_files",
            r#"{"path":"a","action":"delete"}"#,
        ])
        .output()
        .expect("run regent resolve");
    assert!(out.status.success(), "{out:?}");
    let printed: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let mut s = serve(
        Era::Modern,
        "examples/manage_files",
        draft_client::capabilities(&[EXTENSION, DECISION]),
    );
    let served = s.resolve("manage_files", json!({"path": "a", "action": "delete"}));
    assert_eq!(printed, served);
    let listed = s.request("tools/list", json!({}))["result"]["tools"][0]["annotations"].clone();
    draft_client::validate(&printed, "manage_files", &listed, &[EXTENSION, DECISION])
        .unwrap_or_else(|e| panic!("{e}: {printed}"));
}
