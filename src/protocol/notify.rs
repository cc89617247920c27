//! Telling clients that the tool list changed, in both protocol eras.
//!
//! 2025-11-25-era sessions (opened with `initialize`) get an unscoped
//! `notifications/tools/list_changed`; a forwarding task per session starts
//! when the client says `notifications/initialized`. 2026-07-28-era clients
//! get it only on the `subscriptions/listen` streams they opened, scoped with
//! the subscription id (rmcp's `SubscriptionSink` adds it). Both wait on the
//! listing generation in [`CatalogState`](crate::state::CatalogState); when
//! to announce a change is the reloader's decision, not this module's.

use rmcp::service::{Peer, RoleServer, SubscriptionContext};
use tokio::sync::watch;

/// Sends `notifications/tools/list_changed` to a legacy-era session each
/// time the listing changes, until the session or the state goes away.
pub async fn forward_to_session(peer: Peer<RoleServer>, mut changes: watch::Receiver<u64>) {
    // Only changes after the session started count: the client listed the
    // tools it knows after initializing.
    changes.mark_unchanged();
    while changes.changed().await.is_ok() {
        if peer.is_transport_closed() {
            break;
        }
        if let Err(e) = peer.notify_tool_list_changed().await {
            tracing::debug!("session closed, no longer forwarding list_changed: {e}");
            break;
        }
    }
}

/// Runs one `subscriptions/listen` stream: a scoped list_changed for every
/// listing change, until the client cancels it or the session ends.
pub async fn run_subscription(sub: SubscriptionContext, mut changes: watch::Receiver<u64>) {
    changes.mark_unchanged();
    let wants_tools = sub.accepted().tools_list_changed == Some(true);
    loop {
        tokio::select! {
            _ = sub.cancelled() => break,
            changed = changes.changed() => {
                if changed.is_err() {
                    break;
                }
                if !wants_tools {
                    continue;
                }
                if let Err(e) = sub.sink().notify_tool_list_changed().await {
                    tracing::debug!("subscription {:?} closed: {e}", sub.sink().id());
                    break;
                }
            }
        }
    }
}
