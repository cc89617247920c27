//! `json.verify_schema` and `json.match_schema` given a schema or a
//! document from the request (issue 27).
//!
//! regent answers these builtins as OPA does only for a schema of the
//! keywords it checks as gojsonschema does, and for a document that
//! matches (`opa_builtins::schema`); an invalid schema, a keyword it does
//! not check (`$ref`, `format`, `pattern`, ...) and a mismatch (OPA's
//! error objects are gojsonschema's wording) fail closed in both
//! evaluators, where OPA answers. When the schema or the document is, or
//! holds, a reference into `input`, that depends on the request: `regent
//! check` says so at the operand, a warning, never a refusal of the tool
//! ([`super::Finding::regorus`]).

use regorus::unstable::{Expr, Ref};

use super::{path_of, refers_input, span_location};
use crate::diag::Diagnostic;

/// The code of [`input_operand`]'s finding.
pub(super) const CODE: &str = "opa-json-schema";

/// A warning at the operand of `json.verify_schema` or `json.match_schema`
/// (`name`, called with `params`) that is, or holds, a reference into
/// `input`: the schema first, else `json.match_schema`'s document.
pub(super) fn input_operand(name: &str, params: &[Ref<Expr>]) -> Option<Diagnostic> {
    let schema = match name {
        "json.verify_schema" => params.first().map(|p| &**p),
        "json.match_schema" => params.get(1).map(|p| &**p),
        _ => return None,
    };
    let (at, what) = if let Some(at) = schema.and_then(refers_input) {
        let what = if name == "json.verify_schema" {
            "takes its schema from the request; regent refuses a schema gojsonschema finds invalid, or with a keyword regent does not check as gojsonschema does (`$ref`, `$schema`, `format`, `pattern`, `if`, ...)"
        } else {
            "takes its schema from the request; regent refuses a schema gojsonschema finds invalid, or with a keyword regent does not check as gojsonschema does (`$ref`, `$schema`, `format`, `pattern`, `if`, ...), and a mismatch"
        };
        (at, what)
    } else if name == "json.match_schema" {
        (
            refers_input(params.first()?)?,
            "matches a document from the request; regent answers a match (`[true, []]`) and refuses a mismatch",
        )
    } else {
        return None;
    };
    let n = path_of(at).join(".");
    Some(
        Diagnostic::warning(
            CODE,
            span_location(crate::rego::root_span(at)),
            format!(
                "`{n}`: `{name}` {what} (OPA's messages and error objects are gojsonschema's wording, which regent does not reproduce), failing closed on such a request where OPA answers"
            ),
        )
        .with_help(
            "give a constant schema of the keywords regent checks (type, properties, required, enum, bounds, allOf/anyOf/oneOf/not: docs/policy-tooling.md, \"regent and OPA\"), and test what may not match with Rego comparisons rather than the error objects",
        ),
    )
}
