//! Upstream MCP servers as a tool source, over stdio: regent starts a small
//! upstream written on the official Python SDK (tests/fixtures/upstream),
//! imports its tools, decides each call with the team's policy, and forwards
//! only the allowed ones, returning the upstream's result unchanged.
//! An upstream's life (restarts, list changes, timeouts) is in
//! `upstream_stdio_lifecycle`.
//!
//! The Python interpreter is `$PYTHON` (as `.ci/clients` takes it), else
//! `python3`; without the `mcp` package the test is skipped with a message,
//! as the other Python interop steps need it too (`.ci/run` installs it).

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{Era, Rounds, Server, regent, repo_path, state_of};
use serde_json::{Value, json};
use tempfile::TempDir;

/// An interpreter that has the Python MCP SDK, if there is one.
pub(crate) fn python() -> Option<String> {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = Command::new(&python)
        .args(["-c", "import mcp.server.mcpserver"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Some(python)
    } else {
        eprintln!(
            "skipped: `{python}` lacks the python mcp sdk (pip install mcp==2.3.0, or set PYTHON to an interpreter that has it)"
        );
        None
    }
}

pub(crate) fn catalog(dir: &Path, python: &str) {
    let python = which(python);
    let server = repo_path("tests/fixtures/upstream/notes_server.py");
    std::fs::write(
        dir.join("upstreams.yaml"),
        format!(
            r#"
upstreams:
  - name: notes
    command: {python}
    args: [{server}]
    env:
      inherit: [PATH]
      set: {{NOTES_DIR: {{env: NOTES_DIR}}}}
    tools:
      - name: read_note
        resolve:
          - annotations: {{readOnlyHint: true}}
      - name: delete_note
        policy: tools.notes
        resolve:
          - when: {{path: keep.md}}
            deny: keep.md is kept
          - when: {{path: ask.md}}
            confirm: Really delete ask.md?
      - name: count_words
        as: words
        annotations: {{readOnlyHint: true, openWorldHint: false}}
"#,
            python = python.display(),
            server = server.display()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("notes.rego"),
        r#"package tools.notes

import rego.v1

deny contains "notes under archive/ are never deleted" if startswith(input.arguments.path, "archive/")
"#,
    )
    .unwrap();
}

fn which(program: &str) -> std::path::PathBuf {
    if program.contains('/') {
        return std::path::PathBuf::from(program);
    }
    let out = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .unwrap();
    std::path::PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

pub(crate) fn start(era: Era, catalog_dir: &Path, notes: &Path) -> Server {
    let mut cmd = regent();
    cmd.arg("serve")
        .arg("--no-watch")
        .arg(catalog_dir)
        .env("NOTES_DIR", notes);
    Server::spawn(era, cmd)
}

pub(crate) fn calls(notes: &Path) -> String {
    std::fs::read_to_string(notes.join("calls.log")).unwrap_or_default()
}

#[test]
fn an_upstreams_tools_are_governed_and_forwarded() {
    let Some(python) = python() else { return };
    for era in Era::ALL {
        let catalog_dir = tempfile::tempdir().unwrap();
        let notes = tempfile::tempdir().unwrap();
        catalog(catalog_dir.path(), &python);
        std::fs::write(notes.path().join("a.md"), "one two three").unwrap();
        std::fs::write(notes.path().join("keep.md"), "kept").unwrap();
        std::fs::create_dir(notes.path().join("archive")).unwrap();
        std::fs::write(notes.path().join("archive/old.md"), "old").unwrap();
        let mut s = start(era, catalog_dir.path(), notes.path());

        // Imported and listed: the upstream's schema and description, the
        // upstream's claim where the team said nothing, MCP's risky defaults
        // for hints neither gave, the team's override where it gave one.
        let listed = s.request("tools/list", json!({}));
        let tools = listed["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{era:?}: {listed}\n{}", s.stderr()));
        let by_name = |n: &str| -> Value {
            tools
                .iter()
                .find(|t| t["name"] == n)
                .cloned()
                .unwrap_or_else(|| panic!("{era:?}: no {n} in {listed}"))
        };
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["read_note", "delete_note", "words"], "{era:?}");
        let read = by_name("read_note");
        assert_eq!(read["description"], "Read a note.");
        assert_eq!(read["inputSchema"]["required"], json!(["path"]));
        assert_eq!(
            read["annotations"],
            json!({"readOnlyHint": true, "destructiveHint": true, "idempotentHint": false, "openWorldHint": false}),
            "{era:?}"
        );
        assert_eq!(
            by_name("delete_note")["annotations"],
            json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true}),
            "{era:?}"
        );
        assert_eq!(
            by_name("words")["annotations"],
            json!({"readOnlyHint": true, "destructiveHint": true, "idempotentHint": false, "openWorldHint": false}),
            "{era:?}"
        );

        // Resolved by regent alone: read-only for a read, destructive for a
        // delete, and the team's deny rules.
        let r = s.resolve("read_note", json!({"path": "a.md"}));
        assert_eq!(r["annotations"]["readOnlyHint"], true, "{era:?}: {r}");
        let r = s.resolve("delete_note", json!({"path": "a.md"}));
        assert_eq!(r["annotations"]["destructiveHint"], true, "{era:?}: {r}");
        assert_eq!(r["annotations"]["readOnlyHint"], false, "{era:?}: {r}");
        assert!(
            calls(notes.path()).is_empty(),
            "resolving reached the upstream"
        );

        // Denied calls never reach the upstream: the files are still there.
        for path in ["keep.md", "archive/old.md"] {
            let r = s.request(
                "tools/call",
                json!({"name": "delete_note", "arguments": {"path": path}}),
            );
            let res = &r["result"];
            assert_eq!(res["isError"], true, "{era:?}: {r}");
            assert_eq!(res["_meta"]["regent/decision"]["allowed"], false, "{r}");
            assert!(
                notes.path().join(path).exists(),
                "{era:?}: {path} was deleted"
            );
        }
        assert!(
            calls(notes.path()).is_empty(),
            "{era:?}: a denied call reached the upstream"
        );

        // Allowed calls are forwarded, their results passed through.
        let r = s.request(
            "tools/call",
            json!({"name": "read_note", "arguments": {"path": "a.md"}}),
        );
        let res = &r["result"];
        assert_eq!(
            res["content"],
            json!([{"type": "text", "text": "one two three"}]),
            "{era:?}: {r}"
        );
        assert_eq!(
            res["structuredContent"],
            json!({"result": "one two three"}),
            "{r}"
        );
        assert_eq!(res["isError"], false, "{r}");
        assert_eq!(res["_meta"]["regent/decision"]["allowed"], true, "{r}");
        assert_eq!(res["_meta"]["regent/execution"]["upstream"], "notes", "{r}");

        let r = s.request(
            "tools/call",
            json!({"name": "words", "arguments": {"path": "a.md"}}),
        );
        let text = r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert_eq!(
            serde_json::from_str::<Value>(text).ok(),
            Some(json!({"path": "a.md", "words": 3})),
            "{era:?}: {r}"
        );

        // The upstream's own failure comes back as its error result.
        let r = s.request(
            "tools/call",
            json!({"name": "read_note", "arguments": {"path": "missing.md"}}),
        );
        assert_eq!(r["result"]["isError"], true, "{era:?}: {r}");

        let r = s.request(
            "tools/call",
            json!({"name": "delete_note", "arguments": {"path": "a.md"}}),
        );
        assert_eq!(r["result"]["isError"], false, "{era:?}: {r}");
        assert!(!notes.path().join("a.md").exists(), "{era:?}");
        assert_eq!(
            calls(notes.path()),
            "read_note a.md\ncount_words a.md\nread_note missing.md\ndelete_note a.md\n",
            "{era:?}"
        );
        assert!(s.finish().success(), "{era:?}");
    }
}

/// `serve` on a catalog holding only `upstreams.yaml` with `yaml` must
/// refuse to start, its standard error naming the place `at` and saying
/// `says`; returns that standard error.
pub(crate) fn serve_refuses(yaml: &str, at: &str, says: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("upstreams.yaml"), yaml).unwrap();
    let out = common::serve_once(dir.path());
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(stderr.contains(at) && stderr.contains(says), "{stderr}");
    stderr
}

/// One test per row: `name: upstreams.yaml, the place, what it says`.
macro_rules! serve_refuses {
    ($($name:ident: $yaml:expr, $at:expr, $says:expr;)*) => {$(
        #[test]
        fn $name() {
            serve_refuses($yaml, $at, $says);
        }
    )*};
}

serve_refuses! {
    an_upstream_that_does_not_start_stops_serve_with_its_location:
        "upstreams:\n  - name: gone\n    command: /no/such/program\n",
        "upstreams.yaml:3:5", "upstream `gone` could not be started";
    a_bad_upstream_timeout_is_a_load_error_at_its_place:
        "upstreams:\n  - name: notes\n    command: /no/such/program\n    timeout: soon\n",
        "upstreams.yaml:4:5", "`timeout` of upstream `notes` is not a duration: `soon`";
}

#[test]
fn a_selected_tool_the_upstream_lacks_is_a_load_error() {
    let Some(python) = python() else { return };
    let notes = tempfile::tempdir().unwrap();
    serve_refuses(
        &selection_yaml(&python, notes.path(), &["rename_note"], ""),
        "upstreams.yaml:7:9",
        "lists no tool `rename_note`",
    );
}

/// The notes upstream's declaration with `env`, up to its `env` line.
fn notes_upstream(python: &str, env: &str) -> String {
    format!(
        "upstreams:\n  - name: notes\n    command: {}\n    args: [{}]\n    env: {env}\n",
        which(python).display(),
        repo_path("tests/fixtures/upstream/notes_server.py").display(),
    )
}

/// `upstreams.yaml` for `tools` (the upstream's names) from the notes
/// upstream, with `extra` lines added to its declaration.
fn selection_yaml(python: &str, notes: &Path, tools: &[&str], extra: &str) -> String {
    let env = format!("{{set: {{NOTES_DIR: {}}}}}", notes.display());
    let mut yaml = notes_upstream(python, &env) + extra;
    if !tools.is_empty() {
        yaml.push_str("    tools:\n");
        for t in tools {
            yaml.push_str(&format!("      - name: {t}\n"));
        }
    }
    yaml
}

/// A catalog of [`selection_yaml`].
pub(crate) fn selection(dir: &Path, python: &str, notes: &Path, tools: &[&str], extra: &str) {
    let yaml = selection_yaml(python, notes, tools, extra);
    std::fs::write(dir.join("upstreams.yaml"), yaml).unwrap();
}

/// A legacy client of `serve` on a [`selection`] of the notes upstream, its
/// catalog and notes directories (kept while it runs); none without the SDK.
pub(crate) fn serve_selection(tools: &[&str], extra: &str) -> Option<(Server, TempDir, TempDir)> {
    let python = python()?;
    let dir = tempfile::tempdir().unwrap();
    let notes = tempfile::tempdir().unwrap();
    selection(dir.path(), &python, notes.path(), tools, extra);
    let s = start(Era::Legacy, dir.path(), notes.path());
    Some((s, dir, notes))
}

pub(crate) fn text(r: &Value) -> String {
    r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The first of `get`'s values for which `done` holds, polling every 20 ms
/// (or its last, once [`common::WAIT`] passed).
pub(crate) fn poll<T>(mut get: impl FnMut() -> T, done: impl Fn(&T) -> bool) -> T {
    let deadline = std::time::Instant::now() + common::WAIT;
    loop {
        let value = get();
        if done(&value) || std::time::Instant::now() > deadline {
            return value;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Calls `tool` until `done` holds for its response (or [`common::WAIT`] passed).
pub(crate) fn call_until(
    s: &mut Server,
    tool: &str,
    args: Value,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let params = json!({"name": tool, "arguments": args});
    poll(|| s.request("tools/call", params.clone()), done)
}

/// `regent/status` once `done` holds for its `upstreams.notes`.
pub(crate) fn status_until(s: &mut Server, done: impl Fn(&Value) -> bool) -> Value {
    let notes = || s.request("regent/status", json!({}))["result"]["upstreams"]["notes"].clone();
    poll(notes, done)
}

pub(crate) fn pid(notes: &Path) -> u32 {
    std::fs::read_to_string(notes.join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn snapshot_prints_what_each_upstream_lists_and_a_failed_start_shows_its_stderr() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let notes = tempfile::tempdir().unwrap();
    selection(dir.path(), &python, notes.path(), &[], "");
    let out = regent()
        .args(["upstream", "snapshot"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pinned: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools = pinned["upstreams"]["notes"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "read_note",
            "delete_note",
            "count_words",
            "crash",
            "slow",
            "add_echo",
            "drop_tool"
        ]
    );
    assert_eq!(
        tools[0]["annotations"],
        json!({"readOnlyHint": true, "openWorldHint": false})
    );
    assert!(calls(notes.path()).is_empty(), "listing called a tool");

    // Without NOTES_DIR (nothing is inherited beyond the allow-list) the
    // server dies at start; the error says why, in its own words.
    let yaml = notes_upstream(&python, "{inherit: [PATH]}");
    std::fs::write(dir.path().join("upstreams.yaml"), yaml).unwrap();
    let out = regent()
        .args(["upstream", "snapshot"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("upstream `notes` could not be started")
            && stderr.contains("KeyError: 'NOTES_DIR'"),
        "{stderr}"
    );
}

#[test]
fn a_reload_keeps_the_imported_tools_under_the_new_policy() {
    let Some(python) = python() else { return };
    let catalog_dir = tempfile::tempdir().unwrap();
    let notes = tempfile::tempdir().unwrap();
    catalog(catalog_dir.path(), &python);
    std::fs::write(notes.path().join("a.md"), "text").unwrap();
    let mut cmd = regent();
    cmd.arg("serve")
        .arg(catalog_dir.path())
        .env("NOTES_DIR", notes.path());
    let mut s = Server::spawn(Era::Legacy, cmd);
    let r = s.resolve("delete_note", json!({"path": "a.md"}));
    assert_eq!(r["annotations"]["destructiveHint"], true, "{r}");
    // Every delete is denied from now on; the upstream is not restarted.
    std::fs::write(
        catalog_dir.path().join("notes.rego"),
        "package tools.notes\n\nimport rego.v1\n\ndeny contains \"deletes are frozen\" if true\n",
    )
    .unwrap();
    let log = s.stderr_until(|e| e.contains("catalog reloaded") || e.contains("reload failed"));
    assert!(log.contains("catalog reloaded"), "{log}");
    assert!(log.contains("tools=3"), "{log}");
    let r = s.request(
        "tools/call",
        json!({"name": "delete_note", "arguments": {"path": "a.md"}}),
    );
    let res = &r["result"];
    assert_eq!(res["isError"], true, "{r}");
    assert_eq!(
        res["_meta"]["regent/decision"]["reasons"],
        json!(["deletes are frozen"]),
        "{r}"
    );
    assert!(notes.path().join("a.md").exists());
    let tools = s.request("tools/list", json!({}));
    assert_eq!(
        tools["result"]["tools"].as_array().map(Vec::len),
        Some(3),
        "{tools}"
    );
    assert!(s.finish().success());
}

#[test]
fn a_confirmed_call_reaches_the_upstream_only_once_accepted() {
    let Some(python) = python() else { return };
    let catalog_dir = tempfile::tempdir().unwrap();
    let notes = tempfile::tempdir().unwrap();
    catalog(catalog_dir.path(), &python);
    let ask = notes.path().join("ask.md");
    std::fs::write(&ask, "text").unwrap();
    let mut cmd = regent();
    cmd.arg("serve")
        .arg("--no-watch")
        .arg(catalog_dir.path())
        .env("NOTES_DIR", notes.path());
    let caps = json!({"elicitation": {"form": {}}});
    let mut s = Rounds::new(Server::spawn_with(Era::Modern, cmd, caps), "delete_note");
    let args = json!({"path": "ask.md"});
    let answer = |action: &str| Some(json!({"regent/confirm": {"action": action, "content": {}}}));
    let state = |r: &Value| -> String {
        assert_eq!(r["result"]["resultType"], "input_required", "{r}");
        state_of(r)
    };

    let first = s.call(args.clone(), None, None);
    let question = &first["result"]["inputRequests"]["regent/confirm"];
    assert_eq!(
        question["params"]["message"], "Really delete ask.md?",
        "{first}"
    );
    let r = s.call(args.clone(), answer("decline"), Some(&state(&first)));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(
        ask.exists() && calls(notes.path()).is_empty(),
        "a declined call ran"
    );

    let again = s.call(args.clone(), None, None);
    let r = s.call(args, answer("accept"), Some(&state(&again)));
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(r["result"]["content"][0]["text"], "deleted ask.md", "{r}");
    assert!(!ask.exists());
    assert_eq!(calls(notes.path()), "delete_note ask.md\n");
    assert!(s.server.finish().success());
}

#[test]
fn healthz_and_metrics_say_which_upstreams_are_down() {
    use common::http::{HttpServer, Req};
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let notes = tempfile::tempdir().unwrap();
    selection(dir.path(), &python, notes.path(), &["read_note"], "");
    let status_dir = tempfile::tempdir().unwrap();
    let status_file = status_dir.path().join("status.json");
    let mut cmd = regent();
    cmd.args(["serve", "--no-watch", "--http", "127.0.0.1:0"])
        .arg("--status-file")
        .arg(&status_file)
        .arg(dir.path());
    let http = HttpServer::spawn(cmd);
    // The status file is written again when an upstream goes up or down.
    let file_says = |up: bool| {
        let read = || -> Value {
            std::fs::read(&status_file)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or_default()
        };
        let doc = poll(read, |doc| doc["upstreams"]["notes"]["up"] == up);
        let said = &doc["upstreams"]["notes"]["up"];
        assert_eq!(*said, up, "the status file never said up={up}: {doc}");
    };
    let up = "regent_upstream_up{upstream=\"notes\"}";
    let restarts = "regent_upstream_restarts_total{upstream=\"notes\"}";
    http.wait_for_metric(None, up, 1.0);
    assert_eq!(http.metric(None, restarts), Some(0.0));
    let health = |http: &HttpServer| -> Value {
        let r = http.send(&Req::get("/healthz"));
        assert_eq!(r.status, 200, "{}", r.text());
        serde_json::from_slice(&r.body).unwrap()
    };
    let h = health(&http);
    assert_eq!(h["status"], "ok", "{h}");
    assert_eq!(h["upstreams"]["notes"]["up"], true, "{h}");
    file_says(true);

    // Down (and its restarts failing): degraded, still 200.
    std::fs::write(notes.path().join("down"), "").unwrap();
    let killed = Command::new("kill")
        .args(["-9", &pid(notes.path()).to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    http.wait_for_metric(None, up, 0.0);
    let h = health(&http);
    assert_eq!(h["status"], "degraded", "{h}");
    assert_eq!(h["upstreams"]["notes"]["up"], false, "{h}");
    file_says(false);

    std::fs::remove_file(notes.path().join("down")).unwrap();
    http.wait_for_metric(None, up, 1.0);
    assert_eq!(http.metric(None, restarts), Some(1.0));
    assert_eq!(health(&http)["status"], "ok");
    file_says(true);
}

#[test]
fn check_starts_an_unpinned_upstream_only_when_asked() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let notes = tempfile::tempdir().unwrap();
    let delete_note = "    tools:\n      - name: delete_note\n        policy: tools.notes\n";
    selection(dir.path(), &python, notes.path(), &[], delete_note);
    // `pth` is not an argument of the upstream's delete_note.
    std::fs::write(
        dir.path().join("notes.rego"),
        "package tools.notes\n\nimport rego.v1\n\ndeny contains \"kept\" if input.arguments.pth == \"keep.md\"\n",
    )
    .unwrap();
    let check = |start: bool| {
        let mut cmd = regent();
        cmd.args(["check", "--format", "json"]);
        if start {
            cmd.arg("--start-upstreams");
        }
        let out = cmd.arg(dir.path()).output().unwrap();
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        let codes: Vec<String> = report["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["code"].as_str().unwrap().to_string())
            .collect();
        (out.status.code(), codes)
    };
    assert_eq!(
        check(false),
        (Some(0), vec!["upstream-not-checked".to_string()])
    );
    assert_eq!(
        check(true),
        (Some(1), vec!["rego-undefined-input".to_string()])
    );
    assert!(calls(notes.path()).is_empty(), "check called a tool");
}
