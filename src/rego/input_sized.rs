//! Allocations whose size the client chooses: a builtin that grows its
//! result with an argument (`numbers.range`, `sprintf` with a width,
//! `concat` in a comprehension…) fed from `input`, directly or through a
//! variable bound from it in the same rule.
//!
//! Called by [`super::lint`] on each builtin call it resolves, so the
//! warning comes in the order of the other lint findings. Function
//! arguments and other rules are not followed; whether a call actually
//! passes the memory budget is `policy/budget`'s job at run time.

use std::collections::BTreeSet;

use regorus::unstable::{AssignOp, Expr, Literal, Query, Ref, Rule, Span};

use super::const_string;
use super::span_location;
use super::visit::{vars, walk_expr, walk_rule};
use crate::diag::Diagnostic;

/// Builtins whose result grows with an argument, and which arguments choose
/// the size: (name, argument indexes, only inside a comprehension).
/// `sprintf` is listed by its format string; its values count only when the
/// format is not a constant or takes a width from them (`*`).
const SIZE_DRIVING: &[(&str, &[usize], bool)] = &[
    ("numbers.range", &[0, 1], false),
    ("numbers.range_step", &[0, 1, 2], false),
    ("sprintf", &[0], false),
    ("replace", &[1, 2], false),
    ("strings.replace_n", &[0], false),
    ("concat", &[0, 1], true),
    ("array.concat", &[0, 1], true),
];

/// The variables of `rule` whose value comes from `input`: bound by `:=`
/// or `=` (either side a variable) or `some ... in` from an expression that
/// mentions `input` or another such variable, in the rule's bodies and its
/// comprehensions. Function arguments and other rules are not followed.
pub(super) fn tainted_vars(rule: &Rule) -> BTreeSet<String> {
    // (variables bound, the expression they are bound from)
    let mut bindings: Vec<(Vec<String>, Ref<Expr>)> = Vec::new();
    fn some_in(q: &Query, bindings: &mut Vec<(Vec<String>, Ref<Expr>)>) {
        for stmt in &q.stmts {
            if let Literal::SomeIn {
                key,
                value,
                collection,
                ..
            } = &stmt.literal
            {
                let mut bound = vars(value);
                if let Some(k) = key {
                    bound.extend(vars(k));
                }
                bindings.push((bound, collection.clone()));
            }
        }
    }
    if let Rule::Spec { bodies, .. } = rule {
        for b in bodies {
            some_in(&b.query, &mut bindings);
        }
    }
    walk_rule(rule, &mut |e| {
        match e {
            Expr::AssignExpr { op, lhs, rhs, .. } => {
                if let Expr::Var { .. } = lhs.as_ref() {
                    bindings.push((vars(lhs), rhs.clone()));
                } else if *op == AssignOp::ColEq {
                    // Destructuring: `[a, b] := input.arguments.pair`.
                    bindings.push((vars(lhs), rhs.clone()));
                }
                if *op == AssignOp::Eq
                    && let Expr::Var { .. } = rhs.as_ref()
                {
                    bindings.push((vars(rhs), lhs.clone()));
                }
            }
            Expr::ArrayCompr { query, .. }
            | Expr::SetCompr { query, .. }
            | Expr::ObjectCompr { query, .. } => some_in(query, &mut bindings),
            _ => {}
        }
        true
    });
    let mut tainted = BTreeSet::new();
    loop {
        let before = tainted.len();
        for (vars, from) in &bindings {
            if mentions_input(from, &tainted) {
                tainted.extend(vars.iter().cloned());
            }
        }
        if tainted.len() == before {
            return tainted;
        }
    }
}

/// `e` reads `input` or one of the `tainted` variables.
fn mentions_input(e: &Expr, tainted: &BTreeSet<String>) -> bool {
    let mut found = false;
    walk_expr(e, &mut |x| {
        if let Expr::Var { value, .. } = x
            && let Ok(s) = value.as_string()
            && (s.as_ref() == "input" || tainted.contains(s.as_ref()))
        {
            found = true;
        }
        !found
    });
    found
}

/// A warning when the builtin `name` grows its result by an argument that
/// comes from `input`.
pub(super) fn input_sized(
    name: &str,
    params: &[Ref<Expr>],
    span: &Span,
    tainted: &BTreeSet<String>,
    in_comprehension: bool,
) -> Option<Diagnostic> {
    let (_, sized, only_in_compr) = SIZE_DRIVING.iter().find(|(n, _, _)| *n == name)?;
    if *only_in_compr && !in_comprehension {
        return None;
    }
    let from_input = |i: usize| params.get(i).is_some_and(|p| mentions_input(p, tainted));
    let mut chosen = sized.iter().any(|i| from_input(*i));
    if name == "sprintf" && from_input(1) {
        // The values choose the size only through a width or a format that
        // is not written in the policy.
        chosen |= params
            .first()
            .is_none_or(|f| const_string(f).is_none_or(|f| f.contains('*')));
    }
    if !chosen {
        return None;
    }
    Some(
        Diagnostic::warning(
            "input-sized-allocation",
            span_location(span),
            format!("the size of this allocation is chosen by the client: `{name}` takes its size from input"),
        )
        .with_help("bound the argument in the tool's inputSchema (`maximum`, `maxLength`, `maxItems`) or check it before the call; past the evaluation's memory budget every call fails (`policy-memory`)"),
    )
}
