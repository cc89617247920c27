//! Reload benchmark (not a test, no pass/fail): how long a rebuild of a
//! 500-tool, 500-policy catalog takes, how long from saving a file to the
//! new answer, and how slow requests get while a reload runs.
//!
//! Run: `cargo bench --bench reload` (release build). Options after `--`:
//! `--tools N` (default 500), `--rebuilds N` (default 20), `--saves N`
//! (default 10), `--keep DIR` to leave the generated catalog in DIR,
//! `--server PATH` to drive another `regent` binary (to compare builds),
//! `--skip-rebuilds` to run part 2 only.
//!
//! Part 1 builds in-process (`Source::load` + `catalog::build`, exactly what
//! a reload does). Part 2 spawns the real `regent serve` binary, resolves in
//! a loop from a client thread, atomically replaces one policy file, and
//! reports the time from the rename to the first response carrying the new
//! answer (debounce included), and request round-trip times while reloading.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use regent::catalog::{self, BuildOptions};
use regent::source::Source;
use regent_testkit::{Era, Server};
use serde_json::{Value, json};

struct Opts {
    tools: usize,
    rebuilds: usize,
    saves: usize,
    keep: Option<PathBuf>,
    server: PathBuf,
    skip_rebuilds: bool,
}

fn opts() -> Opts {
    let mut o = Opts {
        tools: 500,
        rebuilds: 20,
        saves: 10,
        keep: None,
        server: PathBuf::from(env!("CARGO_BIN_EXE_regent")),
        skip_rebuilds: false,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let val = || args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--tools" => o.tools = val().parse().expect("--tools N"),
            "--rebuilds" => o.rebuilds = val().parse().expect("--rebuilds N"),
            "--saves" => o.saves = val().parse().expect("--saves N"),
            "--keep" => o.keep = Some(PathBuf::from(val())),
            "--server" => o.server = PathBuf::from(val()),
            "--skip-rebuilds" => {
                o.skip_rebuilds = true;
                i += 1;
                continue;
            }
            // `cargo bench` passes `--bench`; ignore anything else.
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    o
}

/// Ten tools per YAML file, one policy file per tool, a shared library
/// package and a data file: the shape of a large real catalog.
fn generate(dir: &Path, tools: usize) {
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::create_dir_all(dir.join("policies")).unwrap();
    std::fs::write(
        dir.join("policies/lib.rego"),
        "package lib.paths\n\nimport rego.v1\n\nprotected(p) if startswith(p, data.protected[_])\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("data.json"),
        r#"{"protected": ["/etc", "/usr", "/var/lib"]}"#,
    )
    .unwrap();
    for file in 0..tools.div_ceil(10) {
        let mut y = String::from("tools:\n");
        for n in file * 10..((file + 1) * 10).min(tools) {
            y.push_str(&format!(
                r#"  - name: tool_{n:04}
    title: Tool {n}
    description: Operate on files, variant {n}
    inputSchema:
      type: object
      properties:
        path: {{type: string}}
        action: {{type: string, enum: [read, append, replace, delete]}}
        count: {{type: integer, minimum: 0}}
      required: [path, action]
    annotations:
      readOnlyHint: false
      destructiveHint: true
      idempotentHint: false
      openWorldHint: false
    resolve:
      - when: {{action: read}}
        annotations: {{readOnlyHint: true, destructiveHint: false, idempotentHint: true}}
      - when: {{action: append}}
        annotations: {{destructiveHint: false}}
    policy: tools.t{n:04}
"#
            ));
            std::fs::write(dir.join(format!("policies/t{n:04}.rego")), policy(n, "1")).unwrap();
        }
        std::fs::write(dir.join(format!("tools/file_{file:03}.yaml")), y).unwrap();
    }
}

fn policy(n: usize, answer: &str) -> String {
    format!(
        r#"package tools.t{n:04}

import rego.v1

annotations := {{"destructiveHint": false}} if {{
	input.arguments.action == "replace"
	not data.lib.paths.protected(input.arguments.path)
}}

meta := {{"bench/answer": "{answer}", "bench/tool": {n}}}
"#
    )
}

fn stats(label: &str, mut xs: Vec<Duration>) {
    if xs.is_empty() {
        println!("{label}: no samples");
        return;
    }
    xs.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let pct = |p: f64| xs[((xs.len() as f64 - 1.0) * p).round() as usize];
    println!(
        "{label}: n={} min={:.2} ms median={:.2} ms p99={:.2} ms max={:.2} ms",
        xs.len(),
        ms(xs[0]),
        ms(pct(0.5)),
        ms(pct(0.99)),
        ms(*xs.last().unwrap())
    );
}

/// CPU time used by this process so far (all threads).
fn cpu_time() -> Duration {
    // SAFETY: getrusage fills the struct it is given and nothing else.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn rebuilds(dir: &Path, n: usize) {
    let paths = vec![dir.to_path_buf()];
    let opts = BuildOptions::default();
    let (mut load, mut build, mut total, mut cpu) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // One warm-up, then n measured rebuilds.
    for i in 0..=n {
        let c0 = cpu_time();
        let t0 = Instant::now();
        let source = Source::load(&paths).expect("catalog loads");
        let t1 = Instant::now();
        let catalog = catalog::build(&source, &opts).expect("catalog builds");
        let t2 = Instant::now();
        let c2 = cpu_time();
        drop(source);
        if i == 0 {
            println!("catalog: {} tools", catalog.tools().len());
            continue;
        }
        load.push(t1 - t0);
        build.push(t2 - t1);
        total.push(t2 - t0);
        cpu.push(c2 - c0);
        drop(catalog);
    }
    stats("rebuild, read+parse (Source::load)", load);
    stats("rebuild, compile+warm (catalog::build)", build);
    stats("rebuild, total", total);
    stats("rebuild, cpu time (all threads)", cpu);
}

/// The client side of part 2: a resolve loop on the real binary (the kit's
/// stdio client, 2025-11-25 session; it shows regent's stderr if it fails).
fn save_to_answer(dir: &Path, saves: usize) {
    let mut cmd = regent_testkit::regent();
    cmd.args(["serve", dir.to_str().unwrap()])
        .env("RUST_LOG", "regent=warn");
    let mut server = Server::spawn(Era::Legacy, cmd);
    let mut call = |method: &str, params: Value| -> (Value, Duration) {
        let t = Instant::now();
        let v = server.request(method, params);
        (v, t.elapsed())
    };
    let target = 250usize;
    let args = json!({"name": format!("tool_{target:04}"), "arguments": {"path": "/srv/x", "action": "replace"}});
    // Warm the path before measuring.
    for _ in 0..200 {
        call("tools/resolve", args.clone());
    }
    let mut idle = Vec::new();
    for _ in 0..2000 {
        idle.push(call("tools/resolve", args.clone()).1);
    }
    stats("request round trip, idle", idle);

    let (mut to_answer, mut during, mut rebuild) = (Vec::new(), Vec::new(), Vec::new());
    // Requests over 5 ms: (round trip, time since the save, saw the new answer yet).
    let mut slow: Vec<(Duration, Duration, bool)> = Vec::new();
    let file = dir.join(format!("policies/t{target:04}.rego"));
    for save in 0..saves {
        let answer = json!(format!("{}", save + 2));
        let tmp = dir.join("policies/.bench.tmp");
        std::fs::write(&tmp, policy(target, answer.as_str().unwrap())).unwrap();
        let saved = Instant::now();
        std::fs::rename(&tmp, &file).unwrap();
        // Resolve until the new answer shows, then 200 ms more: the swap and
        // the freeing of the old catalog happen around that moment.
        let mut switched: Option<Instant> = None;
        loop {
            let (v, took) = call("tools/resolve", args.clone());
            if v.get("error").is_some() {
                panic!("error during reload: {v}");
            }
            during.push(took);
            if took > Duration::from_millis(5) {
                slow.push((took, saved.elapsed(), switched.is_some()));
            }
            if switched.is_none() && v["result"]["_meta"]["bench/answer"] == answer {
                to_answer.push(saved.elapsed());
                switched = Some(Instant::now());
            }
            if switched.is_some_and(|t| t.elapsed() > Duration::from_millis(200)) {
                break;
            }
            if saved.elapsed() > Duration::from_secs(10) {
                panic!("no new answer within 10 s");
            }
        }
        let (st, _) = call("regent/status", json!({}));
        if let Some(ms) = st["result"]["lastDurationMs"].as_f64() {
            rebuild.push(Duration::from_secs_f64(ms / 1000.0));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    stats(
        "saved file -> new answer (250 ms debounce included)",
        to_answer,
    );
    stats(
        "request round trip, from save to 200 ms after the new answer",
        during,
    );
    println!("requests over 5 ms in that window: {}", slow.len());
    slow.sort_by_key(|s| std::cmp::Reverse(s.0));
    for (took, at, after) in slow.iter().take(5) {
        println!(
            "  {:.2} ms, sent {:.0} ms after the save, {} the new answer",
            took.as_secs_f64() * 1000.0,
            at.as_secs_f64() * 1000.0 - took.as_secs_f64() * 1000.0,
            if *after { "after" } else { "before" }
        );
    }
    stats(
        "reload duration reported by the server (regent/status lastDurationMs)",
        rebuild,
    );
    server.finish();
}

fn main() {
    // What `regent` itself does at start-up (see main.rs), so the in-process
    // numbers match the server's.
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        // SAFETY: no other thread exists yet.
        unsafe { std::env::set_var("RUST_LIB_BACKTRACE", "0") };
    }
    let o = opts();
    let tmp = tempfile::tempdir().unwrap();
    let dir = o.keep.clone().unwrap_or_else(|| tmp.path().join("catalog"));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    generate(&dir, o.tools);
    println!(
        "machine: {} cpus, load average {} (other processes skew every number below)",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        loadavg()
    );
    if !o.skip_rebuilds {
        rebuilds(&dir, o.rebuilds);
    }
    println!("server: {}", o.server.display());
    regent_testkit::set_binary(&o.server);
    save_to_answer(&dir, o.saves);
    println!("load average after: {}", loadavg());
}
