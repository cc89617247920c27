//! Newline-delimited JSON-RPC over a byte stream (stdio), with the two things
//! rmcp's own stream transport does not do for us:
//!
//! - a line that is not JSON is answered with a JSON-RPC parse error (-32700)
//!   instead of being dropped, and the connection keeps serving;
//! - outgoing results whose rmcp types cannot carry the tool-resolution
//!   fields are rewritten as JSON on the way out (see [`wire::hoist`]).
//!
//! Message types, dispatch and error mapping stay rmcp's; this is framing only.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::GetExtensions;
use rmcp::model::{
    ClientJsonRpcMessage, ErrorCode, JsonRpcMessage, RequestId, ServerJsonRpcMessage,
};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::{Mutex, Notify};

use super::direct::Direct;
use super::line::{custom_request, encode};

/// The longest line accepted; longer ones are answered with an error and skipped.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// How long the end of input waits for the answers to requests already read.
pub const DRAIN: Duration = Duration::from_secs(10);

pub struct LineTransport<R, W> {
    read: BufReader<R>,
    /// The line being read. It lives here, not in [`Self::read_line`]'s
    /// future, because rmcp races `receive` against other events and drops
    /// it when they win: a line half read when that happens is finished by
    /// the next call instead of being lost.
    line: Vec<u8>,
    /// Whether `line` holds a whole line already handed out (cleared by the
    /// next read), and whether the line being read is over [`MAX_LINE`].
    line_done: bool,
    oversized: bool,
    /// Error responses of our own not yet written (see `reply_error`).
    unsent: Vec<Vec<u8>>,
    /// How much of `unsent[0]` is written.
    unsent_at: usize,
    write: Arc<Mutex<BufWriter<W>>>,
    /// Whether the reader has run out of buffered input and waits for the
    /// client. Answers are flushed at once while it does; while it still has
    /// requests to hand out (a client that pipelines), answers collect in
    /// the write buffer and go out together when it runs dry: one write(2)
    /// for many answers instead of one each.
    reader_idle: Arc<AtomicBool>,
    /// Requests handed to rmcp and not answered yet. At the end of input the
    /// session would end and drop them, so a client that writes its requests
    /// and closes stdin (`regent serve < requests`) would lose the answers
    /// still being computed: [`Transport::receive`] reports the end only
    /// once they are written, or after [`DRAIN`]. A request the client
    /// cancels (`notifications/cancelled`) gets no answer (MCP says the
    /// receiver should not send one), so it stops being waited for then.
    pending: Arc<Pending>,
    /// When the end of input was first seen.
    eof_at: Option<tokio::time::Instant>,
    /// Answers `tools/resolve` and `tools/annotations` without rmcp once the
    /// session allows it (see [`direct`]).
    direct: Option<Direct>,
}

#[derive(Default)]
struct Pending {
    /// The ids of the requests not answered yet (as JSON text).
    ids: std::sync::Mutex<std::collections::HashSet<String>>,
    answered: Notify,
}

impl Pending {
    fn ids(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<String>> {
        self.ids.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn count(&self) -> usize {
        self.ids().len()
    }

    /// Whether `id` still waits for its answer (not cancelled).
    fn waiting(&self, id: &RequestId) -> bool {
        self.ids().contains(&id.to_string())
    }

    /// `id` needs no answer any more (answered, or cancelled).
    fn done(&self, id: &RequestId) {
        if self.ids().remove(&id.to_string()) {
            self.answered.notify_waiters();
        }
    }
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + Sync,
    W: AsyncWrite + Unpin + Send + Sync + 'static,
{
    pub fn new(read: R, write: W) -> Self {
        LineTransport {
            read: BufReader::with_capacity(64 * 1024, read),
            line: Vec::with_capacity(4096),
            line_done: false,
            oversized: false,
            unsent: Vec::new(),
            unsent_at: 0,
            write: Arc::new(Mutex::new(BufWriter::with_capacity(64 * 1024, write))),
            reader_idle: Arc::new(AtomicBool::new(true)),
            pending: Arc::new(Pending::default()),
            eof_at: None,
            direct: None,
        }
    }

    /// Answers what `direct` can answer itself, without handing it to rmcp.
    pub fn with_direct(mut self, direct: Direct) -> Self {
        self.direct = Some(direct);
        self
    }

    /// At the end of input: waits (cancel-safe) until every request read has
    /// been answered, or [`DRAIN`] after the end was first seen. A request
    /// rmcp never answers (one the client cancelled) only delays the exit.
    async fn drain(&mut self) {
        let deadline = *self
            .eof_at
            .get_or_insert_with(|| tokio::time::Instant::now() + DRAIN);
        loop {
            let answered = self.pending.answered.notified();
            if self.pending.count() == 0 {
                return;
            }
            if tokio::time::timeout_at(deadline, answered).await.is_err() {
                tracing::debug!(
                    unanswered = self.pending.count(),
                    "end of input: stopped waiting for answers"
                );
                return;
            }
        }
    }

    /// Flushes the answers waiting in the write buffer. Called before the
    /// reader waits for input, so no answer is held back while the client
    /// waits for it. Ordering with [`Transport::send`]: the flag is set
    /// before the lock is taken here, and `send` reads it under the lock, so
    /// an answer written after this flush sees the flag and flushes itself.
    async fn flush_before_waiting(&self) {
        self.reader_idle.store(true, Ordering::SeqCst);
        let mut w = self.write.lock().await;
        if !w.buffer().is_empty()
            && let Err(e) = w.flush().await
        {
            tracing::debug!("stdout flush failed: {e}");
        }
    }

    /// Reads one line into `self.line`, keeping at most [`MAX_LINE`] bytes.
    /// Returns `None` at end of input, else whether the line was oversized.
    /// Cancel-safe: dropped while waiting for input, it keeps what it has
    /// read, and the next call goes on from there.
    async fn read_line(&mut self) -> std::io::Result<Option<bool>> {
        if self.line_done {
            self.line.clear();
            self.oversized = false;
            self.line_done = false;
        }
        loop {
            if self.read.buffer().is_empty() {
                self.flush_before_waiting().await;
            }
            let buf = self.read.fill_buf().await?;
            self.reader_idle.store(false, Ordering::SeqCst);
            if buf.is_empty() {
                self.line_done = true;
                return Ok(if self.line.is_empty() && !self.oversized {
                    None
                } else {
                    Some(self.oversized)
                });
            }
            let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..=i], true),
                None => (buf, false),
            };
            let n = chunk.len();
            if !self.oversized && self.line.len() + n <= MAX_LINE {
                self.line.extend_from_slice(chunk);
            } else {
                self.oversized = true;
                self.line.clear();
            }
            self.read.consume(n);
            if done {
                self.line_done = true;
                return Ok(Some(self.oversized));
            }
        }
    }

    /// Writes one error response that rmcp never saw (the line did not
    /// parse). The bytes wait in `self.unsent` until written, so a `receive`
    /// dropped while waiting for the writer still answers, on its next call.
    async fn reply_error(
        &mut self,
        id: Value,
        code: ErrorCode,
        message: &str,
        data: Option<Value>,
    ) {
        let mut err = json!({"code": code.0, "message": message});
        if let Some(d) = data {
            err["data"] = d;
        }
        let msg = json!({"jsonrpc": "2.0", "id": id, "error": err});
        let mut bytes = serde_json::to_vec(&msg).unwrap_or_default();
        bytes.push(b'\n');
        self.unsent.push(bytes);
        self.write_unsent(true).await;
    }

    /// `msg`, counted in [`Self::pending`] when it is a request rmcp will answer.
    fn counted(&self, msg: ClientJsonRpcMessage) -> ClientJsonRpcMessage {
        match &msg {
            JsonRpcMessage::Request(r) => {
                self.pending.ids().insert(r.id.to_string());
            }
            JsonRpcMessage::Notification(n) => {
                if let rmcp::model::ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    self.pending.done(id);
                }
            }
            _ => {}
        }
        msg
    }

    /// Has `request` answered by [`Direct`] on a thread of its own, while
    /// this transport goes on reading (see [`super::pace`]). The answer is
    /// written when ready, in whatever order; one the client cancelled in
    /// the meantime is not written.
    fn answer_off_thread(
        &self,
        direct: &Direct,
        request: super::line::Custom,
        negotiated: super::Negotiated,
        record: Option<Arc<super::pace::Tool>>,
    ) {
        let id = request.id.clone();
        self.pending.ids().insert(id.to_string());
        let direct = direct.clone();
        let pace = direct.pace();
        let write = self.write.clone();
        let reader_idle = self.reader_idle.clone();
        let pending = self.pending.clone();
        tokio::spawn(async move {
            let answer_id = id.clone();
            let bytes = pace
                .off_thread(move || direct.answer(request, negotiated, record))
                .await
                .unwrap_or_else(|e| {
                    let error = rmcp::ErrorData::internal_error(
                        format!("the policy evaluation did not finish: {e}"),
                        None,
                    );
                    let mut bytes = encode(ServerJsonRpcMessage::error(error, Some(answer_id)))
                        .unwrap_or_default();
                    bytes.push(b'\n');
                    bytes
                });
            if !bytes.is_empty()
                && pending.waiting(&id)
                && let Err(e) = write_answer(&write, &reader_idle, &bytes).await
            {
                tracing::debug!("stdout write failed: {e}");
            }
            pending.done(&id);
        });
    }

    /// Writes the answers of our own waiting in `unsent` (also those left
    /// by a dropped `receive`), flushing them when `flush`. Direct answers
    /// are not flushed here: like rmcp's, they go out when the reader runs
    /// dry (`reader_idle`).
    async fn write_unsent(&mut self, flush: bool) {
        if self.unsent.is_empty() {
            return;
        }
        let write = self.write.clone();
        let mut w = write.lock().await;
        // Cancel-safe: what is written is taken off `unsent` as it goes, so
        // a dropped `receive` neither loses an answer nor writes part of
        // one twice. Answers to a client that stopped reading are dropped.
        while let Some(bytes) = self.unsent.first() {
            match w.write(&bytes[self.unsent_at..]).await {
                Ok(n) if n > 0 => self.unsent_at += n,
                _ => {
                    self.unsent.clear();
                    self.unsent_at = 0;
                    return;
                }
            }
            if self.unsent_at == bytes.len() {
                self.unsent.remove(0);
                self.unsent_at = 0;
            }
        }
        if flush {
            let _ = w.flush().await;
        }
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + Sync,
    W: AsyncWrite + Unpin + Send + Sync + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // An answer to a client's request (not a request of ours to it).
        let answers = match &item {
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            JsonRpcMessage::Error(e) => e.id.clone(),
            _ => None,
        };
        let bytes = encode(item);
        let write = self.write.clone();
        let reader_idle = self.reader_idle.clone();
        let pending = self.pending.clone();
        async move {
            let written = async {
                let mut bytes = bytes?;
                bytes.push(b'\n');
                write_answer(&write, &reader_idle, &bytes).await
            }
            .await;
            if let Some(id) = answers {
                pending.done(&id);
            }
            written
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        self.write_unsent(true).await;
        loop {
            let oversized = match self.read_line().await {
                Ok(Some(o)) => o,
                Ok(None) => {
                    // Flush what is buffered, then let the answers still
                    // being computed out before the session ends.
                    self.flush_before_waiting().await;
                    self.drain().await;
                    self.flush_before_waiting().await;
                    return None;
                }
                Err(e) => {
                    tracing::warn!("stdin read failed: {e}");
                    return None;
                }
            };
            if oversized {
                self.reply_error(
                    Value::Null,
                    ErrorCode::INVALID_REQUEST,
                    "Invalid request",
                    Some(json!({"reason": format!("message longer than {MAX_LINE} bytes")})),
                )
                .await;
                continue;
            }
            let text = trim(&self.line);
            if text.is_empty() {
                continue;
            }
            if let Some(request) = custom_request(text) {
                if let Some(direct) = &self.direct
                    && let Some(negotiated) = direct.takes(&request)
                {
                    let (here, record) = direct.in_place(&request, self.line.len());
                    if !here {
                        self.answer_off_thread(direct, request, negotiated, record);
                        continue;
                    }
                    let bytes = direct.answer(request, negotiated, record);
                    if !bytes.is_empty() {
                        self.unsent.push(bytes);
                    }
                    self.write_unsent(false).await;
                    continue;
                }
                return Some(self.counted(request.into_message()));
            }
            match serde_json::from_slice::<ClientJsonRpcMessage>(text) {
                Ok(mut msg) => {
                    // The numbers the request spelled by hand reach its
                    // handler in the request's extensions (`spelled_of`).
                    if let JsonRpcMessage::Request(r) = &mut msg
                        && let Some(spelled) = crate::policy::spelled::scan(text)
                    {
                        r.request.extensions_mut().insert(spelled);
                    }
                    return Some(self.counted(msg));
                }
                Err(e) if e.is_syntax() || e.is_eof() => {
                    tracing::debug!("unparsable line: {e}");
                    self.reply_error(
                        Value::Null,
                        ErrorCode::PARSE_ERROR,
                        "Parse error",
                        Some(json!({"reason": e.to_string()})),
                    )
                    .await;
                }
                Err(e) => {
                    // Valid JSON but not a JSON-RPC message we know: answer
                    // with the id when there is one, so a client can match it.
                    let id = serde_json::from_slice::<Value>(text)
                        .ok()
                        .and_then(|v| v.get("id").cloned())
                        .filter(|id| id.is_string() || id.is_number())
                        .unwrap_or(Value::Null);
                    self.reply_error(
                        id,
                        ErrorCode::INVALID_REQUEST,
                        "Invalid request",
                        Some(json!({"reason": e.to_string()})),
                    )
                    .await;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let mut w = self.write.lock().await;
        w.flush().await
    }
}

/// Writes one whole answer line. While the reader still has requests
/// buffered it will flush when it runs dry (see `reader_idle`); otherwise
/// the answer is flushed now. The flag is read under the writer's lock (see
/// `flush_before_waiting`).
async fn write_answer<W: AsyncWrite + Unpin>(
    write: &Mutex<BufWriter<W>>,
    reader_idle: &AtomicBool,
    bytes: &[u8],
) -> std::io::Result<()> {
    let mut w = write.lock().await;
    w.write_all(bytes).await?;
    if reader_idle.load(Ordering::SeqCst) {
        w.flush().await?;
    }
    Ok(())
}

fn trim(mut s: &[u8]) -> &[u8] {
    // A UTF-8 byte order mark and CR/LF around a message are tolerated.
    if let Some(rest) = s.strip_prefix(b"\xEF\xBB\xBF") {
        s = rest;
    }
    s.trim_ascii()
}
