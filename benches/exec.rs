//! What running a tool costs on top of the program itself: rendering a call
//! in process (argv for the git example, URL and headers for the GitHub
//! example), starting a program through regent's executor against starting
//! it directly, and whole `tools/call` round trips through the real binary
//! over stdio with rmcp's client (a command, and an HTTP request to a local
//! server). Criterion reports means; the round trips print p50/p90/p99.
//!
//!     cargo bench --bench exec

use std::hint::black_box;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use criterion::{Criterion, criterion_group};
use regent_testkit::rmcp_client::{self, TestClient};
use regent_testkit::{Era, catalog};
use rmcp::model::CallToolRequestParams;
use serde_json::json;

use regent::catalog::{self, BuildOptions, Catalog};
use regent::run_plan::RunSpec;
use regent::source::Source;

fn load(dir: &Path) -> Catalog {
    let source = Source::load(&[dir.to_path_buf()]).expect("load");
    catalog::build(&source, &BuildOptions::default()).expect("build")
}

/// What `tool` of `cat` runs for `args`.
fn spec<'a>(cat: &'a Catalog, tool: &str, args: &serde_json::Value) -> &'a RunSpec {
    cat.tool(tool)
        .and_then(|t| t.run.as_ref())
        .and_then(|run| run.select(args))
        .unwrap_or_else(|| panic!("{tool} runs nothing for {args}"))
}

fn render(c: &mut Criterion) {
    let git = load(&regent_testkit::repo_path("examples/git"));
    let args = json!({"repo": "/srv/repo", "command": "log", "limit": 20, "paths": ["src", "docs/a b.md"]});
    let RunSpec::Cli(cli) = spec(&git, "git", &args) else {
        panic!("git runs a command")
    };
    c.bench_function("render git log argv", |b| {
        b.iter(|| black_box(cli.prepare(black_box(&args)).expect("prepare")))
    });

    let gh = load(&regent_testkit::repo_path("examples/github_api"));
    let args = json!({"method": "POST", "owner": "acme", "repo": "payroll", "path": "issues/12/comments", "body": {"body": "hi"}});
    let RunSpec::Http(http) = spec(&gh, "github_api", &args) else {
        panic!("github_api sends requests")
    };
    c.bench_function("render github_api request", |b| {
        b.iter(|| black_box(http.prepare(black_box(&args)).expect("prepare")))
    });
}

fn spawn(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    c.bench_function("spawn /bin/true directly (tokio::process)", |b| {
        b.iter(|| {
            rt.block_on(async {
                tokio::process::Command::new("true")
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .status()
                    .await
                    .unwrap()
            })
        })
    });
    let dir = catalog(&[(
        "t.yaml",
        "tools:\n  - name: t\n    inputSchema: {type: object}\n    run: {cli: {program: true}}\n",
    )]);
    let cat = load(dir.path());
    let RunSpec::Cli(cli) = spec(&cat, "t", &json!({})) else {
        panic!("t runs a command")
    };
    let prepared = cli.prepare(&json!({})).unwrap();
    c.bench_function("spawn /bin/true through regent's executor", |b| {
        b.iter(|| {
            rt.block_on(regent::exec::cli::run(
                &prepared,
                cli.timeout,
                cli.max_output,
                std::future::pending::<()>(),
            ))
        })
    });
}

/// A minimal HTTP/1.1 server answering every request with a small JSON body.
fn http_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut out = stream;
                loop {
                    let mut len = 0usize;
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                            break;
                        }
                        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; len];
                    let _ = reader.read_exact(&mut body);
                    let body = br#"{"ok":true}"#;
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    );
                    // One write: two small ones would meet Nagle's algorithm and
                    // the client's delayed ACK, and measure 40 ms of that.
                    let mut response = head.into_bytes();
                    response.extend_from_slice(body);
                    if out.write_all(&response).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

/// p50/p90/p99 of sequential tools/call round trips.
fn round_trips() {
    let port = http_server();
    let tools = format!(
        "tools:\n  - name: cmd\n    inputSchema: {{type: object}}\n    run: {{cli: {{program: true}}}}\n  - name: api\n    inputSchema: {{type: object}}\n    run: {{http: {{method: GET, base: \"http://127.0.0.1:{port}\", path: /x}}}}\n"
    );
    let dir = catalog(&[("t.yaml", &tools)]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    println!(
        "\n| tools/call round trip | decision log | p50 | p90 | p99 |\n| --- | --- | --- | --- | --- |"
    );
    // The decision log to a file, then the same with each intent line
    // fsynced before the call runs (`--decision-log-sync`, issue 28).
    for (flags, log_label) in [
        (&[][..], "file"),
        (&["--decision-log-sync"][..], "file, `--decision-log-sync`"),
    ] {
        rt.block_on(async {
            let log = dir.path().join("decisions.jsonl");
            let mut cmd = tokio::process::Command::from(regent_testkit::regent());
            cmd.arg("serve")
                .arg(dir.path())
                .arg("--decision-log")
                .arg(&log)
                .args(flags)
                .env("RUST_LOG", "regent=warn");
            let (client, _child) = rmcp_client::connect_stdio(
                cmd,
                TestClient::default(),
                rmcp_client::mode(Era::Legacy),
            )
            .await;
            for (tool, label) in [
                ("cmd", "command (`true`)"),
                ("api", "http GET, local server"),
            ] {
                let call = || client.call_tool(CallToolRequestParams::new(tool));
                for _ in 0..50 {
                    call().await.unwrap();
                }
                let mut times = Vec::new();
                for _ in 0..500 {
                    let t = Instant::now();
                    let r = call().await.unwrap();
                    times.push(t.elapsed().as_secs_f64() * 1000.0);
                    assert_eq!(r.is_error, Some(false));
                }
                times.sort_by(|a, b| a.total_cmp(b));
                let p = |q: f64| times[((times.len() as f64 - 1.0) * q) as usize];
                println!(
                    "| {label} | {log_label} | {:.2} ms | {:.2} ms | {:.2} ms |",
                    p(0.5),
                    p(0.9),
                    p(0.99)
                );
            }
            let _ = client.cancel().await;
        });
    }
}

criterion_group!(benches, render, spawn);

fn main() {
    regent_testkit::set_binary(env!("CARGO_BIN_EXE_regent"));
    benches();
    Criterion::default().configure_from_args().final_summary();
    round_trips();
}
