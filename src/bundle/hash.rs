//! The digest OPA's bundle signatures carry for each file.
//!
//! OPA hashes a structured file (one named `data.json`, `data.yaml`,
//! `.manifest` or `.signatures.json`) not as bytes but as the value it holds,
//! written out canonically: an object as `{`, its keys in byte order each
//! followed by `:` and its value, separated by `,`, then `}`; an array as
//! `[`, its items separated by `,`, then `]`; a string as Go's
//! `encoding/json` writes it with HTML escaping off; a number exactly as
//! written in the file (Go decodes it as a `json.Number`); `true`, `false`,
//! `null` as such. Whitespace and key order therefore do not change the
//! digest. Every other file is hashed as its bytes.
//!
//! Only JSON is read here: a `data.yaml` is refused by `bundle::layout`
//! before anything is hashed (regent reads data from JSON only), so no YAML
//! canonical form is needed. What is hashed, and with which of OPA's
//! algorithm names, is decided by `bundle::sign`.

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use sha2::Digest;

/// A hash algorithm a signature may name for a file, by OPA's name for it.
/// MD5 and SHA-1, which OPA also accepts, are refused: a collision would let
/// a file be swapped under a valid signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    Sha224,
    Sha256,
    Sha384,
    Sha512,
    Sha512_224,
    Sha512_256,
}

impl Algorithm {
    pub fn from_opa_name(name: &str) -> Option<Algorithm> {
        Some(match name {
            "SHA-224" => Algorithm::Sha224,
            "SHA-256" => Algorithm::Sha256,
            "SHA-384" => Algorithm::Sha384,
            "SHA-512" => Algorithm::Sha512,
            "SHA-512-224" => Algorithm::Sha512_224,
            "SHA-512-256" => Algorithm::Sha512_256,
            _ => return None,
        })
    }

    pub fn opa_name(self) -> &'static str {
        match self {
            Algorithm::Sha224 => "SHA-224",
            Algorithm::Sha256 => "SHA-256",
            Algorithm::Sha384 => "SHA-384",
            Algorithm::Sha512 => "SHA-512",
            Algorithm::Sha512_224 => "SHA-512-224",
            Algorithm::Sha512_256 => "SHA-512-256",
        }
    }

    fn digest(self, bytes: &[u8]) -> Vec<u8> {
        match self {
            Algorithm::Sha224 => sha2::Sha224::digest(bytes).to_vec(),
            Algorithm::Sha256 => sha2::Sha256::digest(bytes).to_vec(),
            Algorithm::Sha384 => sha2::Sha384::digest(bytes).to_vec(),
            Algorithm::Sha512 => sha2::Sha512::digest(bytes).to_vec(),
            Algorithm::Sha512_224 => sha2::Sha512_224::digest(bytes).to_vec(),
            Algorithm::Sha512_256 => sha2::Sha512_256::digest(bytes).to_vec(),
        }
    }
}

/// Whether OPA hashes the file at `path` as a JSON value rather than bytes
/// (OPA's `IsStructuredDoc`: by base name only; `data.yml` is bytes).
pub fn is_structured(path: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    matches!(
        base,
        "data.json" | "data.yaml" | ".manifest" | "signatures.json"
    )
}

/// The digest of the file at `path` holding `bytes`, as OPA computes it.
/// `Err` when a structured file is not JSON (the message says why).
pub fn file_digest(path: &str, bytes: &[u8], alg: Algorithm) -> Result<Vec<u8>, String> {
    if !is_structured(path) {
        return Ok(alg.digest(bytes));
    }
    Ok(alg.digest(&canonical_json(bytes)?))
}

/// The canonical text OPA hashes for a structured file.
pub fn canonical_json(bytes: &[u8]) -> Result<Vec<u8>, String> {
    // Go's util.Unmarshal drops a UTF-8 byte order mark first.
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).map_err(|_| "not valid utf-8".to_string())?;
    let raw: &RawValue = serde_json::from_str(text).map_err(|e| json_error(&e))?;
    let mut out = Vec::with_capacity(bytes.len());
    walk(raw, &mut out)?;
    Ok(out)
}

fn json_error(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    match msg.find(" at line ") {
        Some(i) => format!("invalid json at {}:{}: {}", e.line(), e.column(), &msg[..i]),
        None => format!("invalid json: {msg}"),
    }
}

/// Writes the canonical form of one value. Each level is parsed again from
/// its raw text (serde_json bounds the nesting of every parse), so a number
/// keeps the text it was written with.
fn walk(raw: &RawValue, out: &mut Vec<u8>) -> Result<(), String> {
    let text = raw.get().trim_start();
    match text.as_bytes().first() {
        Some(b'{') => {
            // A repeated key keeps its last value, as Go's map does.
            let map: BTreeMap<String, &RawValue> =
                serde_json::from_str(text).map_err(|e| json_error(&e))?;
            out.push(b'{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                go_string(k, out);
                out.push(b':');
                walk(v, out)?;
            }
            out.push(b'}');
        }
        Some(b'[') => {
            let items: Vec<&RawValue> = serde_json::from_str(text).map_err(|e| json_error(&e))?;
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                walk(v, out)?;
            }
            out.push(b']');
        }
        Some(b'"') => {
            let s: String = serde_json::from_str(text).map_err(|e| json_error(&e))?;
            go_string(&s, out);
        }
        // A number, `true`, `false` or `null`: serde_json has checked it,
        // and Go writes a json.Number as the text it was read from.
        _ => out.extend_from_slice(text.trim_end().as_bytes()),
    }
    Ok(())
}

/// A string as Go's `encoding/json` writes it with `SetEscapeHTML(false)`:
/// `"` and `\` escaped, the control characters as `\b`, `\f`, `\n`, `\r`,
/// `\t` or `\u00xx` (lowercase hex), U+2028 and U+2029 as `\u2028` and
/// `\u2029`, everything else as is. (Go before 1.22 wrote `\b` and `\f` as
/// `\u0008` and `\u000c`; OPA 1.x is built with a later Go.)
fn go_string(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            c if (c as u32) < 0x20 => {
                let b = c as u8;
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 0xf) as usize]);
            }
            '\u{2028}' => out.extend_from_slice(b"\\u2028"),
            '\u{2029}' => out.extend_from_slice(b"\\u2029"),
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> String {
        String::from_utf8(canonical_json(s.as_bytes()).unwrap()).unwrap()
    }

    #[test]
    fn the_canonical_form_is_whitespace_and_order_free_and_keeps_numbers_as_written() {
        for (input, want) in [
            (
                r#" { "b" : [1, 2.50, -0, 1E3], "a": {"y": null, "x": true} } "#,
                r#"{"a":{"x":true,"y":null},"b":[1,2.50,-0,1E3]}"#,
            ),
            (
                r#"{"c": 123.45678911111111111111111111111111111111111111111111111}"#,
                r#"{"c":123.45678911111111111111111111111111111111111111111111111}"#,
            ),
            (r#"{"k": 1, "k": 2}"#, r#"{"k":2}"#),
            ("\u{feff}{}", "{}"),
            (r#"[]"#, r#"[]"#),
            (r#""<foo>&""#, r#""<foo>&""#),
            (
                r#""tab\t nl\n bs\b ff\f cr\r \u0001 \u001f \u007f \"q\" \\ \/ é \u2028\u2029""#,
                "\"tab\\t nl\\n bs\\b ff\\f cr\\r \\u0001 \\u001f \u{7f} \\\"q\\\" \\\\ / é \\u2028\\u2029\"",
            ),
            (
                r#"{"b":1,"B":2,"a":3,"é":4}"#,
                r#"{"B":2,"a":3,"b":1,"é":4}"#,
            ),
        ] {
            assert_eq!(canon(input), want, "{input}");
        }
    }

    #[test]
    fn only_opas_structured_names_are_hashed_as_values() {
        for (path, structured) in [
            ("data.json", true),
            ("a/b/data.json", true),
            (".manifest", true),
            ("data.yaml", true),
            ("data.yml", false),
            ("x.json", false),
            ("tools/deploy.yaml", false),
            ("p.rego", false),
        ] {
            assert_eq!(is_structured(path), structured, "{path}");
        }
        let a = file_digest("data.json", br#"{"a": 1, "b": 2}"#, Algorithm::Sha256).unwrap();
        let b = file_digest("data.json", b"{\"b\":2,\n\"a\":1}", Algorithm::Sha256).unwrap();
        assert_eq!(a, b);
        let c = file_digest("x.json", br#"{"a": 1, "b": 2}"#, Algorithm::Sha256).unwrap();
        assert_ne!(a, c);
        assert!(file_digest("data.json", b"{", Algorithm::Sha256).is_err());
    }

    #[test]
    fn weak_or_unknown_algorithms_are_refused() {
        for name in ["MD5", "SHA-1", "sha256", "MD6", ""] {
            assert_eq!(Algorithm::from_opa_name(name), None, "{name}");
        }
        assert_eq!(
            Algorithm::from_opa_name("SHA-512-256").map(Algorithm::opa_name),
            Some("SHA-512-256")
        );
    }
}
