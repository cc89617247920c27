//! Fleet benchmark (issue 33; not a test, no pass/fail): what serving a
//! fleet costs a request.
//!
//! Run: `cargo bench --bench fleet` (release build). Options after `--`:
//! `--rounds N` (default 5), `--resolves N` (pipelined resolves per server
//! per round, default 20000), `--calls N` (confirmed calls per server per
//! round, default 300).
//!
//! Part 1, resolve throughput from a bundle: the same catalog
//! (`examples/manage_files`, YAML rules and Rego) served from its files and
//! from a bundle `regent bundle build` made of it, polled from a bundle
//! server on 127.0.0.1 (a thread here). Both write their decision log to
//! /dev/null, so each line is still built, the bundle's with its `bundles`
//! field. Rounds alternate the two servers; the ratio is the median of the
//! per-round ratios.
//!
//! Part 2, a confirmed destructive `tools/call` on 2026-07-28 (a call,
//! `input_required` with a sealed `requestState`, the retry with the
//! answer, which spends the state and runs `touch`), with spent states kept
//! in the process and in a real `redis-server` on 127.0.0.1 started here
//! (`--request-state-store`). Per call: the retry's latency (p50, p90), the
//! one that goes to Redis. And the Redis round trip alone: the same
//! `SET … NX PX` regent sends, timed from here on one connection.
//!
//! Without `redis-server` on PATH part 2 says so and is skipped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use regent_testkit::{Era, Rounds, Server};
use serde_json::{Value, json};

struct Opts {
    rounds: usize,
    resolves: usize,
    calls: usize,
}

fn opts() -> Opts {
    let mut o = Opts {
        rounds: 5,
        resolves: 20_000,
        calls: 300,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let val = || args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--rounds" => o.rounds = val().parse().expect("--rounds N"),
            "--resolves" => o.resolves = val().parse().expect("--resolves N"),
            "--calls" => o.calls = val().parse().expect("--calls N"),
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

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn us(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

/// Serves `body` to every GET on 127.0.0.1 (304 for its ETag), until the
/// process ends.
fn bundle_server(body: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut head = String::new();
            let mut r = BufReader::new(s.try_clone().unwrap());
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            let _ = if head.to_ascii_lowercase().contains("if-none-match: \"1\"") {
                s.write_all(
                    b"HTTP/1.1 304 Not Modified\r\nETag: \"1\"\r\nConnection: close\r\n\r\n",
                )
            } else {
                s.write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nETag: \"1\"\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .as_bytes(),
                )
                .and_then(|_| s.write_all(&body))
            };
        }
    });
    format!("http://{addr}/manage_files.tar.gz")
}

/// `n` resolves of `manage_files` with up to 32 in flight; requests per
/// second. Answers may come out of order (a slow evaluation moves off the
/// I/O thread), so each response counts, whichever its id.
fn resolves(server: &mut Server, n: usize) -> f64 {
    let params = |i: usize| {
        let action = ["read", "append", "replace", "delete"][i % 4];
        json!({"name": "manage_files", "arguments": {"path": format!("notes/{i}/f.txt"), "action": action, "content": "x"}})
    };
    let answer = |server: &mut Server| loop {
        let r = server.next_message(Instant::now() + Duration::from_secs(20));
        if r.get("id").is_some() && r.get("method").is_none() {
            assert!(r.get("result").is_some(), "resolve failed: {r}");
            return;
        }
    };
    let t = Instant::now();
    let mut in_flight = 0;
    for i in 0..n {
        if in_flight == 32 {
            answer(server);
            in_flight -= 1;
        }
        server.send_request("tools/resolve", params(i));
        in_flight += 1;
    }
    for _ in 0..in_flight {
        answer(server);
    }
    n as f64 / t.elapsed().as_secs_f64()
}

fn part1(o: &Opts, root: &Path) {
    let catalog = regent_testkit::repo_path("examples/manage_files");
    let tarball = root.join("manage_files.tar.gz");
    let out = regent_testkit::regent()
        .args(["bundle", "build"])
        .arg(&catalog)
        .arg("-o")
        .arg(&tarball)
        .output()
        .unwrap();
    assert!(out.status.success(), "bundle build: {out:?}");
    let url = bundle_server(std::fs::read(&tarball).unwrap());
    let cat = catalog.to_str().unwrap();
    let bdir = root.join("bundle-dir");
    let bdir = bdir.to_str().unwrap();

    // The bundle's revision is in its decision-log lines: shown once.
    let log = root.join("decisions.jsonl");
    {
        let mut s = Server::start(
            Era::Legacy,
            &["--bundle-url", &url, "--bundle-dir", bdir, "--decision-log"]
                .into_iter()
                .chain([log.to_str().unwrap()])
                .collect::<Vec<_>>(),
        );
        resolves(&mut s, 1);
        // The log's writer thread writes the line soon after the answer.
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::read_to_string(&log).unwrap_or_default().is_empty() {
            assert!(Instant::now() < deadline, "no decision-log line");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let line = std::fs::read_to_string(&log).unwrap_or_default();
    let first: Value = serde_json::from_str(line.lines().next().unwrap_or("{}")).unwrap();
    println!(
        "a decision-log line from the bundle: bundles = {}",
        first["bundles"]
    );

    let mut files = Server::start(Era::Legacy, &["--decision-log", "/dev/null", cat]);
    let mut bundle = Server::start(
        Era::Legacy,
        &[
            "--decision-log",
            "/dev/null",
            "--bundle-url",
            &url,
            "--bundle-dir",
            bdir,
        ],
    );
    resolves(&mut files, o.resolves / 4);
    resolves(&mut bundle, o.resolves / 4);
    let (mut fr, mut br, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..o.rounds {
        // Alternate which goes first, so a drift in background load hits both.
        let (f, b) = if round % 2 == 0 {
            let f = resolves(&mut files, o.resolves);
            (f, resolves(&mut bundle, o.resolves))
        } else {
            let b = resolves(&mut bundle, o.resolves);
            (resolves(&mut files, o.resolves), b)
        };
        println!(
            "round {}: files {f:.0}/s, bundle {b:.0}/s (load {})",
            round + 1,
            loadavg()
        );
        fr.push(f);
        br.push(b);
        ratios.push(b / f);
    }
    println!(
        "resolve, pipelined (32 in flight), 1 client, decision log to /dev/null: files {:.0}/s, bundle {:.0}/s, bundle ÷ files {:.3} (median of {} per-round ratios, min {:.3}, max {:.3})",
        median(fr),
        median(br),
        median(ratios.clone()),
        ratios.len(),
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(0.0, f64::max),
    );
}

const TOOLS: &str = r#"
tools:
  - name: mark
    description: creates a marker file
    inputSchema:
      type: object
      properties:
        marker: {type: string}
        mode: {type: string, enum: [safe, danger]}
      required: [marker, mode]
    annotations: {readOnlyHint: false, destructiveHint: true}
    resolve:
      - when: {mode: danger}
        confirm: Really create the marker?
    run:
      cli: {program: touch, args: ["--", "{marker}"], cwd: .}
"#;

/// A `redis-server` on 127.0.0.1 without persistence, killed on drop; its
/// port held for it from before it starts (`ClosedPort::for_server`), so no
/// other process can take the port between choosing and binding it.
struct Redis(
    Child,
    regent_testkit::ClosedPort,
    #[allow(dead_code)] tempfile::TempDir,
);

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn redis() -> Option<Redis> {
    let held = regent_testkit::ClosedPort::for_server();
    let port = held.port();
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let r = Redis(child, held, dir);
    let deadline = Instant::now() + regent_testkit::WAIT;
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "redis-server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(r)
}

/// `n` confirmed calls; the retries' latencies (the round that spends the state).
fn confirmed_calls(r: &mut Rounds, n: usize, tag: &str) -> Vec<Duration> {
    let args = json!({"marker": format!("{tag}.marker"), "mode": "danger"});
    let accept = json!({"regent/confirm": {"action": "accept", "content": {}}});
    (0..n)
        .map(|_| {
            let first = r.call(args.clone(), None, None);
            let state = regent_testkit::state_of(&first);
            let t = Instant::now();
            let done = r.call(args.clone(), Some(accept.clone()), Some(&state));
            let took = t.elapsed();
            assert!(
                done["result"]["resultType"] == "complete" && done["result"]["isError"] == false,
                "the confirmed call failed: {done}"
            );
            took
        })
        .collect()
}

/// The Redis round trip alone: `SET regent:bench:<i> 1 NX PX 600000`, one
/// connection, `n` times.
fn redis_round_trips(port: u16, n: usize) -> Vec<Duration> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_nodelay(true).unwrap();
    let mut buf = [0u8; 64];
    let mut v: Vec<Duration> = (0..n)
        .map(|i| {
            let key = format!("regent:bench:{i:032x}");
            let cmd = format!(
                "*6\r\n$3\r\nSET\r\n${}\r\n{key}\r\n$1\r\n1\r\n$2\r\nNX\r\n$2\r\nPX\r\n$6\r\n600000\r\n",
                key.len()
            );
            let t = Instant::now();
            s.write_all(cmd.as_bytes()).unwrap();
            let k = s.read(&mut buf).unwrap();
            let took = t.elapsed();
            assert!(buf[..k].starts_with(b"+OK"), "{:?}", String::from_utf8_lossy(&buf[..k]));
            took
        })
        .collect();
    v.sort();
    v
}

fn part2(o: &Opts, root: &Path) {
    let Some(redis) = redis() else {
        println!("confirmed calls with Redis: skipped, redis-server is not on PATH");
        return;
    };
    let dir = root.join("confirm");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("tools.yaml"), TOOLS).unwrap();
    let key = dir.join("state.key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef-bench-key\n").unwrap();
    let (d, k) = (dir.to_str().unwrap(), key.to_str().unwrap());
    let url = format!("redis://127.0.0.1:{}", redis.1.port());
    let caps = json!({"elicitation": {"form": {}}});
    let base = ["--decision-log", "/dev/null", "--request-state-key-file", k];
    let start = |extra: &[&str]| {
        let mut a: Vec<&str> = base.to_vec();
        a.extend_from_slice(extra);
        a.push(d);
        Rounds::new(Server::start_with(Era::Modern, &a, caps.clone()), "mark")
    };
    let mut local = start(&[]);
    let mut shared = start(&["--request-state-store", &url]);
    confirmed_calls(&mut local, o.calls / 4, "local");
    confirmed_calls(&mut shared, o.calls / 4, "shared");
    let (mut lv, mut sv) = (Vec::new(), Vec::new());
    let mut diffs = Vec::new();
    for round in 0..o.rounds {
        let (l, s) = if round % 2 == 0 {
            let l = confirmed_calls(&mut local, o.calls, "local");
            (l, confirmed_calls(&mut shared, o.calls, "shared"))
        } else {
            let s = confirmed_calls(&mut shared, o.calls, "shared");
            (confirmed_calls(&mut local, o.calls, "local"), s)
        };
        let (mut l, mut s) = (l, s);
        l.sort();
        s.sort();
        let d = percentile(&s, 0.5).as_secs_f64() - percentile(&l, 0.5).as_secs_f64();
        println!(
            "round {}: retry p50 in process {}, Redis {} (load {})",
            round + 1,
            us(percentile(&l, 0.5)),
            us(percentile(&s, 0.5)),
            loadavg()
        );
        diffs.push(d * 1e6);
        lv.extend(l);
        sv.extend(s);
    }
    lv.sort();
    sv.sort();
    let rtt = redis_round_trips(redis.1.port(), 5_000);
    println!(
        "confirmed call's retry (spends the state, runs touch), stdio, 1 client, {} calls each: in process p50 {} p90 {}; Redis p50 {} p90 {}; Redis − in process, median of per-round p50 differences {:.0} µs",
        lv.len(),
        us(percentile(&lv, 0.5)),
        us(percentile(&lv, 0.9)),
        us(percentile(&sv, 0.5)),
        us(percentile(&sv, 0.9)),
        median(diffs)
    );
    println!(
        "Redis round trip alone (SET … NX PX, one connection, 5000): p50 {} p90 {} p99 {}",
        us(percentile(&rtt, 0.5)),
        us(percentile(&rtt, 0.9)),
        us(percentile(&rtt, 0.99))
    );
}

fn main() {
    let o = opts();
    regent_testkit::set_binary(PathBuf::from(env!("CARGO_BIN_EXE_regent")));
    let tmp = tempfile::tempdir().unwrap();
    println!("fleet bench: load average {} at start", loadavg());
    part1(&o, tmp.path());
    part2(&o, tmp.path());
    println!("fleet bench: load average {} at end", loadavg());
}
