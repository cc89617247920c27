//! Keys in a tool's `inputSchema` or `outputSchema` that are not keywords of
//! the schema's JSON Schema dialect (`unknown-schema-keyword`, a warning).
//!
//! A validator ignores a keyword it does not know, so a misspelt one
//! (`maxLenght`, `requird`) or a YAML slip (`{type: string, description:
//! file, relative to root}` is three keys, the last `relative to root: null`)
//! silently constrains nothing. The dialect is the schema's `$schema` (draft
//! 4, 6, 7, 2019-09, 2020-12), or draft 2020-12 without one (MCP 2025-11-25's
//! default); a subschema naming another `$schema` is read in its own. Every
//! subschema is visited (`properties`, `items`, `allOf`, `$defs`, ...); the
//! names under `properties` and the values of `enum`, `const`, `default`
//! and `examples` are data, never looked at. Keys starting with `x-` are
//! vendor extensions and pass silently (docs/policy-tooling.md).
//!
//! Whether the schema is valid at all is [`super::schema::compile`]'s (an
//! unknown `$schema` is refused there, so this check skips it); what the
//! keywords mean is the validator's.

use serde_json::{Map, Value};

use crate::diag::Diagnostic;
use crate::source::{ToolSource, YamlPath};

/// A JSON Schema dialect this check knows the keywords of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    Draft4,
    Draft6,
    Draft7,
    Draft2019,
    Draft2020,
}

/// Keywords every draft from 4 on has.
const COMMON: &[&str] = &[
    "$schema",
    "$ref",
    "title",
    "description",
    "default",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "items",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxProperties",
    "minProperties",
    "required",
    "additionalProperties",
    "properties",
    "patternProperties",
    "enum",
    "type",
    "format",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
];

/// Draft 4's own: `id` without `$`, array `items` with `additionalItems`,
/// `dependencies`, `definitions`.
const DRAFT4: &[&str] = &["id", "additionalItems", "definitions", "dependencies"];

/// Draft 6 added these to draft 4's (and renamed `id` to `$id`).
const DRAFT6: &[&str] = &[
    "$id",
    "additionalItems",
    "definitions",
    "dependencies",
    "const",
    "contains",
    "propertyNames",
    "examples",
];

/// Draft 7 added these to draft 6's.
const DRAFT7: &[&str] = &[
    "$comment",
    "if",
    "then",
    "else",
    "readOnly",
    "writeOnly",
    "contentMediaType",
    "contentEncoding",
];

/// Drafts 2019-09 and 2020-12 share these beyond [`COMMON`] (their
/// meta-schemas still list `definitions` and `dependencies`).
const MODERN: &[&str] = &[
    "$id",
    "$anchor",
    "$vocabulary",
    "$comment",
    "$defs",
    "definitions",
    "dependencies",
    "const",
    "contains",
    "maxContains",
    "minContains",
    "propertyNames",
    "dependentSchemas",
    "dependentRequired",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentMediaType",
    "contentEncoding",
    "contentSchema",
];

/// Draft 2019-09's own: array `items` with `additionalItems`, recursive refs.
const DRAFT2019: &[&str] = &["additionalItems", "$recursiveRef", "$recursiveAnchor"];

/// Draft 2020-12's own.
const DRAFT2020: &[&str] = &["prefixItems", "$dynamicRef", "$dynamicAnchor"];

impl Dialect {
    /// The dialect a `$schema` value names; `None` for one this check does
    /// not know (compilation refuses those).
    fn named(uri: &str) -> Option<Dialect> {
        let uri = uri.trim_end_matches('#');
        let uri = uri
            .strip_prefix("https://")
            .or_else(|| uri.strip_prefix("http://"))?;
        Some(match uri {
            "json-schema.org/draft-04/schema" => Dialect::Draft4,
            "json-schema.org/draft-06/schema" => Dialect::Draft6,
            "json-schema.org/draft-07/schema" => Dialect::Draft7,
            "json-schema.org/draft/2019-09/schema" => Dialect::Draft2019,
            "json-schema.org/draft/2020-12/schema" => Dialect::Draft2020,
            _ => return None,
        })
    }

    const NEWEST_FIRST: [Dialect; 5] = [
        Dialect::Draft2020,
        Dialect::Draft2019,
        Dialect::Draft7,
        Dialect::Draft6,
        Dialect::Draft4,
    ];

    fn uri(self) -> &'static str {
        match self {
            Dialect::Draft4 => "http://json-schema.org/draft-04/schema#",
            Dialect::Draft6 => "http://json-schema.org/draft-06/schema#",
            Dialect::Draft7 => "http://json-schema.org/draft-07/schema#",
            Dialect::Draft2019 => "https://json-schema.org/draft/2019-09/schema",
            Dialect::Draft2020 => "https://json-schema.org/draft/2020-12/schema",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Dialect::Draft4 => "draft 4",
            Dialect::Draft6 => "draft 6",
            Dialect::Draft7 => "draft 7",
            Dialect::Draft2019 => "draft 2019-09",
            Dialect::Draft2020 => "draft 2020-12",
        }
    }

    /// Every keyword of the dialect.
    fn keywords(self) -> impl Iterator<Item = &'static str> {
        let own: &[&[&str]] = match self {
            Dialect::Draft4 => &[DRAFT4],
            Dialect::Draft6 => &[DRAFT6],
            Dialect::Draft7 => &[DRAFT6, DRAFT7],
            Dialect::Draft2019 => &[MODERN, DRAFT2019],
            Dialect::Draft2020 => &[MODERN, DRAFT2020],
        };
        COMMON
            .iter()
            .chain(own.iter().flat_map(|k| k.iter()))
            .copied()
    }

    fn knows(self, key: &str) -> bool {
        self.keywords().any(|k| k == key)
    }
}

/// Keywords whose value is one subschema.
const SCHEMA_VALUED: &[&str] = &[
    "additionalItems",
    "additionalProperties",
    "contains",
    "propertyNames",
    "if",
    "then",
    "else",
    "not",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];

/// Keywords whose value is an array of subschemas.
const ARRAY_OF_SCHEMAS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];

/// Keywords whose value maps names to subschemas (`dependencies` may map a
/// name to an array of names instead, which is skipped).
const MAP_OF_SCHEMAS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// A warning for every key of `schema` (at `at` in `file`, named `what` in
/// messages: `inputSchema`) that is not a keyword of its dialect.
pub fn check(schema: &Value, file: &ToolSource, at: &YamlPath, what: &str) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    walk(schema, Dialect::Draft2020, file, at, what, &mut out);
    out
}

fn walk(
    schema: &Value,
    dialect: Dialect,
    file: &ToolSource,
    at: &YamlPath,
    what: &str,
    out: &mut Vec<Diagnostic>,
) {
    // `true`, `false`: nothing to read; anything else is compile's to refuse.
    let Some(obj) = schema.as_object() else {
        return;
    };
    let dialect = match obj.get("$schema").and_then(Value::as_str) {
        Some(uri) => match Dialect::named(uri) {
            Some(d) => d,
            None => return,
        },
        None => dialect,
    };
    for (key, value) in obj {
        if key.starts_with("x-") {
            continue;
        }
        if !dialect.knows(key) {
            out.push(unknown(obj, key, value, dialect, file, &at.key(key), what));
            continue;
        }
        let at = at.key(key);
        let k = key.as_str();
        if SCHEMA_VALUED.contains(&k) {
            walk(value, dialect, file, &at, what, out);
        } else if ARRAY_OF_SCHEMAS.contains(&k) || k == "items" {
            match value {
                Value::Array(items) => {
                    for (i, s) in items.iter().enumerate() {
                        walk(s, dialect, file, &at.index(i), what, out);
                    }
                }
                _ => walk(value, dialect, file, &at, what, out),
            }
        } else if MAP_OF_SCHEMAS.contains(&k)
            && let Some(m) = value.as_object()
        {
            for (name, s) in m {
                walk(s, dialect, file, &at.key(name), what, out);
            }
        }
    }
}

/// The warning for `key`, a key of `obj` that `dialect` does not know.
fn unknown(
    obj: &Map<String, Value>,
    key: &str,
    value: &Value,
    dialect: Dialect,
    file: &ToolSource,
    at: &YamlPath,
    what: &str,
) -> Diagnostic {
    let message = format!(
        "`{key}` in {what} is not a keyword of json schema {}, so validation ignores it",
        dialect.name()
    );
    // A key without a value that is not a near miss of a keyword is most
    // likely the tail of a value cut off by a comma.
    let help = if value.is_null() && (key.contains(' ') || nearest(key, dialect).is_none()) {
        flow_slip_help(obj, key)
    } else if let Some(other) = Dialect::NEWEST_FIRST.iter().find(|d| d.knows(key)) {
        format!(
            "`{key}` is a keyword of json schema {}: declare that dialect in `$schema` ({}), or write the schema in {}'s keywords",
            other.name(),
            other.uri(),
            dialect.name()
        )
    } else if let Some(best) = nearest(key, dialect) {
        format!("did you mean `{best}`?")
    } else {
        format!(
            "remove it, or name it `x-{key}` to keep it as a vendor annotation that regent leaves alone"
        )
    };
    Diagnostic::warning("unknown-schema-keyword", file.locate(at), message).with_help(help)
}

/// The help for a key with no value, a space in its name or no keyword
/// near it: the tail of a value that a comma cut off in a flow mapping
/// (`{description: file, relative to root}`).
fn flow_slip_help(obj: &Map<String, Value>, key: &str) -> String {
    let general = "a comma inside a flow mapping `{...}` starts a new key; quote the value";
    // serde_json keeps the keys in file order: the one before is the value's
    // owner when it is a string.
    let before = obj
        .iter()
        .take_while(|(k, _)| k.as_str() != key)
        .last()
        .and_then(|(k, v)| Some((k, v.as_str()?)));
    match before {
        Some((k, v)) => format!("{general}: `{k}: \"{v}, {key}\"`"),
        None => general.to_string(),
    }
}

/// The keyword of `dialect` nearest to `key`, if near enough to be a typo.
fn nearest(key: &str, dialect: Dialect) -> Option<&'static str> {
    let lower = key.to_lowercase();
    let (dist, best) = dialect
        .keywords()
        .map(|k| (strsim::damerau_levenshtein(&lower, &k.to_lowercase()), k))
        .min()?;
    (dist <= 2.max(key.len() / 4)).then_some(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn found(schema: Value) -> Vec<String> {
        let file = ToolSource {
            path: "t.yaml".into(),
            model: crate::source::ToolFile {
                tools: Vec::new(),
                upstreams: Vec::new(),
                caller: None,
            },
            index: Default::default(),
        };
        check(&schema, &file, &YamlPath::root(), "inputSchema")
            .into_iter()
            .map(|d| format!("{} | {}", d.message, d.help.unwrap_or_default()))
            .collect()
    }

    #[test]
    fn finds_unknown_keywords_in_every_subschema() {
        let got = found(json!({
            "type": "object",
            "x-internal": true,
            "properties": {
                "maxLenght": {"type": "string", "maxLenght": 3},
                "items": {"type": "array", "items": {"type": "string", "patern": "a"}},
                "choice": {"anyOf": [{"type": "string"}, {"type": "null", "nullable": true}]},
                "free": {"enum": [{"requird": 1}], "default": {"requird": 1}, "examples": [{"a": 1}]}
            },
            "$defs": {"d": {"minimum": 1, "exclusiveMinimun": 2}},
            "if": {"required": ["a"]}, "then": {"requird": ["b"]}
        }));
        assert_eq!(
            got,
            [
                "`maxLenght` in inputSchema is not a keyword of json schema draft 2020-12, so validation ignores it | did you mean `maxLength`?",
                "`patern` in inputSchema is not a keyword of json schema draft 2020-12, so validation ignores it | did you mean `pattern`?",
                "`nullable` in inputSchema is not a keyword of json schema draft 2020-12, so validation ignores it | remove it, or name it `x-nullable` to keep it as a vendor annotation that regent leaves alone",
                "`exclusiveMinimun` in inputSchema is not a keyword of json schema draft 2020-12, so validation ignores it | did you mean `exclusiveMinimum`?",
                "`requird` in inputSchema is not a keyword of json schema draft 2020-12, so validation ignores it | did you mean `required`?",
            ]
        );
    }

    #[test]
    fn reads_the_declared_dialect() {
        // `prefixItems` is 2020-12's; draft 7 has array `items` and `definitions`.
        let got = found(json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "definitions": {"a": {"prefixItems": []}},
            "properties": {"t": {"items": [{"type": "string", "deprecated": true}]}}
        }));
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(
            got[0].starts_with(
                "`prefixItems` in inputSchema is not a keyword of json schema draft 7"
            )
        );
        assert!(got[1].starts_with("`deprecated` in inputSchema"));
        // A dialect this check does not know is compile's to refuse.
        assert!(found(json!({"$schema": "https://example.com/s", "nonsense": 1})).is_empty());
    }

    #[test]
    fn a_comma_in_a_flow_mapping_gets_its_own_help() {
        let got = found(json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "file", "relative to root": null},
                "mode": {"type": "string", "title": "mode", "optional": null},
                "n": {"type": "integer", "maximun": null}
            }
        }));
        assert_eq!(
            got,
            [
                "`relative to root` in inputSchema is not a keyword of json schema draft 2020-12, so validation ignores it | a comma inside a flow mapping `{...}` starts a new key; quote the value: `description: \"file, relative to root\"`",
                "`optional` in inputSchema is not a keyword of json schema draft 2020-12, so validation ignores it | a comma inside a flow mapping `{...}` starts a new key; quote the value: `title: \"mode, optional\"`",
                "`maximun` in inputSchema is not a keyword of json schema draft 2020-12, so validation ignores it | did you mean `maximum`?",
            ]
        );
    }
}
