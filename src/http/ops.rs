//! The operator routes: `GET /healthz` and `GET /metrics`.
//!
//! Both read; neither changes anything. The catalog's state comes from
//! `state::CatalogState` at the moment of the request, the counters from
//! `metrics::Metrics`.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::json;

use super::guard::Shared;
use crate::metrics::{escape, header as family};

/// 200 with the serving revision. A catalog is always loaded while the
/// server runs (it does not start without one, and a failed reload keeps the
/// previous one), so anything else is a 503 from the shutdown guard.
///
/// An upstream MCP server that is down makes the status `degraded`, still
/// with 200: the replica answers every method for every tool, calls to that
/// upstream's tools fail closed while its supervisor restarts it, and the
/// upstream is usually shared by every replica (the same command, the same
/// backend), so a balancer that pulled replicas for it would take down the
/// tools that work without bringing back the ones that do not. `upstreams`
/// says which are down; alert on `regent_upstream_up` instead.
///
/// So does an upstream tool quarantined for drifting from its pin: every
/// replica that loaded the same pin and reaches the same upstream holds the
/// same tool back, so pulling one helps nothing; `upstreams.NAME.quarantined`
/// says which and why, `regent_upstream_tools_quarantined` alerts.
pub async fn healthz(State(s): State<Arc<Shared>>) -> Response {
    let status = s.state.status();
    let catalog = s.state.current();
    let degraded = status.degraded();
    let mut body = json!({
        "status": if degraded { "degraded" } else { "ok" },
        "revision": catalog.revision,
        "tools": catalog.tools().len(),
        "loadedAt": unix_seconds(status.loaded_at),
        "lastReloadError": status.last_error,
    });
    if !status.upstreams.is_empty() {
        body["upstreams"] = status.upstreams_json();
    }
    if let Some(b) = &status.bundle {
        body["bundle"] = b.to_json();
    }
    let mut r = (StatusCode::OK, body.to_string()).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// The Prometheus text exposition format, version 0.0.4.
pub async fn metrics(State(s): State<Arc<Shared>>) -> Response {
    let mut out = String::with_capacity(4096);
    s.metrics.render(&mut out);

    let status = s.state.status();
    let catalog = s.state.current();
    family(
        &mut out,
        "regent_catalog_info",
        "The catalog being served; its revision digest is the label",
        "gauge",
    );
    let _ = writeln!(
        out,
        "regent_catalog_info{{revision=\"{}\"}} 1",
        escape(&catalog.revision)
    );
    if let Some(b) = &status.bundle {
        family(
            &mut out,
            "regent_bundle_info",
            "The bundle the serving catalog came from (serve --bundle-url): its name, manifest revision and signing key id",
            "gauge",
        );
        let _ = writeln!(
            out,
            "regent_bundle_info{{bundle=\"{}\",revision=\"{}\",key_id=\"{}\"}} 1",
            escape(&b.name),
            escape(&b.revision),
            escape(b.key_id.as_deref().unwrap_or(""))
        );
    }
    family(
        &mut out,
        "regent_catalog_tools",
        "Tools in the catalog being served",
        "gauge",
    );
    let _ = writeln!(out, "regent_catalog_tools {}", catalog.tools().len());
    family(
        &mut out,
        "regent_catalog_loaded_timestamp_seconds",
        "When the catalog being served was loaded, in seconds since the Unix epoch",
        "gauge",
    );
    let _ = writeln!(
        out,
        "regent_catalog_loaded_timestamp_seconds {}",
        unix_seconds(status.loaded_at)
    );
    family(
        &mut out,
        "regent_catalog_loads_total",
        "Catalog builds by outcome: a success was swapped in (the first load counts), a failure left the previous catalog serving",
        "counter",
    );
    let _ = writeln!(
        out,
        "regent_catalog_loads_total{{outcome=\"success\"}} {}",
        status.successes
    );
    let _ = writeln!(
        out,
        "regent_catalog_loads_total{{outcome=\"failure\"}} {}",
        status.failures
    );
    family(
        &mut out,
        "regent_catalog_last_load_failed",
        "1 when the latest reload failed and an older catalog is still serving",
        "gauge",
    );
    let _ = writeln!(
        out,
        "regent_catalog_last_load_failed {}",
        u8::from(status.last_error.is_some())
    );
    if !status.upstreams.is_empty() {
        family(
            &mut out,
            "regent_upstream_up",
            "1 when the upstream MCP server is connected and its process runs, 0 while it is down",
            "gauge",
        );
        for (name, u) in &status.upstreams {
            let _ = writeln!(
                out,
                "regent_upstream_up{{upstream=\"{}\"}} {}",
                escape(name),
                u8::from(u.up)
            );
        }
        family(
            &mut out,
            "regent_upstream_restarts_total",
            "Times the upstream MCP server was started again after it went down",
            "counter",
        );
        for (name, u) in &status.upstreams {
            let _ = writeln!(
                out,
                "regent_upstream_restarts_total{{upstream=\"{}\"}} {}",
                escape(name),
                u.restarts
            );
        }
        family(
            &mut out,
            "regent_upstream_tools_quarantined",
            "Tools of the upstream MCP server held back (not listed, calls refused) because it lists them differently from its pinned snapshot",
            "gauge",
        );
        for name in status.upstreams.keys() {
            let n = catalog
                .quarantined
                .iter()
                .filter(|q| &q.upstream == name)
                .count();
            let _ = writeln!(
                out,
                "regent_upstream_tools_quarantined{{upstream=\"{}\"}} {n}",
                escape(name)
            );
        }
    }
    family(
        &mut out,
        "regent_http_requests_in_flight",
        "MCP requests (POST, DELETE) being answered now",
        "gauge",
    );
    let _ = writeln!(out, "regent_http_requests_in_flight {}", s.in_flight());

    let mut r = (StatusCode::OK, out).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    r
}

fn unix_seconds(t: std::time::SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
