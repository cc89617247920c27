//! A call's decisions: the enforced policy and the shadow policy, in place
//! or off the session's thread as the tool's pace says, and the decision
//! again on the catalog that replaced the one a waiting call was decided
//! on. The call sequence (`call`) acts on them; the answers and log lines
//! are `report`'s.

use std::sync::Arc;

use serde_json::Value;

use crate::catalog::{Catalog, ResolveError};
use crate::decisions::{ShadowEntry, Verdict};
use crate::policy::spelled::{self, Spelled};
use crate::protocol::pace::{self, Pace};
use crate::protocol::wire;

/// Decides `name` again on `now`, the catalog that replaced the one a call
/// was decided on while it waited; the call may run only if the decision
/// stands as it was made: still allowed, and asking the same confirmation
/// the user answered (`confirmed`). Its answer is the `securitySchemes` the
/// current catalog resolves, which the call's scopes must meet in turn.
pub(super) fn redecide(
    now: &Catalog,
    name: &str,
    args: &Value,
    caller: Option<&crate::caller::Caller>,
    confirmed: Option<&str>,
) -> Result<Option<Vec<Value>>, String> {
    let changed = "the policy changed while the user was asked";
    let r = now
        .resolve_as(name, args, caller)
        .map_err(|e| format!("{changed}, and the call now fails: {e}"))?;
    if !r.allowed() {
        return Err(format!(
            "{changed}: this call is now denied ({})",
            r.deny.join("; ")
        ));
    }
    if r.confirm.as_deref() != confirmed {
        return Err(match &r.confirm {
            Some(m) => format!("{changed}: it now asks \"{m}\"; call again to be asked"),
            None => format!("{changed}; call again"),
        });
    }
    Ok(r.security_schemes)
}

/// A call's decision, made in place or off the session's thread.
pub(super) struct Decided {
    pub(super) resolution: Result<crate::catalog::Detached, ResolveError>,
    pub(super) shadow: Option<ShadowEntry>,
    /// How long the enforced policy took.
    pub(super) eval: std::time::Duration,
}

/// Decides a call (its enforced policy, then its shadow policy) in place,
/// or on a thread of its own when the tool's pace says so, so that a slow
/// policy holds up no other request of the session (see `pace`; the same
/// record as the tool's resolves).
pub(super) async fn decide(
    pace: Option<&Pace>,
    catalog: &Arc<Catalog>,
    name: &str,
    args: &Value,
    caller: &Option<Arc<crate::caller::Caller>>,
    spelled: Option<&Arc<Spelled>>,
) -> Decided {
    // Every `tools/call` decides here: nothing is copied unless the
    // decision leaves the session's thread (over HTTP there is no pace).
    let Some(pace) = pace else {
        return spelled::with(spelled, || {
            decide_here(catalog, name, args, caller.as_deref())
        });
    };
    let bytes = crate::diag::json_size(args, pace::MAX_IN_PLACE_BYTES);
    let (here, record) = pace.in_place(catalog, name, bytes);
    if here {
        return pace::timed(record, || {
            spelled::with(spelled, || {
                decide_here(catalog, name, args, caller.as_deref())
            })
        });
    }
    let (catalog, tool, args, caller, spelled) = (
        catalog.clone(),
        name.to_string(),
        args.clone(),
        caller.clone(),
        spelled.cloned(),
    );
    pace.off_thread(move || {
        pace::timed(record, || {
            spelled::with(spelled.as_ref(), || {
                decide_here(&catalog, &tool, &args, caller.as_deref())
            })
        })
    })
    .await
    .unwrap_or_else(|e| Decided {
        resolution: Err(unfinished(name, &e)),
        shadow: None,
        eval: std::time::Duration::ZERO,
    })
}

/// The error of an evaluation that panicked or was cancelled off the
/// session's thread: a failed policy evaluation (fail closed).
pub(super) fn unfinished(name: &str, e: &tokio::task::JoinError) -> ResolveError {
    ResolveError::Policy {
        tool: name.to_string(),
        message: format!("the policy evaluation did not finish: {e}"),
        location: None,
    }
}

fn decide_here(
    catalog: &Catalog,
    name: &str,
    args: &Value,
    caller: Option<&crate::caller::Caller>,
) -> Decided {
    let started = std::time::Instant::now();
    let resolution = catalog
        .resolve_as(name, args, caller)
        .map(crate::catalog::Resolution::detach);
    let eval = started.elapsed();
    let shadow = shadow(catalog, name, args, caller);
    Decided {
        resolution,
        shadow,
        eval,
    }
}

/// The decision of `name`'s shadow policy, for the log line only; `None`
/// when the tool declares none. Its failure (an error, a timeout, an
/// ill-typed value, a riskier hint) is its logged verdict, never the
/// request's: nothing here can refuse or change an answer.
///
/// It costs the request one more evaluation of the tool's plan (the shadow
/// package's rules and the YAML mapping rule, on the native evaluator when
/// they lower), at most the policy time limit.
pub(in crate::protocol) fn shadow(
    catalog: &Catalog,
    name: &str,
    args: &Value,
    caller: Option<&crate::caller::Caller>,
) -> Option<ShadowEntry> {
    let started = std::time::Instant::now();
    let shadow = catalog.shadow_as(name, args, caller)?;
    let eval = Some(started.elapsed());
    let policy = shadow.package.to_string();
    Some(match shadow.resolution {
        Ok(r) => ShadowEntry {
            policy,
            verdict: if r.allowed() {
                Verdict::Allowed
            } else {
                Verdict::Denied(r.deny.clone())
            },
            annotations: Some(wire::annotations(r.tool, Some(&r))),
            confirm: r.confirm.clone(),
            eval,
        },
        Err(e) => ShadowEntry {
            policy,
            verdict: Verdict::Error(e.to_string()),
            annotations: None,
            confirm: None,
            eval,
        },
    })
}
