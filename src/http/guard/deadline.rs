//! One deadline per MCP request, covering its body, its handler and its
//! response stream, and the count of requests in flight that a graceful
//! shutdown waits for ([`deadline_and_track`]). Which routes it guards is
//! `http/door`'s business; the deadline's length and the count live in
//! [`super::Shared`].

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use bytes::Bytes;
use http::{Method, StatusCode};
use http_body::{Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use super::{Shared, plain};

/// One deadline per MCP request (POST and DELETE; a GET opens the
/// long-lived server-to-client stream of a session, which ends when the
/// session or the server does). The deadline covers reading the body,
/// running the handler, and streaming the response: a stream still open at
/// the deadline is ended there. The request counts as in flight until its
/// response body is finished or dropped.
/// `rest` is everything after it on `/mcp` (`door`).
pub(in crate::http) async fn deadline_and_track<F, Fut>(
    s: &Arc<Shared>,
    req: Request,
    rest: F,
) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    if req.method() == Method::GET {
        return rest(req).await;
    }
    let timeout = s.request_timeout;
    let deadline = Instant::now() + timeout;
    let guard = InFlight::enter(s.clone());
    let body_done = Arc::new(AtomicBool::new(false));
    let (parts, body) = req.into_parts();
    let req = Request::from_parts(
        parts,
        Body::new(Tracked {
            inner: body,
            done: body_done.clone(),
        }),
    );
    match tokio::time::timeout_at(deadline, rest(req)).await {
        Ok(resp) => {
            let (parts, body) = resp.into_parts();
            Response::from_parts(
                parts,
                Body::new(Deadline {
                    inner: body,
                    sleep: Box::pin(tokio::time::sleep_until(deadline)),
                    _guard: guard,
                }),
            )
        }
        Err(_) if !body_done.load(Ordering::SeqCst) => plain(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "Request Timeout: the request body did not arrive within {}s",
                timeout.as_secs()
            ),
        ),
        Err(_) => plain(
            StatusCode::GATEWAY_TIMEOUT,
            format!(
                "Gateway Timeout: no answer within {}s (see --request-timeout-secs)",
                timeout.as_secs()
            ),
        ),
    }
}

/// Counts one request in flight until dropped.
struct InFlight(Arc<Shared>);

impl InFlight {
    fn enter(s: Arc<Shared>) -> InFlight {
        s.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(s)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// A request body that records when it has been read to the end.
struct Tracked {
    inner: Body,
    done: Arc<AtomicBool>,
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let r = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = r {
            self.done.store(true, Ordering::SeqCst);
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that ends at the request's deadline and keeps the
/// request counted in flight until it ends.
struct Deadline {
    inner: Body,
    sleep: Pin<Box<Sleep>>,
    _guard: InFlight,
}

impl http_body::Body for Deadline {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if let Poll::Ready(r) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(r);
        }
        if self.sleep.as_mut().poll(cx).is_ready() {
            tracing::warn!("request deadline reached while streaming its response; ending it");
            return Poll::Ready(None);
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
