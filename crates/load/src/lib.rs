//! End-to-end load generator for regent (issue 6): drives the release binary
//! over stdio (one server process per client, as MCP clients run stdio
//! servers) with raw JSON-RPC lines, and measures throughput and latency for
//! `tools/resolve`, `tools/annotations`, `tools/call` and the floor requests
//! (`tools/list` of a one-tool catalog, `ping`), next to the SEP's TypeScript
//! reference server on the official SDK, all interleaved in one run so their
//! ratios hold on a noisy machine. Then the scale points: start-up, memory,
//! resolve latency and reload time for catalogs of 1 to 10,000 tools. It
//! writes the tables into BENCHMARKS.md and benches/summary.md.
//!
//!     cargo bench --bench load                # the full run (about 5 minutes)
//!     cargo bench --bench load -- --quick     # a smoke run, writes nothing
//!     cargo run --release -p regent-load -- --quick   # the same, run directly
//!
//! The options are [`Args`] (`--help` lists them). `cargo bench --bench load`
//! is `benches/load.rs` in the root package, which hands this crate the
//! release binary Cargo built for it; run directly, the binary builds it.
//!
//! Features that the binary does not have yet (tools/call execution, hot
//! reload, HTTP) are detected from `regent serve --help` or from a failed
//! start and reported as "not available in this build".

mod catalogs;
mod floor;
mod http;
mod machine;
mod peer;
mod report;
mod scale;
mod stats;
mod stdio;
mod workload;

use std::path::PathBuf;
use std::sync::Barrier;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use clap::Parser;
use stats::Samples;
use stdio::{Conn, RunOut, Spawn};
use workload::{Era, Workload};

/// The command line (the table in BENCHMARKS.md, "Reproduce").
#[derive(Debug, Parser)]
#[command(
    name = "regent-load",
    about = "End-to-end load generator for regent: throughput, latency and scale, next to the SEP's TypeScript reference server"
)]
pub struct Args {
    /// One short round, catalogs of 1 and 100 tools, writes nothing: a smoke run.
    #[arg(long)]
    pub quick: bool,
    /// Rounds; every round runs every cell once, interleaved [default: 5, 1 with --quick].
    #[arg(long, value_name = "N")]
    pub rounds: Option<usize>,
    /// Pipelined requests per client per round [default: 20000, 3000 with --quick].
    #[arg(long, value_name = "N", value_parser = number)]
    pub requests: Option<usize>,
    /// Request/response requests per client per round (also HTTP and scale latency)
    /// [default: 5000, 1000 with --quick].
    #[arg(long, value_name = "N", value_parser = number)]
    pub serial_requests: Option<usize>,
    /// Requests in flight per connection when pipelined.
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub window: usize,
    /// Concurrent clients (one server process each over stdio).
    #[arg(long, value_name = "N,...", value_delimiter = ',', value_parser = number, default_value = "1,2")]
    pub clients: Vec<usize>,
    /// Concurrent connections over HTTP (one request at a time on each), for
    /// regent, the TypeScript peer and the bare-axum floor.
    #[arg(long, value_name = "N,...", value_delimiter = ',', value_parser = number, default_value = "1,16")]
    pub http_clients: Vec<usize>,
    /// Catalog sizes for the scale points [default: 1,100,1000,10000; 1,100 with --quick].
    #[arg(long, value_name = "N,...", value_delimiter = ',', value_parser = number)]
    pub scale: Option<Vec<usize>>,
    /// Leave out the TypeScript peer.
    #[arg(long)]
    pub no_peer: bool,
    /// Leave out the scale points.
    #[arg(long)]
    pub no_scale: bool,
    /// Print the results only: do not rewrite BENCHMARKS.md and benches/summary.md.
    #[arg(long)]
    pub no_write: bool,
    /// Measure another regent binary (an older build, a branch) [default: the release build].
    #[arg(long, value_name = "PATH")]
    pub bin: Option<PathBuf>,
    /// Measure another regent binary too, its resolve cells interleaved with
    /// this one's for a before/after in one run.
    #[arg(long, value_name = "PATH")]
    pub baseline: Option<PathBuf>,
    /// Measure nothing: serve the bare-axum floor on 127.0.0.1, print its
    /// port, and stop when standard input ends (for wrk, or callgrind:
    /// `benches/callgrind/http.py`).
    #[arg(long)]
    pub serve_floor: bool,
}

/// `--serve-floor`: the floor alone, until standard input ends.
pub fn serve_floor() -> Result<(), String> {
    let floor = floor::Floor::start()?;
    println!("{}", floor.port);
    std::io::Write::flush(&mut std::io::stdout()).map_err(|e| e.to_string())?;
    let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
    drop(floor);
    Ok(())
}

/// A count, `_` allowed between digits (`10_000`).
fn number(s: &str) -> Result<usize, String> {
    s.trim()
        .replace('_', "")
        .parse()
        .map_err(|e| format!("{s:?} is not a number: {e}"))
}

impl Args {
    /// The options of a run, measuring `bin` unless `--bin` names another.
    pub fn opts(self, bin: PathBuf) -> Opts {
        let q = self.quick;
        let scale = self.scale.unwrap_or_else(|| {
            if q {
                vec![1, 100]
            } else {
                vec![1, 100, 1_000, 10_000]
            }
        });
        Opts {
            rounds: self.rounds.unwrap_or(if q { 1 } else { 5 }),
            requests: self.requests.unwrap_or(if q { 3_000 } else { 20_000 }),
            serial_requests: self
                .serial_requests
                .unwrap_or(if q { 1_000 } else { 5_000 }),
            window: self.window,
            clients: self.clients,
            http_clients: self.http_clients,
            scale: if self.no_scale { Vec::new() } else { scale },
            peer: !self.no_peer,
            write: !(q || self.no_write),
            quick: q,
            default_bin: self.bin.is_none(),
            bin: self.bin.unwrap_or(bin),
            baseline: self.baseline,
        }
    }
}

/// The options of a run.
#[derive(Debug, Clone)]
pub struct Opts {
    pub rounds: usize,
    pub requests: usize,
    pub serial_requests: usize,
    pub window: usize,
    pub clients: Vec<usize>,
    pub http_clients: Vec<usize>,
    pub scale: Vec<usize>,
    pub peer: bool,
    pub write: bool,
    pub quick: bool,
    pub bin: PathBuf,
    /// `bin` is the build this run was given, not one named by `--bin`.
    pub default_bin: bool,
    pub baseline: Option<PathBuf>,
}

/// regent with its decision log sent to /dev/null.
pub const NO_LOG: &str = "regent, decision log to /dev/null";

/// The `--baseline` binary, decision log to /dev/null.
pub const BASELINE: &str = "baseline regent, decision log to /dev/null";

/// How requests are sent on each connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Up to `window` requests in flight per connection.
    Pipelined,
    /// One request at a time: send, wait for the answer, send the next.
    Serial,
}

/// A server under test, with the connections opened to it so far (one
/// process each).
pub struct Target {
    pub server: &'static str,
    pub era: Era,
    pub spawn: Spawn,
    pub workloads: Vec<Workload>,
    pub conns: Vec<Conn>,
    pub logs: PathBuf,
}

impl Target {
    /// Opens connections until there are `n`, each warmed up.
    fn connect(&mut self, n: usize, warmup: usize) -> Result<(), String> {
        while self.conns.len() < n {
            let log = self.logs.join(format!(
                "{}-{}-{}.stderr",
                self.server
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                    .collect::<String>(),
                self.era.label(),
                self.conns.len()
            ));
            let mut c = Conn::spawn(&self.spawn, self.era, &log)?;
            c.handshake()?;
            for &w in &self.workloads {
                c.once(w)?;
                let b = Barrier::new(1);
                let out = c.run_pipelined(w, warmup_for(w, warmup), 16, &b);
                if let Some(e) = out.first_error {
                    return Err(format!("warm-up of {}: {e}", w.method()));
                }
            }
            self.conns.push(c);
        }
        Ok(())
    }
}

/// Execution forks a process per call: far fewer of those.
fn warmup_for(w: Workload, n: usize) -> usize {
    if w == Workload::Call { n / 50 } else { n }
}

/// One measured cell: a server, a request, a mode and a number of clients,
/// over every round.
#[derive(Debug)]
pub struct Cell {
    pub server: &'static str,
    pub era: Era,
    pub workload: Workload,
    pub mode: Mode,
    pub clients: usize,
    pub requests_per_client: usize,
    /// Aggregate requests per second, one figure per round.
    pub rates: Vec<f64>,
    pub samples: Samples,
    pub errors: usize,
    pub first_error: Option<String>,
}

impl Cell {
    /// An empty cell for one server, request, mode and number of clients.
    pub fn new(
        server: &'static str,
        era: Era,
        workload: Workload,
        mode: Mode,
        clients: usize,
        requests_per_client: usize,
    ) -> Cell {
        Cell {
            server,
            era,
            workload,
            mode,
            clients,
            requests_per_client,
            rates: Vec::new(),
            samples: Samples::default(),
            errors: 0,
            first_error: None,
        }
    }

    /// Adds one round to the cell in `cells` with `fresh`'s server, era,
    /// request, mode and clients (appending `fresh` if there is none yet):
    /// its aggregate rate, every client's samples and errors.
    pub fn record(cells: &mut Vec<Cell>, fresh: Cell, outs: Vec<RunOut>) -> &mut Cell {
        let idx = match cells.iter().position(|c| {
            c.server == fresh.server
                && c.era == fresh.era
                && c.workload == fresh.workload
                && c.mode == fresh.mode
                && c.clients == fresh.clients
        }) {
            Some(i) => i,
            None => {
                cells.push(fresh);
                cells.len() - 1
            }
        };
        let cell = &mut cells[idx];
        cell.rates.push(round_rate(&outs));
        for o in outs {
            cell.samples.extend(&o.samples);
            cell.errors += o.errors;
            if cell.first_error.is_none() {
                cell.first_error = o.first_error;
            }
        }
        cell
    }

    pub fn rate(&self) -> Option<f64> {
        if self.errors > 0 {
            return None;
        }
        stats::median(self.rates.clone())
    }
}

/// Runs one round of one cell: every client at once, released together.
fn measure(
    target: &mut Target,
    w: Workload,
    mode: Mode,
    clients: usize,
    n: usize,
    window: usize,
) -> Vec<RunOut> {
    let conns = &mut target.conns[..clients];
    let pids: Vec<u32> = conns.iter().map(|c| c.pid).collect();
    let guard = Watchdog::start(pids, Duration::from_secs(120));
    let outs = all_at_once(conns, |c, b| match mode {
        Mode::Pipelined => c.run_pipelined(w, n, window, b),
        Mode::Serial => c.run_serial(w, n, b),
    });
    guard.stop();
    outs
}

/// Runs `f` on every client at once, each on a thread of its own, released
/// together by one barrier; their measurements in the clients' order.
fn all_at_once<C: Send>(
    clients: &mut [C],
    f: impl Fn(&mut C, &Barrier) -> RunOut + Sync,
) -> Vec<RunOut> {
    let barrier = Barrier::new(clients.len());
    thread::scope(|s| {
        let handles: Vec<_> = clients
            .iter_mut()
            .map(|c| {
                let (b, f) = (&barrier, &f);
                s.spawn(move || f(c, b))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("client thread"))
            .collect()
    })
}

/// Aggregate requests per second of one round: every client's answers over
/// the span from the first client's start to the last one's end.
fn round_rate(outs: &[RunOut]) -> f64 {
    let start = outs.iter().filter_map(|o| o.start).min();
    let end = outs.iter().filter_map(|o| o.end).max();
    let total: usize = outs.iter().map(|o| o.samples.len()).sum();
    match (start, end) {
        (Some(s), Some(e)) => stats::rate(total, e - s),
        _ => 0.0,
    }
}

/// Kills the given processes if a measurement hangs past its deadline, so a
/// stuck server fails the cell instead of the whole run.
struct Watchdog {
    done: mpsc::Sender<()>,
    thread: thread::JoinHandle<()>,
}

impl Watchdog {
    fn start(pids: Vec<u32>, limit: Duration) -> Watchdog {
        let (done, wait) = mpsc::channel();
        let thread = thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(limit) {
                eprintln!("load: a measurement ran past {limit:?}; stopping its servers");
                for pid in pids {
                    let _ = std::process::Command::new("kill")
                        .args(["-9", &pid.to_string()])
                        .status();
                }
            }
        });
        Watchdog { done, thread }
    }

    fn stop(self) {
        let _ = self.done.send(());
        let _ = self.thread.join();
    }
}

/// What the binary under test can do.
#[derive(Debug, Clone)]
pub struct Features {
    /// `Err` says why tools/call cannot be measured.
    pub exec: Result<(), String>,
    /// `regent serve --status-file` (hot reload, issue 4).
    pub reload: bool,
    /// `regent serve --http ADDR` (issue 8).
    pub http: bool,
}

fn serve_help(bin: &std::path::Path) -> String {
    regent_testkit::regent_at(bin)
        .args(["serve", "--help"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// Whether a tool with a `run:` section loads and its call succeeds.
fn detect_exec(bin: &std::path::Path, root: &std::path::Path) -> Result<(), String> {
    let dir = catalogs::call(root).map_err(|e| e.to_string())?;
    let spawn = Spawn::regent(
        bin,
        vec!["serve".into(), dir.to_string_lossy().into_owned()],
    );
    let log = root.join("detect-exec.stderr");
    let mut c = Conn::spawn(&spawn, Era::Legacy, &log)?;
    let first_line = |c: &Conn| {
        c.stderr_tail()
            .lines()
            .find(|l| l.contains("error"))
            .unwrap_or("")
            .trim()
            .to_string()
    };
    if c.handshake().is_err() {
        let why = first_line(&c);
        return Err(format!(
            "the binary does not load a tool with a `run:` section ({why})"
        ));
    }
    c.once(Workload::Call)
        .map(|_| ())
        .map_err(|e| format!("tools/call of `echo ok` failed: {e}"))
}

/// Everything the report needs.
pub struct Run {
    pub opts: Opts,
    pub machine: machine::Machine,
    pub load_before: String,
    pub load_after: String,
    pub started: String,
    pub took: Duration,
    pub features: Features,
    pub peer: Result<String, String>,
    pub cells: Vec<Cell>,
    pub http: Vec<Cell>,
    /// Why a server was not measured over HTTP.
    pub http_notes: Vec<String>,
    pub scale: Vec<scale::Point>,
    pub notes: Vec<String>,
}

/// Measures, prints the results and, unless told not to, writes them.
pub fn run(opts: Opts) {
    let t0 = Instant::now();
    let machine = machine::describe();
    let load_before = machine::loadavg();
    let started = utc_now();
    eprintln!(
        "load: {} cores, {}, load average {load_before}; binary {}",
        machine.cores,
        machine.cpu,
        opts.bin.display()
    );
    let mut notes = Vec::new();
    if opts.default_bin && !opts.bin.to_string_lossy().contains("/release/") {
        notes.push(format!(
            "the binary {} is not a release build: run this with `cargo bench`",
            opts.bin.display()
        ));
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path();
    let logs = root.join("logs");
    std::fs::create_dir_all(&logs).expect("log dir");
    let one_tool = catalogs::one_tool(root).expect("write the one-tool catalog");

    let help = serve_help(&opts.bin);
    let features = Features {
        exec: detect_exec(&opts.bin, root),
        reload: help.contains("--status-file"),
        http: help.contains("--http"),
    };
    if let Err(e) = &features.exec {
        eprintln!("load: tools/call: not available in this build ({e})");
    }
    if !features.reload {
        eprintln!(
            "load: reload: not available in this build (`regent serve --help` has no --status-file)"
        );
    }
    if !features.http {
        eprintln!("load: HTTP: not available in this build (`regent serve --help` has no --http)");
    }

    let peer = if opts.peer {
        peer::prepare().map(|spawn| (spawn, peer::sdk_version()))
    } else {
        Err("skipped (--no-peer)".into())
    };
    if let Err(e) = &peer {
        eprintln!("load: TypeScript peer: not measured ({e})");
    }

    let regent = |dir: &PathBuf| {
        Spawn::regent(
            &opts.bin,
            vec!["serve".into(), dir.to_string_lossy().into_owned()],
        )
    };
    let mut targets = vec![Target {
        server: "regent",
        era: Era::Legacy,
        spawn: regent(&one_tool),
        workloads: vec![
            Workload::List,
            Workload::Ping,
            Workload::Resolve,
            Workload::Annotations,
        ],
        conns: Vec::new(),
        logs: logs.clone(),
    }];
    if let Ok((spawn, _)) = &peer {
        targets.push(Target {
            server: "TypeScript SDK (SEP reference)",
            era: Era::Legacy,
            spawn: spawn.clone(),
            workloads: vec![Workload::List, Workload::Ping, Workload::Resolve],
            conns: Vec::new(),
            logs: logs.clone(),
        });
    }
    targets.push(Target {
        server: "regent",
        era: Era::Modern,
        spawn: regent(&one_tool),
        workloads: vec![Workload::List, Workload::Resolve, Workload::ResolveDraft],
        conns: Vec::new(),
        logs: logs.clone(),
    });
    // The decision log (issue 3) writes a line per resolve, to stderr by
    // default. The same server with the log sent to /dev/null shows what the
    // log costs, and is the server every comparison of policies uses.
    if help.contains("--decision-log") {
        let shipped = catalogs::shipped(root, "manage_files").expect("copy examples/manage_files");
        let github = catalogs::shipped(root, "github_api").expect("copy examples/github_api");
        let mut servers = vec![(NO_LOG, opts.bin.clone())];
        if let Some(b) = &opts.baseline {
            servers.push((BASELINE, b.clone()));
        }
        for (server, bin) in servers {
            let no_log = |dir: &PathBuf| {
                Spawn::regent(
                    &bin,
                    vec![
                        "serve".into(),
                        "--decision-log".into(),
                        "/dev/null".into(),
                        dir.to_string_lossy().into_owned(),
                    ],
                )
            };
            let mut push = |era, dir: &PathBuf, workloads| {
                targets.push(Target {
                    server,
                    era,
                    spawn: no_log(dir),
                    workloads,
                    conns: Vec::new(),
                    logs: logs.clone(),
                })
            };
            push(
                Era::Legacy,
                &one_tool,
                vec![Workload::List, Workload::Resolve],
            );
            push(
                Era::Modern,
                &one_tool,
                vec![Workload::Resolve, Workload::ResolveDraft],
            );
            push(Era::Legacy, &shipped, vec![Workload::ResolveShipped]);
            push(Era::Legacy, &github, vec![Workload::ResolveGithub]);
        }
    }
    if features.exec.is_ok() {
        let call = catalogs::call(root).expect("call catalog");
        targets.push(Target {
            server: "regent",
            era: Era::Legacy,
            spawn: regent(&call),
            workloads: vec![Workload::Call],
            conns: Vec::new(),
            logs: logs.clone(),
        });
    }

    let cells = throughput(&opts, &mut targets, &mut notes);
    drop(targets);

    let regent_http = features.http.then(|| regent(&one_tool));
    let (http, mut http_notes) = http::run(&opts, regent_http.as_ref(), peer.is_ok(), &logs);
    if !features.http {
        http_notes.insert(
            0,
            "regent over HTTP: not available in this build (`regent serve --help` has no --http)"
                .into(),
        );
    }
    notes.extend(
        http_notes
            .iter()
            .filter(|n| !n.contains("not available"))
            .cloned(),
    );

    let scale = scale::run(&opts, root, &features);

    let run = Run {
        load_after: machine::loadavg(),
        took: t0.elapsed(),
        opts,
        machine,
        load_before,
        started,
        features,
        peer: peer.map(|(_, v)| v),
        cells,
        http,
        http_notes,
        scale,
        notes,
    };
    let text = report::render(&run);
    println!("{text}");
    if run.opts.write {
        match report::write(&run, &text) {
            Ok(paths) => eprintln!("load: wrote {paths}"),
            Err(e) => eprintln!("load: cannot write the report: {e}"),
        }
    }
}

/// The stdio cells: every round runs every cell once, workloads side by side
/// across servers, so a burst of background load hits all of them alike.
fn throughput(opts: &Opts, targets: &mut [Target], notes: &mut Vec<String>) -> Vec<Cell> {
    let max_clients = opts.clients.iter().copied().max().unwrap_or(1);
    let warmup = (opts.requests / 4).max(500);
    let mut broken: Vec<bool> = vec![false; targets.len()];
    for (i, t) in targets.iter_mut().enumerate() {
        eprintln!(
            "load: starting {} × {} ({})",
            max_clients,
            t.server,
            t.era.label()
        );
        if let Err(e) = t.connect(max_clients, warmup) {
            notes.push(format!(
                "{} ({}) could not be measured: {e}",
                t.server,
                t.era.label()
            ));
            eprintln!("load: {} ({}): {e}", t.server, t.era.label());
            broken[i] = true;
        }
    }
    let mut cells: Vec<Cell> = Vec::new();
    let all_workloads = [
        Workload::List,
        Workload::Ping,
        Workload::Resolve,
        Workload::ResolveDraft,
        Workload::ResolveShipped,
        Workload::ResolveGithub,
        Workload::Annotations,
        Workload::Call,
    ];
    for round in 0..opts.rounds {
        eprintln!(
            "load: round {}/{} (load average {})",
            round + 1,
            opts.rounds,
            machine::loadavg()
        );
        for mode in [Mode::Pipelined, Mode::Serial] {
            for &clients in &opts.clients {
                for w in all_workloads {
                    for (ti, t) in targets.iter_mut().enumerate() {
                        if broken[ti] || !t.workloads.contains(&w) {
                            continue;
                        }
                        let n = match mode {
                            Mode::Pipelined => opts.requests,
                            Mode::Serial => opts.serial_requests,
                        };
                        // A call forks a process: a fixed, smaller count.
                        let n = if w == Workload::Call {
                            (n / 20).max(100)
                        } else {
                            n
                        };
                        let outs = measure(t, w, mode, clients, n, opts.window);
                        let fresh = Cell::new(t.server, t.era, w, mode, clients, n);
                        let cell = Cell::record(&mut cells, fresh, outs);
                        if let Some(e) = &cell.first_error {
                            eprintln!("load: {} {} failed: {e}", t.server, w.method());
                            broken[ti] = cell.errors > 0 && outs_fatal(e);
                        }
                    }
                }
            }
        }
    }
    cells
}

/// A dead server cannot serve the remaining cells.
fn outs_fatal(e: &str) -> bool {
    e.contains("end of output") || e.contains("failed:")
}

/// The current time in UTC as `YYYY-MM-DD HH:MM UTC`.
fn utc_now() -> String {
    chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string()
}
