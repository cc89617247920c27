//! `urlquery.encode` and `semver.is_valid` as OPA answers them.

use regorus::Value;

/// `urlquery.encode(s)` is Go's `url.QueryEscape`: letters, digits and
/// `-_.~` as they are, a space as `+`, every other byte `%XX` in upper
/// case. regorus (form_urlencoded) also keeps `*` and escapes `~`.
pub(super) fn urlquery_encode(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let Value::String(s) = &a[0] else {
        return None;
    };
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    Some(Ok(Value::from(out)))
}

/// `semver.is_valid(x)` of anything but a string is `false` in OPA; regorus
/// raises a type error.
pub(super) fn semver_is_valid(a: &[Value]) -> Option<anyhow::Result<Value>> {
    match &a[0] {
        Value::String(_) => None,
        _ => Some(Ok(Value::from(false))),
    }
}
