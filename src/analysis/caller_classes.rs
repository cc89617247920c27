//! The caller classes the worst-case proof enumerates from the declared
//! caller schema (`catalog/caller_schema`), for a tool whose annotations may
//! depend on who calls.
//!
//! The claims the rules that can change the annotations read
//! (`rego::hint_caller_reads`) each get a finite set of values:
//!
//! - an `enum`, `const`, boolean or `null` claim (or an object made of
//!   those): every value, as for an argument (`analysis/domain`);
//! - an array whose items are such a claim, read only by membership tests
//!   of constants (`"oncall" in input.caller.claims.groups`): every set of
//!   members, each as the array of those members in the schema's order, up
//!   to [`MAX_MEMBERS`] possible members. A rule that only asks which
//!   constants are members cannot tell two arrays with the same members
//!   apart, so every array is equivalent to one of these. (The empty array,
//!   each single member and the full set alone would not do: `"a" in g;
//!   "b" in g; not "c" in g` holds for `[a, b]` only.) Any other use
//!   (`count`, an index, iteration, a comparison of the whole array) is not
//!   followed, and the tool is not covered;
//! - a string claim: the partition `analysis/partition` makes of an argument
//!   (its `==`, `!=`, `in`, `startswith`, `endswith` and `contains`
//!   constants, through `lower`/`upper` and aliases), its representatives
//!   valid against the claim's schema;
//! - a claim the rules read but the schema leaves out: never present when
//!   the schema refuses undeclared claims, otherwise not covered.
//!
//! A claim the schema does not require may also be absent; `sub` and `iss`
//! never are (every caller carries them; `input.caller.subject` and
//! `issuer` read them). Claims the rules do not read keep the schema's
//! sample value. Every combination the schema accepts is a class; one the
//! schema refuses is a caller that gets no decision at all, so it is left
//! out. No caller is a class of its own, always: a catalog served over
//! stdio without `--caller-file`, or over HTTP without a JWT configuration,
//! decides without one, and the same catalog may be served either way.
//!
//! Combining the classes with the argument combinations and evaluating
//! them is the proof's (`analysis/proof`); how the classes are reported is
//! `check`'s.

use serde_json::{Map, Value, json};

use super::domain::{finite_values, required_names};
use super::partition::{self, Uses};
use crate::caller::{Caller, LOCAL_ISSUER};
use crate::catalog::{Catalog, Tool, schema};
use crate::diag::Location;
use crate::rego::{self};

/// The most possible members of an array claim whose member sets are
/// enumerated (2^6 = 64 sets).
pub const MAX_MEMBERS: usize = 6;

/// The most caller classes one tool gets.
pub const MAX_CLASSES: usize = 1024;

/// The subject of a class whose claims do not name one.
const SUBJECT: &str = "caller";

/// How one claim was divided.
#[derive(Debug, Clone)]
pub struct ClaimClasses {
    pub claim: String,
    /// `groups: 8 member sets of ["dev","oncall","ops"]`.
    pub how: String,
    /// Each value, `None` for absent.
    pub values: Vec<Option<Value>>,
}

/// The caller classes of one tool.
#[derive(Debug, Clone)]
pub struct CallerClasses {
    pub claims: Vec<ClaimClasses>,
    /// Each class, `None` being no caller (always first).
    pub callers: Vec<Option<Caller>>,
}

impl CallerClasses {
    /// `8 caller classes (no caller; groups: … or absent; tenant: …)`.
    pub fn describe(&self) -> String {
        let mut how = vec!["no caller"];
        how.extend(self.claims.iter().map(|c| c.how.as_str()));
        format!("{} caller classes ({})", self.callers.len(), how.join("; "))
    }

    pub fn to_json(&self) -> Value {
        json!({
            "classes": self.callers.len(),
            "claims": self.claims.iter().map(|c| json!({
                "claim": c.claim,
                "classes": c.values.len(),
                "how": c.how,
            })).collect::<Vec<_>>(),
        })
    }
}

/// The caller classes of `tool`: `None` when the catalog declares no caller
/// schema or the rules that can change its annotations do not read the
/// caller; why not (and where) when they read it in a way the classes do
/// not follow.
pub fn for_tool(
    catalog: &Catalog,
    tool: &Tool,
) -> Result<Option<CallerClasses>, (String, Option<Location>)> {
    let Some(declared) = catalog.caller_schema() else {
        return Ok(None);
    };
    if !tool.is_resolvable() {
        return Ok(None);
    }
    let modules = tool.modules();
    let reads = rego::reads::hint_caller_reads(&modules, tool.policy.as_deref());
    if !reads.any {
        return Ok(None);
    }
    if let Some((at, why)) = reads.unknown {
        return Err((why, Some(at)));
    }
    let props = schema::properties(&declared.claims)
        .cloned()
        .unwrap_or_default();
    let required = required_names(&declared.claims);
    let closed = declared.claims.get("additionalProperties") == Some(&Value::Bool(false));
    let mut uses = None;
    let mut claims = Vec::new();
    for (claim, at) in &reads.claims {
        let fail = |why: String| Err((format!("claim `{claim}` {why}"), Some(at.clone())));
        let always = claim == "sub" || claim == "iss" || required.contains(claim);
        let Some(s) = props.get(claim) else {
            if closed {
                claims.push(ClaimClasses {
                    claim: claim.clone(),
                    how: format!("{claim}: never present"),
                    values: vec![None],
                });
                continue;
            }
            return fail(
                "is read, but the caller schema does not declare it, so its values are anything"
                    .into(),
            );
        };
        let uses = uses.get_or_insert_with(|| partition::claim_uses(tool));
        let u = uses.get(claim);
        let mut c = match classes(claim, s, u) {
            Ok(c) => c,
            Err((why, where_)) => {
                return Err((
                    format!("claim `{claim}` {why}"),
                    where_.or_else(|| Some(at.clone())),
                ));
            }
        };
        if always {
            c.values.retain(Option::is_some);
        } else if !c.values.contains(&None) {
            c.values.push(None);
            c.how.push_str(" or absent");
        }
        claims.push(c);
    }
    let total = claims
        .iter()
        .fold(1usize, |n, c| n.saturating_mul(c.values.len()));
    if total > MAX_CLASSES {
        return Err((
            format!(
                "the claims the rules read have {total} caller classes, more than {MAX_CLASSES}"
            ),
            reads.claims.values().next().cloned(),
        ));
    }
    let base = match schema::sample(&declared.claims) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let mut combos = vec![base];
    for c in &claims {
        let mut next = Vec::with_capacity(combos.len() * c.values.len());
        for m in &combos {
            for v in &c.values {
                let mut m = m.clone();
                match v {
                    Some(v) => {
                        m.insert(c.claim.clone(), v.clone());
                    }
                    None => {
                        m.remove(&c.claim);
                    }
                }
                next.push(m);
            }
        }
        combos = next;
    }
    let mut callers = vec![None];
    for m in combos {
        let c = caller(m);
        // A caller the schema refuses gets no decision: no class.
        if declared.check(&c).is_ok() && !callers.contains(&Some(c.clone())) {
            callers.push(Some(c));
        }
    }
    Ok(Some(CallerClasses { claims, callers }))
}

/// The caller classes of every tool of `catalog` whose annotations depend
/// on the caller, distinct, in tool order (for `regent review`, which
/// tabulates decisions per caller class); no caller is not among them.
pub fn for_catalog(catalog: &Catalog) -> Vec<Caller> {
    let mut out: Vec<Caller> = Vec::new();
    for tool in catalog.tools() {
        if let Ok(Some(c)) = for_tool(catalog, tool) {
            for c in c.callers.into_iter().flatten() {
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
    }
    out
}

/// A caller with `claims`, its subject and issuer those the claims name.
fn caller(mut claims: Map<String, Value>) -> Caller {
    let subject = match claims.get("sub") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => SUBJECT.to_string(),
    };
    let issuer = match claims.get("iss") {
        Some(Value::String(s)) => s.clone(),
        _ => LOCAL_ISSUER.to_string(),
    };
    claims.insert("sub".into(), Value::String(subject.clone()));
    claims.insert("iss".into(), Value::String(issuer.clone()));
    Caller {
        subject,
        issuer,
        claims,
        spelled: Vec::new(),
    }
}

/// The values of one declared claim, or why there is no finite set (and
/// where, when a use is at fault).
fn classes(
    claim: &str,
    s: &Value,
    u: Option<&Uses>,
) -> Result<ClaimClasses, (String, Option<Location>)> {
    if let Ok(values) = finite_values(s) {
        let n = values.len();
        return Ok(ClaimClasses {
            claim: claim.to_string(),
            how: format!("{claim}: {n} value{}", if n == 1 { "" } else { "s" }),
            values: values.into_iter().map(Some).collect(),
        });
    }
    let ty = s.get("type").and_then(Value::as_str);
    if ty == Some("array")
        && let Some(items) = s.get("items")
        && let Ok(members) = finite_values(items)
    {
        return members_classes(claim, s, &members, u);
    }
    if ty == Some("string") {
        let p = partition::partition_claim(claim, s, u)
            .map_err(|(why, at)| (format!("is not partitioned: {why}"), at))?;
        return Ok(ClaimClasses {
            claim: claim.to_string(),
            how: p.describe(),
            values: p
                .representatives
                .into_iter()
                .map(|r| Some(Value::String(r)))
                .collect(),
        });
    }
    let why = finite_values(s).err().unwrap_or_default();
    Err((format!("has no finite domain: {why}"), None))
}

/// Every set of `members`, for an array claim read by membership only.
fn members_classes(
    claim: &str,
    s: &Value,
    members: &[Value],
    u: Option<&Uses>,
) -> Result<ClaimClasses, (String, Option<Location>)> {
    if let Some(u) = u {
        if let Some((at, why)) = &u.blocked {
            // The use, without the partition's list of string predicates.
            let why = match why.split_once("` uses it other than by") {
                Some((used, _)) => format!(
                    "{used}` uses it other than by a membership test of a constant (`\"v\" in …`)"
                ),
                None => why.clone(),
            };
            return Err((
                format!(
                    "is an array, whose member-set classes follow membership tests only, and {why}"
                ),
                Some(at.clone()),
            ));
        }
        if !(u.equals.is_empty()
            && u.prefixes.is_empty()
            && u.suffixes.is_empty()
            && u.contains.is_empty())
        {
            return Err((
                "is an array, but a rule compares it with a string".into(),
                None,
            ));
        }
    }
    if members.len() > MAX_MEMBERS {
        return Err((
            format!(
                "is an array of {} possible members, whose 2^{} member sets are more than the {} the proof enumerates",
                members.len(),
                members.len(),
                1 << MAX_MEMBERS
            ),
            None,
        ));
    }
    let valid = jsonschema::validator_for(s).ok();
    let mut values = Vec::new();
    for bits in 0..(1u32 << members.len()) {
        let set: Vec<Value> = members
            .iter()
            .enumerate()
            .filter(|(i, _)| bits & (1 << i) != 0)
            .map(|(_, m)| m.clone())
            .collect();
        let v = Value::Array(set);
        // A set the claim's schema refuses (`minItems`) is no caller's.
        if valid.as_ref().is_none_or(|c| c.is_valid(&v)) {
            values.push(Some(v));
        }
    }
    Ok(ClaimClasses {
        claim: claim.to_string(),
        how: format!(
            "{claim}: {} member set{} of {}",
            values.len(),
            if values.len() == 1 { "" } else { "s" },
            Value::Array(members.to_vec())
        ),
        values,
    })
}
