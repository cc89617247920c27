//! Relaying what an upstream says during a forwarded call: its
//! `notifications/progress` and `notifications/message`, to the client
//! whose call it is.
//!
//! One upstream connection carries the calls of every client, so nothing is
//! broadcast. Each forwarded call is registered here for as long as it runs
//! ([`Relays::open`], dropped with its [`Registration`]); a call whose
//! client asked for progress is sent upstream with a progress token of
//! regent's own, unique across every connection, and the upstream's
//! progress for that token goes to that call alone, mapped back to the
//! client's token by the caller ([`super::Connected::call`]). Progress for
//! a token no running call owns (the call ended, or it never was regent's)
//! is dropped.
//!
//! A log message names no request. It goes to a forwarded call only when
//! that call has had the connection to itself since it started: no other
//! call was in flight at any moment of it (so a message an upstream sends
//! late for a call that overlapped another never reaches the other's
//! client). Otherwise it cannot be attributed, and it is written to
//! regent's own log (`tracing`, with the upstream's name) instead of to any
//! client. The call it goes to relays it only at or above the level its
//! client asked for.
//!
//! Both are taken off the transport as it reads them ([`Tapped`]), before
//! rmcp's service loop (which handles notifications on tasks of their own,
//! in no set order): what the upstream sent before its result is queued for
//! the call before the result can reach it, in the order it was sent.
//!
//! rmcp's client gives every request a progress token of its own; the tap
//! replaces it on the way out ([`Relays::outgoing`]): regent's token when
//! the client asked for progress, none otherwise (so an upstream has no
//! token to report progress on that nobody asked for). It finds which call
//! a request is by a mark in its `_meta` ([`Registration::mark`]), which it
//! takes out: the upstream never sees it.
//!
//! Bounds, per forwarded call: at most [`MAX_PER_CALL`] of each kind,
//! [`BUFFER`] waiting to be written to the client (more are dropped while
//! the client is slow), a log message's `data` at most [`MAX_LOG_BYTES`] as
//! JSON (a larger one is replaced by a note saying so) and a progress
//! message at most [`MAX_PROGRESS_MESSAGE`] bytes (cut at a character).
//! What is dropped is counted in the debug log.
//!
//! The upstream's requests to the client during a call
//! (`elicitation/create`, `roots/list`, `sampling/createMessage`) reach
//! regent's client handler (`super::Listener`), which asks [`Relays::asker`]
//! whose they are: a request names no call either (rmcp 3.9's client gets
//! no related request id from either transport), so it is attributed as a
//! log message is, to the call in flight that has had the connection to
//! itself, and refused with an error to the upstream otherwise. The call's
//! [`Asker`], given by `protocol`, decides it (policy, decision log, the
//! client's capability) and carries it to the client.

#![allow(deprecated)] // logging is deprecated (SEP-2577); both eras still carry it

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, JsonRpcNotification, JsonRpcRequest, LoggingLevel,
    LoggingMessageNotificationParam, NumberOrString, ProgressNotificationParam, ProgressToken,
    RequestMetaObject, ServerJsonRpcMessage, ServerNotification,
};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;

/// The most progress notifications, and the most log messages, one
/// forwarded call relays.
pub const MAX_PER_CALL: usize = 1000;
/// How many relayed notifications may wait for the client per call.
pub const BUFFER: usize = 64;
/// The largest log message `data` relayed, as JSON bytes.
pub const MAX_LOG_BYTES: usize = 16 * 1024;
/// The longest progress `message` relayed, in bytes.
pub const MAX_PROGRESS_MESSAGE: usize = 1024;

/// The `_meta` key that marks a forwarded call's request with its
/// registration, between [`Registration::mark`] and the tap.
const MARK: &str = "regent/relay";

/// Tokens regent sends upstream: unique across connections and restarts.
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

/// Answers an upstream's request made during one forwarded call, on behalf
/// of the call's client: `protocol` decides it by policy, logs the
/// decision, and sends it to the client when allowed. `method` and `params`
/// are the request as the upstream sent it; the answer is the client's
/// result as JSON, or the error the upstream gets.
pub trait Asker: Send + Sync {
    fn ask(
        &self,
        method: &'static str,
        params: serde_json::Value,
    ) -> std::pin::Pin<
        Box<dyn Future<Output = Result<serde_json::Value, rmcp::ErrorData>> + Send + '_>,
    >;
}

/// Something an upstream said during a call, for its client.
#[derive(Debug)]
pub enum Relayed {
    /// Progress, with regent's upstream token still in it.
    Progress(ProgressNotificationParam),
    Log(LoggingMessageNotificationParam),
}

/// Where one running call's notifications go.
struct Sink {
    tx: mpsc::Sender<Relayed>,
    /// Whether its client asked for progress.
    token: Option<String>,
    /// The least severe log level its client wants; `None`: no log messages.
    level: Option<LoggingLevel>,
    /// Whether no other call has been in flight on the connection since it
    /// started: only then are log messages attributed to it.
    alone: bool,
    /// Who answers the upstream's requests during the call; `None`: they
    /// are refused.
    asker: Option<Arc<dyn Asker>>,
    /// Cancelled when the call ends: a request of the upstream still
    /// waiting for the client is then abandoned.
    ended: tokio_util::sync::CancellationToken,
    progress: usize,
    logs: usize,
    dropped: usize,
}

#[derive(Default)]
struct Calls {
    next: u64,
    sinks: HashMap<u64, Sink>,
    by_token: HashMap<String, u64>,
}

/// The forwarded calls running on one upstream connection, and where what
/// the upstream says for each goes.
pub struct Relays {
    upstream: String,
    calls: Mutex<Calls>,
}

/// One call's place in [`Relays`]; the call is forgotten when it is dropped,
/// so progress that comes after the call ended is dropped.
pub struct Registration {
    relays: Arc<Relays>,
    id: u64,
    /// The token regent sends upstream, when the client asked for progress.
    pub token: Option<ProgressToken>,
    pub rx: mpsc::Receiver<Relayed>,
}

impl Registration {
    /// The request `_meta` that tells the tap which call this is.
    pub fn mark(&self) -> RequestMetaObject {
        let mut meta = RequestMetaObject::new();
        meta.0.0.insert(MARK.into(), self.id.into());
        meta
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut calls = self.relays.lock();
        if let Some(sink) = calls.sinks.remove(&self.id) {
            sink.ended.cancel();
            if let Some(t) = &sink.token {
                calls.by_token.remove(t);
            }
            if sink.dropped > 0 {
                tracing::debug!(upstream = %self.relays.upstream, dropped = sink.dropped, "notifications of a forwarded call were not relayed (over a bound)");
            }
        }
    }
}

/// How severe a level is, least first (RFC 5424's order).
pub fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

impl Relays {
    pub fn new(upstream: &str) -> Arc<Relays> {
        Arc::new(Relays {
            upstream: upstream.to_string(),
            calls: Mutex::new(Calls::default()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Calls> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a call about to be sent: with a token of regent's own when
    /// its client wants `progress`, and its client's log `level`.
    pub fn open(
        self: &Arc<Self>,
        progress: bool,
        level: Option<LoggingLevel>,
        asker: Option<Arc<dyn Asker>>,
    ) -> Registration {
        let (tx, rx) = mpsc::channel(BUFFER);
        let token =
            progress.then(|| format!("regent-{}", NEXT_TOKEN.fetch_add(1, Ordering::Relaxed)));
        let mut calls = self.lock();
        calls.next += 1;
        let id = calls.next;
        if let Some(t) = &token {
            calls.by_token.insert(t.clone(), id);
        }
        // The calls in flight now share the connection with this one, for
        // the rest of their lives.
        let alone = calls.sinks.is_empty();
        for other in calls.sinks.values_mut() {
            other.alone = false;
        }
        calls.sinks.insert(
            id,
            Sink {
                tx,
                token: token.clone(),
                level,
                alone,
                asker,
                ended: Default::default(),
                progress: 0,
                logs: 0,
                dropped: 0,
            },
        );
        drop(calls);
        Registration {
            relays: self.clone(),
            id,
            token: token.map(|t| ProgressToken(NumberOrString::String(t.into()))),
            rx,
        }
    }

    /// Who answers an upstream's request `method` now: the asker of the call
    /// in flight that has had the connection to itself (as for a log
    /// message); else why none can, for the upstream's error.
    /// With it, the token cancelled when that call ends.
    pub fn asker(
        &self,
        method: &str,
    ) -> Result<(Arc<dyn Asker>, tokio_util::sync::CancellationToken), String> {
        let calls = self.lock();
        let only = (calls.sinks.len() == 1)
            .then(|| calls.sinks.values().next())
            .flatten();
        match only {
            None if calls.sinks.is_empty() => Err(format!(
                "regent got `{method}` while no forwarded call was running on this connection: there is no client to ask"
            )),
            Some(sink) if sink.alone => match &sink.asker {
                Some(a) => Ok((a.clone(), sink.ended.clone())),
                None => Err(format!("regent cannot relay `{method}` for this call")),
            },
            _ => Err(format!(
                "regent cannot relay `{method}`: several calls were in flight on this connection, and the request does not say whose it is (regent relays an upstream's requests only for a call that has the connection to itself)"
            )),
        }
    }

    /// Takes the upstream's progress: to the call that owns its token.
    fn progress(&self, mut p: ProgressNotificationParam) {
        let ProgressToken(NumberOrString::String(token)) = &p.progress_token else {
            tracing::debug!(upstream = %self.upstream, "progress for a token regent never sent, dropped");
            return;
        };
        let mut calls = self.lock();
        let Some(id) = calls.by_token.get(token.as_ref()).copied() else {
            tracing::debug!(upstream = %self.upstream, "progress for no running call, dropped");
            return;
        };
        let Some(sink) = calls.sinks.get_mut(&id) else {
            return;
        };
        if sink.progress >= MAX_PER_CALL {
            sink.dropped += 1;
            return;
        }
        if let Some(m) = &mut p.message
            && m.len() > MAX_PROGRESS_MESSAGE
        {
            let mut end = MAX_PROGRESS_MESSAGE;
            while !m.is_char_boundary(end) {
                end -= 1;
            }
            m.truncate(end);
        }
        sink.progress += 1;
        if sink.tx.try_send(Relayed::Progress(p)).is_err() {
            sink.dropped += 1;
        }
    }

    /// Takes the upstream's log message: to the call in flight that has had
    /// the connection to itself, at its client's level; to regent's log when
    /// it belongs to no one call.
    fn log(&self, mut m: LoggingMessageNotificationParam) {
        let mut calls = self.lock();
        let only = (calls.sinks.len() == 1)
            .then(|| calls.sinks.values_mut().next())
            .flatten()
            .filter(|s| s.alone);
        let Some(sink) = only else {
            let data = m.data.to_string();
            tracing::info!(upstream = %self.upstream, level = ?m.level, logger = ?m.logger, "upstream log message (not tied to one call): {data}");
            return;
        };
        let Some(level) = sink.level else {
            return;
        };
        if severity(m.level) < severity(level) {
            return;
        }
        if sink.logs >= MAX_PER_CALL {
            sink.dropped += 1;
            return;
        }
        let size = serde_json::to_string(&m.data).map_or(0, |s| s.len());
        if size > MAX_LOG_BYTES {
            m.data = serde_json::Value::String(format!(
                "regent left out this log message of {size} bytes: relayed messages are at most {MAX_LOG_BYTES} bytes"
            ));
        }
        if m.logger.is_none() {
            m.logger = Some(self.upstream.clone());
        }
        sink.logs += 1;
        if sink.tx.try_send(Relayed::Log(m)).is_err() {
            sink.dropped += 1;
        }
    }

    /// Puts regent's progress token (or none) in place of rmcp's in a
    /// forwarded call's request, and takes its mark out.
    fn outgoing(&self, message: &mut TxJsonRpcMessage<RoleClient>) {
        let ClientJsonRpcMessage::Request(JsonRpcRequest {
            request: ClientRequest::CallToolRequest(call),
            ..
        }) = message
        else {
            return;
        };
        let Some(id) = call
            .params
            .meta
            .as_mut()
            .and_then(|m| m.0.0.remove(MARK))
            .and_then(|v| v.as_u64())
        else {
            return;
        };
        let token = self.lock().sinks.get(&id).and_then(|s| s.token.clone());
        // rmcp keeps its own token in the request's extensions, whose
        // `_meta` wins over the params' when the request is written.
        let params = call.params.meta.get_or_insert_default();
        let own = call.extensions.get_or_insert_default::<RequestMetaObject>();
        for meta in [params, own] {
            match &token {
                Some(t) => {
                    meta.set_progress_token(ProgressToken(NumberOrString::String(t.clone().into())))
                }
                None => {
                    meta.0.0.remove("progressToken");
                }
            }
        }
    }

    /// Takes `message` if it is one this module relays; gives it back
    /// otherwise, for rmcp.
    fn take(&self, message: RxJsonRpcMessage<RoleClient>) -> Option<RxJsonRpcMessage<RoleClient>> {
        match message {
            ServerJsonRpcMessage::Notification(JsonRpcNotification {
                notification: ServerNotification::ProgressNotification(n),
                ..
            }) => {
                self.progress(n.params);
                None
            }
            ServerJsonRpcMessage::Notification(JsonRpcNotification {
                notification: ServerNotification::LoggingMessageNotification(n),
                ..
            }) => {
                self.log(n.params);
                None
            }
            other => Some(other),
        }
    }
}

/// An upstream transport whose progress and log notifications go to
/// [`Relays`] as they are read, in order; everything else reaches rmcp.
pub struct Tapped<T> {
    pub inner: T,
    pub relays: Arc<Relays>,
}

impl<T> Transport<RoleClient> for Tapped<T>
where
    T: Transport<RoleClient>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        mut item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.relays.outgoing(&mut item);
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let message = self.inner.receive().await?;
            if let Some(m) = self.relays.take(message) {
                return Some(m);
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(token: &ProgressToken, n: f64) -> ProgressNotificationParam {
        ProgressNotificationParam::new(token.clone(), n)
    }

    #[test]
    fn progress_goes_to_the_call_that_owns_the_token_and_stops_with_it() {
        let relays = Relays::new("u");
        let mut a = relays.open(true, None, None);
        let mut b = relays.open(true, None, None);
        let (ta, tb) = (a.token.clone().unwrap(), b.token.clone().unwrap());
        assert_ne!(ta, tb);
        relays.progress(progress(&ta, 1.0));
        relays.progress(progress(&tb, 2.0));
        relays.progress(progress(&ta, 3.0));
        let got = |r: &mut Registration| {
            let mut v = Vec::new();
            while let Ok(Relayed::Progress(p)) = r.rx.try_recv() {
                v.push(p.progress);
            }
            v
        };
        assert_eq!(got(&mut a), [1.0, 3.0]);
        assert_eq!(got(&mut b), [2.0]);
        drop(a);
        // Nobody owns it any more: dropped, nothing panics.
        relays.progress(progress(&ta, 4.0));
        assert_eq!(got(&mut b), Vec::<f64>::new());
    }

    #[test]
    fn a_log_message_goes_only_to_a_call_that_had_the_connection_to_itself_at_its_level() {
        let relays = Relays::new("u");
        let log = |level| LoggingMessageNotificationParam::new(level, serde_json::json!("m"));
        let mut a = relays.open(false, Some(LoggingLevel::Warning), None);
        relays.log(log(LoggingLevel::Info));
        relays.log(log(LoggingLevel::Error));
        let mut levels = Vec::new();
        while let Ok(Relayed::Log(m)) = a.rx.try_recv() {
            assert_eq!(m.logger.as_deref(), Some("u"));
            levels.push(m.level);
        }
        assert_eq!(levels, [LoggingLevel::Error]);
        let mut b = relays.open(false, Some(LoggingLevel::Debug), None);
        // Two in flight: attributed to neither.
        relays.log(log(LoggingLevel::Error));
        assert!(b.rx.try_recv().is_err());
        drop(b);
        // `a` alone again, but it shared the connection: a message now may
        // be `b`'s, late.
        relays.log(log(LoggingLevel::Error));
        assert!(a.rx.try_recv().is_err());
        let mut c = relays.open(false, Some(LoggingLevel::Debug), None);
        drop(a);
        // `c` started while `a` was in flight: never alone.
        relays.log(log(LoggingLevel::Error));
        assert!(c.rx.try_recv().is_err());
        drop(c);
        let mut d = relays.open(false, Some(LoggingLevel::Debug), None);
        relays.log(log(LoggingLevel::Debug));
        assert!(matches!(d.rx.try_recv(), Ok(Relayed::Log(_))));
    }

    struct Nobody;
    impl Asker for Nobody {
        fn ask(
            &self,
            _method: &'static str,
            _params: serde_json::Value,
        ) -> std::pin::Pin<
            Box<dyn Future<Output = Result<serde_json::Value, rmcp::ErrorData>> + Send + '_>,
        > {
            Box::pin(async { Ok(serde_json::json!({})) })
        }
    }

    #[test]
    fn a_request_goes_only_to_a_call_that_had_the_connection_to_itself() {
        let relays = Relays::new("u");
        let asker = || Some(Arc::new(Nobody) as Arc<dyn Asker>);
        let why = relays.asker("roots/list").err().unwrap();
        assert!(why.contains("no forwarded call was running"), "{why}");
        let a = relays.open(false, None, asker());
        let (_, ended) = relays.asker("roots/list").unwrap();
        assert!(!ended.is_cancelled());
        let b = relays.open(false, None, asker());
        let why = relays.asker("roots/list").err().unwrap();
        assert!(why.contains("several calls were in flight"), "{why}");
        drop(b);
        // `a` shared the connection: a request now may be `b`'s, late.
        assert!(relays.asker("roots/list").is_err());
        drop(a);
        assert!(ended.is_cancelled(), "the call ended");
        let _c = relays.open(false, None, None);
        let why = relays.asker("roots/list").err().unwrap();
        assert!(why.contains("cannot relay"), "{why}");
    }

    #[test]
    fn relayed_notifications_are_bounded() {
        let relays = Relays::new("u");
        let mut a = relays.open(true, Some(LoggingLevel::Debug), None);
        let t = a.token.clone().unwrap();
        for i in 0..(BUFFER + 10) {
            relays.progress(progress(&t, i as f64));
        }
        let mut n = 0;
        while a.rx.try_recv().is_ok() {
            n += 1;
        }
        assert_eq!(n, BUFFER);
        let mut p = progress(&t, 1.0);
        p.message = Some("é".repeat(MAX_PROGRESS_MESSAGE));
        relays.progress(p);
        let big = serde_json::json!("x".repeat(MAX_LOG_BYTES + 1));
        relays.log(LoggingMessageNotificationParam::new(
            LoggingLevel::Info,
            big,
        ));
        match a.rx.try_recv() {
            Ok(Relayed::Progress(p)) => {
                assert!(p.message.unwrap().len() <= MAX_PROGRESS_MESSAGE)
            }
            other => panic!("{other:?}"),
        }
        match a.rx.try_recv() {
            Ok(Relayed::Log(m)) => assert!(m.data.as_str().unwrap().starts_with("regent left out")),
            other => panic!("{other:?}"),
        }
    }
}
