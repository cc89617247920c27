//! The operator routes: `GET /healthz` and `GET /metrics`.
//!
//! Both read; neither changes anything. The catalog's state comes from
//! `state::CatalogState` at the moment of the request, the counters from
//! `metrics::Metrics`.

use std::sync::Arc;
use std::time::UNIX_EPOCH;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::json;

use super::guard::Shared;
use crate::metrics::{self, BundleScrape, Scrape, UpstreamScrape};

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

/// The Prometheus text exposition format, version 0.0.4: the process
/// metrics, then the catalog's state read now (`metrics::Scrape`).
pub async fn metrics(State(s): State<Arc<Shared>>) -> Response {
    let status = s.state.status();
    let catalog = s.state.current();
    let scrape = Scrape {
        catalog_revision: catalog.revision.clone(),
        bundle: status.bundle.as_ref().map(|b| BundleScrape {
            bundle: b.name.clone(),
            revision: b.revision.clone(),
            key_id: b.key_id.clone().unwrap_or_default(),
        }),
        catalog_tools: catalog.tools().len(),
        catalog_loaded_at: unix_seconds(status.loaded_at),
        catalog_loads_succeeded: status.successes,
        catalog_loads_failed: status.failures,
        catalog_last_load_failed: status.last_error.is_some(),
        upstreams: status
            .upstreams
            .iter()
            .map(|(name, u)| UpstreamScrape {
                name: name.clone(),
                up: u.up,
                restarts: u.restarts,
                quarantined: catalog
                    .quarantined
                    .iter()
                    .filter(|q| &q.upstream == name)
                    .count(),
            })
            .collect(),
        http_requests_in_flight: s.in_flight(),
    };
    let mut out = String::with_capacity(4096);
    if s.metrics.render(&mut out, &scrape).is_err() {
        // Writing to a String does not fail; if the encoder ever refuses,
        // say so rather than serve half an exposition.
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            "metrics could not be rendered\n",
        )
            .into_response();
    }
    let mut r = (StatusCode::OK, out).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(metrics::CONTENT_TYPE),
    );
    r
}

fn unix_seconds(t: std::time::SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
