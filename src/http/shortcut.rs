//! The HTTP side of the direct path: a stateless 2026-07-28 `tools/resolve`
//! POST answered by `protocol::direct::HttpDirect` instead of rmcp's
//! Streamable HTTP service, when every check rmcp would make plainly passes.
//!
//! Why: rmcp parses the body into its typed union, serializes it again to
//! check the `Mcp-*` headers, and runs the request through a spawned
//! service with a one-shot transport; with the response rewriting around it,
//! that was most of a resolve's instructions over HTTP (BENCHMARKS.md,
//! "Session 23"). A resolve never streams nor waits on the client.
//!
//! What this module checks is what rmcp checks before it reads the message,
//! each on its passing side only: the `Host` against the allowed hosts (the
//! same rules, `guard::check_host_and_origin`), no `Origin` (a browser's
//! request goes to rmcp, which checks it), an `Accept` listing both
//! `application/json` and `text/event-stream` without parameters, a
//! `Content-Type` of `application/json`, a `Content-Length`, no
//! `Mcp-Session-Id`. The MCP checks (headers against the message, `_meta`)
//! are `HttpDirect`'s. Whatever fails any of them, or whose body cannot be
//! read whole within the cap, is handed to rmcp with its body as it came
//! (frames replayed, an error included), so every refusal and its bytes
//! stay rmcp's. Runs inside the deadline, authentication and body-cap
//! guards, so those hold for both paths; the session binding, `DELETE`
//! handling, parse-error rewriting, scope challenge and `hoist` apply to
//! neither a stateless request nor a resolve's answer, and are skipped.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use http::{HeaderMap, HeaderName, HeaderValue, Method, header};
use http_body::{Body as _, Frame};
use rmcp::transport::common::http_header::HEADER_SESSION_ID;

use super::guard::{self, Shared};
use crate::caller::Caller;
use crate::protocol::direct::HttpDirect;

/// What the layer needs: the direct path, and the guards' shared state (the
/// allowed hosts, the body cap).
pub struct Door {
    pub direct: HttpDirect,
    pub shared: Arc<Shared>,
}

/// Answers `req` when the direct path takes it, else hands it to `rmcp`
/// (the rest of `/mcp`: the session binding, `DELETE` handling, parse-error
/// rewriting, scope challenge, `hoist`, rmcp's service).
pub async fn take<F, Fut>(door: &Door, req: Request, rmcp: F) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    if req.method() != Method::POST
        || !door.direct.wants(req.headers())
        || !plain_post(&door.shared, req.uri(), req.headers())
    {
        return rmcp(req).await;
    }
    let (parts, body) = req.into_parts();
    let body = match collect(body, door.shared.max_body_bytes()).await {
        Ok(bytes) => bytes,
        Err(replay) => return rmcp(Request::from_parts(parts, replay)).await,
    };
    let caller = parts.extensions.get::<Arc<Caller>>().cloned();
    match door.direct.answer(&body, caller) {
        Some((status, answer)) => {
            let mut resp = Response::new(Body::from(answer));
            *resp.status_mut() = status;
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            resp
        }
        None => rmcp(Request::from_parts(parts, Body::from(body))).await,
    }
}

/// Whether rmcp's checks before it reads the body plainly pass (see the
/// module's documentation); `false` hands the request to rmcp.
fn plain_post(shared: &Shared, uri: &http::Uri, headers: &HeaderMap) -> bool {
    // rmcp's name, parsed once: a `&str` name is parsed at every lookup.
    static SESSION_ID: LazyLock<HeaderName> = LazyLock::new(|| {
        HeaderName::from_bytes(HEADER_SESSION_ID.as_bytes()).expect("a header name")
    });
    !headers.contains_key(header::ORIGIN)
        && !headers.contains_key(&*SESSION_ID)
        && headers.contains_key(header::CONTENT_LENGTH)
        && guard::check_host_and_origin(shared, uri, headers).is_ok()
        && accepts_both(headers)
        && headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.split_once(';')
                    .map_or(v, |(essence, _)| essence)
                    .trim()
                    .eq_ignore_ascii_case("application/json")
            })
}

/// Whether `Accept` lists both media types rmcp requires, in the plain form
/// whose reading leaves no doubt (no parameters, no quotes).
fn accepts_both(headers: &HeaderMap) -> bool {
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else {
            return false;
        };
        if value.contains([';', '"']) {
            return false;
        }
        for entry in value.split(',') {
            let entry = entry.trim();
            json |= entry.eq_ignore_ascii_case("application/json");
            sse |= entry.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && sse
}

/// The whole body, or, when it cannot be read whole within `cap` (an error
/// from the connection, more bytes than the cap), a body that gives rmcp
/// the same frames and then the rest, so that it refuses as it would have.
pub(super) async fn collect(mut body: Body, cap: usize) -> Result<Bytes, Body> {
    let mut frames: VecDeque<Bytes> = VecDeque::new();
    let mut total = 0usize;
    loop {
        match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            None => break,
            Some(Ok(frame)) => {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                total += data.len();
                frames.push_back(data);
                if total > cap {
                    return Err(Body::new(Replay {
                        frames,
                        error: None,
                        rest: Some(body),
                    }));
                }
            }
            Some(Err(e)) => {
                return Err(Body::new(Replay {
                    frames,
                    error: Some(e),
                    rest: None,
                }));
            }
        }
    }
    Ok(match frames.len() {
        0 => Bytes::new(),
        1 => frames.pop_front().unwrap_or_default(),
        _ => {
            let mut all = BytesMut::with_capacity(total);
            for f in frames {
                all.extend_from_slice(&f);
            }
            all.freeze()
        }
    })
}

/// A request body given back: the frames already read, then the error
/// reading stopped at, or the rest of the body.
struct Replay {
    frames: VecDeque<Bytes>,
    error: Option<axum::Error>,
    rest: Option<Body>,
}

impl http_body::Body for Replay {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if let Some(f) = self.frames.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(f))));
        }
        if let Some(e) = self.error.take() {
            return Poll::Ready(Some(Err(e)));
        }
        match &mut self.rest {
            Some(rest) => Pin::new(rest).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(header::ACCEPT, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn only_a_plain_accept_of_both_types_is_taken() {
        assert!(accepts_both(&accept(&[
            "application/json, text/event-stream"
        ])));
        assert!(accepts_both(&accept(&[
            "text/event-stream",
            "Application/JSON"
        ])));
        assert!(!accepts_both(&accept(&["application/json"])));
        // rmcp reads weights and quotes; those go to it.
        assert!(!accepts_both(&accept(&[
            "application/json;q=0, text/event-stream"
        ])));
        assert!(!accepts_both(&accept(&[
            "application/json, text/event-stream, x/\"y,z\""
        ])));
        assert!(!accepts_both(&HeaderMap::new()));
    }

    #[tokio::test]
    async fn a_body_read_past_the_cap_is_given_back_whole() {
        let body = Body::from(vec![b'x'; 100]);
        let replay = collect(body, 10).await.unwrap_err();
        let bytes = axum::body::to_bytes(replay, usize::MAX).await.unwrap();
        assert_eq!(bytes.len(), 100);
        let whole = collect(Body::from("abc"), 10).await.unwrap();
        assert_eq!(&whole[..], b"abc");
    }
}
