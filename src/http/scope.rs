//! The 403 of a `tools/call` refused for scope (`serve --enforce-scopes`):
//! MCP's authorization spec answers a token with insufficient scope with
//! HTTP 403 and `WWW-Authenticate: Bearer error="insufficient_scope",
//! scope="..."` naming every scope the operation needs.
//!
//! The protocol layer decides the refusal and answers it as a JSON-RPC
//! error (`protocol::errors::scope_refusal`); rmcp's Streamable HTTP
//! service serializes that answer itself and gives the protocol layer no way
//! to mark the HTTP response (see `hoist`). So this layer recognises the
//! error in the body it is about to send, as `hoist` rewrites bodies: a
//! single `application/json` message whose `error` has the code
//! `INSUFFICIENT_SCOPE_CODE` and `data.reason` `insufficient_scope`. The
//! body stays the JSON-RPC error; only the status and the challenge change.
//!
//! A response already streaming as Server-Sent Events (every request of a
//! 2025-11-25 session, and a 2026-07-28 request whose handler sent
//! something before its answer) went out as 200 before the answer was
//! known: the client gets the JSON-RPC error alone, with the scopes in its
//! `data`.
//!
//! It decides nothing and knows no tools: the scopes are the ones the error
//! names. The header is `http/challenge`'s, as every 401's.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::{StatusCode, header};
use serde_json::Value;

use super::guard::Shared;

use crate::protocol::{INSUFFICIENT_SCOPE, INSUFFICIENT_SCOPE_CODE};

/// Turns a JSON answer that refuses a call for scope into a 403 with its
/// challenge; passes every other response on unchanged.
pub async fn challenge(State(s): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    let json = resp.status() == StatusCode::OK
        && resp
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .eq_ignore_ascii_case("application/json")
            });
    if !json {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    // rmcp built this body in memory from one serialized message (and
    // `hoist` may have rebuilt it): reading it again copies nothing.
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(e) => {
            tracing::error!("reading a response body to check for a scope refusal failed: {e}");
            return Response::from_parts(parts, Body::empty());
        }
    };
    if let Some(scope) = refused_scopes(&bytes) {
        parts.status = StatusCode::FORBIDDEN;
        parts.headers.insert(
            header::WWW_AUTHENTICATE,
            s.challenger().header(
                Some(INSUFFICIENT_SCOPE),
                Some("the access token lacks scopes this tool call needs"),
                Some(scope.as_str()).filter(|s| !s.is_empty()),
            ),
        );
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// The scopes (space-separated) of a JSON-RPC error refusing a call for
/// scope, or `None` for any other message.
fn refused_scopes(json: &[u8]) -> Option<String> {
    // Most bodies are not refusals: a substring test spares parsing them.
    let text = std::str::from_utf8(json).ok()?;
    if !text.contains(INSUFFICIENT_SCOPE) {
        return None;
    }
    let v: Value = serde_json::from_slice(json).ok()?;
    let error = v.get("error")?;
    if error.get("code")?.as_i64()? != i64::from(INSUFFICIENT_SCOPE_CODE) {
        return None;
    }
    let data = error.get("data")?;
    if data.get("reason")?.as_str()? != INSUFFICIENT_SCOPE {
        return None;
    }
    let scopes: Vec<&str> = data
        .get("scopes")?
        .as_array()?
        .iter()
        .map(Value::as_str)
        .collect::<Option<_>>()?;
    Some(scopes.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_scope_refusal_is_recognised() {
        let refusal = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32003,"message":"m","data":{"reason":"insufficient_scope","tool":"git","scopes":["repo:read","repo:write"],"missing":["repo:write"]}}}"#;
        assert_eq!(
            refused_scopes(refusal).as_deref(),
            Some("repo:read repo:write")
        );
        // A tool's output that says the words is a result, not a refusal.
        let result = br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"insufficient_scope"}],"data":{"reason":"insufficient_scope","scopes":[]}}}"#;
        assert_eq!(refused_scopes(result), None);
        let other_code = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"m","data":{"reason":"insufficient_scope","scopes":["a"]}}}"#;
        assert_eq!(refused_scopes(other_code), None);
    }
}
