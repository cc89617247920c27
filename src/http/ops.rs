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
pub async fn healthz(State(s): State<Arc<Shared>>) -> Response {
    let status = s.state.status();
    let catalog = s.state.current();
    let body = json!({
        "status": "ok",
        "revision": catalog.revision,
        "tools": catalog.tools().len(),
        "loadedAt": unix_seconds(status.loaded_at),
        "lastReloadError": status.last_error,
    });
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
