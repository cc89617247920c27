//! What an upstream says during a forwarded call reaches the client that
//! made it (issue 29): progress mapped to the client's own token, in order,
//! and log messages at the client's level, in both eras, over stdio and
//! over `serve --http`; a call without a token gets no progress, and two
//! concurrent clients each get only their own; through a `url:` upstream
//! (another regent) they are relayed again. The upstream is the kit's
//! (`regent_testkit::upstream`, its `progress` tool), hosted by
//! `upstream_edges::edge_upstream`.

use crate::common;
use crate::upstream_edges::declaration;

use common::http::{HttpServer, McpHttp};
use common::rmcp_client::{Client, TestClient, connect_stdio, mode};
use common::{Era, regent};
use rmcp::model::{CallToolRequestParams, ClientRequest, RequestMetaObject, ServerResult};
use rmcp::service::{ClientServiceExt, PeerRequestOptions};
use serde_json::{Value, json};

/// A `tools/call` of the upstream's `progress` tool, with `token` and
/// `level` in its `_meta` when given (and, on 2026-07-28, the client
/// context every request carries).
fn call_message(era: Era, id: i64, steps: u64, token: Option<&str>, level: Option<&str>) -> Value {
    let mut meta = match era {
        Era::Legacy => json!({}),
        Era::Modern => json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "regent-tests", "version": "1"}
        }),
    };
    if let Some(t) = token {
        meta["progressToken"] = json!(t);
    }
    if let Some(l) = level {
        meta["io.modelcontextprotocol/logLevel"] = json!(l);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "progress", "arguments": {"steps": steps, "ms": 20}, "_meta": meta}})
}

/// `(progressToken, progress, total, message)` of each progress notification.
fn progress(notes: &[Value]) -> Vec<(Value, f64, f64, String)> {
    notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .map(|n| {
            let p = &n["params"];
            (
                p["progressToken"].clone(),
                p["progress"].as_f64().unwrap(),
                p["total"].as_f64().unwrap(),
                p["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// `(level, data)` of each log message.
fn logs(notes: &[Value]) -> Vec<(String, String)> {
    notes
        .iter()
        .filter(|n| n["method"] == "notifications/message")
        .map(|n| {
            let p = &n["params"];
            assert_eq!(p["logger"], "edge", "{n}");
            (
                p["level"].as_str().unwrap().to_string(),
                p["data"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn steps(token: &str, n: u64) -> Vec<(Value, f64, f64, String)> {
    (1..=n)
        .map(|i| (json!(token), i as f64, n as f64, format!("step {i} of {n}")))
        .collect()
}

fn info_logs(n: u64) -> Vec<(String, String)> {
    (1..=n)
        .map(|i| ("info".into(), format!("step {i} of {n}")))
        .collect()
}

/// regent over stdio in `era`, serving the kit's upstream as `edge`.
fn serve_stdio(dir: &std::path::Path, era: Era) -> common::Server {
    write_catalog(dir);
    let mut cmd = regent();
    cmd.arg("serve").arg("--no-watch").arg(dir);
    common::Server::spawn(era, cmd)
}

/// regent over `serve --http`, serving the kit's upstream as `edge`.
fn serve_http(dir: &std::path::Path) -> HttpServer {
    write_catalog(dir);
    let mut cmd = regent();
    cmd.arg("serve")
        .arg("--http")
        .arg("127.0.0.1:0")
        .arg("--no-watch")
        .arg(dir);
    HttpServer::spawn(cmd)
}

fn write_catalog(dir: &std::path::Path) {
    let upstream = declaration("edge", &dir.join("calls.log"), "");
    std::fs::write(
        dir.join("upstreams.yaml"),
        format!("upstreams:\n{upstream}"),
    )
    .unwrap();
}

fn text(response: &Value) -> String {
    common::text(&response["result"])
}

#[test]
fn over_stdio_progress_and_log_messages_reach_the_caller_in_both_eras() {
    for era in Era::ALL {
        let dir = tempfile::tempdir().unwrap();
        let mut s = serve_stdio(dir.path(), era);
        let call = |s: &mut common::Server, id, token, level| {
            s.notifications.clear();
            s.send_line(&call_message(era, id, 3, token, level).to_string());
            let r = s.wait_for_id(&json!(id));
            (r, std::mem::take(&mut s.notifications))
        };

        // With a token: every step, mapped to the client's token, in order,
        // before the result.
        let level = (era == Era::Modern).then_some("info");
        let (r, notes) = call(&mut s, 101, Some("client-token"), level);
        assert_eq!(text(&r), "did 3 steps", "{era:?}: {r}");
        assert_eq!(
            progress(&notes),
            steps("client-token", 3),
            "{era:?}: {notes:?}"
        );
        let mut want = info_logs(3);
        if era == Era::Legacy {
            // No `logging/setLevel` yet: everything.
            want.insert(0, ("debug".into(), "starting".into()));
        }
        assert_eq!(logs(&notes), want, "{era:?}: {notes:?}");

        // Without a token: no progress; on 2026-07-28 without a level, no
        // log messages either (the spec's MUST NOT).
        let (r, notes) = call(&mut s, 102, None, None);
        assert_eq!(text(&r), "did 3 steps", "{era:?}: {r}");
        assert_eq!(progress(&notes), [], "{era:?}: {notes:?}");
        match era {
            Era::Legacy => assert_eq!(logs(&notes).len(), 4, "{notes:?}"),
            Era::Modern => assert_eq!(logs(&notes), [], "{notes:?}"),
        }

        if era == Era::Legacy {
            // The session's level holds back what is less severe.
            let r = s.request("logging/setLevel", json!({"level": "info"}));
            assert_eq!(r["result"], json!({}), "{r}");
            let (_, notes) = call(&mut s, 103, Some(""), None);
            assert_eq!(logs(&notes), info_logs(3), "{notes:?}");
            // An empty token is a token.
            assert_eq!(progress(&notes), steps("", 3), "{notes:?}");
        }
    }
}

#[test]
fn over_http_progress_and_log_messages_go_on_the_request_stream_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let http = serve_http(dir.path());
    for era in Era::ALL {
        let c = McpHttp::connect(http.addr, era);
        let msg = call_message(era, 7, 3, Some("tok"), Some("info"));
        let resp = c.post(&msg, "tools/call");
        assert_eq!(resp.status, 200, "{era:?}: {}", resp.text());
        let r = resp.response_to(&json!(7));
        assert_eq!(text(&r), "did 3 steps", "{era:?}: {r}");
        let notes = resp.messages();
        assert_eq!(
            progress(&notes),
            steps("tok", 3),
            "{era:?}: {}",
            resp.text()
        );
        match era {
            // rmcp's session manager puts a log message on the session's
            // standalone stream, not the request's (docs/upstreams.md).
            Era::Legacy => {}
            Era::Modern => assert_eq!(logs(&notes), info_logs(3), "{}", resp.text()),
        }
        // Without a token or a level: the result alone.
        let msg = call_message(era, 8, 3, None, None);
        let resp = c.post(&msg, "tools/call");
        let notes = resp.messages();
        assert_eq!(progress(&notes), [], "{era:?}: {}", resp.text());
        if era == Era::Modern {
            assert_eq!(logs(&notes), [], "{}", resp.text());
        }
    }
}

#[test]
fn concurrent_clients_each_get_only_their_own_progress() {
    let dir = tempfile::tempdir().unwrap();
    let http = serve_http(dir.path());
    // The same token on all: what keeps them apart is regent's own. The
    // 2026-07-28 ones ask for every log message: while the calls overlap,
    // none can be told apart, and none may reach another's client.
    let clients: Vec<_> = [(Era::Modern, 4u64), (Era::Legacy, 6), (Era::Modern, 5)]
        .into_iter()
        .map(|(era, n)| {
            let addr = http.addr;
            std::thread::spawn(move || {
                let c = McpHttp::connect(addr, era);
                let msg = call_message(era, 9, n, Some("same"), Some("debug"));
                let resp = c.post(&msg, "tools/call");
                let r = resp.response_to(&json!(9));
                assert_eq!(text(&r), format!("did {n} steps"), "{r}");
                (n, resp.messages(), resp.text())
            })
        })
        .collect();
    for c in clients {
        let (n, notes, body) = c.join().unwrap();
        assert_eq!(progress(&notes), steps("same", n), "{body}");
        let own = format!(" of {n}");
        for (_, data) in logs(&notes) {
            assert!(data == "starting" || data.ends_with(&own), "{body}");
        }
    }
}

/// rmcp's client (typed notifications, its own progress token on every
/// request) calls the upstream's `progress` tool through regent over stdio
/// and over HTTP in `era`, asking for `info`; it gets its progress under the
/// token it sent and the `info` messages, and nothing less severe.
#[allow(deprecated)] // logging (SEP-2577)
async fn typed(era: Era, http: bool) {
    let dir = tempfile::tempdir().unwrap();
    let handler = TestClient::default();
    let (client, _serving): (Client, Box<dyn std::any::Any>) = if http {
        let server = serve_http(dir.path());
        let _ = rustls::crypto::ring::default_provider().install_default();
        let transport =
            rmcp::transport::StreamableHttpClientTransport::from_uri(server.url("/mcp"));
        let client = handler
            .clone()
            .serve_with_lifecycle(transport, mode(era))
            .await
            .expect("connect over http");
        (client, Box::new(server))
    } else {
        write_catalog(dir.path());
        let mut cmd = tokio::process::Command::from(regent());
        cmd.arg("serve")
            .arg("--no-watch")
            .arg(dir.path())
            .stderr(std::process::Stdio::null());
        let (client, child) = connect_stdio(cmd, handler.clone(), mode(era)).await;
        (client, Box::new(child))
    };
    let level = rmcp::model::LoggingLevel::Info;
    if era == Era::Legacy {
        client
            .peer()
            .set_level(rmcp::model::SetLevelRequestParams::new(level))
            .await
            .expect("logging/setLevel");
    }
    let mut params = CallToolRequestParams::new("progress");
    params.arguments = json!({"steps": 3, "ms": 20}).as_object().cloned();
    let mut meta = RequestMetaObject::new();
    meta.set_log_level(level);
    params.meta = Some(meta);
    let request = ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params));
    let handle = client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .expect("send tools/call");
    let token = handle.progress_token.clone();
    let result = handle.await_response().await.expect("tools/call");
    let ServerResult::CallToolResult(result) = result else {
        panic!("{era:?}: not a tools/call result: {result:?}");
    };
    let result = serde_json::to_value(&result).unwrap();
    assert_eq!(common::text(&result), "did 3 steps", "{era:?} http={http}");
    // rmcp hands each notification to a task of its own: wait for them.
    let deadline = std::time::Instant::now() + common::WAIT;
    while (handler.progress.lock().unwrap().len() < 3 || handler.logs.lock().unwrap().len() < 3)
        && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let mut progress: Vec<_> = handler
        .progress
        .lock()
        .unwrap()
        .iter()
        .map(|p| {
            assert_eq!(p.progress_token, token, "{era:?} http={http}");
            (p.progress, p.total, p.message.clone().unwrap_or_default())
        })
        .collect();
    progress.sort_by(|a, b| a.0.total_cmp(&b.0));
    let want: Vec<_> = (1..=3)
        .map(|i| (f64::from(i), Some(3.0), format!("step {i} of 3")))
        .collect();
    assert_eq!(progress, want, "{era:?} http={http}");
    let mut logs: Vec<String> = handler
        .logs
        .lock()
        .unwrap()
        .iter()
        .map(|m| m.data.as_str().unwrap_or_default().to_string())
        .collect();
    logs.sort();
    // On a 2025-11-25 HTTP session they come on the session's standalone
    // stream, which rmcp's client reads too.
    assert_eq!(
        logs,
        ["step 1 of 3", "step 2 of 3", "step 3 of 3"],
        "{era:?} http={http}"
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn rmcp_client_gets_typed_progress_and_log_messages_over_stdio_and_http() {
    for era in Era::ALL {
        for http in [false, true] {
            typed(era, http).await;
        }
    }
}

#[test]
fn through_a_url_upstream_they_are_relayed_again() {
    // regent A serves the kit's upstream over HTTP; regent B declares A as
    // a `url:` upstream and is driven over stdio: what the kit's upstream
    // says reaches B's client through both relays.
    let a_dir = tempfile::tempdir().unwrap();
    let a = serve_http(a_dir.path());
    let b_dir = tempfile::tempdir().unwrap();
    std::fs::write(
        b_dir.path().join("b.yaml"),
        format!("upstreams:\n  - name: a\n    url: http://{}/mcp\n", a.addr),
    )
    .unwrap();
    for era in Era::ALL {
        let mut cmd = regent();
        cmd.arg("serve").arg("--no-watch").arg(b_dir.path());
        let mut b = common::Server::spawn(era, cmd);
        b.send_line(&call_message(era, 5, 3, Some("via-a"), Some("info")).to_string());
        let r = b.wait_for_id(&json!(5));
        assert_eq!(text(&r), "did 3 steps", "{era:?}: {r}");
        let notes = std::mem::take(&mut b.notifications);
        assert_eq!(progress(&notes), steps("via-a", 3), "{era:?}: {notes:?}");
        let mut want = info_logs(3);
        if era == Era::Legacy {
            // The level of a 2025-11-25 session is its `logging/setLevel`
            // (none yet: everything), not a `_meta` key of its era's future.
            want.insert(0, ("debug".into(), "starting".into()));
        }
        // B's session with A is 2025-11-25, on which A (rmcp's session
        // manager) sends log messages on the session's standalone stream,
        // not the call's (docs/upstreams.md): B may get the last of them
        // after the result, when the call is over and no call can own them.
        // Those go to B's own log, as messages tied to no call. So B's
        // client gets the first of them, in order, and B's log the rest.
        let relayed = logs(&notes);
        assert!(
            want.starts_with(&relayed),
            "{era:?}: relayed {relayed:?}, not the first of {want:?}"
        );
        if relayed.len() < want.len() {
            eprintln!(
                "{era:?}: not relayed (after the result), so in B's log: {:?}",
                &want[relayed.len()..]
            );
        }
        for (_, data) in &want[relayed.len()..] {
            let late = |log: &str| {
                log.lines()
                    .any(|l| l.contains("(not tied to one call)") && l.contains(data.as_str()))
            };
            let log = b.stderr_until(late);
            assert!(
                late(&log),
                "{era:?}: {data:?} reached neither B's client before the result nor B's log\nnotifications: {notes:?}\nB's log:\n{log}"
            );
        }
    }
}
