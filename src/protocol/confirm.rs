//! Asking the user to confirm a call before it runs, in both protocol eras.
//!
//! The catalog decides *whether* to ask (the `confirm` contract rule or a
//! YAML rule's `confirm:`); this module only puts the question on the wire
//! and reads the answer:
//!
//! - 2025-11-25 sessions: the server sends `elicitation/create` to the client
//!   while the `tools/call` is in flight and waits for the answer.
//! - 2026-07-28 requests: the server answers `resultType: "input_required"`
//!   with the question in `inputRequests` and a `requestState` sealed with an
//!   HMAC ([`RequestStates`]). The client retries the call with
//!   `inputResponses` and that `requestState`. The state is bound, through
//!   its associated data, to the tool and a digest of the arguments, and
//!   expires; a state that was altered, expired or issued for other
//!   arguments is refused with one error that does not say which.
//!
//! A client that did not declare form elicitation gets a JSON-RPC error
//! (-32021): a required confirmation is never skipped. Running the tool is
//! left to `call`.

use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, ErrorCode, InputRequest, InputRequests,
    InputRequiredResult, RequestStateCodec, SealOptions,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

/// The key of the confirmation question in `inputRequests`/`inputResponses`.
pub const CONFIRM_KEY: &str = "regent/confirm";

/// How long a sealed `requestState` stays valid.
pub const STATE_TTL: Duration = Duration::from_secs(600);

/// Seals and opens `requestState` values with the server's HMAC key.
pub struct RequestStates {
    codec: RequestStateCodec,
    ttl: Duration,
}

impl RequestStates {
    /// A codec with `key` (at least 32 bytes).
    pub fn new(key: Vec<u8>) -> Result<RequestStates, String> {
        let codec = RequestStateCodec::try_new(key).map_err(|e| e.to_string())?;
        Ok(RequestStates {
            codec,
            ttl: STATE_TTL,
        })
    }

    /// A codec with 32 random bytes from the operating system: states do
    /// not survive a restart, which only costs the client one more round.
    pub fn generated() -> Result<RequestStates, String> {
        let mut key = vec![0u8; 32];
        let mut f = std::fs::File::open("/dev/urandom")
            .map_err(|e| format!("cannot open /dev/urandom for a request-state key: {e}"))?;
        std::io::Read::read_exact(&mut f, &mut key)
            .map_err(|e| format!("cannot read a request-state key from /dev/urandom: {e}"))?;
        RequestStates::new(key)
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

    fn seal(&self, payload: &Value, bound_to: &[u8]) -> String {
        let bytes = serde_json::to_vec(payload).unwrap_or_default();
        self.codec.seal_with(
            &bytes,
            &SealOptions::new().associated_data(bound_to).ttl(self.ttl),
        )
    }

    fn open(&self, sealed: &str, bound_to: &[u8]) -> Result<Value, String> {
        let bytes = self
            .codec
            .open_with(sealed, bound_to)
            .map_err(|e| e.to_string())?;
        serde_json::from_slice(&bytes).map_err(|e| e.to_string())
    }
}

/// What the retried request carried for multi-round-trip input.
#[derive(Debug, Default)]
pub struct Retry {
    pub responses: Option<std::collections::BTreeMap<String, Value>>,
    pub state: Option<String>,
}

/// The outcome of asking.
pub enum Answer {
    /// The user accepted: run the tool.
    Accepted,
    /// The user declined or cancelled (`"decline"` or `"cancel"`).
    Refused(&'static str),
    /// 2026-07-28: answer the request with this and wait for the retry.
    InputRequired(InputRequiredResult),
}

/// What a state is bound to: the tool and the digest of its arguments.
fn binding(tool: &str, args_digest: &str) -> Vec<u8> {
    format!("regent/confirm\0{tool}\0{args_digest}").into_bytes()
}

/// The `elicitation/create` params of the confirmation question.
fn question(message: &str) -> Result<ElicitRequestParams, ErrorData> {
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": {}},
    }))
    .map_err(|e| ErrorData::internal_error(format!("cannot build the confirmation: {e}"), None))
}

/// Whether the client declared form elicitation for this request.
fn can_elicit(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// The error for a client that cannot be asked.
pub fn missing_capability(tool: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "tool {tool} needs the user's confirmation for these arguments, but the client did not declare the elicitation capability; the tool did not run"
        ),
        Some(json!({"tool": tool, "requiredCapabilities": {"elicitation": {"form": {}}}})),
    )
}

/// The one error for every unusable `requestState`.
fn bad_state(tool: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "the requestState of this call to {tool} is invalid, expired, or was issued for other arguments; the tool did not run; call again without requestState and inputResponses"
        ),
        Some(json!({"tool": tool, "reason": "invalid-request-state"})),
    )
}

/// Reads an elicitation answer.
fn action_of(tool: &str, value: &Value) -> Result<Answer, ErrorData> {
    let result: ElicitResult = serde_json::from_value(value.clone()).map_err(|e| {
        ErrorData::invalid_params(
            format!("inputResponses[{CONFIRM_KEY}] of this call to {tool} is not an elicitation result: {e}"),
            Some(json!({"tool": tool})),
        )
    })?;
    Ok(from_action(result.action))
}

/// Only an explicit accept runs the tool; anything else (including actions
/// a later protocol may add) refuses it.
fn from_action(action: ElicitationAction) -> Answer {
    match action {
        ElicitationAction::Accept => Answer::Accepted,
        ElicitationAction::Decline => Answer::Refused("decline"),
        _ => Answer::Refused("cancel"),
    }
}

/// Asks the user to confirm `message` for a call of `tool` whose arguments
/// have `args_digest`, in whichever era the request uses.
pub async fn ask(
    states: &RequestStates,
    ctx: &RequestContext<RoleServer>,
    mrtr: bool,
    retry: &Retry,
    tool: &str,
    args_digest: &str,
    message: &str,
) -> Result<Answer, ErrorData> {
    if mrtr {
        let bound = binding(tool, args_digest);
        if let Some(state) = &retry.state {
            let payload = states.open(state, &bound).map_err(|why| {
                tracing::info!(tool, why, "refused a requestState");
                bad_state(tool)
            })?;
            let asked = payload
                .get("asked")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|k| k == CONFIRM_KEY));
            let answer = retry.responses.as_ref().and_then(|r| r.get(CONFIRM_KEY));
            if let (true, Some(answer)) = (asked, answer) {
                return action_of(tool, answer);
            }
        } else if retry
            .responses
            .as_ref()
            .is_some_and(|r| r.contains_key(CONFIRM_KEY))
        {
            // An answer without the state that asked the question proves
            // nothing about the question: refuse rather than trust it.
            return Err(bad_state(tool));
        }
        if !can_elicit(ctx) {
            return Err(missing_capability(tool));
        }
        let request: InputRequest = serde_json::from_value(json!({
            "method": "elicitation/create",
            "params": serde_json::to_value(question(message)?).unwrap_or_default(),
        }))
        .map_err(|e| {
            ErrorData::internal_error(format!("cannot build the input request: {e}"), None)
        })?;
        let mut requests = InputRequests::new();
        requests.insert(CONFIRM_KEY.to_string(), request);
        let state = states.seal(&json!({"asked": [CONFIRM_KEY]}), &bound);
        return Ok(Answer::InputRequired(InputRequiredResult::new(
            Some(requests),
            Some(state),
        )));
    }

    if !can_elicit(ctx) {
        return Err(missing_capability(tool));
    }
    let params = question(message)?;
    let result = tokio::select! {
        r = ctx.peer.create_elicitation(params) => r,
        _ = ctx.ct.cancelled() => return Ok(Answer::Refused("cancel")),
    };
    match result {
        Ok(r) => Ok(from_action(r.action)),
        Err(e) => Err(ErrorData::internal_error(
            format!(
                "asking the user to confirm the call to {tool} failed: {e}; the tool did not run"
            ),
            Some(json!({"tool": tool})),
        )),
    }
}
