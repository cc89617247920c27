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
//!
//! Over HTTP, [`HttpDirect`] does the same for a stateless 2026-07-28
//! `tools/resolve` POST, which rmcp's Streamable HTTP service would parse
//! into its typed union, check, and answer through a task, a one-shot
//! transport and a service loop of its own (BENCHMARKS.md, "Session 23").
//! It answers only a request every one of rmcp's checks plainly passes
//! (`MCP-Protocol-Version` and `Mcp-Method` single and exact, `_meta`
//! naming 2026-07-28 with its required keys well formed, a JSON-RPC request
//! envelope); anything else, however slightly unusual, goes to rmcp, so
//! every refusal stays rmcp's. The HTTP checks rmcp makes before it looks
//! at the message (Host, Origin, Accept, Content-Type) are `http`'s side of
//! the door (`http/shortcut`).

use std::sync::{Arc, LazyLock, OnceLock};

use http::{HeaderMap, HeaderName, StatusCode};
use rmcp::model::{
    CustomRequest, ErrorCode, Extensions, ProtocolVersion, RequestMetaObject, ServerJsonRpcMessage,
    ServerResult,
};
use rmcp::transport::common::http_header::{HEADER_MCP_METHOD, HEADER_MCP_PROTOCOL_VERSION};

use crate::caller::Caller;

use super::Regent;
use super::line::{Custom, custom_request, encode};
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
            id,
            method,
            params,
            spelled,
            ..
        } = request;
        // For tests and for whoever wonders which path answered.
        tracing::trace!(%id, %method, "answered without rmcp");
        let custom = CustomRequest {
            method,
            params,
            extensions: spelled_extensions(spelled),
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

/// A direct request's extensions: the numbers it spelled by hand, where
/// `Regent::custom` reads them as it does a request rmcp hands it (nothing
/// allocated for a request without any).
fn spelled_extensions(spelled: Option<Arc<crate::policy::spelled::Spelled>>) -> Extensions {
    let mut extensions = Extensions::new();
    if let Some(spelled) = spelled {
        extensions.insert(spelled);
    }
    extensions
}

/// The one method [`HttpDirect`] answers.
const HTTP_METHOD: &str = "tools/resolve";

/// Answers stateless 2026-07-28 `tools/resolve` POSTs without rmcp's
/// Streamable HTTP service (see the module's documentation). Built by
/// `Regent::http_direct`; its answers come from `Regent::custom`, as
/// rmcp's custom-request hook's do, rendered as text and written by
/// [`encode`], as the stdio transport writes them.
#[derive(Clone)]
pub struct HttpDirect {
    regent: Regent,
}

impl HttpDirect {
    pub(super) fn new(regent: Regent) -> HttpDirect {
        HttpDirect { regent }
    }

    /// Whether a request with these headers may be one [`HttpDirect::answer`]
    /// takes: exactly one `MCP-Protocol-Version: 2026-07-28` and exactly one
    /// `Mcp-Method: tools/resolve` (rmcp refuses a duplicate or a mismatch;
    /// that refusal stays rmcp's). Cheap, so every other request pays only
    /// for it.
    pub fn wants(&self, headers: &HeaderMap) -> bool {
        // rmcp's names, parsed once: a `&str` name is parsed (and
        // lowercased) at every lookup.
        static PROTOCOL_VERSION: LazyLock<HeaderName> = LazyLock::new(|| {
            HeaderName::from_bytes(HEADER_MCP_PROTOCOL_VERSION.as_bytes()).expect("a header name")
        });
        static METHOD: LazyLock<HeaderName> = LazyLock::new(|| {
            HeaderName::from_bytes(HEADER_MCP_METHOD.as_bytes()).expect("a header name")
        });
        only(headers, &PROTOCOL_VERSION) == Some(ProtocolVersion::V_2026_07_28.as_str())
            && only(headers, &METHOD) == Some(HTTP_METHOD)
    }

    /// The status and JSON body answering `body`, a request whose headers
    /// [`HttpDirect::wants`]; `None` when rmcp must answer it: not a
    /// well-formed JSON-RPC `tools/resolve` request, or its `_meta` not
    /// exactly 2026-07-28's (`protocolVersion` the header's, a usable
    /// `clientCapabilities`). `caller`: the one the HTTP layer verified.
    pub fn answer(
        &self,
        body: &[u8],
        caller: Option<Arc<Caller>>,
    ) -> Option<(StatusCode, Vec<u8>)> {
        let request = custom_request(body)?;
        if request.method != HTTP_METHOD {
            return None;
        }
        let meta = RequestMetaObject::from(request.meta?);
        // What rmcp checks of `_meta` before the handler runs: the version
        // the header names (`validate_request_protocol_version_meta`), and
        // the keys 2026-07-28 requires, well formed (`missing_required_keys`,
        // in the HTTP service and in the handler).
        if meta.get(META_PROTOCOL_VERSION).and_then(|v| v.as_str())
            != Some(ProtocolVersion::V_2026_07_28.as_str())
            || meta.protocol_version() != Some(ProtocolVersion::V_2026_07_28)
            || !meta
                .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                .is_empty()
        {
            return None;
        }
        let negotiated = Negotiated::from_json(
            meta.get(super::negotiation::CLIENT_CAPABILITIES)
                .and_then(|c| c.get("extensions")),
        );
        tracing::trace!(id = %request.id, "answered without rmcp over HTTP");
        let custom = CustomRequest {
            method: request.method,
            params: request.params,
            extensions: spelled_extensions(request.spelled),
        };
        // As `Regent::caller`: the verified caller, else the configured one.
        let caller = caller.or_else(|| self.regent.caller.clone());
        let id = request.id;
        let message = match self.regent.custom(custom, true, negotiated, caller, None) {
            Ok(result) => ServerJsonRpcMessage::response(ServerResult::CustomResult(result), id),
            Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
        };
        let status = http_status(&message);
        match encode(message) {
            Ok(bytes) => Some((status, bytes)),
            // Not reachable for a result built from JSON values; rmcp would
            // answer 500 for it, and does when asked again.
            Err(e) => {
                tracing::warn!("cannot encode an answer: {e}");
                None
            }
        }
    }
}

/// The `_meta` key of the request's protocol version.
const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// The value of header `name` when it is there exactly once, as text.
fn only<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<&'a str> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?;
    if values.next().is_some() {
        return None;
    }
    first.to_str().ok()
}

/// The HTTP status rmcp gives a stateless 2026-07-28 answer
/// (`jsonrpc_http_status` in its Streamable HTTP service, for a request
/// whose `_meta` is well formed): 400 for the protocol-level refusals, 404
/// for an unknown method, 200 for every other error and every result.
fn http_status(message: &ServerJsonRpcMessage) -> StatusCode {
    let ServerJsonRpcMessage::Error(error) = message else {
        return StatusCode::OK;
    };
    match error.error.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}
