//! Questions for the client during a call, in both protocol eras: the
//! user's answers (elicitation), the client's roots, and the confirmation a
//! policy asks for.
//!
//! What to ask is decided elsewhere (`fill` for parameter resolvers, the
//! catalog's `confirm` rule); this module only puts neutral
//! [`Question`]s on the wire and turns the answers into [`Reply`]s:
//!
//! - 2025-11-25 sessions: the server sends `elicitation/create` and
//!   `roots/list` to the client while the `tools/call` is in flight and
//!   waits for each answer ([`ask_live`]).
//! - 2026-07-28 requests: the server answers `resultType: "input_required"`
//!   with every question of the round in `inputRequests` and a
//!   `requestState` sealed with an HMAC ([`RequestStates`]). The state
//!   carries the replies of earlier rounds, so each question is asked once;
//!   it is bound (as associated data) to the tool and a digest of the
//!   arguments, expires, and is accepted once: a state that was altered,
//!   expired, issued for other arguments, or already used is refused with
//!   one error that does not say which.
//!
//! A client that did not declare the capability a question needs gets a
//! JSON-RPC error (-32021): a required answer is never skipped. Running the
//! tool is left to `call`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::ErrorData;
#[allow(deprecated)]
use rmcp::model::ListRootsResult;
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, ErrorCode, InputRequest, InputRequests,
    InputRequiredResult, RequestStateCodec, SealOptions,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};

use super::spent::{SpendError, Spent};
use crate::fill::{Action, Question, Replies, Reply};

/// The key of the confirmation question in `inputRequests`/`inputResponses`.
pub const CONFIRM_KEY: &str = "regent/confirm";

/// How long a sealed `requestState` stays valid.
pub const STATE_TTL: Duration = Duration::from_secs(600);

/// The confirmation question: a message and nothing to fill in.
pub fn confirmation(message: &str) -> Question {
    Question::Elicit {
        key: CONFIRM_KEY.to_string(),
        message: message.to_string(),
        schema: json!({"type": "object", "properties": {}}),
    }
}

/// Seals and opens `requestState` values with the server's HMAC key, and
/// remembers which states were used so that none is accepted twice (in this
/// process, or in a store shared by the replicas: `spent`).
pub struct RequestStates {
    codec: RequestStateCodec,
    ttl: Duration,
    spent: Spent,
}

/// Why a state did not open.
enum Refused {
    /// Altered, expired, bound to other arguments, or spent: one answer.
    Bad(String),
    /// The shared store of spent states did not answer: nothing can be
    /// known about the state, so the retry is refused (fail closed).
    Store(String),
}

impl RequestStates {
    /// A codec with `key` (at least 32 bytes).
    pub fn new(key: Vec<u8>) -> Result<RequestStates, String> {
        let codec = RequestStateCodec::try_new(key).map_err(|e| e.to_string())?;
        Ok(RequestStates {
            codec,
            ttl: STATE_TTL,
            spent: Spent::memory(),
        })
    }

    /// A codec with 32 random bytes from the operating system: states do
    /// not survive a restart, which only costs the client one more round.
    pub fn generated() -> Result<RequestStates, String> {
        RequestStates::new(random_bytes(32)?)
    }

    /// Reads a key file: its bytes, with one trailing newline removed.
    pub fn from_file(path: &std::path::Path) -> Result<RequestStates, String> {
        let mut key = std::fs::read(path).map_err(|e| {
            format!(
                "cannot read the request-state key file {}: {}",
                path.display(),
                crate::source::files::lower_io(&e)
            )
        })?;
        if key.last() == Some(&b'\n') {
            key.pop();
        }
        RequestStates::new(key).map_err(|e| {
            format!(
                "request-state key file {}: {e}; write at least 32 random bytes to it, for example with `head -c 32 /dev/urandom > {}`",
                path.display(),
                path.display()
            )
        })
    }

    /// Sets the lifetime of new states (tests use a short one).
    pub fn with_ttl(mut self, ttl: Duration) -> RequestStates {
        self.ttl = ttl;
        self
    }

    /// Remembers spent states in `spent` (a store shared by the replicas)
    /// instead of this process.
    pub fn with_spent(mut self, spent: Spent) -> RequestStates {
        self.spent = spent;
        self
    }

    /// How long a state sealed now stays valid.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    fn seal(&self, payload: &Value, bound_to: &[u8]) -> String {
        // The expiry, in unix milliseconds, beside the codec's own: the
        // codec checks it but does not return it, and the shared store keeps
        // a spent nonce exactly as long as its state could still open.
        let mut payload = payload.clone();
        if let Some(m) = payload.as_object_mut() {
            m.insert("exp".into(), json!(unix_ms() + duration_ms(self.ttl)));
        }
        let bytes = serde_json::to_vec(&payload).unwrap_or_default();
        self.codec.seal_with(
            &bytes,
            &SealOptions::new().associated_data(bound_to).ttl(self.ttl),
        )
    }

    /// Opens `sealed` and spends it: the same state opens once. Verifying
    /// is synchronous; only spending may wait (on the shared store).
    async fn open(&self, sealed: &str, bound_to: &[u8]) -> Result<Value, Refused> {
        let bytes = self
            .codec
            .open_with(sealed, bound_to)
            .map_err(|e| Refused::Bad(e.to_string()))?;
        let payload: Value =
            serde_json::from_slice(&bytes).map_err(|e| Refused::Bad(e.to_string()))?;
        let nonce = payload
            .get("nonce")
            .and_then(Value::as_str)
            .ok_or_else(|| Refused::Bad("the state has no nonce".into()))?;
        // What is left of the state's life (a state sealed before `exp`
        // was added: the whole TTL, which only keeps the nonce longer).
        let left = match payload.get("exp").and_then(Value::as_u64) {
            Some(exp) => Duration::from_millis(exp.saturating_sub(unix_ms()).max(1)),
            None => self.ttl,
        };
        match self.spent.spend(nonce, left).await {
            Ok(()) => Ok(payload),
            Err(SpendError::Used) => Err(Refused::Bad("the state was already used".into())),
            Err(SpendError::Unavailable(why)) => Err(Refused::Store(why)),
        }
    }
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(duration_ms)
        .unwrap_or(0)
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn random_bytes(n: usize) -> Result<Vec<u8>, String> {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes)
        .map_err(|e| format!("cannot get random bytes from the operating system: {e}"))?;
    Ok(bytes)
}

/// 128 random bits as 32 hex digits (a v4 UUID's simple form: its six fixed
/// version and variant bits leave 122 random ones, ample for single use).
fn nonce() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// What the retried request carried for multi-round-trip input.
#[derive(Debug, Default)]
pub struct Retry {
    pub responses: Option<std::collections::BTreeMap<String, Value>>,
    pub state: Option<String>,
}

/// What a state is bound to: the tool and the digest of its arguments.
fn binding(tool: &str, args_digest: &str) -> Vec<u8> {
    format!("regent/input\0{tool}\0{args_digest}").into_bytes()
}

/// The one error for every unusable `requestState`.
fn bad_state(tool: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "the requestState of this call to {tool} is invalid, expired, already used, or was issued for other arguments; the tool did not run; call again without requestState and inputResponses"
        ),
        Some(json!({"tool": tool, "reason": "invalid-request-state"})),
    )
}

/// The error for a retry whose state could not be spent because the shared
/// store of spent states did not answer.
fn store_unavailable(tool: &str) -> ErrorData {
    ErrorData::internal_error(
        format!(
            "the single-use store of requestStates (--request-state-store) cannot be reached, so this retry of {tool} was refused and nothing ran; try again when the store is back"
        ),
        Some(json!({"tool": tool, "reason": "state-store-unavailable"})),
    )
}

/// A refused state as the client sees it.
fn refused(tool: &str, r: Refused) -> ErrorData {
    match r {
        Refused::Bad(why) => {
            tracing::info!(tool, why, "refused a requestState");
            bad_state(tool)
        }
        Refused::Store(why) => {
            tracing::warn!(
                tool,
                why,
                "refused a requestState: the store is unavailable"
            );
            store_unavailable(tool)
        }
    }
}

/// What a retry's `requestState` continues.
#[derive(Debug)]
pub enum Opened {
    /// A call regent asks questions of itself (a resolver, a confirmation):
    /// the replies so far, the confirmation message the state asked, and
    /// the numbers the earlier rounds' requests spelled by hand, as their
    /// texts (`None`: a state that kept none, whose replies' numbers are
    /// unseen, [`unseen_numbers`]).
    Replies(Replies, Option<String>, Option<Vec<String>>),
    /// A forwarded call waiting in this process for its client's answer to
    /// the upstream's request asked under `key` (see `protocol/parked`).
    Parked { handle: String, key: String },
}

/// 2026-07-28: the state for a forwarded call parked under `handle`, whose
/// upstream's request is asked under `key`; bound to the tool and the
/// arguments as every state is, and opened once.
pub fn seal_parked(
    states: &RequestStates,
    handle: &str,
    key: &str,
    tool: &str,
    args_digest: &str,
) -> String {
    let payload = json!({"parked": handle, "key": key, "nonce": nonce()});
    states.seal(&payload, &binding(tool, args_digest))
}

/// 2026-07-28: what a retry's state continues ([`open`]), or a parked
/// call's handle.
pub async fn open_any(
    states: &RequestStates,
    retry: &Retry,
    tool: &str,
    args_digest: &str,
) -> Result<Opened, ErrorData> {
    let Some(state) = &retry.state else {
        let (replies, confirm) = open(states, retry, tool, args_digest).await?;
        return Ok(Opened::Replies(replies, confirm, None));
    };
    let payload = states
        .open(state, &binding(tool, args_digest))
        .await
        .map_err(|r| refused(tool, r))?;
    if let Some(handle) = payload.get("parked") {
        let (Some(handle), Some(key)) = (handle.as_str(), payload["key"].as_str()) else {
            return Err(bad_state(tool));
        };
        return Ok(Opened::Parked {
            handle: handle.to_string(),
            key: key.to_string(),
        });
    }
    let (replies, confirm) = replies_of(&payload, retry, tool)?;
    Ok(Opened::Replies(replies, confirm, sealed_numbers(&payload)))
}

/// The numbers spelled by hand a state sealed ([`input_required`]), as
/// their texts; `None` when it kept none (a state sealed before regent
/// kept them, or after a round whose numbers were unseen).
fn sealed_numbers(payload: &Value) -> Option<Vec<String>> {
    let texts = payload.get("spelled")?.as_array()?;
    texts
        .iter()
        .map(|t| t.as_str().map(str::to_string))
        .collect()
}

/// 2026-07-28: the replies a retry carries: those of earlier rounds, sealed
/// in its state, and its `inputResponses` to the questions that state asked.
/// Answers to questions that were not asked are ignored; answers to
/// regent's questions without a state prove nothing and are refused.
///
/// Beside the replies: the confirmation message the state asked, if it
/// asked one, so that an answer counts only for the question the user saw
/// (the policy may have changed between the rounds).
pub async fn open(
    states: &RequestStates,
    retry: &Retry,
    tool: &str,
    args_digest: &str,
) -> Result<(Replies, Option<String>), ErrorData> {
    let Some(state) = &retry.state else {
        // An answer to one of regent's questions without the state that
        // asked it proves nothing: refuse it. Answers under other keys are
        // ignored, and the questions are asked (SEP-2322 asks servers to
        // re-request rather than fail).
        if retry
            .responses
            .as_ref()
            .is_some_and(|r| r.keys().any(|k| k.starts_with("regent/")))
        {
            return Err(bad_state(tool));
        }
        return Ok((Replies::new(), None));
    };
    let payload = states
        .open(state, &binding(tool, args_digest))
        .await
        .map_err(|r| refused(tool, r))?;
    // A parked call's state continues no questions of regent's own.
    if payload.get("parked").is_some() {
        return Err(bad_state(tool));
    }
    replies_of(&payload, retry, tool)
}

/// The replies an opened state and the retry's `inputResponses` make.
fn replies_of(
    payload: &Value,
    retry: &Retry,
    tool: &str,
) -> Result<(Replies, Option<String>), ErrorData> {
    let mut replies: Replies = payload
        .get("replies")
        .cloned()
        .map(serde_json::from_value)
        .transpose()
        .map_err(|_| bad_state(tool))?
        .unwrap_or_default();
    let asked = payload.get("asked").and_then(Value::as_object);
    for (key, kind) in asked.into_iter().flatten() {
        let Some(answer) = retry.responses.as_ref().and_then(|r| r.get(key)) else {
            continue;
        };
        let reply = match kind.as_str() {
            Some("roots") => roots_reply(tool, key, answer)?,
            _ => elicit_reply(tool, key, answer)?,
        };
        replies.insert(key.clone(), reply);
    }
    let confirm = payload
        .get("confirm")
        .and_then(Value::as_str)
        .map(str::to_string);
    Ok((replies, confirm))
}

fn elicit_reply(tool: &str, key: &str, answer: &Value) -> Result<Reply, ErrorData> {
    let result: ElicitResult = serde_json::from_value(answer.clone()).map_err(|e| {
        ErrorData::invalid_params(
            format!(
                "inputResponses[{key}] of this call to {tool} is not an elicitation result: {e}"
            ),
            Some(json!({"tool": tool, "key": key})),
        )
    })?;
    Ok(from_elicit(result))
}

// Roots are deprecated in rmcp 3.9.0 (SEP-2577) but still part of both
// protocol eras regent serves; the issue asks for them explicitly.
#[allow(deprecated)]
fn roots_reply(tool: &str, key: &str, answer: &Value) -> Result<Reply, ErrorData> {
    let result: ListRootsResult = serde_json::from_value(answer.clone()).map_err(|e| {
        ErrorData::invalid_params(
            format!("inputResponses[{key}] of this call to {tool} is not a roots list: {e}"),
            Some(json!({"tool": tool, "key": key})),
        )
    })?;
    Ok(Reply::Roots {
        uris: result.roots.into_iter().map(|r| r.uri).collect(),
    })
}

/// The numbers a call's evaluations must see once `replies` are among its
/// arguments (`policy::spelled`): `spelled`, the request's, joined with the
/// numbers of the replies' content, whose text regent never saw (a
/// 2025-11-25 reply is parsed by rmcp, which keeps no text; an earlier
/// round's, carried in a sealed state that kept no texts, holds regent's
/// own text of it).
/// Each such number other than a plain integer refuses where any spelling
/// of its value would (`Spelled::with_unseen`). regent's transports do
/// read a reply's text (a stdio line, an HTTP POST body), but rmcp 3.9
/// gives it nowhere to go: its `JsonRpcResponse` has no `extensions`
/// (a request's do, which is how a request's numbers reach its handler)
/// and `Peer::create_elicitation` returns the typed `ElicitResult` only.
/// Upstream, an `extensions` field on responses (`#[serde(skip)]`, as on
/// requests) handed back with the result (a `send_request` variant that
/// returns it) would let the transport attach what its scan found.
pub fn unseen_numbers<'a>(
    spelled: Option<&std::sync::Arc<crate::policy::spelled::Spelled>>,
    replies: impl IntoIterator<Item = &'a Reply>,
    whose: &str,
) -> Option<std::sync::Arc<crate::policy::spelled::Spelled>> {
    let contents = replies.into_iter().filter_map(|r| match r {
        Reply::Elicit {
            content: Some(c), ..
        } => Some(c),
        _ => None,
    });
    crate::policy::spelled::Spelled::with_unseen(spelled, contents, whose)
}

/// Only an explicit accept counts as one; anything else (including actions
/// a later protocol may add) is a refusal.
fn from_elicit(result: ElicitResult) -> Reply {
    let action = match result.action {
        ElicitationAction::Accept => Action::Accept,
        ElicitationAction::Decline => Action::Decline,
        _ => Action::Cancel,
    };
    Reply::Elicit {
        action,
        content: result.content,
    }
}

/// Whether the client declared form elicitation for this request.
fn can_elicit(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

fn can_list_roots(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.client_capabilities().and_then(|c| c.roots).is_some()
}

/// The error for a client that cannot be asked `q`, if it cannot.
fn check_capability(
    ctx: &RequestContext<RoleServer>,
    tool: &str,
    q: &Question,
) -> Result<(), ErrorData> {
    let (ok, capability, what, required) = match q {
        Question::Elicit { key, .. } if key == CONFIRM_KEY => (
            can_elicit(ctx),
            "elicitation",
            "the user's confirmation for these arguments",
            json!({"elicitation": {"form": {}}}),
        ),
        Question::Elicit { .. } => (
            can_elicit(ctx),
            "elicitation",
            "an answer from the user",
            json!({"elicitation": {"form": {}}}),
        ),
        Question::Roots { .. } => (
            can_list_roots(ctx),
            "roots",
            "the client's roots",
            json!({"roots": {}}),
        ),
    };
    if ok {
        return Ok(());
    }
    Err(ErrorData::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "tool {tool} needs {what}, but the client did not declare the {capability} capability; the tool did not run"
        ),
        Some(json!({"tool": tool, "requiredCapabilities": required})),
    ))
}

fn elicit_params(message: &str, schema: &Value) -> Result<ElicitRequestParams, ErrorData> {
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": schema,
    }))
    .map_err(|e| ErrorData::internal_error(format!("cannot build the question: {e}"), None))
}

/// 2026-07-28: the `input_required` answer asking `questions`, with a state
/// that carries `replies` (everything answered so far) to the retry.
///
/// The state keeps the texts of the numbers spelled by hand so far
/// (`numbers`: this request's, whose `inputResponses` the transport
/// scanned, and earlier rounds'), since the replies it carries are written
/// in regent's own text: the next round sees them as spelled. When one of
/// them was unseen (no text), none is kept, and the next round takes
/// every number of the carried replies as unseen.
#[allow(clippy::too_many_arguments)]
pub fn input_required(
    states: &RequestStates,
    ctx: &RequestContext<RoleServer>,
    questions: &[Question],
    replies: &Replies,
    tool: &str,
    args_digest: &str,
    numbers: Option<&std::sync::Arc<crate::policy::spelled::Spelled>>,
) -> Result<InputRequiredResult, ErrorData> {
    let mut requests = InputRequests::new();
    let mut asked = Map::new();
    let mut confirm = None;
    for q in questions {
        if let Question::Elicit { key, message, .. } = q
            && key == CONFIRM_KEY
        {
            confirm = Some(message.clone());
        }
        check_capability(ctx, tool, q)?;
        let (request, kind) = match q {
            Question::Elicit {
                message, schema, ..
            } => (
                json!({
                    "method": "elicitation/create",
                    "params": serde_json::to_value(elicit_params(message, schema)?).unwrap_or_default(),
                }),
                "elicit",
            ),
            Question::Roots { .. } => (json!({"method": "roots/list"}), "roots"),
        };
        let request: InputRequest = serde_json::from_value(request).map_err(|e| {
            ErrorData::internal_error(format!("cannot build the input request: {e}"), None)
        })?;
        requests.insert(q.key().to_string(), request);
        asked.insert(q.key().to_string(), json!(kind));
    }
    let mut payload = json!({
        "asked": asked,
        "replies": serde_json::to_value(replies).unwrap_or_default(),
        "nonce": nonce(),
    });
    if let Some(message) = confirm {
        payload["confirm"] = json!(message);
    }
    let texts = numbers.map_or_else(Vec::new, |n| n.texts());
    if texts
        .iter()
        .all(|t| crate::policy::spelled::is_json_number(t))
    {
        payload["spelled"] = json!(texts);
    }
    let state = states.seal(&payload, &binding(tool, args_digest));
    Ok(InputRequiredResult::new(Some(requests), Some(state)))
}

#[allow(deprecated)]
/// 2025-11-25: asks each question now, in order, and returns the replies.
/// Cancelling the call while waiting answers the open question with cancel.
pub async fn ask_live(
    ctx: &RequestContext<RoleServer>,
    questions: &[Question],
    tool: &str,
) -> Result<Vec<(String, Reply)>, ErrorData> {
    let mut out = Vec::new();
    for q in questions {
        check_capability(ctx, tool, q)?;
        let failed = |e: rmcp::service::ServiceError| {
            ErrorData::internal_error(
                format!("asking the client for input to {tool} failed: {e}; the tool did not run"),
                Some(json!({"tool": tool})),
            )
        };
        let reply = match q {
            Question::Elicit {
                message, schema, ..
            } => {
                let params = elicit_params(message, schema)?;
                tokio::select! {
                    r = ctx.peer.create_elicitation(params) => from_elicit(r.map_err(failed)?),
                    _ = ctx.ct.cancelled() => Reply::Elicit { action: Action::Cancel, content: None },
                }
            }
            Question::Roots { .. } => {
                tokio::select! {
                    r = ctx.peer.list_roots() => Reply::Roots {
                        uris: r.map_err(failed)?.roots.into_iter().map(|r| r.uri).collect(),
                    },
                    _ = ctx.ct.cancelled() => return Err(ErrorData::internal_error(
                        format!("the call to {tool} was cancelled while waiting for the client's roots"),
                        Some(json!({"tool": tool})),
                    )),
                }
            }
        };
        out.push((q.key().to_string(), reply));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn states() -> RequestStates {
        RequestStates::new(vec![7; 32]).unwrap()
    }

    fn retry(state: &str) -> Retry {
        Retry {
            responses: None,
            state: Some(state.to_string()),
        }
    }

    #[tokio::test]
    async fn a_parked_calls_state_names_its_handle_once_and_only_for_its_arguments() {
        let states = states();
        let sealed = seal_parked(&states, "h1", "regent/upstream", "ask", "d1");
        // Bound to the tool and the arguments' digest.
        assert!(
            open_any(&states, &retry(&sealed), "ask", "d2")
                .await
                .is_err()
        );
        assert!(
            open_any(&states, &retry(&sealed), "other", "d1")
                .await
                .is_err()
        );
        match open_any(&states, &retry(&sealed), "ask", "d1")
            .await
            .unwrap()
        {
            Opened::Parked { handle, key } => {
                assert_eq!((handle.as_str(), key.as_str()), ("h1", "regent/upstream"))
            }
            other => panic!("{other:?}"),
        }
        // Opened once.
        let e = open_any(&states, &retry(&sealed), "ask", "d1")
            .await
            .unwrap_err();
        assert_eq!(e.data.unwrap()["reason"], "invalid-request-state");
        // Never taken for replies to regent's own questions.
        let sealed = seal_parked(&states, "h2", "regent/upstream", "ask", "d1");
        assert!(open(&states, &retry(&sealed), "ask", "d1").await.is_err());
    }

    #[test]
    fn a_replys_numbers_but_plain_integers_refuse_as_any_spelling_would() {
        use crate::policy::spelled;
        let reply = |content: Value| Reply::Elicit {
            action: Action::Accept,
            content: Some(content),
        };
        let n = |text: &str| regorus::Value::from_json_str(text).unwrap();
        // A plain integer's text is its digits: nothing to refuse.
        assert!(unseen_numbers(None, [&reply(json!({"a": 7, "b": [-3]}))], "a reply").is_none());
        let replies = [reply(json!({"a": 2.0, "b": {"c": [1.5, 0.1]}}))];
        let numbers = unseen_numbers(None, &replies, "an elicitation reply");
        assert!(numbers.is_some());
        spelled::with(numbers.as_ref(), || {
            // Written: OPA writes the text (`2E0`, `1.50`), regent `2.0`.
            let why = spelled::check("json.marshal", &[n("2.0")])
                .unwrap_err()
                .to_string();
            assert!(
                why.contains(
                    "an elicitation reply spelled the number 2.0 (regent cannot see its text"
                ),
                "{why}"
            );
            assert!(spelled::check("json.marshal", &[n("1.5")]).is_err());
            assert!(spelled::check("sprintf", &[n("\"%v\""), n("[1.5]")]).is_err());
            // Read as an integer, or an index: `2E0` is none to OPA.
            assert!(spelled::check("substring", &[n("\"abcd\""), n("2.0"), n("1")]).is_err());
            assert!(spelled::index_refusal(&n("2.0")).is_some());
            // Compared with an equal double: `0.10000000000000000001` is not 0.1 to OPA.
            assert!(spelled::compare_refusal("==", &n("0.1"), &n("0.1")).is_some());
            assert!(spelled::compare_refusal("<", &n("0.1"), &n("0.2")).is_none());
            // Other numbers are untouched.
            assert!(spelled::check("json.marshal", &[n("3.25")]).is_ok());
        });
        // Joined to the request's own.
        let request = spelled::scan(br#"{"n": 1E2}"#);
        let joined = unseen_numbers(request.as_ref(), &replies, "an elicitation reply").unwrap();
        assert_eq!(joined.texts()[0], "1E2");
        assert_eq!(joined.text(), request.unwrap().text());
    }
}
