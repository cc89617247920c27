//! Where a number the request may spell past what regent's numbers hold
//! meets an operation whose answer depends on its exact value (issue 27).
//!
//! A request may spell `18446744073709551617` or `4.999999999999999999`;
//! regent holds the nearest double, OPA the exact decimal. Each place
//! below refuses such a request where OPA's exact answer could differ
//! from regent's (`policy::spelled`: `compare_refusal`, `member_refusal`,
//! `check`'s `lost_refusal` and `meeting`, `answer_refusal`), in both
//! evaluators, so nothing here makes a tool refused: the finding is a
//! warning that says which request fails closed. The places:
//!
//! - a comparison (`== != < <= > >=`, `in`) of such a value with anything
//!   but a string, boolean or null literal (which no number equals);
//! - `%`, and `+ - * /` where `integers` finds both operands integers
//!   (else `opa-float-arithmetic` already says regent may fail there);
//! - a builtin that reads a number's value (`round`, `format_int`, `sum`,
//!   `bits.and`…) or picks, orders or merges values (`max`, `sort`,
//!   `object.union`…);
//! - a set or an object built from it (two numbers of one double meet);
//! - a contract rule's value holding it (the answer would hold the
//!   double).
//!
//! An index by such a number (OPA's array member at a decimal that is no
//! integer is undefined) is `opa-number-index`'s, which says both.
//!
//! What may hold such a number is `super::writes_input_number`'s: a
//! reference into `input` that the schemas do not declare a string or a
//! boolean. Locals and other rules' values are not followed, as for the
//! other number findings: a finding must not be noise, and evaluation
//! fails closed anyway. One finding per rule and reference.

use regorus::unstable::{ArithOp, BoolOp, Expr, Literal, Ref, Rule, RuleHead};

use super::{Facts, writes_input_number};
use crate::diag::Diagnostic;
use crate::rego::{path_of, span_location};

/// The code of this module's findings.
pub(super) const CODE: &str = "opa-number-lost";

/// Builtins that read a number's value: given one regent cannot hold,
/// they refuse (`policy::spelled::check`), OPA reads the exact decimal.
const READS_VALUE: &[&str] = &[
    "abs",
    "ceil",
    "floor",
    "round",
    "sum",
    "product",
    "format_int",
    "numbers.range",
    "numbers.range_step",
    "bits.and",
    "bits.or",
    "bits.xor",
    "bits.negate",
    "bits.lsh",
    "bits.rsh",
    "time.add_date",
    "time.date",
    "time.clock",
    "time.weekday",
    "time.format",
    "time.diff",
    "array.slice",
    "substring",
    "to_number",
    "rand.intn",
    "plus",
    "minus",
    "mul",
    "div",
    "rem",
    "json.patch",
    "graph.reachable",
    "graph.reachable_paths",
];

/// The finding for expression `e` of a rule of module `module`, if a
/// number the request may spell past a double meets it there; `integers`
/// tells whether `+ - * /` of `e` is on integers only (else another
/// finding covers it).
pub(super) fn site(
    e: &Expr,
    module: usize,
    facts: &Facts,
    integers: impl Fn(&Expr) -> bool,
) -> Option<(String, Diagnostic)> {
    let may = |x: &Expr| number_in(x, module, facts).is_some();
    match e {
        Expr::BoolExpr { op, lhs, rhs, .. } => {
            let (number, other) = if may(lhs) {
                (lhs, rhs)
            } else if may(rhs) {
                (rhs, lhs)
            } else {
                return None;
            };
            if no_number(other) {
                return None;
            }
            let op = match op {
                BoolOp::Eq => "==",
                BoolOp::Ne => "!=",
                BoolOp::Lt => "<",
                BoolOp::Le => "<=",
                BoolOp::Gt => ">",
                BoolOp::Ge => ">=",
            };
            Some(finding(
                number_in(number, module, facts)?,
                e,
                &format!(
                    "`{op}` compares it with a number of the same double where OPA tells the two apart (`4.999999999999999999 == 5` is false)"
                ),
            ))
        }
        Expr::Membership {
            value, collection, ..
        } => {
            let number = if may(value) {
                value
            } else if may(collection) && !no_number(value) {
                collection
            } else {
                return None;
            };
            Some(finding(
                number_in(number, module, facts)?,
                e,
                "`in` finds a member of the same double where OPA tells the two apart",
            ))
        }
        Expr::ArithExpr { op, lhs, rhs, .. } if matches!(op, ArithOp::Mod) || integers(e) => {
            let number = [lhs, rhs]
                .into_iter()
                .find_map(|x| number_in(x, module, facts))?;
            Some(finding(
                number,
                e,
                "OPA computes on the exact decimal (`18446744073709551617 % 2` is 1)",
            ))
        }
        Expr::Call { fcn, params, .. } => {
            let name = path_of(fcn).join(".");
            let reads = READS_VALUE.contains(&name.as_str());
            if !reads && !crate::rego::data_numbers::MEETS.contains(&name.as_str()) {
                return None;
            }
            let number = params.iter().find_map(|p| number_in(p, module, facts))?;
            let what = if reads {
                format!(
                    "`{name}` reads its exact value in OPA (`floor(4.999999999999999999)` is 4, `format_int` of 2^64 + 1 ends in 1)"
                )
            } else {
                format!(
                    "`{name}` may meet it with a number of the same double, which OPA tells apart"
                )
            };
            Some(finding(number, e, &what))
        }
        Expr::Set { items, .. } => {
            let number = items.iter().find_map(|x| number_in(x, module, facts))?;
            Some(finding(
                number,
                e,
                "a set holding it keeps one member for two numbers of the same double, OPA two",
            ))
        }
        _ => None,
    }
}

/// The finding for a contract rule's value that holds a number the
/// request may spell past a double: the answer would hold the double.
pub(super) fn answer(rule: &Rule, module: usize, facts: &Facts) -> Option<(String, Diagnostic)> {
    let name = path_of(crate::rego::head(rule))
        .first()
        .cloned()
        .unwrap_or_default();
    if !crate::rego::generate::CONTRACT_RULES.contains(&name.as_str()) {
        return None;
    }
    // A `contains` rule's key is a member of its value.
    let key = match rule {
        Rule::Spec {
            head: RuleHead::Set { key: Some(k), .. },
            ..
        } => Some(k),
        _ => None,
    };
    let bound = bound(rule);
    for v in crate::rego::assigned_values(rule).into_iter().chain(key) {
        if let Some((at, n)) = carried(v, module, facts, &bound, 4) {
            let what =
                format!("`{name}`'s value holds it, where OPA's answer holds the exact decimal");
            let d = worded(at, "", &n, &what);
            return Some((n, d));
        }
    }
    None
}

/// A reference into `input` that may be a number, which `e` passes on
/// into its value: itself, a literal holding it, a builtin that passes
/// values on (`array.concat`, `object.get`), a comprehension that reads
/// one, or a local bound to one of those (`y := x`, `some x in
/// input.arguments.a`; `bound`, the rule's, followed at most `depth` deep).
fn carried(
    e: &Ref<Expr>,
    module: usize,
    facts: &Facts,
    bound: &Bound,
    depth: u8,
) -> Option<(crate::diag::Location, String)> {
    let again = |x: &Ref<Expr>| carried(x, module, facts, bound, depth);
    match e.as_ref() {
        Expr::Var { value, .. } if !writes_input_number(e, module, facts) => {
            let name = value.as_string().ok()?;
            let to = bound.get(name.as_ref())?;
            (depth > 0).then(|| carried(to, module, facts, bound, depth - 1))?
        }
        Expr::RefDot { .. } | Expr::RefBrack { .. } | Expr::Var { .. } => {
            writes_input_number(e, module, facts)
                .then(|| (span_location(crate::rego::root_span(e)), reference(e)))
        }
        Expr::Array { items, .. } | Expr::Set { items, .. } => items.iter().find_map(again),
        Expr::Object { fields, .. } => fields
            .iter()
            .find_map(|(_, k, v)| again(k).or_else(|| again(v))),
        Expr::ArrayCompr { .. } | Expr::SetCompr { .. } | Expr::ObjectCompr { .. } => {
            first_read(e, module, facts)
        }
        Expr::Call { fcn, params, .. }
            if matches!(
                path_of(fcn).join(".").as_str(),
                "array.concat"
                    | "array.reverse"
                    | "array.slice"
                    | "object.get"
                    | "object.union"
                    | "object.union_n"
                    | "object.remove"
                    | "object.filter"
                    | "json.filter"
                    | "json.remove"
                    | "max"
                    | "min"
                    | "sort"
                    | "union"
                    | "intersection"
            ) =>
        {
            params.iter().find_map(again)
        }
        _ => None,
    }
}

/// What each local of a rule is bound to: the value of its first `:=`,
/// or the collection a `some … in` takes it from.
type Bound = std::collections::HashMap<String, Ref<Expr>>;

/// The locals `rule` binds ([`Bound`]).
fn bound(rule: &Rule) -> Bound {
    let mut out: Bound = super::assignments(rule);
    super::walk_queries(rule, &mut |q| {
        for s in &q.stmts {
            if let Literal::SomeIn {
                key,
                value,
                collection,
                ..
            } = &s.literal
            {
                for v in key.iter().chain([value]) {
                    if let Expr::Var { value: name, .. } = v.as_ref()
                        && let Ok(name) = name.as_string()
                    {
                        out.entry(name.to_string())
                            .or_insert_with(|| collection.clone());
                    }
                }
            }
        }
    });
    out
}

/// Whether `e` is a literal no number equals: a string, a boolean, null.
fn no_number(e: &Expr) -> bool {
    matches!(
        e,
        Expr::String { .. } | Expr::RawString { .. } | Expr::Bool { .. } | Expr::Null { .. }
    )
}

/// The reference into `input` that may be a number in `e`: `e` itself,
/// or one a literal `e` holds.
fn number_in<'e>(e: &'e Expr, module: usize, facts: &Facts) -> Option<&'e Expr> {
    match e {
        Expr::Array { items, .. } | Expr::Set { items, .. } => {
            items.iter().find_map(|x| number_in(x, module, facts))
        }
        Expr::Object { fields, .. } => fields.iter().find_map(|(_, k, v)| {
            number_in(k, module, facts).or_else(|| number_in(v, module, facts))
        }),
        _ => writes_input_number(e, module, facts).then_some(e),
    }
}

/// The warning at `at` about `what`, keyed by the reference that may be
/// such a number (`number`, or the one it holds) so that a rule reports
/// each once.
fn finding(number: &Expr, at: &Expr, what: &str) -> (String, Diagnostic) {
    let n = reference(number);
    // The expression when it is short, else the reference alone.
    let text = at.span().text();
    if !std::ptr::eq(at, number) && text.len() <= 80 && !text.contains('\n') {
        let d = worded(span_location(at.span()), &format!("`{text}`: "), &n, what);
        return (n, d);
    }
    let d = worded(span_location(crate::rego::root_span(number)), "", &n, what);
    (n, d)
}

/// The warning at `at` about `n`, a reference that may be such a number
/// (`shown`: the expression it is in, or nothing).
fn worded(at: crate::diag::Location, shown: &str, n: &str, what: &str) -> Diagnostic {
    Diagnostic::warning(
        CODE,
        at,
        format!(
            "{shown}`{n}` may be or hold a number the request spells with more digits than a double holds (`18446744073709551617`, `4.999999999999999999`), which regent holds as the nearest double; {what}; regent fails closed on such a request"
        ),
    )
    .with_help(format!(
        "nothing in the policy makes this exact: clients that send at most 17 significant digits and integers within ±2^53 are answered as OPA answers; declare `{n}` `type: string` (or `boolean`) in inputSchema if it is one"
    ))
}

/// Where each module first refers to a value of `input` that may be or
/// hold a number (`input.arguments.n`, `input.arguments`, `input`, a caller
/// claim), as `file:line:column` and the reference; `None` for a module
/// that never does. A tool whose modules never do cannot meet a request's
/// number, however the request spells it: its evaluations need not look
/// at them (`policy::EnginePool::with_request_numbers`).
pub fn number_references(
    modules: &[crate::rego::PolicyModule],
    facts: &Facts,
) -> Vec<Option<(crate::diag::Location, String)>> {
    modules
        .iter()
        .enumerate()
        .map(|(mi, m)| {
            let mut found = None;
            for rule in &m.module.policy {
                crate::rego::visit::Walk::ALL
                    .rule(rule, &mut |e| visit_read(e, mi, facts, &mut found));
                if found.is_some() {
                    break;
                }
            }
            found
        })
        .collect()
}

/// The first reference into `input` in `e` that may be a number.
fn first_read(e: &Expr, module: usize, facts: &Facts) -> Option<(crate::diag::Location, String)> {
    let mut found = None;
    crate::rego::visit::Walk::ALL.expr(e, &mut |x| visit_read(x, module, facts, &mut found));
    found
}

/// A walk's step looking for the first reference into `input` that may be
/// a number (into `found`): a whole reference, not its prefixes
/// (`input.arguments` of `input.arguments.s`); whether to go on into `e`.
fn visit_read(
    e: &Expr,
    module: usize,
    facts: &Facts,
    found: &mut Option<(crate::diag::Location, String)>,
) -> bool {
    if found.is_some() {
        return false;
    }
    let is_ref = matches!(
        e,
        Expr::RefDot { .. } | Expr::RefBrack { .. } | Expr::Var { .. }
    );
    if !is_ref || path_of(e).first().map(String::as_str) != Some("input") {
        return true;
    }
    *found = reads_number(e, module, facts);
    false
}

/// The reference into `input` that may be a number in `e`, a reference
/// into `input`: `e` itself, or one its computed indexes hold
/// (`input.arguments.s[input.arguments.i]`).
fn reads_number(e: &Expr, module: usize, facts: &Facts) -> Option<(crate::diag::Location, String)> {
    if writes_input_number(e, module, facts) {
        return Some((span_location(crate::rego::root_span(e)), reference(e)));
    }
    let mut cur = e;
    loop {
        match cur {
            Expr::RefDot { refr, .. } => cur = refr,
            Expr::RefBrack { refr, index, .. } => {
                let mut inner = None;
                crate::rego::visit::Walk::ALL.expr(index, &mut |x| {
                    if inner.is_none()
                        && matches!(
                            x,
                            Expr::RefDot { .. } | Expr::RefBrack { .. } | Expr::Var { .. }
                        )
                        && path_of(x).first().map(String::as_str) == Some("input")
                    {
                        inner = reads_number(x, module, facts);
                        return false;
                    }
                    inner.is_none()
                });
                if inner.is_some() {
                    return inner;
                }
                cur = refr;
            }
            _ => return None,
        }
    }
}

/// A reference as written for a reader: `input.arguments.a[_]`.
fn reference(e: &Expr) -> String {
    path_of(e).join(".").replace(".[_]", "[_]")
}
