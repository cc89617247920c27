//! What a rule binds: its locals and parameters ([`bound_names`]), its `:=`
//! locals to their values, the queries it holds (bodies and
//! comprehensions', [`walk_queries`]). What the locals hold is `defined`'s
//! and `integers`'.

use std::collections::HashMap;

use regorus::unstable::{Expr, Literal, Query, Ref, Rule, RuleHead};

use crate::rego::visit::{self, walk_rule};

/// Names bound in a rule: locals (`:=`, `some`, comprehension and `every`
/// variables) and a function's parameters. A variable that is not one is a
/// rule of the package (or `input`/`data`).
pub(in crate::rego) fn bound_names(rule: &Rule) -> Vec<String> {
    let mut out = Vec::new();
    if let Rule::Spec {
        head: RuleHead::Func { args, .. },
        ..
    } = rule
    {
        for a in args {
            out.extend(visit::vars(a));
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
                        out.extend(visit::vars(k));
                    }
                    out.extend(visit::vars(value));
                }
                Literal::Every { key, value, .. } => {
                    if let Some(k) = key {
                        out.push(k.text().to_string());
                    }
                    out.push(value.text().to_string());
                }
                Literal::Expr { expr, .. } => {
                    if let Expr::AssignExpr { lhs, .. } = expr.as_ref() {
                        out.extend(visit::vars(lhs));
                    }
                }
                Literal::NotExpr { .. } => {}
            }
        }
    };
    walk_queries(rule, &mut query);
    out
}

/// The locals a rule binds with `:=`, to their values (the first binding).
pub(super) fn assignments(rule: &Rule) -> HashMap<String, Ref<Expr>> {
    let mut out = HashMap::new();
    walk_queries(rule, &mut |q| {
        for s in &q.stmts {
            if let Literal::Expr { expr, .. } = &s.literal
                && let Expr::AssignExpr { lhs, rhs, .. } = expr.as_ref()
                && let Expr::Var { value, .. } = lhs.as_ref()
                && let Ok(n) = value.as_string()
            {
                out.entry(n.to_string()).or_insert_with(|| rhs.clone());
            }
        }
    });
    out
}

/// Calls `f` on every query of a rule: bodies and comprehensions'.
pub(in crate::rego) fn walk_queries(rule: &Rule, f: &mut dyn FnMut(&Query)) {
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

/// The name of a variable, if `e` is one.
pub(super) fn var_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Var { value, .. } => value.as_string().ok().map(|s| s.to_string()),
        _ => None,
    }
}
