//! The caller schema: what a verified caller's claims look like, declared
//! once per catalog (`caller: {claims: <JSON Schema>}` in a tool file),
//! compiled at load like an `inputSchema`, and held against every caller.
//!
//! A policy reads claims as if they had a shape (`"ops" in
//! input.caller.claims.groups`), but a token may carry anything: `groups:
//! "banned"` (a string, so `"banned" in ...` is false and a deny-list lets
//! it through) or `groups: {"a": "ops"}` (an object, so `"ops" in ...` is
//! true). With a declaration, a caller whose claims do not match it gets no
//! decision at all: [`Catalog::caller_problem`] is checked by every decision
//! about a caller (`resolve_as`, `shadow_as`, `tool_as`, the listing), so a
//! resolve or a call fails closed with [`CallerInvalid`] and every tool is
//! hidden from it. The check lives here, not in `http`, because the schema
//! belongs to the hot-reloaded catalog (a reload may change it) and `http`
//! knows nothing of catalogs; it also covers `--caller-file`, `regent
//! resolve --caller` and `regent test` cases alike.
//!
//! What the declaration means for reading policies (`check`'s
//! `input.caller.claims` references) is `rego/refs`'s; the proof may read the
//! declared schema through [`Catalog::caller_schema`]. Without a declaration
//! nothing is checked here (any claims are accepted, as before).

use serde_json::Value;

use super::Catalog;
use super::schema;
use crate::caller::Caller;
use crate::diag::{Diagnostic, Diagnostics, Location};
use crate::source::{Source, YamlPath};

/// The catalog's compiled caller declaration.
pub struct CallerSchema {
    /// The JSON Schema of `input.caller.claims`, as written.
    pub claims: Value,
    validator: jsonschema::Validator,
    /// Where `caller:` is written.
    pub location: Location,
}

impl std::fmt::Debug for CallerSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallerSchema")
            .field("claims", &self.claims)
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

/// Why a caller's claims do not match the declared schema: the first
/// failing claim and the keyword it fails, never the claim's value (a token
/// is the caller's, and its values do not belong in error messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerInvalid {
    /// JSON Pointer into the claims (`/groups`, `/groups/0`), empty for the
    /// claims object itself.
    pub claim: String,
    /// The JSON Schema keyword the claim fails (`type`, `enum`, `required`).
    pub keyword: String,
    /// What the keyword asks, without the claim's value.
    pub expected: String,
}

impl std::fmt::Display for CallerInvalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.claim.is_empty() {
            "the caller's claims".to_string()
        } else {
            format!(
                "the caller's claim `{}`",
                self.claim.trim_start_matches('/')
            )
        };
        write!(
            f,
            "{at} does not match the catalog's caller schema ({}: {})",
            self.keyword, self.expected
        )
    }
}

impl CallerSchema {
    /// Whether `caller`'s claims match; the first mismatch otherwise, in a
    /// stable order (by claim path).
    pub fn check(&self, caller: &Caller) -> Result<(), CallerInvalid> {
        let claims = Value::Object(caller.claims.clone());
        if self.validator.is_valid(&claims) {
            return Ok(());
        }
        let first = self
            .validator
            .iter_errors(&claims)
            .map(|e| CallerInvalid {
                claim: e.instance_path().as_str().to_string(),
                keyword: e.kind().keyword().to_string(),
                expected: expected(&self.claims, e.schema_path().as_str()),
            })
            .min_by(|a, b| a.claim.cmp(&b.claim).then(a.keyword.cmp(&b.keyword)));
        Err(first.unwrap_or(CallerInvalid {
            claim: String::new(),
            keyword: "schema".into(),
            expected: "claims valid against the declared schema".into(),
        }))
    }
}

/// What the schema keyword at `pointer` asks, read from the schema (the
/// catalog's, safe to show), never from the claim.
fn expected(schema: &Value, pointer: &str) -> String {
    let keyword = pointer.rsplit('/').next().unwrap_or("");
    let value = schema.pointer(pointer);
    match (keyword, value) {
        ("type", Some(v)) => format!("must be of type {}", compact(v)),
        ("enum", Some(v)) => format!("must be one of {}", compact(v)),
        ("const", Some(v)) => format!("must equal {}", compact(v)),
        ("required", Some(v)) => format!("must have {}", compact(v)),
        ("additionalProperties", _) => "has a claim the schema does not declare".into(),
        (k, Some(v)) if !v.is_object() && !v.is_array() => format!("{k} {v}"),
        (k, _) => format!("fails `{k}`"),
    }
}

/// `v` as JSON, cut short: a schema's enum may be long.
fn compact(v: &Value) -> String {
    let s = v.to_string();
    if s.len() <= 120 {
        return s;
    }
    let mut end = 120;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Compiles the catalog's `caller:` declaration: none, or one (a second is
/// an error naming both places; an invalid schema an error at its keyword).
pub fn compile(source: &Source, diags: &mut Diagnostics) -> Option<CallerSchema> {
    let mut found: Option<CallerSchema> = None;
    let mut first: Option<Location> = None;
    for file in &source.tool_files {
        let Some(decl) = &file.model.caller else {
            continue;
        };
        let at = YamlPath::root().key("caller");
        let location = file.locate(&at);
        if let Some(first) = &first {
            diags.push(
                Diagnostic::error(
                    "duplicate-caller",
                    location,
                    format!("a second `caller:` declaration; the first is at {first}"),
                )
                .with_help("declare the caller's claims once per catalog; merge the two into one"),
            );
            continue;
        }
        first = Some(location.clone());
        match schema::compile(&decl.claims, file, &at.key("claims"), "caller.claims") {
            Ok(validator) => {
                found = Some(CallerSchema {
                    claims: decl.claims.clone(),
                    validator,
                    location,
                });
            }
            Err(d) => diags.push(d),
        }
    }
    found
}

impl Catalog {
    /// The declared caller schema, if the catalog has one (for the proof's
    /// caller classes, `check` and `regent test`).
    pub fn caller_schema(&self) -> Option<&CallerSchema> {
        self.caller_schema.as_ref()
    }

    /// Why `caller` may get no decision from this catalog: its claims do
    /// not match the declared schema. `None` without a caller or a schema.
    pub fn caller_problem(&self, caller: Option<&Caller>) -> Option<CallerInvalid> {
        let (schema, caller) = (self.caller_schema.as_ref()?, caller?);
        schema.check(caller).err()
    }
}

// Its tests build whole catalogs (duplicate declarations, a caller refused
// by `resolve_as` and the listing), so they use `build`, which uses this
// file: a child module keeps that arrow out of this one (no file cycle).
#[cfg(test)]
mod tests;
