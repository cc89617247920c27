//! Canonical JSON: a value written with object keys sorted at every level
//! (arrays keep their order, scalars are written as serde_json writes
//! them), so that two values equal as JSON give the same bytes whatever
//! order their keys came in. Its one use is a digest: the visibility cache
//! keys callers by it (`catalog::visibility`) and the decision log records
//! the arguments by it (`decisions::arguments_digest`, which users see, so
//! these bytes must not change).
//!
//! The text is written whole, then hashed; what the digest is for is the
//! callers' business.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// SHA-256 of `v` as canonical JSON.
pub fn sha256(v: &Value) -> [u8; 32] {
    // The text is written whole, then hashed in one call: fed piece by
    // piece (a brace, a key, a colon), SHA-256's buffering cost more than
    // the hashing (BENCHMARKS.md, "Session 25").
    let mut text = Vec::with_capacity(256);
    write(v, &mut text);
    Sha256::digest(&text).into()
}

fn write(v: &Value, out: &mut Vec<u8>) {
    // Writing to a Vec cannot fail, and a `Value` always serializes.
    match v {
        Value::Object(m) => {
            // Keys are unique, so sorting the pairs by key sorts them as
            // the keys, without looking each up again.
            let mut members: Vec<(&String, &Value)> = m.iter().collect();
            members.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.extend_from_slice(b"{");
            for (i, (k, v)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b",");
                }
                let _ = serde_json::to_writer(&mut *out, k);
                out.extend_from_slice(b":");
                write(v, out);
            }
            out.extend_from_slice(b"}");
        }
        Value::Array(items) => {
            out.extend_from_slice(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b",");
                }
                write(item, out);
            }
            out.extend_from_slice(b"]");
        }
        other => {
            let _ = serde_json::to_writer(&mut *out, other);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_at_every_level_and_arrays_keep_their_order() {
        let a = json!({"b": [2, {"y": 1, "x": "é\"\n"}], "a": null, "c": 1.5});
        let b = json!({"c": 1.5, "a": null, "b": [2, {"x": "é\"\n", "y": 1}]});
        assert_eq!(sha256(&a), sha256(&b));
        // The bytes hashed are exactly these.
        let text = r#"{"a":null,"b":[2,{"x":"é\"\n","y":1}],"c":1.5}"#;
        assert_eq!(sha256(&a), <[u8; 32]>::from(Sha256::digest(text)));
        assert_ne!(sha256(&json!([1, 2])), sha256(&json!([2, 1])));
        assert_ne!(sha256(&json!({"a": 1})), sha256(&json!({"a": "1"})));
    }
}
