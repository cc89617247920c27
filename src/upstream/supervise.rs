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
//! upstream's entry in the shared snapshots (`state::UpstreamSnapshots`) and
//! asks for a reload through [`Reload`], which `serve` wires to the reload
//! thread; that builds a whole new catalog and swaps it as for a file
//! change (and tells clients `list_changed` when the listing changed). The
//! supervisor never builds anything itself.
//!
//! Every change of liveness is recorded in `state` (the status document,
//! `/healthz`, `/metrics`) and the status file is written again.
//!
//! The declarations change while serving: each catalog the reload thread
//! reads, it hands its upstream declarations over (on the channel `serve`
//! gives both, `reload::Settings::declared`) and [`Upstreams::redeclare`]
//! applies them. An upstream reached as before
//! (see `UpstreamDecl::same_connection`) is left alone; one declared
//! differently is retired (supervisor stopped, process killed or session
//! closed) and a new slot with the new declaration is started in its place;
//! one no longer declared is retired and forgotten; one newly declared is
//! started. A new slot's first connection is made at once; until it lists
//! its tools the catalog keeps what it imported under that name (nothing,
//! for a new name), and calls to it are refused. Its tools then go through
//! the shared snapshots and a reload request, as after any restart.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::{Conn, Slot, Upstreams, snapshot_of};
use crate::source::upstream::Declared;
use crate::state::{CatalogState, UpstreamSnapshots, UpstreamStatus};

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

/// What a supervisor asks of whoever rebuilds the catalog. Supervisors
/// never build; `serve` hands them the reload thread's requester through
/// this, so `upstream` does not know `reload` (which sits above it).
pub trait Reload: Send + Sync {
    /// Rebuild the catalog: an upstream's tools changed (`why` says which
    /// and how, for the log) and its new snapshot is in [`Hooks::snapshots`].
    fn upstream_changed(&self, why: String);
    /// Write the status file again: an upstream's liveness changed.
    fn status_changed(&self);
}

/// Where supervisors report.
#[derive(Clone)]
pub struct Hooks {
    pub state: Arc<CatalogState>,
    /// The snapshots every rebuilt catalog imports.
    pub snapshots: UpstreamSnapshots,
    pub reload: Arc<dyn Reload>,
}

impl Upstreams {
    /// Records every upstream as up and starts its supervisor on the current
    /// tokio runtime; applies the declarations received on `declared` as
    /// they come ([`Upstreams::redeclare`]). Call once, after the reload
    /// thread started.
    pub fn supervise(
        self: &Arc<Self>,
        hooks: &Hooks,
        declared: Option<tokio::sync::mpsc::UnboundedReceiver<BTreeMap<String, Declared>>>,
    ) {
        for (name, slot) in self.slots() {
            if let Some(conn) = slot.current() {
                hooks.state.set_upstream(&name, up_status(&conn, 0));
            }
            spawn(name, slot, hooks);
        }
        hooks.reload.status_changed();
        if let Some(mut declared) = declared {
            let (this, hooks) = (self.clone(), hooks.clone());
            tokio::spawn(async move {
                while let Some(d) = declared.recv().await {
                    this.redeclare(d, &hooks);
                }
            });
        }
    }

    /// Makes the upstreams those `declared` (by name): starts the new ones,
    /// restarts with its new declaration one reached differently, stops
    /// those no longer declared. The others are not touched.
    pub fn redeclare(&self, declared: BTreeMap<String, Declared>, hooks: &Hooks) {
        let mut slots = self.slots.write().unwrap_or_else(|p| p.into_inner());
        let mut changed = false;
        let gone: Vec<String> = slots
            .keys()
            .filter(|n| !declared.contains_key(*n))
            .cloned()
            .collect();
        for name in gone {
            if let Some(slot) = slots.remove(&name) {
                slot.retire();
            }
            hooks.snapshots.remove(&name);
            hooks.state.remove_upstream(&name);
            tracing::info!(upstream = %name, "upstream no longer declared; stopped it");
            changed = true;
        }
        for (name, d) in declared {
            let why = match slots.get(&name) {
                Some(old) if old.declared.same_connection(&d) => continue,
                Some(old) => {
                    old.retire();
                    tracing::info!(upstream = %name, "upstream declared differently; stopped it, starting it as now declared");
                    "its declaration changed; it is starting as now declared"
                }
                None => {
                    tracing::info!(upstream = %name, "upstream newly declared; starting it");
                    "it was newly declared and is starting"
                }
            };
            let (slot, _) = Slot::new(d, self.start_timeout);
            slot.set_not_yet(why.into());
            let slot = Arc::new(slot);
            spawn(name.clone(), slot.clone(), hooks);
            slots.insert(name, slot);
            changed = true;
        }
        if changed {
            hooks.reload.status_changed();
        }
    }
}

/// Starts `slot`'s supervisor, which it aborts when retired.
fn spawn(name: String, slot: Arc<Slot>, hooks: &Hooks) {
    let task = tokio::spawn(run(name, slot.clone(), hooks.clone()));
    *slot.task.lock().unwrap_or_else(|p| p.into_inner()) = Some(task.abort_handle());
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

fn down_status(restarts: u64, since: SystemTime, tools: usize, why: String) -> UpstreamStatus {
    UpstreamStatus {
        up: false,
        restarts,
        since,
        pid: None,
        last_error: Some(why),
        tools,
    }
}

/// Records `status` for `slot`'s upstream, unless the slot was retired
/// (its name now belongs to another slot, or to nobody).
fn report(name: &str, slot: &Slot, status: UpstreamStatus, hooks: &Hooks) {
    if slot.is_retired() {
        return;
    }
    hooks.state.set_upstream(name, status);
    hooks.reload.status_changed();
}

async fn run(name: String, slot: Arc<Slot>, hooks: Hooks) {
    let mut backoff = FIRST_BACKOFF;
    let mut restarts = 0u64;
    let url = slot.declared.decl.url.clone();
    loop {
        // A slot without a connection is a declaration added or changed
        // while serving: it is started at once.
        let (mut why, tools, first) = match slot.current() {
            Some(conn) => {
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
                (conn.why_down(), conn.snapshot.tools.len(), false)
            }
            None => {
                let imported = hooks.snapshots.tools(&name);
                (slot.not_yet(), imported, true)
            }
        };
        let down_since = SystemTime::now();
        // A `url:` upstream is connected to again, not started.
        let (restarting, restart, restarted) = match (&url, first) {
            (Some(_), false) => ("reconnecting to it", "reconnect", "reconnected"),
            (None, false) => ("restarting it", "restart", "restarted"),
            (Some(_), true) => ("connecting to it", "connection", "connected"),
            (None, true) => ("starting it", "start", "started"),
        };
        if !first {
            tracing::warn!(upstream = %name, url = ?url, "upstream went down ({why}); {restarting} in {}", crate::timestamp::human_duration(backoff));
        }
        if let Some(invalid) = &slot.invalid {
            // Nothing to try again until the declaration changes.
            tracing::error!(upstream = %name, "upstream cannot be started: {invalid}");
            report(
                &name,
                &slot,
                down_status(
                    restarts,
                    down_since,
                    tools,
                    format!("it cannot be started: {invalid}"),
                ),
                &hooks,
            );
            return;
        }
        let mut wait = !first;
        loop {
            report(
                &name,
                &slot,
                down_status(restarts, down_since, tools, why.clone()),
                &hooks,
            );
            if wait {
                tokio::time::sleep(backoff).await;
                backoff = next_backoff(backoff);
            }
            wait = true;
            match slot.connect().await {
                Ok(new) => {
                    if !first {
                        restarts += 1;
                    }
                    tracing::info!(upstream = %name, pid = ?new.pid, url = ?new.url, tools = new.snapshot.tools.len(), restarts, "upstream {restarted}");
                    let snapshot = new.snapshot.clone();
                    let status = up_status(&new, restarts);
                    slot.replace(new);
                    report(&name, &slot, status, &hooks);
                    publish(&name, &slot, snapshot, restarted, &hooks);
                    break;
                }
                Err(e) => {
                    why = format!("{restart} failed: {e}");
                    if first {
                        slot.set_not_yet(why.clone());
                    }
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
                report(name, slot, st.clone(), hooks);
            }
            publish(name, slot, s, "listed changed tools", hooks);
        }
        // The catalog keeps what the upstream listed before.
        Err(e) => {
            tracing::warn!(upstream = %name, "upstream said its tools changed, but {e}; keeping its previous tools")
        }
    }
}

/// Replaces `name`'s snapshot and asks for a reload, when it changed
/// (and `slot` still serves the name).
fn publish(
    name: &str,
    slot: &Slot,
    snapshot: crate::source::upstream::Snapshot,
    how: &str,
    hooks: &Hooks,
) {
    if slot.is_retired() {
        return;
    }
    if hooks.snapshots.replace(name, snapshot) {
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
