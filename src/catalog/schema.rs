//! JSON Schema: checking the schemas a catalog declares, compiling argument
//! validators once at load, and validating arguments per request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use crate::diag::Diagnostic;
use crate::source::{ToolSource, YamlPath};

/// One reason a set of arguments was refused.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ArgError {
    /// JSON Pointer into the arguments (`/action`), empty for the whole object.
    #[serde(rename = "instancePath")]
    pub instance_path: String,
    pub message: String,
}

impl std::fmt::Display for ArgError {
    /// `/path: message`, with `/` for the whole object.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.instance_path.is_empty() {
            "/"
        } else {
            &self.instance_path
        };
        write!(f, "{at}: {}", self.message)
    }
}

/// Checks `schema` against its meta-schema and compiles it. `what` names the
/// schema in messages (`inputSchema`).
pub fn compile(
    schema: &Value,
    file: &ToolSource,
    at: &YamlPath,
    what: &str,
) -> Result<jsonschema::Validator, Diagnostic> {
    // The meta-schema lookup panics on some malformed `$schema` values; a
    // catalog must never take the server down, so treat that as invalid.
    let meta = std::panic::catch_unwind(|| {
        jsonschema::meta::validate(schema)
            .map_err(|e| (e.instance_path().as_str().to_string(), e.to_string()))
    })
    .unwrap_or_else(|_| Err((String::new(), "unrecognised `$schema`".to_string())));
    if let Err((pointer, message)) = meta {
        return Err(Diagnostic::error(
            "invalid-schema",
            file.locate(&pointer_to_path(at, &pointer)),
            format!("{what} is not a valid json schema: {message}"),
        )
        .with_help("fix the schema; https://json-schema.org/understanding-json-schema describes the keywords"));
    }
    jsonschema::validator_for(schema).map_err(|e| {
        Diagnostic::error(
            "invalid-schema",
            file.locate(at),
            format!("{what} cannot be compiled: {e}"),
        )
        .with_help(
            "remove remote `$ref`s (regent fetches nothing over the network) or fix the reference",
        )
    })
}

/// The validators of one build, one per distinct schema text: a catalog
/// generated from a template, or importing many tools of one upstream,
/// repeats the same schema across its tools, and checking and compiling one
/// costs more than the rest of a small tool, in time and memory. Identical
/// text is an identical schema, so sharing never changes a verdict; a
/// schema that fails is compiled (and located) again at each tool.
#[derive(Default)]
pub struct Validators(Mutex<HashMap<String, Arc<jsonschema::Validator>>>);

impl Validators {
    /// [`compile`], or the validator an earlier tool's identical schema got.
    pub fn compile(
        &self,
        schema: &Value,
        file: &ToolSource,
        at: &YamlPath,
        what: &str,
    ) -> Result<Arc<jsonschema::Validator>, Diagnostic> {
        let text = schema.to_string();
        let known = self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&text)
            .cloned();
        if let Some(v) = known {
            return Ok(v);
        }
        // Compiled outside the lock: two threads meeting the same new schema
        // both compile it, and the second keeps the first's.
        let v = Arc::new(compile(schema, file, at, what)?);
        Ok(self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(text)
            .or_insert(v)
            .clone())
    }
}

/// `at` extended by the segments of a JSON Pointer.
pub fn pointer_to_path(at: &YamlPath, pointer: &str) -> YamlPath {
    let mut p = at.clone();
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        p = match seg.parse::<usize>() {
            Ok(i) => p.index(i),
            Err(_) => p.key(&seg),
        };
    }
    p
}

/// Every reason `args` fails the tool's input schema, in a stable order.
pub fn validate(validator: &jsonschema::Validator, args: &Value) -> Vec<ArgError> {
    let mut errors: Vec<ArgError> = validator
        .iter_errors(args)
        .map(|e| ArgError {
            instance_path: e.instance_path().as_str().to_string(),
            message: truncate(&e.to_string(), 300),
        })
        .collect();
    errors.sort_by(|a, b| a.instance_path.cmp(&b.instance_path));
    errors.dedup();
    // A megabyte of bad input must not become a megabyte of error.
    errors.truncate(20);
    errors
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// The declared properties of an object schema.
pub fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

/// A plausible value for `schema`, valid against it whenever the generator
/// understands its keywords: used at load to warm each tool's engine, and by
/// `check` as the value of the arguments it does not vary. `check` validates
/// every sample before use, so a schema this cannot satisfy shows as
/// rejected samples, never as silently wrong ones.
pub fn sample(schema: &Value) -> Value {
    candidates(schema).into_iter().next().unwrap_or(Value::Null)
}

/// How many values [`candidates`] generates from one `pattern`.
const FROM_PATTERN: usize = 3;

/// A few distinct values for `schema`, the most plausible first: `const`,
/// every `enum` value, `default`, `examples`, then values generated from the
/// type's keywords (`pattern`, `minLength`/`maxLength`, `format`, numeric
/// bounds and `multipleOf`, `minItems`/`items`, object properties).
/// Deterministic: a pattern is sampled with a fixed seed.
pub fn candidates(schema: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let push = |v: Value, out: &mut Vec<Value>| {
        if !out.contains(&v) {
            out.push(v);
        }
    };
    if let Some(c) = schema.get("const") {
        return vec![c.clone()];
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        return e.clone();
    }
    if let Some(d) = schema.get("default") {
        push(d.clone(), &mut out);
    }
    for e in schema
        .get("examples")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        push(e.clone(), &mut out);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = schema.get(key).and_then(Value::as_array) {
            for b in branches {
                for v in candidates(b) {
                    push(v, &mut out);
                }
            }
            return out;
        }
    }
    if let Some(first) = schema
        .get("allOf")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        for v in candidates(first) {
            push(v, &mut out);
        }
        return out;
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts.first().and_then(Value::as_str).unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ if ["pattern", "minLength", "maxLength", "format"]
            .iter()
            .any(|k| schema.get(k).is_some()) =>
        {
            "string"
        }
        _ if ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]
            .iter()
            .any(|k| schema.get(k).is_some()) =>
        {
            "number"
        }
        _ if schema.get("items").is_some() => "array",
        _ => "null",
    };
    let generated = match ty {
        "object" => {
            let mut m = Map::new();
            if let Some(props) = properties(schema) {
                for (k, s) in props {
                    m.insert(k.clone(), sample(s));
                }
            }
            vec![Value::Object(m)]
        }
        "array" => {
            let n = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = schema.get("items").map(sample).unwrap_or(Value::Null);
            vec![Value::Array(vec![item; n.min(64) as usize])]
        }
        "string" => strings(schema),
        "integer" | "number" => numbers(schema, ty == "integer"),
        "boolean" => vec![Value::Bool(false), Value::Bool(true)],
        _ => vec![Value::Null],
    };
    for v in generated {
        push(v, &mut out);
    }
    out
}

/// Strings for a string schema: from its `pattern` (within the length
/// bounds), its `format`, or of the least length it allows.
fn strings(schema: &Value) -> Vec<Value> {
    let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
    let max = schema
        .get("maxLength")
        .and_then(Value::as_u64)
        .map_or(usize::MAX, |m| m as usize);
    let fits = |s: &str| (min..=max).contains(&s.chars().count());
    if let Some(p) = schema.get("pattern").and_then(Value::as_str) {
        return from_pattern(p, max)
            .into_iter()
            .filter(|s| fits(s))
            .take(FROM_PATTERN)
            .map(Value::String)
            .collect();
    }
    if let Some(f) = schema.get("format").and_then(Value::as_str)
        && let Some(v) = format_example(f)
    {
        return vec![Value::String(v.to_string())];
    }
    let mut out = Vec::new();
    if min == 0 {
        out.push(Value::String(String::new()));
    }
    let n = min.max(1);
    if n <= max {
        out.push(Value::String("a".repeat(n.min(4096))));
    }
    out
}

/// A value of a common `format`.
fn format_example(format: &str) -> Option<&'static str> {
    Some(match format {
        "date-time" => "2024-01-01T00:00:00Z",
        "date" => "2024-01-01",
        "time" => "00:00:00Z",
        "email" | "idn-email" => "user@example.com",
        "uri" | "iri" | "uri-reference" | "iri-reference" | "url" => "https://example.com/",
        "uuid" => "00000000-0000-4000-8000-000000000000",
        "hostname" | "idn-hostname" => "example.com",
        "ipv4" => "192.0.2.1",
        "ipv6" => "2001:db8::1",
        "duration" => "P1D",
        "json-pointer" => "/a",
        _ => return None,
    })
}

/// Up to [`FROM_PATTERN`] distinct strings matching `pattern`, ASCII when
/// the pattern allows. Nothing when regex-syntax cannot read the pattern
/// (ECMA-262 and Rust regexes differ at the edges).
fn from_pattern(pattern: &str, max_len: usize) -> Vec<String> {
    crate::regex_samples::pattern_strings(pattern, max_len, FROM_PATTERN)
}

/// Numbers within the schema's bounds and a multiple of its `multipleOf`:
/// 0 when allowed, then the least and the greatest allowed.
fn numbers(schema: &Value, integer: bool) -> Vec<Value> {
    let Bounds { lo, hi, .. } = number_bounds(schema, integer);
    let inside = |v: f64| lo.is_none_or(|l| v >= l) && hi.is_none_or(|h| v <= h);
    let mut picks = Vec::new();
    if inside(0.0) {
        picks.push(0.0);
    }
    picks.extend(lo.filter(|v| inside(*v)));
    picks.extend(hi.filter(|v| inside(*v)));
    let mut out: Vec<Value> = Vec::new();
    for v in picks.into_iter().filter_map(|v| number_value(v, integer)) {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// What a number schema allows: the least and greatest values on the grid
/// of `unit` (its `multipleOf`, or 1 for integers), `None` where unbounded.
pub struct Bounds {
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    pub grid: f64,
}

/// The bounds of a number (or, with `integer`, integer) schema, inclusive
/// and exclusive ones together.
pub fn number_bounds(schema: &Value, integer: bool) -> Bounds {
    let f = |k: &str| schema.get(k).and_then(Value::as_f64);
    let step = f("multipleOf").filter(|m| *m > 0.0);
    let unit = step.unwrap_or(1.0);
    // The least and greatest allowed values, on the grid of `unit` (integers
    // are multiples of 1 as well).
    let grid = if integer {
        step.map_or(1.0, |s| if s.fract() == 0.0 { s } else { s.max(1.0) })
    } else {
        unit
    };
    let lo = match (f("minimum"), f("exclusiveMinimum")) {
        (Some(m), None) => Some((m / grid).ceil() * grid),
        (None, Some(x)) => Some(((x / grid).floor() + 1.0) * grid),
        (Some(m), Some(x)) => {
            Some(((m / grid).ceil() * grid).max(((x / grid).floor() + 1.0) * grid))
        }
        (None, None) => None,
    };
    let hi = match (f("maximum"), f("exclusiveMaximum")) {
        (Some(m), None) => Some((m / grid).floor() * grid),
        (None, Some(x)) => Some(((x / grid).ceil() - 1.0) * grid),
        (Some(m), Some(x)) => {
            Some(((m / grid).floor() * grid).min(((x / grid).ceil() - 1.0) * grid))
        }
        (None, None) => None,
    };
    Bounds { lo, hi, grid }
}

/// `v` as a JSON number: an integer when it is whole (and within the range
/// f64 carries exactly, 2^53), `None` when an integer schema would refuse it.
pub fn number_value(v: f64, integer: bool) -> Option<Value> {
    if v.fract() == 0.0 && v.abs() <= (1u64 << 53) as f64 {
        Some(Value::from(v as i64))
    } else if integer {
        None
    } else {
        Some(Value::from(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every candidate of `s` passes `s`.
    fn all_valid(s: &Value) -> Vec<Value> {
        let v = jsonschema::validator_for(s).unwrap();
        let c = candidates(s);
        assert!(!c.is_empty(), "no candidate for {s}");
        for x in &c {
            assert!(v.is_valid(x), "{x} fails {s}");
        }
        c
    }

    #[test]
    fn candidates_satisfy_the_schema() {
        let kv = json!({"type": "string", "pattern": "^[a-z0-9_-]{1,64}$"});
        assert_eq!(all_valid(&kv).len(), FROM_PATTERN);
        // Deterministic: the same schema gives the same samples.
        assert_eq!(candidates(&kv), candidates(&kv));
        all_valid(&json!({"type": "string", "pattern": "^/srv/[a-z]+\\.txt$", "maxLength": 12}));
        all_valid(&json!({"type": "string", "minLength": 3, "maxLength": 5}));
        for f in ["date-time", "email", "uri", "uuid", "ipv4", "hostname"] {
            all_valid(&json!({"type": "string", "format": f}));
        }
        assert_eq!(
            all_valid(&json!({"type": "integer", "minimum": 5, "maximum": 10})),
            vec![json!(5), json!(10)]
        );
        assert_eq!(
            all_valid(&json!({"type": "integer", "exclusiveMinimum": 0, "multipleOf": 4})),
            vec![json!(4)]
        );
        all_valid(&json!({"type": "number", "exclusiveMaximum": -1.5}));
        all_valid(
            &json!({"type": "array", "minItems": 2, "items": {"type": "string", "minLength": 1}}),
        );
        all_valid(&json!({"type": "object", "properties": {
            "n": {"type": "integer", "minimum": 1}, "s": {"type": "string", "pattern": "^x+$"}}}));
    }

    #[test]
    fn impossible_schemas_give_nothing_valid() {
        // Unsatisfiable: no string is both this short and this long.
        assert!(candidates(&json!({"type": "string", "minLength": 5, "maxLength": 2})).is_empty());
        // A backreference regex-syntax cannot read.
        assert!(candidates(&json!({"type": "string", "pattern": "^(a)\\1$"})).is_empty());
    }
}
