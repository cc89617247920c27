//! `ping`: answered as rmcp's default does, implemented only to be counted
//! (`count`).

use rmcp::ErrorData;
use rmcp::service::{RequestContext, RoleServer};

use super::Regent;

impl Regent {
    pub(super) async fn answer_ping(
        &self,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.counted("ping", Ok(()))
    }
}
