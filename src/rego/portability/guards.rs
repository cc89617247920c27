//! What OPA's compiler evaluates before a negation (`rewriteDynamics`,
//! `rewriteExprTerms`): the guards of a `not`, whose undefinedness fails
//! the body in OPA ([`not_guards`]; `policy/lower` gives `native` the same).
//! Whether a guard may be undefined is `defined`'s.

use regorus::unstable::{BoolOp, Expr, Ref};

use crate::rego::path_of;

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
