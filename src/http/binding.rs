//! Sessions bound to the caller who opened them.
//!
//! With JWT verification, every request carries a verified caller, and the
//! policy decides on that request's caller. A 2025-11-25 session, though,
//! also holds state between requests (pending elicitations, the
//! server-to-client stream, its negotiated extensions), and anyone who
//! learns a session id could send requests into it under their own valid
//! token. MCP's security best practices ask servers to bind session ids to
//! the user: the issuer and subject that opened a session are recorded when
//! rmcp answers its `initialize` with a new `Mcp-Session-Id`, and a request
//! naming that session under another identity is answered 404, exactly as
//! an unknown session is, so it learns nothing about whether the session
//! exists. A session id rmcp knows but no caller opened (none can be, while
//! JWTs are required) is refused the same way.
//!
//! This module knows sessions and callers; it does not know tokens (that is
//! `http/jwt`) or what a session holds (rmcp).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::StatusCode;
use rmcp::transport::common::http_header::HEADER_SESSION_ID;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use crate::caller::Caller;

/// Bindings are pruned of ended sessions once they pass this many.
const PRUNE_AT: usize = 1024;

/// Which caller (issuer, subject) opened each live session.
pub struct Bindings {
    sessions: Arc<LocalSessionManager>,
    owners: Mutex<HashMap<String, (String, String)>>,
    /// The size after the last prune: prune again when it has doubled.
    pruned_at: Mutex<usize>,
}

impl Bindings {
    pub fn new(sessions: Arc<LocalSessionManager>) -> Bindings {
        Bindings {
            sessions,
            owners: Mutex::new(HashMap::new()),
            pruned_at: Mutex::new(PRUNE_AT),
        }
    }

    fn owner(&self, session: &str) -> Option<(String, String)> {
        self.owners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(session)
            .cloned()
    }

    /// Forgets sessions rmcp no longer has (ended, expired), once the map
    /// has doubled since the last time, so it stays as large as the live
    /// sessions and the work is amortized.
    async fn prune(&self) {
        let ids: Vec<String> = {
            let owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
            let mut at = self.pruned_at.lock().unwrap_or_else(|p| p.into_inner());
            if owners.len() < *at {
                return;
            }
            *at = (owners.len() * 2).max(PRUNE_AT);
            owners.keys().cloned().collect()
        };
        let mut gone = Vec::new();
        for id in ids {
            if !self
                .sessions
                .has_session(&id.as_str().into())
                .await
                .unwrap_or(true)
            {
                gone.push(id);
            }
        }
        let mut owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
        for id in gone {
            owners.remove(&id);
        }
    }
}

/// The 404 rmcp gives a session it does not know.
fn unknown_session() -> Response {
    super::guard::plain(StatusCode::NOT_FOUND, "Not Found: Session not found")
}

/// Refuses a request into a session another caller opened; records who
/// opens a new one. Without a verified caller (no JWT configured) there is
/// nothing to bind and the request passes as it is.
pub async fn bind_session(State(b): State<Arc<Bindings>>, req: Request, next: Next) -> Response {
    let Some(caller) = req.extensions().get::<Arc<Caller>>().cloned() else {
        return next.run(req).await;
    };
    let who = (caller.issuer.clone(), caller.subject.clone());
    let session = req
        .headers()
        .get(HEADER_SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let deleting = req.method() == http::Method::DELETE;
    if let Some(id) = &session {
        match b.owner(id) {
            Some(owner) if owner == who => {}
            Some(_) => return unknown_session(),
            None => {
                if b.sessions
                    .has_session(&id.as_str().into())
                    .await
                    .unwrap_or(true)
                {
                    return unknown_session();
                }
                // Unknown to rmcp too: its own 404 follows.
            }
        }
    }
    let resp = next.run(req).await;
    match &session {
        None => {
            if let Some(id) = resp
                .headers()
                .get(HEADER_SESSION_ID)
                .and_then(|v| v.to_str().ok())
            {
                b.owners
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(id.to_string(), who);
                b.prune().await;
            }
        }
        Some(id) if deleting && resp.status().is_success() => {
            b.owners
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(id);
        }
        Some(_) => {}
    }
    resp
}
