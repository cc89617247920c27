//! The worst-case proof: for a tool whose rules read only arguments with
//! finite domains (`enum`, `const`, `boolean`, `null`, and objects made of
//! those), resolve every combination and show that none is riskier than the
//! listed annotations; otherwise name a combination that is.
//!
//! Which arguments the rules read comes from the YAML `when` keys and, for
//! Rego, from the syntax tree (`rego::argument_reads`). When a policy
//! reads the arguments in a way that cannot be traced to names, every
//! declared argument is taken as read. Arguments no rule reads are held at
//! a sample value: they cannot change the answer. When the catalog declares
//! a caller schema and those rules read the caller, every combination is
//! resolved for each caller class (`analysis/caller_classes`), no caller
//! included. This module only computes facts; `check` decides how to report
//! them.
//!
//! This file holds what a proof finds ([`Proof`], [`Outcome`],
//! [`Counterexample`]), which arguments the rules read, running the proof
//! and evaluating the combinations; building the combinations and the
//! values sampled when there is no proof is `combine`'s.

use std::collections::BTreeMap;

use serde_json::Value;

use super::caller_classes::{self, CallerClasses};
use super::domain::{domain, required_names};
use super::literal::{self, Reach};
use super::partition::{self, Partition};
use crate::caller::Caller;
use crate::catalog::hints::{Hint, Hints};
use crate::catalog::{Catalog, Origin, ResolveError, Tool, schema};
use crate::diag::Location;
use crate::rego::{self, ArgumentReads};

pub use super::domain::LIMIT;

mod combine;

pub use combine::{
    combinations, combinations_with, finite_part, free_values, literals, proof_combinations,
};
use combine::{combinations_from, domains_of};

/// How many strings generated from a `pattern` literal-directed candidates
/// try.
const PATTERN_SAMPLES: usize = 16;

/// The hints a tool that does nothing risky would list.
pub const SAFEST: Hints = Hints {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};

/// Arguments for which a resolution is riskier than the listing.
#[derive(Debug, Clone)]
pub struct Counterexample {
    pub arguments: Value,
    pub hint: Hint,
    pub listed: bool,
    pub resolved: bool,
    pub origin: Origin,
    /// How many combinations in all resolve this hint this way.
    pub count: usize,
    /// The caller class, when the proof enumerated them (`Some(None)`: no
    /// caller).
    pub caller: Option<Option<Caller>>,
}

/// How a report names a caller class: `no caller`, or `caller claims {…}`.
pub fn caller_text(caller: Option<&Caller>) -> String {
    match caller {
        None => "no caller".to_string(),
        Some(c) => format!("caller claims {}", Value::Object(c.claims.clone())),
    }
}

/// A caller class as JSON: `null` for no caller, else `input.caller`.
pub fn caller_json(caller: Option<&Caller>) -> Value {
    caller.map_or(Value::Null, Caller::to_value)
}

/// Arguments on which the policy fails.
#[derive(Debug, Clone)]
pub struct Failure {
    pub arguments: Value,
    /// As [`Counterexample::caller`].
    pub caller: Option<Option<Caller>>,
    pub message: String,
    pub location: Option<String>,
}

/// What the proof could say about one tool.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Every combination was resolved; none is riskier than listed.
    /// `tightest` is the least risky listing that is still safe.
    Proved { tightest: Hints },
    /// Some combinations are riskier than listed (one example per hint), or
    /// make the policy fail (every distinct failure, with its first
    /// arguments).
    Refuted {
        counterexamples: Vec<Counterexample>,
        failures: Vec<Failure>,
    },
    /// Every evaluated combination was safe, but some were refused by
    /// inputSchema with sample values for the arguments no rule reads, so
    /// not every reachable combination was seen.
    Partial { rejected: usize, example: Value },
    /// The domains are not finite or too large.
    NotCovered {
        reason: String,
        location: Option<Location>,
    },
}

/// The proof for one tool.
#[derive(Debug, Clone)]
pub struct Proof {
    pub tool: String,
    /// The arguments the tool's rules read, in order.
    pub arguments: Vec<String>,
    pub combinations: usize,
    pub evaluated: usize,
    pub outcome: Outcome,
    /// For a tool the proof does not cover, what `check` saw by sampling.
    pub sampled: Option<Sampled>,
    /// The free string arguments the proof partitioned into finitely many
    /// classes (see `partition`), by name.
    pub partitions: BTreeMap<String, Partition>,
    /// The free string arguments no partition covers, for which the proof
    /// tried literal-directed candidates (`analysis/literal`), by name. When
    /// every one is reached (`unreached` is `None`), the proof resolved
    /// their candidates as those arguments' domains: a `Proved` outcome is
    /// then proved by reach, weaker than by partition (see `analysis/literal`).
    pub reached: BTreeMap<String, Reach>,
    /// The caller classes every combination was resolved for, when the
    /// rules that can change the annotations read the caller and the
    /// catalog declares its claims (`analysis/caller_classes`).
    pub callers: Option<CallerClasses>,
}

impl Proof {
    /// Whether the outcome rests on literal-directed candidates.
    pub fn by_reach(&self) -> bool {
        !self.reached.is_empty() && self.reached.values().all(|r| r.unreached.is_none())
    }

    /// How each argument was reached, for a report (`a: …; b: …`).
    pub fn reached_text(&self) -> String {
        self.reached
            .values()
            .map(|r| r.describe())
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The arguments `tool`'s rules read, with where a policy first reads each,
/// or why they cannot be known.
pub fn arguments_read(
    tool: &Tool,
) -> Result<BTreeMap<String, Option<Location>>, (Location, String)> {
    reads(tool, false, false)
}

/// The arguments that can change `tool`'s annotations: as
/// [`arguments_read`], without those only its `deny`, `confirm`, `meta` and
/// `security_schemes` rules read (`rego::hint_argument_reads`).
pub fn hint_arguments_read(
    tool: &Tool,
) -> Result<BTreeMap<String, Option<Location>>, (Location, String)> {
    reads(tool, true, false)
}

/// `callers`: the catalog declares a caller schema, so reading the caller
/// is no unknown read (the caller classes follow it).
fn reads(
    tool: &Tool,
    hints_only: bool,
    callers: bool,
) -> Result<BTreeMap<String, Option<Location>>, (Location, String)> {
    let mut read: BTreeMap<String, Option<Location>> = BTreeMap::new();
    for rule in &tool.rules {
        for k in rule.when.keys() {
            read.entry(k.clone())
                .or_insert_with(|| Some(rule.location.clone()));
        }
    }
    if tool.is_resolvable() {
        // Only what the tool reaches: a library package it never imports
        // cannot change its answers (`rego::reach`).
        let modules = tool.modules();
        let reads = match (&tool.policy, hints_only) {
            (Some(package), true) => {
                rego::reads::hint_argument_reads_with(&modules, package, callers)
            }
            _ => rego::argument_reads(&modules),
        };
        match reads {
            ArgumentReads::Known(names) => {
                for (k, at) in names {
                    read.entry(k).or_insert(Some(at));
                }
            }
            ArgumentReads::Any { location, why } => return Err((location, why)),
        }
    }
    Ok(read)
}

/// Runs the proof for `tool`.
pub fn prove(catalog: &Catalog, tool: &Tool) -> Proof {
    let mut proof = Proof {
        tool: tool.name.clone(),
        arguments: Vec::new(),
        combinations: 0,
        evaluated: 0,
        outcome: Outcome::NotCovered {
            reason: String::new(),
            location: None,
        },
        sampled: None,
        partitions: BTreeMap::new(),
        reached: BTreeMap::new(),
        callers: None,
    };
    match caller_classes::for_tool(catalog, tool) {
        Ok(c) => proof.callers = c,
        Err((reason, location)) => {
            proof.arguments = arguments_read(tool)
                .map(|r| r.into_keys().collect())
                .unwrap_or_default();
            proof.outcome = Outcome::NotCovered { reason, location };
            return proof;
        }
    }
    let read = match reads(tool, true, catalog.caller_schema().is_some()) {
        Ok(r) => r,
        Err((location, why)) => {
            // Fall back to every declared argument.
            let all: Vec<String> = schema::properties(&tool.input_schema)
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            proof.arguments = all.clone();
            match combinations(tool, &all) {
                Ok(c) => return finish(catalog, tool, proof, c),
                Err((reason, _)) => {
                    proof.outcome = Outcome::NotCovered {
                        reason: format!("{why}, so every argument counts, and {reason}"),
                        location: Some(location),
                    };
                    return proof;
                }
            }
        }
    };
    proof.arguments = read.keys().cloned().collect();
    // Free string arguments: partition them when every use that can change
    // the annotations is a recognized predicate.
    let props = schema::properties(&tool.input_schema)
        .cloned()
        .unwrap_or_default();
    let required = required_names(&tool.input_schema);
    let mut uses = None;
    let mut unpartitioned: BTreeMap<String, (String, Option<Location>)> = BTreeMap::new();
    for name in &proof.arguments {
        let Some(s) = props.get(name) else { continue };
        if domain(s, required.contains(name)).is_ok() {
            continue;
        }
        let uses = uses.get_or_insert_with(|| partition::uses(tool));
        match partition::partition(tool, name, uses.get(name)) {
            Ok(p) => {
                proof.partitions.insert(name.clone(), p);
            }
            Err(why) => {
                unpartitioned.insert(name.clone(), why);
            }
        }
    }
    // Free string arguments no partition covers: literal-directed
    // candidates, from the constants their derivations are compared with.
    let mut reach_uses = None;
    for name in unpartitioned.keys() {
        let is_string =
            props.get(name).and_then(|s| s.get("type")) == Some(&Value::String("string".into()));
        if !is_string {
            continue;
        }
        let uses = reach_uses.get_or_insert_with(|| literal::uses(tool));
        // Strings the schema's `pattern` generates, for the sides the
        // inverted candidates miss under it.
        let extra: Vec<String> = props
            .get(name)
            .and_then(|s| {
                let p = s.get("pattern")?.as_str()?;
                let max = s
                    .get("maxLength")
                    .and_then(Value::as_u64)
                    .map_or(usize::MAX, |m| m as usize);
                Some(crate::regex_samples::pattern_strings(
                    p,
                    max,
                    PATTERN_SAMPLES,
                ))
            })
            .unwrap_or_default();
        let r = literal::reach(
            name,
            uses.get(name),
            &extra,
            partition::validator(tool, name),
        );
        proof.reached.insert(name.clone(), r);
    }
    match combinations_from(tool, &proof.arguments, &domains_of(&proof)) {
        Ok(c) => finish(catalog, tool, proof, c),
        Err((mut reason, _)) => {
            let arg = proof
                .arguments
                .iter()
                .find(|a| reason.contains(&format!("`{a}`")));
            let mut location = arg.and_then(|a| read.get(a).cloned().flatten());
            let mut blocked_by = None;
            if let Some((why, at)) = arg.and_then(|a| unpartitioned.get(a)) {
                reason.push_str(&format!(", and it is not partitioned: {why}"));
                if at.is_some() {
                    location = at.clone();
                }
                blocked_by = why.split("` uses it").next();
            }
            // The comparison literal-directed candidates did not reach is
            // where to look.
            if let Some((at, why)) = arg
                .and_then(|a| proof.reached.get(a))
                .and_then(|r| r.unreached.as_ref())
            {
                // The same use stops both: said once.
                let same = blocked_by
                    .and_then(|b| why.strip_prefix(b))
                    .is_some_and(|rest| rest.starts_with("` is no comparison"));
                if same {
                    reason.push_str("; literal-directed candidates do not follow that use either");
                } else {
                    reason.push_str(&format!(
                        "; literal-directed candidates do not reach it: {why}"
                    ));
                }
                location = Some(at.clone());
            }
            proof.outcome = Outcome::NotCovered { reason, location };
            proof
        }
    }
}

/// What resolving a set of argument objects showed.
struct Evaluation {
    evaluated: usize,
    tightest: Hints,
    counterexamples: Vec<Counterexample>,
    failures: Vec<Failure>,
    rejected: usize,
    rejected_example: Option<Value>,
}

/// What resolving samples showed, for a tool the proof does not cover.
#[derive(Debug, Clone, Default)]
pub struct Sampled {
    /// Combinations resolved (inputSchema accepted them).
    pub evaluated: usize,
    /// Combinations inputSchema refused, so never resolved.
    pub rejected: usize,
    pub counterexamples: Vec<Counterexample>,
    /// Samples whose resolution failed (a conflict, an ill-typed value, a
    /// rule error): one per distinct message, each with the first arguments
    /// it failed on.
    pub failures: Vec<Failure>,
}

/// Resolves `samples`: for tools the proof does not cover, sampling can
/// still find a riskier resolution, though never show there is none.
pub fn sample(catalog: &Catalog, tool: &Tool, samples: &[Value]) -> Sampled {
    let e = evaluate(catalog, tool, samples.to_vec(), &[None], false);
    Sampled {
        evaluated: e.evaluated,
        rejected: e.rejected,
        counterexamples: e.counterexamples,
        failures: e.failures,
    }
}

fn finish(catalog: &Catalog, tool: &Tool, mut proof: Proof, combos: Vec<Value>) -> Proof {
    let callers: Vec<Option<Caller>> = match &proof.callers {
        Some(c) => c.callers.clone(),
        None => vec![None],
    };
    let total = combos.len().saturating_mul(callers.len());
    if total > LIMIT {
        proof.outcome = Outcome::NotCovered {
            reason: format!(
                "its {} argument combinations for each of {} caller classes make {total}, more than the {LIMIT} the proof evaluates",
                combos.len(),
                callers.len()
            ),
            location: None,
        };
        return proof;
    }
    proof.combinations = total;
    let e = evaluate(catalog, tool, combos, &callers, proof.callers.is_some());
    proof.evaluated = e.evaluated;
    proof.outcome = if !e.counterexamples.is_empty() || !e.failures.is_empty() {
        Outcome::Refuted {
            counterexamples: e.counterexamples,
            failures: e.failures,
        }
    } else if e.rejected > 0 {
        Outcome::Partial {
            rejected: e.rejected,
            example: e.rejected_example.unwrap_or(Value::Null),
        }
    } else {
        Outcome::Proved {
            tightest: e.tightest,
        }
    };
    proof
}

/// Resolves each of `combos` for each of `callers`; `varied`: the callers
/// are the proof's classes, named in what it finds.
fn evaluate(
    catalog: &Catalog,
    tool: &Tool,
    combos: Vec<Value>,
    callers: &[Option<Caller>],
    varied: bool,
) -> Evaluation {
    let mut evaluated = 0;
    let mut tightest = SAFEST;
    let mut counterexamples: Vec<Counterexample> = Vec::new();
    let mut failures: Vec<Failure> = Vec::new();
    // Every distinct failure is kept (issue 31): how many of them a person
    // is shown is `check`'s report's business, not the proof's.
    let mut failed: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut rejected = 0;
    let mut rejected_example = None;
    let named = |c: &Option<Caller>| varied.then(|| c.clone());
    for (args, caller) in combos
        .iter()
        .flat_map(|a| callers.iter().map(move |c| (a, c)))
    {
        let args = args.clone();
        match catalog.resolve_layers_as(&tool.name, &args, caller.as_ref()) {
            Ok(r) => {
                evaluated += 1;
                tightest = tightest.join(&r.hints);
                for h in r.hints.riskier_than(&tool.listed) {
                    if let Some(c) = counterexamples.iter_mut().find(|c| c.hint == h) {
                        c.count += 1;
                        continue;
                    }
                    let k = Hint::ALL.iter().position(|x| *x == h).unwrap_or(0);
                    counterexamples.push(Counterexample {
                        arguments: args.clone(),
                        hint: h,
                        listed: tool.listed.get(h),
                        resolved: r.hints.get(h),
                        origin: r.hint_origins[k],
                        count: 1,
                        caller: named(caller),
                    });
                }
            }
            Err(ResolveError::InvalidArguments { .. }) => {
                rejected += 1;
                rejected_example.get_or_insert(args);
            }
            Err(ResolveError::Policy {
                message, location, ..
            }) => {
                evaluated += 1;
                if failed.insert(message.clone()) {
                    failures.push(Failure {
                        arguments: args,
                        caller: named(caller),
                        message,
                        location,
                    });
                }
            }
            Err(e) => {
                // resolve_layers never checks riskiness and the tool exists.
                failures.push(Failure {
                    arguments: args,
                    caller: named(caller),
                    message: e.to_string(),
                    location: None,
                });
            }
        }
    }
    counterexamples.sort_by_key(|c| c.hint);
    Evaluation {
        evaluated,
        tightest,
        counterexamples,
        failures,
        rejected,
        rejected_example,
    }
}
