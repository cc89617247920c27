//! Process metrics, rendered in the Prometheus text exposition format.
//!
//! This module only counts and renders. What is counted, and under which
//! label, is decided by the callers: the protocol layer records MCP methods
//! and latencies (`protocol::count`), the HTTP layer records responses and
//! appends the catalog's state when it is scraped (`http::ops`). Label values
//! are `&'static str` chosen by those callers, so a client can never create a
//! new time series by sending an unusual method name.
//!
//! The registry is small enough to write by hand: counters behind one mutex
//! each (a request takes it for a map update), histograms on atomics.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds (seconds) for resolution latency: a warm evaluation takes
/// microseconds, a slow policy up to its time limit.
const RESOLVE_BUCKETS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];

/// Upper bounds (seconds) for tool calls, which run programs or HTTP requests.
const CALL_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// A cumulative histogram with fixed buckets.
pub struct Histogram {
    bounds: &'static [f64],
    /// Per-bucket (not cumulative) counts; the last slot is `+Inf`.
    counts: Vec<AtomicU64>,
    sum_nanos: AtomicU64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_nanos: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        let slot = self
            .bounds
            .iter()
            .position(|&b| secs <= b)
            .unwrap_or(self.bounds.len());
        self.counts[slot].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        header(out, name, help, "histogram");
        let mut cumulative = 0u64;
        for (i, count) in self.counts.iter().enumerate() {
            cumulative += count.load(Ordering::Relaxed);
            let le = match self.bounds.get(i) {
                Some(b) => format!("{b}"),
                None => "+Inf".to_string(),
            };
            let _ = writeln!(out, "{name}_bucket{{le=\"{le}\"}} {cumulative}");
        }
        let sum = self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
        let _ = writeln!(out, "{name}_sum {sum}");
        let _ = writeln!(out, "{name}_count {cumulative}");
    }
}

/// Every metric regent exports, except the catalog's state, which is read
/// from `state::CatalogState` at scrape time.
pub struct Metrics {
    /// MCP requests by (method, outcome).
    requests: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
    /// Failed policy evaluations by reason.
    policy_errors: Mutex<BTreeMap<&'static str, u64>>,
    /// HTTP responses by (route, status code).
    http_responses: Mutex<BTreeMap<(&'static str, u16), u64>>,
    /// Bundle polls (`serve --bundle-url`) that left the last good bundle
    /// serving, by reason.
    bundle_failures: Mutex<BTreeMap<&'static str, u64>>,
    pub resolve_seconds: Histogram,
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

/// A gauge that goes up and down.
#[derive(Default)]
pub struct Gauge(AtomicI64);

impl Gauge {
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    pub fn dec(&self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }

    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A counter without labels.
#[derive(Default)]
pub struct Counter(AtomicU64);

impl Counter {
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        Metrics {
            requests: Mutex::new(BTreeMap::new()),
            policy_errors: Mutex::new(BTreeMap::new()),
            http_responses: Mutex::new(BTreeMap::new()),
            bundle_failures: Mutex::new(BTreeMap::new()),
            resolve_seconds: Histogram::new(RESOLVE_BUCKETS),
            call_seconds: Histogram::new(CALL_BUCKETS),
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
        }
    }

    pub fn count_request(&self, method: &'static str, outcome: &'static str) {
        bump(&self.requests, (method, outcome));
    }

    pub fn count_policy_error(&self, reason: &'static str) {
        bump(&self.policy_errors, reason);
    }

    pub fn count_http_response(&self, route: &'static str, status: u16) {
        bump(&self.http_responses, (route, status));
    }

    /// A bundle poll that kept the last good bundle: `download`,
    /// `signature` (or any other refusal of the bundle), `catalog` (it did
    /// not build or check).
    pub fn count_bundle_failure(&self, reason: &'static str) {
        bump(&self.bundle_failures, reason);
    }

    /// The metrics in the text exposition format, version 0.0.4.
    pub fn render(&self, out: &mut String) {
        header(
            out,
            "regent_requests_total",
            "MCP requests answered, by method and outcome",
            "counter",
        );
        for ((method, outcome), n) in snapshot(&self.requests) {
            let _ = writeln!(
                out,
                "regent_requests_total{{method=\"{}\",outcome=\"{}\"}} {n}",
                escape(method),
                escape(outcome)
            );
        }
        self.resolve_seconds.render(
            out,
            "regent_resolve_duration_seconds",
            "Time to answer tools/resolve and tools/annotations, policy evaluation included",
        );
        self.call_seconds.render(
            out,
            "regent_call_duration_seconds",
            "Time to answer tools/call: decision, execution and result",
        );
        header(
            out,
            "regent_policy_errors_total",
            "Policy evaluations that failed (error, time limit, or a result riskier than listed), by reason",
            "counter",
        );
        for (reason, n) in snapshot(&self.policy_errors) {
            let _ = writeln!(
                out,
                "regent_policy_errors_total{{reason=\"{}\"}} {n}",
                escape(reason)
            );
        }
        let bundle_failures = snapshot(&self.bundle_failures);
        if !bundle_failures.is_empty() {
            header(
                out,
                "regent_bundle_failures_total",
                "Bundle polls that kept the last good bundle serving, by reason (download, bundle, catalog)",
                "counter",
            );
            for (reason, n) in bundle_failures {
                let _ = writeln!(
                    out,
                    "regent_bundle_failures_total{{reason=\"{}\"}} {n}",
                    escape(reason)
                );
            }
        }
        header(
            out,
            "regent_http_responses_total",
            "HTTP responses, by route and status code",
            "counter",
        );
        for ((route, status), n) in snapshot(&self.http_responses) {
            let _ = writeln!(
                out,
                "regent_http_responses_total{{route=\"{}\",code=\"{status}\"}} {n}",
                escape(route)
            );
        }
        for (name, help, kind, value) in [
            (
                "regent_calls_in_flight",
                "Tool executions running now (tools/call past its decision)",
                "gauge",
                self.calls_in_flight.get().to_string(),
            ),
            (
                "regent_calls_parked",
                "Forwarded 2026-07-28 calls waiting for the client's answer to an upstream's request",
                "gauge",
                self.calls_parked.get().to_string(),
            ),
            (
                "regent_parked_calls_expired_total",
                "Parked calls cancelled upstream because no retry came before their deadline",
                "counter",
                self.parked_expired.get().to_string(),
            ),
            (
                "regent_calls_refused_total",
                "tools/call refused because --max-concurrent-calls executions were running",
                "counter",
                self.calls_refused.get().to_string(),
            ),
            (
                "regent_http_connections_open",
                "HTTP connections open now",
                "gauge",
                self.connections_open.get().to_string(),
            ),
            (
                "regent_http_connections_refused_total",
                "HTTP connections closed at once because --max-connections were open",
                "counter",
                self.connections_refused.get().to_string(),
            ),
            (
                "regent_http_connections_refused_per_peer_total",
                "HTTP connections closed at once because --max-connections-per-peer were open from their IP address",
                "counter",
                self.connections_refused_per_peer.get().to_string(),
            ),
            (
                "regent_decision_log_sent_total",
                "Decisions delivered to the --decision-log-url collector",
                "counter",
                self.decision_log_sent.get().to_string(),
            ),
            (
                "regent_decision_log_upload_failures_total",
                "Uploads to the --decision-log-url collector that failed (retried with backoff)",
                "counter",
                self.decision_log_failed.get().to_string(),
            ),
            (
                "regent_decision_log_dropped_total",
                "Decisions never delivered to the --decision-log-url collector: the buffer was full, or they were unsent at exit",
                "counter",
                self.decision_log_dropped.get().to_string(),
            ),
            (
                "regent_upstream_drift_refused_total",
                "tools/call and tools/resolve refused because the tool is quarantined: its upstream lists it differently from the pin",
                "counter",
                self.drift_refused.get().to_string(),
            ),
            (
                "regent_calls_scope_refused_total",
                "tools/call refused because the token lacks the OAuth scopes the resolved securitySchemes need (--enforce-scopes)",
                "counter",
                self.scope_refused.get().to_string(),
            ),
            (
                "regent_request_state_store_errors_total",
                "2026-07-28 retries refused because the --request-state-store did not answer in time or refused the command; nothing ran",
                "counter",
                self.state_store_errors.get().to_string(),
            ),
        ] {
            header(out, name, help, kind);
            let _ = writeln!(out, "{name} {value}");
        }
    }
}

fn bump<K: Ord>(map: &Mutex<BTreeMap<K, u64>>, key: K) {
    let mut m = map.lock().unwrap_or_else(|p| p.into_inner());
    *m.entry(key).or_insert(0) += 1;
}

fn snapshot<K: Ord + Clone>(map: &Mutex<BTreeMap<K, u64>>) -> Vec<(K, u64)> {
    let m = map.lock().unwrap_or_else(|p| p.into_inner());
    m.iter().map(|(k, v)| (k.clone(), *v)).collect()
}

/// Writes the `# HELP` and `# TYPE` lines of one metric family.
pub fn header(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// Escapes a label value: backslash, double quote and newline.
pub fn escape(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative() {
        let m = Metrics::new();
        m.resolve_seconds.observe(Duration::from_micros(30));
        m.resolve_seconds.observe(Duration::from_millis(3));
        m.resolve_seconds.observe(Duration::from_secs(5));
        let mut out = String::new();
        m.render(&mut out);
        for line in [
            "regent_resolve_duration_seconds_bucket{le=\"0.00005\"} 1",
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
        m.decision_log_sent.add(7);
        m.decision_log_failed.inc();
        m.decision_log_dropped.add(3);
        let mut out = String::new();
        m.render(&mut out);
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
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
