//! A regex builtin whose pattern comes from the request (issue 27).
//!
//! A constant pattern regent cannot reproduce is flagged where it is
//! written (`opa-regex-syntax`); one taken from `input` is only known at
//! run time, where a pattern with a feature regent refuses
//! (`opa_builtins::regex::translate`'s `Refused::Unsure`: a Unicode class
//! by a script or long name, a repetition of a repetition across a flag
//! group) fails closed in both evaluators while OPA answers. `regent
//! check` says so at the operand: a warning, never a refusal of the tool
//! ([`super::Finding::regorus`]).

use regorus::unstable::Expr;

use super::{path_of, refers_input, span_location};
use crate::diag::Diagnostic;

/// The code of [`input_pattern`]'s finding.
pub(super) const CODE: &str = "opa-regex-pattern";

/// The operand of builtin `name` that is a pattern, if `name` is a regex
/// builtin that takes one.
pub(super) fn pattern_operand(name: &str) -> Option<usize> {
    match name {
        "regex.match" | "regex.is_valid" | "regex.split" | "regex.find_n" => Some(0),
        "regex.replace" => Some(1),
        _ => None,
    }
}

/// A warning at `pattern`, the pattern operand of `name`, where it is (or
/// holds) a reference into `input`.
pub(super) fn input_pattern(pattern: &Expr, name: &str) -> Option<Diagnostic> {
    let at = refers_input(pattern)?;
    let n = path_of(at).join(".");
    Some(
        Diagnostic::warning(
            CODE,
            span_location(crate::rego::root_span(at)),
            format!(
                "`{n}`: `{name}` takes its pattern from the request; regent refuses a pattern whose Go RE2 meaning it does not reproduce (a Unicode class by a script or long name, `\\p{{Greek}}`, `\\p{{Letter}}`; a repetition of a repetition across a flag group, `a*(?i){{2}}`) and fails closed on such a request, where OPA answers"
            ),
        )
        .with_help(
            "match against a constant pattern (one `regent check` vets), or check the request's pattern first (`not contains(p, \"\\\\p{\")`) so both answer alike",
        ),
    )
}
