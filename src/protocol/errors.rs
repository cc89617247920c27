//! Mapping catalog errors to JSON-RPC errors, as SEP-1862 asks: -32602 for an
//! unknown tool or invalid arguments, -32603 when resolution itself fails.
//! Internal failures are logged here with the tool and the policy location;
//! clients get enough to act on, not the policy's internals.

use rmcp::ErrorData;
use serde_json::{Value, json};

use crate::catalog::{Catalog, ResolveError};

/// A refused request as regent states it to its own commands (`regent
/// resolve`, `regent test`): the JSON-RPC error's code, message and data, in
/// regent's terms rather than rmcp's. It serializes as the wire error does.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Refusal {
    pub code: i32,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl Refusal {
    /// `data.reason`, the kebab-case reason regent gives, or "".
    pub fn reason(&self) -> &str {
        self.data
            .as_ref()
            .and_then(|d| d.get("reason"))
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

impl From<ErrorData> for Refusal {
    fn from(e: ErrorData) -> Refusal {
        Refusal {
            code: e.code.0,
            message: e.message.into_owned(),
            data: e.data,
        }
    }
}

pub fn unknown_tool(name: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("unknown tool: {name}"),
        Some(json!({"tool": name, "reason": "unknown-tool"})),
    )
}

/// A tool the catalog does not list: unknown, or an upstream tool held
/// back because it drifted from its pin (which says so, and how to release
/// it). Either way nothing about it ran.
pub fn not_listed(catalog: &Catalog, name: &str) -> ErrorData {
    match catalog.quarantined(name) {
        Some(q) => quarantined(q),
        None => unknown_tool(name),
    }
}

/// The refusal of a quarantined upstream tool (`data.reason`:
/// `upstream-drift`, which the metrics count).
pub fn quarantined(q: &crate::source::upstream::Quarantined) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "tool {} is quarantined: upstream `{}` lists `{}` differently from its pinned snapshot {} ({}); regent neither lists nor runs it until the pin matches; review the change and re-pin with `regent upstream snapshot`, or set `on_drift: warn` on the upstream to serve it anyway",
            q.listed, q.upstream, q.tool, q.pin, q.reason
        ),
        Some(json!({
            "tool": q.listed,
            "upstream": q.upstream,
            "upstreamTool": q.tool,
            "drift": q.reason,
            "reason": "upstream-drift",
        })),
    )
}

/// The JSON-RPC error code of a `tools/call` refused because the caller's
/// token lacks the OAuth scopes the call's resolved `securitySchemes` need
/// (`serve --enforce-scopes`). MCP pairs insufficient scope with HTTP 403
/// and a `WWW-Authenticate` challenge, and allocates no JSON-RPC code for
/// it; 2026-07-28 reserves -32020..-32099 for the specification, and SDKs
/// use -32000 and -32001 (connection closed, request timeout) and -32002
/// (an earlier revision's resource not found), so regent takes the next
/// free code of the implementation-defined range. The HTTP layer
/// recognises it, with `data.reason`, to answer 403 (`http::scope`).
pub const INSUFFICIENT_SCOPE_CODE: i32 = -32003;
/// `data.reason` of that error.
pub const INSUFFICIENT_SCOPE: &str = "insufficient_scope";

/// The refusal of a call whose resolved `securitySchemes` the caller does
/// not meet. For scope: [`INSUFFICIENT_SCOPE_CODE`], data `{reason, tool,
/// scopes (all the call needs), missing}`; a requirement no token can meet
/// or a malformed one: -32603, as a policy failure is.
pub fn scope_refusal(tool: &str, short: &crate::scopes::Shortfall) -> ErrorData {
    use crate::scopes::Shortfall;
    match short {
        Shortfall::InsufficientScope {
            required, missing, ..
        } => {
            let help = if required.is_empty() {
                "call with a verified token"
            } else {
                "obtain a token that grants these scopes and call again"
            };
            ErrorData::new(
                rmcp::model::ErrorCode(INSUFFICIENT_SCOPE_CODE),
                format!("regent did not run {tool}: {}; {help}", short.describe()),
                Some(json!({
                    "reason": INSUFFICIENT_SCOPE,
                    "tool": tool,
                    "scopes": required,
                    "missing": missing,
                })),
            )
        }
        Shortfall::Unsatisfiable(why) => ErrorData::internal_error(
            format!("regent did not run {tool}: {why}"),
            Some(json!({"reason": "unsatisfiable-security-schemes", "tool": tool})),
        ),
        Shortfall::Malformed(why) => ErrorData::internal_error(
            format!("regent did not run {tool}: the resolved {why}"),
            Some(json!({"reason": "invalid-security-schemes", "tool": tool})),
        ),
    }
}

/// The JSON-RPC error for a failed resolution.
/// A client sent a value for a parameter the server fills itself.
pub fn server_filled(
    tool: &crate::catalog::Tool,
    r: &crate::catalog::resolvers::Resolver,
) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "argument {} of tool {} is filled by the server (from {}), not by the client; remove it from the arguments",
            r.param,
            tool.name,
            r.describe()
        ),
        Some(json!({"tool": tool.name, "argument": r.param, "reason": "server-filled"})),
    )
}

pub fn resolve_error(catalog: &Catalog, e: &ResolveError) -> ErrorData {
    let revision = catalog.short_revision();
    match e {
        ResolveError::UnknownTool(name) => not_listed(catalog, name),
        ResolveError::CallerClaimsInvalid(why) => {
            // The operator's concern (the identity provider and the catalog
            // disagree), logged without the claim's value.
            tracing::warn!(
                claim = %why.claim,
                keyword = %why.keyword,
                revision,
                "caller refused: {why}"
            );
            ErrorData::invalid_params(
                format!(
                    "{why}; regent makes no decision for this caller: fix its claims (the token at the identity provider, or the caller file) or the catalog's `caller:` schema"
                ),
                Some(json!({
                    "reason": "caller-claims-invalid",
                    "claim": why.claim,
                    "keyword": why.keyword,
                    "revision": revision,
                })),
            )
        }
        ResolveError::InvalidArguments { tool, errors } => ErrorData::invalid_params(
            e.to_string(),
            Some(json!({"tool": tool, "reason": "invalid-arguments", "errors": errors})),
        ),
        ResolveError::Policy {
            tool,
            message,
            location,
        } => {
            tracing::error!(
                tool = %tool,
                location = location.as_deref().unwrap_or("-"),
                revision,
                "policy evaluation failed: {message}"
            );
            // The budget that stopped it, so a client and the metrics can
            // tell a hostile argument from a broken policy.
            let reason = match crate::policy::errors::limit_hit(message) {
                Some(crate::policy::errors::Limit::Memory) => "policy-memory",
                Some(crate::policy::errors::Limit::Time) => "policy-timeout",
                None => "policy-error",
            };
            ErrorData::internal_error(
                format!("policy evaluation failed for tool {tool}"),
                Some(json!({
                    "tool": tool,
                    "reason": reason,
                    "revision": revision,
                })),
            )
        }
        ResolveError::RiskierThanListed {
            tool,
            hint,
            listed,
            resolved,
            ..
        } => {
            tracing::error!(tool = %tool, revision, "{e}");
            ErrorData::internal_error(
                e.to_string(),
                Some(json!({
                    "tool": tool,
                    "reason": "riskier-than-listed",
                    "hint": hint.key(),
                    "listed": listed,
                    "resolved": resolved,
                    "revision": revision,
                })),
            )
        }
    }
}

/// -32601 for a method of a feature regent does not declare.
pub fn not_offered(method: &str) -> ErrorData {
    ErrorData::new(
        rmcp::model::ErrorCode::METHOD_NOT_FOUND,
        format!("method not found: {method} (regent serves tools only)"),
        None,
    )
}

/// Methods the 2026-07-28 protocol removed: in a request of that era they
/// are unknown methods, whatever their params.
pub fn removed_in_2026(m: &str) -> bool {
    matches!(
        m,
        "initialize"
            | "ping"
            | "logging/setLevel"
            | "resources/subscribe"
            | "resources/unsubscribe"
    )
}

/// Methods of the MCP specification that rmcp would have parsed had their
/// params been valid.
pub fn is_standard_method(m: &str) -> bool {
    matches!(
        m,
        "initialize"
            | "ping"
            | "server/discover"
            | "tools/list"
            | "tools/call"
            | "resources/list"
            | "resources/read"
            | "resources/templates/list"
            | "resources/subscribe"
            | "resources/unsubscribe"
            | "prompts/list"
            | "prompts/get"
            | "completion/complete"
            | "logging/setLevel"
            | "subscriptions/listen"
    )
}
