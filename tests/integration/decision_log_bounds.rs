//! The decision log's HTTP sink bounded in bytes: whatever the collector
//! does (down, failing, hanging), large arguments cannot make regent's
//! memory grow past the log's limits.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::decision_log::{catalog, log_lines};
use crate::decision_log_ship::Collector;

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
        let deadline = Instant::now() + common::WAIT;
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
/// `/metrics` once the writer had handed every line on, memory, and what
/// regent said of the sink as it exited on SIGTERM.
#[derive(Debug)]
struct Flood {
    logged: usize,
    truncated: usize,
    dropped: f64,
    peak_rss_kib: u64,
    rss_at_quarter_kib: u64,
    rss_kib: u64,
    /// The sink's summary at exit: decisions sent and never sent
    /// (`sent=`, `dropped=` of its last line).
    summary_sent: u64,
    summary_dropped: u64,
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
    // Exits at all, whatever the collector does: the sink's close bound
    // (`ship::CLOSE_WAIT`) abandons an upload in flight; without it a
    // hanging collector would hold regent here until the kit's bound.
    let status = http.wait_exit();
    // Shown only: the exit is an event waited for (within the kit's
    // bound), never a timed assertion.
    eprintln!("exited {:?} after SIGTERM", started.elapsed());
    let stderr = http.stderr();
    assert!(status.success(), "{status:?}\n{stderr}");
    assert!(!stderr.contains("memory allocation"), "{stderr}");
    assert!(stderr.contains("were dropped"), "{stderr}");
    let timed_out = stderr.contains("operation timed out");
    // ...and says what became of the decisions it had not sent.
    let summary = stderr
        .lines()
        .rfind(|l| l.contains("decision-log uploads to") && l.contains("decisions not sent"))
        .unwrap_or_else(|| panic!("no summary of the sink at exit:\n{stderr}"));
    let field = |name: &str| -> u64 {
        summary
            .split_whitespace()
            .find_map(|w| w.strip_prefix(name))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {summary}"))
    };
    let (summary_sent, summary_dropped) = (field("sent="), field("dropped="));
    Flood {
        logged: lines.len(),
        truncated,
        dropped,
        peak_rss_kib,
        rss_at_quarter_kib,
        rss_kib,
        summary_sent,
        summary_dropped,
        timed_out,
    }
}

/// What every collector failure must give: the server alive, every line in
/// the file (the large ones cut and marked), drops counted at once, memory
/// under the bound, and an exit that accounts for every decision.
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
    // SIGTERM: regent exited (flood waited for it) and summed up. No
    // collector here ever accepts a batch, so every decision was dropped,
    // when the buffer was full or, left at exit, by the close; the summary
    // accounts for each, and for no more.
    assert_eq!(f.summary_sent, 0, "{f:?}");
    assert_eq!(f.summary_dropped, n as u64, "{f:?}");
}

const FLOOD: usize = 160;

#[test]
fn large_arguments_with_the_collector_down_stay_within_the_byte_bounds() {
    let closed = common::ClosedPort::new();
    let f = flood(&format!("http://{}/logs", closed.addr()), FLOOD);
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
    // SIGTERM ended by the close deadline at the latest, so regent exited
    // (`flood` waits for it) and counted it. (That the deadline cuts an
    // upload whose own timeout is longer is the unit test
    // `the_upload_in_flight_counts_against_the_buffer_and_close_abandons_it`.)
    assert!(f.timed_out, "no upload hung: {f:?}");
}
