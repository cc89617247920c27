//! The data-driven corpus: every directory under `tests/corpus/<command>/`
//! is one test. It holds a catalog (usually under `catalog/`) and an
//! `expect.yaml` that says how the built `regent` binary, run in a copy of
//! that directory in a temp dir, must answer:
//!
//! ```yaml
//! args: [check, catalog]         # argv after `regent`
//! exit: 1
//! diagnostics:                   # check only: every error found must be listed here
//!   - {code: unknown-key, location: catalog/tools.yaml:4:7, message: "unknown", help: "did you mean"}
//! stdout_contains: ["..."]       # substrings, in this order
//! stderr_contains: ["..."]
//! stdout_json: {...}             # stdout parsed as JSON must contain this (objects by subset)
//! ```
//!
//! Every example under `examples/` is a test too: `check` and `test` must
//! both pass on it. libtest-mimic turns each directory into its own test, so
//! a failure names the case and `cargo test --test corpus NAME` runs one.

use std::path::{Path, PathBuf};
use std::process::Command;

use libtest_mimic::{Arguments, Failed, Trial};
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    args: Vec<String>,
    exit: i32,
    #[serde(default)]
    diagnostics: Option<Vec<ExpectedDiagnostic>>,
    #[serde(default)]
    stdout_contains: Vec<String>,
    #[serde(default)]
    stderr_contains: Vec<String>,
    #[serde(default)]
    stdout_json: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectedDiagnostic {
    code: String,
    location: String,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    help: Option<String>,
    #[serde(default = "error")]
    severity: String,
}

fn error() -> String {
    "error".to_string()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        let target = to.join(e.file_name());
        if p.is_dir() {
            copy_dir(&p, &target);
        } else {
            std::fs::copy(&p, &target).unwrap();
        }
    }
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn regent(dir: &Path, args: &[String]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_regent"))
        .args(args)
        .current_dir(dir)
        .env_remove("NO_COLOR")
        .env_remove("RUST_LOG")
        .output()
        .expect("the regent binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn shown(run: &Run) -> String {
    format!(
        "--- exit code: {}\n--- stdout:\n{}\n--- stderr:\n{}",
        run.code, run.stdout, run.stderr
    )
}

/// `want` is contained in `got`: objects by subset of keys, arrays and
/// scalars by equality.
fn json_contains(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => w
            .iter()
            .all(|(k, wv)| g.get(k).is_some_and(|gv| json_contains(gv, wv))),
        _ => got == want,
    }
}

fn contains_in_order(text: &str, parts: &[String]) -> Result<(), String> {
    let mut rest = text;
    for p in parts {
        match rest.find(p.as_str()) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return Err(format!("expected (in order) {p:?}")),
        }
    }
    Ok(())
}

fn run_case(case: &Path) -> Result<(), Failed> {
    let text = std::fs::read_to_string(case.join("expect.yaml")).unwrap();
    let expect: Expect = yaml_serde::from_str(&text).map_err(|e| format!("expect.yaml: {e}"))?;
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(case, tmp.path());
    std::fs::remove_file(tmp.path().join("expect.yaml")).unwrap();

    let run = regent(tmp.path(), &expect.args);
    // Not a terminal: no colour codes.
    if run.stdout.contains('\x1b') || run.stderr.contains('\x1b') {
        return Err(format!(
            "colour codes in output that is not a terminal\n{}",
            shown(&run)
        )
        .into());
    }
    if run.code != expect.exit {
        return Err(format!(
            "expected exit code {}, got {}\n{}",
            expect.exit,
            run.code,
            shown(&run)
        )
        .into());
    }
    contains_in_order(&run.stdout, &expect.stdout_contains)
        .map_err(|e| format!("stdout: {e}\n{}", shown(&run)))?;
    contains_in_order(&run.stderr, &expect.stderr_contains)
        .map_err(|e| format!("stderr: {e}\n{}", shown(&run)))?;
    if let Some(want) = &expect.stdout_json {
        let got: Value = serde_json::from_str(&run.stdout)
            .map_err(|e| format!("stdout is not json ({e})\n{}", shown(&run)))?;
        if !json_contains(&got, want) {
            return Err(format!(
                "stdout json does not contain the expected value\n--- expected (subset):\n{}\n--- actual:\n{}",
                serde_json::to_string_pretty(want).unwrap(),
                serde_json::to_string_pretty(&got).unwrap()
            )
            .into());
        }
    }
    if let Some(want) = &expect.diagnostics {
        check_diagnostics(tmp.path(), &expect, want, &run)?;
    }
    Ok(())
}

/// Runs the same check with `--format json` and matches diagnostics both
/// ways: every expected one is found, and every error found is expected.
/// The human output must show each at its location with a caret.
fn check_diagnostics(
    dir: &Path,
    expect: &Expect,
    want: &[ExpectedDiagnostic],
    human: &Run,
) -> Result<(), Failed> {
    let mut args = expect.args.clone();
    args.push("--format".into());
    args.push("json".into());
    let run = regent(dir, &args);
    if run.code != expect.exit {
        return Err(format!(
            "--format json: expected exit code {}, got {}\n{}",
            expect.exit,
            run.code,
            shown(&run)
        )
        .into());
    }
    let report: Value =
        serde_json::from_str(&run.stdout).map_err(|e| format!("not json: {e}\n{}", shown(&run)))?;
    let got: Vec<&Value> = report["diagnostics"].as_array().unwrap().iter().collect();
    let location = |d: &Value| {
        let l = &d["location"];
        let mut s = l["file"].as_str().unwrap().to_string();
        if l["line"].as_u64().unwrap() > 0 {
            s.push_str(&format!(":{}:{}", l["line"], l["column"]));
        }
        s
    };
    let matches = |w: &ExpectedDiagnostic, d: &Value| {
        d["code"] == w.code.as_str()
            && d["severity"] == w.severity.as_str()
            && location(d) == w.location
            && w.message
                .as_ref()
                .is_none_or(|m| d["message"].as_str().unwrap().contains(m.as_str()))
            && w.help
                .as_ref()
                .is_none_or(|h| d["help"].as_str().is_some_and(|x| x.contains(h.as_str())))
    };
    let listing = serde_json::to_string_pretty(&report["diagnostics"]).unwrap();
    for w in want {
        if !got.iter().any(|d| matches(w, d)) {
            return Err(
                format!("expected diagnostic not found: {w:?}\n--- found:\n{listing}").into(),
            );
        }
        let headline = format!("{}: {}: ", w.location, w.severity);
        if !human.stdout.contains(&headline) {
            return Err(format!("human output lacks {headline:?}\n{}", shown(human)).into());
        }
    }
    // Every diagnostic says what to do about it.
    if let Some(d) = got
        .iter()
        .find(|d| d["help"].as_str().is_none_or(str::is_empty))
    {
        return Err(format!("diagnostic without help: {d}").into());
    }
    for d in got.iter().filter(|d| d["severity"] == "error") {
        if !want.iter().any(|w| matches(w, d)) {
            return Err(format!(
                "unexpected error {} at {}: {}\n--- all found:\n{listing}",
                d["code"],
                location(d),
                d["message"]
            )
            .into());
        }
    }
    // Every located diagnostic points at its column with a caret.
    if want.iter().any(|w| w.location.matches(':').count() == 2) && !human.stdout.contains('^') {
        return Err(format!("human output has no caret\n{}", shown(human)).into());
    }
    Ok(())
}

fn example(dir: &Path) -> Result<(), Failed> {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(dir, tmp.path());
    for command in ["check", "test"] {
        let run = regent(tmp.path(), &[command.to_string(), ".".to_string()]);
        if run.code != 0 {
            return Err(
                format!("`regent {command}` on the example failed\n{}", shown(&run)).into(),
            );
        }
        // An example must check clean. The one warning allowed is that the
        // worst-case proof cannot cover a tool whose hints depend on free-form
        // arguments (github_api's owner and repo): that is a fact about the
        // tool, which its `*.test.yaml` cases cover instead.
        if command == "check" {
            let json = regent(
                tmp.path(),
                &["check".into(), "--format".into(), "json".into(), ".".into()],
            );
            let report: serde_json::Value = serde_json::from_str(&json.stdout)
                .map_err(|e| format!("check --format json is not json: {e}\n{}", shown(&json)))?;
            let unexpected: Vec<&serde_json::Value> = report["diagnostics"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| d["code"] != "proof-not-covered")
                .collect();
            if !unexpected.is_empty() {
                return Err(format!(
                    "`regent check` on the example is not clean: {unexpected:?}\n{}",
                    shown(&run)
                )
                .into());
            }
        }
    }
    Ok(())
}

fn dirs(path: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(path)
        .map(|r| {
            r.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn main() {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    for group in dirs(&root().join("tests/corpus")) {
        let group_name = group.file_name().unwrap().to_string_lossy().to_string();
        for case in dirs(&group) {
            let name = format!(
                "{group_name}::{}",
                case.file_name().unwrap().to_string_lossy()
            );
            trials.push(Trial::test(name, move || run_case(&case)));
        }
    }
    for ex in dirs(&root().join("examples")) {
        if std::fs::read_dir(&ex)
            .map(|mut r| r.next().is_none())
            .unwrap_or(true)
        {
            continue; // an example still being written
        }
        let name = format!("examples::{}", ex.file_name().unwrap().to_string_lossy());
        trials.push(Trial::test(name, move || example(&ex)));
    }
    libtest_mimic::run(&args, trials).exit();
}
