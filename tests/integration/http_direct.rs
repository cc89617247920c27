//! The direct path over HTTP (`http/shortcut`, `protocol::direct::HttpDirect`):
//! a stateless 2026-07-28 `tools/resolve` POST answered without rmcp's
//! Streamable HTTP service gets the same status, content type and body,
//! byte for byte, as rmcp gives the same request; a request any of rmcp's
//! checks would refuse still gets rmcp's refusal; the 2025-11-25 era is
//! still served. Which path answered is read from the server's trace line.

use crate::common;

use common::http::{HttpServer, McpHttp, Req, Resp, send};
use common::{Era, WAIT, regent, repo_path};
use serde_json::{Value, json};

const SAID: &str = "answered without rmcp over HTTP";

/// `serve --http` on examples/manage_files, tracing the direct path.
fn server() -> HttpServer {
    let mut cmd = regent();
    cmd.env("RUST_LOG", "regent=info,regent::protocol::direct=trace")
        .arg("serve")
        .arg("--http")
        .arg("127.0.0.1:0")
        .arg(repo_path("examples/manage_files"));
    HttpServer::spawn(cmd)
}

/// How many requests were answered directly before this call: it sends a
/// plain resolve with id 9999 (answered directly, unless the direct path is
/// broken) and waits for its line. The server's standard error is read by
/// another thread, so a line may come after its answer; but the log is
/// written in order, so once the mark's line is there, every earlier
/// request's is.
fn direct_answers_before_mark(http: &HttpServer) -> usize {
    let c = McpHttp::connect(http.addr, Era::Modern);
    let msg = json!({"jsonrpc": "2.0", "id": 9999, "method": "tools/resolve",
        "params": {"name": "manage_files", "arguments": {"path": "a", "action": "read"},
                   "_meta": c.modern_meta()}});
    let r = send(http.addr, &c.req(&msg, "tools/resolve"));
    assert_eq!(r.status, 200, "{}", r.text());
    let until = std::time::Instant::now() + WAIT;
    loop {
        let log = http.stderr();
        if log
            .lines()
            .any(|l| l.contains(SAID) && l.contains("id=9999"))
        {
            return log.matches(SAID).count() - 1;
        }
        assert!(
            std::time::Instant::now() < until,
            "the mark was not answered directly:\n{log}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// What the comparison looks at: status, content type, body.
fn seen(r: &Resp) -> (u16, Option<String>, String) {
    (
        r.status,
        r.header("content-type").map(str::to_string),
        r.text(),
    )
}

/// The resolves the direct path answers: results and errors, both answer
/// shapes (SEP-1862's, and the extension draft's when negotiated).
fn resolves() -> Vec<(Value, Value)> {
    let plain = json!({});
    let draft = json!({"extensions": {"io.modelcontextprotocol/tool-resolution": {}}});
    let mut v = Vec::new();
    for caps in [&plain, &draft] {
        for action in ["read", "append", "replace", "delete"] {
            v.push((
                caps.clone(),
                json!({"name": "manage_files", "arguments": {"path": "a", "action": action}}),
            ));
        }
        v.push((caps.clone(), json!({"name": "nope", "arguments": {}})));
        v.push((
            caps.clone(),
            json!({"name": "manage_files", "arguments": {"path": 7, "action": "read"}}),
        ));
        v.push((
            caps.clone(),
            json!({"name": "manage_files", "arguments": [1, 2]}),
        ));
        v.push((caps.clone(), json!({"arguments": {}})));
        v.push((caps.clone(), json!({"name": "manage_files"})));
    }
    v
}

#[test]
fn direct_answers_equal_rmcp_s_byte_for_byte() {
    let http = server();
    let mut c = McpHttp::connect(http.addr, Era::Modern);
    let mut direct = 0;
    for (caps, params) in resolves() {
        c.capabilities = caps;
        let msg = c.message("tools/resolve", params);
        let req = c.req(&msg, "tools/resolve");
        let fast = send(http.addr, &req);
        direct += 1;
        // An allowed `Origin` sends the same request through rmcp (the
        // direct path leaves every browser request to rmcp's checks).
        let through_rmcp = send(http.addr, &req.header("Origin", "http://localhost:9"));
        assert_eq!(seen(&fast), seen(&through_rmcp), "{msg}");
        let answer = fast.response_to(&msg["id"]);
        assert!(
            answer.get("result").is_some() || answer.get("error").is_some(),
            "{answer}"
        );
    }
    // Exactly the plain requests were answered directly.
    assert_eq!(
        direct_answers_before_mark(&http),
        direct,
        "{}",
        http.stderr()
    );
}

#[test]
fn requests_the_direct_path_declines_get_rmcp_s_answers() {
    let http = server();
    let mut c = McpHttp::connect(http.addr, Era::Modern);
    let msg = c.message(
        "tools/resolve",
        json!({"name": "manage_files", "arguments": {"path": "a", "action": "read"}}),
    );
    let good = c.req(&msg, "tools/resolve");
    let without = |name: &str| {
        let mut r = good.clone();
        r.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        r
    };
    let with_meta = |meta: Value| {
        let mut m = msg.clone();
        m["params"]["_meta"] = meta;
        good.clone().body(m.to_string().into_bytes())
    };
    let mut other_version = c.modern_meta();
    other_version["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    let mut no_caps = c.modern_meta();
    no_caps
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    let mut caps_not_object = c.modern_meta();
    caps_not_object["io.modelcontextprotocol/clientCapabilities"] = json!("all");
    // (request, status, JSON-RPC error code when the answer is one)
    let cases: Vec<(&str, Req, u16, Option<i64>)> = vec![
        (
            "Mcp-Method names another method",
            without("Mcp-Method").header("Mcp-Method", "tools/list"),
            400,
            Some(-32020),
        ),
        (
            "Mcp-Method twice",
            good.clone().header("Mcp-Method", "tools/resolve"),
            400,
            Some(-32020),
        ),
        ("no Mcp-Method", without("Mcp-Method"), 400, Some(-32020)),
        (
            "_meta names another version than the header",
            with_meta(other_version),
            400,
            Some(-32020),
        ),
        (
            "_meta without client capabilities",
            with_meta(no_caps),
            400,
            Some(-32602),
        ),
        (
            "_meta's client capabilities not an object",
            with_meta(caps_not_object),
            400,
            Some(-32602),
        ),
        (
            "an unknown protocol version",
            without("MCP-Protocol-Version").header("MCP-Protocol-Version", "2099-01-01"),
            400,
            None,
        ),
        (
            "Accept without text/event-stream",
            without("Accept").header("Accept", "application/json"),
            406,
            None,
        ),
        (
            "a Content-Type other than JSON",
            without("Content-Type").header("Content-Type", "text/plain"),
            415,
            None,
        ),
        (
            "a body that is not JSON",
            good.clone().body(b"{\"jsonrpc\":".to_vec()),
            400,
            Some(-32700),
        ),
        (
            "a JSON-RPC envelope that is not 2.0",
            good.clone().body(
                json!({"jsonrpc": "1.0", "id": 5, "method": "tools/resolve",
                       "params": msg["params"].clone()})
                .to_string()
                .into_bytes(),
            ),
            400,
            Some(-32600),
        ),
        (
            "a Host not allowed",
            without("Host").header("Host", "evil.example"),
            403,
            None,
        ),
        (
            "an Origin not allowed",
            good.clone().header("Origin", "http://evil.example"),
            403,
            None,
        ),
    ];
    for (why, req, status, code) in cases {
        let r = send(http.addr, &req);
        assert_eq!(r.status, status, "{why}: {}", r.text());
        if let Some(code) = code {
            let m = &r.messages()[0];
            assert_eq!(m["error"]["code"], json!(code), "{why}: {m}");
        }
    }
    assert_eq!(
        direct_answers_before_mark(&http),
        0,
        "none of them was answered directly:\n{}",
        http.stderr()
    );
}

#[test]
fn both_eras_are_still_served_and_counted() {
    let http = server();
    for era in Era::ALL {
        let mut c = McpHttp::connect(http.addr, era);
        let r = c.request(
            "tools/resolve",
            json!({"name": "manage_files", "arguments": {"path": "a", "action": "delete"}}),
        );
        assert_eq!(
            r["result"]["annotations"]["destructiveHint"],
            json!(true),
            "{r}"
        );
    }
    // Only the 2026-07-28 request took the direct path; both eras (and the
    // mark) were counted.
    assert_eq!(direct_answers_before_mark(&http), 1, "{}", http.stderr());
    let ok = http
        .metric(
            None,
            r#"regent_requests_total{method="tools/resolve",outcome="ok"}"#,
        )
        .unwrap_or(0.0);
    assert_eq!(ok, 3.0, "{}", http.metrics(None));
}
