//! Process metrics, and their rendering in the Prometheus text exposition
//! format (version 0.0.4), on the Prometheus project's client,
//! `prometheus-client`.
//!
//! This module only counts and renders. What is counted, and under which
//! label, is decided by the callers: the protocol layer records MCP methods
//! and latencies (`protocol::count`), the HTTP layer records responses and
//! hands over the catalog's state when it is scraped (`http::ops`, as a
//! [`Scrape`]). Label values of the process metrics are `&'static str` (or a
//! status code) chosen by those callers, in fixed label structs, so a client
//! can never create a new time series by sending an unusual method name.
//!
//! The exposition stays the text format regent always served, not the
//! crate's default OpenMetrics: Prometheus asks for OpenMetrics first, and
//! there a histogram's `le="1"` is written `le="1.0"`, which would split
//! every bucket series of an existing scrape in two. Series names are the
//! ones users scrape (tests/integration/http.rs fixes the list); the
//! crate adds `_total` to a counter's name, so counters are registered
//! without it.

use std::fmt;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

/// The `Content-Type` of what [`Metrics::render`] writes.
pub const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

/// Upper bounds (seconds) for resolution latency: a warm evaluation takes
/// microseconds, a slow policy up to its time limit.
const RESOLVE_BUCKETS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];

/// Upper bounds (seconds) for tool calls, which run programs or HTTP requests.
const CALL_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResponseLabels {
    route: &'static str,
    code: u16,
}

/// Every metric regent exports, except the catalog's state, which the
/// caller reads at scrape time and passes to [`Metrics::render`].
///
/// Each field is a handle on a metric in `registry` (the crate's metrics
/// share their value between clones).
pub struct Metrics {
    registry: Registry,
    /// MCP requests by (method, outcome).
    requests: Family<RequestLabels, Counter>,
    /// Failed policy evaluations by reason.
    policy_errors: Family<ReasonLabel, Counter>,
    /// HTTP responses by (route, status code).
    http_responses: Family<ResponseLabels, Counter>,
    /// Bundle polls (`serve --bundle-url`) that left the last good bundle
    /// serving, by reason. Like every family, not rendered while empty.
    bundle_failures: Family<ReasonLabel, Counter>,
    /// Seconds to answer tools/resolve and tools/annotations.
    pub resolve_seconds: Histogram,
    /// Seconds to answer tools/call.
    pub call_seconds: Histogram,
    /// Tool executions running now (`tools/call` past its decision).
    pub calls_in_flight: Gauge,
    /// Tool executions refused because `--max-concurrent-calls` were running.
    pub calls_refused: Counter,
    /// HTTP connections open now.
    pub connections_open: Gauge,
    /// HTTP connections closed at once because `--max-connections` were open.
    pub connections_refused: Counter,
    /// HTTP connections closed at once because `--max-connections-per-peer`
    /// were open from their IP address (not counted in `connections_refused`).
    pub connections_refused_per_peer: Counter,
    /// Decisions the decision-log HTTP sink delivered (`--decision-log-url`).
    pub decision_log_sent: Counter,
    /// Decision-log uploads that failed (each retried, or dropped at exit).
    pub decision_log_failed: Counter,
    /// Decisions the decision-log HTTP sink dropped: its buffer was full,
    /// or they were still unsent at exit.
    pub decision_log_dropped: Counter,
    /// Requests refused because they named an upstream tool quarantined for
    /// drifting from its pin (`data.reason` `upstream-drift`).
    pub drift_refused: Counter,
    /// `tools/call` refused because the caller's token lacks the OAuth
    /// scopes the call needs (`serve --enforce-scopes`).
    pub scope_refused: Counter,
    /// 2026-07-28 retries refused because the shared store of spent
    /// requestStates (`--request-state-store`) did not answer.
    pub state_store_errors: Counter,
    /// Forwarded 2026-07-28 calls waiting for their client's answer to an
    /// upstream's request (`protocol/parked`).
    pub calls_parked: Gauge,
    /// Parked calls cancelled because no retry came before their deadline.
    pub parked_expired: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let m = Metrics {
            registry: Registry::default(),
            requests: Family::default(),
            policy_errors: Family::default(),
            http_responses: Family::default(),
            bundle_failures: Family::default(),
            resolve_seconds: Histogram::new(RESOLVE_BUCKETS.iter().copied()),
            call_seconds: Histogram::new(CALL_BUCKETS.iter().copied()),
            calls_in_flight: Gauge::default(),
            calls_refused: Counter::default(),
            connections_open: Gauge::default(),
            connections_refused: Counter::default(),
            connections_refused_per_peer: Counter::default(),
            decision_log_sent: Counter::default(),
            decision_log_failed: Counter::default(),
            decision_log_dropped: Counter::default(),
            drift_refused: Counter::default(),
            scope_refused: Counter::default(),
            state_store_errors: Counter::default(),
            calls_parked: Gauge::default(),
            parked_expired: Counter::default(),
        };
        let mut r = Registry::default();
        // Counters without their `_total`: the encoder adds it.
        r.register(
            "regent_requests",
            "MCP requests answered, by method and outcome",
            m.requests.clone(),
        );
        r.register(
            "regent_resolve_duration_seconds",
            "Time to answer tools/resolve and tools/annotations, policy evaluation included",
            m.resolve_seconds.clone(),
        );
        r.register(
            "regent_call_duration_seconds",
            "Time to answer tools/call: decision, execution and result",
            m.call_seconds.clone(),
        );
        r.register(
            "regent_policy_errors",
            "Policy evaluations that failed (error, time limit, or a result riskier than listed), by reason",
            m.policy_errors.clone(),
        );
        r.register(
            "regent_bundle_failures",
            "Bundle polls that kept the last good bundle serving, by reason (download, bundle, catalog)",
            m.bundle_failures.clone(),
        );
        r.register(
            "regent_http_responses",
            "HTTP responses, by route and status code",
            m.http_responses.clone(),
        );
        for (name, help, gauge) in [
            (
                "regent_calls_in_flight",
                "Tool executions running now (tools/call past its decision)",
                &m.calls_in_flight,
            ),
            (
                "regent_calls_parked",
                "Forwarded 2026-07-28 calls waiting for the client's answer to an upstream's request",
                &m.calls_parked,
            ),
        ] {
            r.register(name, help, gauge.clone());
        }
        r.register(
            "regent_parked_calls_expired",
            "Parked calls cancelled upstream because no retry came before their deadline",
            m.parked_expired.clone(),
        );
        r.register(
            "regent_calls_refused",
            "tools/call refused because --max-concurrent-calls executions were running",
            m.calls_refused.clone(),
        );
        r.register(
            "regent_http_connections_open",
            "HTTP connections open now",
            m.connections_open.clone(),
        );
        for (name, help, counter) in [
            (
                "regent_http_connections_refused",
                "HTTP connections closed at once because --max-connections were open",
                &m.connections_refused,
            ),
            (
                "regent_http_connections_refused_per_peer",
                "HTTP connections closed at once because --max-connections-per-peer were open from their IP address",
                &m.connections_refused_per_peer,
            ),
            (
                "regent_decision_log_sent",
                "Decisions delivered to the --decision-log-url collector",
                &m.decision_log_sent,
            ),
            (
                "regent_decision_log_upload_failures",
                "Uploads to the --decision-log-url collector that failed (retried with backoff)",
                &m.decision_log_failed,
            ),
            (
                "regent_decision_log_dropped",
                "Decisions never delivered to the --decision-log-url collector: the buffer was full, or they were unsent at exit",
                &m.decision_log_dropped,
            ),
            (
                "regent_upstream_drift_refused",
                "tools/call and tools/resolve refused because the tool is quarantined: its upstream lists it differently from the pin",
                &m.drift_refused,
            ),
            (
                "regent_calls_scope_refused",
                "tools/call refused because the token lacks the OAuth scopes the resolved securitySchemes need (--enforce-scopes)",
                &m.scope_refused,
            ),
            (
                "regent_request_state_store_errors",
                "2026-07-28 retries refused because the --request-state-store did not answer in time or refused the command; nothing ran",
                &m.state_store_errors,
            ),
        ] {
            r.register(name, help, counter.clone());
        }
        Metrics { registry: r, ..m }
    }

    pub fn count_request(&self, method: &'static str, outcome: &'static str) {
        self.requests
            .get_or_create(&RequestLabels { method, outcome })
            .inc();
    }

    pub fn count_policy_error(&self, reason: &'static str) {
        self.policy_errors
            .get_or_create(&ReasonLabel { reason })
            .inc();
    }

    pub fn count_http_response(&self, route: &'static str, status: u16) {
        self.http_responses
            .get_or_create(&ResponseLabels {
                route,
                code: status,
            })
            .inc();
    }

    /// A bundle poll that kept the last good bundle: `download`,
    /// `signature` (or any other refusal of the bundle), `catalog` (it did
    /// not build or check).
    pub fn count_bundle_failure(&self, reason: &'static str) {
        self.bundle_failures
            .get_or_create(&ReasonLabel { reason })
            .inc();
    }

    /// The process metrics, then `scrape`'s, in the Prometheus text format
    /// (version 0.0.4, [`CONTENT_TYPE`]). An error only comes from `out`.
    pub fn render(&self, out: &mut impl fmt::Write, scrape: &Scrape) -> fmt::Result {
        prometheus_text::encode(out, &self.registry)?;
        prometheus_text::encode(out, &scrape.registry())
    }
}

/// The serving state at the moment of a scrape, read by the HTTP layer
/// (from `state::CatalogState` and its own request count) and rendered by
/// [`Metrics::render`] after the process metrics. The label values here
/// (revisions, bundle and upstream names) come from the operator's catalog
/// and configuration, never from a client.
#[derive(Debug, Default)]
pub struct Scrape {
    /// The serving catalog's revision digest.
    pub catalog_revision: String,
    /// The bundle the catalog came from (`serve --bundle-url`).
    pub bundle: Option<BundleScrape>,
    pub catalog_tools: usize,
    /// Seconds since the Unix epoch.
    pub catalog_loaded_at: u64,
    pub catalog_loads_succeeded: u64,
    pub catalog_loads_failed: u64,
    pub catalog_last_load_failed: bool,
    /// Upstream MCP servers; their families are left out when empty.
    pub upstreams: Vec<UpstreamScrape>,
    /// MCP requests (POST, DELETE) being answered now.
    pub http_requests_in_flight: usize,
}

#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BundleScrape {
    pub bundle: String,
    pub revision: String,
    /// Empty when the bundle is not signed.
    pub key_id: String,
}

#[derive(Debug)]
pub struct UpstreamScrape {
    pub name: String,
    pub up: bool,
    pub restarts: u64,
    /// Its tools held back for drifting from the pin.
    pub quarantined: usize,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RevisionLabel {
    revision: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamLabel {
    upstream: String,
}

impl Scrape {
    /// A registry of this scrape's values: built for one scrape and
    /// dropped, so a reload's old revision or a removed upstream leaves no
    /// stale series behind.
    fn registry(&self) -> Registry {
        let mut r = Registry::default();
        // Info metrics: the encoder adds `_info`.
        r.register(
            "regent_catalog",
            "The catalog being served; its revision digest is the label",
            Info::new(RevisionLabel {
                revision: self.catalog_revision.clone(),
            }),
        );
        if let Some(b) = &self.bundle {
            r.register(
                "regent_bundle",
                "The bundle the serving catalog came from (serve --bundle-url): its name, manifest revision and signing key id",
                Info::new(b.clone()),
            );
        }
        r.register(
            "regent_catalog_tools",
            "Tools in the catalog being served",
            gauge(self.catalog_tools),
        );
        r.register(
            "regent_catalog_loaded_timestamp_seconds",
            "When the catalog being served was loaded, in seconds since the Unix epoch",
            gauge(self.catalog_loaded_at),
        );
        let loads = Family::<OutcomeLabel, Counter>::default();
        for (outcome, n) in [
            ("success", self.catalog_loads_succeeded),
            ("failure", self.catalog_loads_failed),
        ] {
            loads.get_or_create(&OutcomeLabel { outcome }).inc_by(n);
        }
        r.register(
            "regent_catalog_loads",
            "Catalog builds by outcome: a success was swapped in (the first load counts), a failure left the previous catalog serving",
            loads,
        );
        r.register(
            "regent_catalog_last_load_failed",
            "1 when the latest reload failed and an older catalog is still serving",
            gauge(u64::from(self.catalog_last_load_failed)),
        );
        let up = Family::<UpstreamLabel, Gauge>::default();
        let restarts = Family::<UpstreamLabel, Counter>::default();
        let quarantined = Family::<UpstreamLabel, Gauge>::default();
        for u in &self.upstreams {
            let label = UpstreamLabel {
                upstream: u.name.clone(),
            };
            up.get_or_create(&label).set(i64::from(u.up));
            restarts.get_or_create(&label).inc_by(u.restarts);
            quarantined
                .get_or_create(&label)
                .set(i64::try_from(u.quarantined).unwrap_or(i64::MAX));
        }
        r.register(
            "regent_upstream_up",
            "1 when the upstream MCP server is connected and its process runs, 0 while it is down",
            up,
        );
        r.register(
            "regent_upstream_restarts",
            "Times the upstream MCP server was started again after it went down",
            restarts,
        );
        r.register(
            "regent_upstream_tools_quarantined",
            "Tools of the upstream MCP server held back (not listed, calls refused) because it lists them differently from its pinned snapshot",
            quarantined,
        );
        r.register(
            "regent_http_requests_in_flight",
            "MCP requests (POST, DELETE) being answered now",
            gauge(self.http_requests_in_flight),
        );
        r
    }
}

/// A gauge holding `v` (saturating: these are counts and timestamps).
fn gauge(v: impl TryInto<i64>) -> Gauge {
    let g = Gauge::default();
    g.set(v.try_into().unwrap_or(i64::MAX));
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(m: &Metrics) -> String {
        let mut out = String::new();
        m.render(&mut out, &Scrape::default()).unwrap();
        out
    }

    #[test]
    fn histogram_buckets_are_cumulative() {
        let m = Metrics::new();
        m.resolve_seconds.observe(0.000_03);
        m.resolve_seconds.observe(0.003);
        m.resolve_seconds.observe(5.0);
        let out = rendered(&m);
        for line in [
            // Bounds are written as Go clients write them (`5e-05`).
            "regent_resolve_duration_seconds_bucket{le=\"5e-05\"} 1",
            "regent_resolve_duration_seconds_bucket{le=\"0.0025\"} 1",
            "regent_resolve_duration_seconds_bucket{le=\"0.005\"} 2",
            "regent_resolve_duration_seconds_bucket{le=\"1\"} 2",
            "regent_resolve_duration_seconds_bucket{le=\"+Inf\"} 3",
            "regent_resolve_duration_seconds_count 3",
        ] {
            assert!(out.lines().any(|l| l == line), "missing {line} in\n{out}");
        }
    }

    #[test]
    fn decision_log_counts_are_rendered() {
        let m = Metrics::new();
        m.decision_log_sent.inc_by(7);
        m.decision_log_failed.inc();
        m.decision_log_dropped.inc_by(3);
        let out = rendered(&m);
        for line in [
            "regent_decision_log_sent_total 7",
            "regent_decision_log_upload_failures_total 1",
            "regent_decision_log_dropped_total 3",
            "# TYPE regent_decision_log_dropped_total counter",
        ] {
            assert!(out.lines().any(|l| l == line), "no {line:?} in\n{out}");
        }
    }

    #[test]
    fn scrape_state_is_rendered_and_label_values_are_escaped() {
        let m = Metrics::new();
        let scrape = Scrape {
            catalog_revision: "r1".into(),
            bundle: Some(BundleScrape {
                bundle: "a\"b\\c\nd".into(),
                revision: "7".into(),
                key_id: String::new(),
            }),
            catalog_loads_succeeded: 2,
            catalog_loads_failed: 1,
            upstreams: vec![UpstreamScrape {
                name: "git".into(),
                up: true,
                restarts: 3,
                quarantined: 1,
            }],
            ..Scrape::default()
        };
        let mut out = String::new();
        m.render(&mut out, &scrape).unwrap();
        for line in [
            "# TYPE regent_catalog_info gauge",
            "regent_catalog_info{revision=\"r1\"} 1",
            "regent_bundle_info{bundle=\"a\\\"b\\\\c\\nd\",revision=\"7\",key_id=\"\"} 1",
            "regent_catalog_loads_total{outcome=\"failure\"} 1",
            "regent_upstream_up{upstream=\"git\"} 1",
            "regent_upstream_restarts_total{upstream=\"git\"} 3",
            "regent_upstream_tools_quarantined{upstream=\"git\"} 1",
        ] {
            assert!(out.lines().any(|l| l == line), "no {line:?} in\n{out}");
        }
        assert!(!out.contains("# EOF"), "{out}");
    }
}
