//! `regent serve --http` over real sockets on 127.0.0.1: the MCP surface in
//! both protocol eras (the same wire shape as stdio, byte for byte in the
//! results), the lockdown (Origin, Host, bearer token, body size, request
//! deadline). Clients that go away and graceful shutdown are in
//! `http_lifecycle`, connection and call limits in `http_limits`,
//! `/healthz`, `/metrics` and start-up in `http_ops`.

use crate::common;

use std::io::Write;

use common::http::{HttpServer, McpHttp, Req, connect, read_response, send};
use common::{Era, Server, regent, repo_path};
use serde_json::{Value, json};

pub(crate) fn catalog(rel: &str) -> String {
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
pub(crate) fn answer(mut msg: Value) -> Value {
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
