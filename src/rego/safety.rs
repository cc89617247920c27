//! OPA's safety rule, checked in the syntax tree before anything runs: a
//! variable in a rule's head, in a negation (`not ...`) or passed to a
//! function must be bound by the rule's body (`:=`, `=`, `some ... in`, a
//! reference index such as `input.a[i]`, a function's output argument). An
//! unbound one is undefined on every request that reaches it, and regorus
//! reports it only when the expression runs (a -32603 at request time).
//!
//! The analysis errs towards silence: everything that might bind a
//! variable counts as binding it (`some x` alone, either side of `=`, the
//! last argument of a call written as a statement), comprehensions and
//! `every` bodies are their own scopes and are not checked, and names of
//! rules, imports, `input` and `data` are always bound. References that can
//! never be defined are [`super::refs`]'s.

use std::collections::BTreeSet;

use regorus::unstable::{AssignOp, Expr, Literal, Query, Rule, RuleHead, Span};

use super::PolicyModule;
use super::visit::walk_expr;
use crate::diag::Diagnostic;
use crate::rego;

/// Every unsafe variable in `modules`' rules, at its first use.
pub fn check(modules: &[PolicyModule]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let defs = rego::rule_defs(modules);
    // The rule names of each package, gathered once: filtering every
    // definition of the catalog for each module compared strings
    // modules x definitions times (10,000 tools: 10^8 comparisons).
    let mut names: std::collections::HashMap<&str, Vec<&str>> = std::collections::HashMap::new();
    for d in &defs {
        names.entry(d.package.as_str()).or_default().push(d.name());
    }
    for m in modules {
        let mut globals: BTreeSet<String> = ["input", "data", "_"]
            .iter()
            .map(ToString::to_string)
            .collect();
        globals.extend(
            names
                .get(m.package.as_str())
                .into_iter()
                .flatten()
                .map(|n| n.to_string()),
        );
        for imp in &m.module.imports {
            let alias = match &imp.r#as {
                Some(span) => span.text().to_string(),
                None => imp
                    .refr
                    .span()
                    .text()
                    .rsplit('.')
                    .next()
                    .unwrap_or_default()
                    .to_string(),
            };
            globals.insert(alias);
        }
        for rule in &m.module.policy {
            check_rule(rule, &globals, &mut out);
        }
    }
    out
}

fn check_rule(rule: &Rule, globals: &BTreeSet<String>, out: &mut Vec<Diagnostic>) {
    let Rule::Spec { head, bodies, .. } = rule else {
        return;
    };
    let mut reported = BTreeSet::new();
    let mut report = |name: &str, span: &Span, what: &str, help: &str| {
        if reported.insert(name.to_string()) {
            out.push(
                Diagnostic::error(
                    "rego-unsafe-var",
                    rego::span_location(span),
                    format!("variable `{name}` {what} is never bound in the rule's body"),
                )
                .with_help(help.to_string()),
            );
        }
    };
    // What the head needs bound, and what it binds itself (function arguments).
    let mut needed: Vec<(String, Span)> = Vec::new();
    let mut head_bound = BTreeSet::new();
    let refr = match head {
        RuleHead::Compr { refr, assign, .. } => {
            if let Some(a) = assign {
                vars(&a.value, &mut needed);
            }
            refr
        }
        RuleHead::Set { refr, key, .. } => {
            if let Some(k) = key {
                vars(k, &mut needed);
            }
            refr
        }
        RuleHead::Func {
            refr, args, assign, ..
        } => {
            for a in args {
                let mut v = Vec::new();
                vars(a, &mut v);
                head_bound.extend(v.into_iter().map(|(n, _)| n));
            }
            if let Some(a) = assign {
                vars(&a.value, &mut needed);
            }
            refr
        }
    };
    // `p[x] := ...`: the key's variables too.
    walk_expr(refr, &mut |e| {
        if let Expr::RefBrack { index, .. } = e {
            vars(index, &mut needed);
        }
        true
    });

    let unbound = |name: &str, bound: &BTreeSet<String>| {
        !globals.contains(name) && !head_bound.contains(name) && !bound.contains(name)
    };
    const HEAD_HELP: &str = "bind it in the body (`x := ...`, `some x in ...`, `input.arguments.items[x]`), or write the value in the head";
    if bodies.is_empty() {
        for (name, span) in &needed {
            if unbound(name, &BTreeSet::new()) {
                report(name, span, "in the rule's head", HEAD_HELP);
            }
        }
    }
    for (i, body) in bodies.iter().enumerate() {
        let mut bound = BTreeSet::new();
        binds(&body.query, &mut bound);
        let mut head_vars = Vec::new();
        if let Some(a) = &body.assign {
            vars(&a.value, &mut head_vars);
        }
        if i == 0 {
            head_vars.extend(needed.iter().cloned());
        }
        for (name, span) in &head_vars {
            if unbound(name, &bound) {
                report(name, span, "in the rule's head", HEAD_HELP);
            }
        }
        for stmt in &body.query.stmts {
            match &stmt.literal {
                Literal::NotExpr { expr, .. } => {
                    let mut v = Vec::new();
                    vars(expr, &mut v);
                    for (name, span) in &v {
                        if unbound(name, &bound) {
                            report(
                                name,
                                span,
                                "in a negation",
                                "bind it before the `not` (a negation never binds a variable), or use `_` for any value",
                            );
                        }
                    }
                }
                Literal::Expr { expr, .. } => {
                    // The last argument of a call written as a statement may be its output.
                    let output = match expr.as_ref() {
                        Expr::Call { params, .. } => params.last().map(|p| p.span().clone()),
                        _ => None,
                    };
                    walk_expr(expr, &mut |e| match e {
                        Expr::ArrayCompr { .. }
                        | Expr::SetCompr { .. }
                        | Expr::ObjectCompr { .. } => false,
                        Expr::Call { fcn, params, .. } => {
                            for p in params {
                                if output.as_ref().is_some_and(|o| same_span(o, p.span())) {
                                    continue;
                                }
                                if let Expr::Var { value, span, .. } = p.as_ref()
                                    && let Ok(name) = value.as_string()
                                    && unbound(name.as_ref(), &bound)
                                {
                                    report(
                                        name.as_ref(),
                                        span,
                                        &format!("passed to `{}`", fcn.span().text()),
                                        "bind it before the call (`x := ...`, `some x in ...`); a function's arguments must have values",
                                    );
                                }
                            }
                            true
                        }
                        _ => true,
                    });
                }
                _ => {}
            }
        }
    }
}

fn same_span(a: &Span, b: &Span) -> bool {
    a.start == b.start && a.end == b.end && a.line == b.line
}

/// The variables of `e` outside comprehensions, with where each is written.
fn vars(e: &Expr, out: &mut Vec<(String, Span)>) {
    walk_expr(e, &mut |x| match x {
        Expr::ArrayCompr { .. } | Expr::SetCompr { .. } | Expr::ObjectCompr { .. } => false,
        Expr::Call { params, .. } => {
            // The function's name is not a variable.
            for p in params {
                vars(p, out);
            }
            false
        }
        Expr::Var { value, span, .. } => {
            if let Ok(s) = value.as_string() {
                out.push((s.as_ref().to_string(), span.clone()));
            }
            true
        }
        _ => true,
    });
}

/// Every variable `q` might bind.
fn binds(q: &Query, bound: &mut BTreeSet<String>) {
    let add = |e: &Expr, bound: &mut BTreeSet<String>| {
        let mut v = Vec::new();
        vars(e, &mut v);
        bound.extend(v.into_iter().map(|(n, _)| n));
    };
    for stmt in &q.stmts {
        match &stmt.literal {
            Literal::SomeVars { vars: vs, .. } => {
                bound.extend(vs.iter().map(|s| s.text().to_string()));
            }
            Literal::SomeIn {
                key,
                value,
                collection,
                ..
            } => {
                if let Some(k) = key {
                    add(k, bound);
                }
                add(value, bound);
                indexes(collection, bound);
            }
            Literal::Expr { expr, .. } => {
                match expr.as_ref() {
                    Expr::AssignExpr { op, lhs, rhs, .. } => {
                        add(lhs, bound);
                        if *op == AssignOp::Eq {
                            add(rhs, bound);
                        }
                    }
                    Expr::Call { params, .. } => {
                        if let Some(p) = params.last() {
                            add(p, bound);
                        }
                    }
                    _ => {}
                }
                indexes(expr, bound);
            }
            Literal::NotExpr { .. } | Literal::Every { .. } => {}
        }
        for w in &stmt.with_mods {
            indexes(&w.r#as, bound);
        }
    }
}

/// Variables used as reference indexes (`input.a[i]`, `data.x[k].y`), which
/// iteration binds.
fn indexes(e: &Expr, bound: &mut BTreeSet<String>) {
    walk_expr(e, &mut |x| match x {
        Expr::ArrayCompr { .. } | Expr::SetCompr { .. } | Expr::ObjectCompr { .. } => false,
        Expr::RefBrack { index, .. } => {
            let mut v = Vec::new();
            vars(index, &mut v);
            bound.extend(v.into_iter().map(|(n, _)| n));
            true
        }
        _ => true,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(policy: &str) -> Vec<String> {
        let mut engine = regorus::Engine::new();
        engine
            .add_policy("p.rego".to_string(), policy.to_string())
            .unwrap();
        let modules = rego::modules(&mut engine);
        check(&modules)
            .into_iter()
            .map(|d| format!("{}:{} {}", d.location.line, d.location.column, d.message))
            .collect()
    }

    #[test]
    fn finds_unbound_head_negation_and_argument_variables() {
        let found = run(r#"package t
import rego.v1
deny contains x if input.arguments.a == 1
meta := {"o": o} if { input.arguments.a == 2 }
deny contains "n" if { not startswith(p, "/") }
deny contains "c" if { startswith(q, "/") }
deny contains "d" if { y := lower(r) }
"#);
        assert_eq!(
            found,
            [
                "3:15 variable `x` in the rule's head is never bound in the rule's body",
                "4:15 variable `o` in the rule's head is never bound in the rule's body",
                "5:39 variable `p` in a negation is never bound in the rule's body",
                "6:35 variable `q` passed to `startswith` is never bound in the rule's body",
                "7:35 variable `r` passed to `lower` is never bound in the rule's body",
            ]
        );
    }

    #[test]
    fn bound_variables_stay_clean() {
        let found = run(r#"package t
import rego.v1
import data.lists
limits := {"a": 1}
deny contains m if { some k, v in limits; v > 0; m := k }
deny contains m if { some i; input.arguments.xs[i] == "x"; m := sprintf("%d", [i]) }
deny contains m if { input.arguments.xs[j]; not startswith(input.arguments.xs[j], "/"); m := "j" }
deny contains m if { [a, b] := split(input.arguments.s, ":"); m := concat(a, [b]) }
deny contains m if { input.arguments.s = m }
deny contains m if { split(input.arguments.s, ":", parts); m := parts[0] }
deny contains "l" if { not lists.allowed[input.arguments.s] }
deny contains "c" if { count([w | some w in input.arguments.xs; w != ""]) > 1 }
deny contains "e" if { every z in input.arguments.xs { startswith(z, "/") } }
f(x) := y if y := x
g(x) := x
h(x) := {k: v | some k, v in x}
v := r if { r := 1 } else := s if { s := 2 }
"#);
        assert_eq!(found, Vec::<String>::new());
    }
}
