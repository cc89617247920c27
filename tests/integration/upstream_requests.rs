//! An upstream's requests to the client during a forwarded call (issue 29
//! item 1): decided by the tool's `upstream_request` rule or its default,
//! logged, and relayed to the calling client when allowed and when it
//! declared the capability. rmcp's typed client (the kit's `TestClient`)
//! calls the kit's upstream's `ask` tool through regent, over stdio and
//! `serve --http`, 2025-11-25; on 2026-07-28 every such request is refused
//! (not built yet).

use crate::common;
use crate::upstream_edges::declaration;

use common::http::HttpServer;
use common::rmcp_client::{Client, TestClient, connect_stdio, mode};
use common::{Era, regent};
use rmcp::model::{CallToolRequestParams, ElicitationAction};
use rmcp::service::ClientServiceExt;
use serde_json::{Value, json};

/// Sampling relayed only when the call's `ask` holds `allow_sample`;
/// elicitation refused when it holds `no_elicit`; the rest by default.
const POLICY: &str = r#"package tools.ask

import rego.v1

upstream_request := "relay" if {
	input.request.method == "sampling/createMessage"
	"allow_sample" in input.arguments.ask
}

upstream_request := "refuse" if {
	input.request.method == "elicitation/create"
	"no_elicit" in input.arguments.ask
}
"#;

fn write_catalog(dir: &std::path::Path) {
    let tools = "    tools:\n      - name: ask\n        policy: tools.ask\n      - name: slow\n";
    let upstream = declaration("edge", &dir.join("calls.log"), tools);
    std::fs::write(
        dir.join("upstreams.yaml"),
        format!("upstreams:\n{upstream}"),
    )
    .unwrap();
    std::fs::write(dir.join("ask.rego"), POLICY).unwrap();
}

/// Connects `handler` to regent serving the kit's upstream, over stdio or
/// HTTP, in `era`, with its decision log in `dir/decisions.log`.
async fn connect(
    dir: &std::path::Path,
    handler: TestClient,
    era: Era,
    http: bool,
) -> (Client, Box<dyn std::any::Any>) {
    write_catalog(dir);
    let log = dir.join("decisions.log");
    if http {
        let mut cmd = regent();
        cmd.arg("serve")
            .arg("--http")
            .arg("127.0.0.1:0")
            .arg("--no-watch")
            .arg("--decision-log")
            .arg(&log)
            .arg(dir);
        let server = HttpServer::spawn(cmd);
        let _ = rustls::crypto::ring::default_provider().install_default();
        let transport =
            rmcp::transport::StreamableHttpClientTransport::from_uri(server.url("/mcp"));
        let client = handler
            .serve_with_lifecycle(transport, mode(era))
            .await
            .expect("connect over http");
        (client, Box::new(server))
    } else {
        let mut cmd = tokio::process::Command::from(regent());
        cmd.arg("serve")
            .arg("--no-watch")
            .arg("--decision-log")
            .arg(&log)
            .arg(dir)
            .stderr(std::process::Stdio::null());
        let (client, child) = connect_stdio(cmd, handler, mode(era)).await;
        (client, Box::new(child))
    }
}

/// Calls `ask` with `what`; what the upstream got for each request, and
/// the call's decision id.
async fn ask(client: &Client, what: &[&str]) -> (Value, String) {
    let mut params = CallToolRequestParams::new("ask");
    params.arguments = json!({ "ask": what }).as_object().cloned();
    let r = client.peer().call_tool(params).await.expect("tools/call");
    let r = serde_json::to_value(&r).unwrap();
    let text = common::text(&r);
    let got = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{r}"));
    let id = r["_meta"]["regent/decision"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_string();
    (got, id)
}

/// The decision-log lines of upstream requests, waiting for `n`.
fn request_lines(dir: &std::path::Path, n: usize) -> Vec<Value> {
    let deadline = std::time::Instant::now() + common::WAIT;
    loop {
        let text = std::fs::read_to_string(dir.join("decisions.log")).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|l| l["kind"] == "upstream_request")
            .collect();
        if lines.len() >= n || std::time::Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn error(got: &Value, what: &str) -> String {
    got[what]["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{what} was not refused: {got}"))
        .to_string()
}

async fn relayed_and_refused(http: bool) {
    let dir = tempfile::tempdir().unwrap();
    let mut answers = serde_json::Map::new();
    answers.insert("colour".into(), json!("blue"));
    let handler = TestClient {
        elicit: Some(ElicitationAction::Accept),
        roots: Some(vec!["file:///work".into()]),
        answers,
        sample: Some("hi there".into()),
        ..Default::default()
    };
    let (client, _serving) = connect(dir.path(), handler.clone(), Era::Legacy, http).await;

    // Defaults: elicitation and roots reach the client and its answers the
    // upstream; sampling is refused, and the client is never asked.
    let (got, id) = ask(&client, &["elicit", "roots", "sample"]).await;
    assert_eq!(
        got["elicit"]["result"]["action"], "accept",
        "http={http}: {got}"
    );
    assert_eq!(
        got["elicit"]["result"]["content"],
        json!({"colour": "blue"}),
        "{got}"
    );
    assert_eq!(
        got["roots"]["result"]["roots"][0]["uri"], "file:///work",
        "{got}"
    );
    let why = error(&got, "sample");
    assert!(
        why.contains("refuses `sampling/createMessage` by default"),
        "{why}"
    );
    assert_eq!(*handler.asked.lock().unwrap(), ["pick a colour"]);
    assert_eq!(*handler.roots_listed.lock().unwrap(), 1);
    let lines = request_lines(dir.path(), 3);
    assert_eq!(lines.len(), 3, "{lines:?}");
    let seen: Vec<(&str, &str, &str, bool)> = lines
        .iter()
        .map(|l| {
            (
                l["id"].as_str().unwrap(),
                l["method"].as_str().unwrap(),
                l["decision"].as_str().unwrap(),
                l["outcome"]["relayed"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (id.as_str(), "elicitation/create", "allowed", true),
            (id.as_str(), "roots/list", "allowed", true),
            (id.as_str(), "sampling/createMessage", "denied", false),
        ],
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .all(|l| l["outcome"]["by"] == "default" && l["tool"] == "ask")
    );

    // The policy allows sampling for this call, and refuses elicitation.
    let (got, id) = ask(&client, &["sample", "elicit", "allow_sample", "no_elicit"]).await;
    assert_eq!(
        got["sample"]["result"]["content"]["text"], "hi there",
        "{got}"
    );
    assert_eq!(got["sample"]["result"]["model"], "test-model", "{got}");
    let why = error(&got, "elicit");
    assert!(
        why.contains("the policy of ask refuses `elicitation/create`"),
        "{why}"
    );
    assert_eq!(handler.asked.lock().unwrap().len(), 1, "asked again");
    let lines = request_lines(dir.path(), 5);
    let last: Vec<(&str, &str, &str, &str)> = lines[3..]
        .iter()
        .map(|l| {
            (
                l["id"].as_str().unwrap(),
                l["method"].as_str().unwrap(),
                l["decision"].as_str().unwrap(),
                l["outcome"]["by"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        last,
        [
            (id.as_str(), "sampling/createMessage", "allowed", "policy"),
            (id.as_str(), "elicitation/create", "denied", "policy"),
        ],
        "{lines:?}"
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn requests_are_decided_logged_and_relayed_over_stdio_and_http() {
    for http in [false, true] {
        relayed_and_refused(http).await;
    }
}

#[tokio::test]
async fn a_client_without_the_capability_is_not_asked() {
    for http in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let (client, _serving) =
            connect(dir.path(), TestClient::default(), Era::Legacy, http).await;
        let (got, _) = ask(&client, &["elicit", "roots", "sample", "allow_sample"]).await;
        for (what, capability) in [
            ("elicit", "elicitation"),
            ("roots", "roots"),
            ("sample", "sampling"),
        ] {
            let why = error(&got, what);
            assert!(
                why.contains(&format!("did not declare the {capability} capability")),
                "http={http}: {why}"
            );
            assert_eq!(got[what]["error"]["code"], -32021, "{got}");
        }
        let lines = request_lines(dir.path(), 3);
        assert_eq!(lines.len(), 3, "{lines:?}");
        for l in &lines {
            assert_eq!(l["decision"], "allowed", "{l}");
            assert_eq!(l["outcome"]["relayed"], false, "{l}");
            assert!(
                l["refused"].as_str().unwrap().contains("did not declare"),
                "{l}"
            );
        }
        client.cancel().await.ok();
    }
}

#[tokio::test]
async fn on_2026_07_28_the_upstream_is_told_regent_cannot_relay_yet() {
    let dir = tempfile::tempdir().unwrap();
    let handler = TestClient {
        elicit: Some(ElicitationAction::Accept),
        ..Default::default()
    };
    let (client, _serving) = connect(dir.path(), handler.clone(), Era::Modern, false).await;
    let (got, _) = ask(&client, &["elicit"]).await;
    let why = error(&got, "elicit");
    assert!(
        why.contains("regent cannot relay this request on a 2026-07-28 call yet"),
        "{why}"
    );
    assert!(handler.asked.lock().unwrap().is_empty());
    let lines = request_lines(dir.path(), 1);
    assert_eq!(lines[0]["decision"], "error", "{lines:?}");
    client.cancel().await.ok();
}

#[tokio::test]
async fn a_url_mode_elicitation_needs_the_url_capability() {
    let dir = tempfile::tempdir().unwrap();
    // The kit's client declares `elicitation: {form: {}}` only.
    let handler = TestClient {
        elicit: Some(ElicitationAction::Accept),
        ..Default::default()
    };
    let (client, _serving) = connect(dir.path(), handler.clone(), Era::Legacy, false).await;
    let (got, _) = ask(&client, &["elicit_url"]).await;
    let why = error(&got, "elicit_url");
    assert!(why.contains("elicitation (url mode) capability"), "{why}");
    assert!(handler.asked.lock().unwrap().is_empty());
    client.cancel().await.ok();
}

#[tokio::test]
async fn while_calls_overlap_on_the_connection_a_request_is_refused_as_unattributed() {
    let dir = tempfile::tempdir().unwrap();
    let handler = TestClient {
        roots: Some(vec!["file:///work".into()]),
        ..Default::default()
    };
    write_catalog(dir.path());
    let mut cmd = regent();
    cmd.arg("serve")
        .arg("--http")
        .arg("127.0.0.1:0")
        .arg("--no-watch")
        .arg(dir.path());
    let server = HttpServer::spawn(cmd);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let open = || async {
        let transport =
            rmcp::transport::StreamableHttpClientTransport::from_uri(server.url("/mcp"));
        handler
            .clone()
            .serve_with_lifecycle(transport, mode(Era::Legacy))
            .await
            .expect("connect over http")
    };
    let (other, client) = (open().await, open().await);
    let mut params = CallToolRequestParams::new("slow");
    params.arguments = json!({"ms": 3000}).as_object().cloned();
    let slow = tokio::spawn(async move {
        let r = other.peer().call_tool(params).await;
        other.cancel().await.ok();
        r
    });
    // The slow call is in flight on the upstream's one connection.
    let log = dir.path().join("calls.log");
    let deadline = std::time::Instant::now() + common::WAIT;
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("call slow")
    {
        assert!(std::time::Instant::now() < deadline, "slow never started");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let (got, _) = ask(&client, &["roots"]).await;
    let why = error(&got, "roots");
    assert!(why.contains("several calls were in flight"), "{why}");
    assert_eq!(
        got["roots"]["error"]["data"]["reason"], "unattributed",
        "{got}"
    );
    assert_eq!(*handler.roots_listed.lock().unwrap(), 0);
    slow.await.unwrap().expect("the slow call");
    // Alone again (a new call): relayed.
    let (got, _) = ask(&client, &["roots"]).await;
    assert_eq!(
        got["roots"]["result"]["roots"][0]["uri"], "file:///work",
        "{got}"
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn through_a_url_upstream_they_are_relayed_again() {
    // regent A serves the kit's upstream over HTTP; regent B declares A as
    // a `url:` upstream and is driven over stdio: the kit's upstream's
    // elicitation reaches B's client through both, decided by each.
    let a_dir = tempfile::tempdir().unwrap();
    write_catalog(a_dir.path());
    let mut cmd = regent();
    cmd.arg("serve")
        .arg("--http")
        .arg("127.0.0.1:0")
        .arg("--no-watch")
        .arg(a_dir.path());
    let a = HttpServer::spawn(cmd);
    let b_dir = tempfile::tempdir().unwrap();
    std::fs::write(
        b_dir.path().join("b.yaml"),
        format!("upstreams:\n  - name: a\n    url: http://{}/mcp\n", a.addr),
    )
    .unwrap();
    let mut answers = serde_json::Map::new();
    answers.insert("colour".into(), json!("green"));
    let handler = TestClient {
        elicit: Some(ElicitationAction::Accept),
        answers,
        ..Default::default()
    };
    let mut cmd = tokio::process::Command::from(regent());
    cmd.arg("serve")
        .arg("--no-watch")
        .arg(b_dir.path())
        .stderr(std::process::Stdio::null());
    let (client, _child) = connect_stdio(cmd, handler.clone(), mode(Era::Legacy)).await;
    let (got, _) = ask(&client, &["elicit", "sample"]).await;
    assert_eq!(
        got["elicit"]["result"]["content"],
        json!({"colour": "green"}),
        "{got}"
    );
    // Refused by A's default: B never sees it.
    assert!(error(&got, "sample").contains("by default"), "{got}");
    assert_eq!(*handler.asked.lock().unwrap(), ["pick a colour"]);
    client.cancel().await.ok();
}
