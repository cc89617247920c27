//! The stdio caller: `serve --caller-file` (or `REGENT_CALLER_FILE`) names
//! who launched the server, and every request reaches the policy as that
//! `input.caller`, in resolve and call alike, with the decision log saying
//! who asked. A malformed file and `--http` are refused at start-up. Runs the
//! built binary on a catalog in a temp dir.

use crate::common;

use std::path::{Path, PathBuf};

use crate::jwt_support::TOOLS;
use common::{Era, Server, regent};
use serde_json::{Value, json};

/// Only alice may restart; every answer says who asked.
const POLICY: &str = r#"package tools.restart

import rego.v1

meta := {"asked_by": input.caller.subject}

deny contains "no caller" if not input.caller

deny contains sprintf("%s may not restart", [input.caller.subject]) if {
	input.caller
	input.caller.subject != "alice"
}
"#;

struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let cat = dir.path().join("catalog");
        std::fs::create_dir(&cat).unwrap();
        std::fs::write(cat.join("tools.yaml"), TOOLS).unwrap();
        std::fs::write(cat.join("restart.rego"), POLICY).unwrap();
        Setup { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn arg(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    fn caller_file(&self, name: &str, text: &str) -> String {
        std::fs::write(self.path(name), text).unwrap();
        self.arg(name)
    }
}

fn log_lines(path: &Path) -> Vec<Value> {
    common::decision_lines(&std::fs::read_to_string(path).unwrap())
}

#[test]
fn the_caller_file_is_every_requests_caller_in_resolve_call_and_the_log() {
    let s = Setup::new();
    let alice = s.caller_file(
        "alice.yaml",
        "subject: alice\nissuer: https://idp.example.com\nclaims: {groups: [oncall], secret_claim: x}\n",
    );
    let log = s.arg("decisions.jsonl");
    let mut server = Server::start(
        Era::Legacy,
        &[
            "--no-watch",
            "--caller-file",
            &alice,
            "--decision-log",
            &log,
            &s.arg("catalog"),
        ],
    );
    let r = server.resolve("restart", json!({"service": "web"}));
    assert_eq!(r["_meta"]["asked_by"], json!("alice"), "{r}");
    let call = server.request(
        "tools/call",
        json!({"name": "restart", "arguments": {"service": "web"}}),
    );
    assert_eq!(call["result"]["isError"], json!(false), "{call}");
    assert!(call.to_string().contains("restarted web"), "{call}");
    assert!(server.finish().success());

    let lines = log_lines(&s.path("decisions.jsonl"));
    assert_eq!(lines.len(), 2, "{lines:?}");
    for line in &lines {
        assert_eq!(
            line["caller"],
            json!({"subject": "alice", "issuer": "https://idp.example.com"}),
            "{line}"
        );
        assert_eq!(line["decision"], json!("allowed"), "{line}");
    }
    let text = std::fs::read_to_string(s.path("decisions.jsonl")).unwrap();
    assert!(
        !text.contains("secret_claim"),
        "claims stay out of the log: {text}"
    );
}

#[test]
fn the_environment_names_the_caller_file_too() {
    let s = Setup::new();
    let bob = s.caller_file("bob.json", r#"{"subject": "bob"}"#);
    let log = s.arg("decisions.jsonl");
    let mut cmd = regent();
    cmd.env("REGENT_CALLER_FILE", &bob).args([
        "serve",
        "--no-watch",
        "--decision-log",
        &log,
        &s.arg("catalog"),
    ]);
    let mut server = Server::spawn(Era::Legacy, cmd);
    let r = server.resolve("restart", json!({"service": "web"}));
    assert_eq!(r["_meta"]["asked_by"], json!("bob"), "{r}");
    let err = server.request(
        "tools/call",
        json!({"name": "restart", "arguments": {"service": "web"}}),
    );
    assert!(err.to_string().contains("bob may not restart"), "{err}");
    assert!(server.finish().success());
    let lines = log_lines(&s.path("decisions.jsonl"));
    assert!(!lines.is_empty());
    for line in &lines {
        assert_eq!(
            line["caller"],
            json!({"subject": "bob", "issuer": "local"}),
            "{line}"
        );
    }
}

#[test]
fn without_a_caller_file_input_caller_is_absent() {
    let s = Setup::new();
    let mut server = Server::start(Era::Legacy, &["--no-watch", &s.arg("catalog")]);
    let err = server.request(
        "tools/call",
        json!({"name": "restart", "arguments": {"service": "web"}}),
    );
    assert!(err.to_string().contains("no caller"), "{err}");
}

/// `serve` with `args` before the catalog and a caller file `name` holding
/// `text`, named by `--caller-file` after `args` or, `by_env`, by
/// `REGENT_CALLER_FILE`: refused with exit code 2; its standard error.
fn refused_at_start(name: &str, text: &str, by_env: bool, args: &[&str]) -> String {
    let s = Setup::new();
    let file = s.caller_file(name, text);
    let mut cmd = regent();
    cmd.arg("serve").args(args);
    if by_env {
        cmd.env("REGENT_CALLER_FILE", &file);
    } else {
        cmd.args(["--caller-file", &file]);
    }
    let out = cmd.arg(s.arg("catalog")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    String::from_utf8(out.stderr).unwrap()
}

/// One test per row: `name: caller file, its text, named by the
/// environment?, serve's arguments => what its standard error holds`.
macro_rules! refused_at_start {
    ($($name:ident: $file:expr, $text:expr, $by_env:expr, $args:expr => [$($holds:expr),+];)*) => {$(
        #[test]
        fn $name() {
            let err = refused_at_start($file, $text, $by_env, &$args);
            $(assert!(err.contains($holds), "{err}");)+
        }
    )*};
}

refused_at_start! {
    a_malformed_caller_file_is_refused_with_where_and_how_to_fix_it:
        "bad.yaml", "subject: alice\ngroups: [oncall]\n", false, ["--no-watch"] => [
            "bad.yaml:2:1: error: unknown field `groups`, expected one of `subject`, `issuer`, `claims`",
            "= help: "
        ];
    a_caller_file_is_refused_over_http:
        "alice.yaml", "subject: alice\n", false, ["--http", "127.0.0.1:0"] => [
            "error: --caller-file cannot be used with --http: over HTTP the caller comes only from a verified token"
        ];
    a_caller_file_from_the_environment_is_refused_over_http:
        "alice.yaml", "subject: alice\n", true, ["--http", "127.0.0.1:0"] => [
            "error: REGENT_CALLER_FILE cannot be used with --http"
        ];
}

/// Beside [`TOOLS`]: `restart` is for the ops group only (the `visible`
/// rule of [`VISIBLE_POLICY`]); `ping` has no policy and is listed for everyone.
const PING: &str = r#"  - name: ping
    inputSchema: {type: object}
    run: {cli: {program: echo, args: ["pong"], timeout: 5s}}
"#;

const VISIBLE_POLICY: &str = r#"package tools.restart

import rego.v1

visible if "ops" in input.caller.claims.groups

meta := {"asked_by": input.caller.subject}
"#;

/// The error of each method that names a tool, for `name`.
fn errors_for(server: &mut Server, name: &str) -> Vec<Value> {
    let args = json!({"service": "web"});
    [
        ("tools/resolve", json!({"name": name, "arguments": args})),
        (
            "tools/annotations",
            json!({"name": name, "arguments": args}),
        ),
        ("tools/call", json!({"name": name, "arguments": args})),
    ]
    .into_iter()
    .map(|(method, params)| server.expect_error(method, params))
    .collect()
}

#[test]
fn a_tool_the_caller_may_not_see_is_not_listed_and_answers_as_unknown() {
    let s = Setup::new();
    std::fs::write(s.path("catalog/tools.yaml"), format!("{TOOLS}{PING}")).unwrap();
    std::fs::write(s.path("catalog/restart.rego"), VISIBLE_POLICY).unwrap();
    let bob = s.caller_file("bob.yaml", "subject: bob\nclaims: {groups: [dev]}\n");
    let alice = s.caller_file("alice.yaml", "subject: alice\nclaims: {groups: [ops]}\n");
    for era in Era::ALL {
        for caller in [Some(&bob), None] {
            let mut args = vec!["--no-watch"];
            if let Some(file) = caller {
                args.extend(["--caller-file", file.as_str()]);
            }
            let catalog = s.arg("catalog");
            args.push(&catalog);
            let mut server = Server::start(era, &args);
            assert_eq!(server.tool_names(), ["ping"], "{era:?} {caller:?}");
            let hidden = errors_for(&mut server, "restart");
            let unknown = errors_for(&mut server, "restart2");
            for (h, u) in hidden.iter().zip(&unknown) {
                assert_eq!(h["code"], json!(-32602), "{h}");
                assert_eq!(h["code"], u["code"]);
                assert_eq!(h["message"], json!("unknown tool: restart"), "{h}");
                assert_eq!(
                    h["data"],
                    json!({"tool": "restart", "reason": "unknown-tool"}),
                    "{h}"
                );
                assert_eq!(u["data"]["reason"], h["data"]["reason"]);
            }
            assert!(server.finish().success());
        }

        let mut server = Server::start(
            era,
            &["--no-watch", "--caller-file", &alice, &s.arg("catalog")],
        );
        assert_eq!(server.tool_names(), ["restart", "ping"], "{era:?}");
        let r = server.resolve("restart", json!({"service": "web"}));
        assert_eq!(r["_meta"]["asked_by"], json!("alice"), "{r}");
        let call = server.request(
            "tools/call",
            json!({"name": "restart", "arguments": {"service": "web"}}),
        );
        assert!(call.to_string().contains("restarted web"), "{call}");
        assert!(server.finish().success());
    }
}

#[test]
fn without_a_visible_rule_every_caller_gets_the_same_listing() {
    let s = Setup::new();
    let bob = s.caller_file("bob.yaml", "subject: bob\nclaims: {groups: [dev]}\n");
    let mut anonymous = Server::start(Era::Legacy, &["--no-watch", &s.arg("catalog")]);
    let mut with_bob = Server::start(
        Era::Legacy,
        &["--no-watch", "--caller-file", &bob, &s.arg("catalog")],
    );
    let a = anonymous.request("tools/list", json!({}));
    let b = with_bob.request("tools/list", json!({}));
    assert_eq!(a["result"].to_string(), b["result"].to_string());
    assert_eq!(a["result"]["tools"][0]["name"], json!("restart"), "{a}");
}

/// The caller file is held against the catalog's caller schema as a
/// verified token is: one whose claims do not match gets no decision (every
/// method that names a tool refuses with `caller-claims-invalid`) and sees
/// no tool.
#[test]
fn a_caller_file_that_does_not_match_the_caller_schema_gets_no_decision() {
    let s = Setup::new();
    std::fs::write(
        s.path("catalog/tools.yaml"),
        format!(
            "{TOOLS}caller:\n  claims:\n    type: object\n    properties:\n      groups: {{type: array, items: {{enum: [oncall, dev]}}}}\n"
        ),
    )
    .unwrap();
    let string = s.caller_file("string.yaml", "subject: alice\nclaims: {groups: oncall}\n");
    let undeclared = s.caller_file(
        "undeclared.yaml",
        "subject: alice\nclaims: {groups: [root]}\n",
    );
    for era in Era::ALL {
        for (file, claim, keyword) in [
            (&string, "/groups", "type"),
            (&undeclared, "/groups/0", "enum"),
        ] {
            let mut server = Server::start(
                era,
                &["--no-watch", "--caller-file", file, &s.arg("catalog")],
            );
            assert!(server.tool_names().is_empty(), "{era:?} {file}");
            for e in errors_for(&mut server, "restart") {
                assert_eq!(e["code"], json!(-32602), "{e}");
                assert_eq!(e["data"]["reason"], json!("caller-claims-invalid"), "{e}");
                assert_eq!(e["data"]["claim"], json!(claim), "{e}");
                assert_eq!(e["data"]["keyword"], json!(keyword), "{e}");
            }
            assert!(server.finish().success());
        }
    }
}
