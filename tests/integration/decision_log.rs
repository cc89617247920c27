//! The decision log as `regent serve` writes it from its writer thread:
//! every decision of a pipelined stream is answered and logged, and the
//! ways serving ends (end of input, SIGTERM) write every line before the
//! process exits. Runs the built binary on a catalog in a temp dir.

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
fn requests(n: usize) -> String {
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
fn serve(log: &Path, cat: &Path) -> Command {
    let mut cmd = common::regent();
    cmd.arg("serve")
        .arg("--no-watch")
        .arg("--decision-log")
        .arg(log)
        .arg(cat);
    cmd
}

fn catalog(dir: &Path) -> std::path::PathBuf {
    let cat = dir.join("catalog");
    std::fs::create_dir(&cat).unwrap();
    std::fs::write(cat.join("tools.yaml"), TOOL).unwrap();
    cat
}

/// The complete lines of the log (a last line still being written, without
/// its newline, is left for the next read).
fn log_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad log line {l}: {e}")))
        .collect()
}

/// Waits for the child to exit, killing it after a generous bound.
fn wait(child: &mut Child) -> std::process::ExitStatus {
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
fn answers_for(
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

// ---------------------------------------------------------------------------
// The HTTP sink (`--decision-log-url`), against a real collector process on
// 127.0.0.1 (tests/fixtures/decision_collector.py, standard library only).

/// A running collector; killed when dropped.
struct Collector {
    child: Child,
    port: u16,
    out: std::path::PathBuf,
}

impl Collector {
    /// Starts a collector on `port` (0: any), appending events to `out`.
    fn start(port: u16, out: &Path) -> Collector {
        Collector::start_mode(port, out, "ok")
    }

    /// A collector in `mode`: "ok", "fail" (500) or "hang" (no answer).
    fn start_mode(port: u16, out: &Path, mode: &str) -> Collector {
        let script = common::repo_path("tests/fixtures/decision_collector.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg(port.to_string())
            .arg(out)
            .arg(mode)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs the collector");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("listening ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the collector did not start: {line:?}"));
        Collector {
            child,
            port,
            out: out.to_path_buf(),
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/logs", self.port)
    }

    /// The distinct decision ids received so far.
    fn ids(&self) -> BTreeSet<String> {
        log_lines(&self.out)
            .iter()
            .map(|e| e["decision_id"].as_str().unwrap().to_string())
            .collect()
    }

    /// Waits until `n` distinct decisions arrived, up to `within`.
    fn wait_for(&self, n: usize, within: Duration) -> BTreeSet<String> {
        let deadline = Instant::now() + within;
        loop {
            let ids = self.ids();
            if ids.len() >= n || Instant::now() > deadline {
                return ids;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `n` resolve requests with ids `from..from+n`, without the handshake.
fn resolves(from: usize, n: usize) -> String {
    let all = requests(from + n - 1);
    all.lines()
        .skip(2 + from - 1)
        .map(|l| format!("{l}\n"))
        .collect()
}

/// `regent serve` on stdio logging to `log` and shipping to `url`, with
/// `extra` arguments; stderr is kept in `stderr`.
fn serve_shipping(cat: &Path, log: &Path, url: &str, extra: &[&str], stderr: &Path) -> Child {
    common::regent()
        .arg("serve")
        .arg("--no-watch")
        .arg("--decision-log")
        .arg(log)
        .arg("--decision-log-url")
        .arg(url)
        .args(extra)
        .arg(cat)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(stderr).unwrap())
        .spawn()
        .unwrap()
}

#[test]
fn every_decision_reaches_the_collector_as_an_opa_event() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let collector = Collector::start(0, &tmp.path().join("received.jsonl"));
    let log = tmp.path().join("decisions.jsonl");
    let stderr = tmp.path().join("stderr.txt");
    let mut child = serve_shipping(
        &cat,
        &log,
        &collector.url(),
        &["--decision-log-label", "env=test"],
        &stderr,
    );
    let n = 1200;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(requests(n).as_bytes()).unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    answers_for(&mut stdout, 1..=n as u64);
    // Shipped while serving (batches of at most 500, or every second)...
    let early = collector.wait_for(n, Duration::from_secs(10));
    assert_eq!(early.len(), n, "every decision arrives while serving");
    drop(stdin);
    assert!(wait(&mut child).success());
    // ...and each is the line the file has, OPA's fields included.
    let logged = log_lines(&log);
    let received = log_lines(&collector.out);
    assert_eq!(received.len(), n, "each decision arrives once");
    let file_ids: BTreeSet<String> = logged
        .iter()
        .map(|l| l["decision_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(file_ids, early);
    let e = &received[0];
    for field in [
        "decision_id",
        "timestamp",
        "path",
        "input",
        "result",
        "labels",
        "bundles",
        "metrics",
    ] {
        assert!(e.get(field).is_some(), "no {field} in {e}");
    }
    assert_eq!(e["path"], "tools/manage_files");
    assert_eq!(e["labels"]["env"], "test");
    assert_eq!(e["labels"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(e["bundles"]["regent"]["revision"].is_string(), "{e}");
    assert!(e["metrics"]["timer_regent_eval_ns"].is_u64(), "{e}");
    assert!(
        e["input"].get("arguments").is_none(),
        "arguments only with --log-arguments"
    );
    let ids: BTreeSet<&str> = received
        .iter()
        .map(|e| e["labels"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 1, "one instance id per process");
}

#[test]
fn decisions_made_while_the_collector_is_down_arrive_after_it_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let out = tmp.path().join("received.jsonl");
    let mut collector = Collector::start(0, &out);
    let port = collector.port;
    let log = tmp.path().join("decisions.jsonl");
    let stderr = tmp.path().join("stderr.txt");
    let mut child = serve_shipping(&cat, &log, &collector.url(), &[], &stderr);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let first = 100;
    stdin.write_all(requests(first).as_bytes()).unwrap();
    answers_for(&mut stdout, 1..=first as u64);
    assert_eq!(
        collector.wait_for(first, Duration::from_secs(5)).len(),
        first
    );

    // Down: decisions go on being made, and uploads fail.
    drop(collector);
    let second = 150;
    stdin
        .write_all(resolves(first + 1, second).as_bytes())
        .unwrap();
    answers_for(&mut stdout, first as u64 + 1..=(first + second) as u64);
    let failed = Instant::now() + Duration::from_secs(5);
    while !std::fs::read_to_string(&stderr)
        .unwrap()
        .contains("cannot upload decisions")
    {
        assert!(
            Instant::now() < failed,
            "no upload failed while the collector was down"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));

    // Up again on the same port: the retries deliver every decision.
    collector = Collector::start(port, &out);
    let all = collector.wait_for(first + second, Duration::from_secs(12));
    assert_eq!(
        all.len(),
        first + second,
        "every decision arrives after the restart"
    );
    drop(stdin);
    assert!(wait(&mut child).success());
    let logged: BTreeSet<String> = log_lines(&log)
        .iter()
        .map(|l| l["decision_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(logged, collector.ids());
    let text = std::fs::read_to_string(&stderr).unwrap();
    assert!(text.contains("decision-log uploads resumed"), "{text}");
    assert!(!text.contains("not sent"), "{text}");
}

#[test]
fn with_a_tiny_buffer_and_no_collector_drops_are_counted_and_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let port = common::closed_addr().port();
    let log = tmp.path().join("decisions.jsonl");
    let stderr = tmp.path().join("stderr.txt");
    let mut child = serve_shipping(
        &cat,
        &log,
        &format!("http://127.0.0.1:{port}/logs"),
        &["--decision-log-buffer", "5"],
        &stderr,
    );
    let n = 40;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(requests(n).as_bytes()).unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let answers = answers_for(&mut stdout, 1..=n as u64);
    assert!(
        answers.values().all(|a| a.get("result").is_some()),
        "a dead collector never fails a request"
    );
    drop(stdin);
    assert!(wait(&mut child).success());
    assert_eq!(log_lines(&log).len(), n, "the file log keeps every line");
    let text = std::fs::read_to_string(&stderr).unwrap();
    assert!(text.contains("the decision-log buffer was full"), "{text}");
    assert!(
        text.contains(&format!("ended with {n} decisions not sent")),
        "{text}"
    );
    assert!(text.contains("sent=0"), "{text}");
}

#[test]
fn the_sinks_counts_are_in_metrics_over_http() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let port = common::closed_addr().port();
    let log = tmp.path().join("decisions.jsonl");
    let url = format!("http://127.0.0.1:{port}/logs");
    let http = common::http::HttpServer::start(&[
        "--no-watch",
        "--decision-log",
        log.to_str().unwrap(),
        "--decision-log-url",
        &url,
        "--decision-log-buffer",
        "3",
        cat.to_str().unwrap(),
    ]);
    let mut mcp = common::http::McpHttp::connect(http.addr, common::Era::Modern);
    for i in 0..10 {
        mcp.resolve(
            "manage_files",
            serde_json::json!({"path": format!("{i}.txt"), "action": "read"}),
        );
    }
    let metric = |name: &str| http.metric(None, name).unwrap_or(0.0);
    let deadline = Instant::now() + Duration::from_secs(10);
    while metric("regent_decision_log_dropped_total") < 7.0
        || metric("regent_decision_log_upload_failures_total") < 1.0
    {
        assert!(
            Instant::now() < deadline,
            "{}\n{}",
            http.metrics(None),
            http.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        http.metric(None, "regent_decision_log_sent_total"),
        Some(0.0)
    );
    assert!(
        http.stderr().contains("cannot upload decisions"),
        "{}",
        http.stderr()
    );
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
    // Processes already started finish on their own: let them.
    std::thread::sleep(Duration::from_millis(500));
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

// ---------------------------------------------------------------------------
// The HTTP sink bounded in bytes: whatever the collector does, large
// arguments cannot make regent's memory grow past the log's limits.

/// An address-space cap for the server, as the issue measured it: a log
/// that held every line (as the line-counted buffer did, 10,000 lines of
/// 2 MiB) aborts under it. (Not lower: every evaluating thread reserves a
/// 1 GiB stack, `par::STACK_SIZE`, so serving needs about 6 GiB of address
/// space on two cores before it holds anything; the resident set is what
/// the tests bound.)
const ADDRESS_SPACE: u64 = 8 << 30;
/// The resident-set bound asserted: a debug build's own footprint (about
/// 110 MiB, its mapped code included), the 4 MiB buffer, one upload and a
/// few requests, with room to spare.
const RSS_BOUND_KIB: u64 = 160 << 10;

/// How far the flood may run ahead of the writer thread, in entries.
const LAG: usize = 8;

/// Counts the complete lines of a growing file, reading only what is new.
#[derive(Default)]
struct LineCount {
    offset: u64,
    lines: usize,
}

impl LineCount {
    fn wait_for(&mut self, path: &Path, n: usize, http: &common::http::HttpServer) {
        use std::io::{Read, Seek, SeekFrom};
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.lines < n {
            let mut f = std::fs::File::open(path).unwrap();
            f.seek(SeekFrom::Start(self.offset)).unwrap();
            let mut new = Vec::new();
            f.read_to_end(&mut new).unwrap();
            self.offset += new.len() as u64;
            self.lines += new.iter().filter(|&&b| b == b'\n').count();
            if self.lines >= n {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{} of {n} lines written\n{}",
                self.lines,
                http.stderr()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// `VmHWM` (peak resident set) and `VmRSS` of `pid`, in KiB.
fn memory_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {status}"))
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// What [`flood`] saw: lines logged, how many were cut, drops in
/// `/metrics` once the writer had handed every line on, memory, and how
/// long SIGTERM took.
#[derive(Debug)]
struct Flood {
    logged: usize,
    truncated: usize,
    dropped: f64,
    peak_rss_kib: u64,
    rss_at_quarter_kib: u64,
    rss_kib: u64,
    exit: Duration,
    /// An upload timed out (the collector hung).
    timed_out: bool,
}

/// The sizes [`flood`] uses. A debug build digests and formats a line at
/// about 10 MB/s (dependencies are not optimized), so the flood is scaled
/// to the limits: `--decision-log-buffer-bytes 4MiB` and the default 1 MiB
/// line limit.
const BUFFER_BYTES: &str = "4MiB";
/// Arguments of this size appear twice in a line: over the 1 MiB limit,
/// so these lines are cut.
const CUT_ARGS: usize = 600 << 10;
/// These lines (about 400 KiB) are kept whole and fill the buffer: 4 MiB
/// holds about 10.
const KEPT_ARGS: usize = 200 << 10;

/// `regent serve --http --log-arguments --decision-log-url URL` under
/// `prlimit --as`, fed `n` resolves over HTTP, odd ones with [`CUT_ARGS`]
/// and even ones with [`KEPT_ARGS`] of arguments, then SIGTERM.
fn flood(url: &str, n: usize) -> Flood {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let log = tmp.path().join("decisions.jsonl");
    let mut cmd = Command::new("prlimit");
    cmd.arg(format!("--as={ADDRESS_SPACE}"))
        .arg("--")
        .arg(common::binary())
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .args(["serve", "--http", "127.0.0.1:0", "--no-watch"])
        .arg("--decision-log")
        .arg(&log)
        .args(["--log-arguments", "--decision-log-url", url])
        .args(["--decision-log-buffer-bytes", BUFFER_BYTES])
        .arg(&cat);
    let mut http = common::http::HttpServer::spawn(cmd);
    let pid = http.pid();
    let mut mcp = common::http::McpHttp::connect(http.addr, common::Era::Modern);
    let big = "b".repeat(CUT_ARGS);
    let large = "l".repeat(KEPT_ARGS);
    let began = Instant::now();
    let mut written = LineCount::default();
    let mut rss_at_quarter_kib = 0;
    for i in 0..n {
        let blob = if i % 2 == 1 { &big } else { &large };
        mcp.resolve(
            "manage_files",
            serde_json::json!({"path": format!("{i}.txt"), "action": "read", "blob": blob}),
        );
        // Paced to the writer thread (at most LAG entries behind): what
        // its queue holds is bounded in entries, not bytes, and is not
        // this test's subject (a debug build's writer is far slower than
        // its requests); the sink's bounds are.
        written.wait_for(&log, (i + 1).saturating_sub(LAG), &http);
        if i + 1 == n / 4 {
            // The buffer is full by now: from here on, memory must not
            // grow with the traffic.
            rss_at_quarter_kib = memory_kib(pid).1;
        }
    }
    // Every line written (the writer has handed each to the sink): the
    // drops are in /metrics now, not at the sender's next turn.
    written.wait_for(&log, n, &http);
    let answered = began.elapsed();
    let dropped = http
        .metric(None, "regent_decision_log_dropped_total")
        .unwrap();
    let (peak_rss_kib, rss_kib) = memory_kib(pid);
    eprintln!("answered and logged in {answered:?}");
    let lines = log_lines(&log);
    for l in &lines {
        assert!(
            serde_json::to_vec(l).unwrap().len() <= 1 << 20,
            "a line over the 1 MiB line limit"
        );
    }
    let truncated = lines
        .iter()
        .filter(|l| l["truncated"] == serde_json::json!(["arguments"]))
        .count();
    for l in lines.iter().filter(|l| l.get("truncated").is_some()) {
        assert_eq!(l["arguments"]["truncated"], true, "{}", l["truncated"]);
        assert_eq!(l["arguments"]["digest"], l["argumentsDigest"]);
        assert_eq!(l["input"]["arguments"], l["arguments"]);
    }
    let started = Instant::now();
    http.signal(15);
    let status = http.wait_exit();
    let exit = started.elapsed();
    let stderr = http.stderr();
    assert!(status.success(), "{status:?}\n{stderr}");
    assert!(!stderr.contains("memory allocation"), "{stderr}");
    assert!(stderr.contains("were dropped"), "{stderr}");
    let timed_out = stderr.contains("operation timed out");
    Flood {
        logged: lines.len(),
        truncated,
        dropped,
        peak_rss_kib,
        rss_at_quarter_kib,
        rss_kib,
        exit,
        timed_out,
    }
}

/// What every collector failure must give: the server alive, every line in
/// the file (the large ones cut and marked), drops counted at once, memory
/// under the bound, and an exit within the close bound.
fn assert_bounded(f: &Flood, n: usize) {
    eprintln!("{f:?}");
    assert_eq!(f.logged, n, "the file log keeps every decision");
    assert_eq!(
        f.truncated,
        n / 2,
        "each 1 MiB-argument line is cut, only those"
    );
    // 4 MiB holds about 10 of the ~400 KiB lines: the rest went.
    assert!(
        f.dropped >= (n / 2 - 12) as f64,
        "drops not counted at once: {f:?}"
    );
    assert!(f.peak_rss_kib < RSS_BOUND_KIB, "{f:?}");
    // Three quarters of the traffic (about 48 MiB of lines to ship) once
    // the buffer was full: the resident set stays where it was.
    assert!(
        f.rss_kib < f.rss_at_quarter_kib + (16 << 10),
        "memory grew with the traffic: {f:?}"
    );
    // SIGTERM: the sink's 5 s close bound, and a little for the rest.
    assert!(f.exit < Duration::from_secs(6), "{f:?}");
}

const FLOOD: usize = 160;

#[test]
fn large_arguments_with_the_collector_down_stay_within_the_byte_bounds() {
    let port = common::closed_addr().port();
    let f = flood(&format!("http://127.0.0.1:{port}/logs"), FLOOD);
    assert_bounded(&f, FLOOD);
}

#[test]
fn large_arguments_with_a_failing_collector_stay_within_the_byte_bounds() {
    let tmp = tempfile::tempdir().unwrap();
    let collector = Collector::start_mode(0, &tmp.path().join("received.jsonl"), "fail");
    let f = flood(&collector.url(), FLOOD);
    assert_bounded(&f, FLOOD);
}

#[test]
fn large_arguments_with_a_hanging_collector_stay_bounded_and_exit_in_time() {
    let tmp = tempfile::tempdir().unwrap();
    let collector = Collector::start_mode(0, &tmp.path().join("received.jsonl"), "hang");
    let f = flood(&collector.url(), FLOOD);
    assert_bounded(&f, FLOOD);
    // Uploads hung (each ended by its timeout); the one in flight at
    // SIGTERM ended by the close deadline at the latest, within the
    // bound `assert_bounded` checks. (That the deadline cuts an upload
    // whose own timeout is longer is the unit test
    // `the_upload_in_flight_counts_against_the_buffer_and_close_abandons_it`.)
    assert!(f.timed_out, "no upload hung: {f:?}");
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
