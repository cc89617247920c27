//! A `confirm` rule whose message may come from the request blank.
//!
//! regent's policy contract (README) asks `confirm` for a non-empty
//! message string and fails the call closed on a blank one (`"\t\n"`);
//! that is regent's rule, not Rego's, so OPA answers such a policy with
//! the blank string. Where the message is (or holds) a reference into
//! `input` with no constant text around it, and no statement of the body
//! holds it non-blank (`trim_space(x) != ""`), `regent check` says so where
//! it is written: a warning.

use regorus::unstable::{BoolOp, Expr, Literal, Rule, RuleBody};

use super::{PolicyModule, assigned_values, const_string, head, path_of, root_span, span_location};
use crate::diag::Diagnostic;

/// The code of the finding.
pub const CODE: &str = "confirm-from-request";

/// A warning for each `confirm` value of `modules` that may be blank
/// because it takes its text from the request.
pub fn blank_confirms(modules: &[PolicyModule]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for m in modules {
        for rule in &m.module.policy {
            if path_of(head(rule)).first().map(String::as_str) != Some("confirm") {
                continue;
            }
            let guards: Vec<&str> = match rule.as_ref() {
                Rule::Spec { bodies, .. } => bodies.iter().flat_map(non_blank_guards).collect(),
                Rule::Default { .. } => Vec::new(),
            };
            for v in assigned_values(rule) {
                if !non_blank(v)
                    && let Some(at) = input_ref(v)
                    && !guards.contains(&at.0.as_str())
                {
                    out.push(finding(v, at));
                }
            }
        }
    }
    out
}

/// What a body's statements `trim_space(x) != ""` hold non-blank: the
/// text of each such `x`.
fn non_blank_guards(body: &RuleBody) -> Vec<&str> {
    body.query
        .stmts
        .iter()
        .filter_map(|s| match &s.literal {
            Literal::Expr { expr, .. } => match expr.as_ref() {
                Expr::BoolExpr {
                    op: BoolOp::Ne,
                    lhs,
                    rhs,
                    ..
                } => [(lhs, rhs), (rhs, lhs)]
                    .into_iter()
                    .find_map(|(call, empty)| {
                        let Expr::Call { fcn, params, .. } = call.as_ref() else {
                            return None;
                        };
                        (path_of(fcn).join(".") == "trim_space"
                            && const_string(empty).is_some_and(|e| e.is_empty()))
                        .then(|| params.first().map(|p| p.span().text()))
                        .flatten()
                    }),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Whether `e` is sure to be a non-blank string: a constant one, or a
/// `sprintf` or `concat` with constant non-blank text of its own.
fn non_blank(e: &Expr) -> bool {
    if let Some(s) = const_string(e) {
        return !s.trim().is_empty();
    }
    let Expr::Call { fcn, params, .. } = e else {
        return false;
    };
    match (path_of(fcn).join(".").as_str(), &params[..]) {
        ("sprintf", [format, _]) => const_string(format).is_some_and(|f| {
            // The format's own text, without its verbs (`%s`, `%5.2f`).
            let mut text = String::new();
            let mut chars = f.chars();
            while let Some(c) = chars.next() {
                if c == '%' {
                    for v in chars.by_ref() {
                        if v.is_ascii_alphabetic() || v == '%' {
                            break;
                        }
                    }
                } else {
                    text.push(c);
                }
            }
            !text.trim().is_empty()
        }),
        ("concat", [_, parts]) => {
            matches!(parts.as_ref(), Expr::Array { items, .. } if items.iter().any(|i| non_blank(i)))
        }
        _ => false,
    }
}

/// The first reference into `input` in `e` or anything it holds: its
/// path and where it is written.
fn input_ref(e: &Expr) -> Option<(String, crate::diag::Location)> {
    let mut found = None;
    super::visit::walk_expr(e, &mut |x| {
        if found.is_some() {
            return false;
        }
        if let Expr::RefDot { .. } | Expr::RefBrack { .. } | Expr::Var { .. } = x
            && path_of(x).first().map(String::as_str) == Some("input")
        {
            found = Some((x.span().text().to_string(), span_location(root_span(x))));
            return false;
        }
        true
    });
    found
}

fn finding(value: &Expr, (n, at): (String, crate::diag::Location)) -> Diagnostic {
    Diagnostic::warning(
        CODE,
        at,
        format!(
            "`confirm := {}`: the message takes its text from the request (`{n}`); regent's policy contract asks a non-empty message and fails the call closed when it is blank (`\"\\t\\n\"`), where OPA answers the blank string",
            value.span().text()
        ),
    )
    .with_help(format!(
        "give the message constant text of its own: `confirm := sprintf(\"run %s?\", [{n}])`"
    ))
}
