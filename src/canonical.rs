//! Canonical JSON: a value written with object keys sorted at every level
//! (arrays keep their order, scalars are written as serde_json writes
//! them), so that two values equal as JSON give the same bytes whatever
//! order their keys came in. Its one use is a digest: the visibility cache
//! keys callers by it (`catalog::visibility`) and the decision log records
//! the arguments by it (`decisions::arguments_digest`, which users see, so
//! these bytes must not change).
//!
//! The bytes go straight into SHA-256; what the digest is for is the
//! callers' business.

use std::io::Write;

use serde_json::Value;
use sha2::{Digest, Sha256};

/// SHA-256 of `v` as canonical JSON.
pub fn sha256(v: &Value) -> [u8; 32] {
    let mut h = Hasher(Sha256::new());
    write(v, &mut h);
    h.0.finalize().into()
}

/// SHA-256 as an `io::Write`, so that serde_json escapes strings into it
/// without a buffer of their own.
struct Hasher(Sha256);

impl Write for Hasher {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn write(v: &Value, out: &mut Hasher) {
    // Writing to the hasher cannot fail, and a `Value` always serializes.
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_unstable();
            out.0.update(b"{");
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.0.update(b",");
                }
                let _ = serde_json::to_writer(&mut *out, k);
                out.0.update(b":");
                write(&m[k], out);
            }
            out.0.update(b"}");
        }
        Value::Array(items) => {
            out.0.update(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.0.update(b",");
                }
                write(item, out);
            }
            out.0.update(b"]");
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
