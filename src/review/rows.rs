//! Building `regent review`'s tables from what `check` kept: for each tool
//! its listing, then one row per argument class of the proof (or the
//! sampled combinations) and per caller class, each row decided as
//! `resolve --explain` decides it. The model is the parent's; rendering is
//! `markdown`'s and `html`'s.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{
    Class, Coverage, Decision, Field, Finding, HintCell, MAX_ROWS, Other, Review, Row, RowKey,
    RowOutcome, ToolTable, show,
};
use crate::analysis::explain::{self, Producer};
use crate::analysis::proof::{self, Outcome, Proof};
use crate::caller::Caller;
use crate::catalog::hints::Hint;
use crate::catalog::visibility::Verdict;
use crate::catalog::{Catalog, ResolveError, Tool};
use crate::check::Checked;
use crate::rego;

/// Builds the review of what `checked` holds. `callers` are the caller
/// classes besides "no caller" (the catalog's test-case callers, or a
/// declared caller schema's classes).
pub fn build(paths: &[String], checked: &Checked, callers: &[Caller]) -> Review {
    let report = &checked.report;
    let findings: Vec<Finding> = report
        .diagnostics
        .iter()
        .map(|d| Finding {
            severity: d.severity,
            code: d.code,
            location: d.location.to_string(),
            message: d.message.clone(),
            help: d.help.clone(),
        })
        .collect();
    let mut tools = Vec::new();
    if let Some(catalog) = &checked.catalog {
        let proofs: BTreeMap<&str, &Proof> =
            report.proofs.iter().map(|p| (p.tool.as_str(), p)).collect();
        let rows: Vec<ToolTable> = crate::par::map_ordered(catalog.tools(), 16, |tool| {
            table(
                catalog,
                tool,
                proofs.get(tool.name.as_str()).copied(),
                checked.sampled.get(&tool.name),
                checked.cases.get(&tool.name).map(Vec::as_slice),
                callers,
                &findings,
            )
        });
        tools = rows;
    }
    Review {
        paths: paths.to_vec(),
        declared: report.tools,
        tools,
        findings,
    }
}

fn table(
    catalog: &Catalog,
    tool: &Tool,
    proof: Option<&Proof>,
    sampled: Option<&Vec<Value>>,
    cases: Option<&[Value]>,
    callers: &[Caller],
    findings: &[Finding],
) -> ToolTable {
    let mut t = ToolTable {
        name: tool.name.clone(),
        title: tool.title.clone(),
        description: tool.description.clone(),
        location: tool.location.to_string(),
        listed: tool.listed,
        listed_meta: tool.meta.clone(),
        listed_security_schemes: tool.security_schemes.clone(),
        coverage: Coverage::ListedOnly,
        arguments: Vec::new(),
        partitions: Vec::new(),
        held: Vec::new(),
        per_caller: false,
        rows: Vec::new(),
        omitted: 0,
    };
    let Some(proof) = proof.filter(|_| tool.is_resolvable()) else {
        // Nothing to resolve: one row, the listing, unless `visible`
        // hides the tool from someone.
        t.per_caller = tool.has_visible_rule() && !callers.is_empty();
        let args = crate::catalog::schema::sample(&tool.input_schema);
        for caller in caller_classes(t.per_caller, callers) {
            t.rows.push(Row {
                key: key(tool, "{}".to_string(), caller),
                class: Vec::new(),
                arguments: args.clone(),
                caller: caller.map(label),
                others: Vec::new(),
                outcome: match tool.visibility(caller) {
                    Verdict::Visible => RowOutcome::Decided(Box::new(listed_decision(tool))),
                    v => hidden(v),
                },
            });
        }
        return t;
    };
    t.arguments = proof.arguments.clone();
    t.partitions = proof.partitions.values().map(|p| p.describe()).collect();
    t.held = crate::catalog::schema::properties(&tool.input_schema)
        .map(|p| {
            p.keys()
                .filter(|k| !proof.arguments.contains(k))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    t.coverage = match &proof.outcome {
        Outcome::Proved { .. } => Coverage::Proved {
            combinations: proof.combinations,
        },
        Outcome::Refuted { .. } => Coverage::Refuted {
            combinations: proof.combinations,
        },
        Outcome::Partial { rejected, .. } => Coverage::Partial {
            combinations: proof.combinations,
            rejected: *rejected,
        },
        Outcome::NotCovered { reason, .. } => {
            // check's own warning, as it printed it.
            let prefix = format!("the worst-case proof does not cover `{}`", tool.name);
            let warning = findings
                .iter()
                .find(|f| f.code == "proof-not-covered" && f.message.starts_with(&prefix))
                .map(|f| f.message.clone())
                .unwrap_or_else(|| format!("{prefix}: {reason}"));
            Coverage::NotCovered { warning }
        }
    };
    let combos: Vec<Value> = match &proof.outcome {
        Outcome::NotCovered { .. } => sampled.cloned().unwrap_or_default(),
        _ => {
            proof::combinations_with(tool, &proof.arguments, &proof.partitions).unwrap_or_default()
        }
    };
    t.per_caller = !callers.is_empty()
        && (tool.has_visible_rule()
            || (tool.policy.is_some() && rego::reads_caller(&tool.modules())));
    // One row per class: samples that agree on the class's arguments
    // (differing in arguments no rule reads) are one class.
    let mut seen = std::collections::BTreeSet::new();
    let classes: Vec<(String, Class, Value)> = combos
        .into_iter()
        .filter_map(|args| {
            let class: Class = proof
                .arguments
                .iter()
                .map(|a| (a.clone(), args.get(a).cloned()))
                .collect();
            let k = class_key(&class);
            seen.insert(k.clone()).then_some((k, class, args))
        })
        .collect();
    let callers_here = caller_classes(t.per_caller, callers);
    // The catalog's test-case arguments, by the class they fall in.
    let mut own: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    let mut distinct = std::collections::BTreeSet::new();
    for args in cases.unwrap_or_default() {
        if let Some(class) = class_of(proof, args)
            && distinct.insert(canonical(args).to_string())
        {
            own.entry(class_key(&class)).or_default().push(args);
        }
    }
    for (k, class, args) in classes {
        for &caller in &callers_here {
            if t.rows.len() >= MAX_ROWS {
                t.omitted += 1;
                continue;
            }
            let outcome = decide(catalog, tool, &args, caller);
            let others = match (&outcome, own.get(&k)) {
                (RowOutcome::Decided(rep), Some(own)) => {
                    others(catalog, tool, &args, rep, own, caller)
                }
                _ => Vec::new(),
            };
            t.rows.push(Row {
                key: key(tool, k.clone(), caller),
                class: class.clone(),
                outcome,
                arguments: args.clone(),
                caller: caller.map(label),
                others,
            });
        }
    }
    t
}

/// The test-case arguments `own` of a row's class whose `deny` reasons, or
/// whether a `confirm` is asked, differ from the representative's (`rep`,
/// for `args`; a question worded after the arguments is alike): the
/// classes are drawn for the annotations, so other values of a class may
/// be denied (`..` in a path) where its representative is not.
fn others(
    catalog: &Catalog,
    tool: &Tool,
    args: &Value,
    rep: &Decision,
    own: &[&Value],
    caller: Option<&Caller>,
) -> Vec<Other> {
    let reasons = |d: &Decision| -> Vec<String> { d.deny.iter().map(|f| show(&f.value)).collect() };
    let rep_deny = reasons(rep);
    let mut out = Vec::new();
    for &o in own {
        if o == args {
            continue;
        }
        let RowOutcome::Decided(d) = decide(catalog, tool, o, caller) else {
            continue;
        };
        let deny = reasons(&d);
        // A denied call is never asked: its missing question is no news.
        let asks = !d.denied() && d.confirm.is_some() != rep.confirm.is_some();
        if deny == rep_deny && !asks {
            continue;
        }
        out.push(Other {
            arguments: differing(args, o),
            deny: if deny == rep_deny { Vec::new() } else { deny },
            confirm: asks.then(|| {
                d.confirm
                    .as_ref()
                    .map_or("(asks nothing)".to_string(), |c| show(&c.value))
            }),
        });
    }
    out
}

/// The class `args` falls in: each of the proof's arguments as it is,
/// a partitioned string as the representative that meets the same
/// predicates; `None` when a partitioned argument is not a string.
fn class_of(proof: &Proof, args: &Value) -> Option<Class> {
    proof
        .arguments
        .iter()
        .map(|a| {
            let v = args.get(a).cloned();
            let Some(p) = proof.partitions.get(a) else {
                return Some((a.clone(), v));
            };
            let Some(v) = v else {
                return Some((a.clone(), None));
            };
            let s = v.as_str()?;
            let sig = signature(p, s);
            let rep = p.representatives.iter().find(|r| signature(p, r) == sig)?;
            Some((a.clone(), Some(Value::String(rep.clone()))))
        })
        .collect()
}

/// Which of the partition's predicates `s` meets.
fn signature(p: &crate::analysis::partition::Partition, s: &str) -> Vec<bool> {
    let x = p.fold.apply(s);
    p.equals
        .iter()
        .map(|l| x == *l)
        .chain(p.prefixes.iter().map(|l| x.starts_with(l.as_str())))
        .chain(p.suffixes.iter().map(|l| x.ends_with(l.as_str())))
        .chain(p.contains.iter().map(|l| x.contains(l.as_str())))
        .collect()
}

/// The arguments of `other` that differ from `row`'s: `path="../x"`,
/// `content absent`.
fn differing(row: &Value, other: &Value) -> String {
    let empty = Map::new();
    let (r, o) = (
        row.as_object().unwrap_or(&empty),
        other.as_object().unwrap_or(&empty),
    );
    let keys: std::collections::BTreeSet<&String> = r.keys().chain(o.keys()).collect();
    keys.into_iter()
        .filter(|k| r.get(*k) != o.get(*k))
        .map(|k| match o.get(k) {
            Some(v) => format!("{k}={v}"),
            None => format!("{k} absent"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn caller_classes(per_caller: bool, callers: &[Caller]) -> Vec<Option<&Caller>> {
    let mut out = vec![None];
    if per_caller {
        out.extend(callers.iter().map(Some));
    }
    out
}

fn key(tool: &Tool, arguments: String, caller: Option<&Caller>) -> RowKey {
    RowKey {
        tool: tool.name.clone(),
        arguments,
        caller: caller
            .map(|c| canonical(&c.to_value()).to_string())
            .unwrap_or_default(),
    }
}

fn class_key(class: &[(String, Option<Value>)]) -> String {
    let m: Map<String, Value> = class
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.clone()?)))
        .collect();
    canonical(&Value::Object(m)).to_string()
}

/// `v` with every object's keys sorted, so that equal documents print alike
/// whatever order they were written in.
fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, Value> =
                m.iter().map(|(k, v)| (k, canonical(v))).collect();
            Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        v => v.clone(),
    }
}

/// A caller as a reviewer reads it: the subject, then the claims besides
/// `sub` and `iss` (the issuer is the same for most catalogs' callers).
pub fn label(c: &Caller) -> String {
    let claims: Map<String, Value> = c
        .claims
        .iter()
        .filter(|(k, _)| *k != "sub" && *k != "iss")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if claims.is_empty() {
        c.subject.clone()
    } else {
        format!("{} {}", c.subject, canonical(&Value::Object(claims)))
    }
}

fn hidden(v: Verdict) -> RowOutcome {
    match v {
        Verdict::Failed { message, .. } => RowOutcome::Hidden { why: Some(message) },
        _ => RowOutcome::Hidden { why: None },
    }
}

/// The listing as the decision of a tool with nothing to resolve.
fn listed_decision(tool: &Tool) -> Decision {
    Decision {
        hints: Hint::ALL
            .into_iter()
            .map(|h| HintCell {
                hint: h,
                value: tool.listed.get(h),
                listed: tool.listed.get(h),
                by: Vec::new(),
            })
            .collect(),
        fields: Vec::new(),
        deny: Vec::new(),
        confirm: None,
    }
}

/// The decision a call of `tool` with `args` from `caller` gets, as
/// `regent resolve --explain` decides and explains it: on the paths as a
/// `paths:` fence resolves them, the fence's reasons with it.
fn decide(catalog: &Catalog, tool: &Tool, args: &Value, caller: Option<&Caller>) -> RowOutcome {
    let verdict = tool.visibility(caller);
    if verdict != Verdict::Visible {
        return hidden(verdict);
    }
    let mut fenced = args.clone();
    let mut by_fence = Vec::new();
    for f in &tool.fences {
        for reason in crate::fence::apply(std::slice::from_ref(f), &mut fenced) {
            by_fence.push((reason, f));
        }
    }
    let mut r = match catalog.resolve_layers_as(&tool.name, &fenced, caller) {
        Ok(r) => r,
        Err(e @ ResolveError::InvalidArguments { .. }) => {
            return RowOutcome::Invalid(e.to_string());
        }
        Err(ResolveError::CallerClaimsInvalid(why)) => {
            return RowOutcome::CallerRefused(why.to_string());
        }
        Err(e) => return RowOutcome::Failed(e.to_string()),
    };
    r.add_deny(by_fence.iter().map(|(reason, _)| reason.clone()).collect());
    let changes = explain::explain(tool, &fenced, caller, &r);
    let by = |c: &explain::Change| -> Vec<String> {
        if let Some((_, f)) = by_fence
            .iter()
            .find(|(reason, _)| c.field == "deny" && c.resolved == reason.as_str())
        {
            return vec![format!("the paths: fence of argument `{}`", f.argument)];
        }
        c.producers.iter().map(producer).collect()
    };
    let mut hints: Vec<HintCell> = Hint::ALL
        .into_iter()
        .map(|h| HintCell {
            hint: h,
            value: r.hints.get(h),
            listed: tool.listed.get(h),
            by: Vec::new(),
        })
        .collect();
    let mut d = Decision {
        hints: Vec::new(),
        fields: Vec::new(),
        deny: Vec::new(),
        confirm: None,
    };
    for c in &changes {
        let field = Field {
            name: c.field.clone(),
            value: c.resolved.clone(),
            listed: c.listed.clone(),
            by: by(c),
        };
        if let Some(h) = c
            .field
            .strip_prefix("annotations.")
            .and_then(Hint::from_key)
        {
            if let Some(cell) = hints.iter_mut().find(|x| x.hint == h) {
                cell.by = field.by;
            }
        } else if c.field == "deny" {
            d.deny.push(field);
        } else if c.field == "confirm" {
            d.confirm = Some(field);
        } else {
            d.fields.push(field);
        }
    }
    d.hints = std::mem::take(&mut hints);
    RowOutcome::Decided(Box::new(d))
}

/// A producer as the review shows it: the rule and where it is.
fn producer(p: &Producer) -> String {
    match p {
        Producer::YamlRule { index, location } => format!("yaml rule {} ({location})", index + 1),
        Producer::Rego { rule, location } => format!("{rule} ({location})"),
        Producer::Policy { package } => format!("policy {package}"),
    }
}
