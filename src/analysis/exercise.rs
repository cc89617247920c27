//! Evaluating every rule of a tool's policies on many sample inputs, so
//! that mistakes regorus reports only when a faulty expression runs (unsafe
//! variables, unknown functions, wrong arity, recursion, type errors in
//! builtins) show in `regent check` rather than in production.
//!
//! The contract rules are evaluated through the tool's decision module as
//! every request does; helper rules that the contract reaches only on some
//! inputs are evaluated directly too. The samples vary each argument with a
//! finite domain in turn; `check` adds the proof's combinations when it has
//! them. A tool whose plan and exercised rules all run on `native` is
//! evaluated through its engines as a request is (regorus only as
//! native's fallback), so examining it makes no engine; the others on a
//! copy of the tool's engine.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::rego::generate;

/// Stands for the tool's whole decision (its evaluation plan) in the rule list.
const DECISION: &str = "<decision>";
use super::domain::domain;
use super::proof;
use crate::catalog::{Tool, schema};
use crate::diag::Diagnostic;
use crate::policy::engine as policy;
use crate::rego::{self, RuleKind};

/// The most rule evaluations one tool gets.
pub const BUDGET: usize = 20_000;

/// How many generated values an argument without a finite domain takes in turn.
pub const FREE_VALUES: usize = 4;

/// Samples split by the tool's inputSchema.
#[derive(Debug, Default)]
pub struct Checked {
    /// What a client could send: the samples to evaluate.
    pub valid: Vec<Value>,
    /// Samples inputSchema refuses (a schema the generator cannot satisfy):
    /// never evaluated, always reported.
    pub rejected: Vec<Value>,
}

/// Splits `samples` into those the tool's whole inputSchema accepts and
/// those it refuses.
pub fn validated(tool: &Tool, samples: Vec<Value>) -> Checked {
    let mut out = Checked::default();
    for s in samples {
        if tool.validate_complete(&s).is_empty() {
            out.valid.push(s);
        } else {
            out.rejected.push(s);
        }
    }
    out
}

/// A base sample and, for each argument, the base with that argument set to
/// each value of its finite domain in turn (or absent), or to a few
/// generated values the schema allows and the constants the rules compare
/// it with. Not validated: see [`validated`].
pub fn samples(tool: &Tool) -> Vec<Value> {
    let base = match schema::sample(&tool.input_schema) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let required: Vec<&str> = tool
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let literals = proof::literals(tool);
    let mut out = vec![Value::Object(base.clone())];
    for (name, s) in schema::properties(&tool.input_schema).into_iter().flatten() {
        // A finite domain in full; otherwise a few values the schema allows.
        let values = domain(s, required.contains(&name.as_str())).unwrap_or_else(|_| {
            let mut vs = schema::candidates(s);
            vs.truncate(FREE_VALUES);
            for v in literals.get(name).into_iter().flatten() {
                if !vs.contains(v) {
                    vs.push(v.clone());
                }
            }
            vs.into_iter().map(Some).collect()
        });
        for v in values.into_iter().take(64) {
            let mut m = base.clone();
            match v {
                Some(v) => {
                    m.insert(name.clone(), v);
                }
                None => {
                    m.remove(name);
                }
            }
            let v = Value::Object(m);
            if !out.contains(&v) {
                out.push(v);
            }
        }
    }
    // A client may send any number the schema allows, so try the extremes:
    // a rule that sizes an allocation or a loop by one fails here, in check,
    // rather than on the first hostile request.
    for (name, s) in schema::properties(&tool.input_schema).into_iter().flatten() {
        for v in extremes(s) {
            let mut m = base.clone();
            m.insert(name.clone(), v);
            let v = Value::Object(m);
            if !out.contains(&v) {
                out.push(v);
            }
        }
    }
    out
}

/// The largest magnitude a number argument may take, either way: the
/// schema's bounds (on its `multipleOf` grid, see [`schema::number_bounds`]),
/// or, without them, a value as large as JSON numbers carry exactly.
/// Nothing for other types or finite domains.
fn extremes(s: &Value) -> Vec<Value> {
    const UNBOUNDED: f64 = (1u64 << 53) as f64;
    let ty = s.get("type").and_then(Value::as_str);
    if !matches!(ty, Some("integer" | "number"))
        || s.get("enum").is_some()
        || s.get("const").is_some()
    {
        return Vec::new();
    }
    let integer = ty == Some("integer");
    let schema::Bounds { lo, hi, grid } = schema::number_bounds(s, integer);
    let hi = hi.unwrap_or((UNBOUNDED / grid).floor() * grid);
    let lo = lo.unwrap_or((-UNBOUNDED / grid).ceil() * grid);
    [hi, lo]
        .into_iter()
        .filter_map(|v| schema::number_value(v, integer))
        .collect()
}

/// Evaluates the decision and every non-function rule the tool reaches
/// (`Tool::modules`) on each sample; returns one diagnostic per distinct failure.
pub fn exercise(tool: &Tool, samples: &[Value]) -> Vec<Diagnostic> {
    if !tool.is_resolvable() {
        return Vec::new();
    }
    // The rules of what the tool reaches (`rego::reach`); a library package
    // it never imports is not its to report.
    let modules = tool.modules();
    let mut rules: Vec<(String, String)> = Vec::new();
    let mut seen = BTreeSet::new();
    for d in rego::rule_defs(&modules) {
        if d.kind == RuleKind::Function || d.name().is_empty() {
            continue;
        }
        let path = generate::rule_ref(&d.package, d.name());
        if seen.insert(path.clone()) {
            rules.push((path, format!("{}.{}", d.package, d.name())));
        }
    }
    rules.insert(0, (DECISION.to_string(), "the decision".to_string()));
    // When the plan and every rule run on `native`, they are evaluated as
    // a request evaluates them, through the tool's engines, and a shed
    // engine is not made again for this (10,000 tools: most of start-up's
    // check). What native cannot plainly decide still falls back to
    // regorus there, so an error regorus raises is found either way.
    let native = tool.runs_natively(
        rules
            .iter()
            .filter(|(path, _)| path != DECISION)
            .map(|(path, _)| path.as_str()),
    );
    let steps: Vec<policy::Step> = rules
        .iter()
        .map(|(path, _)| policy::Step {
            path: path.clone(),
            by_query: false,
        })
        .collect();
    let plan: Vec<&policy::Step> = tool.plan().iter().map(|(_, s)| s).collect();
    // Otherwise on a copy of the engine, made here.
    let mut template = None;
    if !native {
        match tool.engine() {
            None => return Vec::new(),
            Some(Ok(t)) => template = Some(t),
            Some(Err(e)) => {
                return vec![
                    Diagnostic::error(
                        "policy-eval",
                        e.location.clone().unwrap_or_else(|| tool.location.clone()),
                        format!("cannot evaluate `{}`'s policy: {}", tool.name, e.message),
                    )
                    .with_help("run `regent check` on the catalog and reload it"),
                ];
            }
        }
    }
    let mut engine = template.clone();
    // A shadow package (log-only) never stops its tool: its failures are
    // warnings, as the build makes them.
    let shadow = |name: &str| {
        tool.shadow_policy.as_deref().is_some_and(|pkg| {
            name.strip_prefix(pkg)
                .is_some_and(|rest| rest.starts_with('.'))
        })
    };

    let mut out: Vec<Diagnostic> = Vec::new();
    let mut seen_failures = BTreeSet::new();
    let mut budget = BUDGET;
    'samples: for args in samples {
        for (path, name) in &rules {
            if budget == 0 {
                break 'samples;
            }
            budget -= 1;
            // A query reaches rules defined by path (`meta.scratch := ...`),
            // whose prefix is not a rule path for `eval_rule`.
            let outcome = if let Some(engine) = engine.as_mut() {
                if path == DECISION {
                    tool.evaluate_on(engine, args, None).map(|_| None)
                } else {
                    policy::query_value(
                        engine,
                        path,
                        policy::input(&tool.name, args),
                        &tool.limits(),
                    )
                }
            } else if path == DECISION {
                tool.eval_pooled(plan.iter().copied(), args)
                    .unwrap_or(Ok(Vec::new()))
                    .map(|_| None)
            } else {
                let step = steps.iter().find(|s| &s.path == path);
                tool.eval_pooled(step, args)
                    .unwrap_or(Ok(Vec::new()))
                    .map(|_| None)
            };
            if let Err(e) = outcome {
                // A failed evaluation may leave the engine mid-way; start afresh.
                engine = template.clone();
                let key = (
                    e.location.as_ref().map(ToString::to_string),
                    e.message.clone(),
                );
                if !seen_failures.insert(key) {
                    continue;
                }
                let before = out.len();
                if crate::policy::errors::is_conflict(&e.message) {
                    out.push(
                        Diagnostic::error(
                            "rego-conflict",
                            e.location.clone().unwrap_or_else(|| tool.location.clone()),
                            format!(
                                "rules conflict for arguments {args} (evaluating {}): {}",
                                if name == "the decision" {
                                    format!("the decision for `{}`", tool.name)
                                } else {
                                    format!("rule {name}")
                                },
                                e.message
                            ),
                        )
                        .with_help(crate::policy::errors::CONFLICT_HELP),
                    );
                    shadow_warning(&mut out[before..], shadow(name));
                    continue;
                }
                let what = if name == "the decision" {
                    format!("the decision for `{}`", tool.name)
                } else {
                    format!("rule {name}")
                };
                out.push(
                    Diagnostic::error(
                        if e.timed_out {
                            "policy-timeout"
                        } else if e.over_memory_budget() {
                            "policy-memory"
                        } else {
                            "policy-eval"
                        },
                        e.location.clone().unwrap_or_else(|| tool.location.clone()),
                        format!("{what} fails for arguments {args}: {}", e.message),
                    )
                    .with_help(if e.timed_out {
                        "make the rule cheaper, or raise --policy-timeout-ms"
                    } else if e.over_memory_budget() {
                        "bound the argument that sizes this allocation in the input schema (`maximum`, `maxLength`, `maxItems`), or raise --policy-memory-mb"
                    } else {
                        "fix the rule; regorus reports this only when the expression runs, so it would fail these calls in production"
                    }),
                );
                shadow_warning(&mut out[before..], shadow(name));
            }
        }
    }
    out
}

/// Makes `found` warnings when they are a shadow package's.
fn shadow_warning(found: &mut [Diagnostic], shadow: bool) {
    if !shadow {
        return;
    }
    for d in found {
        d.severity = crate::diag::Severity::Warning;
        d.message = format!(
            "{} (a shadow policy: logged as an error, the enforced policy is unaffected)",
            d.message
        );
    }
}
