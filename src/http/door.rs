//! The `/mcp` route as one hand-written tower service: the deadline and
//! in-flight count, authentication, the body cap and the direct path
//! (`shortcut`) called in that order as plain functions, then, for what the
//! direct path does not answer, a POST's body read whole and scanned for
//! numbers spelled by hand (`protocol::scan_spelled`), and the rest of `/mcp` (the session binding,
//! `DELETE` handling, parse-error rewriting, scope challenge, `hoist`,
//! rmcp's service), still axum `from_fn` layers.
//!
//! Why: axum's `from_fn` layer clones the whole stack below it for every
//! request (a boxed `Route` per level when layered on a router), and boxes
//! its future and its `Next`; seven such layers stood in front of a
//! resolve, each cloning the rest: 25k of its 144k instructions, with the
//! front three (BENCHMARKS.md, "Session 25"). Cloning this service is one
//! reference count, and the rmcp stack is cloned only for a request that
//! goes to it.
//!
//! What each check does and answers is `guard`'s and `shortcut`'s; the
//! order is this module's, and must stay the one the layers had.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::Response;
use tower::util::BoxCloneSyncService;
use tower::{Service, ServiceExt};

use super::guard::{self, Shared};
use super::shortcut;

/// The rest of `/mcp`, after the direct path declined.
pub type Rmcp = BoxCloneSyncService<Request, Response, Infallible>;

/// The `/mcp` route (see the module's documentation).
#[derive(Clone)]
pub struct McpRoute(Arc<Inner>);

struct Inner {
    shared: Arc<Shared>,
    door: Option<shortcut::Door>,
    rmcp: Rmcp,
}

impl McpRoute {
    pub fn new(shared: Arc<Shared>, door: Option<shortcut::Door>, rmcp: Rmcp) -> McpRoute {
        McpRoute(Arc::new(Inner { shared, door, rmcp }))
    }
}

impl Inner {
    async fn serve(&self, req: Request) -> Response {
        guard::deadline_and_track(&self.shared, req, |mut req| async move {
            if let Some(refused) = guard::authorize(&self.shared, &mut req).await {
                return refused;
            }
            if let Some(refused) = guard::over_cap(&self.shared, req.headers()) {
                return refused;
            }
            match &self.door {
                Some(door) => shortcut::take(door, req, |req| self.rmcp(req)).await,
                None => self.rmcp(req).await,
            }
        })
        .await
    }

    /// rmcp's stack, cloned for this request only. A POST's body is read
    /// whole first (within the cap; one that cannot be is handed on as it
    /// came, and rmcp refuses it) and scanned for numbers spelled by hand
    /// (`protocol::scan_spelled`), which ride in the request's extensions to the
    /// handler (`protocol::spelled_of`).
    async fn rmcp(&self, req: Request) -> Response {
        let req = if req.method() == http::Method::POST {
            let (mut parts, body) = req.into_parts();
            match shortcut::collect(body, self.shared.max_body_bytes()).await {
                Ok(bytes) => {
                    if let Some(spelled) = crate::protocol::scan_spelled(&bytes) {
                        parts.extensions.insert(spelled);
                    }
                    Request::from_parts(parts, axum::body::Body::from(bytes))
                }
                Err(replay) => Request::from_parts(parts, replay),
            }
        } else {
            req
        };
        match self.rmcp.clone().oneshot(req).await {
            Ok(resp) => resp,
            Err(never) => match never {},
        }
    }
}

impl Service<Request> for McpRoute {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send + 'static>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let inner = self.0.clone();
        Box::pin(async move { Ok(inner.serve(req).await) })
    }
}
