//! JSON Schema: checking the schemas a catalog declares, compiling argument
//! validators once at load, and validating arguments per request.

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

/// A plausible argument object for `schema`: used once at load to warm each
/// tool's engine and to surface policy errors that only show at evaluation.
pub fn sample(schema: &Value) -> Value {
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if let Some(d) = schema.get("default") {
        return d.clone();
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts.first().and_then(Value::as_str).unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "null",
    };
    match ty {
        "object" => {
            let mut m = Map::new();
            if let Some(props) = properties(schema) {
                for (k, s) in props {
                    m.insert(k.clone(), sample(s));
                }
            }
            Value::Object(m)
        }
        "array" => Value::Array(Vec::new()),
        "string" => Value::String(String::new()),
        "integer" | "number" => Value::from(0),
        "boolean" => Value::Bool(false),
        _ => Value::Null,
    }
}
