//! An upstream's requests to the client during a forwarded call (issue 29
//! item 1): decided by the tool's `upstream_request` rule or its default,
//! logged, and relayed to the calling client when allowed and when it
//! declared the capability. rmcp's typed client (the kit's `TestClient`)
//! calls the kit's upstream's `ask` tool through regent, over stdio and
//! `serve --http`, 2025-11-25; on 2026-07-28 each relayed request is an
//! `input_required` round of the client's call, the upstream call parked in
//! regent until the retry.

use crate::common;
use crate::upstream_edges::declaration;

use common::http::HttpServer;
use common::rmcp_client::{Client, TestClient, connect_stdio, mode};
use common::{Era, regent};
use rmcp::model::{CallToolRequestParams, ElicitationAction};
use rmcp::service::ClientServiceExt;
use serde_json::{Value, json};

/// Sampling relayed only when the call's `ask` holds `allow_sample`, or
/// `marshal_numbers` and the request's numbers written as expected;
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

upstream_request := "relay" if {
	input.request.method == "sampling/createMessage"
	"marshal_numbers" in input.arguments.ask
	json.marshal(input.request.params.maxTokens) == "10"
	json.marshal(object.get(input.request.params, "temperature", 0)) in {"0", "0.5"}
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
    connect_with(dir, handler, era, http, &[]).await
}

/// [`connect`] with more arguments to `serve`.
async fn connect_with(
    dir: &std::path::Path,
    handler: TestClient,
    era: Era,
    http: bool,
    extra: &[&str],
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
            .args(extra)
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
            .args(extra)
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

/// A client that answers everything: elicitation accepted with colour
/// blue, one root, a sample.
fn answering_client() -> TestClient {
    let mut answers = serde_json::Map::new();
    answers.insert("colour".into(), json!("blue"));
    TestClient {
        elicit: Some(ElicitationAction::Accept),
        roots: Some(vec!["file:///work".into()]),
        answers,
        sample: Some("hi there".into()),
        ..Default::default()
    }
}

async fn relayed_and_refused(http: bool) {
    let dir = tempfile::tempdir().unwrap();
    let handler = answering_client();
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
    for (http, era) in [
        (false, Era::Legacy),
        (true, Era::Legacy),
        (false, Era::Modern),
        (true, Era::Modern),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (client, _serving) = connect(dir.path(), TestClient::default(), era, http).await;
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

/// The decision-log lines of the call `id` (`kind: "call"`), waiting for
/// `n` (the log is written behind the answers).
fn call_lines(dir: &std::path::Path, id: &str, n: usize) -> Vec<Value> {
    let deadline = std::time::Instant::now() + common::WAIT;
    loop {
        let text = std::fs::read_to_string(dir.join("decisions.log")).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|l| l["kind"] == "call" && l["id"] == id)
            .collect();
        if lines.len() >= n || std::time::Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// How many times the kit's upstream was called with `ask`.
fn asks_run(dir: &std::path::Path) -> usize {
    std::fs::read_to_string(dir.join("calls.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("call ask"))
        .count()
}

/// One `tools/call` of `ask` with `what`, without rmcp driving the rounds:
/// what regent answered, as JSON.
async fn ask_once(
    client: &Client,
    what: &[&str],
    responses: Option<Value>,
    state: Option<&str>,
) -> Result<Value, rmcp::ServiceError> {
    let mut params = CallToolRequestParams::new("ask");
    params.arguments = json!({ "ask": what }).as_object().cloned();
    params.input_responses = responses.map(|r| serde_json::from_value(r).unwrap());
    params.request_state = state.map(str::to_string);
    let r = client.peer().call_tool_once(params).await?;
    Ok(match r {
        rmcp::model::CallToolResponse::Complete(r) => serde_json::to_value(&r).unwrap(),
        rmcp::model::CallToolResponse::InputRequired(r) => serde_json::to_value(&r).unwrap(),
        other => panic!("{other:?}"),
    })
}

/// The JSON-RPC error of a refused retry.
fn refused(r: Result<Value, rmcp::ServiceError>) -> rmcp::ErrorData {
    match r {
        Err(rmcp::ServiceError::McpError(e)) => e,
        other => panic!("not refused: {other:?}"),
    }
}

async fn rounds_on_2026_07_28(http: bool) {
    let dir = tempfile::tempdir().unwrap();
    let handler = answering_client();
    let (client, _serving) = connect(dir.path(), handler.clone(), Era::Modern, http).await;

    // rmcp's client drives the rounds: the elicitation, then the roots, each
    // an `input_required` round answered by the handler; the answers reach
    // the upstream; sampling is refused by default and the call completes
    // as the upstream decides.
    let mut params = CallToolRequestParams::new("ask");
    params.arguments = json!({ "ask": ["elicit", "roots", "sample"] })
        .as_object()
        .cloned();
    let r = client.call_tool(params).await.expect("tools/call");
    let r = serde_json::to_value(&r).unwrap();
    let got: Value = serde_json::from_str(&common::text(&r)).unwrap_or_else(|_| panic!("{r}"));
    assert_eq!(
        got["elicit"]["result"],
        json!({"action": "accept", "content": {"colour": "blue"}}),
        "http={http}: {got}"
    );
    assert_eq!(
        got["roots"]["result"]["roots"][0]["uri"], "file:///work",
        "{got}"
    );
    assert!(
        error(&got, "sample").contains("refuses `sampling/createMessage` by default"),
        "{got}"
    );
    assert_eq!(*handler.asked.lock().unwrap(), ["pick a colour"]);
    assert_eq!(*handler.roots_listed.lock().unwrap(), 1);
    assert_eq!(r["_meta"]["regent/execution"]["upstream"], "edge", "{r}");
    let id = r["_meta"]["regent/decision"]["id"].as_str().unwrap();
    // One intent line before the forward, one outcome line: the retries
    // wrote none; one line per upstream request, with the call's id.
    let lines = call_lines(dir.path(), id, 2);
    let phases: Vec<&str> = lines.iter().map(|l| l["phase"].as_str().unwrap()).collect();
    assert_eq!(phases, ["intent", "outcome"], "{lines:?}");
    let requests = request_lines(dir.path(), 3);
    let seen: Vec<(&str, &str, &str)> = requests
        .iter()
        .map(|l| {
            (
                l["id"].as_str().unwrap(),
                l["method"].as_str().unwrap(),
                l["decision"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (id, "elicitation/create", "allowed"),
            (id, "roots/list", "allowed"),
            (id, "sampling/createMessage", "denied"),
        ],
        "{requests:?}"
    );
    assert_eq!(asks_run(dir.path()), 1);

    // The policy allows sampling for this call: a round of its own.
    let mut params = CallToolRequestParams::new("ask");
    params.arguments = json!({ "ask": ["sample", "allow_sample"] })
        .as_object()
        .cloned();
    let r = client.call_tool(params).await.expect("tools/call");
    let got: Value =
        serde_json::from_str(&common::text(&serde_json::to_value(&r).unwrap())).unwrap();
    assert_eq!(
        got["sample"]["result"]["content"]["text"], "hi there",
        "{got}"
    );
    assert_eq!(got["sample"]["result"]["model"], "test-model", "{got}");

    // By hand: the round carries the upstream's question as it asked it.
    let first = ask_once(&client, &["elicit"], None, None).await.unwrap();
    assert_eq!(first["resultType"], "input_required", "{first}");
    let asked = &first["inputRequests"]["regent/upstream"];
    assert_eq!(asked["method"], "elicitation/create", "{first}");
    assert_eq!(asked["params"]["message"], "pick a colour", "{first}");
    let state = first["requestState"].as_str().unwrap().to_string();
    let parked = |n: f64| {
        if let Some(server) = _serving.downcast_ref::<HttpServer>() {
            assert_eq!(server.metric(None, "regent_calls_parked"), Some(n));
        }
    };
    parked(1.0);
    // A tampered state is refused, and nothing runs again.
    let mut tampered = state.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    let decline = json!({"regent/upstream": {"action": "decline"}});
    let e = refused(ask_once(&client, &["elicit"], Some(decline.clone()), Some(&tampered)).await);
    assert_eq!(e.data.unwrap()["reason"], "invalid-request-state");
    // Other arguments: the state is bound to them.
    let e = refused(
        ask_once(
            &client,
            &["elicit", "roots"],
            Some(decline.clone()),
            Some(&state),
        )
        .await,
    );
    assert_eq!(e.data.unwrap()["reason"], "invalid-request-state");
    // A declined answer reaches the upstream, which completes the call.
    let done = ask_once(&client, &["elicit"], Some(decline.clone()), Some(&state))
        .await
        .unwrap();
    let got: Value = serde_json::from_str(&common::text(&done)).unwrap();
    assert_eq!(got["elicit"]["result"]["action"], "decline", "{done}");
    assert_ne!(done["isError"], true, "{done}");
    parked(0.0);
    // The state opens once.
    let e = refused(ask_once(&client, &["elicit"], Some(decline), Some(&state)).await);
    assert!(e.message.contains("already used"), "{}", e.message);
    assert_eq!(asks_run(dir.path()), 3, "nothing ran twice");
    client.cancel().await.ok();
}

#[tokio::test]
async fn on_2026_07_28_an_upstream_request_is_an_input_required_round() {
    for http in [false, true] {
        rounds_on_2026_07_28(http).await;
    }
}

#[tokio::test]
async fn a_retry_that_reaches_another_replica_is_refused_and_runs_nothing() {
    let key_dir = tempfile::tempdir().unwrap();
    let key = key_dir.path().join("state.key");
    std::fs::write(&key, [7u8; 32]).unwrap();
    let key = key.display().to_string();
    let handler = TestClient {
        elicit: Some(ElicitationAction::Accept),
        ..Default::default()
    };
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let extra = ["--request-state-key-file", key.as_str()];
    let (a, _a) = connect_with(a_dir.path(), handler.clone(), Era::Modern, false, &extra).await;
    let (b, _b) = connect_with(b_dir.path(), handler.clone(), Era::Modern, false, &extra).await;
    let first = ask_once(&a, &["elicit"], None, None).await.unwrap();
    let state = first["requestState"].as_str().unwrap().to_string();
    let accept = json!({"regent/upstream": {"action": "accept", "content": {"colour": "red"}}});
    // B opens the state (same key) but has no such call parked.
    let e = refused(ask_once(&b, &["elicit"], Some(accept.clone()), Some(&state)).await);
    assert_eq!(
        e.data.as_ref().unwrap()["reason"],
        "call-not-parked",
        "{e:?}"
    );
    assert!(
        e.message.contains("must reach the same replica") && e.message.contains("call again"),
        "{}",
        e.message
    );
    assert_eq!(asks_run(b_dir.path()), 0, "B ran nothing");
    // A still holds it: the same retry there completes the call.
    let done = ask_once(&a, &["elicit"], Some(accept), Some(&state))
        .await
        .unwrap();
    let got: Value = serde_json::from_str(&common::text(&done)).unwrap();
    assert_eq!(
        got["elicit"]["result"]["content"]["colour"], "red",
        "{done}"
    );
    assert_eq!(asks_run(a_dir.path()), 1);
    a.cancel().await.ok();
    b.cancel().await.ok();
}

#[tokio::test]
async fn a_parked_call_whose_client_never_retries_is_cancelled_at_its_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let handler = TestClient {
        elicit: Some(ElicitationAction::Accept),
        ..Default::default()
    };
    let extra = ["--request-state-ttl", "1"];
    let (client, _serving) =
        connect_with(dir.path(), handler.clone(), Era::Modern, false, &extra).await;
    let first = ask_once(&client, &["elicit"], None, None).await.unwrap();
    let state = first["requestState"].as_str().unwrap().to_string();
    // The deadline passes: the call is cancelled upstream and its outcome
    // written.
    let deadline = std::time::Instant::now() + common::WAIT;
    let outcome = loop {
        let text = std::fs::read_to_string(dir.path().join("decisions.log")).unwrap_or_default();
        let found = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|l| l["kind"] == "call" && l["phase"] == "outcome");
        if let Some(line) = found {
            break line;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never expired: {text}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert!(
        outcome["outcome"]["error"]
            .as_str()
            .unwrap()
            .contains("cancelled"),
        "{outcome}"
    );
    let accept = json!({"regent/upstream": {"action": "accept", "content": {}}});
    let e = refused(ask_once(&client, &["elicit"], Some(accept), Some(&state)).await);
    assert_eq!(e.data.unwrap()["reason"], "invalid-request-state");
    assert_eq!(asks_run(dir.path()), 1, "nothing ran again");
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

#[test]
fn a_parked_call_is_continued_only_by_the_caller_that_started_it() {
    use crate::jwt_support::{AUDIENCE, ISSUER, ec_jwk, jwt, now, p256};
    use common::http::McpHttp;
    let dir = tempfile::tempdir().unwrap();
    write_catalog(dir.path());
    let rng = ring::rand::SystemRandom::new();
    let key = p256(&rng);
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, json!({"keys": [ec_jwk(&key, "ec-1")]}).to_string()).unwrap();
    let token = |sub: &str| {
        let header = json!({"alg": "ES256", "kid": "ec-1", "typ": "JWT"});
        let claims = json!({"sub": sub, "iss": ISSUER, "aud": AUDIENCE,
                            "iat": now(), "exp": now() + 300});
        jwt(&header, &claims, |input| {
            key.sign(&rng, input).unwrap().as_ref().to_vec()
        })
    };
    let log = dir.path().join("decisions.log");
    let server = HttpServer::start(&[
        "--no-watch",
        "--jwt-jwks-file",
        jwks.to_str().unwrap(),
        "--jwt-issuer",
        ISSUER,
        "--jwt-audience",
        AUDIENCE,
        "--decision-log",
        log.to_str().unwrap(),
        dir.path().to_str().unwrap(),
    ]);
    let client = |sub: &str| {
        McpHttp::connect_caps(
            server.addr,
            Era::Modern,
            vec![("Authorization".into(), format!("Bearer {}", token(sub)))],
            json!({"elicitation": {"form": {}}}),
        )
    };
    let (mut alice, mut bob) = (client("alice"), client("bob"));
    let call = json!({"name": "ask", "arguments": {"ask": ["elicit"]}});
    let first = alice.request("tools/call", call.clone());
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].clone();
    let mut retry = call.clone();
    retry["requestState"] = state;
    retry["inputResponses"] =
        json!({"regent/upstream": {"action": "accept", "content": {"colour": "red"}}});
    // Bob has Alice's state: refused, and Alice's call is cancelled.
    let r = bob.request("tools/call", retry.clone());
    let message = r["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    assert!(message.contains("started by another caller"), "{r}");
    // The state was spent: Alice calls again.
    let r = alice.request("tools/call", retry);
    assert_eq!(r["error"]["data"]["reason"], "invalid-request-state", "{r}");
    assert_eq!(asks_run(dir.path()), 1, "nothing ran again");
}

/// The upstream's request reaches the rule parsed by rmcp, its text unseen
/// (issue 27): OPA writes a number back as the upstream spelled it (`0.50`
/// stays `0.50`), so a rule writing a float of it fails closed, as for an
/// elicitation reply (`Spelled::with_unseen`); a plain integer has one
/// spelling and is written.
#[tokio::test]
async fn an_upstream_requests_float_is_not_written_by_a_rule() {
    for http in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let handler = answering_client();
        let (client, _serving) = connect(dir.path(), handler.clone(), Era::Legacy, http).await;
        // `maxTokens: 10` alone: written as OPA writes it, relayed.
        let (got, _) = ask(&client, &["sample", "marshal_numbers"]).await;
        assert_eq!(
            got["sample"]["result"]["content"]["text"], "hi there",
            "http={http}: {got}"
        );
        // `temperature: 0.5` too: the rule fails, the request is refused.
        let (got, _) = ask(&client, &["sample_warm", "marshal_numbers"]).await;
        let why = error(&got, "sample_warm");
        assert!(why.contains("sampling/createMessage"), "http={http}: {why}");
        let lines = request_lines(dir.path(), 2);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[0]["decision"], "allowed", "{lines:?}");
        // The rule failed: an error, which refuses (`outcome.relayed`).
        assert_eq!(lines[1]["decision"], "error", "{lines:?}");
        assert_eq!(lines[1]["outcome"]["relayed"], false, "{lines:?}");
        let refused = lines[1]["error"].as_str().unwrap_or_default();
        assert!(
            refused.contains("json.marshal")
                && refused.contains(
                    "the upstream's request spelled the number 0.5 (regent cannot see its text"
                )
                && refused.contains("have it given as an integer or a string"),
            "http={http}: {refused}"
        );
        assert_eq!(handler.asked.lock().unwrap().len(), 0);
    }
}
