//! Builtins that read a request's text into numbers (issue 27):
//! `to_number`, `json.unmarshal`, `units.parse` and `units.parse_bytes`.
//! OPA keeps a number as the text spells it (`"1e3"`, `"-0"`, `"007"`,
//! `"+3"`, `".5"`, `"1_000"`, past 64 bits) and answers with it; regent
//! holds the number, not its text, and fails closed on such texts in both
//! evaluators (`opa_builtins::numbers`, `opa_builtins::json`,
//! `policy::spelled`). A call given a reference into `input` that the
//! schemas do not declare something other than a string is flagged, a
//! warning only ([`Finding::regorus`](super::Finding::regorus)); a local
//! is not followed (the portable way binds the checked text first).

use regorus::unstable::Expr;

use super::facts::Facts;
use crate::diag::Diagnostic;
use crate::rego::{path_of, root_span, span_location};

/// The code of [`parse_finding`].
pub(super) const PARSE_CODE: &str = "opa-number-parse";

/// The pattern a text is checked against before `to_number`, so that both
/// evaluators answer alike: an integer without a
/// leading zero, of at most nine digits and six decimals that do not end
/// in zero (15 significant digits at most, which regent holds exactly).
pub(super) const PORTABLE_NUMBER: &str = r"^-?(0|[1-9][0-9]{0,8})(\.[0-9]{0,5}[1-9])?$";

/// The finding for a call of builtin `name` on `params`, when its text
/// operand may be a string of the request.
pub(super) fn parse_finding(
    name: &str,
    params: &[regorus::unstable::Ref<Expr>],
    module: usize,
    facts: &Facts,
) -> Option<Diagnostic> {
    let what = match name {
        "to_number" => {
            "OPA keeps the number as the text spells it (`\"1e3\"`, `\"-0\"`, `\"007\"`, `\"+3\"`, `\".5\"`, `\"1_000\"`, `\"18446744073709551617\"`) and answers with it"
        }
        "json.unmarshal" => {
            "OPA keeps each number of the text as spelled (`1e3`, `1.50`, `-0`, past 64 bits) and answers with it"
        }
        "units.parse" | "units.parse_bytes" => {
            "OPA answers any amount the text spells, past 64 bits too (`\"1e30\"`)"
        }
        _ => return None,
    };
    let text = params.first().filter(|p| request_text(p, module, facts))?;
    let t = path_of(text).join(".");
    let help = match name {
        "to_number" => format!(
            "check the text and convert the checked local: `s := {t}; regex.match(`{PORTABLE_NUMBER}`, s); n := to_number(s)`, which both answer alike, or declare the argument `type: number` in inputSchema"
        ),
        "json.unmarshal" => "declare the argument an object or array in inputSchema and read it as it is, or have clients spell numbers as JSON writers do (`100`, `1.5`)".into(),
        _ => format!(
            "check the text first and use the checked local: `s := {t}; regex.match(`^[0-9]{{1,9}}[A-Za-z]{{0,3}}$`, s); {name}(s)`"
        ),
    };
    Some(
        Diagnostic::warning(
            PARSE_CODE,
            span_location(root_span(text)),
            format!(
                "`{t}`: `{name}` reads a text the request may hold; {what}, where regent fails closed on such texts"
            ),
        )
        .with_help(help),
    )
}

/// Whether `e` is a reference into `input` that may hold a string: any but
/// an argument every tool's inputSchema declares of another type.
fn request_text(e: &Expr, module: usize, facts: &Facts) -> bool {
    if !matches!(
        e,
        Expr::RefDot { .. } | Expr::RefBrack { .. } | Expr::Var { .. }
    ) {
        return false;
    }
    let path = path_of(e);
    if path.first().map(String::as_str) != Some("input") {
        return false;
    }
    if path.len() < 3 || path[1] != "arguments" {
        return true;
    }
    let schemas = &facts.schemas[module];
    schemas.is_empty()
        || !schemas.iter().all(|schema| {
            path[2..]
                .iter()
                .try_fold(*schema, |at, seg| {
                    at.get("properties").and_then(|p| p.get(seg))
                })
                .and_then(|at| at.get("type"))
                .and_then(serde_json::Value::as_str)
                .is_some_and(|t| t != "string")
        })
}
