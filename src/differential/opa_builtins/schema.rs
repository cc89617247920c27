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

/// Hand-picked schemas and documents at the edges of what regent answers
/// (boolean subschemas, empty `type`, `enum` of objects in another key
/// order, lengths of emoji, integral floats, bounds against huge numbers),
/// put to OPA's own engine beside the generated ones: every answer alike,
/// or refused.
#[test]
fn listed_schemas_answer_as_opa_does() {
    use crate::differential::opa::{Answer, Oracle, SKIPPED, same};
    let Some(mut opa) = Oracle::start() else {
        eprintln!("opa::{SKIPPED}");
        return;
    };
    let rego =
        "package b\nr := json.verify_schema(input.s)\nm := json.match_schema(input.d, input.s)\n";
    opa.load(&[("b.rego".into(), rego.into())], &json!({}))
        .unwrap();
    let cases = [
        (json!({"items": false}), json!([])),
        (json!({"items": false}), json!([1])),
        (json!({"items": true}), json!([1])),
        (json!({"additionalProperties": false}), json!({})),
        (json!({"not": true}), json!({})),
        (json!({"not": false}), json!({})),
        (json!({"allOf": [true, {}]}), json!([])),
        (json!({"anyOf": [false, {}]}), json!([])),
        (json!({"oneOf": [true, true]}), json!([])),
        (json!({"oneOf": [true, false]}), json!([])),
        (json!({"type": []}), json!([1])),
        (
            json!({"enum": [{"a": "x", "b": null}]}),
            json!({"b": null, "a": "x"}),
        ),
        (json!({"enum": [["a", "b"]]}), json!(["b", "a"])),
        (json!({"const": null}), json!({"k": null})),
        (
            json!({"properties": {"k": {"const": null}}}),
            json!({"k": null}),
        ),
        (json!({"minimum": 0}), json!([1e300])),
        (json!({"items": {"minimum": 0}}), json!([1e300, -0.0, 1.5])),
        (
            json!({"items": {"maximum": 5}}),
            json!([5, 4, 18446744073709551615u64]),
        ),
        (json!({"items": {"type": "integer"}}), json!([1.0, 2.5])),
        (
            json!({"items": {"type": "number"}}),
            json!([1.0, 2.5, 1e300]),
        ),
        (
            json!({"properties": {"k": {"maxLength": 1}}}),
            json!({"k": "😀"}),
        ),
        (
            json!({"properties": {"k": {"minLength": 2}}}),
            json!({"k": "e\u{301}"}),
        ),
        (json!({"maxProperties": 0}), json!({})),
        (json!({"minItems": 0, "maxItems": 0}), json!([])),
        (
            json!({"title": "", "description": "d", "$comment": "c"}),
            json!({}),
        ),
        (json!({"examples": [1], "default": {"a": 1}}), json!({})),
        (json!({"required": ["a"]}), json!(["a"])),
        (json!({"required": ["a"]}), json!("{\"a\": 1}")),
        (json!({"type": "object"}), json!("{\"a\": 1, \"a\": 2}")),
        (
            json!("{\"type\": \"object\", \"type\": \"array\"}"),
            json!([]),
        ),
        (json!("{\"minLength\": 1e0}"), json!({})),
        (json!("  {}  "), json!(" [] ")),
        (json!("\u{feff}{}"), json!({})),
        (
            json!({"properties": {"a": {"type": "string"}}}),
            json!("{\"a\": \"\\ud800\"}"),
        ),
        (json!({"type": "string"}), json!("\"\\ud800\"")),
        (
            json!({"minimum": -1, "maximum": 18446744073709551615u64}),
            json!({}),
        ),
        (json!({"minLength": 18446744073709551615u64}), json!({})),
        (json!({"$id": "x"}), json!({})),
        (json!({"id": "x"}), json!({})),
        (json!({"definitions": {}}), json!({})),
        (json!({"$ref": "#"}), json!(1)),
    ];
    let verify = crate::opa_builtins::of("json.verify_schema").unwrap();
    let matcher = crate::opa_builtins::of("json.match_schema").unwrap();
    let mut bad = Vec::new();
    for (s, d) in cases {
        let want = opa.eval(&["data.b.r", "data.b.m"], &json!({"s": s, "d": d}));
        let (rs, rd) = (
            regorus::Value::from(s.clone()),
            regorus::Value::from(d.clone()),
        );
        let got = [verify(std::slice::from_ref(&rs)), matcher(&[rd, rs])];
        for (w, g) in want.iter().zip(got) {
            let g = g.map(|r| r.map(|v| serde_json::to_value(&v).unwrap()));
            let ok = match (w, &g) {
                (Answer::Value(a), Some(Ok(b))) => same(a, b),
                (Answer::Error(_), Some(Err(_))) => true,
                (_, Some(Err(e))) if e.to_string().contains("not supported by regent") => true,
                _ => false,
            };
            if !ok {
                bad.push(format!("{s} {d}: opa {w:?} regent {g:?}"));
            }
        }
    }
    for b in &bad {
        eprintln!("{b}");
    }
    assert!(bad.is_empty(), "{} answers differ from OPA", bad.len());
}
