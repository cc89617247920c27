//! Claims used as if they had a type nobody declared (`untyped-claim`).
//!
//! A token may carry a claim of any type: `"banned" in
//! input.caller.claims.groups` is false for `groups: "banned"` (a string,
//! not a list), so a deny-list lets that token through, and `"ops" in
//! input.caller.claims.groups` holds for `groups: {"a": "ops"}`. A claim
//! used with `in`, iterated (`some g in`, `every`, `[_]`, an index) or
//! compared (`==`, `!=`, `<`, ...) is safe only when its type is known:
//! declared by the catalog's caller schema (`caller: {claims: ...}`, whose
//! mismatching callers are refused before any decision, see
//! `catalog::caller_schema`) with a `type`, `enum` or `const`, or tested in
//! the same rule (`is_array`, `is_string`, ..., `type_name`). Each other use
//! is a warning, once per rule and claim, in the modules the caller passes
//! (`build`: those some tool reaches).
//!
//! Read through [`super::visit`]'s walk; a claim read through an alias
//! (`import input.caller.claims as c`, `c := input.caller.claims`) is not
//! followed. Whether a declared claim exists at all is `refs`'s.

use std::collections::BTreeSet;

use regorus::unstable::{Expr, Literal, Query};
use serde_json::Value;

use super::portability::walk_queries;
use super::visit::walk_rule;
use super::{GENERATED_PREFIX, PolicyModule, path_of, span_location};
use crate::diag::{Diagnostic, Location};

/// Builtins whose use on a claim tests its type.
const TYPE_TESTS: &[&str] = &[
    "is_array",
    "is_boolean",
    "is_null",
    "is_number",
    "is_object",
    "is_set",
    "is_string",
    "type_name",
];

/// How a claim is used.
#[derive(Clone, Copy)]
enum Use {
    In,
    Iterated,
    Compared,
}

impl Use {
    fn describe(self) -> &'static str {
        match self {
            Use::In => "used with `in`",
            Use::Iterated => "iterated or indexed",
            Use::Compared => "compared",
        }
    }
}

/// The claim a reference reads: the constant components after
/// `input.caller.claims`, up to the first computed one; `None` for anything
/// else (or for `input.caller.claims` itself).
fn claim(e: &Expr) -> Option<Vec<String>> {
    if !matches!(e, Expr::RefDot { .. } | Expr::RefBrack { .. }) {
        return None;
    }
    let path = path_of(e);
    if path.len() < 4 || path[..3] != ["input", "caller", "claims"] {
        return None;
    }
    let claim: Vec<String> = path[3..]
        .iter()
        .take_while(|c| c.as_str() != "[_]")
        .cloned()
        .collect();
    (!claim.is_empty()).then_some(claim)
}

/// Whether the declared claims schema gives `claim` a type.
fn declared_type(schema: &Value, claim: &[String]) -> bool {
    let mut cur = schema;
    for name in claim {
        let Some(next) = cur
            .get("properties")
            .and_then(|p| p.get(name))
            .or_else(|| cur.get("additionalProperties").filter(|a| a.is_object()))
        else {
            return false;
        };
        cur = next;
    }
    ["type", "enum", "const"]
        .iter()
        .any(|k| cur.get(*k).is_some())
}

/// Every use of an untyped claim in `modules`; `declared` is the catalog's
/// claims schema, if it declares one.
pub fn untyped<'m>(
    modules: impl IntoIterator<Item = &'m PolicyModule>,
    declared: Option<&Value>,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for m in modules {
        if m.path.starts_with(GENERATED_PREFIX) {
            continue;
        }
        for rule in &m.module.policy {
            let mut uses: Vec<(Vec<String>, Use, Location)> = Vec::new();
            let mut tested: BTreeSet<Vec<String>> = BTreeSet::new();
            walk_rule(rule, &mut |e| {
                match e {
                    Expr::Membership { collection, .. } => {
                        if let Some(c) = claim(collection) {
                            uses.push((c, Use::In, at(collection)));
                        }
                    }
                    Expr::RefBrack { refr, index, .. } if super::const_string(index).is_none() => {
                        if let Some(c) = claim(refr) {
                            uses.push((c, Use::Iterated, at(refr)));
                        }
                    }
                    Expr::BoolExpr { lhs, rhs, .. } => {
                        // `claims.org[_] == x` iterates `org`: the walk
                        // reaches that reference next and says so.
                        for side in [lhs, rhs] {
                            if let Some(c) = claim(side)
                                && !path_of(side).iter().any(|p| p == "[_]")
                            {
                                uses.push((c, Use::Compared, at(side)));
                            }
                        }
                    }
                    Expr::Call { fcn, params, .. }
                        if TYPE_TESTS.contains(&path_of(fcn).join(".").as_str()) =>
                    {
                        if let Some(c) = params.first().and_then(|p| claim(p)) {
                            tested.insert(c);
                        }
                    }
                    _ => {}
                }
                true
            });
            walk_queries(rule, &mut |q| some_in(q, &mut uses));
            let mut warned: BTreeSet<Vec<String>> = BTreeSet::new();
            for (c, how, at) in uses {
                if tested.contains(&c)
                    || declared.is_some_and(|s| declared_type(s, &c))
                    || !warned.insert(c.clone())
                {
                    continue;
                }
                out.push(finding(&c, how, at, declared.is_some()));
            }
        }
    }
    out
}

/// `some x in <claim>` and `every x in <claim>` in `q` (and in the bodies
/// of its `every`s, which the query walk does not enter).
fn some_in(q: &Query, uses: &mut Vec<(Vec<String>, Use, Location)>) {
    for s in &q.stmts {
        match &s.literal {
            Literal::SomeIn { collection, .. } => {
                if let Some(c) = claim(collection) {
                    uses.push((c, Use::Iterated, at(collection)));
                }
            }
            Literal::Every { domain, query, .. } => {
                if let Some(c) = claim(domain) {
                    uses.push((c, Use::Iterated, at(domain)));
                }
                some_in(query, uses);
            }
            _ => {}
        }
    }
}

fn at(e: &Expr) -> Location {
    span_location(e.span())
}

fn finding(claim: &[String], how: Use, at: Location, declared: bool) -> Diagnostic {
    let name = claim.join(".");
    let shown = format!("input.caller.claims.{name}");
    let (ty, test) = match how {
        Use::Compared => ("{type: string}", "is_string"),
        Use::In | Use::Iterated => ("{type: array, items: {type: string}}", "is_array"),
    };
    let help = if declared {
        format!(
            "give `{name}` a `type` (or an `enum`) in the catalog's `caller: {{claims: ...}}` schema, so that a token whose `{name}` has another type is refused; or test it in the same rule (`{test}({shown})`)"
        )
    } else {
        format!(
            "declare the claims in a tool file (`caller: {{claims: {{type: object, properties: {{{name}: {ty}}}}}}}`), so that a token whose `{name}` has another type is refused; or test its type in the same rule (`{test}({shown})`)"
        )
    };
    Diagnostic::warning(
        "untyped-claim",
        at,
        format!(
            "`{shown}` is {} but nothing declares or tests its type: a token may carry any value there, and a rule written for another type then quietly does not apply (`\"banned\" in` a claim that is the string \"banned\" is false, so a deny-list lets it through)",
            how.describe()
        ),
    )
    .with_help(help)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `line:column claim-use` of each warning on `body` (rules of package p).
    fn run(body: &str, declared: Option<Value>) -> Vec<String> {
        let mut engine = regorus::Engine::new();
        engine
            .add_policy(
                "p.rego".to_string(),
                format!("package p\n\nimport rego.v1\n\n{body}\n"),
            )
            .unwrap();
        let modules = super::super::modules(&mut engine);
        untyped(&modules, declared.as_ref())
            .into_iter()
            .map(|d| {
                let what = d.message.split(" but ").next().unwrap_or("").to_string();
                format!("{}:{} {what}", d.location.line, d.location.column)
            })
            .collect()
    }

    #[test]
    fn in_iteration_and_comparison_warn_without_a_type() {
        let w = run(
            "a if \"x\" in input.caller.claims.groups\n\
             b if { some t in input.caller.claims.teams; t == \"y\" }\n\
             c if { every r in input.caller.claims.roles { r != \"z\" } }\n\
             d if input.caller.claims.org[_] == \"o\"\n\
             e if input.caller.claims.level > 3\n\
             f := input.caller.claims.tenant\n\
             g if input.caller.claims.groups[0] == \"x\"",
            None,
        );
        assert_eq!(w.len(), 6, "{w:#?}");
        assert!(
            w[0].contains("`input.caller.claims.groups` is used with `in`"),
            "{w:#?}"
        );
        assert!(w[1].contains("teams` is iterated"), "{w:#?}");
        assert!(w[2].contains("roles` is iterated"), "{w:#?}");
        assert!(w[3].contains("org` is iterated"), "{w:#?}");
        assert!(w[4].contains("level` is compared"), "{w:#?}");
        assert!(w[5].contains("groups` is iterated"), "{w:#?}");
    }

    #[test]
    fn a_type_test_in_the_rule_or_a_declared_type_silences_it() {
        let body = "a if { is_array(input.caller.claims.groups); \"x\" in input.caller.claims.groups }\n\
                    b if { type_name(input.caller.claims.level) == \"number\"; input.caller.claims.level > 3 }\n\
                    c if \"x\" in input.caller.claims.teams";
        let w = run(body, None);
        assert_eq!(w.len(), 1, "{w:#?}");
        assert!(w[0].contains("teams"), "{w:#?}");
        let declared = json!({"type": "object", "properties": {
            "teams": {"type": "array", "items": {"type": "string"}},
            "loose": {}
        }});
        assert!(run(body, Some(declared.clone())).is_empty());
        let w = run("d if input.caller.claims.loose == \"x\"", Some(declared));
        assert_eq!(w.len(), 1, "declared without a type: {w:#?}");
    }
}
