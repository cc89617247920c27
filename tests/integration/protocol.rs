//! The MCP surface of `regent serve` over stdio, asserted on the exact JSON it
//! writes, in both protocol eras.
//! What a decision carries beside its annotations (`securitySchemes`,
//! `_meta`, their extensions) is in `protocol_meta`.

use crate::common;

use common::draft_client::{self, DECISION, EXTENSION, SECURITY};
use common::{Era, Server, regent, repo_path};
use serde_json::{Value, json};

/// `regent serve` on the catalog at `rel` in the repository, for a client
/// with `caps`.
pub(crate) fn serve(era: Era, rel: &str, caps: Value) -> Server {
    Server::start_with(era, &[repo_path(rel).to_str().unwrap()], caps)
}

/// [`serve`] for a client advertising `advertised`, and the annotations
/// its first listed tool carries.
pub(crate) fn negotiating(era: Era, rel: &str, advertised: &[&str]) -> (Server, Value) {
    let mut s = serve(era, rel, draft_client::capabilities(advertised));
    let listed = s.request("tools/list", json!({}))["result"]["tools"][0]["annotations"].clone();
    (s, listed)
}

pub(crate) fn manage_files(era: Era) -> Server {
    serve(era, "examples/manage_files", json!({}))
}

#[test]
fn capabilities_advertise_resolution_in_every_published_form() {
    let mut s = serve(Era::Modern, "examples/manage_files", json!({}));
    let discover = s.request("server/discover", json!({}));
    let caps = &discover["result"]["capabilities"];
    assert_eq!(caps["tools"]["listChanged"], json!(true), "{discover}");
    assert_eq!(caps["tools"]["resolve"], json!(true), "{discover}");
    assert_eq!(
        caps["tools"]["dynamicAnnotations"],
        json!(true),
        "{discover}"
    );
    assert_eq!(
        caps["extensions"]["io.modelcontextprotocol/tool-resolution"],
        json!({}),
        "{discover}"
    );
    assert_eq!(caps["extensions"][DECISION], json!({}), "{discover}");
    assert_eq!(caps["extensions"][SECURITY], json!({}), "{discover}");

    // The legacy handshake carries the same capabilities.
    let mut legacy = serve(Era::Modern, "examples/manage_files", json!({}));
    legacy.era = Era::Legacy;
    let init = legacy.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    assert_eq!(init["result"]["protocolVersion"], json!("2025-11-25"));
    assert_eq!(init["result"]["capabilities"], *caps);
}

#[test]
fn tools_list_marks_resolvable_tools() {
    for era in Era::ALL {
        for negotiated in [false, true] {
            let caps = if negotiated {
                draft_client::capabilities(&[EXTENSION])
            } else {
                json!({})
            };
            let mut s = serve(era, "examples/manage_files", caps);
            let list = s.request("tools/list", json!({}));
            let tools = list["result"]["tools"].as_array().expect("tools array");
            assert_eq!(tools.len(), 1, "{list}");
            let t = &tools[0];
            assert_eq!(t["resolve"], json!(true), "{era:?}: {t}");
            assert_eq!(t["dynamicAnnotations"], json!(true), "{era:?}: {t}");
            // The draft's marker only when the request negotiated the extension.
            let marker = t.pointer("/_meta/io.modelcontextprotocol~1tool-resolution");
            if negotiated {
                assert_eq!(marker, Some(&json!({"resolvable": true})), "{era:?}: {t}");
            } else {
                assert_eq!(marker, None, "{era:?}: {t}");
            }
            // The listing states the worst case, all four hints present.
            assert_eq!(
                t["annotations"],
                json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": false})
            );
            assert!(
                t.pointer("/_meta/x-regent~1hoist").is_none(),
                "private key leaked: {t}"
            );
        }
    }
}

/// The SEP table's four rows: arguments and the hints they resolve to.
fn sep_table() -> Vec<(Value, Value)> {
    let hints = |ro, de, id| json!({"readOnlyHint": ro, "destructiveHint": de, "idempotentHint": id, "openWorldHint": false});
    vec![
        (
            json!({"path": "a", "action": "read"}),
            hints(true, false, true),
        ),
        (
            json!({"path": "a", "action": "append", "content": "x"}),
            hints(false, false, false),
        ),
        (
            json!({"path": "a", "action": "replace", "content": "x"}),
            hints(false, true, true),
        ),
        (
            json!({"path": "a", "action": "delete"}),
            hints(false, true, true),
        ),
    ]
}

#[test]
fn negotiated_resolve_answers_exactly_the_extension_draft() {
    for era in Era::ALL {
        for advertised in [vec![EXTENSION], vec![EXTENSION, DECISION]] {
            let (mut s, listed) = negotiating(era, "examples/manage_files", &advertised);
            for (args, hints) in sep_table() {
                let r = s.resolve("manage_files", args.clone());
                draft_client::validate(&r, "manage_files", &listed, &advertised)
                    .unwrap_or_else(|e| panic!("{era:?} {advertised:?} {args}: {e}: {r}"));
                assert_eq!(r["annotations"], hints, "{era:?} {args}: {r}");
                if advertised.contains(&DECISION) {
                    let d = &r["_meta"][DECISION];
                    assert_eq!(d["allowed"], json!(true), "{era:?} {args}: {r}");
                    assert_eq!(d["reasons"], json!([]), "{era:?} {args}: {r}");
                } else {
                    assert!(r.get("_meta").is_none(), "{era:?} {args}: {r}");
                }
            }
            // A denied call's reasons reach only a client that asked for them.
            let r = s.resolve(
                "manage_files",
                json!({"path": "../../etc/passwd", "action": "read"}),
            );
            draft_client::validate(&r, "manage_files", &listed, &advertised)
                .unwrap_or_else(|e| panic!("{era:?} {advertised:?}: {e}: {r}"));
            if advertised.contains(&DECISION) {
                assert_eq!(r["_meta"][DECISION]["allowed"], json!(false), "{r}");
                assert!(
                    !r["_meta"][DECISION]["reasons"]
                        .as_array()
                        .unwrap()
                        .is_empty(),
                    "{r}"
                );
            }
        }
    }
}

#[test]
fn without_negotiation_resolve_keeps_the_sep_1862_shape() {
    for era in Era::ALL {
        // Nothing advertised, and the extension with settings: unsupported.
        for caps in [
            json!({}),
            json!({"extensions": {EXTENSION: {"version": 2}}}),
        ] {
            let mut s = serve(era, "examples/manage_files", caps.clone());
            for (args, hints) in sep_table() {
                let r = s.resolve("manage_files", args.clone());
                assert_eq!(
                    r["tool"]["name"],
                    json!("manage_files"),
                    "{era:?} {caps}: {r}"
                );
                assert_eq!(r["tool"]["annotations"], hints, "{era:?} {caps}: {r}");
                assert_eq!(r["_meta"]["regent/decision"]["allowed"], json!(true), "{r}");
                // Which a draft client would throw away: the validator bites.
                assert!(
                    draft_client::validate(&r, "manage_files", &json!({}), &[]).is_err(),
                    "{r}"
                );
            }
            // Arguments may be left out, as before: they default to `{}`
            // (which this tool's schema then refuses).
            let e = s.expect_error("tools/resolve", json!({"name": "manage_files"}));
            assert!(
                !e["message"]
                    .as_str()
                    .unwrap()
                    .contains("arguments is required"),
                "{era:?}: {e}"
            );
        }
    }
}

#[test]
fn a_2026_request_is_judged_by_its_own_meta() {
    let mut s = manage_files(Era::Modern);
    let args = json!({"path": "a", "action": "read"});
    s.capabilities = draft_client::capabilities(&[EXTENSION]);
    let r = s.resolve("manage_files", args.clone());
    assert!(r.get("tool").is_none(), "{r}");
    let list = s.request("tools/list", json!({}));
    assert!(
        list.pointer("/result/tools/0/_meta/io.modelcontextprotocol~1tool-resolution")
            .is_some(),
        "{list}"
    );
    // The next request advertises nothing: nothing carries over.
    s.capabilities = json!({});
    let r = s.resolve("manage_files", args.clone());
    assert!(r.get("tool").is_some(), "{r}");
    let list = s.request("tools/list", json!({}));
    assert!(
        list.pointer("/result/tools/0/_meta/io.modelcontextprotocol~1tool-resolution")
            .is_none(),
        "{list}"
    );
}

#[test]
fn negotiated_resolve_requires_arguments() {
    for era in Era::ALL {
        let mut s = serve(
            era,
            "examples/manage_files",
            draft_client::capabilities(&[EXTENSION]),
        );
        for params in [
            json!({"name": "manage_files"}),
            json!({"name": "manage_files", "arguments": null}),
        ] {
            let e = s.expect_error("tools/resolve", params.clone());
            assert_eq!(e["code"], json!(-32602), "{era:?} {params}: {e}");
            assert!(
                e["message"]
                    .as_str()
                    .unwrap()
                    .contains("arguments is required"),
                "{era:?} {params}: {e}"
            );
        }
    }
}

#[test]
fn result_type_only_where_the_protocol_has_it() {
    for era in Era::ALL {
        let mut s = manage_files(era);
        let args = json!({"name": "manage_files", "arguments": {"path": "a", "action": "read"}});
        let resolve = s.request("tools/resolve", args.clone());
        let ann = s.request("tools/annotations", args);
        let want = match era {
            Era::Legacy => None,
            Era::Modern => Some(&json!("complete")),
        };
        assert_eq!(
            resolve["result"].get("resultType"),
            want,
            "{era:?}: {resolve}"
        );
        assert_eq!(ann["result"].get("resultType"), want, "{era:?}: {ann}");
    }
}

#[test]
fn resolve_returns_the_complete_tool_with_only_metadata_changed() {
    let mut s = manage_files(Era::Legacy);
    let listed = s.request("tools/list", json!({}))["result"]["tools"][0].clone();
    let r = s.resolve("manage_files", json!({"path": "a", "action": "read"}));
    assert_eq!(r["name"], json!("manage_files"));
    assert_eq!(r["annotations"], r["tool"]["annotations"]);
    for field in [
        "name",
        "title",
        "description",
        "inputSchema",
        "resolve",
        "dynamicAnnotations",
    ] {
        assert_eq!(
            r["tool"][field], listed[field],
            "field {field} changed on resolution"
        );
    }
    assert_ne!(r["tool"]["annotations"], listed["annotations"]);
    // SEP-1862's tool carries the marker whether or not the listing did.
    assert_eq!(
        r["tool"]["_meta"],
        json!({"io.modelcontextprotocol/tool-resolution": {"resolvable": true}})
    );
}

#[test]
fn tools_annotations_answers_the_older_draft_shape() {
    let mut s = manage_files(Era::Legacy);
    let r = s.request(
        "tools/annotations",
        json!({"name": "manage_files", "arguments": {"path": "a", "action": "append"}}),
    );
    assert_eq!(
        r["result"],
        json!({"annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false}})
    );
}

#[test]
fn errors_follow_sep_1862() {
    for era in Era::ALL {
        let mut s = manage_files(era);
        let e = s.expect_error("tools/resolve", json!({"name": "nope", "arguments": {}}));
        assert_eq!(e["code"], json!(-32602), "{e}");
        assert_eq!(e["data"]["tool"], json!("nope"));

        let e = s.expect_error(
            "tools/resolve",
            json!({"name": "manage_files", "arguments": {"path": 7, "action": "read"}}),
        );
        assert_eq!(e["code"], json!(-32602), "{e}");
        assert_eq!(e["data"]["reason"], json!("invalid-arguments"));
        assert_eq!(
            e["data"]["errors"][0]["instancePath"],
            json!("/path"),
            "{e}"
        );

        let e = s.expect_error(
            "tools/resolve",
            json!({"name": "manage_files", "arguments": [1, 2]}),
        );
        assert_eq!(e["code"], json!(-32602), "{e}");
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("arguments must be an object"),
            "{e}"
        );

        let e = s.expect_error("tools/resolve", json!({"arguments": {}}));
        assert_eq!(e["code"], json!(-32602), "{e}");

        let e = s.expect_error(
            "tools/annotations",
            json!({"name": "nope", "arguments": {}}),
        );
        assert_eq!(e["code"], json!(-32602), "{e}");
    }
}

#[test]
fn unknown_request_fields_are_ignored_for_forward_compatibility() {
    let mut s = manage_files(Era::Legacy);
    let r = s.request(
        "tools/resolve",
        json!({"name": "manage_files", "arguments": {"path": "a", "action": "read"}, "future": {"x": 1}}),
    );
    assert_eq!(
        r["result"]["annotations"]["readOnlyHint"],
        json!(true),
        "{r}"
    );
}

#[test]
fn policy_failures_are_internal_errors() {
    for era in Era::ALL {
        // Both catalogs are refused by `check`, and so by `serve`, on
        // purpose: how each such call fails closed is what is tested.
        let mut s = Server::start(
            era,
            &[
                "--skip-load-check",
                repo_path("tests/cases/riskier_policy").to_str().unwrap(),
            ],
        );
        let e = s.expect_error(
            "tools/resolve",
            json!({"name": "cleanup", "arguments": {"mode": "purge"}}),
        );
        assert_eq!(e["code"], json!(-32603), "{e}");
        assert_eq!(e["data"]["hint"], json!("destructiveHint"));
        assert_eq!(e["data"]["reason"], json!("riskier-than-listed"));

        let mut s = Server::start(
            era,
            &[
                "--skip-load-check",
                repo_path("tests/cases/runaway_policy").to_str().unwrap(),
            ],
        );
        let e = s.expect_error(
            "tools/resolve",
            json!({"name": "spin", "arguments": {"n": 100000}}),
        );
        assert_eq!(e["code"], json!(-32603), "{e}");
        assert_eq!(e["data"]["reason"], json!("policy-timeout"), "{e}");
        // stderr is read by another thread than the response: wait for it.
        let log = s.stderr_until(|log| log.contains("tool=spin") && log.contains("time limit"));
        assert!(
            log.contains("tool=spin") && log.contains("time limit"),
            "stderr:\n{log}"
        );
    }
}

#[test]
fn malformed_lines_get_parse_errors_and_the_server_keeps_serving() {
    for era in Era::ALL {
        let mut s = manage_files(era);
        s.send_line("{this is not json");
        let deadline = std::time::Instant::now() + common::WAIT;
        let e = s.next_message(deadline);
        assert_eq!(e["error"]["code"], json!(-32700), "{e}");
        assert_eq!(e["id"], Value::Null);

        s.send_line(r#"{"jsonrpc":"2.0","id":"x","result-ish":true}"#);
        let e = s.next_message(deadline);
        assert_eq!(e["error"]["code"], json!(-32600), "{e}");

        let r = s.resolve("manage_files", json!({"path": "a", "action": "read"}));
        assert_eq!(r["annotations"]["readOnlyHint"], json!(true));
    }
}

#[test]
fn huge_and_deeply_nested_arguments() {
    let mut s = serve(Era::Legacy, "tests/cases/yaml_and_policy", json!({}));
    // A megabyte of argument is validated and evaluated like any other.
    let big = "x".repeat(1 << 20);
    let r = s.resolve("deploy", json!({"env": "dev", "service": big}));
    assert_eq!(r["annotations"]["destructiveHint"], json!(false));

    // Nesting within serde's limit is accepted (the schema allows any extra property).
    let mut nested = json!("leaf");
    for _ in 0..100 {
        nested = json!({"n": nested});
    }
    let r = s.resolve(
        "deploy",
        json!({"env": "prod", "service": "web", "extra": nested}),
    );
    assert_eq!(r["annotations"]["destructiveHint"], json!(true));

    // Nesting beyond it cannot be parsed: a parse error, and the server lives on.
    let deep = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"tools/resolve\",\"params\":{{\"name\":\"deploy\",\"arguments\":{}{}}}}}",
        "[".repeat(5000),
        "]".repeat(5000)
    );
    s.send_line(&deep);
    let e = s.next_message(std::time::Instant::now() + common::WAIT);
    assert_eq!(e["error"]["code"], json!(-32700), "{e}");
    let r = s.resolve("deploy", json!({"env": "dev", "service": "web"}));
    assert_eq!(r["annotations"]["destructiveHint"], json!(false));
}

#[test]
fn resolution_is_deterministic() {
    let mut s = serve(Era::Modern, "examples/github_api", json!({}));
    let args = json!({"method": "GET", "owner": "acme", "repo": "payroll"});
    let first = s.resolve("github_api", args.clone());
    for _ in 0..20 {
        assert_eq!(s.resolve("github_api", args.clone()), first);
    }
}

#[test]
fn tools_call_uses_the_same_validation_as_resolve() {
    for era in Era::ALL {
        let mut s = manage_files(era);
        for params in [
            json!({"name": "nope", "arguments": {}}),
            json!({"name": "manage_files", "arguments": {"action": "read"}}),
            // A standard method with params rmcp cannot type is invalid params, not "method not found".
            json!({"arguments": {}}),
        ] {
            let e = s.expect_error("tools/call", params);
            assert_eq!(e["code"], json!(-32602), "{e}");
        }
    }
}

/// `serve` on a fresh directory holding `files`, or on `missing` in it when
/// there are none: it exits with `code`, its standard error says each of
/// `says`, and nothing reaches its standard output.
fn refused_at_start(files: &[(&str, &str)], code: i32, says: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let catalog = match files {
        [] => dir.path().join("missing"),
        _ => dir.path().to_path_buf(),
    };
    let out = regent().arg("serve").arg(catalog).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "stderr:\n{stderr}");
    for said in says {
        assert!(stderr.contains(said), "stderr:\n{stderr}");
    }
    let stdout = &out.stdout;
    assert!(stdout.is_empty(), "nothing may reach stdout: {stdout:?}");
}

/// One test per row: `name: files, exit code, what standard error says`.
macro_rules! refused_at_start {
    ($($name:ident: $files:expr, $code:expr, $says:expr;)*) => {$(
        #[test]
        fn $name() {
            refused_at_start(&$files, $code, &$says);
        }
    )*};
}

refused_at_start! {
    a_bad_catalog_stops_start_up_with_a_location: [(
        "tools.yaml",
        "tools:\n  - name: t\n    inputSchema: {type: object}\n    anotations: {readOnlyHint: true}\n",
    )], 1, [
        "tools.yaml:4:5: error: tools[0]: unknown field `anotations`",
        "did you mean `annotations`?",
    ];
    // A rego error names the file.
    a_bad_policy_stops_start_up_naming_its_file: [
        ("tools.yaml", "tools:\n  - name: t\n    inputSchema: {type: object}\n    policy: tools.t\n"),
        ("t.rego", "package tools.t\n\nannotations := {\"readOnlyHint\": true} if {\n"),
    ], 1, ["t.rego:"];
    a_missing_catalog_stops_start_up: [], 2, ["missing: no such file or directory"];
}

#[test]
fn unknown_methods_are_method_not_found() {
    let mut s = manage_files(Era::Legacy);
    let e = s.expect_error("tools/frobnicate", json!({}));
    assert_eq!(e["code"], json!(-32601), "{e}");
}

/// A client that writes all its requests and closes its end at once
/// (`regent serve < requests`) gets every answer: the end of input waits for
/// the answers still being computed (it lost 2,819 of 3,001 before).
#[test]
fn every_request_read_before_the_end_of_input_is_answered() {
    const N: usize = 2000;
    let tmp = tempfile::tempdir().unwrap();
    let requests = tmp.path().join("requests.jsonl");
    let mut text = String::new();
    text.push_str(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "regent-tests", "version": "1"}}})
        .to_string(),
    );
    text.push('\n');
    text.push_str(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
    text.push('\n');
    let actions = ["read", "append", "replace", "delete"];
    for i in 1..=N {
        let mut args = json!({"path": format!("dir{i}/f.txt"), "action": actions[i % 4]});
        if i % 4 == 1 || i % 4 == 2 {
            args["content"] = json!("x");
        }
        text.push_str(
            &json!({"jsonrpc": "2.0", "id": i, "method": "tools/resolve",
                    "params": {"name": "manage_files", "arguments": args}})
            .to_string(),
        );
        text.push('\n');
    }
    std::fs::write(&requests, text).unwrap();
    let out = regent()
        .arg("serve")
        .arg(repo_path("examples/manage_files"))
        .args(["--decision-log", "/dev/null"])
        .stdin(std::fs::File::open(&requests).unwrap())
        .output()
        .unwrap();
    assert!(out.status.success(), "exit {:?}", out.status);
    let mut ids: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .inspect(|m| assert!(m.get("result").is_some(), "an error answer: {m}"))
        .map(|m| m["id"].as_u64().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..=N as u64).collect::<Vec<_>>());
}

/// Over stdio, a resolve of an established 2025-era session is answered as
/// its line is read (`protocol::direct`); one that brings `_meta` goes
/// through rmcp's dispatch. The two must answer alike, errors included, and
/// the direct path must really have answered the plain ones.
#[test]
fn direct_answers_equal_rmcp_s() {
    let mut cmd = regent();
    cmd.env("RUST_LOG", "regent=info,regent::protocol::direct=trace")
        .arg("serve")
        .arg(repo_path("examples/manage_files"));
    let mut s = Server::spawn_with(
        Era::Legacy,
        cmd,
        draft_client::capabilities(&[EXTENSION, DECISION]),
    );
    // A round trip after `notifications/initialized`: the handshake is over.
    s.request("ping", json!({}));
    let mut cases: Vec<Value> = sep_table()
        .into_iter()
        .map(|(args, _)| json!({"name": "manage_files", "arguments": args}))
        .collect();
    cases.extend([
        json!({"name": "manage_files", "arguments": {"path": "../../etc/passwd", "action": "read"}}),
        json!({"name": "manage_files", "arguments": {"path": "a", "action": "delete"}}),
        json!({"name": "manage_files", "arguments": {"path": 7, "action": "read"}}),
        json!({"name": "manage_files", "arguments": [1, 2]}),
        json!({"name": "manage_files"}),
        json!({"name": "nope", "arguments": {}}),
        json!({"arguments": {}}),
    ]);
    let mut plain = Vec::new();
    for method in ["tools/resolve", "tools/annotations"] {
        for params in &cases {
            let direct = s.request(method, params.clone());
            plain.push(direct["id"].as_i64().unwrap());
            let mut with_meta = params.clone();
            with_meta["_meta"] = json!({});
            let through_rmcp = s.request(method, with_meta);
            let strip = |mut v: Value| {
                v.as_object_mut().unwrap().remove("id");
                v
            };
            assert_eq!(
                strip(direct.clone()),
                strip(through_rmcp.clone()),
                "{method} {params}"
            );
            assert!(
                direct.get("result").is_some() || direct.get("error").is_some(),
                "{direct}"
            );
        }
    }
    let said = "answered without rmcp";
    let log = s.stderr_until(|l| l.matches(said).count() >= plain.len());
    let answered: Vec<i64> = log
        .lines()
        .filter(|l| l.contains(said))
        .map(|l| {
            let id = l.split("id=").nth(1).expect("an id field");
            id.split(|c: char| !c.is_ascii_digit())
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(
        answered, plain,
        "every plain request, and none with _meta, is answered directly:\n{log}"
    );
}

/// A slow policy evaluation holds up nothing else of the session (issue 28):
/// a ping sent right after a resolve that runs into the time limit is
/// answered first, on the direct path (2025-11-25) and through rmcp
/// (2026-07-28); for a tool never seen, and for one that turned slow after
/// its evaluations had been fast enough to run in place (`protocol::pace`).
/// The other evaluations (resolvers, `visible`, upstream requests, a
/// decision made again after a reload) are in `tests/integration/pace.rs`.
#[test]
fn a_slow_evaluation_holds_up_nothing_else() {
    use crate::pace::answered_first;
    let catalog = repo_path("tests/cases/runaway_policy");
    let slow = json!({"name": "spin", "arguments": {"n": 100000}});
    let fast = json!({"name": "spin", "arguments": {"n": 2}});
    for era in Era::ALL {
        let mut s = Server::start(era, &["--skip-load-check", catalog.to_str().unwrap()]);
        s.request("ping", json!({}));
        let id = s.send_request("tools/resolve", slow.clone());
        let ping = s.send_request("ping", json!({}));
        answered_first(&mut s, id, ping);

        for _ in 0..2 * 8 {
            let r = s.request("tools/resolve", fast.clone());
            assert!(r.get("result").is_some(), "{r}");
        }
        // In place (a tool that had earned it turns slow: one evaluation
        // that long moves it, `pace::SURELY_SLOW`)...
        let e = s.expect_error("tools/resolve", slow.clone());
        assert_eq!(e["data"]["reason"], json!("policy-timeout"), "{e}");
        // ...and from then on off the session's thread.
        let id = s.send_request("tools/resolve", slow.clone());
        let ping = s.send_request("ping", json!({}));
        answered_first(&mut s, id, ping);
    }

    // A call's own decision too: the same policy on a tool that runs
    // something (`true`), its decision running into the time limit.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(catalog.join("spin.rego"), tmp.path().join("spin.rego")).unwrap();
    std::fs::write(
        tmp.path().join("tools.yaml"),
        "tools:\n  - name: spin\n    description: runs nothing of note\n    inputSchema:\n      type: object\n      properties:\n        n: {type: integer}\n    policy: tools.spin\n    run:\n      cli:\n        program: \"true\"\n",
    )
    .unwrap();
    for era in Era::ALL {
        let mut s = Server::start(era, &["--skip-load-check", tmp.path().to_str().unwrap()]);
        s.request("ping", json!({}));
        let id = s.send_request("tools/call", slow.clone());
        let ping = s.send_request("ping", json!({}));
        answered_first(&mut s, id, ping);
    }
}
