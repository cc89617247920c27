//! Scale points: catalogs of 1 to 10,000 tools, each generated tool with its
//! own Rego policy. For each: start-up time (spawn to the first successful
//! response), resident memory after warm-up, resolve latency (one request
//! at a time), reload time when the binary has hot reload, and the time
//! `regent check` takes on the same catalog (issue 32: linear in the tools).

use std::path::Path;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::stats::{Latency, median};
use crate::stdio::{Conn, Spawn};
use crate::workload::{Era, Workload};
use crate::{Features, Opts, Watchdog, catalogs, machine};

/// The longest a start-up may take before the point is reported as failed.
const START_LIMIT: Duration = Duration::from_secs(150);

#[derive(Debug)]
pub struct Point {
    pub tools: usize,
    pub files: usize,
    /// Spawn to the `initialize` answer, one per start.
    pub startups: Vec<Duration>,
    /// VmRSS and VmHWM (peak) after warm-up, KiB.
    pub rss_kib: Option<(u64, u64)>,
    pub resolve: Option<Latency>,
    pub resolve_policy: Option<Latency>,
    pub reload: Result<Reload, String>,
    /// `regent check DIR`, spawn to exit (wall), when it exited 0.
    pub check: Result<Duration, String>,
    pub error: Option<String>,
}

impl Point {
    pub fn startup(&self) -> Option<Duration> {
        median(self.startups.iter().map(Duration::as_secs_f64).collect())
            .map(Duration::from_secs_f64)
    }
}

#[derive(Debug, Clone)]
pub struct Reload {
    /// From SIGHUP to the status file showing the new revision.
    pub wall: Vec<Duration>,
    /// The rebuild as the server timed it (`lastDurationMs`).
    pub server_ms: Vec<f64>,
}

pub fn run(opts: &Opts, root: &Path, features: &Features) -> Vec<Point> {
    let mut points = Vec::new();
    for &n in &opts.scale {
        eprintln!(
            "load: scale {n} tools (load average {})",
            machine::loadavg()
        );
        let dir = match catalogs::scale(root, n) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("load: cannot write the {n}-tool catalog: {e}");
                continue;
            }
        };
        let p = point(opts, root, &dir, n, features);
        if let Some(e) = &p.error {
            eprintln!("load: scale {n}: {e}");
        }
        let stop = p.error.is_some();
        points.push(p);
        // A catalog that did not start in time will not start faster bigger.
        if stop {
            break;
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    points
}

fn point(opts: &Opts, root: &Path, dir: &Path, n: usize, features: &Features) -> Point {
    let files = walk_count(dir);
    let mut p = Point {
        tools: n,
        files,
        startups: Vec::new(),
        rss_kib: None,
        resolve: None,
        resolve_policy: None,
        reload: Err(
            "not available in this build (`regent serve --help` has no --status-file)".into(),
        ),
        check: Err("not run".into()),
        error: None,
    };
    // Before any server starts, so nothing else of the bench runs beside it.
    // The median of three: one run of a 140 ms check moved the 10k ÷ 1k
    // ratio by a third between runs on a shared host.
    p.check = median_of_three(|| check(&opts.bin, dir));
    // Large catalogs take long to start: fewer repeats there.
    let starts = if n >= 10_000 { 1 } else { 3 };
    let status = root.join(format!("status-{n}.json"));
    let log = root.join(format!("scale-{n}.stderr"));
    let mut kept = None;
    for i in 0..starts {
        let last = i + 1 == starts;
        let mut args = vec!["serve".to_string()];
        if last && features.reload {
            // The measured process reloads only when told (SIGHUP), and
            // reports each reload in the status file.
            args.extend([
                "--no-watch".into(),
                "--status-file".into(),
                status.to_string_lossy().into_owned(),
            ]);
        }
        args.push(dir.to_string_lossy().into_owned());
        let spawn = Spawn::regent(&opts.bin, args);
        let mut c = match Conn::spawn(&spawn, Era::Legacy, &log) {
            Ok(c) => c,
            Err(e) => {
                p.error = Some(e);
                return p;
            }
        };
        let guard = Watchdog::start(vec![c.pid], START_LIMIT);
        let started = c.handshake();
        guard.stop();
        match started {
            Ok(()) => p.startups.push(c.spawned.elapsed()),
            Err(e) => {
                p.error = Some(format!("did not start within {START_LIMIT:?}: {e}"));
                return p;
            }
        }
        if last {
            kept = Some(c);
        } else {
            c.close();
        }
    }
    let mut c = kept.expect("the last start is kept");
    let policy_tool = Workload::ResolvePolicy(n / 2);
    let mut workloads = vec![Workload::Resolve];
    if n > 1 {
        workloads.push(policy_tool);
    }
    let one = Barrier::new(1);
    for &w in &workloads {
        if let Err(e) = c.once(w) {
            p.error = Some(format!("{}: {e}", w.label()));
            return p;
        }
        let warm = c.run_pipelined(w, 2_000, 16, &one);
        if let Some(e) = warm.first_error {
            p.error = Some(format!("warm-up: {e}"));
            return p;
        }
    }
    p.rss_kib = machine::rss_kib(c.pid);
    for &w in &workloads {
        let out = c.run_serial(w, opts.serial_requests, &one);
        if let Some(e) = out.first_error {
            p.error = Some(format!("{}: {e}", w.label()));
            return p;
        }
        let summary = out.samples.summary();
        match w {
            Workload::Resolve => p.resolve = summary,
            _ => p.resolve_policy = summary,
        }
    }
    if features.reload {
        p.reload = reload(&mut c, dir, &status, n);
    }
    c.close();
    p
}

/// The median of three runs of `f`, or its first error.
fn median_of_three(f: impl Fn() -> Result<Duration, String>) -> Result<Duration, String> {
    let mut runs = [f()?, f()?, f()?];
    runs.sort();
    Ok(runs[1])
}

/// `regent check DIR`, timed from spawn to exit, its output discarded; an
/// exit other than 0 (errors found, or could not run) is the error.
fn check(bin: &Path, dir: &Path) -> Result<Duration, String> {
    let start = Instant::now();
    let status = std::process::Command::new(bin)
        .arg("check")
        .arg(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot run `regent check`: {e}"))?;
    let took = start.elapsed();
    if status.success() {
        Ok(took)
    } else {
        Err(format!("`regent check` exited with {status}"))
    }
}

/// Rewrites one policy (a real change), sends SIGHUP and waits for the
/// status file to count one more successful reload; checks the server still
/// answers. Repeated a few times; fewer for huge catalogs.
fn reload(c: &mut Conn, dir: &Path, status: &Path, n: usize) -> Result<Reload, String> {
    let read = || -> Option<Value> { serde_json::from_slice(&std::fs::read(status).ok()?).ok() };
    let succeeded = |v: &Value| v.pointer("/reloads/succeeded").and_then(Value::as_u64);
    let times = if n >= 10_000 { 1 } else { 3 };
    let mut out = Reload {
        wall: Vec::new(),
        server_ms: Vec::new(),
    };
    for k in 0..times {
        let before = read()
            .and_then(|v| succeeded(&v))
            .ok_or("the status file has no reloads.succeeded")?;
        let target = if n > 1 { (n / 3).max(1) } else { 0 };
        if target > 0 {
            std::fs::write(
                dir.join("policies").join(format!("tool_{target}.rego")),
                catalogs::policy(target, k + 1),
            )
            .map_err(|e| e.to_string())?;
        } else {
            std::fs::write(
                dir.join("extra.rego"),
                format!("package extra\n\n# revision {}\n", k + 1),
            )
            .map_err(|e| e.to_string())?;
        }
        let t = Instant::now();
        let sent = std::process::Command::new("kill")
            .args(["-HUP", &c.pid.to_string()])
            .status();
        if !sent.is_ok_and(|s| s.success()) {
            return Err("cannot send SIGHUP".into());
        }
        loop {
            if let Some(v) = read()
                && succeeded(&v).is_some_and(|s| s > before)
            {
                out.wall.push(t.elapsed());
                if let Some(ms) = v.get("lastDurationMs").and_then(Value::as_f64) {
                    out.server_ms.push(ms);
                }
                break;
            }
            if t.elapsed() > START_LIMIT {
                return Err(format!("no successful reload within {START_LIMIT:?}"));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        c.once(Workload::Resolve)
            .map_err(|e| format!("after reload: {e}"))?;
    }
    Ok(out)
}

fn walk_count(dir: &Path) -> usize {
    let mut n = 0;
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            n += if p.is_dir() { walk_count(&p) } else { 1 };
        }
    }
    n
}
