//! `json.marshal` as OPA writes it: Go's `encoding/json` (`json.Marshal`
//! of the value as JSON, `topdown/encoding.go`).
//!
//! regorus writes with `serde_json`, which agrees with Go on the document's
//! shape (keys in byte order, sets as sorted arrays) but not on its text:
//! Go escapes `<`, `>` and `&` (as `\u003c`, `\u003e`, `\u0026`) and
//! U+2028, U+2029 for HTML and JavaScript, and writes a number as OPA holds
//! it, in the spelling it was read with. regent holds the number, not its
//! text: a non-integral one is written as `sprintf` writes it, the shortest
//! text that reads back as it, in the spelling of JSON writers such as
//! Python's (`1e-07`, `3.0`; see docs/policy-tooling.md, "regent and OPA").

use std::fmt::Write as _;

use regorus::Value;

/// `json.marshal(x)`.
pub(super) fn marshal(a: &[Value]) -> Option<anyhow::Result<Value>> {
    if unknown_text(&a[0]) {
        return super::error(
            "json.marshal",
            format!("{} (not supported by regent)", super::sprintf::TEXT_UNKNOWN),
        );
    }
    let mut out = String::new();
    write(&mut out, &a[0])?;
    Some(Ok(Value::from(out)))
}

/// `json.unmarshal(s)`: OPA keeps each number's text as `s` spells it
/// and writes it back so (`json.marshal(json.unmarshal("[1.50]"))` is
/// `[1.50]` in OPA); a number spelled otherwise than regent writes it
/// (`1e2`, `1.50`, `-0`, as `to_number` refuses) fails closed. The rest is
/// regorus' answer.
pub(super) fn unmarshal(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let Value::String(text) = &a[0] else {
        return None;
    };
    let bytes = text.as_bytes();
    let (mut i, mut in_string) = (0, false);
    while i < bytes.len() {
        let c = bytes[i];
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        if c == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        if c == b'-' || c.is_ascii_digit() {
            let start = i;
            while i < bytes.len()
                && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
            {
                i += 1;
            }
            let token = &text[start..i];
            if let Some(Err(_)) = super::numbers::to_number(&[Value::from(token)]) {
                return super::error(
                    "json.unmarshal",
                    format!(
                        "OPA keeps the number {token} as written and writes it so in json.marshal \
                         and sprintf, where regent would write it otherwise: not supported by \
                         regent, which refuses rather than answer another text; spell numbers as \
                         JSON writers do (`100`, `1.5`)"
                    ),
                );
            }
            continue;
        }
        i += 1;
    }
    None
}

/// `None` for an undefined value inside (regorus' answer).
fn write(out: &mut String, v: &Value) -> Option<()> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(_) => out.push_str(&super::sprintf::number_text(v)),
        Value::String(s) => string(out, s),
        Value::Array(a) => list(out, a.iter())?,
        Value::Set(s) => list(out, s.iter())?,
        Value::Object(o) => {
            // A key that is not a string is written as its JSON text, and
            // Go sorts the keys as written.
            let mut pairs = Vec::with_capacity(o.len());
            for (k, e) in o.iter() {
                let key = match k {
                    Value::String(k) => k.to_string(),
                    k => {
                        let mut t = String::new();
                        write(&mut t, k)?;
                        t
                    }
                };
                pairs.push((key, e));
            }
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            out.push('{');
            for (i, (k, e)) in pairs.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                string(out, &k);
                out.push(':');
                write(out, e)?;
            }
            out.push('}');
        }
        Value::Undefined => return None,
    }
    Some(())
}

/// Whether `v` holds a number whose text regent cannot know
/// (`sprintf::text_unknown`).
fn unknown_text(v: &Value) -> bool {
    match v {
        Value::Number(_) => super::sprintf::text_unknown(v),
        Value::Array(a) => a.iter().any(unknown_text),
        Value::Set(s) => s.iter().any(unknown_text),
        Value::Object(o) => o.iter().any(|(k, e)| unknown_text(k) || unknown_text(e)),
        _ => false,
    }
}

fn list<'a>(out: &mut String, items: impl Iterator<Item = &'a Value>) -> Option<()> {
    out.push('[');
    for (i, e) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        write(out, e)?;
    }
    out.push(']');
    Some(())
}

/// Go's `encoding/json` string with HTML escaping (its default).
fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' | '\0'..='\u{1f}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marshal_json(json: &str) -> String {
        let v = Value::from_json_str(json).unwrap();
        let out = marshal(&[v]).unwrap().unwrap();
        out.as_string().unwrap().to_string()
    }

    #[test]
    fn as_go_writes_it() {
        // OPA's answers, from its own engine.
        assert_eq!(
            marshal_json(r#"{"b": "<a&b>", "a": ["\u2028\u2029\u0001\b", 1]}"#),
            r#"{"a":["\u2028\u2029\u0001\b",1],"b":"\u003ca\u0026b\u003e"}"#
        );
        assert_eq!(marshal_json("[1e-3, 3.0, 0.5, 100]"), "[0.001,3.0,0.5,100]");
        // A client writes 1e-7 as `1e-7`, `1e-07` or `0.0000001`, which OPA
        // keeps: refused.
        let tiny = Value::from_json_str("[1e-7]").unwrap();
        assert!(marshal(&[tiny]).unwrap().is_err());
        let keys = Value::from_json_str(r#"{"b": 1}"#).unwrap();
        let mut keys = keys.as_object().unwrap().clone();
        keys.insert(Value::from(true), Value::from(2));
        keys.insert(
            Value::from(vec![Value::from(1), Value::from("a")]),
            Value::Null,
        );
        let out = marshal(&[Value::from(keys)]).unwrap().unwrap();
        assert_eq!(
            out.as_string().unwrap().as_ref(),
            r#"{"[1,\"a\"]":null,"b":1,"true":2}"#
        );
    }
}
