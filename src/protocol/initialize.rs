//! The handshake: the capabilities and server info regent advertises
//! (`initialize`'s, and `server/discover`'s in `discover`), `initialize`
//! itself, and `notifications/initialized`, after which a 2025-11-25
//! session's negotiation is kept for `direct` and the session is told
//! when the tool list changes (`notify`). Negotiating the protocol version
//! is rmcp's.

use rmcp::model::{
    ExtensionCapabilities, Implementation, InitializeRequestParams, InitializeResult, JsonObject,
    ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};

use super::{Negotiated, Regent, negotiation, notify, wire};

impl Regent {
    #[allow(deprecated)] // the `logging` capability (SEP-2577); both eras still carry it
    pub(super) fn answer_get_info(&self) -> ServerConfig {
        let mut ext = ExtensionCapabilities::new();
        ext.insert(wire::EXTENSION.into(), JsonObject::new());
        ext.insert(negotiation::DECISION_EXTENSION.into(), JsonObject::new());
        ext.insert(negotiation::SECURITY_EXTENSION.into(), JsonObject::new());
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_extensions_with(ext)
                .enable_tools()
                .enable_tool_list_changed()
                // Upstream log messages are relayed during forwarded calls.
                .enable_logging()
                .build(),
        )
        .with_server_info(Implementation::new("regent", env!("CARGO_PKG_VERSION")))
    }

    pub(super) async fn answer_initialize(
        &self,
        request: InitializeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        ctx.peer.set_peer_info(request.clone());
        self.counted("initialize", self.negotiate_initialize(&request))
    }

    /// A 2025-11-25-era session is ready: from now on, tell it when the tool
    /// list changes.
    pub(super) async fn answer_initialized(&self, ctx: NotificationContext<RoleServer>) {
        if let Some(session) = &self.session
            && let Some(info) = ctx.peer.peer_info()
            && info.protocol_version < ProtocolVersion::V_2026_07_28
        {
            let _ = session.set(Negotiated::of_session(Some(&info)));
        }
        tokio::spawn(notify::forward_to_session(
            ctx.peer,
            self.state.listing_changes(),
        ));
    }
}
