//! Counting MCP requests: per request, the method, the outcome and (for
//! `tools/resolve`, `tools/annotations` and `tools/call`) the latency.
//!
//! `Regent`'s own `ServerHandler` methods record here as they answer, so a
//! method rmcp adds later is answered by rmcp's default and simply not
//! counted, never answered differently because something stood in between.
//! Counting is on only when a server exports metrics (`Regent::with_metrics`,
//! `serve --http`); the HTTP layer counts HTTP responses, never MCP methods.
//!
//! Requests that rmcp answers before any handler method runs (a 2026-07-28
//! request without its `_meta`, an unsupported protocol version, `ping` in
//! the 2026-07-28 era, `tasks/*` and `skills/*`, which regent does not
//! declare) are not counted here; over HTTP they still show in the HTTP
//! response counts.

use std::time::Instant;

use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, ErrorCode};

use crate::metrics::Metrics;

/// Which latency histogram a method feeds, if any.
#[derive(Clone, Copy, PartialEq)]
pub enum Timed {
    No,
    Resolve,
    Call,
}

/// The label for a custom method: the known ones by name, anything else as
/// `other`, so clients cannot grow the number of series.
pub fn custom_label(method: &str) -> &'static str {
    match method {
        "tools/resolve" => "tools/resolve",
        "tools/annotations" => "tools/annotations",
        // rmcp routes a spec method whose params did not parse here too.
        "tools/call" => "tools/call",
        "tools/list" => "tools/list",
        "initialize" => "initialize",
        "server/discover" => "server/discover",
        "ping" => "ping",
        "subscriptions/listen" => "subscriptions/listen",
        _ => "other",
    }
}

/// The latency a custom method feeds: only the resolve methods are timed
/// (a `tools/call` routed here did not parse, so nothing was called).
pub fn custom_timed(label: &str) -> Timed {
    match label {
        "tools/resolve" | "tools/annotations" => Timed::Resolve,
        _ => Timed::No,
    }
}

/// The outcome label of a JSON-RPC error.
fn error_outcome(e: &ErrorData) -> &'static str {
    match e.code {
        ErrorCode::INVALID_PARAMS => "invalid_params",
        ErrorCode::METHOD_NOT_FOUND => "method_not_found",
        ErrorCode::INTERNAL_ERROR => "internal_error",
        ErrorCode::INVALID_REQUEST => "invalid_request",
        ErrorCode(super::errors::INSUFFICIENT_SCOPE_CODE) => "insufficient_scope",
        _ => "error",
    }
}

/// The error's `data.reason`, as `protocol::errors` writes it.
fn reason_of(e: &ErrorData) -> Option<&str> {
    e.data.as_ref()?.get("reason")?.as_str()
}

/// The reason a policy evaluation failed, as `protocol::errors` records it in
/// the error's `data.reason`; `None` for errors that are not policy failures.
fn policy_failure(e: &ErrorData) -> Option<&'static str> {
    match reason_of(e)? {
        "policy-error" => Some("policy-error"),
        "policy-timeout" => Some("policy-timeout"),
        "policy-memory" => Some("policy-memory"),
        "riskier-than-listed" => Some("riskier-than-listed"),
        _ => None,
    }
}

/// The outcome of an answer that is not an error.
pub fn ok<T>(_: &T) -> &'static str {
    "ok"
}

/// The outcome of a `tools/call` result: a tool error (denied, or the
/// command failed) and a request for input are not plain successes.
pub fn call_outcome(r: &CallToolResponse) -> &'static str {
    match r {
        CallToolResponse::Complete(c) if c.is_error == Some(true) => "tool_error",
        CallToolResponse::InputRequired(_) => "input_required",
        _ => "ok",
    }
}

/// Records one answered request: `method` with its outcome, its latency
/// since `started` in the histogram `timed` names, and a failed policy
/// evaluation by its reason.
pub fn record<T>(
    metrics: &Metrics,
    method: &'static str,
    timed: Timed,
    started: Instant,
    result: &Result<T, ErrorData>,
    outcome_ok: impl FnOnce(&T) -> &'static str,
) {
    let elapsed = started.elapsed();
    match timed {
        Timed::Resolve => metrics.resolve_seconds.observe(elapsed.as_secs_f64()),
        Timed::Call => metrics.call_seconds.observe(elapsed.as_secs_f64()),
        Timed::No => {}
    }
    let outcome = match result {
        Ok(v) => outcome_ok(v),
        Err(e) => {
            if let Some(reason) = policy_failure(e) {
                metrics.count_policy_error(reason);
            }
            match reason_of(e) {
                Some("upstream-drift") => {
                    metrics.drift_refused.inc();
                }
                Some(super::errors::INSUFFICIENT_SCOPE) => {
                    metrics.scope_refused.inc();
                }
                _ => {}
            }
            error_outcome(e)
        }
    };
    metrics.count_request(method, outcome);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rendered(m: &Metrics) -> String {
        let mut out = String::new();
        m.render(&mut out, &crate::metrics::Scrape::default())
            .unwrap();
        out
    }

    #[test]
    fn an_error_is_counted_by_code_and_a_policy_failure_by_reason() {
        let m = Metrics::new();
        let failed: Result<(), ErrorData> = Err(ErrorData::internal_error(
            "riskier",
            Some(json!({"reason": "riskier-than-listed"})),
        ));
        record(
            &m,
            "tools/resolve",
            Timed::Resolve,
            Instant::now(),
            &failed,
            ok,
        );
        let unknown: Result<(), ErrorData> = Err(ErrorData::invalid_params(
            "unknown tool",
            Some(json!({"reason": "unknown-tool"})),
        ));
        record(
            &m,
            "tools/resolve",
            Timed::Resolve,
            Instant::now(),
            &unknown,
            ok,
        );
        record(&m, "ping", Timed::No, Instant::now(), &Ok(()), ok);
        let out = rendered(&m);
        for line in [
            "regent_requests_total{method=\"tools/resolve\",outcome=\"internal_error\"} 1",
            "regent_requests_total{method=\"tools/resolve\",outcome=\"invalid_params\"} 1",
            "regent_requests_total{method=\"ping\",outcome=\"ok\"} 1",
            "regent_policy_errors_total{reason=\"riskier-than-listed\"} 1",
            // Only the two resolves are timed, and an unknown tool is no policy failure.
            "regent_resolve_duration_seconds_count 2",
            "regent_call_duration_seconds_count 0",
        ] {
            assert!(out.lines().any(|l| l == line), "no {line:?} in\n{out}");
        }
        assert_eq!(
            out.matches("regent_policy_errors_total{").count(),
            1,
            "{out}"
        );
    }

    #[test]
    fn custom_methods_outside_the_known_ones_share_one_label() {
        assert_eq!(custom_label("tools/annotations"), "tools/annotations");
        assert_eq!(custom_label("regent/status"), "other");
        assert_eq!(custom_label("x\"y"), "other");
        assert!(custom_timed("tools/annotations") == Timed::Resolve);
        assert!(custom_timed("tools/call") == Timed::No);
    }
}
