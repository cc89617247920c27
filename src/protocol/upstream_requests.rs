//! An upstream's requests to the client during a forwarded call
//! (`elicitation/create`, `roots/list`, `sampling/createMessage`), decided
//! and carried to the call's client: the [`crate::upstream::relay::Asker`]
//! `protocol/call` gives each forwarded call.
//!
//! Each request is decided first, by the tool's `upstream_request` rule or
//! its default (`catalog::upstream_request`: relay elicitation and roots,
//! refuse sampling; a failing rule refuses), and the decision written to the
//! decision log as a line of its own (`kind: "upstream_request"`, the
//! call's `id`, the upstream's method, `decision` allowed (relayed) or
//! denied, `outcome.by`: `policy` or `default`). A relayed request goes to
//! the call's client only when it declared the capability (`elicitation`,
//! with `url` for a URL-mode one; `roots`; `sampling`); otherwise, and when
//! refused, the upstream gets a JSON-RPC error saying so and the client
//! gets nothing. On a 2026-07-28 call (no server-to-client requests: its
//! questions are `input_required` rounds) a relayed request goes to the
//! call's waiting request instead, which answers the client with an
//! `input_required` round and parks the call until the retry
//! (`protocol/parked`); the capability checked is the one the call's first
//! request declared.
//!
//! Wire types are mapped here; the catalog sees the request as JSON.

#![allow(deprecated)] // roots and sampling are deprecated (SEP-2577); 2025-11-25 carries them

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::ErrorCode;
use rmcp::service::{Peer, RoleServer};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::caller::Caller;
use crate::catalog::Catalog;
use crate::catalog::upstream_request::RequestDecision;
use crate::decisions::{DecisionLog, Entry, Kind, Verdict};

/// The answer of one forwarded call to its upstream's requests.
pub struct CallAsker {
    pub catalog: Arc<Catalog>,
    /// Where the tool's `upstream_request` rule is evaluated: in place or
    /// off the session's thread (stdio), as its pace says; `None`: in place
    /// (HTTP). The upstream's request arrives on the stdio session's one
    /// thread (its connection's task shares the single-threaded runtime).
    pub pace: Option<Arc<super::pace::Pace>>,
    pub tool: String,
    /// The call's decided arguments.
    pub args: Value,
    pub caller: Option<Arc<Caller>>,
    /// The numbers the call's request spelled by hand (`policy::spelled`):
    /// its arguments reach the `upstream_request` rule too.
    pub spelled: Option<Arc<crate::policy::spelled::Spelled>>,
    /// The call's decision id, repeated on each request's line.
    pub id: Option<String>,
    pub log: Arc<DecisionLog>,
    pub peer: Peer<RoleServer>,
    /// On a 2026-07-28 call: where a relayed request goes (an
    /// `input_required` round, `protocol/parked`) and what the client
    /// declared; `None` on 2025-11-25 (asked live on `peer`).
    pub rounds: Option<super::parked::Rounds>,
    /// The call's cancellation: a client gone answers nothing.
    pub ct: CancellationToken,
}

impl crate::upstream::relay::Asker for CallAsker {
    fn ask(
        &self,
        method: &'static str,
        params: Value,
    ) -> Pin<Box<dyn Future<Output = Result<Value, ErrorData>> + Send + '_>> {
        Box::pin(self.decide(method, params))
    }
}

/// The error an upstream gets for a request regent did not relay.
fn not_relayed(code: ErrorCode, message: String, reason: &str) -> ErrorData {
    ErrorData::new(code, message, Some(json!({"reason": reason})))
}

impl CallAsker {
    async fn decide(&self, method: &'static str, params: Value) -> Result<Value, ErrorData> {
        let tool_name = &self.tool;
        let mut entry = Entry::new(
            Kind::UpstreamRequest,
            method,
            tool_name,
            self.args.clone(),
            &self.catalog.revision,
        );
        entry.id.clone_from(&self.id);
        entry.caller.clone_from(&self.caller);
        let record = |mut entry: Entry, relayed: bool, by: Option<&str>, refused: Option<&str>| {
            let mut outcome = json!({"relayed": relayed});
            if let Some(by) = by {
                outcome["by"] = json!(by);
            }
            entry.outcome = Some(outcome);
            entry.refused = refused.map(str::to_string);
            let _ = self.log.record(entry);
        };
        // The tool's visibility and its rule, paced as its other
        // evaluations are (see `pace`); the params come back for the relay.
        let size = self.pace.as_ref().map_or(0, |_| {
            crate::diag::json_size(&params, super::pace::MAX_IN_PLACE_BYTES)
        });
        let (tool, args, caller) = (tool_name.clone(), self.args.clone(), self.caller.clone());
        // The rule sees the call's numbers as the client spelled them, and
        // the upstream's request, parsed by rmcp before regent sees its
        // text: each of its numbers but a plain integer refuses where any
        // spelling of it would (`Spelled::with_unseen`, as an elicitation
        // reply's).
        let spelled = crate::policy::spelled::Spelled::with_unseen(
            self.spelled.as_ref(),
            [&params],
            "the upstream's request",
        );
        let evaluated = super::pace::evaluate(
            self.pace.as_deref(),
            &self.catalog,
            tool_name,
            || size,
            move |catalog| {
                let started = std::time::Instant::now();
                let decision = crate::policy::spelled::with(spelled.as_ref(), || {
                    catalog
                        .tool_as(&tool, caller.as_deref())
                        .map(|t| t.upstream_request(&args, caller.as_deref(), method, &params))
                });
                (decision, started.elapsed(), params)
            },
        )
        .await;
        let (decision, params) = match evaluated {
            Ok((Some(decision), eval, params)) => {
                entry.eval = Some(eval);
                (decision, params)
            }
            Ok((None, ..)) => {
                let why = format!("regent cannot decide `{method}`: tool {tool_name} is gone");
                entry.verdict = Verdict::Error(why.clone());
                record(entry, false, None, None);
                return Err(not_relayed(ErrorCode::INTERNAL_ERROR, why, "error"));
            }
            Err(e) => (
                RequestDecision::Failed(format!("its evaluation did not finish: {e}")),
                Value::Null,
            ),
        };
        let by = match &decision {
            RequestDecision::Relay { by_policy: true }
            | RequestDecision::Refuse { by_policy: true } => Some("policy"),
            RequestDecision::Relay { by_policy: false }
            | RequestDecision::Refuse { by_policy: false } => Some("default"),
            RequestDecision::Failed(_) => None,
        };
        match decision {
            RequestDecision::Relay { .. } => entry.verdict = Verdict::Allowed,
            RequestDecision::Refuse { by_policy } => {
                let why = if by_policy {
                    format!(
                        "the policy of {tool_name} refuses `{method}` (its upstream_request rule)"
                    )
                } else {
                    format!(
                        "regent refuses `{method}` by default (a tool's upstream_request rule may allow it)"
                    )
                };
                entry.verdict = Verdict::Denied(vec![why.clone()]);
                record(entry, false, by, None);
                return Err(not_relayed(
                    ErrorCode::INVALID_REQUEST,
                    format!("{why}; it was not sent to the client"),
                    "refused",
                ));
            }
            RequestDecision::Failed(why) => {
                entry.verdict = Verdict::Error(why.clone());
                record(entry, false, None, None);
                return Err(not_relayed(
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "regent refused `{method}`: the upstream_request rule of {tool_name} failed ({why}); it was not sent to the client"
                    ),
                    "refused",
                ));
            }
        }
        // Allowed: only a client that declared it can be asked.
        if let Some(missing) = self.missing_capability(method, &params) {
            let why = format!(
                "regent's client cannot answer `{method}`: it did not declare the {missing} capability"
            );
            record(entry, false, by, Some(&why));
            return Err(not_relayed(
                ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                why,
                "capability",
            ));
        }
        record(entry, true, by, None);
        if let Some(rounds) = &self.rounds {
            return rounds.ask(method, params, &self.ct).await;
        }
        let failed = |e: rmcp::service::ServiceError| match e {
            rmcp::service::ServiceError::McpError(e) => e,
            other => ErrorData::internal_error(
                format!("the client did not answer `{method}`: {other}"),
                None,
            ),
        };
        let bad = |e: serde_json::Error| {
            ErrorData::invalid_params(format!("`{method}` has malformed params: {e}"), None)
        };
        let asked = async {
            let value = match method {
                "elicitation/create" => {
                    let p = serde_json::from_value(params).map_err(bad)?;
                    serde_json::to_value(self.peer.create_elicitation(p).await.map_err(failed)?)
                }
                "roots/list" => serde_json::to_value(self.peer.list_roots().await.map_err(failed)?),
                "sampling/createMessage" => {
                    let p = serde_json::from_value(params).map_err(bad)?;
                    serde_json::to_value(self.peer.create_message(p).await.map_err(failed)?)
                }
                other => {
                    return Err(not_relayed(
                        ErrorCode::METHOD_NOT_FOUND,
                        format!("regent does not relay `{other}`"),
                        "unsupported",
                    ));
                }
            };
            value.map_err(|e| ErrorData::internal_error(e.to_string(), None))
        };
        tokio::select! {
            r = asked => r,
            _ = self.ct.cancelled() => Err(ErrorData::internal_error(
                format!("the call of {tool_name} was cancelled while its client was asked `{method}`"),
                None,
            )),
        }
    }

    /// The capability the call's client lacks for `method`, if it does.
    fn missing_capability(&self, method: &str, params: &Value) -> Option<&'static str> {
        let caps = match &self.rounds {
            Some(r) => r.caps.clone(),
            None => {
                let caps = self.peer.peer_info().map(|i| i.capabilities.clone());
                caps.unwrap_or_default()
            }
        };
        match method {
            "elicitation/create" => {
                let url = params["mode"] == "url";
                match &caps.elicitation {
                    None => Some("elicitation"),
                    Some(e) if url && e.url.is_none() => Some("elicitation (url mode)"),
                    // An empty `elicitation` object means form mode.
                    Some(e) if !url && e.form.is_none() && e.url.is_some() => {
                        Some("elicitation (form mode)")
                    }
                    Some(_) => None,
                }
            }
            "roots/list" => caps.roots.is_none().then_some("roots"),
            "sampling/createMessage" => caps.sampling.is_none().then_some("sampling"),
            _ => None,
        }
    }
}
