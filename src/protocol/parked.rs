//! 2026-07-28: a forwarded call whose upstream asks its client something
//! (`elicitation/create`, `roots/list`, `sampling/createMessage`) becomes an
//! `input_required` round of regent's own, while the upstream call stays
//! open in this process.
//!
//! A 2026-07-28 client cannot be sent requests: its questions come as the
//! answer to its `tools/call` (`resultType: "input_required"`), and it
//! retries the same call with `inputResponses` and the `requestState`. So a
//! forwarded 2026-07-28 call runs on a task of its own ([`Running`]),
//! detached from the request that started it; the request waits for the
//! call's next thing ([`ParkedCalls::wait`]): its result, which answers the
//! request, or a question the call's [`super::upstream_requests::CallAsker`]
//! decided to relay ([`Asked`]). A question parks the call here under a
//! random handle and answers the request with `input_required`: the
//! upstream's request under one key, and a `requestState` sealed by
//! [`input::seal_parked`] that names the handle (bound, as every state is,
//! to the tool and the arguments, and opened once). The retry's answer goes
//! to the upstream's pending request ([`ParkedCalls::resume`]), and the
//! retry waits for the next thing in turn: one more round, or the result.
//!
//! Bounds: at most [`MAX_PARKED`] calls are parked at once (a question past
//! it is refused to the upstream, which decides what its call does), each
//! for at most the state's lifetime (`serve --request-state-ttl`): a
//! parked call whose deadline passes is cancelled upstream, its slot freed,
//! counted (`regent_parked_calls_expired_total`) and logged. The upstream's
//! own `timeout` keeps running while a call is parked. A retry whose handle
//! is not parked here (expired, regent restarted, or the retry reached
//! another replica) is refused, and nothing runs again: the call must be
//! made again. A parked call holds its place under `--max-concurrent-calls`
//! (the upstream call is running).
//!
//! What is decided, logged and relayed is `upstream_requests`' business;
//! this module only holds calls between rounds and puts their questions on
//! the wire.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, InputRequest, InputRequests, InputRequiredResult, ProgressToken,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::input::{self, RequestStates};
use crate::caller::Caller;
use crate::metrics::Metrics;

/// The most forwarded calls parked at once, over every session.
pub const MAX_PARKED: usize = 256;

/// The key of the upstream's request in `inputRequests`/`inputResponses`:
/// one per round, as the upstream asks one at a time.
pub const UPSTREAM_KEY: &str = "regent/upstream";

/// An upstream's request, decided, logged and allowed, for the call's
/// client; the client's answer (or the error the upstream gets) goes back
/// on `answer`.
pub struct Asked {
    pub method: &'static str,
    pub params: Value,
    pub answer: oneshot::Sender<Result<Value, ErrorData>>,
}

/// A forwarded call running on a task of its own.
pub struct Running {
    /// The relayed requests of its upstream, one at a time.
    pub questions: mpsc::Receiver<Asked>,
    /// Its answer to the client, decision-log line written.
    pub done: tokio::task::JoinHandle<CallToolResponse>,
    /// Cancels the upstream call.
    pub cancel: CancellationToken,
    /// Moves where its progress and log messages go to a retry's request
    /// (its peer and progress token).
    pub retarget: Box<dyn Fn(Peer<RoleServer>, Option<ProgressToken>) + Send + Sync>,
}

/// Who may continue a parked call: the caller that started it (the tool
/// and the arguments are bound by the state).
type Owner = Option<(String, String)>;

fn owner(caller: Option<&Caller>) -> Owner {
    caller.map(|c| (c.issuer.clone(), c.subject.clone()))
}

struct Parked {
    running: Running,
    asked: Asked,
    owner: Owner,
    tool: String,
    /// Frees the slot at the deadline; aborted when the call is resumed.
    timer: tokio::task::AbortHandle,
}

/// The forwarded calls parked between rounds, shared by every session.
pub struct ParkedCalls {
    calls: Mutex<HashMap<String, Parked>>,
    max: usize,
    metrics: Arc<Metrics>,
}

/// What a round's state is sealed with and bound to.
pub struct Seal<'a> {
    pub states: &'a RequestStates,
    pub tool: &'a str,
    pub digest: &'a str,
    pub caller: Option<&'a Caller>,
}

/// The request a round answers.
pub struct Round<'a> {
    pub seal: Seal<'a>,
    pub ctx: &'a RequestContext<RoleServer>,
}

enum Next {
    Asked(Asked),
    Done(Result<CallToolResponse, tokio::task::JoinError>),
    Cancelled,
}

impl ParkedCalls {
    pub fn new(max: usize, metrics: Arc<Metrics>) -> Arc<ParkedCalls> {
        Arc::new(ParkedCalls {
            calls: Mutex::new(HashMap::new()),
            max,
            metrics,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Parked>> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for `running`'s next thing: its result answers the request; a
    /// question parks it and answers `input_required`. The client gone
    /// (the request cancelled) cancels the call upstream.
    pub async fn wait(
        self: &Arc<Self>,
        mut running: Running,
        round: &Round<'_>,
    ) -> Result<CallToolResponse, ErrorData> {
        loop {
            let next = tokio::select! {
                Some(asked) = running.questions.recv() => Next::Asked(asked),
                done = &mut running.done => Next::Done(done),
                _ = round.ctx.ct.cancelled() => Next::Cancelled,
            };
            match next {
                Next::Asked(asked) => match self.park(running, asked, &round.seal) {
                    Ok(ir) => return Ok(ir.into()),
                    Err(r) => running = r,
                },
                Next::Done(done) => {
                    return done.map_err(|e| {
                        ErrorData::internal_error(
                            format!("the forwarded call of {} failed: {e}", round.seal.tool),
                            None,
                        )
                    });
                }
                Next::Cancelled => {
                    running.cancel.cancel();
                    return Err(ErrorData::internal_error(
                        format!(
                            "the call of {} was cancelled; it was cancelled upstream",
                            round.seal.tool
                        ),
                        None,
                    ));
                }
            }
        }
    }

    /// Parks `running` with `asked` pending and returns the round's
    /// `input_required`; when it cannot be parked, the upstream gets the
    /// error and the call is given back to go on.
    fn park(
        self: &Arc<Self>,
        running: Running,
        asked: Asked,
        round: &Seal<'_>,
    ) -> Result<InputRequiredResult, Running> {
        let refuse = |asked: Asked, why: String| {
            let _ = asked.answer.send(Err(ErrorData::internal_error(why, None)));
        };
        // Roots take no params; the others are the upstream's, as sent.
        let request = if asked.method == "roots/list" {
            json!({"method": asked.method})
        } else {
            json!({"method": asked.method, "params": asked.params})
        };
        let request: InputRequest = match serde_json::from_value(request) {
            Ok(r) => r,
            Err(e) => {
                let why = format!(
                    "regent cannot put `{}` to its 2026-07-28 client: its params are malformed ({e})",
                    asked.method
                );
                refuse(asked, why);
                return Err(running);
            }
        };
        let handle = uuid::Uuid::new_v4().simple().to_string();
        let ttl = round.states.ttl();
        let mut calls = self.lock();
        if calls.len() >= self.max {
            drop(calls);
            tracing::warn!(
                tool = round.tool,
                max = self.max,
                "a forwarded call's question was refused: the parked calls are full"
            );
            let why = format!(
                "regent cannot put `{}` to its client now: it already holds its limit of {} calls waiting for their clients' answers; try again later",
                asked.method, self.max
            );
            refuse(asked, why);
            return Err(running);
        }
        let timer = {
            let this = Arc::downgrade(self);
            let handle = handle.clone();
            tokio::spawn(async move {
                tokio::time::sleep(ttl).await;
                if let Some(this) = this.upgrade() {
                    this.expire(&handle, ttl);
                }
            })
            .abort_handle()
        };
        calls.insert(
            handle.clone(),
            Parked {
                running,
                asked,
                owner: owner(round.caller),
                tool: round.tool.to_string(),
                timer,
            },
        );
        drop(calls);
        self.metrics.calls_parked.inc();
        let state = input::seal_parked(
            round.states,
            &handle,
            UPSTREAM_KEY,
            round.tool,
            round.digest,
        );
        let mut requests = InputRequests::new();
        requests.insert(UPSTREAM_KEY.to_string(), request);
        Ok(InputRequiredResult::new(Some(requests), Some(state)))
    }

    fn take(&self, handle: &str) -> Option<Parked> {
        let parked = self.lock().remove(handle)?;
        parked.timer.abort();
        self.metrics.calls_parked.dec();
        Some(parked)
    }

    /// The deadline of `handle` passed: cancelled upstream, its slot freed.
    fn expire(&self, handle: &str, ttl: std::time::Duration) {
        let Some(parked) = self.lock().remove(handle) else {
            return;
        };
        self.metrics.calls_parked.dec();
        self.metrics.parked_expired.inc();
        let waited = crate::timestamp::human_duration(ttl);
        tracing::info!(
            tool = %parked.tool,
            "a parked call expired: its client did not retry within {waited}; cancelled upstream"
        );
        let _ = parked.asked.answer.send(Err(ErrorData::internal_error(
            format!("the client did not answer within {waited}; the call was cancelled"),
            None,
        )));
        parked.running.cancel.cancel();
    }

    /// A retry of the call parked under `handle`: its answer under `key`
    /// goes to the upstream's pending request, then the retry waits for the
    /// call's next thing. A handle not parked here refuses the retry, and
    /// nothing runs again.
    pub async fn resume(
        self: &Arc<Self>,
        handle: &str,
        key: &str,
        responses: Option<&std::collections::BTreeMap<String, Value>>,
        round: &Round<'_>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = round.seal.tool;
        let Some(parked) = self.take(handle) else {
            return Err(ErrorData::invalid_params(
                format!(
                    "the call of {tool} this requestState continues is not waiting on this server: it expired, regent restarted, or the retry reached another server than the one that asked (a retry must reach the same replica); nothing ran again; call again without requestState and inputResponses"
                ),
                Some(json!({"tool": tool, "reason": "call-not-parked"})),
            ));
        };
        if parked.owner != owner(round.seal.caller) {
            let _ = parked.asked.answer.send(Err(ErrorData::internal_error(
                "the call was cancelled: another caller tried to continue it".to_string(),
                None,
            )));
            parked.running.cancel.cancel();
            return Err(ErrorData::invalid_params(
                format!(
                    "the call of {tool} this requestState continues was started by another caller; it was cancelled; call again without requestState and inputResponses"
                ),
                Some(json!({"tool": tool, "reason": "invalid-request-state"})),
            ));
        }
        let Parked { running, asked, .. } = parked;
        (running.retarget)(round.ctx.peer.clone(), round.ctx.meta.get_progress_token());
        match responses.and_then(|r| r.get(key)) {
            // Not answered: asked again (SEP-2322 asks servers to
            // re-request rather than fail).
            None => match self.park(running, asked, &round.seal) {
                Ok(ir) => Ok(ir.into()),
                Err(running) => self.wait(running, round).await,
            },
            Some(answer) => {
                // The upstream's request reads the answer as its result
                // type (`upstream::Listener`): a malformed one is its error.
                let _ = asked.answer.send(Ok(answer.clone()));
                self.wait(running, round).await
            }
        }
    }
}

/// Where a 2026-07-28 call's relayed requests go, and what its client
/// declared (per request on 2026-07-28; the first round's is kept).
pub struct Rounds {
    pub tx: mpsc::Sender<Asked>,
    pub caps: rmcp::model::ClientCapabilities,
}

impl Rounds {
    /// Hands `method` to the call's waiting request and waits for the
    /// client's answer, or the call's end (`ended`).
    pub async fn ask(
        &self,
        method: &'static str,
        params: Value,
        ended: &CancellationToken,
    ) -> Result<Value, ErrorData> {
        let (answer, rx) = oneshot::channel();
        let gone = || {
            ErrorData::internal_error(
                format!("the forwarded call ended before its client answered `{method}`"),
                None,
            )
        };
        let asked = Asked {
            method,
            params,
            answer,
        };
        // One question at a time: a second waits here for its round.
        tokio::select! {
            sent = self.tx.send(asked) => sent.map_err(|_| gone())?,
            _ = ended.cancelled() => return Err(gone()),
        }
        tokio::select! {
            r = rx => r.unwrap_or_else(|_| Err(gone())),
            _ = ended.cancelled() => Err(gone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running() -> Running {
        let (_tx, questions) = mpsc::channel(1);
        Running {
            questions,
            done: tokio::spawn(async { rmcp::model::CallToolResult::success(vec![]).into() }),
            cancel: CancellationToken::new(),
            retarget: Box::new(|_, _| {}),
        }
    }

    fn asked() -> (Asked, oneshot::Receiver<Result<Value, ErrorData>>) {
        let (answer, rx) = oneshot::channel();
        let params = json!({"mode": "form", "message": "m",
            "requestedSchema": {"type": "object", "properties": {}}});
        let asked = Asked {
            method: "elicitation/create",
            params,
            answer,
        };
        (asked, rx)
    }

    #[tokio::test]
    async fn past_the_bound_the_upstream_is_refused_and_a_deadline_frees_the_slot() {
        let metrics = Arc::new(Metrics::new());
        let parked = ParkedCalls::new(1, metrics.clone());
        let states = RequestStates::new(vec![7; 32]).unwrap();
        let seal = Seal {
            states: &states,
            tool: "ask",
            digest: "d",
            caller: None,
        };
        let (a, mut a_answer) = asked();
        let first = running();
        let cancelled = first.cancel.clone();
        let ir = parked.park(first, a, &seal).ok().expect("parked");
        let ir = serde_json::to_value(&ir).unwrap();
        assert_eq!(
            ir["inputRequests"][UPSTREAM_KEY]["method"],
            "elicitation/create"
        );
        assert_eq!(metrics.calls_parked.get(), 1);
        // Full: the upstream is told, the call goes on.
        let (b, b_answer) = asked();
        assert!(parked.park(running(), b, &seal).is_err());
        let e = b_answer.await.unwrap().unwrap_err();
        assert!(
            e.message.contains("its limit of 1 calls waiting"),
            "{}",
            e.message
        );
        assert!(a_answer.try_recv().is_err(), "the parked one still waits");
        // Its deadline: cancelled upstream, the upstream's request answered
        // with an error, the slot freed and counted.
        let handle = parked.lock().keys().next().cloned().unwrap();
        parked.expire(&handle, std::time::Duration::from_secs(1));
        assert!(cancelled.is_cancelled());
        let e = a_answer.await.unwrap().unwrap_err();
        assert!(
            e.message.contains("did not answer within 1s"),
            "{}",
            e.message
        );
        assert_eq!(metrics.calls_parked.get(), 0);
        assert_eq!(metrics.parked_expired.get(), 1);
        let (c, _c) = asked();
        assert!(parked.park(running(), c, &seal).is_ok(), "room again");
    }
}
