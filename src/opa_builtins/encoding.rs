//! `urlquery.encode`, `urlquery.encode_object`, `urlquery.decode`,
//! `json.is_valid` and `yaml.is_valid` as OPA answers them.

use regorus::Value;

/// `urlquery.encode(s)` is Go's `url.QueryEscape`: letters, digits and
/// `-_.~` as they are, a space as `+`, every other byte `%XX` in upper
/// case. regorus (form_urlencoded) also keeps `*` and escapes `~`.
pub(super) fn urlquery_encode(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let Value::String(s) = &a[0] else {
        return None;
    };
    let mut out = String::with_capacity(s.len() * 3);
    query_escape(s, &mut out);
    Some(Ok(Value::from(out)))
}

/// Go's `url.QueryEscape`, appended to `out`.
fn query_escape(s: &str, out: &mut String) {
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => {
                const HEX: &[u8; 16] = b"0123456789ABCDEF";
                out.push('%');
                out.push(HEX[usize::from(b >> 4)] as char);
                out.push(HEX[usize::from(b & 15)] as char);
            }
        }
    }
}

/// `urlquery.encode_object(o)` is Go's `url.Values.Encode`: keys in order,
/// each value (a string, or each string of an array or set) as
/// `key=value`, both escaped as `urlquery.encode` escapes (regorus keeps
/// `*`). `None` for any other shape: regorus raises the error, as OPA does.
pub(super) fn urlquery_encode_object(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let Value::Object(o) = &a[0] else {
        return None;
    };
    let mut out = String::new();
    let mut pair = |k: &str, v: &str| {
        if !out.is_empty() {
            out.push('&');
        }
        query_escape(k, &mut out);
        out.push('=');
        query_escape(v, &mut out);
    };
    for (k, v) in o.iter() {
        let Value::String(k) = k else { return None };
        match v {
            Value::String(v) => pair(k, v),
            Value::Array(vs) => {
                for v in vs.iter() {
                    let Value::String(v) = v else { return None };
                    pair(k, v);
                }
            }
            Value::Set(vs) => {
                for v in vs.iter() {
                    let Value::String(v) = v else { return None };
                    pair(k, v);
                }
            }
            _ => return None,
        }
    }
    Some(Ok(Value::from(out)))
}

/// `json.is_valid(x)`: `false` in OPA for anything but a string, where
/// regorus raises a type error; a string is Go's `json.Valid`, which takes
/// a lone UTF-16 surrogate escape (`"\ud800"`) that regorus' parser
/// refuses.
pub(super) fn json_is_valid(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let Value::String(s) = &a[0] else {
        return Some(Ok(Value::from(false)));
    };
    let paired = super::json::pair_surrogates(s)?;
    Some(Ok(Value::from(Value::from_json_str(&paired).is_ok())))
}

/// `yaml.is_valid(x)`: `false` in OPA for anything but a string, where
/// regorus raises a type error. A string is regorus' answer (YAML 1.2),
/// which differs from OPA's go-yaml v2 on some texts (`?`): not
/// `yaml.unmarshal`'s reader, which refuses many texts both read alike.
pub(super) fn yaml_is_valid(a: &[Value]) -> Option<anyhow::Result<Value>> {
    match &a[0] {
        Value::String(_) => None,
        _ => Some(Ok(Value::from(false))),
    }
}

/// `urlquery.decode(s)` is Go's `url.QueryUnescape`: `+` is a space, a `%`
/// not followed by two hex digits is an error (regorus keeps it as it is,
/// and trims white space). Bytes that are not UTF-8 come out as one U+FFFD
/// each, as OPA writes them.
pub(super) fn urlquery_decode(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let Value::String(s) = &a[0] else {
        return None;
    };
    Some(
        super::query::unescape(s)
            .map(Value::from)
            .map_err(|e| anyhow::anyhow!("urlquery.decode: {e}")),
    )
}
