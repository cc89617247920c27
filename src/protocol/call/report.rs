//! A call's answer to the client and its decision-log lines: the
//! decision and the execution as `_meta` shows them, an execution's
//! outcome as a tool result (text, `structuredContent` checked against
//! `outputSchema`, failures as `isError: true`), a forwarded call's
//! upstream result with regent's keys added. What was decided and run is
//! the call sequence's (`call`); nothing here decides or runs.

use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, MetaObject, ResultType};
use serde_json::{Map, Value, json};

use crate::decisions::{DecisionLog, Entry};
use crate::exec::Outcome;
use crate::run_plan::RunSpec;

/// `_meta` key of the decision on call and resolve results:
/// `{"id"?, "allowed": bool, "reasons": [..]}` (`id` on calls only).
pub const DECISION_META: &str = "regent/decision";
/// `_meta` key of how execution ended on call results (see `exec::Status::to_json`).
pub const EXECUTION_META: &str = "regent/execution";

/// The decision as `_meta` shows it.
pub fn decision_json(id: Option<&str>, reasons: &[String]) -> Value {
    let mut m = Map::new();
    if let Some(id) = id {
        m.insert("id".into(), json!(id));
    }
    m.insert("allowed".into(), json!(reasons.is_empty()));
    m.insert("reasons".into(), json!(reasons));
    Value::Object(m)
}

/// Queues a call's decision-log line. The call checked that the log takes
/// lines before anything ran; a line refused after that is counted in the
/// log's `gap` line. A copy: a call may log after changing its entry, and
/// costs far more than one clone anyway.
pub(super) fn record(log: &DecisionLog, entry: &Entry) {
    let _ = log.record(entry.clone());
}

/// A forwarded call's answer to the client, its outcome line written: the
/// upstream's result as it gave it, with regent's `_meta` keys added, or
/// the error that ended the call.
pub(super) fn forwarded(
    log: &DecisionLog,
    mut entry: Entry,
    mut meta: Map<String, Value>,
    name: &str,
    target: &crate::source::upstream::UpstreamRef,
    started: std::time::Instant,
    answer: Result<crate::upstream::Forwarded, crate::upstream::CallError>,
) -> CallToolResponse {
    let took = started.elapsed();
    entry.duration = Some(took);
    let mut execution = json!({
        "upstream": target.upstream,
        "durationMs": crate::decisions::millis(took),
    });
    match answer {
        Ok(crate::upstream::Forwarded {
            result: mut r,
            capped,
        }) => {
            execution["isError"] = json!(r.is_error.unwrap_or(false));
            if let Some(cap) = capped {
                execution["outputCapped"] = json!(cap);
            }
            entry.outcome = Some(execution.clone());
            record(log, &entry);
            meta.insert(EXECUTION_META.into(), execution);
            // regent's keys join the upstream's own `_meta`.
            let mut m = r.meta.take().map(|m| m.0).unwrap_or_default();
            m.extend(meta);
            r.meta = Some(MetaObject(m));
            // The upstream's answer is complete (anything else is an
            // error by now), whichever era it spoke: a 2025-11-25
            // upstream's result has no `resultType`, which a 2026-07-28
            // client requires (the Python SDK refuses the result
            // without it). Like regent's own results, it says so.
            r.result_type = Some(ResultType::COMPLETE);
            r
        }
        Err(e) => {
            execution["error"] = json!(e.0);
            entry.outcome = Some(execution.clone());
            record(log, &entry);
            meta.insert(EXECUTION_META.into(), execution);
            result(
                vec![format!("the call to {name} did not complete: {e}")],
                None,
                true,
                meta,
            )
        }
    }
    .into()
}

/// The tool result for an execution that happened.
pub(super) fn report(
    tool: &crate::catalog::Tool,
    spec: &RunSpec,
    outcome: Outcome,
    meta: Map<String, Value>,
) -> CallToolResult {
    let output = String::from_utf8_lossy(&outcome.output).into_owned();
    if !outcome.status.is_success() {
        let mut texts = Vec::new();
        let mut detail = outcome.status.describe();
        match spec {
            // A failed response's body is the error; show its end once.
            RunSpec::Http(_) => {
                if !outcome.error_tail.is_empty() {
                    detail.push_str("; the response body ends with:\n");
                    detail.push_str(&outcome.error_tail);
                }
            }
            RunSpec::Cli(_) => {
                if !output.is_empty() {
                    texts.push(output);
                }
                if !outcome.error_tail.trim().is_empty() {
                    detail.push_str("; standard error ends with:\n");
                    detail.push_str(&outcome.error_tail);
                }
            }
        }
        texts.push(detail);
        return result(texts, None, true, meta);
    }

    if tool.output_schema.is_some() {
        let parsed: Result<Value, _> = serde_json::from_str(&output);
        return match parsed {
            Err(e) => result(
                vec![
                    output,
                    format!("the tool declares outputSchema, but its output is not json: {e}"),
                ],
                None,
                true,
                meta,
            ),
            Ok(value) => {
                let problems = tool.validate_output(&value);
                if problems.is_empty() {
                    result(vec![output], Some(value), false, meta)
                } else {
                    let list: Vec<String> = problems.iter().map(ToString::to_string).collect();
                    result(
                        vec![
                            output,
                            format!(
                                "the output does not match the tool's outputSchema: {}",
                                list.join("; ")
                            ),
                        ],
                        None,
                        true,
                        meta,
                    )
                }
            }
        };
    }
    let text = if output.is_empty() {
        let nothing = match spec {
            RunSpec::Cli(_) => "and printed nothing",
            RunSpec::Http(_) => "with an empty body",
        };
        format!("{} {nothing}", outcome.status.describe())
    } else {
        output
    };
    result(vec![text], None, false, meta)
}

pub(super) fn result(
    texts: Vec<String>,
    structured: Option<Value>,
    is_error: bool,
    meta: Map<String, Value>,
) -> CallToolResult {
    let content = texts.into_iter().map(ContentBlock::text).collect();
    let mut r = if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    r.structured_content = structured;
    r.meta = Some(MetaObject(meta));
    r
}
