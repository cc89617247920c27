//! The requests rmcp has no type for, routed in one place whichever way
//! they arrive (rmcp's custom-request hook, or stdio's and HTTP's `direct`
//! path): `tools/resolve` and `tools/annotations` (answered by `resolve`),
//! `regent/status`, and a standard method whose params did not parse; each
//! counted, and a resolve's evaluation in place or off the session's thread
//! as its tool's `pace` says. Deciding and answering a resolve are
//! `resolve`'s and `answer`'s.

use std::sync::Arc;
use std::time::Instant;

use rmcp::ErrorData;
use rmcp::model::{CustomRequest, CustomResult, ErrorCode};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::json;

use super::answer::{self, Answer};
use super::{Negotiated, Regent, count, errors, has_result_type, pace};
use crate::caller::Caller;
use crate::policy::spelled::{self, Spelled};

impl Regent {
    /// Answers a request rmcp has no type for (`tools/resolve`,
    /// `tools/annotations`, `regent/status`, or a standard method whose
    /// params did not parse), and counts it. The one place these are
    /// answered, whichever way the request arrived: rmcp's custom-request
    /// hook, or on stdio [`direct`](super::direct).
    /// `record`: the tool's [`pace`] record, told how long the policy's
    /// evaluation took (only that: not the answer's encoding, nor a wait on
    /// the decision log's queue).
    pub(super) fn custom(
        &self,
        request: CustomRequest,
        result_type: bool,
        negotiated: Negotiated,
        caller: Option<Arc<Caller>>,
        record: Option<Arc<pace::Tool>>,
    ) -> Result<CustomResult, ErrorData> {
        let started = Instant::now();
        let label = count::custom_label(&request.method);
        let catalog = self.state.current();
        // Every evaluation of the request sees the numbers its text spelled
        // by hand, put there by its transport (`policy::spelled`).
        // Its caller's claims' too (`Caller::spelled`).
        let spelled = Spelled::joined(
            request.extensions.get::<Arc<Spelled>>(),
            caller.as_ref().map_or(&[], |c| &c.spelled),
        );
        let value = spelled::with(spelled.as_ref(), || match request.method.as_str() {
            "tools/resolve" => self
                .resolve(
                    &catalog,
                    request.params,
                    answer::Shape {
                        full: true,
                        result_type,
                        negotiated,
                    },
                    caller,
                    record,
                )
                .map(Answer::into_value),
            "tools/annotations" => self
                .resolve(
                    &catalog,
                    request.params,
                    answer::Shape {
                        full: false,
                        result_type,
                        negotiated: Negotiated::default(),
                    },
                    caller,
                    record,
                )
                .map(Answer::into_value),
            // Reload status for operators and tests: the same document as
            // `--status-file`.
            "regent/status" => {
                let mut v = self.state.status().to_json();
                if result_type {
                    v["resultType"] = json!("complete");
                }
                Ok(v)
            }
            // rmcp routes a standard request whose params do not match its
            // type here; that is an invalid-params error, not an unknown method
            // (unless the request's protocol no longer has the method).
            m if errors::is_standard_method(m) && !(result_type && errors::removed_in_2026(m)) => {
                Err(ErrorData::invalid_params(
                    format!("invalid params for {m}"),
                    Some(json!({"method": m})),
                ))
            }
            m => Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("method not found: {m}"),
                None,
            )),
        });
        let r = value.map(CustomResult::new);
        self.record(label, count::custom_timed(label), started, &r, count::ok);
        r
    }
}

impl Regent {
    /// [`Regent::custom`], with a resolve's evaluation in place or on a
    /// thread of its own as its tool's [`pace`] says, so that a slow policy
    /// holds up no other request of the session.
    async fn custom_paced(
        &self,
        request: CustomRequest,
        result_type: bool,
        negotiated: Negotiated,
        caller: Option<Arc<Caller>>,
    ) -> Result<CustomResult, ErrorData> {
        let Some(pace) = &self.pace else {
            return self.custom(request, result_type, negotiated, caller, None);
        };
        let params = request.params.as_ref();
        let (here, record) = pace.request(&self.state.current(), &request.method, params, || {
            // rmcp has parsed the request already; its size is not known
            // here, and its arguments' size is what matters.
            params
                .and_then(|p| p.get("arguments"))
                .map_or(0, |a| crate::diag::json_size(a, pace::MAX_IN_PLACE_BYTES))
        });
        if here {
            return self.custom(request, result_type, negotiated, caller, record);
        }
        let me = self.clone();
        pace.off_thread(move || me.custom(request, result_type, negotiated, caller, record))
            .await
            .unwrap_or_else(|e| {
                Err(ErrorData::internal_error(
                    format!("the policy evaluation did not finish: {e}"),
                    None,
                ))
            })
    }
}

impl Regent {
    pub(super) async fn answer_custom_request(
        &self,
        mut request: CustomRequest,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        if let Some(spelled) = super::spelled_of(&ctx) {
            request.extensions.insert(spelled);
        }
        let result_type = has_result_type(&ctx);
        let negotiated = Negotiated::for_request(&ctx, result_type);
        self.custom_paced(request, result_type, negotiated, self.caller(&ctx))
            .await
    }
}
