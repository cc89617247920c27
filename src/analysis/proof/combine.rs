//! The argument combinations the proof resolves (`combinations`,
//! `combinations_with`, `proof_combinations`: each read argument over its
//! finite domain, a partition's representatives or the literal-directed
//! candidates, the rest at sample values, at most [`LIMIT`]) and, when there
//! is no proof, what is sampled instead (`finite_part`, `literals`,
//! `free_values`). All re-exported by the parent under the same paths.
//!
//! Which arguments are read, running the proof and evaluating the
//! combinations are the parent's.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{LIMIT, Proof, arguments_read};
use crate::analysis::domain::{domain, required_names};
use crate::analysis::partition::Partition;
use crate::catalog::{Tool, schema};
use crate::diag::Location;
use crate::rego;

/// The argument combinations to evaluate: each maps the read arguments to a
/// value or to absent, over a sample of the rest. `Err` says why there is no
/// finite set.
pub fn combinations(
    tool: &Tool,
    read: &[String],
) -> Result<Vec<Value>, (String, Option<Location>)> {
    combinations_with(tool, read, &BTreeMap::new())
}

/// As [`combinations`], with the representatives of `partitions` as the
/// domains of the arguments they partition.
pub fn combinations_with(
    tool: &Tool,
    read: &[String],
    partitions: &BTreeMap<String, Partition>,
) -> Result<Vec<Value>, (String, Option<Location>)> {
    let reps: BTreeMap<String, Vec<String>> = partitions
        .iter()
        .map(|(k, p)| (k.clone(), p.representatives.clone()))
        .collect();
    combinations_from(tool, read, &reps)
}

/// The combinations the proof resolved: its partitions' representatives
/// and, when every argument was reached, its literal-directed candidates.
pub fn proof_combinations(
    tool: &Tool,
    proof: &Proof,
) -> Result<Vec<Value>, (String, Option<Location>)> {
    combinations_from(tool, &proof.arguments, &domains_of(proof))
}

pub(super) fn domains_of(proof: &Proof) -> BTreeMap<String, Vec<String>> {
    let mut reps: BTreeMap<String, Vec<String>> = proof
        .partitions
        .iter()
        .map(|(k, p)| (k.clone(), p.representatives.clone()))
        .collect();
    if proof.by_reach() {
        for (k, r) in &proof.reached {
            reps.insert(k.clone(), r.candidates.clone());
        }
    }
    reps
}

/// As [`combinations`], with the strings of `reps` as the domains of the
/// arguments they name.
pub(super) fn combinations_from(
    tool: &Tool,
    read: &[String],
    reps: &BTreeMap<String, Vec<String>>,
) -> Result<Vec<Value>, (String, Option<Location>)> {
    let props = schema::properties(&tool.input_schema)
        .cloned()
        .unwrap_or_default();
    let required = required_names(&tool.input_schema);
    let mut domains = Vec::new();
    let mut total: usize = 1;
    for name in read {
        let Some(s) = props.get(name) else {
            return Err((
                format!("the rules read argument `{name}`, which inputSchema does not declare"),
                None,
            ));
        };
        let d = match reps.get(name) {
            Some(p) => {
                let mut d: Vec<Option<Value>> =
                    p.iter().map(|r| Some(Value::String(r.clone()))).collect();
                if !required.contains(name) {
                    d.push(None);
                }
                d
            }
            None => domain(s, required.contains(name)).map_err(|why| {
                (
                    format!("argument `{name}` has no finite domain: {why}"),
                    None,
                )
            })?,
        };
        total = total.saturating_mul(d.len());
        if total > LIMIT {
            return Err((
                format!("the arguments the rules read have more than {LIMIT} combinations"),
                None,
            ));
        }
        domains.push((name.clone(), d));
    }
    let base = match schema::sample(&tool.input_schema) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let mut combos = vec![base];
    for (name, d) in &domains {
        let mut next = Vec::with_capacity(combos.len() * d.len());
        for c in &combos {
            for v in d {
                let mut m = c.clone();
                match v {
                    Some(v) => {
                        m.insert(name.clone(), v.clone());
                    }
                    None => {
                        m.remove(name);
                    }
                }
                next.push(m);
            }
        }
        combos = next;
    }
    Ok(combos.into_iter().map(Value::Object).collect())
}

/// When the proof cannot cover a tool: every combination of the read
/// arguments that do have finite domains (at most [`LIMIT`]), the others
/// held at sample values. Sampling these can find a counterexample, never
/// show that there is none.
///
/// `extra` adds values to try per argument (those of the catalog's own
/// `regent test` cases).
pub fn finite_part(tool: &Tool, extra: &BTreeMap<String, Vec<Value>>) -> Vec<Value> {
    let names: Vec<String> = match arguments_read(tool) {
        Ok(read) => read.into_keys().collect(),
        Err(_) => schema::properties(&tool.input_schema)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default(),
    };
    let props = schema::properties(&tool.input_schema)
        .cloned()
        .unwrap_or_default();
    let required = required_names(&tool.input_schema);
    let mut finite = Vec::new();
    let mut free = Vec::new();
    let mut total: usize = 1;
    for n in names {
        match props.get(&n).map(|s| domain(s, required.contains(&n))) {
            Some(Ok(d)) if total.saturating_mul(d.len()) <= LIMIT => {
                total *= d.len();
                finite.push(n);
            }
            _ => free.push(n),
        }
    }
    let combos = combinations(tool, &finite).unwrap_or_default();
    let mut literals = literals(tool);
    for (k, vs) in extra {
        let e = literals.entry(k.clone()).or_default();
        for v in vs {
            if !e.contains(v) {
                e.push(v.clone());
            }
        }
    }
    // Each free argument set to each of a few generated values, over every
    // combination of the finite ones (within the limit).
    let mut out = combos.clone();
    for n in &free {
        let Some(s) = props.get(n) else { continue };
        for v in free_values(s, literals.get(n)) {
            for c in &combos {
                if out.len() >= LIMIT {
                    return out;
                }
                let mut c = c.clone();
                if let Value::Object(m) = &mut c {
                    m.insert(n.clone(), v.clone());
                }
                out.push(c);
            }
        }
    }
    out
}

/// The values the rules distinguish, per argument: string constants the
/// tool's policies compare it with (`rego::argument_literals`) and the
/// values of the YAML rules' `when` (each value of a list).
pub fn literals(tool: &Tool) -> BTreeMap<String, Vec<Value>> {
    let mut out: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut add = |k: &str, v: &Value| {
        let e = out.entry(k.to_string()).or_default();
        if !v.is_null() && !e.contains(v) {
            e.push(v.clone());
        }
    };
    for rule in &tool.rules {
        for (k, v) in &rule.when {
            match v {
                Value::Array(vs) => vs.iter().for_each(|v| add(k, v)),
                v => add(k, v),
            }
        }
    }
    if tool.is_resolvable() {
        let modules = tool.modules();
        for (k, lits) in rego::argument_literals(&modules) {
            for l in lits {
                add(&k, &Value::String(l));
            }
        }
    }
    out
}

/// Values to try for an argument without a finite domain, besides its
/// sample: the literals the rules compare it with, then a few more the
/// schema allows. Not validated: the caller's evaluation counts refusals.
pub fn free_values(schema: &Value, literals: Option<&Vec<Value>>) -> Vec<Value> {
    let mut out: Vec<Value> = literals.cloned().unwrap_or_default();
    for v in schema::candidates(schema).into_iter().skip(1).take(3) {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}
