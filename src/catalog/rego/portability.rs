//! Constructs where regorus' interpreter answers differently from OPA
//! (issue 27), found before anything runs:
//!
//! - `not` over an expression with a call or composite whose argument may
//!   be undefined (`not is_null(input.a)`, `not [input.a] == [1]`): OPA's
//!   compiler evaluates those arguments before the negation
//!   (`rewriteDynamics`, `rewriteExprTerms`), so an undefined one fails the
//!   body; regorus evaluates them inside it, where it makes the `not` hold.
//!   [`not_guards`] lists what OPA moves out; `lower` gives native the same.
//! - `some x in c` and `x in c` over something not provably a collection:
//!   OPA iterates nothing over a string or number, regorus fails; an
//!   undefined operand of `in` is undefined in OPA, false in regorus.
//! - `<`, `<=`, `>`, `>=` where a side may hold a set: regorus orders sets
//!   before objects, OPA after (every other pair of kinds is ordered alike).
//!
//! Each finding is a located diagnostic; whether it is a warning (the rule
//! runs natively, which answers as OPA) or a load error (it runs on
//! regorus) is the build's call.

use regorus::unstable::{BoolOp, Expr, Literal, Query, Ref, Rule, RuleHead, Span};

use super::visit::{Walk, walk_rule};
use super::{PolicyModule, head, path_of, span_location};
use crate::diag::Diagnostic;

/// One construct regent flags, in a rule of a package.
#[derive(Debug, Clone)]
pub struct Finding {
    pub package: String,
    /// The rule or function it is in.
    pub rule: String,
    /// A warning: a load error is made of it by the build.
    pub diagnostic: Diagnostic,
}

/// The sub-expressions of the negated expression `e` that OPA evaluates
/// before the negation, in its order: an undefined one fails the body.
/// Constants and variables are left out (a variable bound in the body is
/// defined; a rule's name is a reference and is kept).
pub fn not_guards(e: &Ref<Expr>) -> Vec<&Ref<Expr>> {
    let mut out = Vec::new();
    match e.as_ref() {
        // `==` (OPA rewrites it to `=`) and `=`: each side's composite
        // members and a reference's dynamic indexes, not the sides.
        Expr::BoolExpr {
            op: BoolOp::Eq,
            lhs,
            rhs,
            ..
        }
        | Expr::AssignExpr { lhs, rhs, .. } => {
            in_term(lhs, &mut out);
            in_term(rhs, &mut out);
        }
        Expr::Call { fcn, params, .. } if path_of(fcn) == ["equal"] && params.len() == 2 => {
            in_term(&params[0], &mut out);
            in_term(&params[1], &mut out);
        }
        // Any other call: every argument.
        Expr::BoolExpr { lhs, rhs, .. }
        | Expr::ArithExpr { lhs, rhs, .. }
        | Expr::BinExpr { lhs, rhs, .. } => {
            one(lhs, &mut out);
            one(rhs, &mut out);
        }
        Expr::Call { params, .. } => {
            for p in params {
                one(p, &mut out);
            }
        }
        Expr::Membership {
            key,
            value,
            collection,
            ..
        } => {
            if let Some(k) = key {
                one(k, &mut out);
            }
            one(value, &mut out);
            one(collection, &mut out);
        }
        Expr::UnaryExpr { expr, .. } => one(expr, &mut out),
        _ => in_term(e, &mut out),
    }
    out
}

/// A term of an equality or a negated term: nested calls whole, the members
/// of a composite, a reference's dynamic indexes.
fn in_term<'e>(e: &'e Ref<Expr>, out: &mut Vec<&'e Ref<Expr>>) {
    match e.as_ref() {
        Expr::RefDot { refr, .. } => in_term(refr, out),
        Expr::RefBrack { refr, index, .. } => {
            in_term(refr, out);
            one(index, out);
        }
        Expr::Array { .. } | Expr::Set { .. } | Expr::Object { .. } => one(e, out),
        Expr::Call { .. }
        | Expr::BoolExpr { .. }
        | Expr::ArithExpr { .. }
        | Expr::BinExpr { .. }
        | Expr::Membership { .. }
        | Expr::UnaryExpr { .. } => out.push(e),
        _ => {}
    }
}

/// A call's argument: a reference or nested call whole, a composite by its
/// members.
fn one<'e>(e: &'e Ref<Expr>, out: &mut Vec<&'e Ref<Expr>>) {
    match e.as_ref() {
        Expr::String { .. }
        | Expr::RawString { .. }
        | Expr::Number { .. }
        | Expr::Bool { .. }
        | Expr::Null { .. }
        | Expr::ArrayCompr { .. }
        | Expr::SetCompr { .. }
        | Expr::ObjectCompr { .. } => {}
        Expr::Array { items, .. } | Expr::Set { items, .. } => {
            for i in items {
                one(i, out);
            }
        }
        Expr::Object { fields, .. } => {
            for (_, k, v) in fields {
                one(k, out);
                one(v, out);
            }
        }
        _ => out.push(e),
    }
}

/// Names bound in a rule: locals (`:=`, `some`, comprehension and `every`
/// variables) and a function's parameters. A variable that is not one is a
/// rule of the package (or `input`/`data`).
fn bound_names(rule: &Rule) -> Vec<String> {
    let mut out = Vec::new();
    if let Rule::Spec {
        head: RuleHead::Func { args, .. },
        ..
    } = rule
    {
        for a in args {
            out.extend(super::visit::vars(a));
        }
    }
    let mut query = |q: &Query| {
        for s in &q.stmts {
            match &s.literal {
                Literal::SomeVars { vars, .. } => {
                    out.extend(vars.iter().map(|v| v.text().to_string()))
                }
                Literal::SomeIn { key, value, .. } => {
                    if let Some(k) = key {
                        out.extend(super::visit::vars(k));
                    }
                    out.extend(super::visit::vars(value));
                }
                Literal::Every { key, value, .. } => {
                    if let Some(k) = key {
                        out.push(k.text().to_string());
                    }
                    out.push(value.text().to_string());
                }
                Literal::Expr { expr, .. } => {
                    if let Expr::AssignExpr { lhs, .. } = expr.as_ref() {
                        out.extend(super::visit::vars(lhs));
                    }
                }
                Literal::NotExpr { .. } => {}
            }
        }
    };
    walk_queries(rule, &mut query);
    out
}

/// Calls `f` on every query of a rule: bodies and comprehensions'.
fn walk_queries(rule: &Rule, f: &mut dyn FnMut(&Query)) {
    if let Rule::Spec { bodies, .. } = rule {
        for b in bodies {
            f(&b.query);
        }
    }
    walk_rule(rule, &mut |e| {
        match e {
            Expr::ArrayCompr { query, .. }
            | Expr::SetCompr { query, .. }
            | Expr::ObjectCompr { query, .. } => f(query),
            _ => {}
        }
        true
    });
}

/// Whether the value of `e` may be undefined: a reference into `input`,
/// `data` or a rule, a call (a function may be undefined; a builtin is when
/// an argument is). A constant, a composite of constants, a comprehension
/// and a variable bound in the body are defined.
fn may_be_undefined(e: &Expr, bound: &[String]) -> bool {
    match e {
        Expr::String { .. }
        | Expr::RawString { .. }
        | Expr::Number { .. }
        | Expr::Bool { .. }
        | Expr::Null { .. }
        | Expr::ArrayCompr { .. }
        | Expr::SetCompr { .. }
        | Expr::ObjectCompr { .. } => false,
        Expr::Var { value, .. } => value
            .as_string()
            .is_ok_and(|n| n.as_ref() != "_" && !bound.iter().any(|b| b == n.as_ref())),
        Expr::Array { items, .. } | Expr::Set { items, .. } => {
            items.iter().any(|i| may_be_undefined(i, bound))
        }
        Expr::Object { fields, .. } => fields
            .iter()
            .any(|(_, k, v)| may_be_undefined(k, bound) || may_be_undefined(v, bound)),
        _ => true,
    }
}

/// Whether `e` is provably an array, set or object (a literal or
/// comprehension of one, or a builtin that only returns one).
fn is_collection(e: &Expr) -> bool {
    match e {
        Expr::Array { .. }
        | Expr::Set { .. }
        | Expr::Object { .. }
        | Expr::ArrayCompr { .. }
        | Expr::SetCompr { .. }
        | Expr::ObjectCompr { .. } => true,
        Expr::Call { fcn, .. } => matches!(
            path_of(fcn).join(".").as_str(),
            "split"
                | "object.keys"
                | "array.concat"
                | "array.slice"
                | "array.reverse"
                | "sort"
                | "union"
                | "intersection"
                | "regex.split"
                | "regex.find_n"
                | "strings.split"
                | "json.patch"
                | "object.union"
                | "object.filter"
                | "object.remove"
        ),
        _ => false,
    }
}

/// Whether `e` may hold a set: nothing from `input` or `data` (JSON) does,
/// nor a scalar literal; a set, a call, a rule or a local may.
fn may_hold_set(e: &Expr) -> bool {
    match e {
        Expr::String { .. }
        | Expr::RawString { .. }
        | Expr::Number { .. }
        | Expr::Bool { .. }
        | Expr::Null { .. }
        | Expr::ArithExpr { .. }
        | Expr::BoolExpr { .. }
        | Expr::Membership { .. }
        | Expr::UnaryExpr { .. } => false,
        Expr::Array { items, .. } => items.iter().any(|i| may_hold_set(i)),
        Expr::Object { fields, .. } => fields
            .iter()
            .any(|(_, k, v)| may_hold_set(k) || may_hold_set(v)),
        Expr::RefDot { .. } | Expr::RefBrack { .. } => {
            !matches!(path_of(e).first().map(String::as_str), Some("input" | "data"))
        }
        Expr::Var { value, .. } => !matches!(
            value.as_string().as_deref().map(|s| s.as_ref()),
            Ok("input" | "data")
        ),
        _ => true,
    }
}

/// What regent flags in `modules`, as warnings.
pub fn check(modules: &[PolicyModule]) -> Vec<Finding> {
    let mut out = Vec::new();
    for m in modules {
        for rule in &m.module.policy {
            let name = path_of(head(rule)).first().cloned().unwrap_or_default();
            let bound = bound_names(rule);
            let mut push = |d: Diagnostic| {
                out.push(Finding {
                    package: m.package.clone(),
                    rule: name.clone(),
                    diagnostic: d,
                })
            };
            // `x in c` as a statement of its own fails the body whether it
            // is false (regorus) or undefined (OPA); under `not`, the
            // guards above decide.
            let mut statements: Vec<*const Expr> = Vec::new();
            let mut query = |q: &Query| {
                for s in &q.stmts {
                    if let Literal::Expr { expr, .. } | Literal::NotExpr { expr, .. } = &s.literal {
                        statements.push(expr.as_ref() as *const Expr);
                    }
                    match &s.literal {
                        Literal::NotExpr { expr, span } => {
                            if let Some(g) = not_guards(expr)
                                .into_iter()
                                .find(|g| may_be_undefined(g, &bound))
                            {
                                push(not_finding(span, g));
                            }
                        }
                        Literal::SomeIn { collection, .. } if !is_collection(collection) => {
                            push(some_in_finding(collection));
                        }
                        _ => {}
                    }
                }
            };
            walk_queries(rule, &mut query);
            Walk::ALL.rule(rule, &mut |e| {
                match e {
                    Expr::BoolExpr {
                        op: BoolOp::Lt | BoolOp::Le | BoolOp::Gt | BoolOp::Ge,
                        lhs,
                        rhs,
                        span,
                        ..
                    } if may_hold_set(lhs) && may_hold_set(rhs) => push(order_finding(span)),
                    Expr::Membership {
                        key,
                        value,
                        collection,
                        ..
                    } if !statements.contains(&(e as *const Expr))
                        && (may_be_undefined(collection, &bound)
                            || may_be_undefined(value, &bound)
                            || key.as_ref().is_some_and(|k| may_be_undefined(k, &bound))) =>
                    {
                        push(in_finding(e, collection));
                    }
                    _ => {}
                }
                true
            });
        }
    }
    out
}

fn not_finding(span: &Span, guard: &Expr) -> Diagnostic {
    let g = guard.span().text();
    Diagnostic::warning(
        "opa-not-undefined",
        span_location(span),
        format!(
            "`{}`: when `{g}` is undefined OPA fails this body (it evaluates `{g}` before the `not`), regorus makes the `not` hold",
            span.text()
        ),
    )
    .with_help(format!(
        "check that `{g}` is defined first, e.g. `v := {g}` before `not …(v)`, or compare it (`{g} != null`), so both engines agree"
    ))
}

fn some_in_finding(collection: &Expr) -> Diagnostic {
    let c = collection.span().text();
    Diagnostic::warning(
        "opa-iterate-scalar",
        span_location(collection.span()),
        format!(
            "`some … in {c}`: over a string or number OPA iterates nothing, regorus fails the evaluation"
        ),
    )
    .with_help(format!(
        "check the kind first: `is_array({c})` (or `is_object`, `is_set`) before `some … in {c}`"
    ))
}

fn in_finding(e: &Expr, collection: &Expr) -> Diagnostic {
    let c = collection.span().text();
    Diagnostic::warning(
        "opa-in-undefined",
        span_location(e.span()),
        format!(
            "`{}`: when `{c}` (or the member) is undefined OPA's `in` is undefined, regorus' is false",
            e.span().text()
        ),
    )
    .with_help(format!(
        "bind the operands first (`c := {c}`), so that an undefined one fails the body in both engines"
    ))
}

fn order_finding(span: &Span) -> Diagnostic {
    Diagnostic::warning(
        "opa-order",
        span_location(span),
        format!(
            "`{}`: when one side is a set and the other an object OPA orders the set after, regorus before",
            span.text()
        ),
    )
    .with_help(
        "compare values of one kind: check `is_number`/`is_string` on both sides first, or compare with a literal",
    )
}
