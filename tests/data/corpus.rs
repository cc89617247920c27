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
//! stderr: ""                     # stderr exactly ("": nothing at all)
//! stdout_json: {...}             # stdout parsed as JSON must contain this (objects by subset)
//! ```
//!
//! Cases under `tests/corpus/hostile/` are hostile policies and arguments:
//! every command runs under an address-space cap (`prlimit --as`), so a
//! guard that fails cannot take the machine down, and they may add how
//! `regent serve` on the same catalog must behave:
//!
//! ```yaml
//! serve:
//!   refuses: "recursive"          # serve must exit non-zero, saying this on stderr; or:
//!   requests:                     # tools/resolve in order, on one server
//!     - {tool: batch, arguments: {n: 1e10}, error: policy-memory}   # -32603 with this data.reason
//!     - {tool: ping, arguments: {}}                                   # must answer
//! ```
//!
//! Every example under `examples/` is a test too: `check` and `test` must
//! both pass on it. libtest-mimic turns each directory into its own test, so
//! a failure names the case and `cargo test --test data NAME` runs one.

use std::path::{Path, PathBuf};
use std::process::Command;

use libtest_mimic::{Failed, Trial};

use crate::common;
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
    /// stderr, exactly (`""`: nothing).
    #[serde(default)]
    stderr: Option<String>,
    #[serde(default)]
    stdout_json: Option<Value>,
    #[serde(default)]
    serve: Option<ServeExpect>,
}

/// How `regent serve` on the case's catalog must behave.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServeExpect {
    /// Serve must refuse to start, saying this on stderr.
    #[serde(default)]
    refuses: Option<String>,
    #[serde(default)]
    requests: Vec<ServeRequest>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServeRequest {
    tool: String,
    arguments: Value,
    /// The request must fail with -32603 and this `data.reason`.
    #[serde(default)]
    error: Option<String>,
}

/// The address space a hostile case's process may take: far below the
/// machine's memory, far above what regent needs (its thread stacks are
/// reserved, not used, and count here).
const HOSTILE_ADDRESS_SPACE: u64 = 8 << 30;

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

/// `regent` itself, or under an address-space cap for hostile cases.
fn command(capped: bool) -> Command {
    if capped {
        let mut cmd = Command::new("prlimit");
        cmd.arg(format!("--as={HOSTILE_ADDRESS_SPACE}"))
            .arg("--")
            .arg(common::binary());
        cmd
    } else {
        common::regent()
    }
}

fn is_hostile(dir: &Path) -> bool {
    dir.components().any(|c| c.as_os_str() == "hostile")
}

fn regent(dir: &Path, args: &[String]) -> Run {
    regent_in(dir, args, false)
}

fn regent_in(dir: &Path, args: &[String], capped: bool) -> Run {
    let out = command(capped)
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

    let capped = is_hostile(case);
    let run = regent_in(tmp.path(), &expect.args, capped);
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
    if let Some(want) = &expect.stderr
        && &run.stderr != want
    {
        return Err(format!("stderr is not {want:?}\n{}", shown(&run)).into());
    }
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
        check_diagnostics(tmp.path(), &expect, want, &run, capped)?;
    }
    if let Some(serve) = &expect.serve {
        check_serve(tmp.path(), &expect.args, serve, capped, expect.exit == 1)?;
    }
    Ok(())
}

/// Runs `regent serve` with the arguments `check` was given (paths and the
/// limits, which both commands take) and holds it to `want`. A catalog that
/// `check` refuses (`refused`) is refused by `serve` too (issue 28); its
/// requests then go to a server started with `--skip-load-check`, so that
/// the run-time guards are what is tested.
fn check_serve(
    dir: &Path,
    args: &[String],
    want: &ServeExpect,
    capped: bool,
    refused: bool,
) -> Result<(), Failed> {
    let serve = || {
        let mut cmd = command(capped);
        cmd.arg("serve")
            .args(&args[1..])
            .current_dir(dir)
            .env_remove("RUST_LOG")
            .env("NO_COLOR", "1");
        cmd
    };
    if refused && want.refuses.is_none() {
        let out = serve()
            .stdin(std::process::Stdio::null())
            .output()
            .expect("the regent binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(1) || !stderr.contains("error: the catalog has") {
            return Err(format!(
                "check refuses this catalog, so serve should too; exit {:?}\n--- stderr:\n{stderr}",
                out.status.code()
            )
            .into());
        }
    }
    let mut cmd = serve();
    if refused {
        cmd.arg("--skip-load-check");
    }
    if let Some(message) = &want.refuses {
        let out = cmd
            .stdin(std::process::Stdio::null())
            .output()
            .expect("the regent binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.success() || !stderr.contains(message.as_str()) {
            return Err(format!(
                "serve was expected to refuse to start saying {message:?}; exit {:?}\n--- stderr:\n{stderr}",
                out.status.code()
            )
            .into());
        }
        return Ok(());
    }
    // Loading a hostile catalog runs its policies up to their budgets (the
    // load-time check): wait for the readiness line, not a fixed time.
    let mut server = common::Server::spawn_loaded(common::Era::Legacy, cmd);
    for r in &want.requests {
        let answer = server.request(
            "tools/resolve",
            serde_json::json!({"name": r.tool, "arguments": r.arguments}),
        );
        let shown = || format!("{answer}\n--- stderr:\n{}", server.stderr());
        match &r.error {
            Some(reason) => {
                let e = answer.get("error").ok_or_else(|| {
                    format!("{} was expected to fail with {reason}: {}", r.tool, shown())
                })?;
                if e["code"] != -32603 || e["data"]["reason"] != reason.as_str() {
                    return Err(
                        format!("{} failed otherwise than {reason}: {}", r.tool, shown()).into(),
                    );
                }
            }
            None => {
                if answer.get("result").is_none() {
                    return Err(format!("{} was expected to answer: {}", r.tool, shown()).into());
                }
            }
        }
    }
    // Still alive after every request: closing stdin ends it cleanly.
    let status = server.finish();
    if !status.success() {
        return Err(format!("serve exited with {status} after the requests").into());
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
    capped: bool,
) -> Result<(), Failed> {
    let mut args = expect.args.clone();
    args.push("--format".into());
    args.push("json".into());
    let run = regent_in(dir, &args, capped);
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

/// One test per case directory and per example.
pub fn trials() -> Vec<Trial> {
    let mut trials = Vec::new();
    for group in dirs(&common::repo_root().join("tests/corpus")) {
        let group_name = group.file_name().unwrap().to_string_lossy().to_string();
        for case in dirs(&group) {
            let name = format!(
                "{group_name}::{}",
                case.file_name().unwrap().to_string_lossy()
            );
            trials.push(Trial::test(name, move || run_case(&case)));
        }
    }
    for ex in dirs(&common::repo_root().join("examples")) {
        if std::fs::read_dir(&ex)
            .map(|mut r| r.next().is_none())
            .unwrap_or(true)
        {
            continue; // an example still being written
        }
        let name = format!("examples::{}", ex.file_name().unwrap().to_string_lossy());
        trials.push(Trial::test(name, move || example(&ex)));
    }
    trials
}
