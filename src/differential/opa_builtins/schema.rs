//! Generated JSON schemas and documents for `json.verify_schema` and
//! `json.match_schema` (`Kind::Schema`, `Kind::Doc`): the keywords regent
//! checks (src/opa_builtins/schema.rs) with well formed and ill formed
//! values, keywords it refuses (`$ref`, `format`, `pattern`, `$schema`),
//! schemas as JSON text, invalid text, and values of every other type.

use super::{any, string};
use crate::differential::harness::Rng;
use serde_json::{Value as Json, json};

/// A schema argument: an object most of the time, else its JSON text, a
/// boolean, a number, null, an array or a string.
pub(super) fn schema_arg(rng: &mut Rng) -> Json {
    match rng.below(12) {
        0 => json!(schema(rng, 0).to_string()),
        1 => json!(["true", "false", "1", "null", "[]", "\"x\"", "{", ""][rng.below(8)]),
        2 => [
            json!(true),
            json!(false),
            json!(1),
            Json::Null,
            json!([]),
            json!([{}]),
        ][rng.below(6)]
        .clone(),
        _ => schema(rng, 0),
    }
}

/// A document argument: a value, or its JSON text.
pub(super) fn doc_arg(rng: &mut Rng) -> Json {
    let v = doc(rng, 0);
    match rng.below(4) {
        0 => json!(v.to_string()),
        _ => v,
    }
}

fn doc(rng: &mut Rng, depth: usize) -> Json {
    match rng.below(if depth > 1 { 6 } else { 9 }) {
        0 => json!(["a", "b", "ab", "😀", "x"][rng.below(5)]),
        1 => [
            json!(0),
            json!(1),
            json!(3),
            json!(-2),
            json!(1.5),
            json!(1.0),
            json!(1e2),
        ][rng.below(7)]
        .clone(),
        2 => Json::Null,
        3 => json!(rng.below(2) == 0),
        4 | 5 => any(rng, 2),
        6 => Json::Array((0..rng.below(3)).map(|_| doc(rng, depth + 1)).collect()),
        _ => {
            let mut m = serde_json::Map::new();
            for _ in 0..rng.below(3) {
                m.insert(["a", "b", "c"][rng.below(3)].into(), doc(rng, depth + 1));
            }
            Json::Object(m)
        }
    }
}

fn schema(rng: &mut Rng, depth: usize) -> Json {
    if depth > 0 && rng.below(6) == 0 {
        return json!(rng.below(2) == 0);
    }
    let mut m = serde_json::Map::new();
    for _ in 0..rng.below(if depth > 1 { 2 } else { 4 }) {
        let (k, v) = keyword(rng, depth);
        m.insert(k.into(), v);
    }
    Json::Object(m)
}

fn keyword(rng: &mut Rng, depth: usize) -> (&'static str, Json) {
    let sub = |rng: &mut Rng| schema(rng, depth + 1);
    let pick = |rng: &mut Rng, vs: &[Json]| vs[rng.below(vs.len())].clone();
    let k = [
        "type",
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "minimum",
        "maximum",
        "minLength",
        "maxItems",
        "minProperties",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "title",
        "$ref",
        "format",
        "pattern",
        "$schema",
        "foo",
    ];
    let k = k[rng.below(k.len())];
    let v = match k {
        "type" => pick(
            rng,
            &[
                json!("string"),
                json!("integer"),
                json!("number"),
                json!("object"),
                json!("array"),
                json!("boolean"),
                json!("null"),
                json!("bogus"),
                json!(["string", "null"]),
                json!([]),
                json!(["string", "string"]),
                json!(5),
            ],
        ),
        "properties" => {
            let mut p = serde_json::Map::new();
            for _ in 0..rng.below(3) {
                p.insert(["a", "b", "c"][rng.below(3)].into(), sub(rng));
            }
            if rng.below(10) == 0 {
                json!(5)
            } else {
                Json::Object(p)
            }
        }
        "required" => pick(
            rng,
            &[
                json!(["a"]),
                json!(["a", "b"]),
                json!([]),
                json!(["a", "a"]),
                json!([1]),
                json!("a"),
            ],
        ),
        "additionalProperties" | "not" => match rng.below(4) {
            0 => json!(rng.below(2) == 0),
            _ => sub(rng),
        },
        "items" => match rng.below(5) {
            0 => json!([sub(rng)]),
            _ => sub(rng),
        },
        "enum" => pick(
            rng,
            &[
                json!(["a", null]),
                json!([1, "a"]),
                json!([]),
                json!(["a", "a"]),
                json!([true, {"b": "x"}]),
                json!(["x", "😀"]),
                json!(5),
            ],
        ),
        "const" => pick(rng, &[json!("a"), json!(1), json!({"b": "x"}), json!(null)]),
        "minimum" | "maximum" => pick(rng, &[json!(0), json!(1), json!(3), json!(1.5), json!("x")]),
        "minLength" | "maxItems" | "minProperties" => pick(
            rng,
            &[
                json!(0),
                json!(1),
                json!(2),
                json!(-1),
                json!(1.5),
                json!(1.0),
            ],
        ),
        "allOf" | "anyOf" | "oneOf" => match rng.below(5) {
            0 => json!([]),
            _ => Json::Array((0..1 + rng.below(2)).map(|_| sub(rng)).collect()),
        },
        "title" => pick(rng, &[json!("t"), json!(5)]),
        "$ref" => pick(
            rng,
            &[
                json!("#/properties"),
                json!("#/definitions/a"),
                json!("http://127.0.0.1:1/s.json"),
            ],
        ),
        "format" => pick(rng, &[json!("email"), json!("date-time"), json!("ipv4")]),
        "pattern" => pick(rng, &[json!("^a"), json!("(?=a)"), json!("\\d")]),
        "$schema" => json!("http://json-schema.org/draft-07/schema#"),
        _ => json!(string(rng)),
    };
    (k, v)
}
