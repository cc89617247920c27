//! How a reference that can never be defined is reported: where it left
//! what a schema or document can hold ([`Miss`]), the path as written up
//! to there, and the nearest valid name as a "did you mean" (a typo's
//! likely fix). Where the miss is found is `input`'s and `data`'s.

use regorus::unstable::Span;

use super::Part;
use crate::diag::{Diagnostic, Location};
use crate::rego;

/// `input.arguments.a[_].b`, up to and including `parts[upto]`.
pub(super) fn show(parts: &[Part], upto: usize) -> String {
    let mut s = String::new();
    for (i, p) in parts.iter().take(upto + 1).enumerate() {
        match &p.name {
            Some(n) if i == 0 => s.push_str(n),
            Some(n) if is_ident(n) => {
                s.push('.');
                s.push_str(n);
            }
            Some(n) => s.push_str(&format!("[{n:?}]")),
            None => s.push_str("[_]"),
        }
    }
    s
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The candidate nearest to `name`, if it is near enough to be a typo.
fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let (dist, best) = candidates
        .into_iter()
        .map(|c| {
            (
                strsim::damerau_levenshtein(&name.to_lowercase(), &c.to_lowercase()),
                c,
            )
        })
        .min()?;
    (dist <= 2.max(name.len() / 3)).then_some(best)
}

pub(super) fn listed(names: &[String]) -> String {
    if names.is_empty() {
        return "none".to_string();
    }
    let mut shown: Vec<String> = names.iter().take(8).map(|n| format!("`{n}`")).collect();
    if names.len() > 8 {
        shown.push(format!("and {} more", names.len() - 8));
    }
    shown.join(", ")
}

/// Where a path left what a schema or document can hold.
pub(super) struct Miss {
    /// Index of the first component that cannot be defined.
    pub(super) at: usize,
    /// Why, after "`path` is never defined: ".
    pub(super) why: String,
    /// The names that are valid at that point.
    pub(super) candidates: Vec<String>,
}

pub(super) fn diagnostic(code: &'static str, parts: &[Part], miss: &Miss, fix: &str) -> Diagnostic {
    let shown = show(parts, miss.at);
    let name = parts[miss.at].name.clone().unwrap_or_default();
    let help = match nearest(&name, miss.candidates.iter().map(String::as_str)) {
        Some(best) => {
            let mut fixed = parts[..miss.at]
                .iter()
                .map(|p| Part {
                    name: p.name.clone(),
                    span: p.span.clone(),
                })
                .collect::<Vec<_>>();
            fixed.push(Part {
                name: Some(best.to_string()),
                span: parts[miss.at].span.clone(),
            });
            format!(
                "did you mean `{}`? the expression is undefined on every request, so a rule that tests it never applies",
                show(&fixed, miss.at)
            )
        }
        None if miss.candidates.is_empty() => {
            format!("{fix}; the expression is undefined on every request")
        }
        None => format!(
            "the names defined here are {}; {fix}",
            listed(&miss.candidates)
        ),
    };
    Diagnostic::error(
        code,
        location(&parts[miss.at].span),
        format!("`{shown}` is never defined: {}", miss.why),
    )
    .with_help(help)
}

pub(super) fn location(span: &Span) -> Location {
    rego::span_location(span)
}
