//! The checks rmcp's Streamable HTTP service does not make. The operator
//! routes take them as axum middleware; `/mcp` calls them in order from its
//! one hand-written service (`door`), since every `from_fn` layer clones
//! every layer below it for each request.
//!
//! - [`authenticate`] ([`authorize`] on `/mcp`): optional bearer token,
//!   compared in constant time, or a JWT verified against the JWKS, whose
//!   caller the request then carries (401 with RFC 6750's
//!   `WWW-Authenticate`, written by [`super::challenge`]);
//! - [`host_and_origin`]: the DNS-rebinding and cross-origin checks for the
//!   operator routes (rmcp makes the same checks on `/mcp` itself);
//! - [`deadline_and_track`]: one deadline per MCP request, covering its body,
//!   its handler and its response stream, and the count of requests in
//!   flight that a graceful shutdown waits for;
//! - [`over_cap`]: 413 at once when `Content-Length` is over the body cap,
//!   without waiting for the body (rmcp refuses only once the bytes arrive);
//! - [`json_rpc_parse_errors`]: a body that is not a JSON-RPC message gets
//!   400 with a JSON-RPC error (-32700, or -32600 for JSON that is not a
//!   message), as on stdio, instead of rmcp's 415 with plain text;
//! - [`Front`], before anything else on every route: HTTP responses counted
//!   by route and status, for `/metrics`; [`two_hosts`]: 400 for a request
//!   with more than one `Host` header, or whose absolute-form target (or
//!   HTTP/2 `:authority`) names another authority than its `Host`;
//!   [`draining`]: 503 for anything new once shutdown began.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use http_body::{Frame, SizeHint};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::sync::Notify;

use super::HttpOptions;
use super::challenge::Challenger;
use super::jwt::{Refused, Verifier};
use crate::metrics::Metrics;
use crate::state::CatalogState;

mod deadline;
mod host;

pub(super) use deadline::deadline_and_track;
pub(super) use host::check_host_and_origin;
pub use host::host_and_origin;
use host::{HostRule, OriginRule};

/// What every middleware and operator route shares.
pub struct Shared {
    /// SHA-256 of the bearer token. Comparing digests keeps the comparison
    /// constant-time in the token's length as well as its content.
    token_digest: Option<[u8; 32]>,
    /// JWT verification; never together with a static token.
    jwt: Option<Arc<Verifier>>,
    /// Writes the 401s' `WWW-Authenticate` (with the resource metadata's
    /// URL and scopes under `--oauth-resource`).
    challenger: Challenger,
    hosts: Vec<HostRule>,
    origins: Vec<OriginRule>,
    request_timeout: Duration,
    max_body_bytes: usize,
    draining: AtomicBool,
    in_flight: AtomicUsize,
    idle: Notify,
    pub state: Arc<CatalogState>,
    pub metrics: Arc<Metrics>,
}

impl Shared {
    pub fn new(opts: &HttpOptions, state: Arc<CatalogState>, metrics: Arc<Metrics>) -> Shared {
        Shared {
            token_digest: opts.auth_token.as_deref().map(digest),
            jwt: opts.jwt.clone(),
            challenger: Challenger::new(opts.oauth.as_deref()),
            hosts: opts
                .allowed_hosts
                .iter()
                .filter_map(|h| HostRule::parse(h))
                .collect(),
            origins: opts
                .allowed_origins
                .iter()
                .filter_map(|o| OriginRule::parse(o))
                .collect(),
            request_timeout: opts.request_timeout,
            max_body_bytes: opts.max_body_bytes,
            draining: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            idle: Notify::new(),
            state,
            metrics,
        }
    }

    /// From now on every new request is answered 503.
    /// Writes this server's `WWW-Authenticate` challenges.
    pub(super) fn challenger(&self) -> &Challenger {
        &self.challenger
    }

    /// `--max-body-bytes`.
    pub(super) fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }

    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Resolves once no MCP request is in flight.
    pub async fn drained(&self) {
        loop {
            let notified = self.idle.notified();
            if self.in_flight() == 0 {
                return;
            }
            notified.await;
        }
    }
}

fn digest(s: &str) -> [u8; 32] {
    Sha256::digest(s.as_bytes()).into()
}

pub(super) fn plain(status: StatusCode, text: impl Into<String>) -> Response {
    let mut r = (status, text.into()).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// The token of an `Authorization: Bearer TOKEN` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        })
}

/// `Authorization: Bearer TOKEN` when a token or JWT verification is
/// configured; 401 otherwise. A verified JWT's caller is put in the
/// request's extensions, where the protocol layer finds it: a request is
/// never evaluated as anonymous when a token was required. The layer of
/// `/metrics`; `/mcp` calls [`authorize`] from its one service (`door`).
pub async fn authenticate(State(s): State<Arc<Shared>>, mut req: Request, next: Next) -> Response {
    match authorize(&s, &mut req).await {
        Some(refused) => refused,
        None => next.run(req).await,
    }
}

/// [`authenticate`]'s check: `None` when the request may go on (a verified
/// JWT's caller put in its extensions), else the 401 to answer.
pub(super) async fn authorize(s: &Shared, req: &mut Request) -> Option<Response> {
    if let Some(verifier) = &s.jwt {
        let verified = match bearer(req.headers()) {
            Some(t) => Some(verifier.verify(t).await),
            None => None,
        };
        return match verified {
            Some(Ok(caller)) => {
                req.extensions_mut().insert(caller);
                None
            }
            Some(Err(why)) => Some(jwt_refused(&s.challenger, Some(why))),
            None => Some(jwt_refused(&s.challenger, None)),
        };
    }
    let want = s.token_digest.as_ref()?;
    let presented = bearer(req.headers());
    let ok = presented.is_some_and(|token| bool::from(digest(token).ct_eq(want)));
    if ok {
        return None;
    }
    let mut r = plain(
        StatusCode::UNAUTHORIZED,
        if presented.is_none() {
            "Unauthorized: send `Authorization: Bearer <token>`"
        } else {
            "Unauthorized: the bearer token is not valid"
        },
    );
    let error = presented.map(|_| "invalid_token");
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        s.challenger.header(error, None, None),
    );
    Some(r)
}

/// The 401 for a JWT that is missing (`None`: a challenge without an error,
/// RFC 6750 section 3.1) or refused (the description is a fixed text).
fn jwt_refused(challenger: &Challenger, why: Option<Refused>) -> Response {
    let (text, challenge) = match why {
        None => (
            "Unauthorized: send `Authorization: Bearer <JWT>`".to_string(),
            challenger.header(None, None, None),
        ),
        Some(Refused(why)) => (
            format!("Unauthorized: {why}"),
            challenger.header(Some("invalid_token"), Some(why), None),
        ),
    };
    let mut r = plain(StatusCode::UNAUTHORIZED, text);
    r.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
    r
}

/// 413 for a request whose `Content-Length` is over `--max-body-bytes`,
/// before any of its body is read; the connection is closed after the
/// answer, since the body is never read. (A chunked body has no length: rmcp
/// refuses it with 413 as soon as the bytes it has read pass the cap.)
/// `None`: the request may go on.
pub(super) fn over_cap(s: &Shared, headers: &HeaderMap) -> Option<Response> {
    let n = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())?;
    if n <= s.max_body_bytes as u64 {
        return None;
    }
    let mut r = plain(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "Payload Too Large: request body exceeds {} bytes (Content-Length: {n})",
            s.max_body_bytes
        ),
    );
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    Some(r)
}

/// How rmcp's Streamable HTTP service begins the 415 it gives a body that
/// does not deserialize as a JSON-RPC message (its other 415, for a wrong
/// `Content-Type`, is left alone).
const RMCP_UNPARSABLE: &str = "fail to deserialize request body";

/// A `POST` body that rmcp could not read as a JSON-RPC message is answered
/// as the stdio transport answers such a line: HTTP 400 with a JSON-RPC
/// error, id `null`, code -32700 ("Parse error") when the body is not JSON,
/// or -32600 ("Invalid request", with the body's `id` when it has a usable
/// one) when it is JSON but not a message; `data.reason` says why.
///
/// rmcp answers both with 415 and plain text and has no hook for it, so the
/// body's frames are kept (reference-counted, not copied) while the request
/// runs, and looked at only when rmcp gave that 415.
pub async fn json_rpc_parse_errors(req: Request, next: Next) -> Response {
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let kept = Arc::new(std::sync::Mutex::new(Vec::<Bytes>::new()));
    let (parts, body) = req.into_parts();
    let req = Request::from_parts(
        parts,
        Body::new(Keep {
            inner: body,
            kept: kept.clone(),
        }),
    );
    let resp = next.run(req).await;
    if resp.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let Ok(text) = axum::body::to_bytes(body, 64 * 1024).await else {
        return plain(StatusCode::UNSUPPORTED_MEDIA_TYPE, "Unsupported Media Type");
    };
    let Some(reason) = std::str::from_utf8(&text)
        .ok()
        .and_then(|t| t.strip_prefix(RMCP_UNPARSABLE))
    else {
        return Response::from_parts(parts, Body::from(text));
    };
    let body: Vec<u8> = {
        let frames = kept.lock().unwrap_or_else(|p| p.into_inner());
        frames.iter().flat_map(|b| b.iter().copied()).collect()
    };
    json_rpc_error_for(&body, reason.trim())
}

/// The 400 answer for a body that is not a JSON-RPC message.
fn json_rpc_error_for(body: &[u8], reason: &str) -> Response {
    let (id, code, message) = match serde_json::from_slice::<serde_json::Value>(body) {
        Err(_) => (serde_json::Value::Null, -32700, "Parse error"),
        Ok(v) => (
            v.get("id")
                .filter(|id| id.is_string() || id.is_number())
                .cloned()
                .unwrap_or(serde_json::Value::Null),
            -32600,
            "Invalid request",
        ),
    };
    let answer = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message, "data": {"reason": reason}},
    });
    let mut r = (StatusCode::BAD_REQUEST, answer.to_string()).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// A request body whose frames are kept (cheap clones of `Bytes`) for a
/// look after the response.
struct Keep {
    inner: Body,
    kept: Arc<std::sync::Mutex<Vec<Bytes>>>,
}

impl http_body::Body for Keep {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let r = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &r
            && let Some(data) = frame.data_ref()
        {
            self.kept
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(data.clone());
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// What every route's requests pass first, in this order, as one
/// hand-written layer (an axum `from_fn` layer clones the route below it,
/// boxes a `Next` and its own future for each request; BENCHMARKS.md,
/// "Session 25"): the response counted by route and status for `/metrics`,
/// whoever answers it; [`two_hosts`]; [`draining`].
#[derive(Clone)]
pub struct Front(pub Arc<Shared>);

impl<S> tower::Layer<S> for Front {
    type Service = FrontService<S>;

    fn layer(&self, inner: S) -> FrontService<S> {
        FrontService {
            shared: self.0.clone(),
            inner,
        }
    }
}

/// A route behind [`Front`].
#[derive(Clone)]
pub struct FrontService<S> {
    shared: Arc<Shared>,
    inner: S,
}

impl<S> tower::Service<Request> for FrontService<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send + 'static>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let route = match req.uri().path() {
            "/mcp" => "/mcp",
            "/healthz" => "/healthz",
            "/metrics" => "/metrics",
            p if p.starts_with(super::metadata::WELL_KNOWN) => super::metadata::WELL_KNOWN,
            _ => "other",
        };
        let shared = self.shared.clone();
        if let Some(refused) = two_hosts(&req).or_else(|| draining(&shared)) {
            shared
                .metrics
                .count_http_response(route, refused.status().as_u16());
            return Box::pin(std::future::ready(Ok(refused)));
        }
        let answer = self.inner.call(req);
        Box::pin(async move {
            let r = answer.await?;
            shared
                .metrics
                .count_http_response(route, r.status().as_u16());
            Ok(r)
        })
    }
}

/// 400 for a request that names its host twice: two `Host` headers, or a
/// `Host` that differs from the authority of an absolute-form target
/// (`GET http://a.example/mcp HTTP/1.1`) or of HTTP/2's `:authority`. The
/// Host and Origin checks (rmcp's on `/mcp`, [`host_and_origin`] on the
/// operator routes) read one of them; a proxy or log in front may read the
/// other, so a request that says two things is refused before anything
/// reads either. The connection is closed after the answer.
fn two_hosts(req: &Request) -> Option<Response> {
    let mut hosts = req.headers().get_all(header::HOST).iter();
    let first = hosts.next();
    let why = if hosts.next().is_some() {
        "the request has more than one Host header"
    } else {
        match (first, req.uri().authority()) {
            (Some(host), Some(authority))
                if !host
                    .as_bytes()
                    .eq_ignore_ascii_case(authority.as_str().as_bytes()) =>
            {
                "the request's Host header names another authority than its request target"
            }
            _ => return None,
        }
    };
    tracing::warn!("refused {} {}: {why}", req.method(), req.uri().path());
    let mut r = plain(
        StatusCode::BAD_REQUEST,
        format!("Bad Request: {why}; send exactly one Host, the same as the request target's"),
    );
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    Some(r)
}

/// 503 for every request that arrives after shutdown began; the connection
/// is closed after the answer.
fn draining(s: &Shared) -> Option<Response> {
    if !s.draining.load(Ordering::SeqCst) {
        return None;
    }
    let mut r = plain(
        StatusCode::SERVICE_UNAVAILABLE,
        "Service Unavailable: the server is shutting down",
    );
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn answer_of(body: &[u8]) -> (StatusCode, serde_json::Value) {
        let r = json_rpc_error_for(body, "why");
        let status = r.status();
        let bytes = axum::body::to_bytes(r.into_body(), 1 << 16).await.unwrap();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn unparsable_bodies_get_json_rpc_errors_like_stdio_lines() {
        let (status, v) = answer_of(b"{oops").await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(
            v,
            serde_json::json!({"jsonrpc": "2.0", "id": null,
                "error": {"code": -32700, "message": "Parse error", "data": {"reason": "why"}}})
        );
        let (_, v) = answer_of(br#"{"id": "a", "x": 1}"#).await;
        assert_eq!(v["id"], "a");
        assert_eq!(v["error"]["code"], -32600);
        let (_, v) = answer_of(br#"{"id": {"no": 1}}"#).await;
        assert_eq!(v["id"], serde_json::Value::Null);
        assert_eq!(v["error"]["code"], -32600);
    }
}
