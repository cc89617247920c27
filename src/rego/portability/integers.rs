//! Which operands of `+ - * /` are provably integers (OPA computes on other
//! numbers' decimal texts, regorus with doubles): literals, builtins whose
//! value is one, arguments declared `type: integer`, and the locals every
//! binding of which is one ([`integer_locals`], a least fixed point),
//! including `to_number` of a string a digits-only pattern has matched or
//! whose schema declares it digits. What the schemas say is [`Facts`]'.

use std::collections::{BTreeSet, HashMap};

use regorus::Value;
use regorus::unstable::{ArithOp, Expr, Literal, Query, Ref, Rule, RuleHead};

use super::Facts;
use super::facts::digits_only;
use super::locals::{var_name, walk_queries};
use crate::rego::const_string;
use crate::rego::path_of;
use crate::rego::visit::{self, walk_rule};

/// Whether `e` may be a number that is not an integer (see the module doc),
/// given the rule's locals known to hold integers (`ints`).
pub(super) fn may_be_fraction(
    e: &Expr,
    module: usize,
    facts: &Facts,
    ints: &BTreeSet<String>,
) -> bool {
    let may = |x: &Expr| may_be_fraction(x, module, facts, ints);
    match e {
        Expr::Number { value, .. } => !matches!(value, Value::Number(n) if n.is_integer()),
        Expr::UnaryExpr { expr, .. } => may(expr),
        Expr::ArithExpr { op, lhs, rhs, .. } => matches!(op, ArithOp::Div) || may(lhs) || may(rhs),
        Expr::Call { fcn, params, .. } => match path_of(fcn).join(".").as_str() {
            // Integers whatever the arguments (or an error); `round`,
            // `ceil` and `floor` give OPA's integer or fail closed
            // (`opa_builtins::numbers`).
            "count"
            | "strings.count"
            | "indexof"
            | "round"
            | "ceil"
            | "floor"
            | "units.parse_bytes"
            | "time.now_ns"
            | "time.parse_ns"
            | "time.parse_rfc3339_ns"
            | "time.parse_duration_ns" => false,
            "abs" => params.first().is_none_or(|p| may(p)),
            "to_number" => !params.first().is_some_and(|p| {
                digits_argument(p, module, facts)
                    || var_name(p).is_some_and(|v| ints.contains(&digits_var(&v)))
            }),
            _ => true,
        },
        Expr::RefDot { .. } | Expr::RefBrack { .. } => {
            let path = path_of(e);
            !(path.len() > 2
                && path[0] == "input"
                && path[1] == "arguments"
                && facts.argument_integer(module, &path[2..]))
        }
        Expr::Var { .. } => !var_name(e).is_some_and(|v| ints.contains(&v)),
        _ => true,
    }
}

/// Whether `e` is an argument whose schema declares it a string of
/// decimal digits ([`Facts::argument_digits`]).
fn digits_argument(e: &Expr, module: usize, facts: &Facts) -> bool {
    let path = path_of(e);
    path.len() > 2
        && path[0] == "input"
        && path[1] == "arguments"
        && facts.argument_digits(module, &path[2..])
}

/// The key under which [`integer_locals`] records that a local holds a
/// string of decimal digits (a statement of its body matched it against
/// a digits-only pattern), so `to_number` of it is an integer.
fn digits_var(name: &str) -> String {
    format!("{name} digits")
}

/// The locals every body of `rule` matches, in a statement of its own,
/// against a digits-only pattern (`regex.match("^[0-9]+$", s)`): wherever
/// a body succeeds they hold decimal digits. A name some comprehension or
/// `every` of the rule binds anew (which may hide the checked one) is
/// left out.
fn digit_strings(rule: &Rule) -> BTreeSet<String> {
    let Rule::Spec { bodies, .. } = rule else {
        return BTreeSet::new();
    };
    let checked = |q: &Query| -> BTreeSet<String> {
        q.stmts
            .iter()
            .filter_map(|stmt| match &stmt.literal {
                Literal::Expr { expr, .. } => match expr.as_ref() {
                    Expr::Call { fcn, params, .. }
                        if path_of(fcn).join(".") == "regex.match"
                            && params.len() == 2
                            && const_string(&params[0]).is_some_and(|p| digits_only(&p)) =>
                    {
                        var_name(&params[1])
                    }
                    _ => None,
                },
                _ => None,
            })
            .collect()
    };
    let mut out: Option<BTreeSet<String>> = None;
    for b in bodies {
        let here = checked(&b.query);
        out = Some(match out {
            None => here,
            Some(o) => o.intersection(&here).cloned().collect(),
        });
    }
    let mut out = out.unwrap_or_default();
    if out.is_empty() {
        return out;
    }
    let tops: Vec<*const Query> = bodies.iter().map(|b| &*b.query as *const Query).collect();
    walk_queries(rule, &mut |q| {
        let inner = !tops.contains(&(q as *const Query));
        for stmt in &q.stmts {
            match &stmt.literal {
                Literal::Every { key, value, .. } => {
                    for s in key.iter().chain(std::iter::once(value)) {
                        out.remove(s.text());
                    }
                }
                Literal::SomeVars { vars, .. } if inner => {
                    for s in vars {
                        out.remove(s.text());
                    }
                }
                Literal::SomeIn { key, value, .. } if inner => {
                    for e in key.iter().chain(std::iter::once(value)) {
                        for v in visit::vars(e) {
                            out.remove(&v);
                        }
                    }
                }
                Literal::Expr { expr, .. } if inner => {
                    if let Expr::AssignExpr { lhs, .. } = expr.as_ref() {
                        for v in visit::vars(lhs) {
                            out.remove(&v);
                        }
                    }
                }
                _ => {}
            }
        }
    });
    out
}

/// How a local of a rule gets its value, for [`integer_locals`].
enum Binding {
    /// `x := e`, `x = e`.
    Value(Ref<Expr>),
    /// `some x in c`: a member of `c`.
    Member(Ref<Expr>),
    /// `some i, _ in c`, `c[i]`: a key or index of `c`.
    Key(Ref<Expr>),
    /// A function's parameter, a pattern, `every`'s: anything.
    Unknown,
}

/// The locals of `rule` that hold integers wherever they are bound: every
/// binding of the name (in any body or comprehension of the rule) is an
/// expression that cannot be a fraction, a member of `numbers.range` /
/// `numbers.range_step` / `indexof_n` or of a literal of integers, or an
/// index of an array from `input`, `data` or those builtins (a JSON
/// object's keys are strings, which arithmetic refuses in both engines).
/// A name with no binding found (a rule, say) is not one. Also, under
/// [`digits_var`], the locals a statement matches against a digits-only
/// pattern (`regex.match("^[0-9]+$", s)`: the body fails otherwise, so
/// wherever it succeeds `to_number(s)` is an integer).
pub(super) fn integer_locals(rule: &Rule, module: usize, facts: &Facts) -> BTreeSet<String> {
    let mut bindings: HashMap<String, Vec<Binding>> = HashMap::new();
    let digits = digit_strings(rule);
    let mut bind = |name: Option<String>, b: Binding| {
        if let Some(n) = name {
            bindings.entry(n).or_default().push(b);
        }
    };
    if let Rule::Spec {
        head: RuleHead::Func { args, .. },
        ..
    } = rule
    {
        for a in args {
            for v in visit::vars(a) {
                bind(Some(v), Binding::Unknown);
            }
        }
    }
    walk_queries(rule, &mut |q| {
        for stmt in &q.stmts {
            match &stmt.literal {
                Literal::SomeIn {
                    key,
                    value,
                    collection,
                    ..
                } => {
                    if let Some(k) = key {
                        bind(var_name(k), Binding::Key(collection.clone()));
                    }
                    match var_name(value) {
                        Some(v) => bind(Some(v), Binding::Member(collection.clone())),
                        None => {
                            for v in visit::vars(value) {
                                bind(Some(v), Binding::Unknown);
                            }
                        }
                    }
                }
                Literal::Every { key, value, .. } => {
                    for s in key.iter().chain(std::iter::once(value)) {
                        bind(Some(s.text().to_string()), Binding::Unknown);
                    }
                }
                Literal::Expr { expr, .. } => {
                    if let Expr::AssignExpr { lhs, rhs, .. } = expr.as_ref() {
                        match (var_name(lhs), var_name(rhs)) {
                            (Some(l), _) => bind(Some(l), Binding::Value(rhs.clone())),
                            (None, Some(r)) => bind(Some(r), Binding::Value(lhs.clone())),
                            (None, None) => {
                                for v in visit::vars(lhs).into_iter().chain(visit::vars(rhs)) {
                                    bind(Some(v), Binding::Unknown);
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    });
    // Every `c[i]` with a variable index binds (or looks up) `i` as a key.
    walk_rule(rule, &mut |e| {
        if let Expr::RefBrack { refr, index, .. } = e
            && let Some(i) = var_name(index)
        {
            bind(Some(i), Binding::Key(refr.clone()));
        }
        true
    });
    let arrays = |c: &Expr| match c {
        Expr::Call { fcn, .. } => matches!(
            path_of(fcn).join(".").as_str(),
            "numbers.range"
                | "numbers.range_step"
                | "indexof_n"
                | "split"
                | "regex.split"
                | "array.concat"
                | "array.slice"
                | "array.reverse"
                | "sort"
        ),
        Expr::Array { .. } => true,
        Expr::RefDot { .. } | Expr::RefBrack { .. } | Expr::Var { .. } => {
            let path = path_of(c);
            match path.first().map(String::as_str) {
                Some("input") => true,
                Some("data") => facts.data_at(&path[1..]).is_some(),
                _ => false,
            }
        }
        _ => false,
    };
    let mut ints: BTreeSet<String> = digits.iter().map(|v| digits_var(v)).collect();
    // A local every binding of which is an argument declared digits.
    for (name, bs) in &bindings {
        if bs
            .iter()
            .all(|b| matches!(b, Binding::Value(e) if digits_argument(e, module, facts)))
        {
            ints.insert(digits_var(name));
        }
    }
    // The least fixed point: a local is an integer once all its bindings
    // are, given the integers found so far.
    loop {
        let mut grew = false;
        for (name, bs) in &bindings {
            if ints.contains(name) {
                continue;
            }
            let all = bs.iter().all(|b| match b {
                Binding::Value(e) => !may_be_fraction(e, module, facts, &ints),
                Binding::Member(c) => match c.as_ref() {
                    Expr::Call { fcn, .. } => matches!(
                        path_of(fcn).join(".").as_str(),
                        "numbers.range" | "numbers.range_step" | "indexof_n"
                    ),
                    Expr::Array { items, .. } | Expr::Set { items, .. } => items
                        .iter()
                        .all(|i| !may_be_fraction(i, module, facts, &ints)),
                    _ => false,
                },
                Binding::Key(c) => arrays(c),
                Binding::Unknown => false,
            });
            if all {
                ints.insert(name.clone());
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    ints
}
