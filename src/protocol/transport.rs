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

use std::borrow::Cow;

use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, CustomRequest, CustomResult, ErrorCode, Extensions,
    JsonRpcMessage, JsonRpcRequest, JsonRpcVersion2_0, RequestId, RequestMetaObject,
    ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::Mutex;

use super::wire;

/// The longest line accepted; longer ones are answered with an error and skipped.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

pub struct LineTransport<R, W> {
    read: BufReader<R>,
    line: Vec<u8>,
    write: Arc<Mutex<BufWriter<W>>>,
    /// Whether the reader has run out of buffered input and waits for the
    /// client. Answers are flushed at once while it does; while it still has
    /// requests to hand out (a client that pipelines), answers collect in
    /// the write buffer and go out together when it runs dry: one write(2)
    /// for many answers instead of one each.
    reader_idle: Arc<AtomicBool>,
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
            write: Arc::new(Mutex::new(BufWriter::with_capacity(64 * 1024, write))),
            reader_idle: Arc::new(AtomicBool::new(true)),
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
    /// Returns `Ok(false)` at end of input and `Ok(true)` with an oversized
    /// flag set in the second value.
    async fn read_line(&mut self) -> std::io::Result<Option<bool>> {
        self.line.clear();
        let mut oversized = false;
        loop {
            if self.read.buffer().is_empty() {
                self.flush_before_waiting().await;
            }
            let buf = self.read.fill_buf().await?;
            self.reader_idle.store(false, Ordering::SeqCst);
            if buf.is_empty() {
                return Ok(if self.line.is_empty() && !oversized {
                    None
                } else {
                    Some(oversized)
                });
            }
            let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..=i], true),
                None => (buf, false),
            };
            let n = chunk.len();
            if !oversized && self.line.len() + n <= MAX_LINE {
                self.line.extend_from_slice(chunk);
            } else {
                oversized = true;
                self.line.clear();
            }
            self.read.consume(n);
            if done {
                return Ok(Some(oversized));
            }
        }
    }

    /// Writes one error response that rmcp never saw (the line did not parse).
    async fn reply_error(&self, id: Value, code: ErrorCode, message: &str, data: Option<Value>) {
        let mut err = json!({"code": code.0, "message": message});
        if let Some(d) = data {
            err["data"] = d;
        }
        let msg = json!({"jsonrpc": "2.0", "id": id, "error": err});
        let mut bytes = serde_json::to_vec(&msg).unwrap_or_default();
        bytes.push(b'\n');
        let mut w = self.write.lock().await;
        if w.write_all(&bytes).await.is_ok() {
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
        let bytes = encode(item);
        let write = self.write.clone();
        let reader_idle = self.reader_idle.clone();
        async move {
            let mut bytes = bytes?;
            bytes.push(b'\n');
            let mut w = write.lock().await;
            w.write_all(&bytes).await?;
            // While the reader still has requests buffered it will flush
            // when it runs dry (see `reader_idle`); otherwise flush now.
            if reader_idle.load(Ordering::SeqCst) {
                w.flush().await?;
            }
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let oversized = match self.read_line().await {
                Ok(Some(o)) => o,
                Ok(None) => return None,
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
            if let Some(msg) = custom_request(text) {
                return Some(msg);
            }
            match serde_json::from_slice::<ClientJsonRpcMessage>(text) {
                Ok(msg) => return Some(msg),
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

/// The methods regent serves through rmcp's custom-request hook.
const CUSTOM_METHODS: [&str; 2] = ["tools/resolve", "tools/annotations"];

/// Parses a request for one of [`CUSTOM_METHODS`] straight into rmcp's
/// `CustomRequest`.
///
/// rmcp parses every incoming message as `ClientRequest`, an untagged union
/// of all the request types it knows, trying each in turn; a method it does
/// not know fails every attempt (formatting an error message for each) before
/// it lands on `CustomRequest`. That was a quarter of the instructions of a
/// `tools/resolve` (callgrind; see BENCHMARKS.md). This builds the same value
/// directly and, as rmcp's own deserializer does, moves `params._meta` into
/// the request's extensions, where the era checks and `ctx.meta` read it.
/// Anything unusual (no id, `params` or `_meta` not an object, a malformed
/// envelope) returns `None` and takes rmcp's path, so errors stay rmcp's.
fn custom_request(text: &[u8]) -> Option<ClientJsonRpcMessage> {
    #[derive(Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<Cow<'a, str>>,
    }
    #[derive(Deserialize)]
    struct Envelope {
        #[allow(dead_code)]
        jsonrpc: JsonRpcVersion2_0,
        id: RequestId,
        method: String,
        #[serde(default)]
        params: Option<Value>,
    }
    // A borrowed probe first: the other methods pay only for a scan.
    let probe: Method = serde_json::from_slice(text).ok()?;
    if !CUSTOM_METHODS.contains(&probe.method?.as_ref()) {
        return None;
    }
    let Envelope {
        id, method, params, ..
    } = serde_json::from_slice(text).ok()?;
    let mut extensions = Extensions::new();
    let params = match params {
        None => None,
        Some(Value::Object(mut p)) => {
            match p.remove("_meta") {
                None => {}
                Some(Value::Object(meta)) => {
                    extensions.insert(RequestMetaObject::from(meta));
                }
                Some(_) => return None,
            }
            Some(Value::Object(p))
        }
        Some(_) => return None,
    };
    let request = CustomRequest {
        method,
        params,
        extensions,
    };
    Some(JsonRpcMessage::Request(JsonRpcRequest::new(
        id,
        ClientRequest::CustomRequest(request),
    )))
}

fn trim(mut s: &[u8]) -> &[u8] {
    // A UTF-8 byte order mark and CR/LF around a message are tolerated.
    if let Some(rest) = s.strip_prefix(b"\xEF\xBB\xBF") {
        s = rest;
    }
    s.trim_ascii()
}

/// Serializes an outgoing message, rewriting the results rmcp types too
/// narrowly for the tool-resolution fields.
fn encode(item: ServerJsonRpcMessage) -> std::io::Result<Vec<u8>> {
    let item = match item {
        JsonRpcMessage::Response(mut resp)
            if matches!(
                resp.result,
                ServerResult::InitializeResult(_)
                    | ServerResult::DiscoverResult(_)
                    | ServerResult::ListToolsResult(_)
            ) =>
        {
            let mut v = serde_json::to_value(&resp.result)?;
            wire::hoist(&mut v);
            resp.result = ServerResult::CustomResult(CustomResult::new(v));
            JsonRpcMessage::Response(resp)
        }
        other => other,
    };
    Ok(serde_json::to_vec(&item)?)
}
