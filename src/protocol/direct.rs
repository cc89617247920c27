//! `tools/resolve` and `tools/annotations` of an established 2025-era stdio
//! session, answered as the line is read instead of through rmcp's
//! per-request dispatch.
//!
//! Why: rmcp runs every request as a task of its own (a spawn, the request
//! context, a tracing span, a response channel back to the transport). For
//! the preflight an agent sends before each call, that machinery was about a
//! quarter of the request thread's instructions (BENCHMARKS.md, "Issue 17:
//! the direct path"). A resolve never waits on anything, so nothing is lost
//! by answering it in place.
//!
//! What it does not do: decide or build anything. The answer, or the error,
//! comes from `Regent::custom`, the same function rmcp's custom-request hook
//! calls, and is encoded by `line::encode`, as rmcp's answers are; so
//! the bytes are the same either way (`tests/integration/protocol.rs`
//! compares them). Everything else stays rmcp's: the handshake, every other
//! method, a request before `notifications/initialized`, any 2026-07-28
//! session (whose requests carry their own era and capabilities in `_meta`,
//! which rmcp checks), and any request that brings `_meta`.

use std::sync::{Arc, OnceLock};

use rmcp::model::{CustomRequest, Extensions, ServerJsonRpcMessage, ServerResult};

use super::Regent;
use super::line::{Custom, encode};
use super::negotiation::Negotiated;
use super::pace;

/// What the session negotiated, set once its 2025-era handshake is over
/// (`Regent::on_initialized`); shared by the transport's [`Direct`] and the
/// server it was split from, and by no other session.
pub type Session = Arc<OnceLock<Negotiated>>;

/// The stdio transport's way to the server's answers. Cloned for an answer
/// computed off the transport's thread (see [`pace`]).
#[derive(Clone)]
pub struct Direct {
    regent: Regent,
    session: Session,
    pace: Arc<pace::Pace>,
}

impl Direct {
    pub(super) fn new(regent: Regent, session: Session, pace: Arc<pace::Pace>) -> Direct {
        Direct {
            regent,
            session,
            pace,
        }
    }

    /// What the session negotiated, when [`Direct::answer`] may answer
    /// `request`; `None` when rmcp must (the handshake is not over, or the
    /// request brings `_meta`).
    pub(super) fn takes(&self, request: &Custom) -> Option<Negotiated> {
        let negotiated = *self.session.get()?;
        request.meta.is_none().then_some(negotiated)
    }

    /// Whether `request`, `bytes` long, is answered in place (its tool's
    /// [`pace`]), and the tool's record for [`Direct::answer`].
    pub(super) fn in_place(
        &self,
        request: &Custom,
        bytes: usize,
    ) -> (bool, Option<Arc<pace::Tool>>) {
        self.pace.request(
            &self.regent.state.current(),
            &request.method,
            request.params.as_ref(),
            || bytes,
        )
    }

    /// Where answers computed off the transport's thread run.
    pub(super) fn pace(&self) -> Arc<pace::Pace> {
        self.pace.clone()
    }

    /// The whole answer line to `request`, newline included (empty in the
    /// unreachable case that it cannot be encoded), with what
    /// [`takes`](Direct::takes) returned for it. How long its evaluation
    /// took goes to the tool's `record`.
    pub(super) fn answer(
        &self,
        request: Custom,
        negotiated: Negotiated,
        record: Option<Arc<pace::Tool>>,
    ) -> Vec<u8> {
        let Custom {
            id, method, params, ..
        } = request;
        // For tests and for whoever wonders which path answered.
        tracing::trace!(%id, %method, "answered without rmcp");
        let custom = CustomRequest {
            method,
            params,
            extensions: Extensions::new(),
        };
        // A 2025-era session has no `resultType`; its caller is the
        // configured one (stdio has no other).
        let caller = self.regent.caller.clone();
        let message = match self
            .regent
            .custom(custom, false, negotiated, caller, record)
        {
            Ok(result) => ServerJsonRpcMessage::response(ServerResult::CustomResult(result), id),
            Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
        };
        match encode(message) {
            Ok(mut bytes) => {
                bytes.push(b'\n');
                bytes
            }
            // Not reachable for a result built from JSON values; rmcp would
            // fail the same way, so say so and answer nothing.
            Err(e) => {
                tracing::warn!("cannot encode an answer: {e}");
                Vec::new()
            }
        }
    }
}
