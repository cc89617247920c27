//! A child upstream's standard output as rmcp's stdio transport reads it,
//! with one addition: an answer too big for one message is answered at
//! once, in regent's words, instead of never.
//!
//! rmcp's transport drops a line longer than its limit (it never buffers
//! more than that), so the response in it is lost and the call waited for
//! its whole `timeout`. [`Oversize`] passes every byte through unchanged,
//! counts each line, and after the newline of one over [`Oversize::limit`]
//! (which rmcp then drops) adds a small JSON-RPC error response with the
//! dropped one's `id` and [`OVERSIZE_MARK`] in its data, which
//! `Connected::call` turns into the output cap's message. The `id` is read
//! from the line's first bytes ([`HEAD`]) or, when a server writes it last,
//! from its last ones; a line that is a request or notification of the
//! upstream's (a top-level `method`), or whose `id` cannot be found, adds
//! nothing (the call then still ends at its timeout). Memory stays bounded:
//! only the head and tail of a line are kept, never the line.
//!
//! Over Streamable HTTP, rmcp's client refuses a JSON body or an SSE event
//! over 16 MiB the same way (the request's answer lost: the call failed as
//! if the upstream went down). [`Http`] wraps the reqwest client rmcp uses
//! and turns that refusal, for a request it sent, into the same error
//! response, since there the request's `id` is known.
//!
//! What is a call's result and how it is capped is `upstream`'s; this only
//! frames messages.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, ReadBuf};

/// The key of the error's `data` that marks regent's own answer for a
/// dropped message, holding the message limit in bytes.
pub const OVERSIZE_MARK: &str = "regent/oversizedMessage";

/// How much of a line's start (and end) is kept to find its `id`.
pub const HEAD: usize = 1024;

/// The most regent reads of one message from an upstream's standard output:
/// rmcp's own limit (16 MiB), or twice `max_output` when that is more, so a
/// result the cap would keep (cut) is never lost whole.
pub fn line_limit(max_output: usize) -> usize {
    rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH.max(max_output.saturating_mul(2))
}

/// See the module documentation.
pub struct Oversize<R> {
    inner: R,
    limit: usize,
    /// Bytes of the current line so far, its newline included.
    line: usize,
    head: Vec<u8>,
    /// The last [`HEAD`] bytes of the current line (a ring, `tail_at` next).
    tail: Vec<u8>,
    tail_at: usize,
    /// Bytes read from `inner` not yet handed on, and where they start.
    out: Vec<u8>,
    out_at: usize,
    scratch: Box<[u8]>,
}

impl<R: AsyncRead + Unpin> Oversize<R> {
    pub fn new(inner: R, limit: usize) -> Oversize<R> {
        Oversize {
            inner,
            limit,
            line: 0,
            head: Vec::with_capacity(HEAD),
            tail: Vec::with_capacity(HEAD),
            tail_at: 0,
            out: Vec::new(),
            out_at: 0,
            scratch: vec![0; 64 * 1024].into_boxed_slice(),
        }
    }

    /// The limit: a line longer than this (newline included) is answered.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Takes in `bytes` read from the upstream, queueing them (and an answer
    /// after each oversized line) in `out`.
    fn take_in(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let end = bytes.iter().position(|&b| b == b'\n');
            let piece = &bytes[..end.map_or(bytes.len(), |i| i + 1)];
            bytes = &bytes[piece.len()..];
            self.out.extend_from_slice(piece);
            self.line += piece.len();
            if self.head.len() < HEAD {
                let room = HEAD - self.head.len();
                self.head.extend_from_slice(&piece[..room.min(piece.len())]);
            }
            if self.line + HEAD > self.limit {
                // Only an oversized line needs its end; keep its last bytes
                // from just before the limit on.
                for &b in &piece[piece.len().saturating_sub(HEAD)..] {
                    if self.tail.len() < HEAD {
                        self.tail.push(b);
                    } else {
                        self.tail[self.tail_at] = b;
                    }
                    self.tail_at = (self.tail_at + 1) % HEAD;
                }
            }
            if end.is_some() {
                if self.line > self.limit
                    && let Some(answer) = self.answer()
                {
                    self.out.extend_from_slice(answer.as_bytes());
                    self.out.push(b'\n');
                }
                self.line = 0;
                self.head.clear();
                self.tail.clear();
                self.tail_at = 0;
            }
        }
    }

    /// The error response for the oversized line just ended, when it was a
    /// response whose `id` can be read.
    fn answer(&self) -> Option<String> {
        let id = self.oversized_id()?;
        tracing::warn!(
            bytes = self.line,
            limit = self.limit,
            "an upstream's message passed the most regent reads of one; answering its request with an error"
        );
        Some(error_response(id, self.limit).to_string())
    }

    fn oversized_id(&self) -> Option<Value> {
        let id = match top_level_id(&self.head) {
            Scan::Id(id) => id,
            Scan::Request => return None,
            Scan::Unknown => {
                let mut tail = self.tail[self.tail_at..].to_vec();
                tail.extend_from_slice(&self.tail[..self.tail_at]);
                trailing_id(&tail)?
            }
        };
        Some(id)
    }
}

/// regent's JSON-RPC error response for request `id`, whose answer passed
/// `limit` bytes.
fn error_response(id: Value, limit: usize) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": -32603,
            "message": format!("the upstream's answer passed {limit} bytes, the most regent reads of one message"),
            "data": {OVERSIZE_MARK: limit},
        },
    })
}

/// rmcp's reqwest client for a `url:` upstream, answering for the upstream
/// when its answer to a request is too big for one message (see the module
/// documentation). Everything else is the inner client's.
#[derive(Clone)]
pub struct Http(pub reqwest::Client);

mod http_client {
    use std::collections::HashMap;
    use std::sync::Arc;

    use futures::StreamExt;
    use http::{HeaderName, HeaderValue};
    use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
    use rmcp::transport::streamable_http_client::{
        SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    };

    use super::{Http, error_response};

    type Error = StreamableHttpError<reqwest::Error>;

    /// rmcp's words for an SSE event over its limit (its error type is
    /// private; the message is what shows).
    fn event_too_large(e: &SseError) -> bool {
        e.to_string().contains("exceeded the maximum size")
            || std::error::Error::source(e)
                .is_some_and(|s| s.to_string().contains("exceeded the maximum size"))
    }

    fn answer(id: &rmcp::model::RequestId, limit: usize) -> Option<ServerJsonRpcMessage> {
        let id = serde_json::to_value(id).ok()?;
        serde_json::from_value(error_response(id, limit)).ok()
    }

    impl StreamableHttpClient for Http {
        type Error = reqwest::Error;

        async fn post_message(
            &self,
            uri: Arc<str>,
            message: ClientJsonRpcMessage,
            session_id: Option<Arc<str>>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
        ) -> Result<StreamableHttpPostResponse, Error> {
            self.post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH,
            )
            .await
        }

        async fn post_message_with_max_sse_event_size(
            &self,
            uri: Arc<str>,
            message: ClientJsonRpcMessage,
            session_id: Option<Arc<str>>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
            max_sse_event_size: usize,
        ) -> Result<StreamableHttpPostResponse, Error> {
            let id = match &message {
                ClientJsonRpcMessage::Request(r) => Some(r.id.clone()),
                _ => None,
            };
            let response = self
                .0
                .post_message_with_max_sse_event_size(
                    uri,
                    message,
                    session_id,
                    auth_header,
                    custom_headers,
                    max_sse_event_size,
                )
                .await;
            let Some(id) = id else { return response };
            match response {
                Err(StreamableHttpError::ResponseBodyTooLarge { max_size }) => {
                    tracing::warn!(
                        limit = max_size,
                        "an upstream's answer passed the most regent reads of one; answering its request with an error"
                    );
                    match answer(&id, max_size) {
                        Some(m) => Ok(StreamableHttpPostResponse::Json(m, None)),
                        None => Err(StreamableHttpError::ResponseBodyTooLarge { max_size }),
                    }
                }
                Ok(StreamableHttpPostResponse::Sse(stream, session)) => {
                    // The event over the limit ends the stream with an error;
                    // an error response for the request takes its place.
                    let stream = stream
                        .scan(false, move |ended, item| {
                            if *ended {
                                return futures::future::ready(None);
                            }
                            let item = match item {
                                Err(e) if event_too_large(&e) => {
                                    *ended = true;
                                    tracing::warn!(limit = max_sse_event_size, "an upstream's answer passed the most regent reads of one; answering its request with an error");
                                    match answer(&id, max_sse_event_size)
                                        .and_then(|m| serde_json::to_string(&m).ok())
                                    {
                                        Some(data) => Ok(sse_stream::Sse {
                                            event: Some("message".into()),
                                            data: Some(data),
                                            id: None,
                                            retry: None,
                                        }),
                                        None => Err(e),
                                    }
                                }
                                other => other,
                            };
                            futures::future::ready(Some(item))
                        })
                        .boxed();
                    Ok(StreamableHttpPostResponse::Sse(stream, session))
                }
                other => other,
            }
        }

        async fn delete_session(
            &self,
            uri: Arc<str>,
            session_id: Arc<str>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
        ) -> Result<(), Error> {
            self.0
                .delete_session(uri, session_id, auth_header, custom_headers)
                .await
        }

        async fn get_stream(
            &self,
            uri: Arc<str>,
            session_id: Option<Arc<str>>,
            last_event_id: Option<String>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
        ) -> Result<futures::stream::BoxStream<'static, Result<sse_stream::Sse, SseError>>, Error>
        {
            self.0
                .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
                .await
        }

        async fn get_stream_with_max_sse_event_size(
            &self,
            uri: Arc<str>,
            session_id: Option<Arc<str>>,
            last_event_id: Option<String>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
            max_sse_event_size: usize,
        ) -> Result<futures::stream::BoxStream<'static, Result<sse_stream::Sse, SseError>>, Error>
        {
            self.0
                .get_stream_with_max_sse_event_size(
                    uri,
                    session_id,
                    last_event_id,
                    auth_header,
                    custom_headers,
                    max_sse_event_size,
                )
                .await
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Oversize<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        while this.out_at == this.out.len() {
            this.out.clear();
            this.out_at = 0;
            let mut scratch = std::mem::take(&mut this.scratch);
            let (polled, n) = {
                let mut read = ReadBuf::new(&mut scratch);
                let polled = Pin::new(&mut this.inner).poll_read(cx, &mut read);
                (polled, read.filled().len())
            };
            if let Poll::Ready(Ok(())) = polled {
                this.take_in(&scratch[..n]);
            }
            this.scratch = scratch;
            ready!(polled)?;
            if n == 0 {
                return Poll::Ready(Ok(())); // end of input
            }
        }
        let n = buf.remaining().min(this.out.len() - this.out_at);
        buf.put_slice(&this.out[this.out_at..this.out_at + n]);
        this.out_at += n;
        Poll::Ready(Ok(()))
    }
}

/// What the start of a line says about it.
#[derive(Debug, PartialEq)]
enum Scan {
    /// A top-level `id` with this value, and no `method` before it.
    Id(Value),
    /// A top-level `method`: the upstream's request or notification.
    Request,
    /// Neither within the bytes given.
    Unknown,
}

/// Reads the top-level keys of the JSON object that `bytes` starts (and may
/// not finish), skipping nested values, until it finds `id` or `method`.
fn top_level_id(bytes: &[u8]) -> Scan {
    let mut i = bytes
        .iter()
        .position(|&b| b == b'{')
        .map_or(bytes.len(), |p| p + 1);
    let skip_ws = |i: &mut usize| {
        while *i < bytes.len() && bytes[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    loop {
        skip_ws(&mut i);
        let Some(key_end) = string_end(bytes, i) else {
            return Scan::Unknown;
        };
        let key = &bytes[i + 1..key_end - 1];
        i = key_end;
        skip_ws(&mut i);
        if bytes.get(i) != Some(&b':') {
            return Scan::Unknown;
        }
        i += 1;
        skip_ws(&mut i);
        let Some(value_end) = value_end(bytes, i) else {
            return Scan::Unknown;
        };
        match key {
            b"method" => return Scan::Request,
            b"id" => {
                return serde_json::from_slice(&bytes[i..value_end])
                    .map_or(Scan::Unknown, Scan::Id);
            }
            _ => {}
        }
        i = value_end;
        skip_ws(&mut i);
        if bytes.get(i) != Some(&b',') {
            return Scan::Unknown;
        }
        i += 1;
    }
}

/// The end (one past the closing quote) of the JSON string at `i`.
fn string_end(bytes: &[u8], i: usize) -> Option<usize> {
    if bytes.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    while j < bytes.len() {
        match bytes[j] {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

/// The end of the JSON value at `i`, when it ends within `bytes`.
fn value_end(bytes: &[u8], i: usize) -> Option<usize> {
    match bytes.get(i)? {
        b'"' => string_end(bytes, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < bytes.len() {
                match bytes[j] {
                    b'"' => {
                        j = string_end(bytes, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let j = bytes[i..]
                .iter()
                .position(|&b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())
                .map_or(bytes.len(), |p| i + p);
            (j < bytes.len()).then_some(j)
        }
    }
}

/// The `id` of a response that writes it last: the line ends with
/// `"id": VALUE }` (a number or a string), which a nested `id` cannot,
/// since its object's `}` would follow before the line's.
fn trailing_id(tail: &[u8]) -> Option<Value> {
    let s = std::str::from_utf8(tail)
        .ok()
        .or_else(|| {
            // The tail may start inside a character: drop up to 3 bytes.
            (1..4).find_map(|k| std::str::from_utf8(tail.get(k..)?).ok())
        })?
        .trim_end();
    let s = s.strip_suffix('}')?.trim_end();
    let at = s.rfind("\"id\"")?;
    let value = s[at + 4..].trim_start().strip_prefix(':')?.trim();
    let v: Value = serde_json::from_str(value).ok()?;
    (v.is_number() || v.is_string()).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn through(input: &[u8], limit: usize) -> String {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut r = Oversize::new(input, limit);
            let mut out = Vec::new();
            r.read_to_end(&mut out).await.unwrap();
            String::from_utf8(out).unwrap()
        })
    }

    #[test]
    fn lines_within_the_limit_pass_unchanged() {
        let input = "{\"id\":1,\"result\":{}}\n{\"method\":\"x\"}\npartial";
        assert_eq!(through(input.as_bytes(), 64), input);
    }

    #[test]
    fn an_oversized_response_is_followed_by_an_error_for_its_id() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"a7\",\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{}\"}}]}}}}\n",
            "x".repeat(5000)
        );
        let out = through(
            format!("{big}{{\"id\":2,\"result\":{{}}}}\n").as_bytes(),
            1000,
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(
            lines[0].len(),
            big.len() - 1,
            "passed through, for rmcp to drop"
        );
        let answer: Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(answer["id"], "a7");
        assert_eq!(answer["error"]["data"][OVERSIZE_MARK], 1000);
        assert_eq!(lines[2], "{\"id\":2,\"result\":{}}");
    }

    #[test]
    fn an_id_written_last_is_found_and_nested_ids_are_not_taken() {
        let big = format!(
            "{{\"result\":{{\"structuredContent\":{{\"id\":9}},\"text\":\"{}\"}},\"jsonrpc\":\"2.0\",\"id\":42}}\n",
            "y".repeat(5000)
        );
        let out = through(big.as_bytes(), 1000);
        let answer: Value = serde_json::from_str(out.lines().nth(1).unwrap()).unwrap();
        assert_eq!(answer["id"], 42);
        // A nested `id` at the very end is no top-level one.
        let nested = format!(
            "{{\"result\":{{\"t\":\"{}\",\"x\":{{\"id\":3}}}}}}\n",
            "z".repeat(5000)
        );
        assert_eq!(through(nested.as_bytes(), 1000).lines().count(), 1);
    }

    #[test]
    fn an_oversized_request_of_the_upstream_adds_nothing() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"data\":\"{}\"}},\"id\":5}}\n",
            "x".repeat(5000)
        );
        assert_eq!(through(big.as_bytes(), 1000), big);
    }

    #[test]
    fn the_start_of_an_object_is_read_key_by_key() {
        assert_eq!(
            top_level_id(br#"{"jsonrpc":"2.0","result":{"id":1,"a":[1,{"b":"}"}]},"id":7,"#),
            Scan::Id(json!(7))
        );
        assert_eq!(
            top_level_id(br#"{"jsonrpc":"2.0","method":"x""#),
            Scan::Request
        );
        assert_eq!(top_level_id(br#"{"result":{"text":"xxxx"#), Scan::Unknown);
    }
}
