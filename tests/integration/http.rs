//! `regent serve --http` over real sockets on 127.0.0.1: the MCP surface in
//! both protocol eras (the same wire shape as stdio, byte for byte in the
//! results), the lockdown (Origin, Host, bearer token, body size, request
//! deadline), clients that go away, graceful shutdown, `/healthz` and
//! `/metrics`.

use crate::common;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::http::{HttpServer, McpHttp, Req, connect, read_response, send};
use common::{Era, Server, WAIT, regent, repo_path};
use serde_json::{Value, json};

fn catalog(rel: &str) -> String {
    repo_path(rel).to_str().unwrap().to_string()
}

/// The requests whose answers must be the same over HTTP as over stdio.
fn script() -> Vec<(&'static str, Value)> {
    let mut v = vec![("tools/list", json!({}))];
    for action in ["read", "append", "replace", "delete"] {
        let args = json!({"name": "manage_files", "arguments": {"path": "a", "action": action}});
        v.push(("tools/resolve", args.clone()));
        v.push(("tools/annotations", args));
    }
    v.extend([
        ("tools/resolve", json!({"name": "nope", "arguments": {}})),
        (
            "tools/resolve",
            json!({"name": "manage_files", "arguments": {"path": 7, "action": "read"}}),
        ),
        (
            "tools/resolve",
            json!({"name": "manage_files", "arguments": [1, 2]}),
        ),
        ("tools/resolve", json!({"arguments": {}})),
        (
            "tools/call",
            json!({"name": "manage_files", "arguments": {"path": "notes.txt", "action": "read"}}),
        ),
        (
            "tools/call",
            json!({"name": "manage_files", "arguments": {"path": "a", "action": "read"}}),
        ),
        (
            "tools/call",
            json!({"name": "manage_files", "arguments": {"path": "../../etc/passwd", "action": "read"}}),
        ),
        ("tools/call", json!({"name": "nope", "arguments": {}})),
        ("tools/frobnicate", json!({})),
        ("prompts/list", json!({})),
        ("resources/list", json!({})),
        ("logging/setLevel", json!({})),
        ("logging/setLevel", json!({"level": "debug"})),
    ]);
    v
}

/// The answer without what differs from call to call: the request id (the
/// two clients number requests differently), a call's decision id and its
/// measured duration.
fn answer(mut msg: Value) -> Value {
    if let Some(o) = msg.as_object_mut() {
        o.remove("id");
    }
    if let Some(id) = msg.pointer_mut("/result/_meta/regent~1decision/id") {
        *id = json!("<decision id>");
    }
    if let Some(ms) = msg.pointer_mut("/result/_meta/regent~1execution/durationMs") {
        *ms = json!("<duration>");
    }
    msg
}

#[test]
fn wire_shape_is_the_same_as_over_stdio_in_both_eras() {
    let http = HttpServer::start(&[&catalog("examples/manage_files")]);
    for era in Era::ALL {
        let mut stdio = Server::start(era, &[&catalog("examples/manage_files")]);
        let mut client = McpHttp::connect(http.addr, era);
        for (method, params) in script() {
            let over_stdio = answer(stdio.request(method, params.clone()));
            let over_http = answer(client.request(method, params.clone()));
            assert_eq!(
                over_http, over_stdio,
                "{era:?} {method} {params}: HTTP and stdio differ\n  http:  {over_http}\n  stdio: {over_stdio}"
            );
        }
    }

    // The handshake and discovery answers, too.
    let mut stdio = Server::start(Era::Modern, &[&catalog("examples/manage_files")]);
    let mut client = McpHttp::connect(http.addr, Era::Modern);
    assert_eq!(
        answer(client.request("server/discover", json!({}))),
        answer(stdio.request("server/discover", json!({})))
    );
    stdio.era = Era::Legacy;
    let init = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
    let over_stdio = answer(stdio.request("initialize", init.clone()));
    let resp = send(
        http.addr,
        &Req::mcp(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})),
    );
    assert_eq!(answer(resp.response_to(&json!(1))), over_stdio);
}

#[test]
fn both_eras_carry_the_tool_resolution_fields() {
    let http = HttpServer::start(&[&catalog("examples/manage_files")]);
    for era in Era::ALL {
        let mut c = McpHttp::connect(http.addr, era);
        let list = c.request("tools/list", json!({}));
        let t = &list["result"]["tools"][0];
        assert_eq!(t["resolve"], json!(true), "{era:?}: {list}");
        assert_eq!(t["dynamicAnnotations"], json!(true), "{era:?}: {list}");
        assert!(
            t["_meta"].get("x-regent/hoist").is_none(),
            "private key leaked: {t}"
        );
        let r = c.resolve("manage_files", json!({"path": "a", "action": "read"}));
        assert_eq!(r["annotations"]["readOnlyHint"], json!(true), "{r}");
        let want = match era {
            Era::Legacy => None,
            Era::Modern => Some(&json!("complete")),
        };
        assert_eq!(r.get("resultType"), want, "{era:?}: {r}");
    }
    let mut c = McpHttp::connect(http.addr, Era::Modern);
    let caps = c.request("server/discover", json!({}))["result"]["capabilities"].clone();
    assert_eq!(caps["tools"]["resolve"], json!(true), "{caps}");
    assert_eq!(caps["tools"]["dynamicAnnotations"], json!(true), "{caps}");
}

#[test]
fn sessions_in_the_2025_era_and_headers_in_the_2026_era_are_enforced() {
    let http = HttpServer::start(&[&catalog("examples/manage_files")]);
    let mut legacy = McpHttp::connect(http.addr, Era::Legacy);
    let msg = legacy.message("tools/list", json!({}));

    // A 2025-11-25 request needs the session it belongs to.
    let mut no_session = McpHttp::connect(http.addr, Era::Legacy);
    no_session.session = None;
    let resp = no_session.post(&msg, "tools/list");
    assert_eq!(resp.status, 400, "{}", resp.text());
    no_session.session = Some("no-such-session".into());
    let resp = no_session.post(&msg, "tools/list");
    assert_eq!(resp.status, 404, "{}", resp.text());

    // DELETE ends the session; it is then unknown.
    let session = legacy.session.clone().unwrap();
    let del = Req {
        method: "DELETE".into(),
        ..Req::get("/mcp")
    }
    .header("Mcp-Session-Id", &session)
    .header("MCP-Protocol-Version", "2025-11-25");
    let resp = http.send(&del);
    assert_eq!(resp.status, 204, "{}", resp.text());
    let resp = legacy.post(&msg, "tools/list");
    assert_eq!(resp.status, 404, "{}", resp.text());

    // 2026-07-28: the method header must match the body, and tools/call names its tool.
    let mut modern = McpHttp::connect(http.addr, Era::Modern);
    let msg = modern.message("tools/list", json!({}));
    let resp = http.send(&modern.req(&msg, "tools/call"));
    assert_eq!(resp.status, 400, "{}", resp.text());
    assert_eq!(resp.response_to(&msg["id"])["error"]["code"], json!(-32020));
    let call = modern.message(
        "tools/call",
        json!({"name": "manage_files", "arguments": {"path": "a", "action": "read"}}),
    );
    let mut req = modern.req(&call, "tools/call");
    req.headers.retain(|(k, _)| k != "Mcp-Name");
    let resp = http.send(&req);
    assert_eq!(resp.status, 400, "{}", resp.text());

    // A 2026-07-28 request without its _meta is refused.
    let mut bare = msg.clone();
    bare["params"] = json!({});
    let resp = http.send(&modern.req(&bare, "tools/list"));
    assert_eq!(resp.status, 400, "{}", resp.text());
    assert_eq!(
        resp.response_to(&bare["id"])["error"]["code"],
        json!(-32602)
    );
}

#[test]
fn methods_regent_does_not_offer_are_not_found() {
    let http = HttpServer::start(&[&catalog("examples/manage_files")]);
    for era in Era::ALL {
        let mut c = McpHttp::connect(http.addr, era);
        for method in ["prompts/list", "resources/list", "resources/templates/list"] {
            let e = c.expect_error(method, json!({}));
            assert_eq!(e["code"], json!(-32601), "{era:?} {method}: {e}");
        }
    }
    // Methods the 2026-07-28 protocol removed are unknown there: 404 and
    // -32601, however malformed their params.
    let mut c = McpHttp::connect(http.addr, Era::Modern);
    for method in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
    ] {
        let msg = c.message(method, json!({}));
        let resp = c.post(&msg, method);
        assert_eq!(resp.status, 404, "{method}: {}", resp.text());
        let e = &resp.response_to(&msg["id"])["error"];
        assert_eq!(e["code"], json!(-32601), "{method}: {e}");
    }
    // In the 2025-11-25 era they exist, so bad params are invalid params.
    let mut c = McpHttp::connect(http.addr, Era::Legacy);
    let e = c.expect_error("resources/subscribe", json!({}));
    assert_eq!(e["code"], json!(-32602), "{e}");
}

#[test]
fn a_foreign_origin_is_refused_everywhere() {
    let http = HttpServer::start(&[&catalog("examples/manage_files")]);
    let mut c = McpHttp::connect(http.addr, Era::Modern);
    let msg = c.message("tools/list", json!({}));
    for origin in [
        "http://evil.example",
        "https://localhost.evil.example",
        "null",
    ] {
        let resp = http.send(&c.req(&msg, "tools/list").header("Origin", origin));
        assert_eq!(
            resp.status,
            403,
            "/mcp with Origin {origin}: {}",
            resp.text()
        );
        for path in ["/healthz", "/metrics"] {
            let resp = http.send(&Req::get(path).header("Origin", origin));
            assert_eq!(
                resp.status,
                403,
                "{path} with Origin {origin}: {}",
                resp.text()
            );
        }
    }
    // A page served from this machine, and a client that is no browser at all, pass.
    for origin in [
        "http://localhost:3000",
        "http://127.0.0.1:9",
        "https://[::1]:8443",
    ] {
        let resp = http.send(&c.req(&msg, "tools/list").header("Origin", origin));
        assert_eq!(resp.status, 200, "Origin {origin}: {}", resp.text());
    }
    assert_eq!(c.post(&msg, "tools/list").status, 200);

    // --allowed-origin replaces the loopback defaults.
    let http = HttpServer::start(&[
        "--allowed-origin",
        "https://app.example:443",
        &catalog("examples/manage_files"),
    ]);
    let c = McpHttp::connect(http.addr, Era::Modern);
    let ok = http.send(
        &c.req(&msg, "tools/list")
            .header("Origin", "https://app.example"),
    );
    assert_eq!(ok.status, 200, "{}", ok.text());
    let no = http.send(
        &c.req(&msg, "tools/list")
            .header("Origin", "http://localhost:3000"),
    );
    assert_eq!(no.status, 403, "{}", no.text());
}

#[test]
fn a_foreign_host_is_refused_everywhere() {
    let http = HttpServer::start(&[&catalog("examples/manage_files")]);
    let mut c = McpHttp::connect(http.addr, Era::Modern);
    let msg = c.message("tools/list", json!({}));
    // A DNS-rebinding page reaches 127.0.0.1 under its own name.
    for host in ["evil.example", "evil.example:80", "localhost.evil.example"] {
        let resp = http.send(&c.req(&msg, "tools/list").header("Host", host));
        assert_eq!(resp.status, 403, "/mcp with Host {host}: {}", resp.text());
        for path in ["/healthz", "/metrics"] {
            let resp = http.send(&Req::get(path).header("Host", host));
            assert_eq!(resp.status, 403, "{path} with Host {host}: {}", resp.text());
        }
    }
    for host in [
        format!("localhost:{}", http.addr.port()),
        http.addr.to_string(),
    ] {
        let resp = http.send(&c.req(&msg, "tools/list").header("Host", &host));
        assert_eq!(resp.status, 200, "Host {host}: {}", resp.text());
    }

    let http = HttpServer::start(&[
        "--allowed-host",
        "mcp.example",
        &catalog("examples/manage_files"),
    ]);
    let c = McpHttp::connect_with(
        http.addr,
        Era::Modern,
        vec![("Host".into(), "mcp.example".into())],
    );
    assert_eq!(c.post(&msg, "tools/list").status, 200);
    let resp = http.send(&Req::get("/healthz").header("Host", "localhost"));
    assert_eq!(resp.status, 403, "{}", resp.text());
}

#[test]
fn the_bearer_token_is_required_when_configured() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let http = HttpServer::start(&[
        "--auth-token-file",
        token_file.to_str().unwrap(),
        &catalog("examples/manage_files"),
    ]);
    let mut c = McpHttp::connect(http.addr, Era::Modern);
    let msg = c.message("tools/list", json!({}));
    for (label, auth) in [
        ("missing", None),
        ("wrong", Some("Bearer s3cret-tokeN")),
        ("a prefix", Some("Bearer s3cret")),
        ("longer", Some("Bearer s3cret-token2")),
        ("another scheme", Some("Basic czNjcmV0LXRva2Vu")),
        ("empty", Some("Bearer ")),
    ] {
        let mut req = c.req(&msg, "tools/list");
        if let Some(a) = auth {
            req = req.header("Authorization", a);
        }
        let resp = http.send(&req);
        assert_eq!(resp.status, 401, "{label} token: {}", resp.text());
        assert!(
            resp.header("www-authenticate")
                .is_some_and(|v| v.starts_with("Bearer")),
            "{label}: {:?}",
            resp.headers
        );
        let resp = http.send(&{
            let mut r = Req::get("/metrics");
            if let Some(a) = auth {
                r = r.header("Authorization", a);
            }
            r
        });
        assert_eq!(resp.status, 401, "/metrics with {label} token");
    }
    // The scheme is case-insensitive; the token is not.
    for auth in ["Bearer s3cret-token", "bearer s3cret-token"] {
        let resp = http.send(&c.req(&msg, "tools/list").header("Authorization", auth));
        assert_eq!(resp.status, 200, "{auth}: {}", resp.text());
    }
    // Both eras work with it, and health checks need no token.
    for era in Era::ALL {
        let mut c = McpHttp::connect_with(
            http.addr,
            era,
            vec![("Authorization".into(), "Bearer s3cret-token".into())],
        );
        let r = c.resolve("manage_files", json!({"path": "a", "action": "read"}));
        assert_eq!(r["annotations"]["readOnlyHint"], json!(true));
    }
    assert_eq!(http.send(&Req::get("/healthz")).status, 200);
    assert!(
        http.metrics(Some("s3cret-token"))
            .contains("regent_requests_total")
    );
    assert!(
        !http.stderr().contains("s3cret-token"),
        "the token must never be logged:\n{}",
        http.stderr()
    );

    // The environment variable works the same way.
    let mut cmd = regent();
    cmd.env("REGENT_AUTH_TOKEN", "from-env")
        .args(["serve", "--http", "127.0.0.1:0"])
        .arg(catalog("examples/manage_files"));
    let http = HttpServer::spawn(cmd);
    assert_eq!(http.send(&c.req(&msg, "tools/list")).status, 401);
    let resp = http.send(
        &c.req(&msg, "tools/list")
            .header("Authorization", "Bearer from-env"),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
}

#[test]
fn oversized_bodies_are_refused_and_the_server_keeps_serving() {
    let http = HttpServer::start(&[
        "--max-body-bytes",
        "65536",
        &catalog("examples/manage_files"),
    ]);
    let mut c = McpHttp::connect(http.addr, Era::Modern);
    let big = c.message(
        "tools/resolve",
        json!({"name": "manage_files", "arguments": {"path": "x".repeat(70_000), "action": "read"}}),
    );
    let resp = c.post(&big, "tools/resolve");
    assert_eq!(resp.status, 413, "{}", resp.text());
    // Just under the limit is fine.
    let fits = c.message(
        "tools/resolve",
        json!({"name": "manage_files", "arguments": {"path": "x".repeat(60_000), "action": "read"}}),
    );
    let resp = c.post(&fits, "tools/resolve");
    assert_eq!(resp.status, 200, "{}", resp.text());
    let r = c.resolve("manage_files", json!({"path": "a", "action": "read"}));
    assert_eq!(r["annotations"]["readOnlyHint"], json!(true));
}

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
        // New connections are refused once the listener is closed.
        let deadline = Instant::now() + WAIT;
        while TcpStream::connect(http.addr).is_ok() {
            assert!(
                Instant::now() < deadline,
                "still accepting after signal {signal}\n{}",
                http.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
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

#[test]
fn healthz_reports_the_revision_and_metrics_count_what_happened() {
    // riskier_policy is refused by `check` (and so by `serve`) on purpose:
    // its failing call is what the metrics count.
    let http = HttpServer::start(&[
        "--skip-load-check",
        &catalog("tests/cases/riskier_policy"),
        &catalog("examples/manage_files"),
    ]);
    let health = http.send(&Req::get("/healthz"));
    assert_eq!(health.status, 200, "{}", health.text());
    let h: Value = serde_json::from_slice(&health.body).unwrap();
    let revision = h["revision"].as_str().expect("revision").to_string();
    assert_eq!(revision.len(), 64, "{h}");
    assert_eq!(h["tools"], json!(2), "{h}");

    let mut c = McpHttp::connect(http.addr, Era::Modern);
    c.resolve("manage_files", json!({"path": "a", "action": "read"}));
    c.resolve("manage_files", json!({"path": "a", "action": "read"}));
    c.expect_error("tools/resolve", json!({"name": "nope", "arguments": {}}));
    c.expect_error(
        "tools/resolve",
        json!({"name": "cleanup", "arguments": {"mode": "purge"}}),
    );
    c.request(
        "tools/call",
        json!({"name": "manage_files", "arguments": {"path": "a", "action": "read"}}),
    );
    c.request("tools/list", json!({}));
    let resp = http.send(&Req::get("/nowhere"));
    assert_eq!(resp.status, 404);

    let m = http.metrics(None);
    let value = |series: &str| {
        m.lines()
            .find_map(|l| {
                l.strip_prefix(series)?
                    .strip_prefix(' ')?
                    .parse::<f64>()
                    .ok()
            })
            .unwrap_or_else(|| panic!("no {series} in\n{m}"))
    };
    assert_eq!(
        value("regent_requests_total{method=\"tools/resolve\",outcome=\"ok\"}"),
        2.0
    );
    assert_eq!(
        value("regent_requests_total{method=\"tools/resolve\",outcome=\"invalid_params\"}"),
        1.0
    );
    assert_eq!(
        value("regent_requests_total{method=\"tools/resolve\",outcome=\"internal_error\"}"),
        1.0
    );
    assert_eq!(
        value("regent_requests_total{method=\"tools/list\",outcome=\"ok\"}"),
        1.0
    );
    assert_eq!(
        value("regent_policy_errors_total{reason=\"riskier-than-listed\"}"),
        1.0
    );
    assert_eq!(value("regent_resolve_duration_seconds_count"), 4.0);
    assert_eq!(
        value("regent_resolve_duration_seconds_bucket{le=\"+Inf\"}"),
        4.0
    );
    assert_eq!(value("regent_call_duration_seconds_count"), 1.0);
    // The call ran `cat` on a file that does not exist: a tool error, not a protocol one.
    assert_eq!(
        value("regent_requests_total{method=\"tools/call\",outcome=\"tool_error\"}"),
        1.0
    );
    assert_eq!(
        value(&format!("regent_catalog_info{{revision=\"{revision}\"}}")),
        1.0
    );
    assert_eq!(
        value("regent_catalog_loads_total{outcome=\"success\"}"),
        1.0
    );
    assert_eq!(
        value("regent_catalog_loads_total{outcome=\"failure\"}"),
        0.0
    );
    assert_eq!(
        value("regent_http_responses_total{route=\"other\",code=\"404\"}"),
        1.0
    );
    assert!(
        value("regent_http_responses_total{route=\"/mcp\",code=\"200\"}") >= 6.0,
        "{m}"
    );
    // Every sample line is `name{labels} number` or `name number`.
    for line in m.lines().filter(|l| !l.starts_with('#')) {
        let (_, v) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{line}"));
        assert!(v.parse::<f64>().is_ok(), "not a sample: {line}");
    }
}

#[test]
fn a_recursive_policy_is_refused_at_load_over_stdio_and_http() {
    // Rego forbids recursion; regorus would only notice an endless one while
    // evaluating (and a conditional one could exhaust the stack first), so
    // the catalog is refused before serving, from the syntax tree.
    let dir = catalog("tests/cases/deep_recursion");
    for http in [false, true] {
        let mut cmd = regent();
        cmd.arg("serve");
        if http {
            cmd.args(["--http", "127.0.0.1:0"]);
        }
        let out = cmd.arg(&dir).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "http {http}, stderr:\n{stderr}");
        assert!(
            stderr.contains("deep.rego:8:1: error: rule data.tools.deep.f is recursive: data.tools.deep.f -> data.tools.deep.f")
                && stderr.contains("Rego forbids recursion"),
            "http {http}, stderr:\n{stderr}"
        );
    }
}

#[test]
fn binding_beyond_loopback_must_be_asked_for() {
    let out = regent()
        .args(["serve", "--http", "0.0.0.0:0"])
        .arg(catalog("examples/manage_files"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr:\n{stderr}");
    assert!(
        stderr.contains("error: --http 0.0.0.0:0 is not a loopback address")
            && stderr.contains("--allow-remote"),
        "stderr:\n{stderr}"
    );

    let out = regent()
        .args(["serve", "--allow-remote"])
        .arg(catalog("examples/manage_files"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--http"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("token");
    std::fs::write(&empty, "\n").unwrap();
    for (args, want) in [
        (
            vec!["--auth-token-file".to_string(), empty.display().to_string()],
            "holds no token",
        ),
        (
            vec![
                "--auth-token-file".to_string(),
                dir.path().join("missing").display().to_string(),
            ],
            "cannot read the token file",
        ),
        (
            vec!["--allowed-origin".to_string(), "localhost".to_string()],
            "is not an origin",
        ),
    ] {
        let out = regent()
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(&args)
            .arg(catalog("examples/manage_files"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}

/// A catalog with one tool that reads a named pipe: a call stays in flight
/// until the test writes to the pipe, however slow the machine.
struct PipeTool {
    dir: tempfile::TempDir,
}

impl PipeTool {
    fn new() -> PipeTool {
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

    fn catalog(&self) -> String {
        self.dir.path().display().to_string()
    }

    /// A new named pipe in the catalog's directory.
    fn pipe(&self, name: &str) -> String {
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
    fn reader_alive(pipe: &str) -> bool {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| c.split(|&b| b == 0).any(|arg| arg == pipe.as_bytes()))
        })
    }

    fn wait_for_reader(pipe: &str, alive: bool) {
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
    fn release(pipe: &str, text: &str) {
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

fn call_pipe(c: &mut McpHttp, pipe: &str) -> (Value, Req) {
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
    let deadline = Instant::now() + WAIT;
    while TcpStream::connect(http.addr).is_ok() {
        assert!(Instant::now() < deadline, "still accepting after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
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

#[test]
fn reloads_show_in_health_and_metrics_and_the_old_catalog_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tools.yaml");
    let tool = |name: &str| {
        format!("  - name: {name}\n    description: d\n    inputSchema: {{type: object}}\n")
    };
    std::fs::write(&file, format!("tools:\n{}", tool("one"))).unwrap();
    let http = HttpServer::start(&[dir.path().to_str().unwrap()]);
    let health = |http: &HttpServer| -> Value {
        serde_json::from_slice(&http.send(&Req::get("/healthz")).body).unwrap()
    };
    let first = health(&http);
    let mut c = McpHttp::connect(http.addr, Era::Modern);
    assert_eq!(c.tool_names(), ["one"]);

    // A change is picked up and served.
    std::fs::write(&file, format!("tools:\n{}{}", tool("one"), tool("two"))).unwrap();
    http.wait_for_metric(None, "regent_catalog_loads_total{outcome=\"success\"}", 2.0);
    assert_eq!(c.tool_names(), ["one", "two"]);
    let second = health(&http);
    assert_ne!(second["revision"], first["revision"], "{second}");
    let rev = second["revision"].as_str().unwrap();
    assert_eq!(
        http.metric(None, &format!("regent_catalog_info{{revision=\"{rev}\"}}")),
        Some(1.0)
    );

    // A broken change is refused; the last good catalog keeps serving.
    std::fs::write(&file, "tools:\n  - name: [oops\n").unwrap();
    http.wait_for_metric(None, "regent_catalog_loads_total{outcome=\"failure\"}", 1.0);
    assert_eq!(
        http.metric(None, "regent_catalog_last_load_failed"),
        Some(1.0)
    );
    assert_eq!(c.tool_names(), ["one", "two"]);
    let third = health(&http);
    assert_eq!(third["revision"], second["revision"], "{third}");
    assert!(third["lastReloadError"].is_string(), "{third}");

    // SIGHUP reloads too (the file is still broken: one more failure).
    http.signal(1);
    http.wait_for_metric(None, "regent_catalog_loads_total{outcome=\"failure\"}", 2.0);
    assert_eq!(c.tool_names(), ["one", "two"]);
}

#[test]
fn a_content_length_over_the_cap_is_refused_before_the_body_arrives() {
    let http = HttpServer::start(&[
        "--max-body-bytes",
        "1000",
        &catalog("examples/manage_files"),
    ]);
    for era in Era::ALL {
        let c = McpHttp::connect(http.addr, era);
        let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
        // The head announces 100 kB and no byte of the body is ever sent: the
        // answer cannot wait for it (it used to wait for the request
        // deadline, 120 s, and answer 408).
        let mut head = String::from_utf8(c.req(&msg, "tools/list").head(http.addr)).unwrap();
        head = head.replace(
            &format!("Content-Length: {}\r\n", msg.to_string().len()),
            "Content-Length: 100000\r\n",
        );
        assert!(head.contains("Content-Length: 100000"), "{head}");
        let mut s = connect(http.addr);
        s.write_all(head.as_bytes()).unwrap();
        let resp = read_response(&mut s);
        assert_eq!(resp.status, 413, "{era:?}: {}", resp.text());
        assert!(
            resp.text().contains("exceeds 1000 bytes"),
            "{era:?}: {}",
            resp.text()
        );
    }
    let mut c = McpHttp::connect(http.addr, Era::Modern);
    let r = c.resolve("manage_files", json!({"path": "a", "action": "read"}));
    assert_eq!(r["annotations"]["readOnlyHint"], json!(true));
}

#[test]
fn a_body_that_is_not_json_rpc_gets_a_json_rpc_error() {
    let http = HttpServer::start(&[&catalog("examples/manage_files")]);
    for era in Era::ALL {
        let mut c = McpHttp::connect(http.addr, era);
        let msg = c.message("tools/list", json!({}));
        for (body, code, id) in [
            (&b"{not json"[..], -32700, json!(null)),
            (b"", -32700, json!(null)),
            (br#"{"id": 7, "hello": "world"}"#, -32600, json!(7)),
        ] {
            let resp = http.send(&c.req(&msg, "tools/list").body(body.to_vec()));
            let shown = String::from_utf8_lossy(body);
            assert_eq!(resp.status, 400, "{era:?} {shown}: {}", resp.text());
            assert_eq!(
                resp.header("content-type"),
                Some("application/json"),
                "{era:?} {shown}"
            );
            let answer: Value = serde_json::from_slice(&resp.body)
                .unwrap_or_else(|e| panic!("{era:?} {shown}: not JSON ({e}): {}", resp.text()));
            assert_eq!(answer["jsonrpc"], json!("2.0"), "{answer}");
            assert_eq!(answer["id"], id, "{era:?} {shown}: {answer}");
            assert_eq!(
                answer["error"]["code"],
                json!(code),
                "{era:?} {shown}: {answer}"
            );
            assert!(
                answer["error"]["data"]["reason"].is_string(),
                "{era:?} {shown}: {answer}"
            );
        }
        // A wrong Content-Type is still rmcp's 415.
        let mut wrong_type = c.req(&msg, "tools/list");
        wrong_type
            .headers
            .retain(|(k, _)| !k.eq_ignore_ascii_case("content-type"));
        let resp = http.send(&wrong_type.header("Content-Type", "text/plain"));
        assert_eq!(resp.status, 415, "{era:?}: {}", resp.text());
        let r = c.resolve("manage_files", json!({"path": "a", "action": "read"}));
        assert_eq!(r["annotations"]["readOnlyHint"], json!(true), "{era:?}");
    }
}

#[test]
fn deleting_an_unknown_session_is_404() {
    let http = HttpServer::start(&[&catalog("examples/manage_files")]);
    let c = McpHttp::connect(http.addr, Era::Legacy);
    let session = c.session.clone().unwrap();
    let delete = |id: &str| {
        let mut r = Req::get("/mcp")
            .header("Mcp-Session-Id", id)
            .header("MCP-Protocol-Version", "2025-11-25");
        r.method = "DELETE".into();
        http.send(&r)
    };
    let resp = delete("no-such-session");
    assert_eq!(resp.status, 404, "{}", resp.text());
    let resp = delete(&session);
    assert_eq!(resp.status, 204, "{}", resp.text());
    // Ended: a second DELETE, like any request naming it, finds nothing.
    let resp = delete(&session);
    assert_eq!(resp.status, 404, "{}", resp.text());
    let msg = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}});
    assert_eq!(c.post(&msg, "tools/list").status, 404);
}

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
fn the_extension_draft_is_negotiated_per_request_over_http_too() {
    use common::draft_client::{self, DECISION, EXTENSION};
    let http = HttpServer::start(&[&catalog("examples/manage_files")]);
    let rows = [
        (
            "read",
            json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}),
        ),
        (
            "append",
            json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false}),
        ),
        (
            "replace",
            json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false}),
        ),
        (
            "delete",
            json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false}),
        ),
    ];
    for era in Era::ALL {
        for advertised in [vec![EXTENSION], vec![EXTENSION, DECISION]] {
            let mut c = McpHttp::connect_caps(
                http.addr,
                era,
                Vec::new(),
                draft_client::capabilities(&advertised),
            );
            let list = c.request("tools/list", json!({}));
            let t = &list["result"]["tools"][0];
            assert_eq!(
                t.pointer("/_meta/io.modelcontextprotocol~1tool-resolution"),
                Some(&json!({"resolvable": true})),
                "{era:?}: {list}"
            );
            assert_eq!(t["resolve"], json!(true), "{era:?}: {list}");
            for (action, hints) in &rows {
                let args = json!({"path": "a", "action": action, "content": "x"});
                let r = c.resolve("manage_files", args.clone());
                draft_client::validate(&r, "manage_files", &t["annotations"], &advertised)
                    .unwrap_or_else(|e| panic!("{era:?} {advertised:?} {args}: {e}: {r}"));
                assert_eq!(&r["annotations"], hints, "{era:?} {args}: {r}");
                assert_eq!(
                    r.pointer("/_meta/io.github.regent~1decision/allowed")
                        .is_some(),
                    advertised.contains(&DECISION),
                    "{era:?} {args}: {r}"
                );
            }
            let e = c.expect_error("tools/resolve", json!({"name": "manage_files"}));
            assert_eq!(e["code"], json!(-32602), "{era:?}: {e}");
            assert!(
                e["message"]
                    .as_str()
                    .unwrap()
                    .contains("arguments is required"),
                "{era:?}: {e}"
            );
        }
        // Not negotiated: SEP-1862's answer and no marker, as before.
        let mut c = McpHttp::connect(http.addr, era);
        let list = c.request("tools/list", json!({}));
        assert!(
            list.pointer("/result/tools/0/_meta/io.modelcontextprotocol~1tool-resolution")
                .is_none(),
            "{era:?}: {list}"
        );
        let r = c.resolve("manage_files", json!({"path": "a", "action": "read"}));
        assert_eq!(r["tool"]["name"], json!("manage_files"), "{era:?}: {r}");
        assert!(
            draft_client::validate(&r, "manage_files", &json!({}), &[]).is_err(),
            "{r}"
        );
    }
    // On 2026-07-28 each request is judged by its own _meta.
    let mut c = McpHttp::connect_caps(
        http.addr,
        Era::Modern,
        Vec::new(),
        draft_client::capabilities(&[EXTENSION]),
    );
    let args = json!({"path": "a", "action": "read"});
    assert!(
        c.resolve("manage_files", args.clone())
            .get("tool")
            .is_none()
    );
    c.capabilities = json!({});
    assert!(c.resolve("manage_files", args).get("tool").is_some());
}

#[test]
fn a_request_naming_its_host_twice_is_400_before_anything_else() {
    // With a token, so the 400 is seen to come before the 401.
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let http = HttpServer::start(&[
        "--auth-token-file",
        token_file.to_str().unwrap(),
        &catalog("examples/manage_files"),
    ]);
    let addr = http.addr.to_string();
    let mut c = McpHttp::connect_with(
        http.addr,
        Era::Modern,
        vec![("Authorization".into(), "Bearer s3cret-token".into())],
    );
    let list = c.message("tools/list", json!({}));
    let mcp = c.req(&list, "tools/list");
    let with_path = |req: &Req, path: &str| Req {
        path: path.into(),
        ..req.clone()
    };
    // (label, request, status): the raw client writes the headers as given
    // (no HTTP client sends two Hosts).
    let cases: Vec<(&str, Req, u16)> = vec![
        ("one Host", Req::get("/healthz"), 200),
        (
            "two equal Hosts, /healthz",
            Req::get("/healthz")
                .header("Host", &addr)
                .header("Host", &addr),
            400,
        ),
        (
            "two Hosts, the second elsewhere, /metrics",
            Req::get("/metrics")
                .header("Host", &addr)
                .header("Host", "evil.example"),
            400,
        ),
        (
            "two Hosts, without a token, /mcp",
            Req::mcp(&list)
                .header("Host", "evil.example")
                .header("Host", &addr),
            400,
        ),
        (
            "two Hosts, with the token, /mcp",
            mcp.clone()
                .header("Host", &addr)
                .header("Host", "localhost"),
            400,
        ),
        (
            "an absolute-form target naming another authority",
            with_path(&Req::get("/healthz"), "http://evil.example/healthz").header("Host", &addr),
            400,
        ),
        (
            "an absolute-form /mcp target naming another authority",
            with_path(&mcp, "http://evil.example/mcp").header("Host", &addr),
            400,
        ),
        (
            "an absolute-form target naming the Host's authority",
            with_path(&Req::get("/healthz"), &format!("http://{addr}/healthz"))
                .header("Host", &addr),
            200,
        ),
        ("one Host, with the token, /mcp", mcp.clone(), 200),
    ];
    for (label, req, status) in &cases {
        let resp = http.send(req);
        assert_eq!(resp.status, *status, "{label}: {}", resp.text());
        if *status == 400 {
            assert!(
                resp.text().contains("Bad Request: the request"),
                "{label}: {}",
                resp.text()
            );
            assert_eq!(resp.header("connection"), Some("close"), "{label}");
        }
    }
    assert!(
        http.stderr()
            .contains("the request has more than one Host header"),
        "{}",
        http.stderr()
    );
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

/// The series users scrape from `/metrics`, after a few requests of each
/// kind: every `# TYPE` line and every sample's name and labels (the catalog
/// revision's value masked). A change to this list breaks dashboards, alerts
/// and recording rules, so it is a change to document (docs/operating.md),
/// never a side effect of how the exposition is written.
#[test]
fn metrics_expose_the_series_users_scrape() {
    let http = HttpServer::start(&[
        "--skip-load-check",
        &catalog("tests/cases/riskier_policy"),
        &catalog("examples/manage_files"),
    ]);
    let mut c = McpHttp::connect(http.addr, Era::Modern);
    c.resolve("manage_files", json!({"path": "a", "action": "read"}));
    c.expect_error("tools/resolve", json!({"name": "nope", "arguments": {}}));
    c.expect_error(
        "tools/resolve",
        json!({"name": "cleanup", "arguments": {"mode": "purge"}}),
    );
    c.request(
        "tools/call",
        json!({"name": "manage_files", "arguments": {"path": "a", "action": "read"}}),
    );
    c.request("tools/list", json!({}));
    assert_eq!(http.send(&Req::get("/nowhere")).status, 404);

    let resp = http.send(&Req::get("/metrics"));
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(
        resp.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let text = resp.text();
    let mut got: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("# TYPE ") || !l.starts_with('#'))
        .map(|l| {
            if l.starts_with('#') {
                return l.to_string();
            }
            let (series, _) = l.rsplit_once(' ').unwrap_or_else(|| panic!("{l}"));
            match series.split_once("revision=\"") {
                Some((head, rest)) => {
                    let (_, tail) = rest.split_once('"').unwrap();
                    format!("{head}revision=\"*\"{tail}")
                }
                None => series.to_string(),
            }
        })
        .collect();
    got.sort();
    let mut want: Vec<&str> = METRIC_SERIES.to_vec();
    want.sort_unstable();
    assert_eq!(got, want, "/metrics:\n{text}");
}

/// `metrics_expose_the_series_users_scrape`'s list (sorted when compared).
const METRIC_SERIES: &[&str] = &[
    "# TYPE regent_call_duration_seconds histogram",
    "# TYPE regent_calls_in_flight gauge",
    "# TYPE regent_calls_parked gauge",
    "# TYPE regent_calls_refused_total counter",
    "# TYPE regent_calls_scope_refused_total counter",
    "# TYPE regent_catalog_info gauge",
    "# TYPE regent_catalog_last_load_failed gauge",
    "# TYPE regent_catalog_loaded_timestamp_seconds gauge",
    "# TYPE regent_catalog_loads_total counter",
    "# TYPE regent_catalog_tools gauge",
    "# TYPE regent_decision_log_dropped_total counter",
    "# TYPE regent_decision_log_sent_total counter",
    "# TYPE regent_decision_log_upload_failures_total counter",
    "# TYPE regent_http_connections_open gauge",
    "# TYPE regent_http_connections_refused_per_peer_total counter",
    "# TYPE regent_http_connections_refused_total counter",
    "# TYPE regent_http_requests_in_flight gauge",
    "# TYPE regent_http_responses_total counter",
    "# TYPE regent_parked_calls_expired_total counter",
    "# TYPE regent_policy_errors_total counter",
    "# TYPE regent_request_state_store_errors_total counter",
    "# TYPE regent_requests_total counter",
    "# TYPE regent_resolve_duration_seconds histogram",
    "# TYPE regent_upstream_drift_refused_total counter",
    r#"regent_call_duration_seconds_bucket{le="+Inf"}"#,
    r#"regent_call_duration_seconds_bucket{le="0.001"}"#,
    r#"regent_call_duration_seconds_bucket{le="0.005"}"#,
    r#"regent_call_duration_seconds_bucket{le="0.01"}"#,
    r#"regent_call_duration_seconds_bucket{le="0.025"}"#,
    r#"regent_call_duration_seconds_bucket{le="0.05"}"#,
    r#"regent_call_duration_seconds_bucket{le="0.1"}"#,
    r#"regent_call_duration_seconds_bucket{le="0.25"}"#,
    r#"regent_call_duration_seconds_bucket{le="0.5"}"#,
    r#"regent_call_duration_seconds_bucket{le="1"}"#,
    r#"regent_call_duration_seconds_bucket{le="10"}"#,
    r#"regent_call_duration_seconds_bucket{le="2.5"}"#,
    r#"regent_call_duration_seconds_bucket{le="30"}"#,
    r#"regent_call_duration_seconds_bucket{le="5"}"#,
    r#"regent_call_duration_seconds_bucket{le="60"}"#,
    "regent_call_duration_seconds_count",
    "regent_call_duration_seconds_sum",
    "regent_calls_in_flight",
    "regent_calls_parked",
    "regent_calls_refused_total",
    "regent_calls_scope_refused_total",
    r#"regent_catalog_info{revision="*"}"#,
    "regent_catalog_last_load_failed",
    "regent_catalog_loaded_timestamp_seconds",
    r#"regent_catalog_loads_total{outcome="failure"}"#,
    r#"regent_catalog_loads_total{outcome="success"}"#,
    "regent_catalog_tools",
    "regent_decision_log_dropped_total",
    "regent_decision_log_sent_total",
    "regent_decision_log_upload_failures_total",
    "regent_http_connections_open",
    "regent_http_connections_refused_per_peer_total",
    "regent_http_connections_refused_total",
    "regent_http_requests_in_flight",
    r#"regent_http_responses_total{route="/mcp",code="200"}"#,
    r#"regent_http_responses_total{route="other",code="404"}"#,
    "regent_parked_calls_expired_total",
    r#"regent_policy_errors_total{reason="riskier-than-listed"}"#,
    "regent_request_state_store_errors_total",
    r#"regent_requests_total{method="tools/call",outcome="tool_error"}"#,
    r#"regent_requests_total{method="tools/list",outcome="ok"}"#,
    r#"regent_requests_total{method="tools/resolve",outcome="internal_error"}"#,
    r#"regent_requests_total{method="tools/resolve",outcome="invalid_params"}"#,
    r#"regent_requests_total{method="tools/resolve",outcome="ok"}"#,
    r#"regent_resolve_duration_seconds_bucket{le="+Inf"}"#,
    // Written as Go clients write it (prometheus-client); it was "0.00005"
    // until issue 34 (docs/http.md, "Metrics").
    r#"regent_resolve_duration_seconds_bucket{le="5e-05"}"#,
    r#"regent_resolve_duration_seconds_bucket{le="0.0001"}"#,
    r#"regent_resolve_duration_seconds_bucket{le="0.00025"}"#,
    r#"regent_resolve_duration_seconds_bucket{le="0.0005"}"#,
    r#"regent_resolve_duration_seconds_bucket{le="0.001"}"#,
    r#"regent_resolve_duration_seconds_bucket{le="0.0025"}"#,
    r#"regent_resolve_duration_seconds_bucket{le="0.005"}"#,
    r#"regent_resolve_duration_seconds_bucket{le="0.01"}"#,
    r#"regent_resolve_duration_seconds_bucket{le="0.025"}"#,
    r#"regent_resolve_duration_seconds_bucket{le="0.05"}"#,
    r#"regent_resolve_duration_seconds_bucket{le="0.1"}"#,
    r#"regent_resolve_duration_seconds_bucket{le="0.25"}"#,
    r#"regent_resolve_duration_seconds_bucket{le="1"}"#,
    "regent_resolve_duration_seconds_count",
    "regent_resolve_duration_seconds_sum",
    "regent_upstream_drift_refused_total",
];
