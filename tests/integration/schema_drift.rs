//! The published JSON Schema (`schemas/regent.schema.json`) and the serde
//! model (`src/source/model.rs`) must accept the same tool files. Nothing
//! here is written twice by hand: the model's keys come from serde's own
//! "unknown field, expected one of ..." errors, its required keys from
//! "missing field" errors, and its types from feeding it every JSON type at
//! every key; each answer is compared with the schema's.

use crate::common;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

fn schema() -> Value {
    let text =
        std::fs::read_to_string(common::repo_root().join("schemas/regent.schema.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn validator() -> jsonschema::Validator {
    jsonschema::validator_for(&schema()).expect("the published schema compiles offline")
}

/// Whether the model accepts `doc` (written out as YAML, as users write it).
fn model_accepts(doc: &Value) -> Result<(), String> {
    let text = yaml_serde::to_string(doc).unwrap();
    regent::source::parse_tool_file(Path::new("probe.yaml"), &text)
        .map(|_| ())
        .map_err(|d| d.message)
}

/// Where each schema definition sits in a tool file, so that a probe value
/// for it can be placed in an otherwise valid document.
const DEFS: &[(&str, &str)] = &[
    ("", ""),
    ("Tool", "/tools/0"),
    ("StaticAnnotations", "/tools/0/annotations"),
    ("MappingRule", "/tools/0/resolve/0"),
    ("HintValues", "/tools/0/resolve/0/annotations"),
    ("Resolver", "/tools/0/resolvers/p"),
    ("Elicit", "/tools/0/resolvers/p/elicit"),
    ("Upstream", "/upstreams/0"),
    ("UpstreamTool", "/upstreams/0/tools/0"),
    ("Caller", "/caller"),
];

fn def_schema(name: &str) -> Value {
    if name.is_empty() {
        schema()
    } else {
        schema()["$defs"][name].clone()
    }
}

fn minimal_tool_file() -> Value {
    json!({"tools": [{
        "name": "probe",
        "inputSchema": {"type": "object"},
        "annotations": {},
        "resolve": [{"annotations": {}}],
        "resolvers": {"p": {"elicit": {"message": "m"}}}
    }],
    "upstreams": [{"name": "u", "command": "c", "tools": [{"name": "t"}]}],
    "caller": {"claims": {"type": "object"}}})
}

/// A valid value for a property schema, by its first non-null type.
fn sample(prop: &Value) -> Value {
    if let Some(r) = prop.get("$ref").and_then(Value::as_str) {
        return match r.strip_prefix("#/$defs/") {
            Some(def) if def_schema(def).get("properties").is_some() => sample_def(def),
            Some(def) => sample(&def_schema(def)),
            // The JSON Schema meta-schema: the simplest tool argument schema.
            None => json!({"type": "object"}),
        };
    }
    if let Some(first) = prop
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.iter().find(|v| !v.is_null()))
    {
        return first.clone();
    }
    if let Some(any) = prop.get("anyOf").and_then(Value::as_array) {
        return sample_def(any[0]["$ref"].as_str().unwrap().rsplit('/').next().unwrap());
    }
    let ty = match &prop["type"] {
        Value::String(t) => t.clone(),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap()
            .to_string(),
        other => panic!("property without a type: {other}"),
    };
    match ty.as_str() {
        "string" => json!("s"),
        "boolean" => json!(true),
        "object" => json!({}),
        "array" => json!([]),
        t => panic!("no sample for {t}"),
    }
}

fn sample_def(name: &str) -> Value {
    let s = def_schema(name);
    let mut out = Map::new();
    for (k, p) in s["properties"].as_object().unwrap() {
        out.insert(k.clone(), if k == "tools" { json!([]) } else { sample(p) });
    }
    Value::Object(out)
}

fn place(at: &str, value: Value) -> Value {
    let mut doc = minimal_tool_file();
    if at.is_empty() {
        return value;
    }
    *doc.pointer_mut(at).unwrap() = value;
    doc
}

/// The keys serde's `deny_unknown_fields` lists for the type at `at`.
fn model_keys(at: &str) -> Vec<String> {
    let probe = place(at, json!({"zz-probe": 1}));
    let message = model_accepts(&probe).expect_err("an unknown key must be refused");
    let (_, expected) = message
        .split_once("expected")
        .unwrap_or_else(|| panic!("no key list in {message:?}"));
    let mut keys: Vec<String> = expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    keys.sort();
    keys
}

#[test]
fn every_object_type_has_the_models_keys() {
    for (def, at) in DEFS {
        let mut schema_keys: Vec<String> = def_schema(def)["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        schema_keys.sort();
        assert_eq!(
            schema_keys,
            model_keys(at),
            "schema $defs/{def} and the serde model disagree on the keys at {at:?}"
        );
    }
}

#[test]
fn required_keys_match_the_model() {
    let v = validator();
    for (def, at) in DEFS {
        let full = sample_def(def);
        let required: Vec<String> = def_schema(def)["required"]
            .as_array()
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let whole = place(at, full.clone());
        assert!(
            v.is_valid(&whole),
            "sample for {def} must be valid: {whole}"
        );
        assert_eq!(model_accepts(&whole), Ok(()), "sample for {def}: {whole}");
        for key in full.as_object().unwrap().keys() {
            let mut without = full.clone();
            without.as_object_mut().unwrap().remove(key);
            let doc = place(at, without);
            let model_requires = model_accepts(&doc)
                .err()
                .is_some_and(|m| m.contains(&format!("missing field `{key}`")));
            assert_eq!(
                required.contains(key),
                model_requires,
                "{def}.{key}: the schema and the model disagree on whether it is required"
            );
            assert_eq!(v.is_valid(&doc), !model_requires, "{def} without {key}");
        }
    }
}

/// inputSchema and outputSchema are any JSON to the model (the catalog
/// builder checks them against the meta-schema); the published schema
/// checks the meta-schema itself, so there it may be stricter.
fn free_json(def: &str, key: &str) -> bool {
    (def == "Tool" && matches!(key, "inputSchema" | "outputSchema"))
        || (def == "Elicit" && key == "schema")
        || (def == "Caller" && key == "claims")
}

/// Where the model is looser than anyone should rely on, the schema stays
/// strict on purpose. Each entry says why; keep this list short.
fn known_quirk(def: &str, key: &str, probe: &Value) -> bool {
    // YAML reads `name: null` as the text "null"; a tool named "null" is a
    // mistake, and editors should say so. The same for a question.
    // Likewise an upstream named "null", or whose command is "null".
    ((def == "Tool" && key == "name")
        || (def == "Elicit" && key == "message")
        || (def == "Upstream" && matches!(key, "name" | "command"))
        || (def == "UpstreamTool" && key == "name"))
        && probe.is_null()
}

#[test]
fn every_key_accepts_the_same_json_types() {
    let v = validator();
    let probes = [
        json!(null),
        json!(true),
        json!(1),
        json!("s"),
        json!([]),
        json!({}),
    ];
    let mut disagreements = Vec::new();
    for (def, at) in DEFS {
        let full = sample_def(def);
        let base = place(at, full.clone());
        assert!(v.is_valid(&base) && model_accepts(&base).is_ok(), "{base}");
        for key in full.as_object().unwrap().keys() {
            for probe in &probes {
                let mut value = full.clone();
                value[key] = probe.clone();
                let doc = place(at, value);
                let by_schema = v.is_valid(&doc);
                let by_model = model_accepts(&doc).is_ok();
                if free_json(def, key) {
                    assert!(
                        !by_schema || by_model,
                        "{def}.{key} = {probe}: the schema accepts what the model refuses"
                    );
                } else if by_schema != by_model && !known_quirk(def, key, probe) {
                    disagreements.push(format!(
                        "{def}.{key} = {probe}: schema says {by_schema}, model says {by_model}"
                    ));
                }
            }
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            yaml_files(&p, out);
        } else if regent::source::FileKind::of(&p) == Some(regent::source::FileKind::Tools) {
            out.push(p);
        }
    }
}

/// Every tool file in examples/ and in the test corpus: the schema accepts it
/// exactly when the model does, except inside inputSchema/outputSchema.
#[test]
fn examples_and_test_catalogs_agree_with_the_model() {
    let v = validator();
    let mut files = Vec::new();
    yaml_files(&common::repo_root().join("examples"), &mut files);
    yaml_files(&common::repo_root().join("tests"), &mut files);
    // The corpus's own expectation files are not catalogs.
    files.retain(|p| p.file_name().is_some_and(|n| n != "expect.yaml"));
    assert!(files.len() > 3, "found only {files:?}");
    let mut checked = 0;
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let Ok(doc) = yaml_serde::from_str::<Value>(&text) else {
            continue; // a YAML syntax error: neither can judge it
        };
        let model = regent::source::parse_tool_file(&path, &text).map(|_| ());
        let errors: Vec<String> = v
            .iter_errors(&doc)
            .map(|e| e.instance_path().as_str().to_string())
            .collect();
        match (&model, errors.is_empty()) {
            (Ok(()), true) | (Err(_), false) => {}
            (Ok(()), false) => assert!(
                errors.iter().all(|p| p.contains("/inputSchema")
                    || p.contains("/outputSchema")
                    || p.starts_with("/caller/claims")),
                "{}: the schema refuses what the model accepts, at {errors:?}",
                path.display()
            ),
            (Err(d), true) => panic!(
                "{}: the model refuses ({}) what the schema accepts",
                path.display(),
                d.message
            ),
        }
        checked += 1;
    }
    assert!(checked > 3);
}

/// Examples point editors at the schema with the yaml-language-server comment.
#[test]
fn examples_carry_the_schema_comment() {
    let mut files = Vec::new();
    yaml_files(&common::repo_root().join("examples"), &mut files);
    assert!(!files.is_empty());
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let first = text.lines().next().unwrap_or("");
        let target = first
            .strip_prefix("# yaml-language-server: $schema=")
            .unwrap_or_else(|| panic!("{} lacks the schema comment", path.display()));
        let resolved = path.parent().unwrap().join(target);
        assert!(
            resolved.canonicalize().ok()
                == common::repo_root()
                    .join("schemas/regent.schema.json")
                    .canonicalize()
                    .ok(),
            "{}: the schema comment points at {}",
            path.display(),
            resolved.display()
        );
    }
}
