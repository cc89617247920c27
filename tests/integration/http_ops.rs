//! Operating `serve --http`: `/healthz` and `/metrics`, reloads seen there,
//! a catalog refused at load, and binding beyond loopback.

use crate::common;

use crate::http::catalog;
use common::http::{HttpServer, McpHttp, Req};
use common::{Era, regent};
use serde_json::{Value, json};

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

/// The series users scrape from `/metrics`, after a few requests of each
/// kind: every `# TYPE` line and every sample's name and labels (the catalog
/// revision's value masked). A change to this list breaks dashboards, alerts
/// and recording rules, so it is a change to document (docs/http.md, "Metrics"),
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
