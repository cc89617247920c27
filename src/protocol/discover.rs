//! `server/discover` (2026-07-28): the protocol versions regent speaks and
//! the capabilities and server info it advertises (`initialize`'s), for a
//! client that opens no session.

use rmcp::model::DiscoverResult;
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};

use super::Regent;

impl Regent {
    pub(super) async fn answer_discover(
        &self,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        let result = DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        );
        self.counted("server/discover", Ok(result))
    }
}
