//! `tools/call` of HTTP tools against a real HTTP/1.1 server that the test
//! starts on 127.0.0.1 (an ephemeral port, std sockets, no mock objects),
//! through rmcp's client and the real binary in both protocol eras.

use crate::common;
use crate::exec_support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Era, decision_id, is_error, repo_path, text};
use exec_support::{Start, catalog};
use serde_json::{Value, json};

/// One request as the server received it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    /// The request target exactly as sent (still percent-encoded).
    target: String,
    headers: BTreeMap<String, String>,
    body: String,
}

struct Server {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = log.clone();
                std::thread::spawn(move || handle(stream, &log));
            }
        });
        Server { port, seen }
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

fn handle(stream: TcpStream, log: &Mutex<Vec<Seen>>) {
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts.next().unwrap_or_default().to_string();
    let mut headers = BTreeMap::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok();
    let seen = Seen {
        method,
        target: target.clone(),
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    log.lock().unwrap().push(seen.clone());

    let path = target.split('?').next().unwrap_or_default();
    let (status, extra, ctype, body): (&str, String, &str, Vec<u8>) = match path {
        p if p.starts_with("/api/status/") => {
            let code = &p["/api/status/".len()..];
            let body = format!("{{\"message\":\"upstream said {code}\"}}");
            (code, String::new(), "application/json", body.into_bytes())
        }
        "/api/big" => (
            "200 OK",
            String::new(),
            "text/plain",
            vec![b'b'; 256 * 1024],
        ),
        "/api/redirect" => (
            "302 Found",
            "Location: /api/secret\r\n".into(),
            "text/plain",
            b"moved".to_vec(),
        ),
        // A sibling of the base path `/api`: a string-prefix test would
        // take it for a path under the base.
        "/api/sibling" => (
            "302 Found",
            "Location: /api2/secret\r\n".into(),
            "text/plain",
            b"moved next door".to_vec(),
        ),
        "/api2/secret" => (
            "200 OK",
            String::new(),
            "text/plain",
            b"the sibling's secret".to_vec(),
        ),
        "/api/offsite" => (
            "302 Found",
            "Location: http://127.0.0.2:9/elsewhere\r\n".into(),
            "text/plain",
            b"moved away".to_vec(),
        ),
        "/api/secret" => (
            "200 OK",
            String::new(),
            "text/plain",
            b"the secret".to_vec(),
        ),
        "/api/json" => (
            "200 OK",
            String::new(),
            "application/json",
            br#"{"count":2,"items":["a","b"]}"#.to_vec(),
        ),
        "/api/badjson" => (
            "200 OK",
            String::new(),
            "application/json",
            br#"{"count":"two"}"#.to_vec(),
        ),
        "/api/slow" => {
            std::thread::sleep(Duration::from_secs(3));
            ("200 OK", String::new(), "text/plain", b"late".to_vec())
        }
        _ => {
            let echo = json!({
                "method": seen.method,
                "target": seen.target,
                "headers": seen.headers,
                "body": seen.body,
            });
            (
                "200 OK",
                String::new(),
                "application/json",
                echo.to_string().into_bytes(),
            )
        }
    };
    let status = if status.contains(' ') {
        status.to_string()
    } else {
        format!("{status} Status")
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n",
        body.len()
    );
    let mut response = head.into_bytes();
    response.extend_from_slice(&body);
    let mut out = stream;
    let _ = out.write_all(&response);
    let _ = out.flush();
}

fn tools(base: &str) -> String {
    format!(
        r#"
tools:
  - name: echo
    inputSchema:
      type: object
      properties:
        method: {{type: string, enum: [GET, POST, PUT, PATCH, DELETE]}}
        id: {{type: string}}
        rest: {{type: string}}
        q: {{type: string}}
        tags: {{type: array, items: {{type: string}}}}
        note: {{type: string}}
        payload: {{type: object}}
      required: [method, id]
    run:
      http:
        method: "{{method}}"
        base: {base}/api
        path: /items/{{id}}/{{rest*}}
        query: {{q: "{{q}}", tag: "{{tags}}"}}
        headers: {{Accept: application/json, X-Note: "{{note}}"}}
        body: "{{payload}}"
        auth: {{bearer: {{env: TEST_TOKEN}}}}
  - name: basic
    inputSchema: {{type: object}}
    run:
      http:
        method: GET
        base: {base}/api
        path: /whoami
        auth: {{basic: {{username: alice, password: {{file: password.txt}}}}}}
  - name: api_key
    inputSchema: {{type: object}}
    run:
      http:
        method: GET
        base: {base}/api
        path: /whoami
        auth: {{header: {{name: X-Api-Key, value: {{env: TEST_API_KEY}}}}}}
  - name: no_secret
    inputSchema: {{type: object}}
    run:
      http:
        method: GET
        base: {base}/api
        path: /whoami
        auth: {{bearer: {{env: TEST_NOT_SET_ANYWHERE}}}}
  - name: status
    inputSchema:
      type: object
      properties: {{code: {{type: integer}}}}
      required: [code]
    run: {{http: {{method: GET, base: "{base}/api", path: "/status/{{code}}"}}}}
  - name: big
    inputSchema: {{type: object}}
    run: {{http: {{method: GET, base: "{base}/api", path: /big, maxResponse: 1KiB}}}}
  - name: redirect
    inputSchema: {{type: object}}
    run: {{http: {{method: GET, base: "{base}/api", path: /redirect}}}}
  - name: redirect_allowed
    inputSchema: {{type: object}}
    run: {{http: {{method: GET, base: "{base}/api", path: /redirect, redirects: 2}}}}
  - name: sibling
    inputSchema: {{type: object}}
    run: {{http: {{method: GET, base: "{base}/api", path: /sibling, redirects: 2}}}}
  - name: offsite
    inputSchema: {{type: object}}
    run: {{http: {{method: GET, base: "{base}/api", path: /offsite, redirects: 2}}}}
  - name: json
    inputSchema: {{type: object}}
    outputSchema: &out
      type: object
      properties: {{count: {{type: integer}}, items: {{type: array}}}}
      required: [count]
    run: {{http: {{method: GET, base: "{base}/api", path: /json}}}}
  - name: badjson
    inputSchema: {{type: object}}
    outputSchema: *out
    run: {{http: {{method: GET, base: "{base}/api", path: /badjson}}}}
  - name: slow
    inputSchema: {{type: object}}
    run: {{http: {{method: GET, base: "{base}/api", path: /slow, timeout: 300ms}}}}
"#
    )
}

/// The test server, and a catalog of tools that call it.
fn setup() -> (Server, tempfile::TempDir) {
    let server = Server::start();
    let dir = catalog(&[
        ("tools.yaml", &tools(&server.base())),
        ("password.txt", "s3cret pass\n"),
    ]);
    (server, dir)
}

async fn start(dir: &tempfile::TempDir, era: Era) -> exec_support::Regent {
    Start::new(dir.path())
        .env("TEST_TOKEN", "token-abc")
        .env("TEST_API_KEY", "key-xyz")
        .connect(era)
        .await
}

#[tokio::test]
async fn methods_query_headers_and_body_reach_the_server() {
    let (server, dir) = setup();
    for era in Era::ALL {
        let r = start(&dir, era).await;
        for method in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
            server.take();
            let res = r.call("echo", json!({"method": method, "id": "42"})).await;
            assert!(!is_error(&res), "{era:?} {method}: {res}");
            let seen = server.take();
            assert_eq!(seen.len(), 1, "{seen:?}");
            assert_eq!(seen[0].method, method);
            assert_eq!(seen[0].target, "/api/items/42");
            // The server's echo came back as the text content.
            let echoed: Value = serde_json::from_str(&text(&res)).unwrap();
            assert_eq!(echoed["method"], json!(method));
        }
        let res = r
            .call(
                "echo",
                json!({"method": "POST", "id": "7", "q": "a&b=c", "tags": ["x", "y z"],
                       "note": "hello", "payload": {"title": "hi", "n": 2}}),
            )
            .await;
        assert!(!is_error(&res), "{res}");
        let seen = server.take();
        assert_eq!(seen[0].target, "/api/items/7?q=a%26b%3Dc&tag=x&tag=y+z");
        assert_eq!(seen[0].headers["x-note"], "hello");
        assert_eq!(seen[0].headers["accept"], "application/json");
        assert_eq!(seen[0].headers["content-type"], "application/json");
        assert_eq!(
            serde_json::from_str::<Value>(&seen[0].body).unwrap(),
            json!({"title": "hi", "n": 2})
        );
        // Upstream gets the declared headers and nothing else of the client's.
        let names: Vec<&str> = seen[0].headers.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "accept",
                "authorization",
                "content-length",
                "content-type",
                "host",
                "user-agent",
                "x-note"
            ]
        );
        r.close().await;
    }
}

#[tokio::test]
async fn path_values_are_encoded_and_cannot_leave_the_base() {
    let (server, dir) = setup();
    for era in Era::ALL {
        let r = start(&dir, era).await;
        // A target where the server must see exactly it; none where the
        // call is refused before it reaches the server.
        for (id, rest, target) in [
            ("a/b", None, Some("/api/items/a%2Fb")),
            ("?x=1#frag", None, Some("/api/items/%3Fx%3D1%23frag")),
            ("%2e%2e", None, Some("/api/items/%252e%252e")),
            ("...", None, Some("/api/items/...")),
            (
                "sp ace",
                Some("docs/READ ME.md"),
                Some("/api/items/sp%20ace/docs/READ%20ME.md"),
            ),
            ("..", None, None),
            (".", None, None),
            ("", None, None),
            ("ok", Some("../../../etc/passwd"), None),
            ("ok", Some("a/./b"), None),
            ("ok", Some("a//b"), None),
        ] {
            server.take();
            let mut args = json!({"method": "GET", "id": id});
            if let Some(rest) = rest {
                args["rest"] = json!(rest);
            }
            let res = r.call("echo", args.clone()).await;
            let seen = server.take();
            if let Some(target) = target {
                assert!(!is_error(&res), "{era:?} {id}: {res}");
                assert_eq!(seen.len(), 1);
                assert_eq!(seen[0].target, target, "{era:?}: id {id:?}");
            } else {
                assert!(is_error(&res), "{era:?} {args}: {res}");
                assert!(text(&res).contains("url path segment"), "{}", text(&res));
                assert!(seen.is_empty(), "a refused call reached the server");
            }
        }
        r.close().await;
    }
}

#[tokio::test]
async fn authentication_comes_from_the_environment_or_files() {
    let (server, dir) = setup();
    let r = start(&dir, Era::Modern).await;
    let res = r.call("echo", json!({"method": "GET", "id": "1"})).await;
    assert!(!is_error(&res));
    let res_basic = r.call("basic", json!({})).await;
    assert!(!is_error(&res_basic));
    let res_key = r.call("api_key", json!({})).await;
    assert!(!is_error(&res_key));
    let seen = server.take();
    assert_eq!(seen[0].headers["authorization"], "Bearer token-abc");
    // base64("alice:s3cret pass")
    assert_eq!(
        seen[1].headers["authorization"],
        "Basic YWxpY2U6czNjcmV0IHBhc3M="
    );
    assert_eq!(seen[2].headers["x-api-key"], "key-xyz");
    assert!(!seen[2].headers.contains_key("authorization"));

    let res = r.call("no_secret", json!({})).await;
    assert!(is_error(&res));
    assert!(
        text(&res).contains("environment variable TEST_NOT_SET_ANYWHERE is not set"),
        "{}",
        text(&res)
    );
    assert!(
        server.take().is_empty(),
        "a call without its secret was sent"
    );
    // Once this call's line is in the log, every earlier one is too.
    r.decision(&decision_id(&res));
    let log = std::fs::read_to_string(&r.log).unwrap();
    for secret in ["token-abc", "key-xyz", "s3cret", "YWxpY2U6"] {
        assert!(!log.contains(secret), "secret {secret} in the decision log");
    }
    r.close().await;
}

#[tokio::test]
async fn status_codes_size_caps_redirects_and_timeouts() {
    let (server, dir) = setup();
    for era in Era::ALL {
        let r = start(&dir, era).await;
        for code in [200, 201, 204, 400, 404, 500, 503] {
            let res = r.call("status", json!({"code": code})).await;
            assert_eq!(is_error(&res), code >= 400, "{era:?} {code}: {res}");
            if code >= 400 {
                let t = text(&res);
                assert!(t.contains(&format!("http status {code}")), "{t}");
                assert!(t.contains(&format!("upstream said {code}")), "{t}");
            }
            assert_eq!(res["_meta"]["regent/execution"]["httpStatus"], json!(code));
        }

        let res = r.call("big", json!({})).await;
        assert!(is_error(&res), "{res}");
        assert_eq!(
            res["_meta"]["regent/execution"]["outputCapped"],
            json!(1024)
        );
        assert!(
            text(&res).contains("passed the cap of 1024 bytes"),
            "{}",
            text(&res)
        );

        server.take();
        let res = r.call("redirect", json!({})).await;
        assert!(is_error(&res), "{res}");
        assert!(
            text(&res).contains("redirect to /api/secret"),
            "{}",
            text(&res)
        );
        let seen = server.take();
        assert_eq!(seen.len(), 1, "the redirect was followed: {seen:?}");
        assert_eq!(seen[0].target, "/api/redirect");

        // Allowed redirects are followed, but only within the base.
        let res = r.call("redirect_allowed", json!({})).await;
        assert!(!is_error(&res), "{res}");
        assert_eq!(text(&res), "the secret");
        // A path beside the base is not under it, though its name starts
        // with the base's: not followed, so nothing (no credential) is
        // sent there.
        server.take();
        let res = r.call("sibling", json!({})).await;
        assert!(is_error(&res), "{res}");
        assert!(
            text(&res).contains("redirect to /api2/secret"),
            "{}",
            text(&res)
        );
        let seen = server.take();
        assert_eq!(seen.len(), 1, "the redirect was followed: {seen:?}");
        assert_eq!(seen[0].target, "/api/sibling");
        let res = r.call("offsite", json!({})).await;
        assert!(is_error(&res), "{res}");
        assert!(text(&res).contains("127.0.0.2"), "{}", text(&res));

        let res = r.call("slow", json!({})).await;
        assert!(is_error(&res), "{res}");
        assert!(text(&res).contains("timeout of 300ms"), "{}", text(&res));
        r.close().await;
    }
}

#[tokio::test]
async fn json_output_becomes_validated_structured_content() {
    let (_server, dir) = setup();
    for era in Era::ALL {
        let r = start(&dir, era).await;
        let res = r.call("json", json!({})).await;
        assert!(!is_error(&res), "{res}");
        assert_eq!(
            res["structuredContent"],
            json!({"count": 2, "items": ["a", "b"]})
        );
        let res = r.call("badjson", json!({})).await;
        assert!(is_error(&res), "{res}");
        assert!(res.get("structuredContent").is_none(), "{res}");
        assert!(
            text(&res).contains("does not match the tool's outputSchema"),
            "{}",
            text(&res)
        );
        r.close().await;
    }
}

#[tokio::test]
async fn the_github_example_calls_its_api_over_http() {
    let server = Server::start();
    let example = repo_path("examples/github_api");
    for era in Era::ALL {
        let r = Start::new(&example)
            .env("GITHUB_API_URL", server.base())
            .env("GITHUB_TOKEN", "gh-token")
            .connect(era)
            .await;
        server.take();
        let res = r
            .call(
                "github_api",
                json!({"method": "GET", "owner": "microsoft", "repo": "regorus", "path": "contents/docs/README.md"}),
            )
            .await;
        assert!(!is_error(&res), "{era:?}: {res}");
        let res = r
            .call(
                "github_api",
                json!({"method": "POST", "owner": "acme", "repo": "payroll", "path": "issues", "body": {"title": "hi"}}),
            )
            .await;
        assert!(!is_error(&res), "{era:?}: {res}");
        let seen = server.take();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].method, "GET");
        assert_eq!(
            seen[0].target,
            "/repos/microsoft/regorus/contents/docs/README.md"
        );
        assert_eq!(seen[0].headers["authorization"], "Bearer gh-token");
        assert_eq!(seen[0].headers["accept"], "application/vnd.github+json");
        assert_eq!(seen[0].headers["x-github-api-version"], "2022-11-28");
        assert!(seen[0].headers["user-agent"].starts_with("regent/"));
        assert_eq!(seen[1].method, "POST");
        assert_eq!(seen[1].target, "/repos/acme/payroll/issues");
        assert_eq!(
            serde_json::from_str::<Value>(&seen[1].body).unwrap(),
            json!({"title": "hi"})
        );

        let res = r
            .call(
                "github_api",
                json!({"method": "GET", "owner": "acme", "repo": "payroll", "path": "../../../orgs/acme"}),
            )
            .await;
        assert!(is_error(&res), "{res}");
        assert!(
            server.requests().is_empty(),
            "a path leaving the repository was sent"
        );
        r.close().await;
    }
    // Without a token the call goes out unauthenticated (public repositories).
    let r = Start::new(&example)
        .env("GITHUB_API_URL", server.base())
        .without("GITHUB_TOKEN")
        .connect(Era::Legacy)
        .await;
    let res = r
        .call(
            "github_api",
            json!({"method": "GET", "owner": "microsoft", "repo": "regorus"}),
        )
        .await;
    assert!(!is_error(&res), "{res}");
    let seen = server.take();
    assert_eq!(seen[0].target, "/repos/microsoft/regorus");
    assert!(!seen[0].headers.contains_key("authorization"), "{seen:?}");
    r.close().await;
}
