//! The decision log as `regent serve` writes it from its writer thread:
//! every decision of a pipelined stream is answered and logged, and the
//! ways serving ends (end of input, SIGTERM) write every line before the
//! process exits. Runs the built binary on a catalog in a temp dir.
//! The HTTP sink is in `decision_log_ship`, its byte bounds in
//! `decision_log_bounds`.

use crate::common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const TOOL: &str = r#"tools:
  - name: manage_files
    inputSchema:
      type: object
      properties:
        path: {type: string}
        action: {type: string, enum: [read, append, replace, delete]}
      required: [path, action]
    annotations: {readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false}
    resolve:
      - when: {action: read}
        annotations: {readOnlyHint: true, destructiveHint: false, idempotentHint: true}
"#;

const HANDSHAKE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n"
);

/// `n` resolve requests with ids 1..=n, after the handshake.
pub(crate) fn requests(n: usize) -> String {
    let mut s = HANDSHAKE.to_string();
    for id in 1..=n {
        let action = ["read", "append", "replace", "delete"][id % 4];
        s.push_str(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/resolve","params":{{"name":"manage_files","arguments":{{"path":"notes/{id}.txt","action":"{action}"}}}}}}"#
        ));
        s.push('\n');
    }
    s
}

/// `regent serve --no-watch` on `cat`, logging decisions to `log`.
pub(crate) fn serve(log: &Path, cat: &Path) -> Command {
    let mut cmd = common::regent();
    cmd.arg("serve")
        .arg("--no-watch")
        .arg("--decision-log")
        .arg(log)
        .arg(cat);
    cmd
}

pub(crate) fn catalog(dir: &Path) -> std::path::PathBuf {
    let cat = dir.join("catalog");
    std::fs::create_dir(&cat).unwrap();
    std::fs::write(cat.join("tools.yaml"), TOOL).unwrap();
    cat
}

/// The complete lines of the log (a last line still being written, without
/// its newline, is left for the next read).
pub(crate) fn log_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad log line {l}: {e}")))
        .collect()
}

/// Waits for the child to exit, killing it after a generous bound.
pub(crate) fn wait(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("regent serve did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The ids of result answers; panics on an error answer.
fn answered_ids(lines: impl Iterator<Item = String>) -> BTreeSet<u64> {
    lines
        .map(|l| serde_json::from_str::<Value>(&l).unwrap())
        .filter(|m| m.get("id").is_some_and(|id| id != 0))
        .map(|m| {
            assert!(m.get("result").is_some(), "not a result: {m}");
            m["id"].as_u64().unwrap()
        })
        .collect()
}

#[test]
fn a_pipelined_stream_is_answered_and_logged_in_full_by_the_end_of_input() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    // Far more than one 64 KiB read: lines are split across reads, which
    // once lost a request whenever rmcp dropped a half-finished read.
    let n = 3000;
    let input = tmp.path().join("requests.jsonl");
    std::fs::write(&input, requests(n)).unwrap();
    let log = tmp.path().join("decisions.jsonl");
    let out = serve(&log, &cat)
        .stdin(std::fs::File::open(&input).unwrap())
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    let text = String::from_utf8(out.stdout).unwrap();
    let ids = answered_ids(text.lines().map(str::to_string));
    assert_eq!(ids, (1..=n as u64).collect(), "every request is answered");
    let logged = log_lines(&log);
    assert_eq!(logged.len(), n, "one decision line per resolve");
    assert!(logged.iter().all(|l| l["kind"] == "resolve"));
}

#[test]
fn sigterm_ends_stdio_serving_after_writing_every_decision() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let log = tmp.path().join("decisions.jsonl");
    let mut child = serve(&log, &cat)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let n = 500;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(requests(n).as_bytes()).unwrap();
    stdin.flush().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    // The initialize answer, then one per request.
    for _ in 0..=n {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "stdout closed early"
        );
        lines.push(line);
    }
    assert_eq!(answered_ids(lines.into_iter()).len(), n);
    // stdin stays open: only the signal ends the session.
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = wait(&mut child);
    drop(stdin);
    assert!(status.success(), "SIGTERM is a clean shutdown: {status:?}");
    assert_eq!(log_lines(&log).len(), n, "every decision is in the log");
}

/// A tool that can be called; it runs `true`.
const CALLABLE: &str = r#"tools:
  - name: noop
    inputSchema: {type: object}
    annotations: {readOnlyHint: true}
    run: {cli: {program: "true"}}
"#;

/// Reads answers from `stdout` until one has each id in `ids`; returns
/// them by id.
pub(crate) fn answers_for(
    stdout: &mut impl BufRead,
    ids: std::ops::RangeInclusive<u64>,
) -> std::collections::BTreeMap<u64, Value> {
    let mut got = std::collections::BTreeMap::new();
    while got.len() < ids.clone().count() {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "stdout closed early"
        );
        let m: Value = serde_json::from_str(&line).unwrap();
        if let Some(id) = m.get("id").and_then(Value::as_u64)
            && ids.contains(&id)
        {
            got.insert(id, m);
        }
    }
    got
}

fn refused(answer: &Value) -> bool {
    answer["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("decision log is not being written"))
}

#[test]
fn the_gap_line_counts_every_refused_decision_calls_included() {
    // The log is a FIFO that is opened but not read: the pipe fills, the
    // writer blocks, the queue fills, and after the stall bound every
    // decision is refused. Calls check the log before running; the ones
    // refused there must be counted in the gap line like refused resolves.
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    std::fs::write(cat.join("noop.yaml"), CALLABLE).unwrap();
    let fifo = tmp.path().join("decisions.fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            // Opening blocks until regent opens the write end at start-up.
            let mut f = std::fs::File::open(&fifo).unwrap();
            go_rx.recv().unwrap();
            let mut text = String::new();
            std::io::Read::read_to_string(&mut f, &mut text).unwrap();
            text
        })
    };
    let mut child = serve(&fifo, &cat)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    // More resolves than the queue and the pipe hold together.
    let resolves = regent::decisions::CAPACITY as u64 + 1500;
    stdin
        .write_all(requests(resolves as usize).as_bytes())
        .unwrap();
    stdin.flush().unwrap();
    let first = answers_for(&mut stdout, 1..=resolves);
    let refused_resolves = first.values().filter(|a| refused(a)).count();
    assert!(refused_resolves > 0, "the log never stalled");
    // Now the log is stalled: calls are refused before running.
    let calls = 40u64;
    let mut s = String::new();
    for id in resolves + 1..=resolves + calls {
        s.push_str(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"noop","arguments":{{}}}}}}"#
        ));
        s.push('\n');
    }
    stdin.write_all(s.as_bytes()).unwrap();
    stdin.flush().unwrap();
    let second = answers_for(&mut stdout, resolves + 1..=resolves + calls);
    let refused_calls = second.values().filter(|a| refused(a)).count();
    assert_eq!(
        refused_calls,
        calls as usize,
        "{:?}",
        second.values().next()
    );
    // Let the log flow again, and end the session.
    go_tx.send(()).unwrap();
    drop(stdin);
    let status = wait(&mut child);
    assert!(status.success(), "{status:?}");
    let text = reader.join().unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let missed: u64 = lines
        .iter()
        .filter(|l| l["kind"] == "gap")
        .map(|l| l["missed"].as_u64().unwrap())
        .sum();
    let logged = lines.iter().filter(|l| l["kind"] == "resolve").count();
    assert_eq!(
        missed as usize,
        refused_resolves + refused_calls,
        "gap lines: {:?}",
        lines
            .iter()
            .filter(|l| l["kind"] == "gap")
            .collect::<Vec<_>>()
    );
    assert_eq!(logged + refused_resolves, resolves as usize);
}

// Logged before it takes effect: a call's intent line is written to the
// log's file before its process starts, so `kill -9` in the middle of a
// stream of calls leaves no side effect without its line.

const MARKING: &str = r#"tools:
  - name: mark
    inputSchema:
      type: object
      properties:
        n: {type: string, pattern: "^m[0-9]+$"}
      required: [n]
    annotations: {readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false}
    run:
      cli: {program: touch, args: ["--", "{n}"], cwd: marks}
"#;

/// Whether a process regent started for `mark` may still make a marker:
/// one running in `marks` (a `touch`), or one forked by regent and not yet
/// `touch` (its command line is still regent's, which names `dir`; the
/// killed regent itself, a zombie, has none).
fn still_marking(marks: &Path, dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let marks = marks.canonicalize().unwrap();
    let dir = dir.as_os_str().as_bytes();
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read_link(e.path().join("cwd")).is_ok_and(|c| c == marks)
            || std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| c.split(|&b| b == 0).any(|a| a == dir))
    })
}

#[test]
fn after_kill_9_every_side_effect_has_its_intent_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tools.yaml"), MARKING).unwrap();
    let marks = dir.path().join("marks");
    std::fs::create_dir(&marks).unwrap();
    let log = dir.path().join("decisions.log");
    let mut server = common::Server::start(
        common::Era::Legacy,
        &[
            dir.path().to_str().unwrap(),
            "--decision-log",
            log.to_str().unwrap(),
            "--log-arguments",
        ],
    );
    const CALLS: usize = 600;
    for i in 0..CALLS {
        server.send_request(
            "tools/call",
            serde_json::json!({"name": "mark", "arguments": {"n": format!("m{i}")}}),
        );
    }
    // Kill it mid-stream: once some markers exist, well before all could.
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_dir(&marks).unwrap().count() < 40 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    let status = Command::new("kill")
        .args(["-9", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // Processes already started finish on their own: wait until none is
    // left, so that every side effect is counted.
    let deadline = Instant::now() + common::WAIT;
    while still_marking(&marks, dir.path()) {
        assert!(
            Instant::now() < deadline,
            "a `touch` regent started still runs after {:?}",
            common::WAIT
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let ran: BTreeSet<String> = std::fs::read_dir(&marks)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    let text = std::fs::read_to_string(&log).unwrap();
    let mut intended = BTreeSet::new();
    let mut outcomes = 0;
    // The last line may be cut by the kill; every complete one parses.
    for line in text.lines().filter(|l| l.ends_with('}')) {
        let v: Value = serde_json::from_str(line).unwrap();
        // Any line of the call counts as its record (a call written only
        // after it ran, as regent once did, fails this test under a kill).
        if v["kind"] == "call" {
            intended.insert(v["arguments"]["n"].as_str().unwrap().to_string());
        }
        if v["phase"] == "outcome" {
            outcomes += 1;
        }
    }
    assert!(
        ran.len() >= 40,
        "too few calls ran to test anything: {}",
        ran.len()
    );
    assert!(
        ran.len() < CALLS,
        "every call ran before the kill; the test proves nothing"
    );
    let unlogged: Vec<&String> = ran.difference(&intended).collect();
    assert!(
        unlogged.is_empty(),
        "{} of {} side effects have no line: {unlogged:?}",
        unlogged.len(),
        ran.len()
    );
    eprintln!(
        "{} calls ran before kill -9, each with its line; {} calls logged, {outcomes} outcome lines",
        ran.len(),
        intended.len()
    );
}

/// A deny wins over a confirmation: the decision-log line of a denied
/// resolve carries its reasons and no `confirm`, the allowed one its
/// question (tests/cases/deny_wins: a policy that asks before every removal
/// and denies some).
#[test]
fn a_denied_decision_is_logged_without_its_confirmation() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = common::repo_root().join("tests/cases/deny_wins");
    let mut input = HANDSHAKE.to_string();
    for (id, path) in [(1, "/etc/hosts"), (2, "/tmp/old.log")] {
        input.push_str(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/resolve","params":{{"name":"remove","arguments":{{"path":"{path}"}}}}}}"#
        ));
        input.push('\n');
    }
    let log = tmp.path().join("decisions.jsonl");
    let mut child = serve(&log, &cat)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let answers: Vec<Value> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .filter(|m: &Value| m.get("id").is_some_and(|id| id != 0))
        .collect();
    assert!(wait(&mut child).success());
    let denied = answers.iter().find(|a| a["id"] == 1).unwrap();
    assert_eq!(
        denied["result"]["_meta"]["regent/decision"],
        serde_json::json!({"allowed": false, "reasons": ["system paths are never removed"]}),
        "{denied}"
    );
    let logged = log_lines(&log);
    assert_eq!(logged.len(), 2, "{logged:?}");
    // The log keeps a digest of the arguments, not the arguments.
    let line = |decision: &str| {
        logged
            .iter()
            .find(|l| l["decision"] == decision)
            .unwrap_or_else(|| panic!("no {decision} line: {logged:?}"))
    };
    let denied = line("denied");
    assert_eq!(
        denied["reasons"],
        serde_json::json!(["system paths are never removed"])
    );
    assert!(denied.get("confirm").is_none(), "{denied}");
    assert!(denied["result"].get("confirm").is_none(), "{denied}");
    assert_eq!(line("allowed")["result"]["confirm"], "Remove /tmp/old.log?");
}
