//! MCP over Streamable HTTP (`regent serve --http`), locked down by default.
//!
//! Routes: `/mcp` is rmcp's `StreamableHttpService` (both protocol eras:
//! 2025-11-25 sessions with `Mcp-Session-Id` and SSE, 2026-07-28 stateless
//! POSTs); `/healthz` and `/metrics` are for operators ([`ops`]); with
//! `--oauth-resource`, [`metadata`] serves the OAuth protected resource
//! metadata (RFC 9728) at `/.well-known/oauth-protected-resource[/PATH]`,
//! behind the Host/Origin checks but not authentication (a client reads it
//! to learn where to get a token).
//!
//! What is checked, and by whom:
//! - rmcp checks, on `/mcp`: `Host` and `Origin` against the allow-lists
//!   (403), the body size (413), the protocol-version, `Mcp-Method` and
//!   `Mcp-Name` headers, sessions.
//! - [`guard`] adds what rmcp lacks: 400 for a request naming its host
//!   twice (two `Host` headers, or a `Host` and another target authority),
//!   before anything else; the same `Host`/`Origin` checks on the
//!   operator routes, bearer authentication (401: a static token, or a
//!   JWT verified by [`jwt`] against a key set from a file or fetched
//!   and kept current by [`jwks`], whose claims travel on as the request's
//!   `Caller`, in the request extensions rmcp hands the handler), a deadline per request,
//!   413 from `Content-Length` before the body is read, JSON-RPC errors
//!   (400, -32700/-32600) for bodies that are not JSON-RPC, refusing new
//!   requests once shutdown has begun (503), and the count of requests in
//!   flight that shutdown waits for. Every 401's `WWW-Authenticate` is
//!   written by [`challenge`] (naming the metadata document when there is
//!   one).
//! - `end_session` makes a `DELETE` of an unknown session 404.
//! - [`binding`] binds each session to the verified caller who opened it: a
//!   request into it under another identity is 404, as for an unknown one.
//! - [`shortcut`] answers a stateless 2026-07-28 `tools/resolve` POST
//!   without rmcp (`protocol::direct::HttpDirect`) when every check rmcp
//!   would make plainly passes, inside the deadline, authentication and
//!   body-cap guards; anything else goes on to rmcp.
//! - [`hoist`] rewrites `/mcp` response bodies so the wire shape matches the
//!   stdio transport's (the tool-resolution fields rmcp's types drop).
//! - [`scope`] answers a call refused for scope (`--enforce-scopes`) with
//!   403 and its `WWW-Authenticate` challenge, recognised in the JSON body.
//! - [`listener`] accepts connections (at most `--max-connections`, and
//!   `--max-connections-per-peer` from one IP address; header
//!   read timeout from the moment of connecting) and runs the graceful
//!   shutdown.
//!
//! Deciding anything about tools is the protocol layer's and the catalog's
//! job; this module only carries MCP over HTTP and guards the door.

mod binding;
pub mod challenge;
mod claims;
mod door;
mod guard;
mod hoist;
pub mod jwks;
pub mod jwt;
mod keyset;
mod listener;
pub mod metadata;
mod ops;
mod scope;
mod shortcut;
pub mod verified;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::middleware::from_fn_with_state;
use axum::routing::get;
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;
use tower::util::BoxCloneSyncService;

use crate::metrics::Metrics;
use crate::protocol::direct::HttpDirect;
use crate::state::CatalogState;
pub use listener::Bound;

/// How long a client may take to send a request's headers. Slow-header
/// clients (slowloris) hold a connection without ever reaching a handler.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything `serve --http` was told, resolved and validated.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    /// Whether calls may be refused for scope (`serve --enforce-scopes`):
    /// only then does [`scope`] read `/mcp` answers, a cost every JSON
    /// response would pay otherwise.
    pub enforce_scopes: bool,
    /// `Host` values (name, or name:port) accepted; never empty.
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted (`scheme://host[:port|:*]`); requests without
    /// an `Origin` header are not from a browser page and always pass.
    pub allowed_origins: Vec<String>,
    /// The bearer token, when authentication is on.
    pub auth_token: Option<String>,
    /// JWT verification, when `--jwt-jwks-file` or `--jwt-jwks-url` is
    /// given (never with `auth_token`): a verified token's claims become the request's caller.
    pub jwt: Option<Arc<jwt::Verifier>>,
    /// The protected resource metadata (`--oauth-resource`), only with
    /// `jwt`: served at its well-known paths and named by every 401.
    pub oauth: Option<Arc<metadata::ResourceMetadata>>,
    pub max_body_bytes: usize,
    /// Connections open at once; one more is closed as soon as it is accepted.
    pub max_connections: usize,
    /// Connections open at once from one IP address, the same way; 0: no
    /// such limit (behind a load balancer every connection comes from its
    /// address).
    pub max_connections_per_peer: usize,
    pub request_timeout: Duration,
    pub shutdown_grace: Duration,
}

/// The `Host` values accepted when none are given: the loopback names, on
/// any port.
pub fn default_allowed_hosts() -> Vec<String> {
    ["localhost", "127.0.0.1", "::1"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// The browser origins accepted when none are given: pages served from this
/// machine's loopback names, on any port, over http or https.
pub fn default_allowed_origins() -> Vec<String> {
    let mut v = Vec::new();
    for scheme in ["http", "https"] {
        for host in ["localhost", "127.0.0.1", "[::1]"] {
            v.push(format!("{scheme}://{host}:*"));
        }
    }
    v
}

/// Binds `opts.addr` and serves until `shutdown` resolves, then drains:
/// new requests are refused, requests in flight get `opts.shutdown_grace`
/// to finish. `on_bound` is told the bound address (port 0 picks one).
/// `direct`, when given, answers the requests it takes without rmcp
/// ([`shortcut`]); it must answer as `handler` does.
pub async fn serve<H>(
    opts: HttpOptions,
    handler: H,
    direct: Option<HttpDirect>,
    state: Arc<CatalogState>,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()> + Send,
    on_bound: impl FnOnce(&Bound),
) -> std::io::Result<()>
where
    H: ServerHandler + Clone,
{
    // Cancelling this ends rmcp's sessions and SSE streams; it is cancelled
    // only after the requests in flight have drained.
    let rmcp_cancel = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(opts.allowed_hosts.clone())
        .with_allowed_origins(opts.allowed_origins.clone())
        .enforce_origin_validation()
        .with_max_request_body_bytes(opts.max_body_bytes)
        // A stateless request gets one JSON body when its handler sends
        // nothing before the result; SSE only when it must stream.
        .with_json_response(true)
        .with_legacy_session_mode(true)
        .with_cancellation_token(rmcp_cancel.clone());
    let sessions: Sessions = Arc::new(LocalSessionManager::default());
    let mcp = SharedMcp(Arc::new(StreamableHttpService::new(
        move || Ok(handler.clone()),
        sessions.clone(),
        config,
    )));

    let shared = Arc::new(guard::Shared::new(&opts, state.clone(), metrics.clone()));
    let door = direct.map(|direct| shortcut::Door {
        direct,
        shared: shared.clone(),
    });
    let app = router(
        mcp,
        sessions,
        door,
        shared.clone(),
        opts.oauth.clone(),
        opts.enforce_scopes,
    );
    let bound = listener::bind(opts.addr).await?;
    // A remote key set is refetched while the server runs.
    let refresh = opts
        .jwt
        .as_ref()
        .and_then(|v| v.remote())
        .map(|r| AbortOnDrop(tokio::spawn(r.refresh_periodically())));
    on_bound(&bound);
    let served = listener::run(
        bound,
        app,
        shared,
        rmcp_cancel,
        opts.shutdown_grace,
        listener::Limits {
            global: opts.max_connections,
            per_peer: opts.max_connections_per_peer,
        },
        shutdown,
    )
    .await;
    drop(refresh);
    served
}

/// rmcp's service behind an `Arc`. Each `from_fn` layer clones the
/// service below it for every request (axum's way to call it from a boxed
/// future), so every request cloned rmcp's service once per layer above
/// it, and its clone copies the configuration (the allowed hosts and
/// origins, string by string): 29k instructions of a resolve's 362k
/// (BENCHMARKS.md, "Session 23"). Cloning this is one reference count.
struct SharedMcp<H: ServerHandler>(Arc<StreamableHttpService<H, LocalSessionManager>>);

impl<H: ServerHandler> Clone for SharedMcp<H> {
    fn clone(&self) -> Self {
        SharedMcp(self.0.clone())
    }
}

impl<H: ServerHandler + Clone> tower::Service<axum::extract::Request> for SharedMcp<H> {
    type Response = http::Response<
        http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>,
    >;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<
        Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send + 'static>,
    >;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: axum::extract::Request) -> Self::Future {
        let service = self.0.clone();
        Box::pin(async move { Ok(service.handle(req).await) })
    }
}

/// Aborts a background task when serving ends, however it ends.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The sessions of the 2025-11-25 era, shared with the `DELETE` check.
type Sessions = Arc<LocalSessionManager>;

/// Ending a session with `DELETE /mcp`.
///
/// rmcp answers a session's DELETE with 202 Accepted, whether or not the
/// session exists. An unknown (or already ended) session is 404, as for
/// every other request that names one. A known session's end is 204 No
/// Content: the official Python SDK expects 200 or 204 and warns on
/// anything else, and the session is gone by the time rmcp answers (the spec
/// does not pin a status; the conformance suite accepts any 2xx). Whether
/// the session existed is looked up before rmcp runs but used only when rmcp
/// accepted the request, so its own refusals (Host, Origin, a missing
/// session id) keep their status.
async fn end_session(
    axum::extract::State(sessions): axum::extract::State<Sessions>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use rmcp::transport::streamable_http_server::session::SessionManager;
    if req.method() != http::Method::DELETE {
        return next.run(req).await;
    }
    let known = match req
        .headers()
        .get(rmcp::transport::common::http_header::HEADER_SESSION_ID)
        .and_then(|v| v.to_str().ok())
    {
        Some(id) => sessions.has_session(&id.into()).await.unwrap_or(true),
        None => true,
    };
    let mut resp = next.run(req).await;
    if resp.status() == http::StatusCode::ACCEPTED {
        if known {
            *resp.status_mut() = http::StatusCode::NO_CONTENT;
        } else {
            return guard::plain(http::StatusCode::NOT_FOUND, "Not Found: Session not found");
        }
    }
    resp
}

fn router<S>(
    mcp: S,
    sessions: Sessions,
    door: Option<shortcut::Door>,
    shared: Arc<guard::Shared>,
    oauth: Option<Arc<metadata::ResourceMetadata>>,
    enforce_scopes: bool,
) -> Router
where
    S: tower::Service<
            axum::extract::Request,
            Response = http::Response<
                http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>,
            >,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    // What a request the direct path declines passes, outermost first
    // (a `ServiceBuilder` runs its layers in the order they are added):
    // neither a stateless request nor a resolve's answer needs any of it.
    let rmcp = tower::ServiceBuilder::new()
        .layer(from_fn_with_state(
            Arc::new(binding::Bindings::new(sessions.clone())),
            binding::bind_session,
        ))
        .layer(from_fn_with_state(sessions, end_session))
        .layer(axum::middleware::from_fn(guard::json_rpc_parse_errors))
        .option_layer(enforce_scopes.then(|| from_fn_with_state(shared.clone(), scope::challenge)))
        .layer(axum::middleware::from_fn(hoist::rewrite))
        .service(mcp);
    // The deadline, authentication, body cap and direct path in one
    // service, in that order, before the stack above (`door`).
    let mcp_routes = Router::new().route_service(
        "/mcp",
        door::McpRoute::new(shared.clone(), door, BoxCloneSyncService::new(rmcp)),
    );
    let metrics_route = Router::new()
        .route("/metrics", get(ops::metrics))
        .layer(from_fn_with_state(shared.clone(), guard::authenticate))
        .layer(from_fn_with_state(shared.clone(), guard::host_and_origin));
    let health_route = Router::new()
        .route("/healthz", get(ops::healthz))
        .layer(from_fn_with_state(shared.clone(), guard::host_and_origin));
    // Not behind `authenticate`: a client reads it before it has a token.
    // No CORS headers, as on `/mcp` (rmcp sends none): a page that could
    // read the document could not call the server anyway.
    let mut metadata_route = Router::new();
    if let Some(meta) = oauth {
        for path in metadata::ROUTES {
            metadata_route =
                metadata_route.route(path, get(metadata::serve).with_state(meta.clone()));
        }
    }
    let metadata_route =
        metadata_route.layer(from_fn_with_state(shared.clone(), guard::host_and_origin));
    Router::new()
        .merge(mcp_routes)
        .merge(metrics_route)
        .merge(health_route)
        .merge(metadata_route)
        .with_state(shared.clone())
        .layer(guard::Front(shared))
}
