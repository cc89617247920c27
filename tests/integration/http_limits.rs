//! `serve --http`'s bounds on connections and calls: `--max-connections`,
//! `--max-connections-per-peer`, calls past the limit, a connection that
//! sends nothing.

use crate::common;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::http::catalog;
use crate::http_lifecycle::{PipeTool, call_pipe};
use common::http::{HttpServer, McpHttp, Req, connect, read_response, send};
use common::{Era, WAIT, regent};
use serde_json::json;

/// A connection that has been served one keep-alive `GET /healthz`, so it
/// certainly holds one of the server's connection places.
fn hold(addr: std::net::SocketAddr) -> TcpStream {
    hold_stream(connect(addr), addr)
}

/// [`hold`] over `s`, a connection to `addr`.
fn hold_stream(mut s: TcpStream, addr: std::net::SocketAddr) -> TcpStream {
    s.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .unwrap();
    // Nothing follows the answer on a kept-alive connection, so a buffered
    // reader over a clone reads exactly it.
    let mut reader = std::io::BufReader::new(s.try_clone().unwrap());
    let resp = common::http::read_keepalive(&mut reader)
        .unwrap_or_else(|e| panic!("reading /healthz: {e}"));
    assert_eq!(resp.status, 200, "{}", resp.text());
    s
}

/// What a connection refused at accept is told, read to its close, without
/// sending anything. (Rarely, on a loaded machine, the close arrives as a
/// reset after the text; what was received before it is what the client
/// was told.)
fn refusal(mut s: TcpStream) -> common::http::Resp {
    let mut raw = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        match std::io::Read::read(&mut s, &mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset && !raw.is_empty() => break,
            Err(e) => panic!(
                "reading the refusal failed ({e}); got so far: {}",
                String::from_utf8_lossy(&raw)
            ),
        }
    }
    common::http::parse_response(&raw)
}

/// A connection to `addr` from the local address `from` (Linux routes all
/// of 127.0.0.0/8 to the loopback interface, so 127.0.0.2 is a second peer
/// on the same machine).
fn connect_from(addr: std::net::SocketAddr, from: std::net::IpAddr) -> TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    let s = rt.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(std::net::SocketAddr::new(from, 0)).unwrap();
        socket.connect(addr).await
    });
    let s = s
        .unwrap_or_else(|e| panic!("connect {addr} from {from}: {e}"))
        .into_std()
        .unwrap();
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    s
}

#[test]
fn connections_past_the_limit_are_closed_at_once() {
    let http = HttpServer::start(&["--max-connections", "4", &catalog("examples/manage_files")]);
    // Four connections, each proven to hold a place by a served request (an
    // idle connect alone proves nothing: a scrape the server has not yet seen
    // closed could still hold a place, and one of these be the refused one).
    let mut held: Vec<TcpStream> = (0..4).map(|_| hold(http.addr)).collect();
    // The fifth is told and closed, without sending anything.
    let resp = refusal(connect(http.addr));
    assert_eq!(resp.status, 503, "{}", resp.text());
    assert!(resp.text().contains("--max-connections"), "{}", resp.text());
    // One closes; the server serves again, and counted the refusal. (Until
    // it has seen the close, a scrape is refused, and may be reset.)
    drop(held.pop());
    // A scrape on a fresh connection, retried while the server has not yet
    // seen an earlier close (it is refused then, and may be reset).
    let scrape_until = |done: &dyn Fn(&str) -> bool| -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let mut s = connect(http.addr);
            let _ = s.write_all(&Req::get("/metrics").head(http.addr));
            let mut raw = Vec::new();
            if std::io::Read::read_to_end(&mut s, &mut raw).is_ok() {
                let resp = common::http::parse_response(&raw);
                if resp.status == 200 && done(&resp.text()) {
                    return resp.text();
                }
            }
            assert!(Instant::now() < deadline, "never served again");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let metrics = scrape_until(&|_| true);
    let value = |name: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in\n{metrics}"))
    };
    assert_eq!(value("regent_http_connections_open"), 4.0, "{metrics}");
    assert!(
        value("regent_http_connections_refused_total") >= 1.0,
        "{metrics}"
    );
    drop(held);
    scrape_until(&|m| m.lines().any(|l| l == "regent_http_connections_open 1"));
}

#[test]
fn tool_calls_past_the_limit_are_refused_and_run_nothing() {
    let tools = PipeTool::new();
    let http = HttpServer::start(&["--max-concurrent-calls", "2", &tools.catalog()]);
    // Two calls run (one per era: the limit is the server's, not a session's).
    let mut running = Vec::new();
    for era in Era::ALL {
        let mut c = McpHttp::connect(http.addr, era);
        let pipe = tools.pipe(&format!("running-{era:?}"));
        let (msg, req) = call_pipe(&mut c, &pipe);
        let addr = http.addr;
        let reply = std::thread::spawn(move || send(addr, &req));
        PipeTool::wait_for_reader(&pipe, true);
        running.push((era, pipe, msg, reply));
    }
    http.wait_for_metric(None, "regent_calls_in_flight", 2.0);
    // Two more, one per era, are refused at once and start no process.
    for era in Era::ALL {
        let mut c = McpHttp::connect(http.addr, era);
        let pipe = tools.pipe(&format!("refused-{era:?}"));
        let (msg, req) = call_pipe(&mut c, &pipe);
        let resp = send(http.addr, &req);
        assert_eq!(resp.status, 200, "{era:?}: {}", resp.text());
        let r = resp.response_to(&msg["id"]);
        assert_eq!(r["error"]["code"], json!(-32603), "{era:?}: {r}");
        assert_eq!(
            r["error"]["data"]["reason"],
            json!("capacity"),
            "{era:?}: {r}"
        );
        assert_eq!(
            r["error"]["data"]["maxConcurrentCalls"],
            json!(2),
            "{era:?}: {r}"
        );
        assert!(
            !PipeTool::reader_alive(&pipe),
            "{era:?}: a process was started"
        );
    }
    assert_eq!(http.metric(None, "regent_calls_refused_total"), Some(2.0));
    assert_eq!(http.metric(None, "regent_calls_in_flight"), Some(2.0));
    for (era, pipe, msg, reply) in running {
        PipeTool::release(&pipe, "done");
        let resp = reply.join().unwrap();
        let r = resp.response_to(&msg["id"]);
        assert_eq!(r["result"]["isError"], json!(false), "{era:?}: {r}");
    }
    http.wait_for_metric(None, "regent_calls_in_flight", 0.0);
    // Room again.
    let mut c = McpHttp::connect(http.addr, Era::Modern);
    let pipe = tools.pipe("after");
    let (msg, req) = call_pipe(&mut c, &pipe);
    let addr = http.addr;
    let reply = std::thread::spawn(move || send(addr, &req));
    PipeTool::wait_for_reader(&pipe, true);
    PipeTool::release(&pipe, "again");
    let r = reply.join().unwrap().response_to(&msg["id"]);
    assert_eq!(r["result"]["content"][0]["text"], json!("again"), "{r}");
}

#[test]
fn a_connection_that_sends_nothing_is_closed_after_the_header_timeout() {
    // Without this, idle connections would hold places under
    // --max-connections for ever (hyper's header timeout starts at the first
    // byte). The timeout is 10 s; the read gives up after 20.
    let http = HttpServer::start(&[&catalog("examples/manage_files")]);
    let mut s = connect(http.addr);
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut s, &mut raw).expect("the server closes the connection");
    assert!(raw.is_empty(), "{}", String::from_utf8_lossy(&raw));
    http.wait_for_metric(None, "regent_http_connections_open", 1.0);
}

#[test]
fn connections_past_the_per_address_limit_are_closed_while_other_addresses_get_in() {
    let http = HttpServer::start(&[
        "--max-connections",
        "8",
        "--max-connections-per-peer",
        "2",
        &catalog("examples/manage_files"),
    ]);
    let local: std::net::IpAddr = "127.0.0.1".parse().unwrap();
    let second: std::net::IpAddr = "127.0.0.2".parse().unwrap();
    // Two from 127.0.0.1, each proven to hold its place by a served request.
    let mut held: Vec<TcpStream> = (0..2).map(|_| hold(http.addr)).collect();
    // A third from the same address (another port) is told and closed,
    // though the server has room.
    let resp = refusal(connect_from(http.addr, local));
    assert_eq!(resp.status, 503, "{}", resp.text());
    assert!(
        resp.text()
            .contains("too many connections from this address (--max-connections-per-peer)"),
        "{}",
        resp.text()
    );
    // Another address gets in, twice, and is counted apart.
    let others: Vec<TcpStream> = (0..2)
        .map(|_| hold_stream(connect_from(http.addr, second), http.addr))
        .collect();
    let resp = refusal(connect_from(http.addr, second));
    assert_eq!(resp.status, 503, "{}", resp.text());
    // The refusals are counted apart from --max-connections' (scraped from
    // a third address, since the other two are full).
    let mut s = connect_from(http.addr, "127.0.0.3".parse().unwrap());
    s.write_all(&Req::get("/metrics").head(http.addr)).unwrap();
    let metrics = read_response(&mut s).text();
    assert!(
        metrics
            .lines()
            .any(|l| l == "regent_http_connections_refused_per_peer_total 2"),
        "{metrics}"
    );
    assert!(
        metrics
            .lines()
            .any(|l| l == "regent_http_connections_refused_total 0"),
        "{metrics}"
    );
    // When one of 127.0.0.1's closes, it gets in again (once the server has
    // seen the close).
    drop(held.pop());
    let deadline = Instant::now() + WAIT;
    loop {
        let mut s = connect_from(http.addr, local);
        let _ = s.write_all(&Req::get("/healthz").head(http.addr));
        let mut raw = Vec::new();
        if std::io::Read::read_to_end(&mut s, &mut raw).is_ok()
            && common::http::parse_response(&raw).status == 200
        {
            break;
        }
        assert!(Instant::now() < deadline, "127.0.0.1 never got in again");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop((held, others));
}

#[test]
fn a_per_address_limit_above_the_global_one_is_refused_at_start_up() {
    let out = regent()
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--max-connections",
            "8",
            "--max-connections-per-peer",
            "9",
            &catalog("examples/manage_files"),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--max-connections-per-peer 9 is more than --max-connections 8")
            && stderr.contains("0 to turn the per-address limit off"),
        "{stderr}"
    );
}
