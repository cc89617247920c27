//! The official filesystem MCP server (npm
//! `@modelcontextprotocol/server-filesystem`) governed through regent by
//! `examples/filesystem`, end to end: regent starts the real server, imports
//! its tools, and decides every call with the example's policy before the
//! server sees it. Driven by rmcp's client in both protocol eras; every
//! effect is verified on disk.
//!
//! The server is `$FILESYSTEM_SERVER` (its `mcp-server-filesystem` program,
//! as `npm install` puts it in `node_modules/.bin`; `.ci/run` installs the
//! version locked in tests/fixtures/filesystem_server); without it, or
//! without `node` in PATH, the test is skipped with a message.

use crate::common;
use crate::exec_support;

use std::path::{Path, PathBuf};

use common::{Era, decision_id, is_error, repo_path, text};
use exec_support::Start;
use rmcp::model::ElicitationAction;
use serde_json::json;

/// The server's program, if it is installed and node can run it.
fn server() -> Option<PathBuf> {
    let Some(path) = std::env::var_os("FILESYSTEM_SERVER").map(PathBuf::from) else {
        eprintln!(
            "skipped: FILESYSTEM_SERVER is not set (npm install @modelcontextprotocol/server-filesystem, then set it to node_modules/.bin/mcp-server-filesystem; .ci/run does)"
        );
        return None;
    };
    let node = std::process::Command::new("node").arg("--version").output();
    if !path.exists() || !node.is_ok_and(|o| o.status.success()) {
        eprintln!(
            "skipped: {} does not exist or `node` is not in PATH",
            path.display()
        );
        return None;
    }
    Some(std::path::absolute(path).unwrap())
}

/// examples/filesystem in `dir`, serving `root` with `server`: the example's
/// files as they are, with its root and its command replaced.
fn catalog(dir: &Path, root: &Path, server: &Path) {
    let example = repo_path("examples/filesystem");
    for entry in std::fs::read_dir(&example).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        let text = text
            .replace("/srv/files", &root.display().to_string())
            .replace(
                "command: mcp-server-filesystem",
                &format!("command: {}", server.display()),
            );
        std::fs::write(dir.join(entry.file_name()), text).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_filesystem_server_is_governed_by_the_example() {
    let Some(server) = server() else { return };
    for era in Era::ALL {
        let catalog_dir = tempfile::tempdir().unwrap();
        // The server resolves its allowed directory through symlinks; so
        // does the policy's root.
        let root_dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(root_dir.path()).unwrap();
        let elsewhere_dir = tempfile::tempdir().unwrap();
        let elsewhere = std::fs::canonicalize(elsewhere_dir.path()).unwrap();
        catalog(catalog_dir.path(), &root, &server);
        std::fs::write(root.join("notes.txt"), "one\ntwo\n").unwrap();

        let r = Start::new(catalog_dir.path()).connect(era).await;
        let ctx = format!("{era:?}");

        // A read resolves read-only (regent alone) and returns the file.
        let notes = root.join("notes.txt").display().to_string();
        let resolved = r.resolve("read_text_file", json!({"path": notes})).await;
        assert_eq!(
            resolved["annotations"]["readOnlyHint"], true,
            "{ctx}: {resolved}"
        );
        let res = r.call("read_text_file", json!({"path": notes})).await;
        assert!(!is_error(&res), "{ctx}: {res}");
        assert_eq!(text(&res), "one\ntwo\n", "{ctx}: {res}");
        assert!(r.asked().is_empty(), "{ctx}: a read asked");

        // A write outside the root is denied by regent: nothing is created,
        // and the user is not asked.
        let outside = elsewhere.join("x.txt");
        let res = r
            .call(
                "write_file",
                json!({"path": outside.display().to_string(), "content": "boom"}),
            )
            .await;
        assert!(is_error(&res), "{ctx}: {res}");
        assert!(text(&res).contains("is outside"), "{ctx}: {}", text(&res));
        assert!(!outside.exists(), "{ctx}: the denied write created a file");
        assert!(r.asked().is_empty(), "{ctx}: a denied call asked");
        let d = r.decision(&decision_id(&res));
        assert_eq!(d["decision"], "denied", "{ctx}: {d}");

        // The same through a link under the root (issue 29): the server
        // would follow it and stop only at its own fence; regent decides on
        // the file the link leads to, and denies it before the server sees
        // the call. A read and a write alike.
        std::fs::write(elsewhere.join("s.txt"), "secret\n").unwrap();
        let link = root.join(format!("link_out_{ctx}"));
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        let through = link.join("s.txt").display().to_string();
        let res = r.call("read_text_file", json!({"path": through})).await;
        assert!(is_error(&res), "{ctx}: {res}");
        assert!(!text(&res).contains("secret"), "{ctx}: {res}");
        let reasons = res["_meta"]["regent/decision"]["reasons"].to_string();
        assert!(reasons.contains("which is outside"), "{ctx}: {reasons}");
        let res = r
            .call(
                "write_file",
                json!({"path": link.join("new.txt").display().to_string(), "content": "boom"}),
            )
            .await;
        assert!(is_error(&res), "{ctx}: {res}");
        assert!(
            !elsewhere.join("new.txt").exists(),
            "{ctx}: written through the link"
        );
        // A decomposed name is decided on, and sent as, the composed file.
        std::fs::write(root.join("caf\u{e9}.txt"), "composed\n").unwrap();
        let nfd = root.join("cafe\u{301}.txt").display().to_string();
        let res = r.call("read_text_file", json!({"path": nfd})).await;
        assert!(!is_error(&res), "{ctx}: {res}");
        assert_eq!(text(&res), "composed\n", "{ctx}: {res}");

        // A write inside the root asks first and runs once accepted.
        let new = root.join("new.txt");
        let res = r
            .call(
                "write_file",
                json!({"path": new.display().to_string(), "content": "hello"}),
            )
            .await;
        assert!(!is_error(&res), "{ctx}: {res}");
        assert_eq!(r.asked().len(), 1, "{ctx}: {:?}", r.asked());
        assert!(
            r.asked()[0].contains(&format!("write_file {}?", new.display())),
            "{ctx}: {:?}",
            r.asked()
        );
        assert_eq!(std::fs::read_to_string(&new).unwrap(), "hello", "{ctx}");

        // A move, accepted, moves; one out of the root is denied.
        let moved = root.join("moved.txt");
        let res = r
            .call(
                "move_file",
                json!({"source": new.display().to_string(), "destination": moved.display().to_string()}),
            )
            .await;
        assert!(!is_error(&res), "{ctx}: {res}");
        assert!(moved.exists() && !new.exists(), "{ctx}");
        let res = r
            .call(
                "move_file",
                json!({"source": moved.display().to_string(), "destination": outside.display().to_string()}),
            )
            .await;
        assert!(is_error(&res), "{ctx}: {res}");
        assert!(moved.exists() && !outside.exists(), "{ctx}");
        r.close().await;

        // A write the user declines never reaches the server.
        let r = Start::new(catalog_dir.path())
            .elicit(Some(ElicitationAction::Decline))
            .connect(era)
            .await;
        let declined = root.join("declined.txt");
        let res = r
            .call(
                "write_file",
                json!({"path": declined.display().to_string(), "content": "no"}),
            )
            .await;
        assert!(is_error(&res), "{ctx}: {res}");
        assert!(!declined.exists(), "{ctx}: the declined write ran");
        r.close().await;
    }
}

#[test]
fn serve_quarantines_a_tool_the_server_lists_and_the_pin_lacks() {
    let Some(server) = server() else { return };
    let catalog_dir = tempfile::tempdir().unwrap();
    let root_dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(root_dir.path()).unwrap();
    catalog(catalog_dir.path(), &root, &server);
    let pin = catalog_dir.path().join("filesystem.snapshot.json");
    let mut pinned: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&pin).unwrap()).unwrap();
    pinned["upstreams"]["filesystem"]["tools"]
        .as_array_mut()
        .unwrap()
        .retain(|t| t["name"] != "read_file");
    std::fs::write(&pin, pinned.to_string()).unwrap();
    let out = common::serve_once(catalog_dir.path());
    // It starts (and ends at once: no client on standard input).
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("catalog loaded"), "{stderr}");
    assert!(
        stderr.contains("upstream `filesystem` lists tools that differ from its pinned snapshot filesystem.snapshot.json: added `read_file`; the tools it serves that differ are quarantined (not listed, calls refused) until the pin matches"),
        "{stderr}"
    );
}
