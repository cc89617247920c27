//! Hot reload, end to end: a real `regent serve` process, real files in a
//! temporary directory changed the ways editors, people and Kubernetes
//! change them, and a client resolving in a loop throughout. Every answer
//! must be the old one or the new one, never an error and never a mixture,
//! and the new one must arrive (within a generous bound: these are not
//! speed tests; see benches/reload.rs for timings).
//! The directory layouts replaced whole (ConfigMaps, release symlinks) and
//! fast rewrites in place are in `reload_layouts`.

use crate::common::{self, Server};
use crate::reload_support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use reload_support::{PATIENCE, eventually, legacy, modern};
use serde_json::{Value, json};

const LIST_CHANGED: &str = "notifications/tools/list_changed";

pub(crate) fn tool_yaml(rule_meta: &str) -> String {
    format!(
        r#"tools:
  - name: deploy
    description: Deploy a service
    inputSchema:
      type: object
      properties:
        env: {{type: string, enum: [dev, prod]}}
      required: [env]
    annotations:
      readOnlyHint: false
      destructiveHint: true
      idempotentHint: false
      openWorldHint: true
    resolve:
      - when: {{env: dev}}
        meta: {{yaml: "{rule_meta}"}}
    policy: tools.deploy
"#
    )
}

pub(crate) fn policy(answer: &str) -> String {
    format!("package tools.deploy\n\nimport rego.v1\n\nmeta := {{\"answer\": \"{answer}\"}}\n")
}

pub(crate) fn extra_tool(name: &str) -> String {
    format!(
        "tools:\n  - name: {name}\n    description: Another tool\n    inputSchema:\n      type: object\n      properties: {{}}\n    annotations:\n      readOnlyHint: true\n"
    )
}

/// A catalog directory with `deploy.yaml` and `deploy.rego` answering `v1`.
pub(crate) fn catalog() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("catalog");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("deploy.yaml"), tool_yaml("1")).unwrap();
    std::fs::write(dir.join("deploy.rego"), policy("v1")).unwrap();
    (tmp, dir)
}

fn arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The policy's answer in a `tools/resolve` response, or the whole response
/// when it is not a successful resolution.
pub(crate) fn answer(resp: &Value) -> Result<String, String> {
    let result = resp.get("result").ok_or_else(|| resp.to_string())?;
    let meta = &result["_meta"];
    match (meta["yaml"].as_str(), meta["answer"].as_str()) {
        (Some(y), Some(a)) => Ok(format!("yaml {y}, policy {a}")),
        _ => Err(resp.to_string()),
    }
}

pub(crate) fn both(yaml: &str, policy: &str) -> String {
    format!("yaml {yaml}, policy {policy}")
}

/// Resolves `deploy` in a loop while `change` happens: every answer must be
/// `old` or `new`, `new` must come (within [`PATIENCE`]), and once it has
/// come it must stay. Returns how many resolutions the loop made.
pub(crate) fn resolve_across(
    server: &mut Server,
    old: &str,
    new: &str,
    change: impl FnOnce(),
) -> usize {
    let args = json!({"env": "dev"});
    let first = answer(&server.resolve_response("deploy", args.clone()));
    assert_eq!(
        first.as_deref(),
        Ok(old),
        "before the change\nstderr:\n{}",
        server.stderr()
    );
    change();
    let deadline = Instant::now() + PATIENCE;
    let mut seen: Vec<String> = Vec::new();
    let mut new_since: Option<usize> = None;
    loop {
        let got = answer(&server.resolve_response("deploy", args.clone()));
        let ok = match &got {
            Ok(a) if a == new => true,
            Ok(a) if a == old && new_since.is_none() => false,
            other => panic!(
                "answer {} was {other:?}; expected {old:?} or {new:?} (and never back to {old:?} once {new:?} was seen)\n\
                 earlier answers: {seen:?}\nstderr:\n{}",
                seen.len() + 1,
                server.stderr()
            ),
        };
        seen.push(got.unwrap());
        if ok && new_since.is_none() {
            new_since = Some(seen.len());
        }
        // Keep resolving a little after the switch: the new answer must stay.
        if new_since.is_some_and(|n| seen.len() >= n + 25) {
            return seen.len();
        }
        if new_since.is_none() && Instant::now() > deadline {
            panic!(
                "still {old:?} after {PATIENCE:?} ({} answers)\nstderr:\n{}",
                seen.len(),
                server.stderr()
            );
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Saves the way many editors do: write a temporary file beside the target,
/// then rename it over the original (a new inode at the old name).
fn atomic_save(path: &Path, text: &str) {
    let tmp = path.with_file_name(format!(
        ".{}.tmp{}",
        path.file_name().unwrap().to_string_lossy(),
        std::process::id()
    ));
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

pub(crate) fn read_status_file(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("status file is not json ({e}): {text}")),
    )
}

#[test]
fn policy_edited_in_place() {
    let (_tmp, dir) = catalog();
    let mut s = legacy(&dir, &["."]);
    resolve_across(&mut s, &both("1", "v1"), &both("1", "v2"), || {
        std::fs::write(dir.join("deploy.rego"), policy("v2")).unwrap();
    });
}

#[test]
fn policy_saved_by_rename() {
    let (_tmp, dir) = catalog();
    let mut s = legacy(&dir, &[arg(&dir)]);
    resolve_across(&mut s, &both("1", "v1"), &both("1", "v2"), || {
        atomic_save(&dir.join("deploy.rego"), &policy("v2"))
    });
    // The renamed-over file is still watched: a second save is seen too.
    resolve_across(&mut s, &both("1", "v2"), &both("1", "v3"), || {
        atomic_save(&dir.join("deploy.rego"), &policy("v3"))
    });
}

#[test]
fn policy_saved_like_vim() {
    // vim's default save: probe file `4913`, swap file, original renamed to
    // a backup `~`, new file written, backup removed. For a moment the policy
    // does not exist; none of the droppings may reach the catalog.
    let (_tmp, dir) = catalog();
    let mut s = legacy(&dir, &[arg(&dir)]);
    resolve_across(&mut s, &both("1", "v1"), &both("1", "v2"), || {
        let file = dir.join("deploy.rego");
        std::fs::write(dir.join(".deploy.rego.swp"), "swap").unwrap();
        std::fs::write(dir.join("4913"), "").unwrap();
        std::fs::remove_file(dir.join("4913")).unwrap();
        std::fs::rename(&file, dir.join("deploy.rego~")).unwrap();
        std::fs::write(&file, policy("v2")).unwrap();
        std::fs::remove_file(dir.join("deploy.rego~")).unwrap();
        std::fs::remove_file(dir.join(".deploy.rego.swp")).unwrap();
    });
}

#[test]
fn policy_deleted_then_recreated() {
    let (_tmp, dir) = catalog();
    let status = dir.parent().unwrap().join("status.json");
    let mut s = legacy(&dir, &[arg(&dir), "--status-file", arg(&status)]);
    resolve_across(&mut s, &both("1", "v1"), &both("1", "v2"), || {
        std::fs::remove_file(dir.join("deploy.rego")).unwrap();
        // Long enough for a reload to see the policy missing: that reload
        // fails (the tool names a package nothing defines) and the old
        // catalog keeps answering.
        eventually("a failed reload while the policy is missing", || {
            read_status_file(&status).filter(|v| {
                v["lastError"]
                    .as_str()
                    .is_some_and(|e| e.contains("tools.deploy"))
            })
        });
        std::fs::write(dir.join("deploy.rego"), policy("v2")).unwrap();
    });
    let st = eventually("a successful reload", || {
        read_status_file(&status).filter(|v| v["ok"] == true)
    });
    assert!(st["lastError"].is_null(), "{st}");
}

#[test]
fn new_tool_file_in_a_new_directory_is_listed_and_announced() {
    let (_tmp, dir) = catalog();
    let mut s = legacy(&dir, &[arg(&dir)]);
    assert_eq!(s.tool_names(), ["deploy"]);
    let sub = dir.join("more");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("extra.yaml"), extra_tool("extra")).unwrap();
    let n = s.wait_notification(LIST_CHANGED, 0);
    assert!(
        n.get("params").is_none_or(|p| p.get("_meta").is_none()),
        "legacy notifications are unscoped: {n}"
    );
    assert_eq!(s.tool_names(), ["deploy", "extra"]);
    let r = s.resolve_response("extra", json!({}));
    assert!(
        r.get("error")
            .is_some_and(|e| e["data"]["reason"] == "not-resolvable"),
        "the new tool is served: {r}"
    );
    // And deploy kept answering throughout.
    assert_eq!(
        answer(&s.resolve_response("deploy", json!({"env": "dev"}))),
        Ok(both("1", "v1"))
    );
}

#[test]
fn removed_tool_file_is_unlisted_and_announced() {
    let (_tmp, dir) = catalog();
    std::fs::write(dir.join("extra.yaml"), extra_tool("extra")).unwrap();
    let mut s = legacy(&dir, &[arg(&dir)]);
    assert_eq!(s.tool_names(), ["deploy", "extra"]);
    std::fs::remove_file(dir.join("extra.yaml")).unwrap();
    s.wait_notification(LIST_CHANGED, 0);
    assert_eq!(s.tool_names(), ["deploy"]);
    let r = s.resolve_response("extra", json!({}));
    assert_eq!(
        r["error"]["code"], -32602,
        "an unlisted tool is unknown: {r}"
    );
}

#[test]
fn policy_change_does_not_announce_but_a_tool_change_does() {
    let (_tmp, dir) = catalog();
    let mut s = legacy(&dir, &[arg(&dir)]);
    resolve_across(&mut s, &both("1", "v1"), &both("1", "v2"), || {
        std::fs::write(dir.join("deploy.rego"), policy("v2")).unwrap();
    });
    // The swap and the listing bookkeeping happen under one lock, so once the
    // new answer is visible the status says whether it was announced.
    let st = s.status();
    assert_eq!(st["reloads"]["succeeded"], 2, "{st}");
    assert_eq!(
        st["listingChanges"], 0,
        "a policy-only change must not announce: {st}"
    );
    // A change to what tools/list shows (a description) is announced.
    std::fs::write(
        dir.join("deploy.yaml"),
        tool_yaml("1").replace("Deploy a service", "Deploy one service"),
    )
    .unwrap();
    s.wait_notification(LIST_CHANGED, 0);
    let st = s.status();
    assert_eq!(st["listingChanges"], 1, "{st}");
    assert_eq!(
        s.count_notifications(LIST_CHANGED),
        1,
        "{:?}",
        s.notifications
    );
}

#[test]
fn modern_clients_hear_on_their_listen_stream_only() {
    let (_tmp, dir) = catalog();
    let mut s = modern(&dir, &[arg(&dir)]);
    let listen = s.send_request(
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let ack = s.wait_notification("notifications/subscriptions/acknowledged", 0);
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], listen,
        "{ack}"
    );
    assert_eq!(
        ack["params"]["notifications"]["toolsListChanged"], true,
        "{ack}"
    );

    std::fs::write(dir.join("extra.yaml"), extra_tool("extra")).unwrap();
    let n = s.wait_notification(LIST_CHANGED, 0);
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], listen,
        "scoped to the stream: {n}"
    );
    assert_eq!(s.tool_names(), ["deploy", "extra"]);

    std::fs::remove_file(dir.join("extra.yaml")).unwrap();
    s.wait_notification(LIST_CHANGED, 1);
    assert_eq!(s.tool_names(), ["deploy"]);
    // Every list_changed this session got was scoped: no unscoped copies.
    for n in s
        .notifications
        .iter()
        .filter(|n| n["method"] == LIST_CHANGED)
    {
        assert_eq!(
            n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], listen,
            "{n}"
        );
    }
}

#[test]
fn single_files_stay_watched_across_rename_saves() {
    let (_tmp, dir) = catalog();
    let yaml = dir.join("deploy.yaml");
    let rego = dir.join("deploy.rego");
    // An unrelated file beside them must not be read or matter.
    std::fs::write(dir.join("other.yaml"), "this: [is not a tool file").unwrap();
    let mut s = legacy(&dir, &[arg(&yaml), arg(&rego)]);
    resolve_across(&mut s, &both("1", "v1"), &both("1", "v2"), || {
        atomic_save(&rego, &policy("v2"))
    });
    resolve_across(&mut s, &both("1", "v2"), &both("1", "v3"), || {
        atomic_save(&rego, &policy("v3"))
    });
    resolve_across(&mut s, &both("1", "v3"), &both("2", "v3"), || {
        atomic_save(&yaml, &tool_yaml("2"))
    });
    assert_eq!(s.status()["reloads"]["failed"], 0);
}

#[test]
fn sighup_reloads_when_not_watching() {
    let (_tmp, dir) = catalog();
    let mut s = legacy(&dir, &["--no-watch", arg(&dir)]);
    assert_eq!(s.status()["watching"], false);
    std::fs::write(dir.join("deploy.rego"), policy("v2")).unwrap();
    let pid = s.pid();
    resolve_across(&mut s, &both("1", "v1"), &both("1", "v2"), || {
        let ok = std::process::Command::new("kill")
            .args(["-HUP", &pid.to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
    });
    assert!(s.stderr().contains("SIGHUP received"), "{}", s.stderr());
}

/// Writes a broken file, checks that the old catalog keeps answering and
/// that the error names `file:line`, then fixes it and sees the new answer.
fn broken_then_fixed(file: &str, broken: &str, expect_at: &str, fixed: String, new: &str) {
    let (_tmp, dir) = catalog();
    let status = dir.parent().unwrap().join("status.json");
    let mut s = legacy(&dir, &[arg(&dir), "--status-file", arg(&status)]);
    let first = read_status_file(&status).expect("status file written at start-up");
    assert_eq!(first["ok"], true, "{first}");
    let revision = first["revision"].clone();

    std::fs::write(dir.join(file), broken).unwrap();
    let st = eventually("the failed reload in the status file", || {
        read_status_file(&status).filter(|v| v["ok"] == false)
    });
    let err = st["lastError"].as_str().unwrap();
    assert!(
        err.contains(expect_at),
        "status error should name {expect_at}: {err}"
    );
    assert_eq!(
        st["revision"], revision,
        "the previous revision keeps serving: {st}"
    );
    let stderr = eventually("the error on stderr", || {
        Some(s.stderr()).filter(|e| e.contains("reload failed"))
    });
    assert!(
        stderr.contains(expect_at),
        "stderr should name {expect_at}:\n{stderr}"
    );
    // Still answering with the old catalog, and saying so over MCP too.
    assert_eq!(
        answer(&s.resolve_response("deploy", json!({"env": "dev"}))),
        Ok(both("1", "v1"))
    );
    let live = s.status();
    assert!(
        live["lastError"]
            .as_str()
            .is_some_and(|e| e.contains(expect_at)),
        "{live}"
    );

    resolve_across(&mut s, &both("1", "v1"), new, || {
        std::fs::write(dir.join(file), fixed).unwrap()
    });
    let st = eventually("the fixed status", || {
        read_status_file(&status).filter(|v| v["ok"] == true)
    });
    assert_ne!(st["revision"], revision);
}

/// One test per row: `name: file, broken text, where the error points,
/// fixed text, the answer once fixed` (see [`broken_then_fixed`]).
macro_rules! broken_then_fixed {
    ($($name:ident: $file:expr, $broken:expr, $at:expr, $fixed:expr, $new:expr;)*) => {$(
        #[test]
        fn $name() {
            broken_then_fixed($file, &$broken, $at, $fixed, &$new);
        }
    )*};
}

broken_then_fixed! {
    rego_syntax_error_keeps_the_previous_catalog: "deploy.rego",
        "package tools.deploy\n\nimport rego.v1\n\nmeta := {\"answer\" \"v2\"}\n",
        "deploy.rego:5:", policy("v2"), both("1", "v2");
    // Refused from the syntax tree, before any rule runs.
    recursive_policy_keeps_the_previous_catalog: "deploy.rego",
        "package tools.deploy\n\nimport rego.v1\n\nmeta := {\"answer\": n}\n\nn := count(m)\n\nm := [n]\n",
        "deploy.rego:7:1: error: rule data.tools.deploy.n is recursive: data.tools.deploy.n -> data.tools.deploy.m -> data.tools.deploy.n",
        policy("v2"), both("1", "v2");
    // `input.arguments.evn` can never be defined (the schema says `env`):
    // the same static check as `regent check`, so the typo is not served.
    misspelt_argument_in_a_policy_keeps_the_previous_catalog: "deploy.rego",
        "package tools.deploy\n\nimport rego.v1\n\nmeta := {\"answer\": \"v2\"} if input.arguments.evn == \"dev\"\n",
        "deploy.rego:5:45: error: `input.arguments.evn` is never defined",
        policy("v2"), both("1", "v2");
    // Found only by running the rules on sample arguments, as `regent
    // check` does: a reload is never looser than check (and no request
    // gets -32603 for `prod` afterwards).
    conflicting_rules_keep_the_previous_catalog: "deploy.rego",
        CONFLICTING,
        "deploy.rego:7:1: error: rules conflict for arguments {\"env\":\"prod\"}",
        policy("v2"), both("1", "v2");
    // Found only by the lints, which read the modules the build parsed
    // (`Catalog::take_policy_modules`): a reload still runs them.
    rule_changing_the_description_keeps_the_previous_catalog: "deploy.rego",
        format!("{}\ndescription := \"renamed\"\n", policy("v2")),
        "deploy.rego:7:1: error: rule `description` in package tools.deploy would change the tool's description",
        policy("v2"), both("1", "v2");
    // A tab where YAML wants spaces, on line 3.
    invalid_yaml_keeps_the_previous_catalog: "deploy.yaml",
        tool_yaml("2").replacen("    description:", "\tdescription:", 1),
        "deploy.yaml:3:", tool_yaml("2"), both("2", "v1");
    // `type: 12` on line 7 is not a JSON Schema type.
    invalid_input_schema_keeps_the_previous_catalog: "deploy.yaml",
        tool_yaml("2").replace("env: {type: string, enum: [dev, prod]}", "env: {type: 12}"),
        "deploy.yaml:7:", tool_yaml("2"), both("2", "v1");
}

/// `serve dir ARGS` stops at start-up with `code`, its standard error
/// saying `says`.
fn refused_at_start(dir: &Path, args: &[&str], code: i32, says: &str) {
    let out = common::regent()
        .args(["serve", arg(dir)])
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "stderr:\n{stderr}");
    assert!(stderr.contains(says), "stderr:\n{stderr}");
}

#[test]
fn an_added_upstream_with_a_bad_duration_keeps_the_previous_catalog() {
    // Read when the catalog loads, as any catalog error: the reload fails at
    // the key's place (not only in the upstream's own `lastError`), and
    // nothing is started.
    let broken = format!(
        "{}upstreams:\n  - name: late\n    command: /no/such/program\n    start_timeout: later\n",
        tool_yaml("2")
    );
    broken_then_fixed(
        "deploy.yaml",
        &broken,
        "deploy.yaml:21:5: error: `start_timeout` of upstream `late` is not a duration: `later`",
        tool_yaml("2"),
        &both("2", "v1"),
    );
}

#[test]
fn start_up_with_a_bad_catalog_still_fails() {
    let (_tmp, dir) = catalog();
    let broken = "package tools.deploy\n\nmeta := {\n";
    std::fs::write(dir.join("deploy.rego"), broken).unwrap();
    refused_at_start(&dir, &[], 1, "deploy.rego:");
}

/// Two complete `meta` rules that both hold for `env: prod`.
const CONFLICTING: &str = "package tools.deploy\n\nimport rego.v1\n\nmeta := {\"answer\": \"v2\"}\n\nmeta := {\"answer\": \"v3\"} if input.arguments.env == \"prod\"\n";

#[test]
fn start_up_refuses_what_check_refuses() {
    let (_tmp, dir) = catalog();
    std::fs::write(dir.join("deploy.rego"), CONFLICTING).unwrap();
    refused_at_start(&dir, &[], 1, "deploy.rego:7:1: error: rules conflict");
}

/// What only the lints find (a rule that would change the tool's
/// description) refuses the catalog at start-up as `regent check` does.
#[test]
fn start_up_refuses_what_only_the_lints_find() {
    let (_tmp, dir) = catalog();
    let rego = format!("{}\ndescription := \"renamed\"\n", policy("v1"));
    std::fs::write(dir.join("deploy.rego"), rego).unwrap();
    let says = "deploy.rego:7:1: error: rule `description` in package tools.deploy would change the tool's description";
    refused_at_start(&dir, &[], 1, says);
}

/// Enough tools that every per-tool pass runs over several threads, with
/// the find-only analyses beside the compile and the lints beside the
/// check's runs: what either finds still refuses the catalog at start-up.
#[test]
fn start_up_among_many_tools_refuses_what_the_analyses_and_lints_find() {
    let many = |dir: &Path| {
        let tools: String = (0..150)
            .map(|i| extra_tool(&format!("other_{i}")).replacen("tools:\n", "", 1))
            .collect();
        std::fs::write(dir.join("others.yaml"), format!("tools:\n{tools}")).unwrap();
    };
    // A variable no body binds: the safety analysis, beside the compile.
    let (_tmp, dir) = catalog();
    many(&dir);
    let rego = "package tools.deploy\n\nimport rego.v1\n\ndeny contains reason if input.arguments.env == \"prod\"\n";
    std::fs::write(dir.join("deploy.rego"), rego).unwrap();
    let says = "deploy.rego:5:15: error: variable `reason` in the rule's head is never bound";
    refused_at_start(&dir, &[], 1, says);
    // A rule that would change the description: the lints, beside the runs.
    let (_tmp, dir) = catalog();
    many(&dir);
    let rego = format!("{}\ndescription := \"renamed\"\n", policy("v1"));
    std::fs::write(dir.join("deploy.rego"), rego).unwrap();
    let says = "deploy.rego:7:1: error: rule `description` in package tools.deploy would change the tool's description";
    refused_at_start(&dir, &[], 1, says);
}

#[test]
fn status_file_inside_the_catalog_is_refused() {
    let (_tmp, dir) = catalog();
    let status = dir.join("status.json");
    let says = "would be read as a catalog file";
    refused_at_start(&dir, &["--status-file", arg(&status)], 2, says);
}

/// A library package the tool imports is part of what the tool reaches, so
/// of its fingerprint: a reload that makes it conflict is refused like one
/// that breaks the tool's own package (`check::on_load` runs the tool
/// again), and the fixed library then serves.
#[test]
fn a_conflict_in_an_imported_library_keeps_the_previous_catalog() {
    let (_tmp, dir) = catalog();
    let library =
        |answer: &str| format!("package lib\n\nimport rego.v1\n\nanswer := \"{answer}\"\n");
    std::fs::write(
        dir.join("deploy.rego"),
        "package tools.deploy\n\nimport data.lib\nimport rego.v1\n\nmeta := {\"answer\": lib.answer}\n",
    )
    .unwrap();
    std::fs::write(dir.join("lib.rego"), library("v1")).unwrap();
    // A library no tool reaches, which changes nothing any tool answers.
    std::fs::write(
        dir.join("other.rego"),
        "package other\n\nimport rego.v1\n\nx := 1\n",
    )
    .unwrap();
    let status = dir.parent().unwrap().join("status.json");
    let mut s = legacy(&dir, &[arg(&dir), "--status-file", arg(&status)]);
    assert_eq!(
        answer(&s.resolve_response("deploy", json!({"env": "dev"}))),
        Ok(both("1", "v1"))
    );
    let revision = read_status_file(&status).expect("status file")["revision"].clone();

    // Conflicts for `prod` only: nothing static finds it, and `dev` would
    // still answer; running the tool as `regent check` does finds it.
    std::fs::write(
        dir.join("lib.rego"),
        "package lib\n\nimport rego.v1\n\nanswer := \"v2\"\n\nanswer := \"v3\" if input.arguments.env == \"prod\"\n",
    )
    .unwrap();
    let st = eventually("the failed reload in the status file", || {
        read_status_file(&status).filter(|v| v["ok"] == false)
    });
    let err = st["lastError"].as_str().unwrap();
    assert!(err.contains("lib.rego:7:1: error: rules conflict"), "{err}");
    assert_eq!(
        st["revision"], revision,
        "the previous revision serves: {st}"
    );

    resolve_across(&mut s, &both("1", "v1"), &both("1", "v2"), || {
        std::fs::write(dir.join("lib.rego"), library("v2")).unwrap()
    });
}
