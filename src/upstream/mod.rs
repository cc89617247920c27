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

pub mod oversize;
pub mod relay;
pub mod supervise;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::handler::client::ClientHandler;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use serde_json::{Map, Value};
use tokio::io::AsyncBufReadExt;
use tokio::sync::{Notify, oneshot, watch};

use crate::diag::{Diagnostic, Diagnostics, Location};
use crate::run_plan::ValueFrom;
use crate::run_plan::http::Auth;
use crate::source::Source;
use crate::source::run::ValueSource;
use crate::source::upstream::{
    Declared, Endpoint, Snapshot, Unreadable, UpstreamDecl, UpstreamRef,
};

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

/// An upstream's connection as [`Upstreams::connected`] found it for one
/// call: what [`Connected::call`] sends the call on.
pub struct Connected {
    conn: Arc<Conn>,
    /// The upstream's `timeout`.
    limit: Duration,
    max_output: usize,
}

impl Connected {
    /// Forwards one call, already decided, to `target`'s upstream, and
    /// returns the upstream's result as it gave it, unless it passes the
    /// upstream's `max_output` (then cut, see [`Forwarded::capped`]).
    /// Cancelled (and the upstream told so with `notifications/cancelled`)
    /// when `cancelled` completes or after the upstream's `timeout`. What
    /// the upstream says during the call goes to `to` (see [`relay`]), all
    /// of it before the result is returned.
    pub async fn call(
        self,
        target: &UpstreamRef,
        arguments: Map<String, Value>,
        to: &RelayTo,
        cancelled: impl std::future::Future<Output = ()>,
    ) -> Result<Forwarded, CallError> {
        let Connected {
            conn,
            limit,
            max_output,
        } = self;
        let mut registration = conn.relays.open(
            to.target().progress_token.is_some(),
            to.log_level,
            to.asker.clone(),
        );
        let mut params = CallToolRequestParams::new(target.tool.clone());
        params.arguments = Some(arguments);
        // Which registration the request is: the tap reads it (and takes it
        // out) as the request is written, and puts regent's progress token
        // in place of rmcp's own.
        let mut meta = registration.mark();
        // A 2026-07-28 upstream sends log messages only when asked.
        #[allow(deprecated)]
        if let Some(level) = to.log_level {
            meta.set_log_level(level);
        }
        params.meta = Some(meta);
        // Dropping the request future sends `notifications/cancelled` upstream.
        let call = conn.client.peer().call_tool_once(params);
        tokio::pin!(call);
        tokio::pin!(cancelled);
        let deadline = tokio::time::sleep(limit);
        tokio::pin!(deadline);
        let answer = loop {
            tokio::select! {
                r = &mut call => break r,
                Some(said) = registration.rx.recv() => to.send(said).await,
                _ = &mut cancelled => return Err(CallError("the call was cancelled".into())),
                _ = &mut deadline => {
                    return Err(CallError(format!(
                        "upstream `{}` did not answer within {}; the call was cancelled upstream (raise the upstream's `timeout` if it needs longer)",
                        target.upstream,
                        crate::timestamp::human_duration(limit)
                    )));
                }
            }
        };
        // What the upstream sent before its result was queued before the
        // result arrived (`relay::Tapped`): the client gets it first.
        while let Ok(said) = registration.rx.try_recv() {
            to.send(said).await;
        }
        drop(registration);
        match answer {
            Ok(CallToolResponse::Complete(r)) => Ok(cap(r, max_output)),
            Ok(_) => Err(CallError(format!(
                "upstream `{}` asked for more input or started a task, which regent does not relay yet",
                target.upstream
            ))),
            // Too big for one message: `oversize` answered for the upstream.
            Err(rmcp::service::ServiceError::McpError(e))
                if e.data
                    .as_ref()
                    .and_then(|d| d.get(oversize::OVERSIZE_MARK))
                    .is_some() =>
            {
                let limit = e
                    .data
                    .as_ref()
                    .and_then(|d| d[oversize::OVERSIZE_MARK].as_u64());
                Ok(Forwarded {
                    result: CallToolResult::error(vec![rmcp::model::ContentBlock::text(format!(
                        "the upstream's result passed the output cap of {max_output} bytes (`max_output` of upstream `{}`): its answer was more than {} bytes, the most regent reads of one message, so regent passed none of it on",
                        target.upstream,
                        limit.unwrap_or_default()
                    ))]),
                    capped: Some(max_output),
                })
            }
            // The result did not have the shape of a `tools/call` result.
            Err(rmcp::service::ServiceError::UnexpectedResponse) => Err(CallError(format!(
                "upstream `{}` answered with a malformed result (not a `tools/call` result); regent passed none of it on",
                target.upstream
            ))),
            // The process exited (or the connection closed) with the call
            // in flight: it is not sent again.
            Err(rmcp::service::ServiceError::TransportClosed) => {
                // The waiter (or watcher) may see the exit a moment after the
                // transport did; it says why.
                let mut exited = conn.exited.clone();
                let seen =
                    tokio::time::timeout(Duration::from_millis(500), exited.wait_for(|e| *e))
                        .await
                        .is_ok_and(|r| r.is_ok());
                Err(CallError(format!(
                    "upstream `{}` went down during the call ({}); the call was not retried, and regent is {} it",
                    target.upstream,
                    if seen {
                        conn.why_down()
                    } else {
                        "its connection closed".into()
                    },
                    if conn.url.is_some() {
                        "reconnecting"
                    } else {
                        "restarting"
                    }
                )))
            }
            Err(e) => Err(CallError(format!(
                "upstream `{}`{} failed the call: {}",
                target.upstream,
                conn.url
                    .as_ref()
                    .map(|u| format!(" at {u}"))
                    .unwrap_or_default(),
                error_chain(&e)
            ))),
        }
    }
}

/// Where what an upstream says during one forwarded call goes: the
/// client's connection (or, on 2026-07-28 over HTTP, its request's
/// stream), with the client's progress token and log level.
pub struct RelayTo {
    /// The client's peer and its `_meta.progressToken` (without one no
    /// progress is relayed); a 2026-07-28 call parked between rounds
    /// (`protocol/parked`) is moved to each retry's request.
    target: std::sync::Mutex<Target>,
    /// The least severe level the client wants; `None`: no log messages.
    #[allow(deprecated)]
    pub log_level: Option<rmcp::model::LoggingLevel>,
    /// Who answers the upstream's requests during the call (see
    /// [`relay::Asker`]); `None`: each is refused.
    pub asker: Option<Arc<dyn relay::Asker>>,
}

#[derive(Clone)]
struct Target {
    peer: rmcp::service::Peer<rmcp::service::RoleServer>,
    progress_token: Option<rmcp::model::ProgressToken>,
}

impl RelayTo {
    #[allow(deprecated)]
    pub fn new(
        peer: rmcp::service::Peer<rmcp::service::RoleServer>,
        progress_token: Option<rmcp::model::ProgressToken>,
        log_level: Option<rmcp::model::LoggingLevel>,
        asker: Option<Arc<dyn relay::Asker>>,
    ) -> RelayTo {
        RelayTo {
            target: std::sync::Mutex::new(Target {
                peer,
                progress_token,
            }),
            log_level,
            asker,
        }
    }

    fn target(&self) -> Target {
        self.target
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// From now on, what the upstream says goes to `peer`, its progress
    /// under `progress_token` (a retry's request; progress is relayed only
    /// when the first request asked for it, as the upstream's token was
    /// chosen then).
    pub fn retarget(
        &self,
        peer: rmcp::service::Peer<rmcp::service::RoleServer>,
        progress_token: Option<rmcp::model::ProgressToken>,
    ) {
        let mut t = self.target.lock().unwrap_or_else(|p| p.into_inner());
        t.peer = peer;
        if progress_token.is_some() {
            t.progress_token = progress_token;
        }
    }

    /// Sends `said` to the client; a client gone is the call's business
    /// (its cancellation), not the relay's.
    async fn send(&self, said: relay::Relayed) {
        let Target {
            peer,
            progress_token,
        } = self.target();
        let sent = match said {
            relay::Relayed::Progress(mut p) => {
                let Some(token) = progress_token else {
                    return;
                };
                p.progress_token = token;
                peer.notify_progress(p).await
            }
            #[allow(deprecated)]
            relay::Relayed::Log(m) => peer.notify_logging_message(m).await,
        };
        if let Err(e) = sent {
            tracing::debug!("a relayed notification was not sent: {e}");
        }
    }
}

/// What [`Connected::call`] gives back.
#[derive(Debug)]
pub struct Forwarded {
    pub result: CallToolResult,
    /// `Some(cap)` when the upstream's result passed `max_output`: the result
    /// is then regent's, an error holding the first `cap` bytes of the
    /// upstream's text and why it was cut (as a command's capped output).
    pub capped: Option<usize>,
}

/// How much of the output cap a result takes: the bytes of its text, of its
/// images', audio's and resources' data (as sent, base64), and of its
/// structured content as JSON.
fn result_size(r: &CallToolResult) -> usize {
    use rmcp::model::ContentBlock;
    let blocks: usize = r
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => t.text.len(),
            other => serde_json::to_string(other).map_or(0, |s| s.len()),
        })
        .sum();
    let structured = r
        .structured_content
        .as_ref()
        .map_or(0, |v| serde_json::to_string(v).map_or(0, |s| s.len()));
    blocks + structured
}

/// `r` as the upstream gave it, or, when it passes `max_output`, the first
/// `max_output` bytes of its text (cut at a character boundary) and the
/// cap's message, as an error: nothing else of it is passed on.
fn cap(r: CallToolResult, max_output: usize) -> Forwarded {
    if result_size(&r) <= max_output {
        return Forwarded {
            result: r,
            capped: None,
        };
    }
    let mut kept = String::new();
    for block in &r.content {
        if let rmcp::model::ContentBlock::Text(t) = block {
            let room = max_output - kept.len();
            if t.text.len() <= room {
                kept.push_str(&t.text);
            } else {
                let mut end = room;
                while !t.text.is_char_boundary(end) {
                    end -= 1;
                }
                kept.push_str(&t.text[..end]);
                break;
            }
        }
    }
    let mut content = Vec::new();
    if !kept.is_empty() {
        content.push(rmcp::model::ContentBlock::text(kept));
    }
    content.push(rmcp::model::ContentBlock::text(format!(
        "{}; the upstream's result was cut to its text",
        crate::exec::Status::OutputCapped(max_output).describe()
    )));
    Forwarded {
        result: CallToolResult::error(content),
        capped: Some(max_output),
    }
}

fn start_failed(decl: &UpstreamDecl, location: Location, why: &str) -> Diagnostic {
    match decl.endpoint() {
        Some(Endpoint::Url(url)) => Diagnostic::error(
            "upstream-start",
            location,
            format!("upstream `{}` at {url} could not be reached: {why}", decl.name),
        )
        .with_help("check `url` and `auth`: the server must be running and serve MCP's streamable http transport at that url"),
        _ => Diagnostic::error(
            "upstream-start",
            location,
            format!("upstream `{}` could not be started: {why}", decl.name),
        )
        .with_help("check `command`, `args` and `env`; run the command by hand to see whether it speaks MCP on stdio"),
    }
}

/// Connects to the upstream as its declaration says, and lists its tools.
async fn connect(
    decl: &UpstreamDecl,
    base_dir: &Path,
    tools_changed: Arc<Notify>,
) -> Result<Conn, String> {
    match decl.endpoint() {
        Some(Endpoint::Command(command)) => {
            connect_child(decl, command, base_dir, tools_changed).await
        }
        Some(Endpoint::Url(url)) => connect_http(decl, url, base_dir, tools_changed).await,
        // The catalog does not load with such a declaration
        // (`source::upstream::check_endpoints`); never guess which was meant.
        None => Err("give exactly one of `command` or `url`".into()),
    }
}

/// Starts the child, connects, and lists its tools. The child is owned by a
/// waiter task that reports its exit (and kills it when asked, or when the
/// runtime ends).
async fn connect_child(
    decl: &UpstreamDecl,
    command: &str,
    base_dir: &Path,
    tools_changed: Arc<Notify>,
) -> Result<Conn, String> {
    let program = program(command, base_dir)?;
    let mut cmd = tokio::process::Command::new(&program);
    cmd.args(&decl.args)
        .current_dir(base_dir)
        .env_clear()
        .envs(environment(decl, base_dir)?)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| {
        format!(
            "cannot run {}: {}",
            program.display(),
            crate::source::files::lower_io(&e)
        )
    })?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err("the child's standard streams are not pipes".into());
    };
    // The upstream's standard error goes to regent's log, never to regent's
    // own standard error (where the decision log may be written).
    // The last lines are kept to explain a failed start.
    let name = decl.name.clone();
    let tail = std::sync::Arc::new(std::sync::Mutex::new(std::collections::VecDeque::new()));
    let kept = tail.clone();
    let drained = tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(upstream = %name, "{line}");
            if let Ok(mut t) = kept.lock() {
                if t.len() == STDERR_TAIL_LINES {
                    t.pop_front();
                }
                t.push_back(line);
            }
        }
    });
    let failed = |what: String| {
        let tail = tail.clone();
        async move {
            // What the child wrote before it went away, if it did.
            let _ = tokio::time::timeout(Duration::from_millis(500), drained).await;
            let lines: Vec<String> = tail
                .lock()
                .map(|t| t.iter().cloned().collect())
                .unwrap_or_default();
            if lines.is_empty() {
                what
            } else {
                format!(
                    "{what}; its standard error ends with:\n{}",
                    lines.join("\n")
                )
            }
        }
    };
    let pid = child.id();
    let (exited_tx, exited) = watch::channel(false);
    let (kill, kill_rx) = oneshot::channel::<()>();
    let upstream = decl.name.clone();
    tokio::spawn(async move {
        let status = tokio::select! {
            s = child.wait() => s,
            _ = kill_rx => {
                let _ = child.start_kill();
                child.wait().await
            }
        };
        match status {
            Ok(s) => tracing::debug!(upstream = %upstream, "upstream process exited: {s}"),
            Err(e) => {
                tracing::debug!(upstream = %upstream, "cannot wait for the upstream process: {e}")
            }
        }
        let _ = exited_tx.send(true);
    });
    // Whatever fails below, the child does not outlive the attempt.
    let kill = std::sync::Mutex::new(Some(kill));
    let give_up = |kill: &std::sync::Mutex<Option<oneshot::Sender<()>>>| {
        if let Some(k) = kill.lock().ok().and_then(|mut k| k.take()) {
            let _ = k.send(());
        }
    };
    let relays = relay::Relays::new(&decl.name);
    // A line rmcp's transport would drop (its id lost, the call waiting out
    // its timeout) is answered at once instead (see `oversize`).
    let limit = oversize::line_limit(
        decl.limits()
            .0
            .max_output
            .unwrap_or(crate::run_plan::cli::DEFAULT_MAX_OUTPUT),
    );
    let transport = tapped(
        rmcp::transport::async_rw::AsyncRwTransport::new_client(
            oversize::Oversize::new(stdout, limit),
            stdin,
        )
        .with_max_line_length(limit),
        relays.clone(),
    );
    let listener = Listener {
        tools_changed,
        relays: relays.clone(),
    };
    let client = match listener.serve(transport).await {
        Ok(c) => c,
        Err(e) => {
            give_up(&kill);
            return Err(failed(format!(
                "the mcp handshake failed: {}",
                lower(&e.to_string())
            ))
            .await);
        }
    };
    let tools = match client.peer().list_all_tools().await {
        Ok(t) => t,
        Err(e) => {
            give_up(&kill);
            return Err(failed(format!("`tools/list` failed: {}", lower(&e.to_string()))).await);
        }
    };
    let snapshot = snapshot_of(&tools).inspect_err(|_| give_up(&kill))?;
    Ok(Conn {
        client,
        snapshot,
        relays,
        exited,
        kill,
        pid,
        url: None,
        lost: Default::default(),
        started: Instant::now(),
    })
}

/// Opens an MCP session with a `url:` upstream over Streamable HTTP and
/// lists its tools. A watcher task then pings it every [`PING_INTERVAL`]
/// and reports the connection lost when a ping fails, the transport closes,
/// or it is asked to give up; the session ends when the connection is dropped.
async fn connect_http(
    decl: &UpstreamDecl,
    url: &str,
    base_dir: &Path,
    tools_changed: Arc<Notify>,
) -> Result<Conn, String> {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    // As over stdio: at least 16 MiB of one event, twice `max_output` when
    // that is more (a JSON body stays within rmcp's fixed 16 MiB).
    config.max_sse_event_size = oversize::line_limit(
        decl.limits()
            .0
            .max_output
            .unwrap_or(crate::run_plan::cli::DEFAULT_MAX_OUTPUT),
    );
    match credentials(decl, base_dir)? {
        None => {}
        Some(Credentials::Bearer(token)) => config = config.auth_header(token),
        Some(Credentials::Header(name, value)) => {
            config = config.custom_headers([(name, value)].into_iter().collect());
        }
    }
    crate::outbound::install_crypto();
    // As `run.http`: no system proxy, and no redirects (the declared url is
    // the endpoint; a redirect would send the token elsewhere). No idle
    // pool, as rmcp's own client: a reused half-read connection stalls.
    let http = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(0)
        .user_agent(concat!("regent/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot set up the http client: {}", error_chain(&e)))?;
    let relays = relay::Relays::new(&decl.name);
    // An answer too big for one message is answered at once (`oversize`).
    let transport = tapped(
        StreamableHttpClientTransport::with_client(oversize::Http(http), config),
        relays.clone(),
    );
    let listener = Listener {
        tools_changed,
        relays: relays.clone(),
    };
    let client = listener
        .serve(transport)
        .await
        .map_err(|e| format!("the mcp handshake failed: {}", error_chain(&e)))?;
    let tools = client
        .peer()
        .list_all_tools()
        .await
        .map_err(|e| format!("`tools/list` failed: {}", error_chain(&e)))?;
    let snapshot = snapshot_of(&tools)?;
    let (exited_tx, exited) = watch::channel(false);
    let (kill, mut kill_rx) = oneshot::channel::<()>();
    let lost: Arc<std::sync::Mutex<Option<String>>> = Default::default();
    let peer = client.peer().clone();
    let (upstream, noted) = (decl.name.clone(), lost.clone());
    tokio::spawn(async move {
        let why = loop {
            tokio::select! {
                // Asked by the supervisor, which saw the transport close.
                _ = &mut kill_rx => break "its connection closed".to_string(),
                _ = tokio::time::sleep(PING_INTERVAL) => {}
            }
            let ping = rmcp::model::ClientRequest::PingRequest(rmcp::model::PingRequest {
                method: Default::default(),
                extensions: Default::default(),
            });
            match tokio::time::timeout(PING_TIMEOUT, peer.send_request(ping)).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => break format!("a ping failed: {}", error_chain(&e)),
                Err(_) => {
                    break format!(
                        "a ping had no answer within {}",
                        crate::timestamp::human_duration(PING_TIMEOUT)
                    );
                }
            }
        };
        tracing::debug!(upstream = %upstream, "upstream connection lost: {why}");
        if let Ok(mut l) = noted.lock() {
            *l = Some(why);
        }
        let _ = exited_tx.send(true);
    });
    Ok(Conn {
        client,
        snapshot,
        relays,
        exited,
        kill: std::sync::Mutex::new(Some(kill)),
        pid: None,
        url: Some(url.to_string()),
        lost,
        started: Instant::now(),
    })
}

/// `transport` with the upstream's progress and log notifications taken
/// off it for `relays` as they are read.
fn tapped<T, E, A>(
    transport: T,
    relays: Arc<relay::Relays>,
) -> relay::Tapped<impl rmcp::transport::Transport<RoleClient, Error = E>>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    relay::Tapped {
        inner: transport.into_transport(),
        relays,
    }
}

/// What a `url:` upstream's `auth` sends: a bearer token (rmcp's own
/// `Authorization: Bearer`), or a header (`basic`'s `Authorization: Basic`,
/// or `header`'s own), its value marked sensitive.
enum Credentials {
    Bearer(String),
    Header(reqwest::header::HeaderName, reqwest::header::HeaderValue),
}

/// The credentials of a `url:` upstream, read now from regent's environment
/// or files (relative to the tool file), if it declares `auth`: the
/// declaration is checked as `run.http.auth` ([`crate::source::run::AuthDecl::compile`], which
/// `check_endpoints` already ran when the catalog loaded) and each secret
/// read as a call reads it ([`ValueFrom::read`]). A missing optional secret
/// sends nothing.
fn credentials(decl: &UpstreamDecl, base_dir: &Path) -> Result<Option<Credentials>, String> {
    use base64::Engine;
    use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};

    let Some(auth) = &decl.auth else {
        return Ok(None);
    };
    // A declaration that does not load never gets here; never connect
    // without the credentials it asked for.
    let auth = auth
        .compile(&crate::source::YamlPath::root(), base_dir)
        .map_err(|problems| {
            let p = &problems[0];
            format!("`auth` {} ({})", p.message, p.help)
        })?;
    let read = |from: &ValueFrom, what: &str| {
        from.read().map_err(|why| {
            format!("cannot read {what} of `auth`: {why} (set it, or add `optional: true` to connect without it)")
        })
    };
    let header = |name: HeaderName, value: String, what: &str| {
        let mut v = HeaderValue::from_str(&value)
            .map_err(|_| format!("{what} of `auth` is not a valid header value"))?;
        v.set_sensitive(true);
        Ok::<_, String>(Credentials::Header(name, v))
    };
    Ok(match auth {
        Auth::Bearer(t) => read(&t, "the bearer token")?.map(Credentials::Bearer),
        Auth::Basic { username, password } => {
            match (
                read(&username, "the user name")?,
                read(&password, "the password")?,
            ) {
                (Some(u), Some(p)) => {
                    let encoded =
                        base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
                    Some(header(
                        AUTHORIZATION,
                        format!("Basic {encoded}"),
                        "`basic`",
                    )?)
                }
                _ => None,
            }
        }
        Auth::Header { name, value } => match read(&value, &format!("header `{name}`"))? {
            Some(v) => {
                let name = HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| format!("`{name}` is not a valid header name"))?;
                Some(header(name, v, "`header.value`")?)
            }
            None => None,
        },
    })
}

/// An error and its sources, lowercase, so that an HTTP upstream's error
/// names the underlying cause (connection refused, a refused token, ...)
/// rather than rmcp's transport type.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    use rmcp::service::{ClientInitializeError, ServiceError};
    use rmcp::transport::DynamicTransportError;
    use rmcp::transport::streamable_http_client::StreamableHttpError;

    // rmcp keeps the transport's own error in a field, not as a source.
    if let Some(ClientInitializeError::TransportError { error, .. }) = e.downcast_ref() {
        return error_chain(error);
    }
    if let Some(ServiceError::TransportSend(error)) = e.downcast_ref() {
        return error_chain(error);
    }
    if let Some(d) = e.downcast_ref::<DynamicTransportError>() {
        return error_chain(d.error.as_ref());
    }
    match e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        Some(StreamableHttpError::AuthRequired(_)) => {
            return "the server answered 401 unauthorized: it wants credentials that `auth` does not give or that it does not accept".into();
        }
        Some(StreamableHttpError::InsufficientScope(_)) => {
            return "the server answered 403 forbidden: the token lacks a scope it requires".into();
        }
        // The HTTP client's error, whose sources say why (connection refused, ...).
        Some(StreamableHttpError::Client(c)) => return error_chain(c),
        _ => {}
    }
    crate::outbound::error_chain_with(e, lower)
}

/// rmcp's tools as a [`Snapshot`]: through their JSON, as the upstream sent them.
pub fn snapshot_of(tools: &[rmcp::model::Tool]) -> Result<Snapshot, String> {
    let value = serde_json::json!({ "tools": tools });
    serde_json::from_value(value).map_err(|e| format!("the upstream's tool list is malformed: {e}"))
}

/// The program to run: absolute, relative to the tool file, or from `PATH`.
fn program(command: &str, base_dir: &Path) -> Result<PathBuf, String> {
    if command.contains('/') {
        return Ok(base_dir.join(command));
    }
    crate::run_plan::cli::find_in_path(command)
        .ok_or_else(|| format!("`{command}` is not found in regent's PATH"))
}

/// The child's environment: the allow-list (`env.inherit`, else the same
/// default as commands get) and `env.set`.
fn environment(decl: &UpstreamDecl, base_dir: &Path) -> Result<Vec<(String, String)>, String> {
    let inherit: Vec<String> = match decl.env.as_ref().and_then(|e| e.inherit.clone()) {
        Some(list) => list,
        None => crate::run_plan::cli::DEFAULT_INHERIT
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    let mut env: Vec<(String, String)> = inherit
        .iter()
        .filter_map(|n| std::env::var(n).ok().map(|v| (n.clone(), v)))
        .collect();
    for (name, value) in decl.env.iter().flat_map(|e| &e.set) {
        let v = match value {
            ValueSource::Literal(s) => Some(s.clone()),
            ValueSource::External(e) => {
                let read = match (&e.env, &e.file) {
                    (Some(var), None) => std::env::var(var).ok(),
                    (None, Some(file)) => std::fs::read_to_string(base_dir.join(file))
                        .ok()
                        .map(|s| s.trim_end_matches('\n').to_string()),
                    _ => {
                        return Err(format!(
                            "env.set.{name}: give exactly one of `env` or `file`"
                        ));
                    }
                };
                match (read, &e.default) {
                    (Some(v), _) => Some(v),
                    (None, Some(d)) => Some(d.clone()),
                    (None, None) if e.optional => None,
                    (None, None) => {
                        return Err(format!(
                            "env.set.{name}: the variable or file it names is missing (add `optional: true` to go on without it)"
                        ));
                    }
                }
            }
        };
        if let Some(v) = v {
            env.retain(|(k, _)| k != name);
            env.push((name.clone(), v));
        }
    }
    Ok(env)
}

fn lower(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().collect::<String>() + chars.as_str(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ContentBlock;

    fn texts(r: &CallToolResult) -> Vec<String> {
        r.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_result_within_the_cap_is_passed_on_unchanged() {
        let mut r = CallToolResult::success(vec![ContentBlock::text("abc")]);
        r.structured_content = Some(serde_json::json!({"n": 1}));
        let before = serde_json::to_value(&r).unwrap();
        let f = cap(r, 3 + r#"{"n":1}"#.len());
        assert_eq!(f.capped, None);
        assert_eq!(serde_json::to_value(&f.result).unwrap(), before);
    }

    #[test]
    fn a_capped_result_keeps_the_first_text_cut_at_a_character() {
        // 2 + 2 bytes of text, then a 2-byte character across the cap.
        let r = CallToolResult::success(vec![
            ContentBlock::text("ab"),
            ContentBlock::image("AAAA", "image/png"),
            ContentBlock::text("cdé!"),
        ]);
        let f = cap(r, 5);
        assert_eq!(f.capped, Some(5));
        assert_eq!(f.result.is_error, Some(true));
        assert_eq!(f.result.structured_content, None);
        let t = texts(&f.result);
        assert_eq!(t[0], "abcd");
        assert!(
            t[1].starts_with("the output passed the cap of 5 bytes"),
            "{t:?}"
        );
        assert_eq!(f.result.content.len(), 2);
    }

    #[test]
    fn data_and_structured_content_count_toward_the_cap() {
        let r = CallToolResult::success(vec![ContentBlock::image("A".repeat(100), "image/png")]);
        let f = cap(r, 50);
        assert_eq!(f.capped, Some(50));
        // No text to keep: only why.
        assert_eq!(texts(&f.result).len(), 1);
        let mut r = CallToolResult::success(vec![]);
        r.structured_content = Some(serde_json::json!({"big": "x".repeat(100)}));
        assert_eq!(cap(r, 50).capped, Some(50));
    }
}
