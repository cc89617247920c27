//! `serve --http` over a request's and a call's life: clients that leave
//! mid-request or mid-call, deadlines, and shutdown finishing what is in
//! flight while refusing what is new.

use crate::common;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::http::catalog;
use common::http::{HttpServer, McpHttp, Req, connect, read_response, send};
use common::{Era, WAIT};
use serde_json::{Value, json};

/// Sends the head of `req` and the first half of its body, and leaves the
/// connection open: a request in flight for as long as the test wants.
fn half_sent(http: &HttpServer, req: &Req) -> TcpStream {
    let mut s = connect(http.addr);
    s.write_all(&req.head(http.addr)).unwrap();
    s.write_all(&req.body[..req.body.len() / 2]).unwrap();
    s.flush().unwrap();
    s
}

#[test]
fn clients_that_disconnect_mid_request_do_not_disturb_the_server() {
    let http = HttpServer::start(&[&catalog("examples/manage_files")]);
    for era in Era::ALL {
        let mut c = McpHttp::connect(http.addr, era);
        let msg = c.message(
            "tools/resolve",
            json!({"name": "manage_files", "arguments": {"path": "a", "action": "read"}}),
        );
        let streams: Vec<TcpStream> = (0..5)
            .map(|_| half_sent(&http, &c.req(&msg, "tools/resolve")))
            .collect();
        http.wait_for_metric(None, "regent_http_requests_in_flight", 5.0);
        drop(streams);
        http.wait_for_metric(None, "regent_http_requests_in_flight", 0.0);

        // A client that sends everything and leaves before the answer.
        let mut s = connect(http.addr);
        let req = c.req(&msg, "tools/resolve");
        s.write_all(&req.head(http.addr)).unwrap();
        s.write_all(&req.body).unwrap();
        drop(s);

        let r = c.resolve("manage_files", json!({"path": "a", "action": "delete"}));
        assert_eq!(r["annotations"]["destructiveHint"], json!(true), "{era:?}");
    }
    http.wait_for_metric(None, "regent_http_requests_in_flight", 0.0);
}

#[test]
fn a_request_that_outlives_its_deadline_is_answered_408() {
    let http = HttpServer::start(&[
        "--request-timeout-secs",
        "1",
        &catalog("examples/manage_files"),
    ]);
    let mut c = McpHttp::connect(http.addr, Era::Modern);
    let msg = c.message("tools/list", json!({}));
    let mut s = half_sent(&http, &c.req(&msg, "tools/list"));
    let resp = read_response(&mut s);
    assert_eq!(resp.status, 408, "{}", resp.text());
    assert_eq!(c.post(&msg, "tools/list").status, 200);
}

#[test]
fn shutdown_finishes_requests_in_flight_and_refuses_new_ones() {
    for signal in [15, 2] {
        let mut http = HttpServer::start(&[&catalog("examples/manage_files")]);
        let mut legacy = McpHttp::connect(http.addr, Era::Legacy);
        let mut modern = McpHttp::connect(http.addr, Era::Modern);
        let args = json!({"name": "manage_files", "arguments": {"path": "a", "action": "replace"}});
        let in_flight: Vec<(Value, Req)> = [&mut legacy, &mut modern]
            .into_iter()
            .map(|c| {
                let msg = c.message("tools/resolve", args.clone());
                let req = c.req(&msg, "tools/resolve");
                (msg, req)
            })
            .collect();
        let mut streams: Vec<TcpStream> = in_flight
            .iter()
            .map(|(_, req)| half_sent(&http, req))
            .collect();
        http.wait_for_metric(None, "regent_http_requests_in_flight", 2.0);

        http.signal(signal);
        // New connections are refused once the listener is closed, which
        // regent says right after closing it.
        let said = http.wait_for_stderr("shutting down: no new connections");
        refused(&http, &format!("after signal {signal}\n{said}"));
        // The requests in flight finish, with their answers.
        for ((msg, req), s) in in_flight.iter().zip(streams.iter_mut()) {
            s.write_all(&req.body[req.body.len() / 2..]).unwrap();
            let resp = read_response(s);
            assert_eq!(resp.status, 200, "signal {signal}: {}", resp.text());
            let r = resp.response_to(&msg["id"]);
            assert_eq!(
                r["result"]["annotations"]["destructiveHint"],
                json!(true),
                "{r}"
            );
        }
        let status = http.wait_exit();
        assert_eq!(status.code(), Some(0), "stderr:\n{}", http.stderr());
        assert!(http.stderr().contains("shutting down"), "{}", http.stderr());
    }
}

/// Asserts that a connection to the server's address is refused: its
/// listener is closed. Called once regent said it closed it, so one probe
/// decides, rather than probes in a loop paced by a sleep.
fn refused(http: &HttpServer, context: &str) {
    match TcpStream::connect(http.addr) {
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {}
        Ok(_) => panic!("still accepting {context}"),
        Err(e) => panic!("connecting failed otherwise ({e}) {context}"),
    }
}

/// A catalog with one tool that reads a named pipe: a call stays in flight
/// until the test writes to the pipe, however slow the machine.
pub(crate) struct PipeTool {
    dir: tempfile::TempDir,
}

impl PipeTool {
    pub(crate) fn new() -> PipeTool {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("tools.yaml"),
            r#"tools:
  - name: read_pipe
    description: reads a named pipe to its end
    inputSchema:
      type: object
      properties: {path: {type: string}}
      required: [path]
    run: {cli: {program: cat, args: ["--", "{path}"], timeout: 60s}}
"#,
        )
        .unwrap();
        PipeTool { dir }
    }

    pub(crate) fn catalog(&self) -> String {
        self.dir.path().display().to_string()
    }

    /// A new named pipe in the catalog's directory.
    pub(crate) fn pipe(&self, name: &str) -> String {
        let path = self.dir.path().join(name);
        let ok = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap()
            .success();
        assert!(ok, "mkfifo {}", path.display());
        path.display().to_string()
    }

    /// Whether a `cat` of `pipe` is running (a call's process).
    pub(crate) fn reader_alive(pipe: &str) -> bool {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| c.split(|&b| b == 0).any(|arg| arg == pipe.as_bytes()))
        })
    }

    pub(crate) fn wait_for_reader(pipe: &str, alive: bool) {
        let deadline = Instant::now() + WAIT;
        while Self::reader_alive(pipe) != alive {
            assert!(
                Instant::now() < deadline,
                "the reader of {pipe} never became {}",
                if alive { "alive" } else { "gone" }
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Writes `text` to the pipe and closes it, which ends the `cat`.
    pub(crate) fn release(pipe: &str, text: &str) {
        use std::os::unix::fs::OpenOptionsExt;
        // Non-blocking: with no reader left this fails instead of hanging.
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(pipe)
            .unwrap_or_else(|e| panic!("no reader on {pipe}: {e}"));
        f.write_all(text.as_bytes()).unwrap();
    }
}

pub(crate) fn call_pipe(c: &mut McpHttp, pipe: &str) -> (Value, Req) {
    let msg = c.message(
        "tools/call",
        json!({"name": "read_pipe", "arguments": {"path": pipe}}),
    );
    let req = c.req(&msg, "tools/call");
    (msg, req)
}

#[test]
fn shutdown_lets_tool_calls_in_flight_finish() {
    let tools = PipeTool::new();
    let mut http = HttpServer::start(&[&tools.catalog()]);
    let mut calls = Vec::new();
    for era in Era::ALL {
        let mut c = McpHttp::connect(http.addr, era);
        let pipe = tools.pipe(&format!("{era:?}"));
        let (msg, req) = call_pipe(&mut c, &pipe);
        let addr = http.addr;
        let reply = std::thread::spawn(move || send(addr, &req));
        PipeTool::wait_for_reader(&pipe, true);
        calls.push((era, pipe, msg, reply));
    }
    http.wait_for_metric(None, "regent_http_requests_in_flight", 2.0);

    http.signal(15);
    let said = http.wait_for_stderr("shutting down: no new connections");
    refused(&http, &format!("after SIGTERM\n{said}"));
    // The calls are still running; let them finish.
    for (era, pipe, msg, reply) in calls {
        assert!(
            PipeTool::reader_alive(&pipe),
            "{era:?}: the call was cut off"
        );
        PipeTool::release(&pipe, &format!("finished {era:?}"));
        let resp = reply.join().unwrap();
        assert_eq!(resp.status, 200, "{era:?}: {}", resp.text());
        let r = resp.response_to(&msg["id"]);
        assert_eq!(r["result"]["isError"], json!(false), "{era:?}: {r}");
        assert_eq!(
            r["result"]["content"][0]["text"],
            json!(format!("finished {era:?}")),
            "{era:?}: {r}"
        );
    }
    assert_eq!(http.wait_exit().code(), Some(0), "{}", http.stderr());
}

#[test]
fn a_client_that_leaves_mid_call_cancels_it() {
    let tools = PipeTool::new();
    let http = HttpServer::start(&[&tools.catalog()]);
    let mut c = McpHttp::connect(http.addr, Era::Modern);
    let pipe = tools.pipe("left");
    let (_, req) = call_pipe(&mut c, &pipe);
    let mut s = connect(http.addr);
    s.write_all(&req.head(http.addr)).unwrap();
    s.write_all(&req.body).unwrap();
    PipeTool::wait_for_reader(&pipe, true);
    drop(s);
    // The call is cancelled, which kills its process.
    PipeTool::wait_for_reader(&pipe, false);
    http.wait_for_metric(None, "regent_http_requests_in_flight", 0.0);

    // And the server goes on serving calls.
    let pipe = tools.pipe("after");
    let (msg, req) = call_pipe(&mut c, &pipe);
    let addr = http.addr;
    let reply = std::thread::spawn(move || send(addr, &req));
    PipeTool::wait_for_reader(&pipe, true);
    PipeTool::release(&pipe, "still here");
    let r = reply.join().unwrap().response_to(&msg["id"]);
    assert_eq!(
        r["result"]["content"][0]["text"],
        json!("still here"),
        "{r}"
    );
}

#[test]
fn a_call_that_outlives_the_request_deadline_is_ended() {
    let tools = PipeTool::new();
    let http = HttpServer::start(&["--request-timeout-secs", "1", &tools.catalog()]);

    // 2026-07-28: no answer yet when the deadline passes, so 504, and the call is cancelled.
    let mut c = McpHttp::connect(http.addr, Era::Modern);
    let pipe = tools.pipe("modern");
    let (_, req) = call_pipe(&mut c, &pipe);
    let resp = http.send(&req);
    assert_eq!(resp.status, 504, "{}", resp.text());
    PipeTool::wait_for_reader(&pipe, false);

    // 2025-11-25: the answer streams in a session, and the stream ends at the
    // deadline without one.
    let mut c = McpHttp::connect(http.addr, Era::Legacy);
    let pipe = tools.pipe("legacy");
    let (msg, req) = call_pipe(&mut c, &pipe);
    let resp = http.send(&req);
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert!(
        !resp
            .messages()
            .iter()
            .any(|m| m.get("id") == Some(&msg["id"])),
        "a response arrived after all: {}",
        resp.text()
    );
    http.wait_for_metric(None, "regent_http_requests_in_flight", 0.0);
}
