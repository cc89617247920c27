//! The decision log's HTTP sink (`--decision-log-url`), against a real
//! collector process on 127.0.0.1 (tests/fixtures/decision_collector.py,
//! standard library only): every decision arrives as an OPA event, a
//! collector that goes down and comes back, drops counted and reported, the
//! sink's counts in metrics.
//!
//! What regent promises a collector is OPA's plugin's: at least once. An
//! upload that failed is sent again, and one that timed out may have been
//! kept by the collector all the same, so a decision can arrive twice; it
//! is then the same event, with the same `decision_id` (collectors
//! deduplicate on it). Nothing is sent again after a 2xx. The tests hold
//! regent to exactly that ([`assert_at_least_once`]), never to "once",
//! which a slow collector on a loaded machine breaks.
//!
//! Nothing here waits a set time: each test waits for what it needs to
//! have happened (ids in the collector's file, a line on regent's stderr, a
//! metric), up to the kit's [`common::WAIT`]. A collector that must be down
//! keeps its port (it turns connections away, `down` mode) and "no
//! collector" is a port held closed ([`common::ClosedPort`]), so no other
//! process can answer there meanwhile.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use common::WAIT;
use serde_json::Value;

use crate::decision_log::{answers_for, catalog, log_lines, requests, wait};

// ---------------------------------------------------------------------------
// The HTTP sink (`--decision-log-url`), against a real collector process on
// 127.0.0.1 (tests/fixtures/decision_collector.py, standard library only).

/// A running collector; killed when dropped. Its mode changes on command
/// ([`Collector::set_mode`]), acknowledged, so the test knows which
/// uploads see which mode.
pub(crate) struct Collector {
    child: Child,
    control: ChildStdin,
    answers: BufReader<ChildStdout>,
    port: u16,
    out: std::path::PathBuf,
}

impl Collector {
    /// Starts a collector on `port` (0: any), appending events to `out`.
    pub(crate) fn start(port: u16, out: &Path) -> Collector {
        Collector::start_mode(port, out, "ok")
    }

    /// A collector in `mode`: "ok", "fail" (500), "hang" (no answer) or
    /// "down" (connections closed unanswered).
    pub(crate) fn start_mode(port: u16, out: &Path, mode: &str) -> Collector {
        let script = common::repo_path("tests/fixtures/decision_collector.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg(port.to_string())
            .arg(out)
            .arg(mode)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs the collector");
        let control = child.stdin.take().unwrap();
        let mut answers = BufReader::new(child.stdout.take().unwrap());
        let line = read_answer(&mut answers);
        let port = line
            .strip_prefix("listening ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the collector did not start: {line:?}"));
        Collector {
            child,
            control,
            answers,
            port,
            out: out.to_path_buf(),
        }
    }

    /// Sends one control command and returns its answer.
    fn command(&mut self, command: &str) -> String {
        writeln!(self.control, "{command}").expect("the collector reads its commands");
        self.control.flush().unwrap();
        read_answer(&mut self.answers)
    }

    /// Switches to `mode` ("ok" or "down") for every upload that comes
    /// after this returns; on the same port, which it never gave up.
    pub(crate) fn set_mode(&mut self, mode: &str) {
        let answer = self.command(&format!("mode {mode}"));
        assert_eq!(answer, format!("mode {mode}"), "the collector's answer");
    }

    /// The connections turned away in "down" mode so far.
    pub(crate) fn turned_away(&mut self) -> u64 {
        let answer = self.command("turned-away");
        answer
            .strip_prefix("turned-away ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("the collector's answer: {answer:?}"))
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/logs", self.port)
    }

    /// The distinct decision ids received so far.
    pub(crate) fn ids(&self) -> BTreeSet<String> {
        log_lines(&self.out)
            .iter()
            .map(|e| e["decision_id"].as_str().unwrap().to_string())
            .collect()
    }

    /// Waits until `n` distinct decisions arrived, up to [`WAIT`] (then
    /// returns those that did, for the test to assert on).
    pub(crate) fn wait_for(&self, n: usize) -> BTreeSet<String> {
        let deadline = Instant::now() + WAIT;
        loop {
            let ids = self.ids();
            if ids.len() >= n || Instant::now() > deadline {
                return ids;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// One line the collector wrote on stdout, trimmed; its end of output is
/// a failure (it died).
fn read_answer(answers: &mut BufReader<ChildStdout>) -> String {
    let mut line = String::new();
    let n = answers
        .read_line(&mut line)
        .expect("the collector's stdout");
    assert!(n > 0, "the collector exited");
    line.trim().to_string()
}

/// Waits until the file `path` holds `needle` (polling; fails after
/// [`WAIT`]) and returns its text.
fn wait_for_text(path: &Path, needle: &str) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{path:?} never said {needle:?}:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What regent promises a collector (see the module's doc), held against
/// the file log (`logged`, one line per decision), what the collector kept
/// (`received`) and regent's stderr once it exited: every decision arrives;
/// each event received is the file's line for its `decision_id`, so a
/// second copy is an exact one; and there are no more second copies than
/// decisions in the uploads regent reported failed ("cannot upload
/// decisions", `decisions=N`): only a failed upload is sent again. Returns
/// how many second copies arrived.
pub(crate) fn assert_at_least_once(logged: &[Value], received: &[Value], stderr: &str) -> usize {
    let id = |e: &Value| -> String {
        e["decision_id"]
            .as_str()
            .unwrap_or_else(|| panic!("an event without a decision_id: {e}"))
            .to_string()
    };
    let mut lines: BTreeMap<String, &Value> = BTreeMap::new();
    for l in logged {
        assert!(
            lines.insert(id(l), l).is_none(),
            "two decisions share the id {}",
            id(l)
        );
    }
    let mut copies: BTreeMap<String, usize> = BTreeMap::new();
    for e in received {
        let line = lines
            .get(&id(e))
            .unwrap_or_else(|| panic!("the collector got a decision the log lacks: {e}"));
        assert_eq!(
            e, *line,
            "an event is not the log's line for its decision_id"
        );
        *copies.entry(id(e)).or_default() += 1;
    }
    let missing: Vec<&String> = lines.keys().filter(|k| !copies.contains_key(*k)).collect();
    assert!(
        missing.is_empty(),
        "{} of {} decisions never arrived, e.g. {:?}\n{stderr}",
        missing.len(),
        lines.len(),
        &missing[..missing.len().min(3)]
    );
    let again: usize = copies.values().map(|n| n - 1).sum();
    let failed: usize = stderr
        .lines()
        .filter(|l| l.contains("cannot upload decisions"))
        .map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("decisions="))
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or_else(|| panic!("a failed upload without its count: {l}"))
        })
        .sum();
    assert!(
        again <= failed,
        "{again} decisions arrived more than once, but failed uploads held only {failed}: one was sent again after a success\n{stderr}"
    );
    again
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
    let early = collector.wait_for(n);
    assert_eq!(early.len(), n, "every decision arrives while serving");
    drop(stdin);
    assert!(wait(&mut child).success());
    // ...and each is the line the file has, OPA's fields included: at
    // least once (an upload that timed out on a loaded machine is sent
    // again, and the collector may have kept it), copies exact.
    let logged = log_lines(&log);
    assert_eq!(logged.len(), n, "the file has every decision");
    let received = log_lines(&collector.out);
    let stderr_text = std::fs::read_to_string(&stderr).unwrap();
    let again = assert_at_least_once(&logged, &received, &stderr_text);
    eprintln!("{again} decisions arrived twice (sent again after a failed upload)");
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

/// The collector goes down and comes back on the port it kept (turning
/// connections away in between, as one that went away): the decisions
/// made meanwhile fail to upload, are retried, and arrive (at least once,
/// copies exact: [`assert_at_least_once`]).
#[test]
fn decisions_made_while_the_collector_is_down_arrive_after_it_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let out = tmp.path().join("received.jsonl");
    let mut collector = Collector::start(0, &out);
    let log = tmp.path().join("decisions.jsonl");
    let stderr = tmp.path().join("stderr.txt");
    let mut child = serve_shipping(&cat, &log, &collector.url(), &[], &stderr);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let first = 100;
    stdin.write_all(requests(first).as_bytes()).unwrap();
    answers_for(&mut stdout, 1..=first as u64);
    assert_eq!(collector.wait_for(first).len(), first);

    // Down: decisions go on being made, and their uploads are turned away.
    collector.set_mode("down");
    let second = 150;
    stdin
        .write_all(resolves(first + 1, second).as_bytes())
        .unwrap();
    answers_for(&mut stdout, first as u64 + 1..=(first + second) as u64);
    let deadline = Instant::now() + WAIT;
    while collector.turned_away() == 0 {
        assert!(
            Instant::now() < deadline,
            "no upload came while the collector was down:\n{}",
            std::fs::read_to_string(&stderr).unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    wait_for_text(&stderr, "cannot upload decisions");
    assert_eq!(
        collector.ids().len(),
        first,
        "nothing arrives while the collector is down"
    );

    // Up again, on the same port: the retries deliver every decision.
    collector.set_mode("ok");
    let all = collector.wait_for(first + second);
    assert_eq!(
        all.len(),
        first + second,
        "every decision arrives after the restart"
    );
    drop(stdin);
    assert!(wait(&mut child).success());
    let text = std::fs::read_to_string(&stderr).unwrap();
    assert_at_least_once(&log_lines(&log), &log_lines(&out), &text);
    assert!(text.contains("decision-log uploads resumed"), "{text}");
    assert!(!text.contains("not sent"), "{text}");
}

/// The duplicate OPA's plugin allows, made on purpose: the collector keeps
/// a batch but answers only after regent's upload time-out (5 s) gave up on
/// it (`late` mode), so regent sends the batch again. The collector then
/// holds those decisions twice, as the same events; every decision arrives.
#[test]
fn a_batch_kept_but_answered_after_the_time_out_arrives_again_as_the_same_events() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let out = tmp.path().join("received.jsonl");
    let collector = Collector::start_mode(0, &out, "late");
    let log = tmp.path().join("decisions.jsonl");
    let stderr = tmp.path().join("stderr.txt");
    let mut child = serve_shipping(&cat, &log, &collector.url(), &[], &stderr);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let n = 20;
    stdin.write_all(requests(n).as_bytes()).unwrap();
    answers_for(&mut stdout, 1..=n as u64);
    // The late batch's time-out is reported, then the retry delivers.
    wait_for_text(&stderr, "cannot upload decisions");
    assert_eq!(collector.wait_for(n).len(), n, "every decision arrives");
    wait_for_text(&stderr, "decision-log uploads resumed");
    drop(stdin);
    assert!(wait(&mut child).success());
    let text = std::fs::read_to_string(&stderr).unwrap();
    let again = assert_at_least_once(&log_lines(&log), &log_lines(&out), &text);
    assert!(again > 0, "the late batch was not sent again:\n{text}");
    assert!(text.contains("operation timed out"), "{text}");
    assert!(text.contains("decision-log uploads done"), "{text}");
}

#[test]
fn with_a_tiny_buffer_and_no_collector_drops_are_counted_and_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = catalog(tmp.path());
    let closed = common::ClosedPort::new();
    let log = tmp.path().join("decisions.jsonl");
    let stderr = tmp.path().join("stderr.txt");
    let mut child = serve_shipping(
        &cat,
        &log,
        &format!("http://{}/logs", closed.addr()),
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
    // No collector, and none can appear there: every upload fails.
    let closed = common::ClosedPort::new();
    let log = tmp.path().join("decisions.jsonl");
    let url = format!("http://{}/logs", closed.addr());
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
    // Of 10 decisions, 3 fit the buffer: the other 7 are dropped, at the
    // latest when a failed upload puts its batch back (retries back off to
    // 10 s at most, well within WAIT).
    let metric = |name: &str| http.metric(None, name).unwrap_or(0.0);
    let deadline = Instant::now() + WAIT;
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
    // A failure is counted before it is logged: wait for the line.
    http.wait_for_stderr("cannot upload decisions");
}
