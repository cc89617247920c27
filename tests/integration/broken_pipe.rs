//! A command whose stdout reader went away (`regent check . | head -1`)
//! ends quietly with exit code 1, not with a panic (101).

use std::process::Stdio;

use crate::common;

/// Runs `regent ARGS` with stdout a pipe whose reading end is already
/// closed, so the first write fails with a broken pipe.
fn run_with_closed_stdout(args: &[&str]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = common::regent()
        .args(args)
        .current_dir(common::repo_root())
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn check_test_and_resolve_exit_1_quietly_on_a_broken_pipe() {
    let catalog = "tests/fixtures/resolvers";
    for args in [
        vec!["check", catalog],
        vec!["check", "--format", "json", catalog],
        vec!["test", catalog],
        vec!["resolve", "--config", catalog, "no_such_tool", "{}"],
    ] {
        let (code, stderr) = run_with_closed_stdout(&args);
        assert_eq!(code, Some(1), "{args:?}: stderr:\n{stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
}
