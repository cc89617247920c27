//! `subscriptions/listen` (2026-07-28): the filter accepted as asked (rmcp
//! narrows it to the advertised `tools.listChanged`) and the subscription
//! run until the client leaves. Telling of changes is `notify`'s.

use rmcp::ErrorData;
use rmcp::model::SubscriptionFilter;
use rmcp::service::SubscriptionContext;

use super::{Regent, notify};

impl Regent {
    /// 2026-07-28 `subscriptions/listen`: accept what was asked; rmcp narrows
    /// it to what the capabilities advertise (only `tools.listChanged`).
    pub(super) fn answer_accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    pub(super) async fn answer_listen(&self, sub: SubscriptionContext) -> Result<(), ErrorData> {
        // Boxed for the same reason as `call_tool`.
        Box::pin(notify::run_subscription(sub, self.state.listing_changes())).await;
        self.counted("subscriptions/listen", Ok(()))
    }
}
