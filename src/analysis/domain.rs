//! The finite domain of a value a JSON Schema describes: every value an
//! `enum`, `const`, `boolean`, `null` (or an object made of those, or an
//! `anyOf`/`oneOf` of those) allows, or why there is no finite one.
//!
//! Shared by the worst-case proof (an argument's domain), the caller
//! classes (a claim's values, `caller_classes`) and the exercise's samples;
//! apart from `proof` so that `caller_classes`, which the proof uses, does
//! not use the proof back. Which arguments or claims get a domain, and what
//! is done with the values, is theirs.

use serde_json::{Map, Value};

use crate::catalog::schema;

/// The most combinations a proof evaluates; also the most values an
/// object's domain may have.
pub const LIMIT: usize = 10_000;

/// Every value an argument can take, `None` meaning absent; `Err` says why
/// the domain is not finite.
pub fn domain(schema: &Value, required: bool) -> Result<Vec<Option<Value>>, String> {
    let mut values: Vec<Option<Value>> = finite_values(schema)?.into_iter().map(Some).collect();
    if !required {
        values.push(None);
    }
    Ok(values)
}

/// Every value a schema allows, when they are finitely many (at most
/// [`LIMIT`] for an object's properties); `Err` says why not.
pub fn finite_values(schema: &Value) -> Result<Vec<Value>, String> {
    if let Some(c) = schema.get("const") {
        return Ok(vec![c.clone()]);
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        return Ok(e.clone());
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = schema.get(key).and_then(Value::as_array) {
            let mut out = Vec::new();
            for b in branches {
                for v in finite_values(b)? {
                    if !out.contains(&v) {
                        out.push(v);
                    }
                }
            }
            return Ok(out);
        }
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return Err("it has no type, enum or const".to_string()),
    };
    let mut out = Vec::new();
    for t in types {
        match t {
            "boolean" => out.extend([Value::Bool(true), Value::Bool(false)]),
            "null" => out.push(Value::Null),
            "object" => out.extend(object_values(schema)?),
            other => return Err(format!("it is a {other} without enum or const")),
        }
    }
    Ok(out)
}

fn object_values(schema: &Value) -> Result<Vec<Value>, String> {
    let open = schema.get("additionalProperties") != Some(&Value::Bool(false));
    let props = schema::properties(schema).cloned().unwrap_or_default();
    if props.is_empty() && open {
        return Err("it is an object without declared properties".to_string());
    }
    let required = required_names(schema);
    let mut combos = vec![Map::new()];
    for (name, s) in &props {
        let d =
            domain(s, required.contains(name)).map_err(|e| format!("property `{name}`: {e}"))?;
        let mut next = Vec::new();
        for c in &combos {
            for v in &d {
                let mut m = c.clone();
                if let Some(v) = v {
                    m.insert(name.clone(), v.clone());
                }
                next.push(m);
                if next.len() > LIMIT {
                    return Err(format!(
                        "its properties have more than {LIMIT} combinations"
                    ));
                }
            }
        }
        combos = next;
    }
    Ok(combos.into_iter().map(Value::Object).collect())
}

/// The names a schema's `required` lists.
pub fn required_names(schema: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn domains_of_finite_schemas() {
        assert_eq!(domain(&json!({"type": "boolean"}), true).unwrap().len(), 2);
        assert_eq!(
            domain(&json!({"enum": ["a", "b", "c"]}), false)
                .unwrap()
                .len(),
            4
        );
        assert_eq!(
            domain(&json!({"const": 1}), true).unwrap(),
            vec![Some(json!(1))]
        );
        let obj = json!({"type": "object", "additionalProperties": false,
            "properties": {"force": {"type": "boolean"}, "mode": {"enum": ["a", "b"]}}, "required": ["mode"]});
        assert_eq!(domain(&obj, true).unwrap().len(), 6);
        assert!(domain(&json!({"type": "string"}), true).is_err());
        assert!(domain(&json!({"type": "object"}), true).is_err());
    }
}
