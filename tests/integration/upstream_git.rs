//! The git MCP server (PyPI `mcp-server-git`) governed through regent by
//! `examples/git_server`, end to end: regent starts the real server over a
//! repository made with `git init` in a temp dir, imports its tools, and
//! decides every call with the example's policy before the server sees it.
//! Driven by rmcp's client in both protocol eras; every effect (or its
//! absence) is read back from the repository with the `git` command line.
//!
//! The server is `$GIT_SERVER` (its `mcp-server-git` program, as `pip
//! install mcp-server-git` puts it in the environment's bin; `.ci/run`
//! installs the pinned version); without it, or without `git` in PATH, the
//! test is skipped with a message.
//!
//! Not covered: an upstream `notifications/tools/list_changed`. This server
//! never sends one (its tool list is fixed, and it says `listChanged:
//! false`); tests/upstream_stdio.rs provokes it with a server of its own.

use crate::common;
use crate::exec_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{Era, decision_id, git, is_error, repo_path, text};
use exec_support::{Regent, Start};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientRequest, CustomRequest, ElicitationAction, ServerResult,
};
use serde_json::{Value, json};

/// The server's program, if it is installed and `git` is there to check on it.
fn server() -> Option<PathBuf> {
    let Some(path) = std::env::var_os("GIT_SERVER").map(PathBuf::from) else {
        eprintln!(
            "skipped: GIT_SERVER is not set (pip install mcp-server-git, then set it to the environment's bin/mcp-server-git; .ci/run does)"
        );
        return None;
    };
    let git = Command::new("git").arg("--version").output();
    if !path.exists() || !git.is_ok_and(|o| o.status.success()) {
        eprintln!(
            "skipped: {} does not exist or `git` is not in PATH",
            path.display()
        );
        return None;
    }
    Some(std::path::absolute(path).unwrap())
}

/// examples/git_server in `dir`, governing `root` with `server`: the
/// example's files as they are, with its root and its command replaced.
fn catalog(dir: &Path, root: &Path, server: &Path) {
    let example = repo_path("examples/git_server");
    for entry in std::fs::read_dir(&example).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        let text = text
            .replace("/srv/repo", &root.display().to_string())
            .replace(
                "command: mcp-server-git",
                &format!("command: {}", server.display()),
            );
        std::fs::write(dir.join(entry.file_name()), text).unwrap();
    }
}

/// A fresh repository (canonical path: the server resolves its
/// `--repository`) with one commit of `a.txt`, an identity of its own (the
/// server commits with the repository's configuration) and `main` checked out.
fn repo(dir: &Path) -> PathBuf {
    let repo = std::fs::canonicalize(dir).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "Regent Test"]);
    git(&repo, &["config", "user.email", "regent@example.invalid"]);
    std::fs::write(repo.join("a.txt"), "one\n").unwrap();
    git(&repo, &["add", "a.txt"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    repo
}

/// The subjects of the repository's commits, newest first.
fn subjects(repo: &Path) -> Vec<String> {
    git(repo, &["log", "--format=%s"])
        .lines()
        .map(String::from)
        .collect()
}

/// The staged files' names.
fn staged(repo: &Path) -> Vec<String> {
    git(repo, &["diff", "--cached", "--name-only"])
        .lines()
        .map(String::from)
        .collect()
}

/// What a result says, without regent's `_meta`: what must be the server's
/// own answer, unchanged.
fn answer(result: &Value) -> Value {
    json!({
        "content": result["content"],
        "structuredContent": result["structuredContent"],
        "isError": is_error(result),
    })
}

/// The server run directly (no regent), with a client of its own: what
/// regent's answers are compared with.
struct Direct {
    client: rmcp::service::RunningService<rmcp::service::RoleClient, ()>,
    _child: tokio::process::Child,
}

impl Direct {
    async fn start(server: &Path, root: &Path) -> Direct {
        let mut child = tokio::process::Command::new(server)
            .arg("--repository")
            .arg(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let stdin = child.stdin.take().unwrap();
        let client = ().serve((stdout, stdin)).await.expect("connect to the server");
        Direct {
            client,
            _child: child,
        }
    }

    async fn call(&self, tool: &str, args: Value) -> Value {
        let Value::Object(args) = args else {
            panic!("arguments must be an object")
        };
        let r = self
            .client
            .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
            .await
            .unwrap();
        serde_json::to_value(&r).unwrap()
    }
}

/// `regent/status`'s entry for the upstream `git`.
async fn status(r: &Regent) -> Value {
    let req = ClientRequest::CustomRequest(CustomRequest::new("regent/status", Some(json!({}))));
    let res: ServerResult = r.client.peer().send_request(req).await.unwrap();
    serde_json::to_value(&res).unwrap()["upstreams"]["git"].clone()
}

/// `regent/status`'s entry for `git` once `done` holds for it (or 30 s passed).
async fn status_until(r: &Regent, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let st = status(r).await;
        if done(&st) || std::time::Instant::now() > deadline {
            return st;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_git_server_is_governed_by_the_example() {
    let Some(server) = server() else { return };
    for era in Era::ALL {
        let ctx = format!("{era:?}");
        let catalog_dir = tempfile::tempdir().unwrap();
        let root_dir = tempfile::tempdir().unwrap();
        let root = repo(root_dir.path());
        let elsewhere_dir = tempfile::tempdir().unwrap();
        let elsewhere = repo(elsewhere_dir.path());
        catalog(catalog_dir.path(), &root, &server);
        let root_s = root.display().to_string();
        std::fs::write(root.join("a.txt"), "one\ntwo\n").unwrap();
        std::fs::write(root.join("b.txt"), "bee\n").unwrap();

        let r = Start::new(catalog_dir.path()).connect(era).await;

        // Every tool the server lists is imported, under its own name.
        let mut listed: Vec<String> = r
            .client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        listed.sort();
        assert_eq!(
            listed,
            [
                "git_add",
                "git_branch",
                "git_checkout",
                "git_commit",
                "git_create_branch",
                "git_diff",
                "git_diff_staged",
                "git_diff_unstaged",
                "git_log",
                "git_reset",
                "git_show",
                "git_status"
            ],
            "{ctx}"
        );

        // Resolved per call by the policy, regent alone: a read is
        // read-only, a commit is confirmed, a repository elsewhere denied.
        let resolved = r.resolve("git_status", json!({"repo_path": root_s})).await;
        assert_eq!(
            resolved["annotations"]["readOnlyHint"], true,
            "{ctx}: {resolved}"
        );
        let resolved = r
            .resolve("git_commit", json!({"repo_path": root_s, "message": "m"}))
            .await;
        assert_eq!(
            resolved["annotations"]["readOnlyHint"], false,
            "{ctx}: {resolved}"
        );

        // Reads come back as the server gives them, byte for byte.
        let own = Direct::start(&server, &root).await;
        for (tool, args) in [
            ("git_status", json!({"repo_path": root_s})),
            ("git_diff_unstaged", json!({"repo_path": root_s})),
            (
                "git_show",
                json!({"repo_path": root_s, "revision": "HEAD:a.txt"}),
            ),
            (
                "git_branch",
                json!({"repo_path": root_s, "branch_type": "local"}),
            ),
        ] {
            let via = r.call(tool, args.clone()).await;
            assert!(!is_error(&via), "{ctx}: {tool}: {via}");
            let theirs = own.call(tool, args).await;
            assert_eq!(answer(&via), answer(&theirs), "{ctx}: {tool}");
        }
        drop(own);
        let res = r
            .call("git_diff_unstaged", json!({"repo_path": root_s}))
            .await;
        assert!(text(&res).contains("+two"), "{ctx}: {res}");
        let res = r
            .call(
                "git_show",
                json!({"repo_path": root_s, "revision": "HEAD:a.txt"}),
            )
            .await;
        assert!(text(&res).contains("one"), "{ctx}: {res}");
        assert!(r.asked().is_empty(), "{ctx}: a read asked");

        // A repository outside the root is denied by regent, before the
        // server (whose own --repository would refuse it too) sees it:
        // nothing is staged or committed there, and nobody is asked.
        std::fs::write(elsewhere.join("x.txt"), "x\n").unwrap();
        git(&elsewhere, &["add", "x.txt"]);
        let elsewhere_s = elsewhere.display().to_string();
        let res = r
            .call(
                "git_commit",
                json!({"repo_path": elsewhere_s, "message": "sneaky"}),
            )
            .await;
        assert!(is_error(&res), "{ctx}: {res}");
        assert!(
            text(&res).contains(&format!("repository \"{elsewhere_s}\" is outside {root_s}")),
            "{ctx}: {}",
            text(&res)
        );
        assert_eq!(
            r.decision(&decision_id(&res))["decision"],
            "denied",
            "{ctx}"
        );
        let res = r.call("git_reset", json!({"repo_path": elsewhere_s})).await;
        assert!(is_error(&res), "{ctx}: {res}");
        assert_eq!(
            subjects(&elsewhere),
            ["first"],
            "{ctx}: the denied commit ran"
        );
        assert_eq!(staged(&elsewhere), ["x.txt"], "{ctx}: the denied reset ran");
        assert!(r.asked().is_empty(), "{ctx}: a denied call asked");

        // Staging is allowed without a question, and happens.
        let res = r
            .call("git_add", json!({"repo_path": root_s, "files": ["b.txt"]}))
            .await;
        assert!(!is_error(&res), "{ctx}: {res}");
        assert_eq!(staged(&root), ["b.txt"], "{ctx}");
        // A file climbing out of the repository is not.
        let res = r
            .call(
                "git_add",
                json!({"repo_path": root_s, "files": ["a.txt", "../x.txt"]}),
            )
            .await;
        assert!(is_error(&res), "{ctx}: {res}");
        assert_eq!(staged(&root), ["b.txt"], "{ctx}: the denied add ran");

        // A blank message is denied: no commit, the staging untouched.
        let res = r
            .call("git_commit", json!({"repo_path": root_s, "message": " "}))
            .await;
        assert!(is_error(&res), "{ctx}: {res}");
        assert!(
            text(&res).contains("a commit needs a message"),
            "{ctx}: {res}"
        );
        assert_eq!(subjects(&root), ["first"], "{ctx}");
        assert!(r.asked().is_empty(), "{ctx}: a denied call asked");

        // A commit is asked about, and runs once accepted.
        let res = r
            .call(
                "git_commit",
                json!({"repo_path": root_s, "message": "add b"}),
            )
            .await;
        assert!(!is_error(&res), "{ctx}: {res}");
        assert_eq!(
            r.asked(),
            [format!("commit \"add b\" in {root_s}?")],
            "{ctx}"
        );
        assert_eq!(subjects(&root), ["add b", "first"], "{ctx}");
        assert!(staged(&root).is_empty(), "{ctx}");
        // Its answer is the server's, naming the commit it made.
        let head = git(&root, &["rev-parse", "HEAD"]);
        assert!(text(&res).contains(head.trim()), "{ctx}: {res} vs {head}");
        // So does the log, read through regent.
        let res = r.call("git_log", json!({"repo_path": root_s})).await;
        assert!(text(&res).contains("add b"), "{ctx}: {res}");

        // Branches: a name not the team's is denied, a feature branch is
        // created without a question, switching to it is confirmed.
        let res = r
            .call(
                "git_create_branch",
                json!({"repo_path": root_s, "branch_name": "release"}),
            )
            .await;
        assert!(is_error(&res), "{ctx}: {res}");
        let res = r
            .call(
                "git_create_branch",
                json!({"repo_path": root_s, "branch_name": "feature/b"}),
            )
            .await;
        assert!(!is_error(&res), "{ctx}: {res}");
        assert_eq!(
            git(&root, &["branch", "--format=%(refname:short)"]),
            "feature/b\nmain\n",
            "{ctx}"
        );
        let res = r
            .call(
                "git_checkout",
                json!({"repo_path": root_s, "branch_name": "feature/b"}),
            )
            .await;
        assert!(!is_error(&res), "{ctx}: {res}");
        assert_eq!(r.asked().len(), 2, "{ctx}: {:?}", r.asked());
        assert_eq!(
            git(&root, &["rev-parse", "--abbrev-ref", "HEAD"]),
            "feature/b\n",
            "{ctx}"
        );
        r.close().await;

        // Calls the user declines never reach the server.
        let r = Start::new(catalog_dir.path())
            .elicit(Some(ElicitationAction::Decline))
            .connect(era)
            .await;
        let res = r
            .call("git_add", json!({"repo_path": root_s, "files": ["a.txt"]}))
            .await;
        assert!(!is_error(&res), "{ctx}: {res}");
        let res = r.call("git_reset", json!({"repo_path": root_s})).await;
        assert!(is_error(&res), "{ctx}: {res}");
        assert_eq!(staged(&root), ["a.txt"], "{ctx}: the declined reset ran");
        let res = r
            .call(
                "git_commit",
                json!({"repo_path": root_s, "message": "declined"}),
            )
            .await;
        assert!(is_error(&res), "{ctx}: {res}");
        assert_eq!(
            subjects(&root),
            ["add b", "first"],
            "{ctx}: the declined commit ran"
        );
        assert_eq!(r.asked().len(), 2, "{ctx}: {:?}", r.asked());
        r.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_git_server_killed_mid_session_fails_closed_and_is_restarted() {
    let Some(server) = server() else { return };
    let catalog_dir = tempfile::tempdir().unwrap();
    let root_dir = tempfile::tempdir().unwrap();
    let root = repo(root_dir.path());
    catalog(catalog_dir.path(), &root, &server);
    let root_s = root.display().to_string();
    let r = Start::new(catalog_dir.path()).connect(Era::Modern).await;

    let res = r.call("git_log", json!({"repo_path": root_s})).await;
    assert!(text(&res).contains("first"), "{res}");
    let st = status_until(&r, |s| s["up"] == true).await;
    let first = st["pid"].as_u64().unwrap_or_else(|| panic!("no pid: {st}"));

    // The repository is moved away, so the server cannot start again
    // (it refuses a --repository that is not one), and it is killed.
    let moved = root_dir.path().join("git.moved");
    std::fs::rename(root.join(".git"), &moved).unwrap();
    let killed = Command::new("kill")
        .args(["-9", &first.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let st = status_until(&r, |s| {
        s["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("restart failed"))
    })
    .await;
    assert_eq!(st["up"], false, "{st}");

    // Down: an allowed, accepted call fails closed and nothing runs.
    std::fs::write(root.join("b.txt"), "bee\n").unwrap();
    let res = r.call("git_status", json!({"repo_path": root_s})).await;
    assert!(is_error(&res), "{res}");
    assert_eq!(
        text(&res),
        "regent did not run git_status: upstream `git` is down; regent is restarting it, try again shortly",
        "{res}"
    );
    assert_eq!(res["_meta"]["regent/decision"]["allowed"], true, "{res}");
    let res = r
        .call(
            "git_commit",
            json!({"repo_path": root_s, "message": "while down"}),
        )
        .await;
    assert!(is_error(&res), "{res}");
    assert!(text(&res).contains("is down"), "{res}");

    // The repository is back: the next restart succeeds and calls are
    // served by the new process.
    std::fs::rename(&moved, root.join(".git")).unwrap();
    let st = status_until(&r, |s| s["up"] == true).await;
    assert_eq!(st["up"], true, "{st}");
    let second = st["pid"].as_u64().unwrap();
    assert_ne!(second, first, "{st}");
    let res = r.call("git_status", json!({"repo_path": root_s})).await;
    assert!(!is_error(&res), "{res}");
    assert!(text(&res).contains("b.txt"), "{res}");
    assert_eq!(subjects(&root), ["first"], "the commit made while down ran");
    r.close().await;
}
