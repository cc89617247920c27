//! `tools/call`: decide, then run, then report, as a fixed sequence.
//!
//! 1. Resolve exactly as `tools/resolve` does (`Catalog::resolve`): an unknown
//!    tool or invalid arguments are JSON-RPC errors (-32602), a failing
//!    policy is -32603, and nothing runs.
//! 2. A non-empty `deny` refuses the call: `isError: true` listing the reasons.
//!    With `serve --enforce-scopes`, so does a caller whose token lacks the
//!    OAuth scopes the decision's `securitySchemes` need (`crate::scopes`),
//!    as a JSON-RPC error ([`errors::scope_refusal`]) that the HTTP layer
//!    turns into a 403 challenge; a call decided again after a reload
//!    (step 4) is checked again.
//! 3. A `confirm` message in the decision asks the user first (see
//!    [`confirm`](super::confirm)); decline or cancel refuses the call with
//!    `isError: true`, and a 2026-07-28 request may end here with
//!    `input_required`, to be retried with the answer.
//! 4. A call that waited (a question, a confirmation) is decided again if
//!    the catalog was reloaded meanwhile: it runs only if the decision on
//!    the current catalog stands as it was put to the user (still allowed,
//!    the same confirmation), and then as the current catalog says. On
//!    2026-07-28 the retry is decided on the current catalog anyway, and a
//!    confirmation answered counts only for the message the sealed state
//!    asked.
//! 5. Pick the tool's run case, render it (arguments that cannot be used as
//!    given are refused with `isError: true`), and execute it. A tool
//!    imported from an upstream MCP server has no run case: the call goes to
//!    the upstream (`crate::upstream`), whose result comes back as it gave
//!    it, with regent's `_meta` keys added; an upstream that is down
//!    refuses the call before anything is sent. The upstream's progress
//!    and log messages during the call go to this client
//!    (`crate::upstream::relay`); its requests to the client are decided
//!    by the tool's `upstream_request` rule, logged with the call's id, and
//!    relayed to this client when allowed ([`super::upstream_requests`]):
//!    live on 2025-11-25; on 2026-07-28 as `input_required` rounds, the
//!    upstream call running on a task of its own and parked between them
//!    ([`super::parked`]), its retries carrying the answers (a retry is no
//!    new decision: it writes no intent line).
//! 6. Turn the outcome into a result: output as text, JSON output validated
//!    against `outputSchema` as `structuredContent`, failures as
//!    `isError: true` with the status and the tail of stderr or the body.
//!
//! Every call writes one decision-log line, whatever the path, and the
//! result's `_meta` carries the decision id under [`DECISION_META`]. A call
//! that runs something writes two, with that id: its intent, written to the
//! log's destination before the process starts, the request is sent or the
//! upstream is called ([`intend`]; nothing runs when it cannot be), and its
//! outcome after. A tool
//! with a `shadow_policy` has it evaluated right after the enforced
//! decision, on the same arguments; its decision goes into the line only
//! ([`shadow`]), never into the sequence above.
//!
//! Executions are bounded across all sessions and transports by one
//! [`CallLimit`] (`serve --max-concurrent-calls`): a call that would start
//! one more execution than the limit is refused at once with -32603 (data
//! `{"reason": "capacity", ...}`) and runs nothing. The permit is taken after
//! the decision and the rendering, right before the process starts or the
//! request is sent, and held until it ends: waiting for a policy or for the
//! user's confirmation does not count.

mod decide;
mod limit;
mod report;

use std::sync::Arc;
use std::time::Instant;

use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};

use super::input::{self, RequestStates, Retry};
use super::pace::Pace;
use super::{Regent, count, errors, has_result_type, wire};
use crate::catalog::{Catalog, ResolveError};
use crate::decisions::{DecisionLog, Entry, Kind, Phase, Verdict};
use crate::exec;
use crate::fill::{self, Fill, Replies, Reply};
use crate::run_plan::RunSpec;

pub(in crate::protocol) use decide::shadow;
use decide::{decide, redecide, unfinished};
pub use limit::{CallLimit, CallPermit, DEFAULT_MAX_CONCURRENT_CALLS};
pub use report::{DECISION_META, EXECUTION_META, decision_json};
use report::{forwarded, record, report, result};

/// Where a call's answers come from and go to, beside its arguments.
pub struct CallContext<'a> {
    pub log: &'a Arc<DecisionLog>,
    pub states: &'a RequestStates,
    /// Whether the request uses the 2026-07-28 protocol (multi round-trip input).
    pub mrtr: bool,
    pub retry: Retry,
    /// The bound on executions running at once.
    pub limit: &'a CallLimit,
    /// Who is calling: the transport's verified caller or the configured one.
    pub caller: Option<std::sync::Arc<crate::caller::Caller>>,
    /// Whether the caller's scopes must meet the resolved `securitySchemes`
    /// (`serve --enforce-scopes`).
    pub enforce_scopes: bool,
    /// Where the call's evaluations run (its resolvers, its decision, its
    /// decision again after a reload, its upstream's requests, its
    /// `visible` check; see `pace`); `None`: in place, always (HTTP).
    pub pace: Option<&'a Arc<Pace>>,
    /// The connected upstream MCP servers imported tools forward to.
    pub upstreams: &'a crate::upstream::Upstreams,
    /// 2026-07-28 forwarded calls waiting between rounds for their
    /// client's answer to an upstream's request (`protocol/parked`).
    pub parked: &'a Arc<super::parked::ParkedCalls>,
    /// The live catalog, to decide again on the one current when a call
    /// that waited is about to run.
    pub state: &'a crate::state::CatalogState,
    /// The least severe log level the client wants of a forwarded call's
    /// upstream: its session's `logging/setLevel` (2025-11-25, everything
    /// until it sets one), the request's `io.modelcontextprotocol/logLevel`
    /// (2026-07-28, nothing without it).
    #[allow(deprecated)]
    pub log_level: Option<rmcp::model::LoggingLevel>,
    /// The numbers the request spelled by hand (`policy::spelled`), which
    /// its evaluations (resolvers, decision, decision again) must not
    /// write.
    pub spelled: Option<Arc<crate::policy::spelled::Spelled>>,
}

/// Writes the call's intent line (its decision, before anything runs) and
/// waits until it is on record, so that no side effect lacks its line; the
/// outcome line that follows carries the same id. When the line cannot be
/// written the call runs nothing (fail closed).
async fn intend(log: &DecisionLog, entry: &mut Entry) -> Result<(), ErrorData> {
    entry.phase = Some(Phase::Intent);
    let written = log.record_before_effect(entry.clone()).await;
    entry.phase = Some(Phase::Outcome);
    written.map_err(|stalled| {
        ErrorData::internal_error(
            format!(
                "{stalled}\n  = note: the call's decision could not be recorded, so nothing was run"
            ),
            None,
        )
    })
}

/// Refuses a call whose resolved `securitySchemes` the caller does not
/// meet: the decision-log line (the policy's decision, `refused` saying
/// why, `insufficientScope` with the scopes) and the JSON-RPC error
/// (`errors::scope_refusal`), which over HTTP becomes a 403 challenge.
fn scope_refused(
    log: &DecisionLog,
    mut entry: Entry,
    name: &str,
    short: &crate::scopes::Shortfall,
) -> ErrorData {
    entry.refused = Some(short.describe());
    if let crate::scopes::Shortfall::InsufficientScope {
        required, missing, ..
    } = short
    {
        entry.insufficient_scope = Some(json!({"scopes": required, "missing": missing}));
    }
    record(log, &entry);
    errors::scope_refusal(name, short)
}

pub async fn call(
    catalog: Arc<Catalog>,
    cc: &CallContext<'_>,
    name: &str,
    args: Value,
    ctx: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let log = cc.log;
    // Fail closed: nothing runs while the audit log cannot take decisions.
    // A decision recorded after this check, should the log stall in the
    // meantime, is counted in the log's `gap` line (see `decisions`).
    if log.is_stalled() {
        return Err(ErrorData::internal_error(
            crate::decisions::Stalled::default().to_string(),
            None,
        ));
    }
    let mut entry = Entry::new(
        Kind::Call,
        "tools/call",
        name,
        args.clone(),
        &catalog.revision,
    );
    let caller = cc.caller.clone();
    entry.caller.clone_from(&caller);
    // Its numbers as sent, for `--log-arguments`.
    entry.sent = cc.spelled.as_ref().and_then(|s| s.text().cloned());
    // Until the policy has decided, a refusal (a spent state, a declined
    // question for a parameter) is logged as made before any decision.
    entry.verdict =
        Verdict::Error("no decision: the call was refused before the policy ran".into());
    let fail = |mut entry: Entry, e: ResolveError| {
        let refusal = errors::resolve_error(&catalog, &e);
        match &e {
            // A quarantined tool's refusal is logged (an upstream that
            // changed under its pin is what an audit looks for); an
            // unknown tool's is not.
            ResolveError::UnknownTool(n) if catalog.quarantined(n).is_none() => {}
            ResolveError::UnknownTool(_) => {
                entry.verdict = Verdict::Error(refusal.message.to_string());
                record(log, &entry);
            }
            _ => {
                entry.verdict = Verdict::Error(e.to_string());
                record(log, &entry);
            }
        }
        refusal
    };
    // A tool the caller may not see answers as an unknown one, before
    // anything about it (its resolvers, its questions) can show.
    // A caller the catalog's caller schema refuses gets no decision.
    if let Some(why) = catalog.caller_problem(caller.as_deref()) {
        return Err(fail(entry, ResolveError::CallerClaimsInvalid(why)));
    }
    // Evaluating `visible` rules is paced like the rest (see `pace`).
    let seen =
        match super::pace::visible_set(cc.pace.map(|p| &**p), &catalog, caller.as_ref()).await {
            Ok(seen) => seen,
            Err(e) => return Err(fail(entry, unfinished(name, &e))),
        };
    let Some(tool) = catalog.tool_in(name, seen.as_ref()) else {
        return Err(fail(entry, ResolveError::UnknownTool(name.to_string())));
    };
    if let Some(r) = fill::supplied_by_client(tool, &args) {
        return Err(errors::server_filled(tool, r));
    }
    // What the client answered so far: nothing yet on a 2025-11-25 session
    // (questions are asked live below), the sealed earlier rounds plus this
    // retry's answers on 2026-07-28.
    let digest_cell = std::sync::OnceLock::new();
    let digest =
        || -> &str { digest_cell.get_or_init(|| crate::decisions::arguments_digest(&args)) };
    // A round of a forwarded call parked between `input_required` rounds
    // (`protocol/parked`): resumed by a retry, or parked when it asks.
    let round = || super::parked::Round {
        seal: super::parked::Seal {
            states: cc.states,
            tool: name,
            digest: digest(),
            caller: caller.as_deref(),
        },
        ctx,
    };
    let (mut replies, asked_confirm, sealed) =
        if cc.mrtr && (cc.retry.state.is_some() || cc.retry.responses.is_some()) {
            let opened = input::open_any(cc.states, &cc.retry, name, digest()).await;
            match opened.inspect_err(|e| {
                entry.refused = Some(e.message.to_string());
                record(log, &entry);
            })? {
                input::Opened::Replies(replies, confirm, sealed) => (replies, confirm, sealed),
                // A forwarded call parked in an earlier round: decided,
                // its intent written and running; the retry only carries
                // the client's answer to it (`protocol/parked`).
                input::Opened::Parked { handle, key } => {
                    let round = round();
                    return cc
                        .parked
                        .resume(&handle, &key, cc.retry.responses.as_ref(), &round)
                        .await
                        .inspect_err(|e| {
                            entry.refused = Some(e.message.to_string());
                            record(log, &entry);
                        });
                }
            }
        } else {
            (Replies::new(), None, None)
        };
    // The numbers the call's evaluations see: the request's (its text was
    // scanned, this retry's `inputResponses` with it), and those of the
    // earlier rounds' replies, carried in the sealed state as regent's own
    // text: as their requests spelled them when the state kept that, else
    // unseen (`input::unseen_numbers`).
    let mut numbers = match &sealed {
        Some(texts) => crate::policy::spelled::Spelled::with_texts(
            cc.spelled.as_ref(),
            texts.iter().map(String::as_str),
        ),
        None => input::unseen_numbers(
            cc.spelled.as_ref(),
            replies
                .iter()
                .filter(|(k, _)| {
                    !cc.retry
                        .responses
                        .as_ref()
                        .is_some_and(|r| r.contains_key(*k))
                })
                .map(|(_, r)| r),
            "an earlier round's elicitation reply",
        ),
    };

    // 1. Check what the model sent, then fill the parameters the server
    //    provides, asking the client where a resolver needs it.
    if !tool.resolvers.is_empty()
        && let Err(e) = catalog.validate_partial(name, &args)
    {
        return Err(fail(entry, e));
    }
    let full = loop {
        let filled = if tool.resolvers.is_empty() {
            // Nothing to evaluate: the arguments checked against the schema.
            fill::fill(tool, &args, &replies, fill::Mode::Call)
        } else {
            // Policy rules, files: paced like the decision (see `pace`).
            let bytes = || crate::diag::json_size(&args, super::pace::MAX_IN_PLACE_BYTES);
            let (tool, a, r) = (name.to_string(), args.clone(), replies.clone());
            let spelled = numbers.clone();
            super::pace::evaluate(
                cc.pace.map(|p| &**p),
                &catalog,
                name,
                bytes,
                move |catalog| {
                    crate::policy::spelled::with(spelled.as_ref(), || match catalog.tool(&tool) {
                        Some(t) => fill::fill(t, &a, &r, fill::Mode::Call),
                        None => Err(ResolveError::UnknownTool(tool)),
                    })
                },
            )
            .await
            .unwrap_or_else(|e| Err(unfinished(name, &e)))
        };
        match filled {
            Ok(Fill::Done(full)) => break full,
            Ok(Fill::Refused(why)) => {
                let mut meta = Map::new();
                meta.insert(EXECUTION_META.into(), json!({"refused": why}));
                entry.refused = Some(why.clone());
                record(log, &entry);
                let text = format!("regent did not run {name}: {why}");
                return Ok(result(vec![text], None, true, meta).into());
            }
            Ok(Fill::Ask(questions)) => {
                if cc.mrtr {
                    // Not a decision yet: the retry writes the log line.
                    return input::input_required(
                        cc.states,
                        ctx,
                        &questions,
                        &replies,
                        name,
                        digest(),
                        numbers.as_ref(),
                    )
                    .map(Into::into)
                    .inspect_err(|e| {
                        entry.refused = Some(e.message.to_string());
                        record(log, &entry);
                    });
                }
                let answered = input::ask_live(ctx, &questions, name)
                    .await
                    .inspect_err(|e| {
                        entry.refused = Some(e.message.to_string());
                        record(log, &entry);
                    })?;
                // rmcp parsed the replies: their numbers' text is unseen.
                numbers = input::unseen_numbers(
                    numbers.as_ref(),
                    answered.iter().map(|(_, r)| r),
                    "an elicitation reply",
                );
                replies.extend(answered);
            }
            Err(e) => return Err(fail(entry, e)),
        }
    };

    // 2. Decide on the whole arguments, with the paths fenced under a root
    //    read as the file system resolves them (`fence`): the decision and
    //    the call see the same file.
    let as_sent = (!tool.fences.is_empty()).then(|| full.clone());
    let mut full = full;
    let fenced = crate::fence::apply(&tool.fences, &mut full);
    let decided = decide(
        cc.pace.map(|p| &**p),
        &catalog,
        name,
        &full,
        &caller,
        numbers.as_ref(),
    )
    .await;
    entry.eval = Some(decided.eval);
    entry.shadow = decided.shadow;
    let mut r = match decided.resolution {
        Ok(r) => r.attach(tool),
        Err(e) => return Err(fail(entry, e)),
    };
    r.add_deny(fenced);
    entry.annotations = Some(wire::annotations(tool, Some(&r)));
    entry.confirm.clone_from(&r.confirm);
    let mut meta = Map::new();
    meta.insert(
        DECISION_META.into(),
        decision_json(entry.id.as_deref(), &r.deny),
    );

    if !r.allowed() {
        entry.verdict = Verdict::Denied(r.deny.clone());
        record(log, &entry);
        let mut text = format!("regent refused to run {name}: this call is denied");
        for reason in &r.deny {
            text.push_str("\n- ");
            text.push_str(reason);
        }
        return Ok(result(vec![text], None, true, meta).into());
    }
    entry.verdict = Verdict::Allowed;

    // With `--enforce-scopes`, the scopes the decision's `securitySchemes`
    // need are checked before the user is asked anything or anything runs:
    // a caller who could not run the call is not asked to confirm it.
    if cc.enforce_scopes
        && let Err(short) = crate::scopes::check(r.security_schemes.as_deref(), caller.as_deref())
    {
        return Err(scope_refused(log, entry, name, &short));
    }

    // 3. Ask for the confirmation the decision requires, once.
    if let Some(message) = &r.confirm {
        let reply = match replies.get(input::CONFIRM_KEY) {
            // An answer counts for the question the user saw: a retry
            // decided on a catalog that asks otherwise runs nothing.
            Some(_) if asked_confirm.as_deref() != Some(message.as_str()) => {
                let why = match &asked_confirm {
                    Some(asked) => format!(
                        "the policy changed while the user was asked: they answered \"{asked}\", \
                         and it now asks \"{message}\"; call again to be asked"
                    ),
                    None => "the confirmation answered was not one this call asked".to_string(),
                };
                meta.insert(EXECUTION_META.into(), json!({"refused": why}));
                entry.refused = Some(why.clone());
                record(log, &entry);
                let text = format!("regent did not run {name}: {why}");
                return Ok(result(vec![text], None, true, meta).into());
            }
            Some(reply) => reply.clone(),
            None => {
                let question = [input::confirmation(message)];
                let asked = if cc.mrtr {
                    match input::input_required(
                        cc.states,
                        ctx,
                        &question,
                        &replies,
                        name,
                        digest(),
                        numbers.as_ref(),
                    ) {
                        // Not a decision yet: the retry writes the log line.
                        Ok(ir) => return Ok(ir.into()),
                        Err(e) => Err(e),
                    }
                } else {
                    input::ask_live(ctx, &question, name).await
                };
                match asked {
                    Ok(mut answered) => answered.remove(0).1,
                    Err(e) => {
                        entry.refused = Some(e.message.to_string());
                        record(log, &entry);
                        return Err(e);
                    }
                }
            }
        };
        let action = match reply {
            Reply::Elicit { action, .. } => action,
            Reply::Roots { .. } => fill::Action::Cancel,
        };
        if action != fill::Action::Accept {
            let action = action.as_str();
            let why = format!("the user did not confirm the call ({action})");
            meta.insert(
                EXECUTION_META.into(),
                json!({"refused": why, "confirmation": action}),
            );
            entry.refused = Some(why);
            record(log, &entry);
            let text = format!(
                "regent did not run {name}: the user was asked \"{message}\" and answered {action}"
            );
            return Ok(result(vec![text], None, true, meta).into());
        }
    }
    let args = full;

    let refuse = |mut entry: Entry, mut meta: Map<String, Value>, why: String| {
        meta.insert(EXECUTION_META.into(), json!({"refused": why}));
        entry.refused = Some(why.clone());
        record(log, &entry);
        result(
            vec![format!("regent did not run {name}: {why}")],
            None,
            true,
            meta,
        )
    };
    // 4. The fenced paths are read again as the call is about to run: a
    //    link swapped while the user was asked makes it another file.
    if let Some(sent) = as_sent {
        let mut again = sent;
        let moved = crate::fence::apply(&tool.fences, &mut again);
        if !moved.is_empty() || again != args {
            let why =
                "a path changed on disk between the decision and the call; call again".to_string();
            return Ok(refuse(entry, meta, why).into());
        }
    }
    // 5. Decide at execution. A call that waited (a question, a
    //    confirmation) was decided on the catalog current when it arrived;
    //    should a reload have come meanwhile, the decision is made again on
    //    the catalog current now, and the call runs only if it stands as it
    //    was put to the user. It then runs what the current catalog says.
    let now = cc.state.current();
    let tool = if Arc::ptr_eq(&now, &catalog) {
        tool
    } else {
        entry.revision.clone_from(&now.revision);
        let bytes = || crate::diag::json_size(&args, super::pace::MAX_IN_PLACE_BYTES);
        let again = {
            let (tool, a, who, confirm) = (
                name.to_string(),
                args.clone(),
                caller.clone(),
                r.confirm.clone(),
            );
            let spelled = numbers.clone();
            super::pace::evaluate(cc.pace.map(|p| &**p), &now, name, bytes, move |now| {
                crate::policy::spelled::with(spelled.as_ref(), || {
                    redecide(now, &tool, &a, who.as_deref(), confirm.as_deref())
                })
            })
            .await
            .unwrap_or_else(|e| Err(format!("the policy evaluation did not finish: {e}")))
        };
        match again {
            Err(why) => return Ok(refuse(entry, meta, why).into()),
            Ok(schemes) if cc.enforce_scopes => {
                if let Err(short) = crate::scopes::check(schemes.as_deref(), caller.as_deref()) {
                    return Err(scope_refused(log, entry, name, &short));
                }
            }
            Ok(_) => {}
        }
        match now.tool_as(name, caller.as_deref()) {
            Some(t) => t,
            None => {
                let why = "the tool was removed while the user was asked".to_string();
                return Ok(refuse(entry, meta, why).into());
            }
        }
    };
    // Past the limit nothing starts: the refusal is logged, the client gets
    // a JSON-RPC error.
    let busy = |mut entry: Entry, e: ErrorData| {
        entry.refused = Some(e.message.to_string());
        record(log, &entry);
        e
    };
    if let Some(target) = &tool.upstream {
        // An imported tool: the decision is made, so the call goes to the
        // upstream, whose result comes back as it gave it (or cut to
        // `max_output`).
        // One lookup: the connection found here is the one the call is sent on.
        let connected = match cc.upstreams.connected(target) {
            Ok(c) => c,
            Err(why) => return Ok(refuse(entry, meta, why.0).into()),
        };
        let arguments = match args {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let permit = cc.limit.try_enter().map_err(|e| busy(entry.clone(), e))?;
        intend(log, &mut entry).await?;
        let started = std::time::Instant::now();
        let mut asker = super::upstream_requests::CallAsker {
            catalog: now.clone(),
            pace: cc.pace.cloned(),
            tool: name.to_string(),
            args: Value::Object(arguments.clone()),
            caller: caller.clone(),
            spelled: numbers.clone(),
            id: entry.id.clone(),
            log: cc.log.clone(),
            peer: ctx.peer.clone(),
            rounds: None,
            ct: ctx.ct.clone(),
        };
        let progress = ctx.meta.get_progress_token();
        let target = target.clone();
        if !cc.mrtr {
            // What the upstream says during the call goes to this client alone.
            let to = crate::upstream::RelayTo::new(
                ctx.peer.clone(),
                progress,
                cc.log_level,
                Some(Arc::new(asker)),
            );
            let answer = connected
                .call(&target, arguments, &to, ctx.ct.cancelled())
                .await;
            drop(permit);
            return Ok(forwarded(log, entry, meta, name, &target, started, answer));
        }
        // 2026-07-28: the upstream's questions are rounds of this call, so
        // the upstream call runs on a task of its own, past this request,
        // parked between rounds (`protocol/parked`).
        let (tx, questions) = tokio::sync::mpsc::channel(1);
        let cancel = tokio_util::sync::CancellationToken::new();
        asker.ct = cancel.clone();
        asker.rounds = Some(super::parked::Rounds {
            tx,
            caps: ctx.client_capabilities().unwrap_or_default(),
        });
        let to = Arc::new(crate::upstream::RelayTo::new(
            ctx.peer.clone(),
            progress,
            cc.log_level,
            Some(Arc::new(asker)),
        ));
        let job = {
            let (to, cancel, log) = (to.clone(), cancel.clone(), log.clone());
            let name = name.to_string();
            async move {
                let answer = connected
                    .call(&target, arguments, &to, cancel.cancelled())
                    .await;
                drop(permit);
                forwarded(&log, entry, meta, &name, &target, started, answer)
            }
        };
        let running = super::parked::Running {
            questions,
            done: tokio::spawn(job),
            cancel,
            retarget: Box::new(move |peer, token| to.retarget(peer, token)),
        };
        let round = round();
        return cc.parked.wait(running, &round).await;
    }
    let Some(plan) = &tool.run else {
        let why = "the tool declares no `run` section, so regent can describe it but not run it";
        return Ok(refuse(entry, meta, why.to_string()).into());
    };
    let Some(spec) = plan.select(&args) else {
        let why = "no run case of the tool matches these arguments";
        return Ok(refuse(entry, meta, why.to_string()).into());
    };
    let outcome = match spec {
        RunSpec::Cli(c) => match c.prepare(&args) {
            Ok(p) => {
                let _permit = cc.limit.try_enter().map_err(|e| busy(entry.clone(), e))?;
                intend(log, &mut entry).await?;
                exec::cli::run(&p, c.timeout, c.max_output, ctx.ct.cancelled()).await
            }
            Err(refusal) => return Ok(refuse(entry, meta, refusal.0).into()),
        },
        RunSpec::Http(h) => match h.prepare(&args) {
            Ok(p) => {
                let _permit = cc.limit.try_enter().map_err(|e| busy(entry.clone(), e))?;
                intend(log, &mut entry).await?;
                exec::http::run(h, p, ctx.ct.cancelled()).await
            }
            Err(refusal) => return Ok(refuse(entry, meta, refusal.0).into()),
        },
    };

    entry.outcome = Some(outcome.status.to_json());
    entry.duration = Some(outcome.duration);
    record(log, &entry);
    let mut execution = outcome.status.to_json();
    if let Value::Object(m) = &mut execution {
        m.insert(
            "durationMs".into(),
            json!(crate::decisions::millis(outcome.duration)),
        );
    }
    meta.insert(EXECUTION_META.into(), execution);
    Ok(report(tool, spec, outcome, meta).into())
}

impl Regent {
    /// `tools/call`: the request's context for [`call`], and its answer
    /// counted.
    pub(super) async fn answer_call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let started = Instant::now();
        let catalog = self.state.current();
        let args = Value::Object(request.arguments.unwrap_or_default());
        let caller = self.caller(&ctx);
        // The numbers its text spelled by hand and its caller's claims'.
        let spelled = crate::policy::spelled::Spelled::joined(
            super::spelled_of(&ctx).as_ref(),
            caller.as_ref().map_or(&[], |c| &c.spelled),
        );
        let cc = CallContext {
            log: &self.decisions,
            states: &self.states,
            mrtr: has_result_type(&ctx),
            retry: input::Retry {
                responses: request.input_responses,
                state: request.request_state,
            },
            limit: &self.calls,
            caller,
            enforce_scopes: self.enforce_scopes,
            pace: self.pace.as_ref(),
            upstreams: &self.upstreams,
            parked: &self.parked,
            state: &self.state,
            log_level: if has_result_type(&ctx) {
                #[allow(deprecated)]
                ctx.meta.log_level()
            } else {
                Some(self.log_level.get())
            },
            spelled,
        };
        // Boxed: rmcp runs every request in one future type whose size is
        // that of its largest branch, and a call's state (execution,
        // confirmation) made it ~9 KB, copied several times when each request
        // is spawned: ~40% of a tools/resolve's instructions (BENCHMARKS.md).
        let r = Box::pin(call(catalog, &cc, &request.name, args, &ctx)).await;
        self.record(
            "tools/call",
            count::Timed::Call,
            started,
            &r,
            count::call_outcome,
        );
        r
    }
}
