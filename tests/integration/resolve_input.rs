//! `regent resolve --input FILE|-`: the arguments from a file or standard
//! input (as `opa eval -i`) give the same answer as the positional JSON, and
//! the two ways cannot be combined.

use std::io::Write;
use std::process::{Output, Stdio};

use serde_json::Value;

use crate::common;

/// `regent resolve --config examples/manage_files REST...`, with `stdin`
/// written to it.
fn resolve(rest: &[&str], stdin: Option<&str>) -> Output {
    let cat = common::repo_path("examples/manage_files");
    let mut child = common::regent()
        .arg("resolve")
        .arg("--config")
        .arg(cat)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the regent binary runs");
    let mut pipe = child.stdin.take().unwrap();
    // A command that refuses its arguments exits without reading stdin; the
    // write then meets a closed pipe, which is not this test's concern.
    let _ = pipe.write_all(stdin.unwrap_or("").as_bytes());
    drop(pipe);
    child.wait_with_output().unwrap()
}

/// The stderr of a run that must have failed as a usage error (exit 2).
fn usage_error(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "stderr:\n{stderr}");
    stderr
}

fn answer(out: &Output) -> Value {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is json")
}

const ARGS: &str = r#"{"path": "notes.txt", "action": "delete"}"#;

#[test]
fn input_from_a_file_and_from_stdin_match_the_positional_arguments() {
    let positional = answer(&resolve(&["manage_files", ARGS], None));
    assert_eq!(positional["annotations"]["destructiveHint"], true);
    assert_eq!(positional["annotations"]["readOnlyHint"], false);

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("args.json");
    std::fs::write(&file, ARGS).unwrap();
    let path = file.to_str().unwrap();
    let from_file = answer(&resolve(&["--input", path, "manage_files"], None));
    assert_eq!(from_file, positional);

    let from_stdin = answer(&resolve(&["-i", "-", "manage_files"], Some(ARGS)));
    assert_eq!(from_stdin, positional);

    // Other arguments give another answer: the input is really read.
    let read = answer(&resolve(
        &["--input", "-", "manage_files"],
        Some(r#"{"path": "notes.txt", "action": "read"}"#),
    ));
    assert_eq!(read["annotations"]["readOnlyHint"], true);
}

#[test]
fn input_and_positional_arguments_are_exclusive() {
    let out = resolve(&["--input", "-", "manage_files", ARGS], Some(ARGS));
    let stderr = usage_error(&out);
    assert!(stderr.contains("cannot be used with"), "stderr:\n{stderr}");
}

#[test]
fn unreadable_or_invalid_input_is_a_usage_error() {
    let missing = "/nonexistent/args.json";
    let stderr = usage_error(&resolve(&["--input", missing, "manage_files"], None));
    assert!(
        stderr.contains("error: cannot read the arguments from /nonexistent/args.json: no such file or directory"),
        "stderr:\n{stderr}"
    );

    let out = resolve(&["--input", "-", "manage_files"], Some("{path: 1}"));
    let stderr = usage_error(&out);
    assert!(
        stderr.contains("error: the arguments in standard input are not valid json"),
        "stderr:\n{stderr}"
    );
}
