//! Forwarding one decided `tools/call` to an upstream: [`Connected::call`]
//! sends it on the connection [`super::Upstreams::connected`] found, with the
//! upstream's `timeout` and cancellation, relays what the upstream says
//! during the call to the client ([`RelayTo`]) before the result, and cuts a
//! result past the upstream's `max_output` ([`Forwarded::capped`]).
//!
//! Whether the call is allowed is decided before it gets here (`protocol`);
//! starting and connecting to upstreams is `connect`'s, keeping them up
//! `supervise`'s, taking notifications off the transport `relay`'s.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult};
use serde_json::{Map, Value};

use super::{CallError, Conn, error_chain, oversize, relay};
use crate::source::upstream::UpstreamRef;

/// An upstream's connection as [`super::Upstreams::connected`] found it for one
/// call: what [`Connected::call`] sends the call on.
pub struct Connected {
    pub(super) conn: Arc<Conn>,
    /// The upstream's `timeout`.
    pub(super) limit: Duration,
    pub(super) max_output: usize,
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
