//! Puts the tool-resolution fields into `/mcp` responses, so the wire shape
//! over HTTP is the one the stdio transport writes.
//!
//! rmcp's typed results cannot carry `tools.resolve`/`tools.dynamicAnnotations`
//! in capabilities, nor `resolve`, `dynamicAnnotations` and `securitySchemes`
//! on listed tools (see `protocol::wire`). On stdio, `protocol::transport`
//! rewrites each outgoing message; rmcp's HTTP service offers no such hook
//! (it requires a `ServerHandler` and serializes inside), so the rewrite
//! happens on the response bodies instead, with the same function
//! ([`wire::hoist_message`]):
//!
//! - `application/json`: the one message in the body;
//! - `text/event-stream`: each `data:` line, as the stream passes, without
//!   delaying any event (rmcp writes one JSON message per `data:` line).
//!
//! Bodies whose messages need no change are passed on byte for byte.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use http::header;
use http_body::Frame;
use serde_json::Value;

use crate::protocol::wire;

pub async fn rewrite(req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    let content_type = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    match content_type.as_str() {
        "application/json" => rewrite_json(resp).await,
        "text/event-stream" => {
            let (parts, body) = resp.into_parts();
            Response::from_parts(parts, Body::new(SseHoist::new(body)))
        }
        _ => resp,
    }
}

async fn rewrite_json(resp: Response) -> Response {
    let (mut parts, body) = resp.into_parts();
    // rmcp built this body in memory from one serialized message.
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(e) => {
            tracing::error!("reading a response body to rewrite failed: {e}");
            return Response::from_parts(parts, Body::empty());
        }
    };
    match hoisted(&bytes) {
        Some(new) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(new))
        }
        None => Response::from_parts(parts, Body::from(bytes)),
    }
}

/// The message rewritten, or `None` when it needs no change (or is not JSON).
fn hoisted(json: &[u8]) -> Option<Vec<u8>> {
    // Only initialize, discover and tools/list results change; a substring
    // test spares parsing every other body (a tool's output can be large).
    let text = std::str::from_utf8(json).ok()?;
    if !text.contains(wire::HOIST_KEY) && !text.contains("\"capabilities\"") {
        return None;
    }
    let mut v: Value = serde_json::from_slice(json).ok()?;
    if !wire::hoist_message(&mut v) {
        return None;
    }
    serde_json::to_vec(&v).ok()
}

/// An SSE body whose `data:` lines are rewritten as they pass.
struct SseHoist {
    inner: Body,
    /// The start of a line whose end has not arrived yet.
    partial: BytesMut,
    ended: bool,
}

impl SseHoist {
    fn new(inner: Body) -> SseHoist {
        SseHoist {
            inner,
            partial: BytesMut::new(),
            ended: false,
        }
    }

    /// Appends `chunk` and returns every complete line, rewritten.
    fn feed(&mut self, chunk: &[u8]) -> Bytes {
        self.partial.extend_from_slice(chunk);
        let Some(last_newline) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return Bytes::new();
        };
        let complete = self.partial.split_to(last_newline + 1);
        let mut out = BytesMut::with_capacity(complete.len());
        for line in complete.split_inclusive(|&b| b == b'\n') {
            rewrite_line(line, &mut out);
        }
        out.freeze()
    }
}

/// Copies one SSE line (with its line ending) to `out`, rewriting the JSON
/// of a `data:` line when it needs it.
fn rewrite_line(line: &[u8], out: &mut BytesMut) {
    let body_end = line
        .iter()
        .rposition(|&b| b != b'\n' && b != b'\r')
        .map_or(0, |i| i + 1);
    let (content, ending) = line.split_at(body_end);
    if let Some(data) = content.strip_prefix(b"data:") {
        let data = data.strip_prefix(b" ").unwrap_or(data);
        if let Some(new) = hoisted(data) {
            out.extend_from_slice(b"data: ");
            out.extend_from_slice(&new);
            out.extend_from_slice(ending);
            return;
        }
    }
    out.extend_from_slice(line);
}

impl http_body::Body for SseHoist {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        loop {
            if self.ended {
                return Poll::Ready(None);
            }
            match Pin::new(&mut self.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => {
                        let out = self.feed(&data);
                        if !out.is_empty() {
                            return Poll::Ready(Some(Ok(Frame::data(out))));
                        }
                    }
                    Err(frame) => return Poll::Ready(Some(Ok(frame))),
                },
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => {
                    self.ended = true;
                    if self.partial.is_empty() {
                        return Poll::Ready(None);
                    }
                    // A last line without its newline: pass it on as it is.
                    let rest = self.partial.split().freeze();
                    let mut out = BytesMut::with_capacity(rest.len());
                    rewrite_line(&rest, &mut out);
                    return Poll::Ready(Some(Ok(Frame::data(out.freeze()))));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing() -> String {
        r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"t","inputSchema":{},"_meta":{"x-regent/hoist":{"resolve":true}}}]}}"#.to_string()
    }

    #[test]
    fn data_lines_are_rewritten_across_chunk_boundaries() {
        let mut s = SseHoist::new(Body::empty());
        let event = format!("id: 0\ndata: {}\n\n", listing());
        let (a, b) = event.as_bytes().split_at(20);
        let mut out = s.feed(a).to_vec();
        out.extend_from_slice(&s.feed(b));
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("id: 0\ndata: {"), "{text}");
        assert!(text.ends_with("}\n\n"), "{text}");
        assert!(text.contains(r#""resolve":true"#), "{text}");
        assert!(!text.contains("x-regent/hoist"), "{text}");
    }

    #[test]
    fn other_lines_pass_unchanged() {
        let mut s = SseHoist::new(Body::empty());
        let event =
            "retry: 3000\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":1.50}}\r\n: ping\n";
        assert_eq!(&s.feed(event.as_bytes())[..], event.as_bytes());
    }
}
