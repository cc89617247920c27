//! `json.verify_schema` and `json.match_schema` as OPA answers them.
//!
//! OPA checks schemas with gojsonschema (drafts 4, 6 and 7 mixed when no
//! `$schema` names one); regorus with the `jsonschema` crate, which answers
//! `[true, null]` for a `true` schema where OPA answers `[false, "jsonschema:
//! wrong type, expected string or object"]`, and its own wording where OPA
//! answers gojsonschema's. What OPA reads (probed through `opa::Oracle`):
//! a string is JSON text (`invalid JSON string` when Go's `json.Valid`
//! refuses it), an object or array is the value; anything else is `wrong
//! type, expected string or object`. An array, or the text of a number,
//! string, null or array, is `schema is invalid`; the text `true` or `false`
//! is a schema. `json.verify_schema` answers those as values
//! (`[false, "jsonschema: ..."]`), `json.match_schema` raises them (the
//! document read first), and answers `[true, []]` for a match or `[false,
//! [{"error", "type", "field", "desc"}, ...]]` in gojsonschema's words.
//!
//! regent answers the shapes above as OPA does, and a schema of the
//! keywords below whose values are well formed (`[true, null]`; a match:
//! `[true, []]`). Everything else is refused (`not supported by regent`):
//! an invalid schema's message and a mismatch's error objects are
//! gojsonschema's wording, and other keywords (`$ref`, which gojsonschema
//! fetches over the network, `$schema`, `format`, `pattern`, `if`, ...) are
//! where the validators may disagree. A document value regent cannot be
//! certain of (an integral float under `"type": "integer"`, a float against
//! a bound, a number in `enum` or `const`) is refused too.

use regorus::Value;
use serde_json::Value as Json;

/// The keywords regent checks as gojsonschema does.
const KEYWORDS: &str = "type, properties, required, additionalProperties, items (one schema), \
     enum and const (without numbers), minimum and maximum (integers), minLength, maxLength, \
     minItems, maxItems, minProperties, maxProperties, allOf, anyOf, oneOf, not, title, \
     description, $comment, default, examples";

/// `json.verify_schema(schema)`.
pub(super) fn verify_schema(a: &[Value]) -> Option<anyhow::Result<Value>> {
    const NAME: &str = "json.verify_schema";
    let answer = |ok: bool, why: Value| Some(Ok(Value::from(vec![Value::from(ok), why])));
    let schema = match load(&a[0]) {
        Ok(j) => j,
        Err(Load::Opa(why)) => return answer(false, Value::from(format!("jsonschema: {why}"))),
        Err(Load::Refused(why)) => return refuse(NAME, &why),
    };
    match check(&schema) {
        Ok(()) => answer(true, Value::Null),
        Err(Bad::Opa(why)) => answer(false, Value::from(format!("jsonschema: {why}"))),
        Err(Bad::Refused(why)) => refuse(NAME, &why),
    }
}

/// `json.match_schema(document, schema)`.
pub(super) fn match_schema(a: &[Value]) -> Option<anyhow::Result<Value>> {
    const NAME: &str = "json.match_schema";
    let read = |v: &Value| match load(v) {
        Ok(j) => Ok(j),
        Err(Load::Opa(why)) => Err(super::error(NAME, why)),
        Err(Load::Refused(why)) => Err(refuse(NAME, &why)),
    };
    let document = match read(&a[0]) {
        Ok(j) => j,
        Err(e) => return e,
    };
    let schema = match read(&a[1]) {
        Ok(j) => j,
        Err(e) => return e,
    };
    match check(&schema) {
        Ok(()) => {}
        Err(Bad::Opa(why)) => return super::error(NAME, why),
        Err(Bad::Refused(why)) => return refuse(NAME, &why),
    }
    match matches(&schema, &document) {
        Verdict::Valid => Some(Ok(Value::from(vec![
            Value::from(true),
            Value::from(Vec::<Value>::new()),
        ]))),
        Verdict::Invalid => refuse(
            NAME,
            "the document does not match the schema, and OPA's error objects are \
             gojsonschema's wording, which regent does not reproduce",
        ),
        Verdict::Unknown(why) => refuse(NAME, &why),
    }
}

fn refuse(name: &str, why: &str) -> Option<anyhow::Result<Value>> {
    super::error(
        name,
        format!(
            "{why}: not supported by regent, which refuses rather than answer otherwise than \
             OPA; keep the schema to {KEYWORDS}, and test a document that may not match with \
             Rego comparisons"
        ),
    )
}

enum Load {
    /// OPA's own message (after `jsonschema: `, or the builtin's name).
    Opa(&'static str),
    Refused(String),
}

enum Bad {
    Opa(&'static str),
    Refused(String),
}

/// What OPA reads from an argument: JSON text, an object or an array.
fn load(v: &Value) -> Result<Json, Load> {
    match v {
        Value::String(s) => {
            let paired = super::json::pair_surrogates(s);
            let text = paired.as_deref().unwrap_or(s);
            match serde_json::from_str::<Json>(text) {
                Ok(j) => Ok(j),
                // serde_json refuses what Go reads: deep nesting, a number
                // past a double.
                Err(e) if e.is_syntax() || e.is_eof() => {
                    let m = e.to_string();
                    if m.contains("recursion limit") || m.contains("number out of range") {
                        Err(Load::Refused(format!(
                            "regent cannot read this JSON text as Go does ({m})"
                        )))
                    } else {
                        Err(Load::Opa("invalid JSON string"))
                    }
                }
                Err(e) => Err(Load::Refused(format!(
                    "regent cannot read this JSON text as Go does ({e})"
                ))),
            }
        }
        Value::Object(_) | Value::Array(_) => json(v).map_err(Load::Refused),
        Value::Number(_) | Value::Bool(_) | Value::Null => {
            Err(Load::Opa("wrong type, expected string or object"))
        }
        _ => Err(Load::Refused(
            "a set or undefined value, which OPA writes as JSON otherwise than regent may".into(),
        )),
    }
}

/// `v` as the JSON OPA writes of it (Go's `json.Marshal`), where regent
/// is certain: a float stays a float (`1.0` is no integer to gojsonschema's
/// keywords); a set, a key that is not a string, or an integer past 64 bits
/// is refused.
fn json(v: &Value) -> Result<Json, String> {
    Ok(match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::String(s) => Json::String(s.to_string()),
        Value::Number(n) => {
            // regorus writes a float with the width's fraction digits, an
            // integer as it is: the one way to tell them apart.
            let float = n.format_decimal_with_width(1).contains('.');
            let number = match (float, n.as_i64(), n.as_u64(), n.as_f64()) {
                (false, Some(i), _, _) => Some(serde_json::Number::from(i)),
                (false, None, Some(u), _) => Some(serde_json::Number::from(u)),
                (true, _, _, Some(f)) => serde_json::Number::from_f64(f),
                _ => None,
            };
            Json::Number(number.ok_or("a number regent does not hold as OPA writes it")?)
        }
        Value::Array(a) => Json::Array(a.iter().map(json).collect::<Result<_, _>>()?),
        Value::Object(o) => {
            let mut m = serde_json::Map::new();
            for (k, e) in o.iter() {
                let Value::String(k) = k else {
                    return Err("an object key that is not a string".into());
                };
                m.insert(k.to_string(), json(e)?);
            }
            Json::Object(m)
        }
        Value::Set(_) => {
            return Err("a set, which OPA writes as JSON otherwise than regent may".into());
        }
        _ => return Err("an undefined value".into()),
    })
}

const TYPES: &[&str] = &[
    "array", "boolean", "integer", "number", "null", "object", "string",
];

/// `Ok` when gojsonschema accepts `schema` for certain.
fn check(schema: &Json) -> Result<(), Bad> {
    match schema {
        Json::Object(_) | Json::Bool(_) => sub(schema),
        _ => Err(Bad::Opa("schema is invalid")),
    }
}

fn refused<T>(why: String) -> Result<T, Bad> {
    Err(Bad::Refused(why))
}

/// A (sub)schema: an object of the keywords regent knows, or a boolean.
fn sub(schema: &Json) -> Result<(), Bad> {
    let o = match schema {
        Json::Bool(_) => return Ok(()),
        Json::Object(o) => o,
        _ => return refused("a subschema that is not an object or a boolean".into()),
    };
    let odd = |k: &str| {
        Bad::Refused(format!(
            "the value of `{k}` is not one gojsonschema accepts for certain, and its message is gojsonschema's wording"
        ))
    };
    for (k, v) in o {
        match k.as_str() {
            "type" => {
                let names: Vec<&Json> = match v {
                    Json::Array(a) => a.iter().collect(),
                    one => vec![one],
                };
                let mut seen = Vec::new();
                for n in names {
                    match n.as_str() {
                        Some(t) if TYPES.contains(&t) && !seen.contains(&t) => seen.push(t),
                        _ => return Err(odd(k)),
                    }
                }
            }
            "properties" => {
                let Json::Object(ps) = v else {
                    return Err(odd(k));
                };
                ps.values().try_for_each(sub)?;
            }
            "required" => {
                let Json::Array(a) = v else {
                    return Err(odd(k));
                };
                let mut seen = Vec::new();
                for n in a {
                    match n.as_str() {
                        Some(s) if !seen.contains(&s) => seen.push(s),
                        _ => return Err(odd(k)),
                    }
                }
            }
            "additionalProperties" | "items" | "not" => sub(v).map_err(|_| odd(k))?,
            "allOf" | "anyOf" | "oneOf" => match v {
                Json::Array(a) if !a.is_empty() => a.iter().try_for_each(sub)?,
                _ => return Err(odd(k)),
            },
            "enum" => match v {
                Json::Array(a) if !a.iter().any(has_number) => {
                    if a.iter().enumerate().any(|(i, x)| a[..i].contains(x)) {
                        return Err(odd(k));
                    }
                }
                _ => return Err(odd(k)),
            },
            "const" if !has_number(v) => {}
            "minimum" | "maximum" if v.is_i64() || v.is_u64() => {}
            "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties"
            | "maxProperties"
                // Go reads them as 64-bit signed integers: past 2^63-1 OPA
                // answers `must be of an integer`.
                if v.as_i64().is_some_and(|n| n >= 0) => {}
            "title" | "description" | "$comment" if v.is_string() => {}
            "default" | "examples" => {}
            _ => {
                return refused(format!(
                    "`{k}` is a keyword (or value) regent does not check as OPA's gojsonschema does"
                ));
            }
        }
    }
    Ok(())
}

fn has_number(v: &Json) -> bool {
    match v {
        Json::Number(_) => true,
        Json::Array(a) => a.iter().any(has_number),
        Json::Object(o) => o.values().any(has_number),
        _ => false,
    }
}

enum Verdict {
    Valid,
    Invalid,
    Unknown(String),
}

impl Verdict {
    fn of(ok: bool) -> Verdict {
        if ok { Verdict::Valid } else { Verdict::Invalid }
    }
}

/// Whether `doc` matches `schema` (which [`check`] accepted), as
/// gojsonschema decides, where regent is certain.
fn matches(schema: &Json, doc: &Json) -> Verdict {
    let o = match schema {
        Json::Bool(b) => return Verdict::of(*b),
        Json::Object(o) => o,
        _ => return Verdict::Unknown("a subschema regent does not read".into()),
    };
    let mut unknown = None;
    let mut all = |v: Verdict| match v {
        Verdict::Valid => true,
        Verdict::Invalid => false,
        Verdict::Unknown(why) => {
            unknown.get_or_insert(why);
            true
        }
    };
    let mut ok = true;
    for (k, v) in o {
        let verdict = keyword(k, v, o, doc);
        ok &= all(verdict);
    }
    match (ok, unknown) {
        (false, _) => Verdict::Invalid,
        (true, Some(why)) => Verdict::Unknown(why),
        (true, None) => Verdict::Valid,
    }
}

fn keyword(k: &str, v: &Json, o: &serde_json::Map<String, Json>, doc: &Json) -> Verdict {
    let unsure = |why: &str| {
        Verdict::Unknown(format!(
            "regent cannot tell for certain how OPA's gojsonschema reads {why}"
        ))
    };
    match k {
        "type" => {
            let names: Vec<&str> = match v {
                Json::Array(a) => a.iter().filter_map(Json::as_str).collect(),
                one => one.as_str().into_iter().collect(),
            };
            if names.is_empty() {
                return Verdict::Valid;
            }
            let mut out = Verdict::Invalid;
            for t in names {
                let v = match (t, doc) {
                    ("integer", Json::Number(n)) if n.is_i64() || n.is_u64() => Verdict::Valid,
                    ("integer", Json::Number(n)) => match n.as_f64() {
                        Some(f) if f.fract() != 0.0 => Verdict::Invalid,
                        _ => {
                            unsure("a number written with a fraction or an exponent as an integer")
                        }
                    },
                    ("number", Json::Number(_)) => Verdict::Valid,
                    ("string", Json::String(_))
                    | ("boolean", Json::Bool(_))
                    | ("null", Json::Null)
                    | ("object", Json::Object(_))
                    | ("array", Json::Array(_)) => Verdict::Valid,
                    _ => Verdict::Invalid,
                };
                match v {
                    Verdict::Valid => return Verdict::Valid,
                    Verdict::Unknown(_) => out = v,
                    Verdict::Invalid => {}
                }
            }
            out
        }
        "properties" | "additionalProperties" => {
            let Json::Object(d) = doc else {
                return Verdict::Valid;
            };
            let props = o.get("properties").and_then(Json::as_object);
            let mut each = Vec::new();
            for (name, value) in d {
                match (k, props.and_then(|p| p.get(name))) {
                    ("properties", Some(s)) => each.push(matches(s, value)),
                    ("additionalProperties", None) => each.push(matches(v, value)),
                    _ => {}
                }
            }
            every(each)
        }
        "required" => {
            let Json::Object(d) = doc else {
                return Verdict::Valid;
            };
            let all = v.as_array().into_iter().flatten().filter_map(Json::as_str);
            Verdict::of(all.into_iter().all(|n| d.contains_key(n)))
        }
        "items" => match doc {
            Json::Array(a) => every(a.iter().map(|x| matches(v, x)).collect()),
            _ => Verdict::Valid,
        },
        "not" => match matches(v, doc) {
            Verdict::Valid => Verdict::Invalid,
            Verdict::Invalid => Verdict::Valid,
            u => u,
        },
        "allOf" => every(each(v, doc)),
        "anyOf" | "oneOf" => {
            let vs = each(v, doc);
            if let Some(Verdict::Unknown(why)) =
                vs.iter().find(|v| matches!(v, Verdict::Unknown(_)))
            {
                return Verdict::Unknown(why.clone());
            }
            let valid = vs.iter().filter(|v| matches!(v, Verdict::Valid)).count();
            Verdict::of(if k == "anyOf" { valid > 0 } else { valid == 1 })
        }
        "enum" | "const" => {
            if has_number(doc) {
                return unsure("a number compared with `enum` or `const`");
            }
            let found = match v {
                Json::Array(a) if k == "enum" => a.contains(doc),
                one => one == doc,
            };
            Verdict::of(found)
        }
        "minimum" | "maximum" => {
            let Json::Number(n) = doc else {
                return Verdict::Valid;
            };
            let (Some(x), Some(bound)) = (int(n), v.as_number().and_then(int)) else {
                return unsure("a number that is not an integer against `minimum` or `maximum`");
            };
            Verdict::of(if k == "minimum" {
                x >= bound
            } else {
                x <= bound
            })
        }
        "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties" | "maxProperties" => {
            let len = match (k, doc) {
                ("minLength" | "maxLength", Json::String(s)) => s.chars().count(),
                ("minItems" | "maxItems", Json::Array(a)) => a.len(),
                ("minProperties" | "maxProperties", Json::Object(m)) => m.len(),
                _ => return Verdict::Valid,
            };
            let bound = v.as_u64().unwrap_or(0);
            Verdict::of(if k.starts_with("min") {
                len as u64 >= bound
            } else {
                len as u64 <= bound
            })
        }
        _ => Verdict::Valid,
    }
}

fn int(n: &serde_json::Number) -> Option<i128> {
    n.as_i64().map(i128::from).or(n.as_u64().map(i128::from))
}

fn each(v: &Json, doc: &Json) -> Vec<Verdict> {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|s| matches(s, doc))
        .collect()
}

/// Valid when every verdict is, Invalid when one is.
fn every(vs: Vec<Verdict>) -> Verdict {
    let mut out = Verdict::Valid;
    for v in vs {
        match v {
            Verdict::Invalid => return Verdict::Invalid,
            Verdict::Unknown(_) => out = v,
            Verdict::Valid => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(json: &str) -> Value {
        Value::from_json_str(json).unwrap()
    }

    fn verify(schema: &str) -> Result<String, String> {
        match verify_schema(&[v(schema)]).unwrap() {
            Ok(out) => Ok(serde_json::to_string(&out).unwrap()),
            Err(e) => Err(e.to_string()),
        }
    }

    fn matched(doc: &str, schema: &str) -> Result<String, String> {
        match match_schema(&[v(doc), v(schema)]).unwrap() {
            Ok(out) => Ok(serde_json::to_string(&out).unwrap()),
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn shapes_are_answered_as_opa_answers_them() {
        let wrong = r#"[false,"jsonschema: wrong type, expected string or object"]"#;
        for s in ["true", "false", "1", "null", "1.5"] {
            assert_eq!(verify(s).unwrap(), wrong, "{s}");
        }
        let invalid = r#"[false,"jsonschema: schema is invalid"]"#;
        for s in ["[]", "[{}]", r#""1""#, r#""[]""#, r#""null""#, r#""\"x\"""#] {
            assert_eq!(verify(s).unwrap(), invalid, "{s}");
        }
        for s in [r#""{""#, r#""""#] {
            assert_eq!(
                verify(s).unwrap(),
                r#"[false,"jsonschema: invalid JSON string"]"#
            );
        }
        for s in [
            r#""true""#,
            r#""false""#,
            "{}",
            r#"{"type": ["string", "null"], "required": []}"#,
            r#"{"properties": {"a": false, "b": {"minLength": 2}}, "default": 5}"#,
        ] {
            assert_eq!(verify(s).unwrap(), "[true,null]", "{s}");
        }
    }

    #[test]
    fn what_gojsonschema_words_or_may_read_otherwise_is_refused() {
        for s in [
            r#"{"$ref": "http://127.0.0.1:1/s.json"}"#,
            r#"{"format": "email"}"#,
            r#"{"minLength": 1.0}"#,
            r#"{"minLength": -1}"#,
            r#"{"required": ["a", "a"]}"#,
            r#"{"title": 5}"#,
            r#"{"enum": [1, 1.0]}"#,
            r#"{"minLength": 18446744073709551615}"#,
        ] {
            let e = verify(s).unwrap_err();
            assert!(e.contains("not supported by regent"), "{s}: {e}");
        }
    }

    #[test]
    fn a_match_is_answered_and_a_mismatch_refused() {
        let s =
            r#"{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}"#;
        assert_eq!(matched(r#"{"a": 1}"#, s).unwrap(), "[true,[]]");
        assert_eq!(matched(r#""{\"a\": 2}""#, s).unwrap(), "[true,[]]");
        for doc in [r#"{"a": 1.5}"#, r#"{}"#, r#"{"a": 1.0}"#] {
            let e = matched(doc, s).unwrap_err();
            assert!(e.contains("not supported by regent"), "{doc}: {e}");
        }
        assert_eq!(
            matched("1", s).unwrap_err(),
            "json.match_schema: wrong type, expected string or object"
        );
        assert_eq!(
            matched("{}", "[]").unwrap_err(),
            "json.match_schema: schema is invalid"
        );
        assert_eq!(matched("{}", r#""true""#).unwrap(), "[true,[]]");
    }
}
