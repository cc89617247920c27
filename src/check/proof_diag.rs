//! What `check` says of a tool's proof and of its failing decisions, as
//! located diagnostics: a listing looser than the tightest safe one, each
//! counterexample at the listing's hint with the rule that produced it
//! (`explain`), a proof that saw only part of the combinations or does not
//! cover the tool, and a resolution that fails (a conflict, a limit hit, an
//! evaluation error) at the rule it names.
//!
//! Running the proof and sampling is `analysis::proof`'s, deciding what to run
//! and which diagnostics are failing decisions `super`'s (`tool_findings`).

use std::collections::BTreeMap;

use crate::analysis::explain;
use crate::analysis::proof::{self, Outcome, Proof};
use crate::catalog::hints::Hint;
use crate::catalog::{Catalog, Tool};
use crate::diag::{Diagnostic, Location};
use crate::source::Source;

/// Where the listing of `tool` states `hint` (or the nearest key that exists).
fn listing_location(source: &Source, tool: &Tool, hint: Option<Hint>) -> Location {
    for (file, at, decl) in source.tools() {
        if decl.name == tool.name {
            let p = at.key("annotations");
            return file.locate(&match hint {
                Some(h) => p.key(h.key()),
                None => p,
            });
        }
    }
    tool.location.clone()
}

fn parse_location(s: &str) -> Option<Location> {
    let mut parts = s.rsplitn(3, ':');
    let col = parts.next()?.parse().ok()?;
    let line = parts.next()?.parse().ok()?;
    Some(Location::new(parts.next()?, line, col))
}

/// Turns a proof into diagnostics for people.
pub(super) fn proof_diagnostics(
    source: &Source,
    catalog: &Catalog,
    tool: &Tool,
    p: &Proof,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let name = &tool.name;
    match &p.outcome {
        Outcome::Proved { tightest } => {
            let looser: Vec<Hint> = Hint::ALL
                .into_iter()
                .filter(|&h| tool.listed.get(h) != tightest.get(h))
                .collect();
            if let Some(&first) = looser.first() {
                let listing: Vec<String> = Hint::ALL
                    .iter()
                    .map(|h| format!("{}: {}", h.key(), tightest.get(*h)))
                    .collect();
                out.push(
                    Diagnostic::warning(
                        "listed-looser",
                        listing_location(source, tool, Some(first)),
                        format!(
                            "`{name}` lists {} but none of its {} argument combinations resolves that way",
                            looser
                                .iter()
                                .map(|h| format!("{}: {}", h.key(), tool.listed.get(*h)))
                                .collect::<Vec<_>>()
                                .join(", "),
                            p.combinations
                        ),
                    )
                    .with_help(format!(
                        "clients treat the tool as riskier than it is; the tightest listing that is still safe is {{{}}}",
                        listing.join(", ")
                    )),
                );
            }
        }
        Outcome::Refuted {
            counterexamples, ..
        } => {
            // Its failures are `tool_findings`', which marks them as failing
            // decisions.
            let note = if p.by_reach() {
                format!(
                    " (a literal-directed candidate: {})",
                    p.reached_text()
                )
            } else {
                String::new()
            };
            for c in counterexamples {
                out.push(counterexample(source, catalog, tool, c, &note));
            }
        }
                Outcome::Partial { rejected, example } => out.push(
            Diagnostic::warning(
                "proof-incomplete",
                tool.location.clone(),
                format!(
                    "the worst-case proof for `{name}` saw {} of {} combinations: inputSchema refused {rejected}, such as {example}",
                    p.evaluated, p.combinations
                ),
            )
            .with_help("regent fills the arguments no rule reads with sample values; give them a `default` that inputSchema accepts, or cover these calls with `regent test` cases"),
        ),
        Outcome::NotCovered { reason, location } => out.push(
            Diagnostic::warning(
                "proof-not-covered",
                location.clone().unwrap_or_else(|| tool.location.clone()),
                format!(
                    "the worst-case proof does not cover `{name}`: {reason}{}",
                    p.sampled.as_ref().map(|s| format!(
                        "; sampled {} combination{} ({} rejected by inputSchema), which can find a riskier resolution but not show there is none",
                        s.evaluated + s.rejected,
                        if s.evaluated + s.rejected == 1 { "" } else { "s" },
                        s.rejected
                    )).unwrap_or_default()
                ),
            )
            .with_help(if reason.contains("reads the caller, whose claims") {
                "declare the callers' claims once in a tool file (`caller: {claims: <JSON Schema>}`, docs/http.md \"Caller schema\") so the proof enumerates caller classes, or cover the risky calls with `regent test` cases"
            } else if p.callers.is_some()
                || reason.starts_with("claim `")
                || reason.contains("caller classes")
            {
                "give the claims the rules read an `enum`, `const` or boolean type in the caller schema (an array of such items, read by `\"v\" in ...`), or cover the risky calls with `regent test` cases"
            } else {
                "give the arguments the rules read an `enum`, `const` or boolean type, or cover the risky calls with `regent test` cases"
            }),
        ),
    }
    out
}

/// A counterexample as a diagnostic at the listing's hint, naming the rule
/// that produced the risky value.
pub(super) fn counterexample(
    source: &Source,
    catalog: &Catalog,
    tool: &Tool,
    c: &proof::Counterexample,
    note: &str,
) -> Diagnostic {
    let name = &tool.name;
    let caller = c.caller.clone().flatten();
    let producer = catalog
        .resolve_layers_as(name, &c.arguments, caller.as_ref())
        .ok()
        .and_then(|r| {
            explain::explain(tool, &c.arguments, caller.as_ref(), &r)
                .into_iter()
                .find(|ch| ch.field == format!("annotations.{}", c.hint.key()))
        })
        .and_then(|ch| ch.producers.first().map(ToString::to_string));
    let more = if c.count > 1 {
        format!(
            " (and {} more combination{})",
            c.count - 1,
            if c.count == 2 { "" } else { "s" }
        )
    } else {
        String::new()
    };
    Diagnostic::error(
        "counterexample",
        listing_location(source, tool, Some(c.hint)),
        format!(
            "`{name}` resolves {} to {} for arguments {}{}{more}, riskier than the listed {}{note}",
            c.hint.key(),
            c.resolved,
            c.arguments,
            as_caller(&c.caller),
            c.listed
        ),
    )
    .with_help(format!(
        "{}the listing must state the worst case: set annotations.{} to {} on the tool, or change the rule so these arguments{} resolve to {}",
        producer.map(|p| format!("set by {p}; ")).unwrap_or_default(),
        c.hint.key(),
        c.resolved,
        match &c.caller {
            Some(None) => " without a caller",
            Some(Some(_)) => " for this caller",
            None => "",
        },
        c.listed
    ))
}

/// ` and caller claims {…}` / ` and no caller` when the proof enumerated
/// caller classes.
fn as_caller(c: &Option<Option<crate::caller::Caller>>) -> String {
    match c {
        Some(c) => format!(" and {}", proof::caller_text(c.as_ref())),
        None => String::new(),
    }
}

/// A resolution that failed on `f.arguments`: the client would get -32603.
/// `rules` remembers where the rules already looked up are.
pub(super) fn failure(
    tool: &crate::catalog::Tool,
    f: &proof::Failure,
    rules: &mut BTreeMap<String, Option<Location>>,
) -> Diagnostic {
    let name = &tool.name;
    // An ill-typed value has no regorus location: point at the rule the
    // message names (`rule tools.files.deny holds 42; ...`).
    let location = f
        .location
        .as_deref()
        .and_then(parse_location)
        .or_else(|| {
            let rule = f.message.strip_prefix("rule ")?.split_whitespace().next()?;
            rules
                .entry(rule.to_string())
                .or_insert_with(|| tool.rule_location(rule))
                .clone()
        })
        .unwrap_or_else(|| tool.location.clone());
    if crate::policy::errors::is_conflict(&f.message) {
        return Diagnostic::error(
            "rego-conflict",
            location,
            format!(
                "rules conflict for arguments {}{} (resolving `{name}`): {}",
                f.arguments,
                as_caller(&f.caller),
                f.message
            ),
        )
        .with_help(crate::policy::errors::CONFLICT_HELP);
    }
    // Which limit stopped it, as exercising the rules says too.
    let code = match crate::policy::errors::limit_hit(&f.message) {
        Some(crate::policy::errors::Limit::Memory) => "policy-memory",
        Some(crate::policy::errors::Limit::Time) => "policy-timeout",
        None => "policy-eval",
    };
    Diagnostic::error(
        code,
        location,
        format!(
            "the decision for `{name}` fails for arguments {}{}: {}",
            f.arguments,
            as_caller(&f.caller),
            f.message
        ),
    )
    .with_help("fix the policy; these calls would get an internal error (-32603) in production")
}
