//! `strings.replace_n` as OPA answers it: Go's `strings.NewReplacer` over
//! the pattern object's pairs in key order (`topdown/strings.go`).
//!
//! regorus replaces one pattern after another over the whole string, so a
//! replacement is replaced again (`{"a": "b", "b": "c"}` makes `a` into
//! `c`). Go's replacer walks the string once: at each byte the matching
//! pattern of the earliest pair wins (with sorted keys, the shortest of
//! those that match there), its replacement is written and never looked at
//! again. An empty pattern matches between every two *bytes*, so it splits
//! a multi-byte character, which OPA then writes as one U+FFFD per byte.

use regorus::Value;

/// `strings.replace_n(patterns, s)`; `None` for anything but an object of
/// strings to strings and a string (regorus raises the type errors, as
/// OPA does).
pub(super) fn replace_n(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let (Value::Object(patterns), Value::String(s)) = (&a[0], &a[1]) else {
        return None;
    };
    // The object's order is the keys' order, as OPA sorts them.
    let mut pairs = Vec::with_capacity(patterns.len());
    for (k, v) in patterns.iter() {
        let (Value::String(k), Value::String(v)) = (k, v) else {
            return None;
        };
        pairs.push((k.as_bytes(), v.as_bytes()));
    }
    Some(Ok(Value::from(go_string(&replace(s.as_bytes(), &pairs)))))
}

/// Go's generic replacer (`strings.genericReplacer.WriteString`): `pairs`
/// in priority order, earliest first.
fn replace(s: &[u8], pairs: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut last = 0;
    let mut i = 0;
    // After an empty match at `i`, the next look at `i` ignores the empty
    // pattern, so that a longer one (or the byte) moves on.
    let mut after_empty = false;
    while i <= s.len() {
        let found = pairs
            .iter()
            .find(|(old, _)| s[i..].starts_with(old) && !(after_empty && old.is_empty()));
        match found {
            Some((old, new)) => {
                out.extend_from_slice(&s[last..i]);
                out.extend_from_slice(new);
                after_empty = old.is_empty();
                i += old.len();
                last = i;
            }
            None => {
                after_empty = false;
                i += 1;
            }
        }
    }
    if last < s.len() {
        out.extend_from_slice(&s[last..]);
    }
    out
}

/// Bytes as OPA writes a Go string that may not be UTF-8: each byte outside
/// a valid sequence is one U+FFFD (Go's `encoding/json`).
pub(super) fn go_string(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        text.push_str(chunk.valid());
        for _ in chunk.invalid() {
            text.push('\u{fffd}');
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(pairs: &[(&str, &str)], s: &str) -> String {
        let pairs: Vec<(&[u8], &[u8])> = pairs
            .iter()
            .map(|(a, b)| (a.as_bytes(), b.as_bytes()))
            .collect();
        go_string(&replace(s.as_bytes(), &pairs))
    }

    #[test]
    fn one_pass_earliest_pair_first() {
        // OPA's answers, from its own engine.
        assert_eq!(r(&[("a", "b"), ("b", "c")], "ab"), "bc");
        assert_eq!(r(&[("a", "1"), ("ab", "2")], "abab"), "1b1b");
        assert_eq!(r(&[("", "-")], "ab"), "-a-b-");
        assert_eq!(r(&[("", "-"), ("a", "x")], "ab"), "-x-b-");
        assert_eq!(r(&[("", "😀")], "ß"), "😀\u{fffd}😀\u{fffd}😀");
        assert_eq!(r(&[], "ab"), "ab");
    }
}
