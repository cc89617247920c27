//! `tools/resolve` and `tools/annotations`: the name and arguments read
//! from the request, the tool looked up as the caller sees it, its
//! server-filled parameters filled and fenced paths applied, the decision
//! made (the enforced policy, or the shadow one for `regent test`), logged,
//! and handed to `answer` for its shape. Also what `regent resolve` and
//! `regent test` answer without a server ([`resolve_result`],
//! [`shadow_result`]). Deciding is the catalog's; the answer's shape,
//! `answer`'s; routing the request here, `custom`'s.

use std::sync::Arc;
use std::time::Instant;

use rmcp::ErrorData;
use serde_json::{Map, Value, json};

use super::answer::{self, Answer};
use super::{Negotiated, Refusal, Regent, call, errors, pace, wire};
use crate::caller::Caller;
use crate::catalog::Catalog;
use crate::decisions::{DecisionLog, Entry, Kind, Verdict};

/// The `name` and `arguments` of a `tools/resolve`-shaped request, taken
/// out of `params` (no copy of the arguments). The tool-resolution
/// extension requires `arguments` (`{}` for none); SEP-1862 and the older
/// draft let them default to `{}`.
fn name_and_arguments(
    params: Option<Value>,
    require_arguments: bool,
) -> Result<(String, Value), ErrorData> {
    let Some(Value::Object(mut params)) = params else {
        return Err(ErrorData::invalid_params(
            "params must be an object with `name` and `arguments`",
            None,
        ));
    };
    let name = match params.remove("name") {
        Some(Value::String(name)) => name,
        _ => {
            return Err(ErrorData::invalid_params(
                "params.name must be a string",
                None,
            ));
        }
    };
    let arguments = match params.remove("arguments") {
        None | Some(Value::Null) if require_arguments => {
            return Err(ErrorData::invalid_params(
                "params.arguments is required: pass an object, `{}` for a tool without parameters",
                Some(json!({"tool": name, "reason": "invalid-arguments"})),
            ));
        }
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v,
        Some(other) => {
            return Err(ErrorData::invalid_params(
                format!(
                    "params.arguments must be an object, got {}",
                    crate::diag::json_kind(&other)
                ),
                Some(json!({"tool": name})),
            ));
        }
    };
    Ok((name, arguments))
}

impl Regent {
    /// Answers `tools/resolve` or `tools/annotations` and queues the
    /// decision-log line.
    pub(super) fn resolve(
        &self,
        catalog: &Catalog,
        params: Option<Value>,
        shape: answer::Shape,
        caller: Option<Arc<Caller>>,
        record: Option<Arc<pace::Tool>>,
    ) -> Result<Answer, ErrorData> {
        resolve_logged(
            catalog,
            params,
            shape,
            Some(Serving {
                log: &self.decisions,
                listed: &self.listed,
                text: self.text,
                pace: record,
            }),
            caller,
            Decider::Enforced,
        )
    }
}

/// Which policy decides a resolve: the enforced one, as every request, or
/// the tool's shadow policy, for `regent test` cases that name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decider {
    Enforced,
    Shadow,
}

/// What a served request adds to a resolve: the decision log, the cache of
/// listed members, and whether the answer is rendered as text (stdio).
struct Serving<'a> {
    log: &'a DecisionLog,
    listed: &'a answer::Listed,
    text: bool,
    /// The tool's [`pace`] record, told how long the evaluation took.
    pace: Option<Arc<pace::Tool>>,
}

/// The result of `tools/resolve` (`full`) or `tools/annotations` for the
/// request `params`, exactly as the server answers a request that
/// `negotiated` those extensions. Public so that `regent resolve` prints the
/// same thing without starting a server.
pub fn resolve_result(
    catalog: &Catalog,
    params: Option<&Value>,
    full: bool,
    result_type: bool,
    negotiated: Negotiated,
    caller: Option<&Caller>,
) -> Result<Value, Refusal> {
    resolve_logged(
        catalog,
        params.cloned(),
        answer::Shape {
            full,
            result_type,
            negotiated,
        },
        None,
        caller.cloned().map(Arc::new),
        Decider::Enforced,
    )
    .map(Answer::into_value)
    .map_err(Refusal::from)
}

/// [`resolve_result`] as the tool's shadow policy would answer it (in
/// place of its enforced policy), for `regent test` cases with `shadow:
/// true`. Never an answer to a client: a server only logs shadow decisions.
/// A tool without `shadow_policy` answers -32603 saying so.
pub fn shadow_result(
    catalog: &Catalog,
    params: Option<&Value>,
    caller: Option<&Caller>,
) -> Result<Value, Refusal> {
    resolve_logged(
        catalog,
        params.cloned(),
        answer::Shape {
            full: true,
            result_type: false,
            negotiated: Negotiated::default(),
        },
        None,
        caller.cloned().map(Arc::new),
        Decider::Shadow,
    )
    .map(Answer::into_value)
    .map_err(Refusal::from)
}

fn resolve_logged(
    catalog: &Catalog,
    params: Option<Value>,
    // The extension's answer replaces SEP-1862's only for `tools/resolve`;
    // `tools/annotations` is the older draft's method either way.
    shape: answer::Shape,
    serving: Option<Serving<'_>>,
    caller: Option<Arc<Caller>>,
    decider: Decider,
) -> Result<Answer, ErrorData> {
    let log = serving.as_ref().map(|s| s.log);
    let (name, args) = name_and_arguments(params, shape.draft())?;
    // The pace times every evaluation the resolve makes: the `visible`
    // rules (once per caller and catalog), the policy resolvers, the
    // policy and the shadow policy.
    let paced_from = Instant::now();
    // A tool the caller may not see answers as an unknown one; a caller the
    // catalog's caller schema refuses gets no decision, and the refusal is
    // logged.
    let tool = match catalog.lookup_as(&name, caller.as_deref()) {
        Ok(tool) => tool,
        Err(e @ crate::catalog::ResolveError::CallerClaimsInvalid(_)) => {
            if let Some(log) = log {
                let method = if shape.full {
                    "tools/resolve"
                } else {
                    "tools/annotations"
                };
                let mut entry = Entry::new(Kind::Resolve, method, &name, args, &catalog.revision);
                // Its numbers as sent, for `--log-arguments`.
                entry.sent = crate::policy::spelled::current().and_then(|s| s.text().cloned());
                entry.caller = caller;
                entry.verdict = Verdict::Error(e.to_string());
                // The answer is an error either way.
                let _ = log.record(entry);
            }
            return Err(errors::resolve_error(catalog, &e));
        }
        Err(_) => return Err(errors::not_listed(catalog, &name)),
    };
    if !tool.is_resolvable() {
        return Err(ErrorData::invalid_params(
            format!("tool {name} is not resolvable: it has no resolve rules and no policy"),
            Some(json!({"tool": name, "reason": "not-resolvable"})),
        ));
    }
    let method = if shape.full {
        "tools/resolve"
    } else {
        "tools/annotations"
    };
    // A client's preflight sees what its call would: the parameters the
    // server fills by itself are filled, those the client would be asked for
    // are absent. `regent resolve` and `regent test` take arguments as given,
    // so that a case can supply a resolved parameter as a fixture.
    let filled;
    let decided_on = if log.is_some() && !tool.resolvers.is_empty() {
        if let Some(r) = crate::fill::supplied_by_client(tool, &args) {
            return Err(errors::server_filled(tool, r));
        }
        catalog
            .validate_partial(&name, &args)
            .map_err(|e| errors::resolve_error(catalog, &e))?;
        filled = match crate::fill::fill(
            tool,
            &args,
            &Default::default(),
            crate::fill::Mode::Preflight,
        ) {
            Ok(crate::fill::Fill::Done(v)) => v,
            Ok(_) => args.clone(),
            Err(e) => {
                // A resolver that failed (say, ran into the time limit)
                // counts as much as one that filled.
                if let Some(pace) = serving.as_ref().and_then(|s| s.pace.as_ref()) {
                    pace.took(paced_from.elapsed());
                }
                return Err(errors::resolve_error(catalog, &e));
            }
        };
        &filled
    } else {
        &args
    };
    // Paths fenced under a root are decided on as the file system resolves
    // them (`fence`), as the call will be.
    let fenced_args;
    let (decided_on, fenced) = if tool.fences.is_empty() {
        (decided_on, Vec::new())
    } else {
        let mut v = decided_on.clone();
        let deny = crate::fence::apply(&tool.fences, &mut v);
        fenced_args = v;
        (&fenced_args, deny)
    };
    // The log records the arguments as the client sent them.
    let started = std::time::Instant::now();
    let r = match decider {
        Decider::Enforced => catalog.resolve_as(&name, decided_on, caller.as_deref()),
        Decider::Shadow => match catalog.shadow_as(&name, decided_on, caller.as_deref()) {
            Some(s) => s.resolution,
            None => Err(crate::catalog::ResolveError::Policy {
                tool: name.clone(),
                message: "the tool declares no shadow_policy to test; add `shadow_policy:` to the tool or remove `shadow: true` from the case".into(),
                location: None,
            }),
        },
    };
    let eval = started.elapsed();
    // The shadow decision is for the log: only serving computes it.
    let shadow = log.and_then(|_| call::shadow(catalog, &name, decided_on, caller.as_deref()));
    if let Some(pace) = serving.as_ref().and_then(|s| s.pace.as_ref()) {
        pace.took(paced_from.elapsed());
    }
    let mut r = match r {
        Ok(r) => r,
        Err(e) => {
            if let Some(log) = log {
                let mut entry = Entry::new(Kind::Resolve, method, &name, args, &catalog.revision);
                // Its numbers as sent, for `--log-arguments`.
                entry.sent = crate::policy::spelled::current().and_then(|s| s.text().cloned());
                entry.caller = caller;
                entry.eval = Some(eval);
                entry.shadow = shadow;
                entry.verdict = Verdict::Error(e.to_string());
                // The answer is an error either way.
                let _ = log.record(entry);
            }
            return Err(errors::resolve_error(catalog, &e));
        }
    };
    r.add_deny(fenced);
    let annotations = wire::annotations(tool, Some(&r));
    let listed = shape.has_tool().then(|| match &serving {
        Some(s) => s.listed.get(&catalog.revision, tool),
        None => Arc::new(answer::ListedTool::of(tool)),
    });
    let parts = answer::Parts {
        name: &name,
        annotations: &annotations,
        resolution: &r,
        listed: listed.as_deref(),
    };
    let answer = answer::build(shape, &parts).render(serving.as_ref().is_some_and(|s| s.text));
    if let Some(log) = log {
        let verdict = if r.allowed() {
            Verdict::Allowed
        } else {
            Verdict::Denied(r.deny.clone())
        };
        let mut entry = Entry::new(Kind::Resolve, method, &name, args, &catalog.revision);
        // Its numbers as sent, for `--log-arguments`.
        entry.sent = crate::policy::spelled::current().and_then(|s| s.text().cloned());
        entry.caller = caller;
        entry.annotations = Some(annotations);
        entry.verdict = verdict;
        entry.confirm.clone_from(&r.confirm);
        entry.eval = Some(eval);
        entry.shadow = shadow;
        // Fail closed: a decision the audit log cannot take is not given.
        log.record(entry)
            .map_err(|stalled| ErrorData::internal_error(stalled.to_string(), None))?;
    }
    Ok(answer)
}
