//! Keeping upstreams alive and their tools current while `serve` runs: one
//! supervisor task per upstream.
//!
//! A supervisor waits for its upstream's process to exit (or its connection
//! to close, which kills the process; for a `url:` upstream, for its watcher
//! to find the connection lost) and starts it again (for a `url:` upstream:
//! connects again, in a new MCP session) after a backoff
//! that doubles from [`FIRST_BACKOFF`] to [`MAX_BACKOFF`] and starts over
//! once an upstream has stayed up for [`STABLE`]. While it is down, the
//! connection it left behind answers every call with a refusal (see
//! `Upstreams::connected`), so nothing runs. It also wakes on the upstream's
//! `notifications/tools/list_changed`.
//!
//! After a restart, and on `list_changed`, it lists the tools again; when
//! they differ from what the serving catalog imported, it replaces the
//! upstream's entry in the shared snapshots and asks the reload thread for a
//! reload, which builds a whole new catalog and swaps it as for a file
//! change (and tells clients `list_changed` when the listing changed). The
//! supervisor never builds anything itself.
//!
//! Every change of liveness is recorded in `state` (the status document,
//! `/healthz`, `/metrics`) and the status file is written again.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::{Conn, Slot, Upstreams, snapshot_of};
use crate::reload::{Requester, SharedSnapshots};
use crate::state::{CatalogState, UpstreamStatus};

/// The wait before the first restart of an upstream that went down.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// The longest wait between two restarts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// An upstream that stayed up this long is restarted after
/// [`FIRST_BACKOFF`] again.
pub const STABLE: Duration = Duration::from_secs(60);
/// How often a supervisor looks whether a connection closed while its
/// process lives on.
const CLOSED_POLL: Duration = Duration::from_secs(1);

/// Where supervisors report.
#[derive(Clone)]
pub struct Hooks {
    pub state: Arc<CatalogState>,
    /// The snapshots the reload thread imports.
    pub snapshots: SharedSnapshots,
    pub reload: Requester,
}

impl Upstreams {
    /// Records every upstream as up and starts its supervisor on the current
    /// tokio runtime. Call once, after the reload thread started.
    pub fn supervise(&self, hooks: &Hooks) {
        for (name, slot) in &self.slots {
            let conn = slot.current();
            hooks.state.set_upstream(name, up_status(&conn, 0));
            tokio::spawn(run(name.clone(), slot.clone(), hooks.clone()));
        }
        hooks.reload.status_changed();
    }
}

fn up_status(conn: &Conn, restarts: u64) -> UpstreamStatus {
    UpstreamStatus {
        up: true,
        restarts,
        since: SystemTime::now(),
        pid: conn.pid,
        last_error: None,
        tools: conn.snapshot.tools.len(),
    }
}

async fn run(name: String, slot: Arc<Slot>, hooks: Hooks) {
    let mut backoff = FIRST_BACKOFF;
    let mut restarts = 0u64;
    loop {
        let conn = slot.current();
        tokio::select! {
            _ = gone(&conn) => {}
            _ = slot.tools_changed.notified() => {
                relist(&name, &slot, &conn, &hooks).await;
                continue;
            }
        }
        if conn.started.elapsed() >= STABLE {
            backoff = FIRST_BACKOFF;
        }
        let mut why = conn.why_down();
        let down_since = SystemTime::now();
        // A `url:` upstream is connected to again, not started.
        let (restarting, restart, restarted) = match &conn.url {
            Some(_) => ("reconnecting to it", "reconnect", "reconnected"),
            None => ("restarting it", "restart", "restarted"),
        };
        tracing::warn!(upstream = %name, url = ?conn.url, "upstream went down ({why}); {restarting} in {}", crate::timestamp::human_duration(backoff));
        loop {
            hooks.state.set_upstream(
                &name,
                UpstreamStatus {
                    up: false,
                    restarts,
                    since: down_since,
                    pid: None,
                    last_error: Some(why.clone()),
                    tools: conn.snapshot.tools.len(),
                },
            );
            hooks.reload.status_changed();
            tokio::time::sleep(backoff).await;
            backoff = next_backoff(backoff);
            match slot.connect().await {
                Ok(new) => {
                    restarts += 1;
                    tracing::info!(upstream = %name, pid = ?new.pid, url = ?new.url, tools = new.snapshot.tools.len(), restarts, "upstream restarted");
                    let snapshot = new.snapshot.clone();
                    let status = up_status(&new, restarts);
                    slot.replace(new);
                    hooks.state.set_upstream(&name, status);
                    hooks.reload.status_changed();
                    publish(&name, snapshot, restarted, &hooks);
                    break;
                }
                Err(e) => {
                    why = format!("{restart} failed: {e}");
                    tracing::warn!(upstream = %name, "upstream {why}; trying again in {}", crate::timestamp::human_duration(backoff));
                }
            }
        }
    }
}

/// The wait after `backoff`: twice as long, at most [`MAX_BACKOFF`].
fn next_backoff(backoff: Duration) -> Duration {
    (backoff * 2).min(MAX_BACKOFF)
}

/// Completes when `conn`'s process has exited. A connection that closed
/// while its process lives on has the process killed first.
async fn gone(conn: &Conn) {
    let mut exited = conn.exited.clone();
    loop {
        if *exited.borrow() {
            return;
        }
        if conn.client.is_closed() {
            conn.kill();
        }
        tokio::select! {
            changed = exited.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep(CLOSED_POLL) => {}
        }
    }
}

/// Lists `conn`'s tools again after the upstream said they changed.
async fn relist(name: &str, slot: &Slot, conn: &Conn, hooks: &Hooks) {
    let listed =
        tokio::time::timeout(slot.start_timeout, conn.client.peer().list_all_tools()).await;
    let snapshot = match listed {
        Ok(Ok(tools)) => snapshot_of(&tools),
        Ok(Err(e)) => Err(format!(
            "`tools/list` failed: {}",
            super::lower(&e.to_string())
        )),
        Err(_) => Err(format!(
            "`tools/list` did not answer within {}",
            crate::timestamp::human_duration(slot.start_timeout)
        )),
    };
    match snapshot {
        Ok(s) => {
            let mut status = hooks.state.status().upstreams.get(name).cloned();
            if let Some(st) = status.as_mut() {
                st.tools = s.tools.len();
                hooks.state.set_upstream(name, st.clone());
            }
            publish(name, s, "listed changed tools", hooks);
        }
        // The catalog keeps what the upstream listed before.
        Err(e) => {
            tracing::warn!(upstream = %name, "upstream said its tools changed, but {e}; keeping its previous tools")
        }
    }
}

/// Replaces `name`'s snapshot and asks for a reload, when it changed.
fn publish(name: &str, snapshot: crate::source::upstream::Snapshot, how: &str, hooks: &Hooks) {
    let changed = {
        let mut all = hooks.snapshots.lock().unwrap_or_else(|p| p.into_inner());
        if all.get(name) == Some(&snapshot) {
            false
        } else {
            all.insert(name.to_string(), snapshot);
            true
        }
    };
    if changed {
        hooks
            .reload
            .upstream_changed(format!("upstream `{name}` {how}"));
    } else {
        tracing::debug!(upstream = %name, "upstream {how}; its tools are unchanged");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_half_a_second_up_to_thirty_seconds() {
        let waits: Vec<f64> =
            std::iter::successors(Some(FIRST_BACKOFF), |b| Some(next_backoff(*b)))
                .take(9)
                .map(|d| d.as_secs_f64())
                .collect();
        assert_eq!(waits, [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]);
    }
}
