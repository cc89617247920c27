//! Checking tool files against the published JSON Schema,
//! `schemas/regent.schema.json`: the same file editors use through the
//! `yaml-language-server` comment. serde stops at a file's first problem;
//! the schema reports every one, each at its key.

use std::path::Path;
use std::sync::OnceLock;

use serde_json::Value;

use crate::diag::{Diagnostic, Location};
use crate::source::{LocationIndex, YamlPath, key_help};

/// The schema's text, compiled into the binary.
pub const SCHEMA: &str = include_str!("../../schemas/regent.schema.json");

fn schema() -> &'static Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(|| serde_json::from_str(SCHEMA).expect("the published schema is valid json"))
}

fn validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| jsonschema::validator_for(schema()).expect("the published schema compiles"))
}

/// Fields a mapping rule can never set: resolution keeps them as listed.
const IDENTITY: &[&str] = &[
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
];

/// Every place `text` (a tool file at `path`) breaks the published schema.
/// A file that is not YAML at all is left to the parser's diagnostic.
pub fn check_file(path: &Path, text: &str) -> Vec<Diagnostic> {
    let Ok(doc) = yaml_serde::from_str::<Value>(text) else {
        return Vec::new();
    };
    // Built only when the file breaks the schema: the second parse that
    // finds positions is most of this function's cost on a clean file.
    let index = std::cell::OnceCell::new();
    let locate = |p: &YamlPath| {
        let (line, column) = index.get_or_init(|| LocationIndex::build(text)).locate(p);
        Location::new(path, line, column)
    };
    let mut out = Vec::new();
    for e in validator().iter_errors(&doc) {
        let pointer = e.instance_path().as_str().to_string();
        let at = crate::catalog::schema::pointer_to_path(&YamlPath::root(), &pointer);
        if let jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } =
            e.kind()
        {
            let allowed = allowed_keys(&pointer);
            for key in unexpected {
                out.push(unknown_key(
                    &doc,
                    &pointer,
                    key,
                    &allowed,
                    locate(&at.key(key)),
                ));
            }
            continue;
        }
        out.push(
            Diagnostic::error(
                "schema",
                locate(&at),
                format!(
                    "{}: {}",
                    if pointer.is_empty() {
                        "the file"
                    } else {
                        &pointer
                    },
                    e
                ),
            )
            .with_help("see schemas/regent.schema.json for what each key takes"),
        );
    }
    out
}

fn unknown_key(
    doc: &Value,
    pointer: &str,
    key: &str,
    allowed: &[String],
    at: Location,
) -> Diagnostic {
    let segs: Vec<&str> = pointer.split('/').skip(1).collect();
    let tool_name = || {
        segs.get(1)
            .and_then(|i| doc.pointer(&format!("/tools/{i}/name")))
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string()
    };
    // tools/N/resolve/M and tools/N/resolve/M/annotations
    let in_rule = segs.len() >= 4 && segs[0] == "tools" && segs[2] == "resolve";
    if in_rule && (segs.len() == 4 && IDENTITY.contains(&key) || segs.len() == 5 && key == "title")
    {
        let rule: usize = segs[3].parse::<usize>().unwrap_or(0) + 1;
        let field = if segs.len() == 5 {
            "annotations.title".to_string()
        } else {
            key.to_string()
        };
        return Diagnostic::error(
            "changes-identity",
            at,
            format!("rule {rule} of `{}` would change the tool's {field}, which resolution never changes", tool_name()),
        )
        .with_help("set it on the tool itself; a rule may set only annotations (the four hints), meta and securitySchemes");
    }
    let allowed_refs: Vec<&str> = allowed.iter().map(String::as_str).collect();
    let mut d = Diagnostic::error("unknown-key", at, format!("unknown key `{key}`"));
    if let Some(help) = key_help(key, &allowed_refs) {
        d = d.with_help(help);
    }
    d
}

/// The keys the schema allows in the object at `pointer`.
fn allowed_keys(pointer: &str) -> Vec<String> {
    let mut node = schema();
    for seg in pointer.split('/').skip(1) {
        node = deref(node);
        node = if seg.parse::<usize>().is_ok() {
            match node.get("items") {
                Some(n) => n,
                None => return Vec::new(),
            }
        } else {
            match node.get("properties").and_then(|p| p.get(seg)) {
                Some(n) => n,
                None => return Vec::new(),
            }
        };
    }
    deref(node)
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// Follows local `$ref`s.
fn deref(mut node: &Value) -> &Value {
    for _ in 0..8 {
        match node
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|p| schema().pointer(p))
        {
            Some(n) => node = n,
            None => break,
        }
    }
    node
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_every_unknown_key_with_a_suggestion() {
        let text = "tools:\n  - name: a\n    inputSchema: {type: object}\n    anotations: {}\n    resolve:\n      - when: {}\n        title: x\n";
        let mut ds = check_file(Path::new("t.yaml"), text);
        ds.sort_by_key(|d| d.location.line);
        let got: Vec<(&str, usize, Option<&str>)> = ds
            .iter()
            .map(|d| (d.code, d.location.line, d.help.as_deref()))
            .collect();
        assert_eq!(
            got[0],
            ("unknown-key", 4, Some("did you mean `annotations`?"))
        );
        assert_eq!(got[1].0, "changes-identity");
        assert_eq!(got[1].1, 7);
    }
}
