//! Live upstream MCP servers: starting each declared upstream as a child over
//! stdio (`command:`) or reaching it over Streamable HTTP (`url:`),
//! connecting to it with rmcp's client, listing its tools into a
//! [`Snapshot`], and forwarding the calls regent has decided to allow.
//!
//! This is the side-effecting half of "upstream MCP servers as a tool
//! source"; the other half (`source::upstream`) is data. The catalog build
//! never sees a connection: `serve` starts the upstreams first and hands
//! their snapshots to `Source::import_upstreams`. Once serving, each
//! upstream has a supervisor ([`supervise`]) that restarts it with backoff
//! when it exits and re-lists its tools after a restart or on its
//! `notifications/tools/list_changed`; a changed list goes through the
//! normal reload path. When a reload reads declarations that differ, the
//! upstreams follow them (`Upstreams::redeclare`). A call to an upstream that is down fails closed
//! (nothing runs). `check`, `test` and `resolve` never start an upstream
//! unless asked (`check --start-upstreams`): they read its pinned snapshot.
//!
//! A `url:` upstream has no process to watch, so a watcher task stands in
//! for the child's waiter: it pings the upstream every [`PING_INTERVAL`] and
//! reports the connection lost when a ping fails or the transport closes,
//! after which the supervisor connects again (a new MCP session, with its
//! tools listed again) exactly as it restarts a child. rmcp's client
//! negotiates the protocol version; its credentials (`auth`, as
//! `run.http.auth`: bearer, basic or a header), when declared, are read at
//! each connection.
//!
//! What an upstream sends during a forwarded call, progress and log
//! messages, goes to the client that made the call ([`relay`]); its
//! requests to the client (elicitation, roots, sampling) go to the call's
//! [`relay::Asker`], which `protocol` gives, through [`Listener`].

mod connect;
mod forward;
pub mod oversize;
pub mod relay;
pub mod supervise;

pub use connect::snapshot_of;
use connect::{connect, error_chain, lower, start_failed};
pub use forward::{Connected, Forwarded, RelayTo};

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use rmcp::handler::client::ClientHandler;
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use serde_json::Value;
use tokio::sync::{Notify, oneshot, watch};

use crate::diag::Diagnostics;
use crate::source::Source;
use crate::source::upstream::{Declared, Snapshot, Unreadable, UpstreamDecl, UpstreamRef};

/// How long an upstream has to start, answer `initialize` and list its
/// tools, unless its declaration says (`start_timeout`).
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How many lines of a failed upstream's standard error its error shows.
const STDERR_TAIL_LINES: usize = 5;
/// How long one forwarded call may take, unless the declaration says (`timeout`).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// How often the connection to a `url:` upstream is checked with `ping`.
/// Nothing else notices a server that went away between calls: the HTTP
/// transport opens a connection per request.
pub const PING_INTERVAL: Duration = Duration::from_secs(2);
/// How long a `ping` may take before the connection counts as lost.
const PING_TIMEOUT: Duration = Duration::from_secs(10);

/// One connection to an upstream: its client and the process (or HTTP
/// session) behind it. Replaced as a whole when the upstream is restarted.
struct Conn {
    client: RunningService<RoleClient, Listener>,
    snapshot: Snapshot,
    /// The calls running on this connection, for the notifications the
    /// upstream sends during them.
    relays: Arc<relay::Relays>,
    /// Becomes `true` once the process has exited, or the HTTP connection
    /// was found lost (its waiter or watcher task owns it).
    exited: watch::Receiver<bool>,
    /// Asks the waiter task to kill the process (a connection whose
    /// transport closed while the process lives on), or the watcher to
    /// give the HTTP connection up.
    kill: std::sync::Mutex<Option<oneshot::Sender<()>>>,
    pid: Option<u32>,
    /// The `url` of an HTTP upstream, named in its errors.
    url: Option<String>,
    /// Why the connection went down, as its waiter or watcher saw it.
    lost: Arc<std::sync::Mutex<Option<String>>>,
    started: Instant,
}

impl Conn {
    /// Whether calls can be sent on this connection.
    fn is_up(&self) -> bool {
        !*self.exited.borrow() && !self.client.is_closed()
    }

    fn kill(&self) {
        if let Some(k) = self.kill.lock().ok().and_then(|mut k| k.take()) {
            let _ = k.send(());
        }
    }

    /// Why the connection went down, in words for the log and the status.
    fn why_down(&self) -> String {
        // The url is not repeated here: the errors that quote this name it.
        let lost = self.lost.lock().ok().and_then(|l| l.clone());
        match (&self.url, lost) {
            (_, Some(why)) => why,
            (Some(_), None) => "its connection closed".into(),
            (None, None) => "its process exited".into(),
        }
    }
}

/// Receives the upstream's notifications and requests: a
/// `notifications/tools/list_changed` wakes its supervisor, which lists the
/// tools again; a request to the client during a forwarded call goes to
/// that call's [`relay::Asker`] (found by [`relay::Relays::asker`]), which
/// decides it and asks the call's client.
#[derive(Clone)]
struct Listener {
    tools_changed: Arc<Notify>,
    relays: Arc<relay::Relays>,
}

impl Listener {
    /// Carries the upstream's `method` request to the client of the call it
    /// belongs to, and its answer back as `T`; an error for the upstream
    /// when no call can take it, when it is refused, or when the client
    /// cannot answer.
    async fn relay<T: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        params: Value,
    ) -> Result<T, rmcp::ErrorData> {
        let (asker, ended) = self.relays.asker(method).map_err(|why| {
            rmcp::ErrorData::new(
                rmcp::model::ErrorCode::INVALID_REQUEST,
                why,
                Some(serde_json::json!({"reason": "unattributed"})),
            )
        })?;
        // A call that ends (its result, its timeout, its cancellation)
        // abandons what it was asking its client.
        let answer = tokio::select! {
            a = asker.ask(method, params) => a?,
            _ = ended.cancelled() => return Err(rmcp::ErrorData::internal_error(
                format!("the forwarded call ended before its client answered `{method}`"),
                None,
            )),
        };
        serde_json::from_value(answer).map_err(|e| {
            rmcp::ErrorData::internal_error(
                format!("the client's answer to `{method}` is malformed: {e}"),
                None,
            )
        })
    }
}

#[allow(deprecated)] // roots and sampling (SEP-2577); 2025-11-25 carries them
impl ClientHandler for Listener {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }

    /// regent declares what it can relay; whether one call's client can
    /// answer is decided per request (the upstream gets an error when not).
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut caps = rmcp::model::ClientCapabilities::default();
        caps.elicitation = serde_json::from_value(serde_json::json!({"form": {}, "url": {}})).ok();
        caps.roots = Some(Default::default());
        caps.sampling = Some(Default::default());
        rmcp::model::InitializeRequestParams::new(
            caps,
            rmcp::model::Implementation::new("regent", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let params = serde_json::to_value(&request).unwrap_or_default();
        self.relay("elicitation/create", params).await
    }

    async fn list_roots(
        &self,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        self.relay("roots/list", serde_json::json!({})).await
    }

    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        let params = serde_json::to_value(&params).unwrap_or_default();
        self.relay("sampling/createMessage", params).await
    }
}

/// One declared upstream: how to start it and its current connection.
/// Replaced as a whole (and retired) when its declaration changes.
struct Slot {
    declared: Declared,
    start_timeout: Duration,
    call_timeout: Duration,
    /// The most of one result passed on (`max_output`).
    max_output: usize,
    /// Why it cannot be started at all (a duration or size that is not one).
    invalid: Option<String>,
    /// The latest connection; after the process exits it stays here (dead)
    /// until a restart replaces it, so calls fail closed meanwhile. `None`
    /// before the first connection of a declaration added or changed while
    /// serving (and after the slot is retired).
    current: RwLock<Option<Arc<Conn>>>,
    /// Why there is no connection yet, while `current` is `None`.
    not_yet: std::sync::Mutex<String>,
    tools_changed: Arc<Notify>,
    /// Set once the slot no longer serves its name: its supervisor reports
    /// nothing more.
    retired: AtomicBool,
    /// Its supervisor task, aborted when the slot is retired.
    task: std::sync::Mutex<Option<tokio::task::AbortHandle>>,
}

impl Slot {
    /// A slot for `declared`, not connected; `start_timeout` when the
    /// declaration gives none. Its settings that cannot be read (a duration
    /// that is not one, a size that is not one), by key.
    fn new(declared: Declared, start_timeout: Duration) -> (Slot, Vec<Unreadable>) {
        let (limits, bad) = declared.decl.limits();
        let start_timeout = limits.start_timeout.unwrap_or(start_timeout);
        let call_timeout = limits.timeout.unwrap_or(CALL_TIMEOUT);
        let max_output = limits
            .max_output
            .unwrap_or(crate::run_plan::cli::DEFAULT_MAX_OUTPUT);
        let invalid = (!bad.is_empty()).then(|| {
            bad.iter()
                .map(|b| format!("`{}` is not {}: `{}`", b.key, b.kind, b.text))
                .collect::<Vec<_>>()
                .join("; ")
        });
        let slot = Slot {
            declared,
            start_timeout,
            call_timeout,
            max_output,
            invalid,
            current: RwLock::new(None),
            not_yet: std::sync::Mutex::new("it is starting".into()),
            tools_changed: Arc::new(Notify::new()),
            retired: AtomicBool::new(false),
            task: Default::default(),
        };
        (slot, bad)
    }

    fn current(&self) -> Option<Arc<Conn>> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Makes `conn` the slot's connection; a retired slot's is killed
    /// instead (under the lock [`Slot::retire`] takes, so never both kept
    /// and missed).
    fn replace(&self, conn: Conn) {
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        if self.is_retired() {
            conn.kill();
            conn.client.cancellation_token().cancel();
            return;
        }
        *current = Some(Arc::new(conn));
    }

    fn not_yet(&self) -> String {
        self.not_yet
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn set_not_yet(&self, why: String) {
        *self.not_yet.lock().unwrap_or_else(|p| p.into_inner()) = why;
    }

    fn is_retired(&self) -> bool {
        self.retired.load(Ordering::SeqCst)
    }

    /// Ends the slot: its supervisor stops, and its process is killed (its
    /// HTTP session closed) even while calls still hold the connection.
    fn retire(&self) {
        self.retired.store(true, Ordering::SeqCst);
        if let Some(task) = self.task.lock().unwrap_or_else(|p| p.into_inner()).take() {
            task.abort();
        }
        let conn = self
            .current
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(conn) = conn {
            conn.kill();
            conn.client.cancellation_token().cancel();
        }
    }

    async fn connect(&self) -> Result<Conn, String> {
        if let Some(invalid) = &self.invalid {
            return Err(invalid.clone());
        }
        connect_within(
            &self.declared.decl,
            &self.declared.base_dir,
            self.tools_changed.clone(),
            self.start_timeout,
        )
        .await
    }
}

/// [`connect`] within `limit`.
async fn connect_within(
    decl: &UpstreamDecl,
    base_dir: &Path,
    tools_changed: Arc<Notify>,
    limit: Duration,
) -> Result<Conn, String> {
    let started = tokio::time::timeout(limit, connect(decl, base_dir, tools_changed)).await;
    started.unwrap_or_else(|_| {
        Err(format!(
            "it did not answer `initialize` and `tools/list` within {}",
            crate::timestamp::human_duration(limit)
        ))
    })
}

/// Every declared upstream, by name. The names change while serving, as
/// the catalog's declarations do (`supervise`).
pub struct Upstreams {
    slots: RwLock<BTreeMap<String, Arc<Slot>>>,
    /// How long an upstream has to start when its declaration does not say.
    start_timeout: Duration,
}

impl Default for Upstreams {
    fn default() -> Upstreams {
        Upstreams {
            slots: Default::default(),
            start_timeout: START_TIMEOUT,
        }
    }
}

/// Why a forwarded call did not give the upstream's result.
#[derive(Debug)]
pub struct CallError(pub String);

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Upstreams {
    /// Starts and lists every upstream `source` declares, one after another,
    /// each within its `start_timeout` (else `timeout`). Every upstream that
    /// fails is reported; serving does not start with an upstream missing.
    pub async fn start(source: &Source, timeout: Duration) -> Result<Upstreams, Diagnostics> {
        Self::start_some(source, timeout, |_| true).await
    }

    /// [`Upstreams::start`] for the upstreams whose index among
    /// `source.upstreams()` is picked; errors point at each one's own
    /// declaration in the catalog as given.
    pub async fn start_some(
        source: &Source,
        timeout: Duration,
        pick: impl Fn(usize) -> bool,
    ) -> Result<Upstreams, Diagnostics> {
        let mut diags = Diagnostics::default();
        let mut slots = BTreeMap::new();
        for (i, (f, at, decl)) in source.upstreams().enumerate() {
            if !pick(i) {
                continue;
            }
            let file = &source.tool_files[f];
            let location = file.locate(&at.key(decl.endpoint_key()));
            let declared = Declared {
                decl: decl.clone(),
                base_dir: crate::source::upstream::base_dir(&file.path),
            };
            let (slot, bad) = Slot::new(declared, timeout);
            // An upstream with a duration error is reported without being started.
            if !bad.is_empty() {
                for b in bad {
                    diags.push(b.diagnostic(file, &at, &decl.name));
                }
                continue;
            }
            match slot.connect().await {
                Ok(conn) => {
                    tracing::info!(upstream = %decl.name, tools = conn.snapshot.tools.len(), pid = ?conn.pid, url = ?conn.url, "upstream connected");
                    slot.replace(conn);
                    slots.insert(decl.name.clone(), Arc::new(slot));
                }
                Err(why) => diags.push(start_failed(decl, location, &why)),
            }
        }
        if diags.has_errors() {
            return Err(diags);
        }
        Ok(Upstreams {
            slots: RwLock::new(slots),
            start_timeout: timeout,
        })
    }

    /// What each upstream listed, by name: the data the catalog build imports.
    pub fn snapshots(&self) -> BTreeMap<String, Snapshot> {
        self.slots()
            .iter()
            .filter_map(|(n, s)| Some((n.clone(), s.current()?.snapshot.clone())))
            .collect()
    }

    fn slots(&self) -> BTreeMap<String, Arc<Slot>> {
        self.slots.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn slot(&self, name: &str) -> Option<Arc<Slot>> {
        self.slots
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned()
    }

    /// The live connection of `target`, with its `timeout` and
    /// `max_output`, looked up once for a call; or why there is none (the
    /// call must then fail closed: nothing is sent).
    pub fn connected(&self, target: &UpstreamRef) -> Result<Connected, CallError> {
        let Some(slot) = self.slot(&target.upstream) else {
            return Err(CallError(format!(
                "upstream `{}` is no longer declared in the catalog",
                target.upstream
            )));
        };
        let Some(conn) = slot.current() else {
            let name = &target.upstream;
            return Err(CallError(match (&slot.invalid, &slot.declared.decl.url) {
                (Some(invalid), _) => {
                    format!("upstream `{name}` cannot be started: {invalid}; fix its declaration")
                }
                (None, Some(url)) => format!(
                    "upstream `{name}` at {url} is not connected ({}); regent is connecting to it, try again shortly",
                    slot.not_yet()
                ),
                (None, None) => format!(
                    "upstream `{name}` is not running ({}); regent is starting it, try again shortly",
                    slot.not_yet()
                ),
            }));
        };
        if !conn.is_up() {
            return Err(CallError(match &conn.url {
                Some(url) => format!(
                    "upstream `{}` at {url} is down ({}); regent is reconnecting, try again shortly",
                    target.upstream,
                    conn.why_down()
                ),
                None => format!(
                    "upstream `{}` is down; regent is restarting it, try again shortly",
                    target.upstream
                ),
            }));
        }
        Ok(Connected {
            conn,
            limit: slot.call_timeout,
            max_output: slot.max_output,
        })
    }
}
