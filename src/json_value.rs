//! serde_json's `Value` read from another format (a YAML case file, a
//! caller document) with an integer past 64 bits read as serde_json reads
//! one in a request's text: as the nearest double. serde_json's own
//! `Deserialize` refuses such an integer (`JSON number out of range`) when
//! a format hands it over as `u128`/`i128`, as `yaml_serde` does, so a
//! `regent test` case could not write `n: 18446744073709551617`, which a
//! client can send. What regent does with a number it cannot hold is
//! `policy::spelled`'s (it keeps the text, `testing::numbers`); this
//! module only reads.

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// A `Map<String, Value>` field (`#[serde(deserialize_with = "json_value::map")]`).
/// Anything but a mapping is refused where it is, in serde's own words
/// (`invalid type: sequence, expected a map`), as `Map`'s `Deserialize`
/// refuses it.
pub fn map<'de, D: Deserializer<'de>>(d: D) -> Result<Map<String, Value>, D::Error> {
    d.deserialize_map(MapVisitor)
}

struct MapVisitor;

impl<'de> Visitor<'de> for MapVisitor {
    type Value = Map<String, Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a map")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        members(map)
    }
}

/// A mapping's members, each value read as [`value`] reads one.
fn members<'de, A: MapAccess<'de>>(mut map: A) -> Result<Map<String, Value>, A::Error> {
    let mut out = Map::new();
    while let Some((k, Wide(v))) = map.next_entry::<String, Wide>()? {
        out.insert(k, v);
    }
    Ok(out)
}

/// A `Value` field (`#[serde(deserialize_with = "json_value::value")]`).
pub fn value<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
    Wide::deserialize(d).map(|w| w.0)
}

struct Wide(Value);

impl<'de> Deserialize<'de> for Wide {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(WideVisitor).map(Wide)
    }
}

struct WideVisitor;

impl<'de> Visitor<'de> for WideVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    // As serde_json reads an integer its 64 bits cannot hold: the nearest
    // double (always finite: 128 bits are far below f64::MAX).
    fn visit_i128<E: serde::de::Error>(self, n: i128) -> Result<Value, E> {
        self.visit_f64(n as f64)
    }

    fn visit_u128<E: serde::de::Error>(self, n: u128) -> Result<Value, E> {
        self.visit_f64(n as f64)
    }

    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        // As serde_json's own `Value`: a number it cannot write is null.
        Ok(Number::from_f64(n).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        value(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(Wide(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        members(map).map(Value::Object)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    #[derive(serde::Deserialize)]
    struct Doc {
        #[serde(deserialize_with = "super::map")]
        m: serde_json::Map<String, Value>,
    }

    #[test]
    fn reads_integers_past_64_bits_as_the_nearest_double() {
        let doc: Doc = yaml_serde::from_str(
            "m: {big: 18446744073709551617, neg: -9223372036854775809, small: -3, u: 18446744073709551615, f: 1.5, s: x, n: null, a: [1, {b: 2}]}",
        )
        .unwrap();
        let want = json!({
            "big": 18446744073709551617.0_f64,
            "neg": -9223372036854775809.0_f64,
            "small": -3,
            "u": 18446744073709551615_u64,
            "f": 1.5,
            "s": "x",
            "n": null,
            "a": [1, {"b": 2}],
        });
        assert_eq!(Value::Object(doc.m), want);
        // As serde_json reads the same text in a request.
        let wire: Value = serde_json::from_str("18446744073709551617").unwrap();
        assert_eq!(want["big"], wire);
    }

    #[test]
    fn a_mapping_is_required_where_one_is() {
        let e = yaml_serde::from_str::<Doc>("m: [1]").err().unwrap();
        assert!(
            e.to_string()
                .contains("invalid type: sequence, expected a map"),
            "{e}"
        );
    }
}
