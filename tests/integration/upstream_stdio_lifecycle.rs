//! A stdio upstream over its life: one that exits is restarted and its calls
//! fail closed meanwhile, a changed tool list is imported again (unless it
//! breaks the catalog), and a call past its timeout or cancelled is
//! cancelled upstream too.

use crate::common;

use std::process::Command;

use crate::upstream_stdio::{
    call_until, calls, pid, poll, python, selection, serve_selection, start, status_until, text,
};
use common::Era;
use serde_json::json;

#[test]
fn an_upstream_that_exits_is_restarted_and_its_calls_fail_closed_meanwhile() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let notes = tempfile::tempdir().unwrap();
    std::fs::write(notes.path().join("a.md"), "text").unwrap();
    selection(
        dir.path(),
        &python,
        notes.path(),
        &["crash", "delete_note", "read_note"],
        "",
    );
    let mut s = start(Era::Legacy, dir.path(), notes.path());
    let first = pid(notes.path());
    let st = status_until(&mut s, |n| n["up"] == true);
    assert_eq!(st["pid"], first, "{st}");
    assert_eq!(st["restarts"], 0, "{st}");

    // It crashes, and every restart fails while `down` is there.
    std::fs::write(notes.path().join("down"), "").unwrap();
    let r = s.request("tools/call", json!({"name": "crash", "arguments": {}}));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(
        text(&r).starts_with("the call to crash did not complete"),
        "{r}"
    );
    let r = call_until(&mut s, "delete_note", json!({"path": "a.md"}), |r| {
        text(r).contains("is down")
    });
    let res = &r["result"];
    assert_eq!(res["isError"], true, "{r}");
    assert_eq!(
        text(&r),
        "regent did not run delete_note: upstream `notes` is down; regent is restarting it, try again shortly",
        "{r}"
    );
    assert_eq!(res["_meta"]["regent/decision"]["allowed"], true, "{r}");
    assert!(notes.path().join("a.md").exists());
    let st = status_until(&mut s, |n| {
        n["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("restart failed"))
    });
    assert_eq!(st["up"], false, "{st}");
    assert!(
        st["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("the notes directory holds `down`")),
        "{st}"
    );
    // Still listed while down.
    let listed = s.request("tools/list", json!({}));
    assert_eq!(
        listed["result"]["tools"].as_array().map(Vec::len),
        Some(3),
        "{listed}"
    );

    // The next restart succeeds, and calls reach the new process.
    std::fs::remove_file(notes.path().join("down")).unwrap();
    let r = call_until(&mut s, "read_note", json!({"path": "a.md"}), |r| {
        r["result"]["isError"] == false
    });
    assert_eq!(text(&r), "text", "{r}\n{}", s.stderr());
    let st = status_until(&mut s, |n| n["up"] == true);
    assert_eq!(st["restarts"], 1, "{st}");
    let second = pid(notes.path());
    assert_ne!(second, first);
    assert_eq!(st["pid"], second, "{st}");

    // Killed from outside: restarted again.
    let killed = Command::new("kill")
        .args(["-9", &second.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let st = status_until(&mut s, |n| n["restarts"] == 2 && n["up"] == true);
    assert_eq!(st["restarts"], 2, "{st}\n{}", s.stderr());
    let r = s.request(
        "tools/call",
        json!({"name": "read_note", "arguments": {"path": "a.md"}}),
    );
    assert_eq!(text(&r), "text", "{r}");
    assert_eq!(
        calls(notes.path()),
        "crash -\nread_note a.md\nread_note a.md\n"
    );
    assert!(s.finish().success());
}

#[test]
fn an_upstreams_list_changed_reimports_its_tools() {
    let Some((mut s, _dir, _notes)) = serve_selection(&[], "    prefix: n_\n") else {
        return;
    };
    assert!(!s.tool_names().contains(&"n_echo".to_string()));
    let r = s.request(
        "tools/call",
        json!({"name": "n_add_echo", "arguments": {"name": "echo"}}),
    );
    assert_eq!(text(&r), "added echo", "{r}");
    // regent re-lists, rebuilds the catalog and tells its client.
    let deadline = std::time::Instant::now() + common::WAIT;
    while !s
        .notifications
        .iter()
        .any(|n| n["method"] == "notifications/tools/list_changed")
    {
        let m = s.next_message(deadline);
        if m.get("id").is_none() {
            s.notifications.push(m);
        }
    }
    assert!(s.tool_names().contains(&"n_echo".to_string()));
    let r = s.request(
        "tools/call",
        json!({"name": "n_echo", "arguments": {"text": "hi"}}),
    );
    assert_eq!(text(&r), "hi", "{r}");
    let reloaded = "catalog reloaded (upstream `notes` listed changed tools)";
    let log = s.stderr_until(|l| l.contains(reloaded));
    assert!(log.contains(reloaded), "{log}");
    assert!(s.finish().success());
}

#[test]
fn an_upstream_change_that_breaks_the_catalog_keeps_the_previous_one() {
    let Some((mut s, _dir, _notes)) = serve_selection(&["drop_tool", "read_note"], "") else {
        return;
    };
    let r = s.request(
        "tools/call",
        json!({"name": "drop_tool", "arguments": {"name": "read_note"}}),
    );
    assert_eq!(text(&r), "dropped read_note", "{r}");
    let failed = "reload failed with 1 error (upstream `notes` listed changed tools)";
    let log = s.stderr_until(|l| l.contains(failed));
    assert!(log.contains(failed), "{log}");
    let st = s.request("regent/status", json!({}));
    assert_eq!(st["result"]["ok"], false, "{st}");
    assert!(
        st["result"]["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("upstream `notes` lists no tool `read_note`")),
        "{st}"
    );
    let listed = s.request("tools/list", json!({}));
    assert_eq!(
        listed["result"]["tools"].as_array().map(Vec::len),
        Some(2),
        "{listed}"
    );
    assert!(s.finish().success());
}

#[test]
fn a_call_past_the_upstreams_timeout_or_cancelled_is_cancelled_upstream() {
    let Some((mut s, _dir, notes)) =
        serve_selection(&["slow"], "    timeout: 1s\n    start_timeout: 20s\n")
    else {
        return;
    };
    let r = s.request(
        "tools/call",
        json!({"name": "slow", "arguments": {"seconds": 30}}),
    );
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(
        text(&r).contains("upstream `notes` did not answer within 1s"),
        "{r}"
    );
    poll(|| calls(notes.path()), |c| c.contains("cancelled slow"));
    assert_eq!(calls(notes.path()), "slow 30.0\ncancelled slow\n");

    // The client's `notifications/cancelled` reaches the upstream too.
    s.send_line(
        &json!({"jsonrpc": "2.0", "id": "slow-1", "method": "tools/call",
                "params": {"name": "slow", "arguments": {"seconds": 30}}})
        .to_string(),
    );
    poll(
        || calls(notes.path()),
        |c| c.matches("slow 30.0").count() >= 2,
    );
    s.notify(
        "notifications/cancelled",
        json!({"requestId": "slow-1", "reason": "the user gave up"}),
    );
    poll(
        || calls(notes.path()),
        |c| c.matches("cancelled slow").count() >= 2,
    );
    assert_eq!(
        calls(notes.path()),
        "slow 30.0\ncancelled slow\nslow 30.0\ncancelled slow\n"
    );
    assert!(s.finish().success());
}
