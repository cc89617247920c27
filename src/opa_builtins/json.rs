//! `json.marshal` and `json.marshal_with_options` as OPA writes them: Go's
//! `encoding/json` (`json.Marshal` of the value as JSON, or
//! `json.MarshalIndent` when the options ask for a layout,
//! `topdown/encoding.go`).
//!
//! regorus writes with `serde_json`, which agrees with Go on the document's
//! shape (keys in byte order, sets as sorted arrays) but not on its text:
//! Go escapes `<`, `>` and `&` (as `\u003c`, `\u003e`, `\u0026`) and
//! U+2028, U+2029 for HTML and JavaScript, and writes a number as OPA holds
//! it, in the spelling it was read with. regent holds the number, not its
//! text: a non-integral one is written as `sprintf` writes it, the shortest
//! text that reads back as it, in the spelling of JSON writers such as
//! Python's (`1e-07`, `3.0`; see docs/policy-tooling.md, "regent and OPA").
//! Both builtins go through one writer, [`write`]; the options' reading
//! and errors are [`layout`]'s.

use std::fmt::Write as _;

use regorus::Value;

/// `json.marshal(x)`.
pub(super) fn marshal(a: &[Value]) -> Option<anyhow::Result<Value>> {
    marshal_as("json.marshal", &a[0], None)
}

/// `json.marshal_with_options(x, opts)`: the options are read first, so
/// a bad one is OPA's error whatever `x` holds.
pub(super) fn marshal_with_options(a: &[Value]) -> Option<anyhow::Result<Value>> {
    const NAME: &str = "json.marshal_with_options";
    match layout(&a[1]) {
        Ok(layout) => marshal_as(NAME, &a[0], layout.as_ref()),
        Err(why) => super::error(NAME, why),
    }
}

/// `x` written by `name`, compact or laid out as `layout` says.
fn marshal_as(name: &str, x: &Value, layout: Option<&Layout>) -> Option<anyhow::Result<Value>> {
    if unknown_text(x) {
        return super::error(
            name,
            format!("{} (not supported by regent)", super::sprintf::TEXT_UNKNOWN),
        );
    }
    let mut out = String::new();
    if let Some(layout) = layout {
        // `json.MarshalIndent` starts the lines after the first with the
        // prefix; OPA puts it before the first one too.
        out.push_str(&layout.prefix);
    }
    write(&mut out, x, layout, 0)?;
    Some(Ok(Value::from(out)))
}

/// Go's `json.MarshalIndent` layout: each element of a non-empty array or
/// object on a line of its own, the line started by `prefix` and `indent`
/// once per depth; `": "` between a key and its value; `[]` and `{}` as
/// they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) prefix: String,
    pub(crate) indent: String,
}

/// The layout `json.marshal_with_options`' `opts` asks for, `None` for
/// `json.marshal`'s compact text, or OPA's error (without the builtin's
/// name). As OPA reads them: the keys in order, the first bad one the
/// error; `prefix` or `indent` (a string; `indent` is a tab unless given)
/// asks for a layout, unless `pretty` (a boolean) says otherwise, which
/// alone asks for one when true.
pub(crate) fn layout(opts: &Value) -> Result<Option<Layout>, String> {
    let Value::Object(opts) = opts else {
        return Err(format!(
            "operand 2 must be object but got {}",
            type_name(opts)
        ));
    };
    let mut layout = Layout {
        prefix: String::new(),
        indent: "\t".into(),
    };
    let (mut implied, mut pretty) = (false, None);
    for (i, (k, v)) in opts.iter().enumerate() {
        let Value::String(key) = k else {
            let mut text = String::new();
            let _ = write(&mut text, k, None, 0);
            return Err(format!(
                "operand 2 failed to stringify key {text} at index {i}: operand {i} must be \
                 string but got {}",
                type_name(k)
            ));
        };
        match (key.as_ref(), v) {
            ("prefix" | "indent", Value::String(s)) => {
                implied = true;
                if key.as_ref() == "prefix" {
                    layout.prefix = s.to_string();
                } else {
                    layout.indent = s.to_string();
                }
            }
            ("prefix" | "indent", v) => {
                return Err(format!(
                    "operand 2 key {key:?} failed cast to string: operand {i} must be string but \
                     got {}",
                    type_name(v)
                ));
            }
            ("pretty", Value::Bool(b)) => pretty = Some(*b),
            ("pretty", _) => return Err(format!("operand 2 key {key:?} failed cast to bool")),
            (key, _) => return Err(format!("operand 2 object contained unknown key {key:?}")),
        }
    }
    Ok(pretty.unwrap_or(implied).then_some(layout))
}

/// OPA's name of a value's type in its errors.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Set(_) => "set",
        Value::Object(_) => "object",
        Value::Undefined => "undefined",
    }
}

/// `json.unmarshal(s)`: OPA keeps each number's text as `s` spells it
/// and writes it back so (`json.marshal(json.unmarshal("[1.50]"))` is
/// `[1.50]` in OPA); a number spelled otherwise than regent writes it
/// (`1e2`, `1.50`, `-0`, as `to_number` refuses) fails closed. A lone
/// UTF-16 surrogate escape is U+FFFD, as Go reads it ([`pair_surrogates`]).
/// The rest is regorus' answer.
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
    // Go reads a lone surrogate escape as U+FFFD; regorus' parser refuses
    // the text.
    let paired = pair_surrogates(text)?;
    Some(
        Value::from_json_str(&paired)
            .map_err(|e| anyhow::anyhow!("json.unmarshal: could not deserialize json: {e}")),
    )
}

/// `text` with each lone UTF-16 surrogate escape in its strings (a high
/// one not followed by a low one's escape, a low one on its own) written
/// `\ufffd`, as Go's `encoding/json` reads it (the escape after a lone
/// high one is read on its own: `"\ud800\ud83d\ude00"` is U+FFFD and
/// 😀); `None` when it has none, the common case, without allocating.
pub(super) fn pair_surrogates(text: &str) -> Option<String> {
    let b = text.as_bytes();
    // The code unit of a `\uXXXX` escape at `i`.
    let unit = |i: usize| -> Option<u32> {
        let h = b.get(i..i + 6)?;
        if h[0] != b'\\' || h[1] != b'u' {
            return None;
        }
        u32::from_str_radix(std::str::from_utf8(&h[2..]).ok()?, 16).ok()
    };
    let (mut out, mut copied): (Option<String>, usize) = (None, 0);
    let (mut i, mut in_string) = (0, false);
    while i < b.len() {
        match b[i] {
            b'"' => in_string = !in_string,
            b'\\' if in_string => {
                match unit(i) {
                    Some(0xD800..=0xDBFF) if matches!(unit(i + 6), Some(0xDC00..=0xDFFF)) => {
                        i += 12
                    }
                    Some(0xD800..=0xDFFF) => {
                        let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
                        o.push_str(&text[copied..i]);
                        o.push_str("\\ufffd");
                        i += 6;
                        copied = i;
                    }
                    Some(_) => i += 6,
                    None => i += 2,
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    let mut out = out?;
    out.push_str(&text[copied..]);
    Some(out)
}

/// `v` as Go writes it, at `depth` in `layout` (compact without one);
/// `None` for an undefined value inside (regorus' answer).
fn write(out: &mut String, v: &Value, layout: Option<&Layout>, depth: usize) -> Option<()> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(_) => out.push_str(&super::sprintf::number_text(v)),
        Value::String(s) => string(out, s),
        Value::Array(a) => list(out, a.iter().map(|e| (None, e)), ('[', ']'), layout, depth)?,
        // OPA writes a set's members in its order (objects before sets).
        Value::Set(s) => match super::order::reordered(|| s.iter()) {
            Some(opa) => list(
                out,
                opa.into_iter().map(|e| (None, e)),
                ('[', ']'),
                layout,
                depth,
            )?,
            None => list(out, s.iter().map(|e| (None, e)), ('[', ']'), layout, depth)?,
        },
        Value::Object(o) => {
            // A key that is not a string is written as its (compact) JSON
            // text, and Go sorts the keys as written.
            let mut pairs = Vec::with_capacity(o.len());
            for (k, e) in o.iter() {
                let key = match k {
                    Value::String(k) => k.to_string(),
                    k => {
                        let mut t = String::new();
                        write(&mut t, k, None, 0)?;
                        t
                    }
                };
                pairs.push((key, e));
            }
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            let items = pairs.iter().map(|(k, e)| (Some(k.as_str()), *e));
            list(out, items, ('{', '}'), layout, depth)?;
        }
        Value::Undefined => return None,
    }
    Some(())
}

/// The elements of an array (no keys) or the pairs of an object between
/// `brackets`, one a line in `layout`.
fn list<'a>(
    out: &mut String,
    items: impl Iterator<Item = (Option<&'a str>, &'a Value)>,
    brackets: (char, char),
    layout: Option<&Layout>,
    depth: usize,
) -> Option<()> {
    out.push(brackets.0);
    let mut empty = true;
    for (key, e) in items {
        if !empty {
            out.push(',');
        }
        empty = false;
        if let Some(layout) = layout {
            line(out, layout, depth + 1);
        }
        if let Some(key) = key {
            string(out, key);
            out.push_str(if layout.is_some() { ": " } else { ":" });
        }
        write(out, e, layout, depth + 1)?;
    }
    if let Some(layout) = layout
        && !empty
    {
        line(out, layout, depth);
    }
    out.push(brackets.1);
    Some(())
}

/// A new line of `layout` at `depth`.
fn line(out: &mut String, layout: &Layout, depth: usize) {
    out.push('\n');
    out.push_str(&layout.prefix);
    for _ in 0..depth {
        out.push_str(&layout.indent);
    }
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

    #[test]
    fn lone_surrogates_are_replacement_characters() {
        // OPA's answers, from its own engine.
        for (text, want) in [
            (r#""\ud800""#, "\u{fffd}"),
            (r#""\udc00""#, "\u{fffd}"),
            (r#""\ud800\u0041""#, "\u{fffd}A"),
            (r#""\udc00\ud800""#, "\u{fffd}\u{fffd}"),
            (r#""\ud800\ud800\udc00""#, "\u{fffd}\u{10000}"),
            (r#""a\uD800\n""#, "a\u{fffd}\n"),
            (r#""\ud83d\ude00""#, "😀"),
        ] {
            let v = unmarshal(&[Value::from(text)]).map(|r| r.unwrap());
            let v = v.unwrap_or_else(|| Value::from_json_str(text).unwrap());
            assert_eq!(v, Value::from(want), "{text}");
        }
        let key = unmarshal(&[Value::from(r#"{"\ud800": 1}"#)]);
        let key = key.unwrap().unwrap();
        assert_eq!(key, Value::from_json_str(r#"{"\ufffd": 1}"#).unwrap());
        // Nothing to pair: regorus' answer, no copy.
        assert!(pair_surrogates(r#"["\ud83d\ude00", "\\ud800", 1]"#).is_none());
    }

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
    fn with_options(json: &str, opts: &str) -> Result<String, String> {
        let v = Value::from_json_str(json).unwrap();
        let opts = Value::from_json_str(opts).unwrap();
        with_options_of(v, opts)
    }

    fn with_options_of(v: Value, opts: Value) -> Result<String, String> {
        match marshal_with_options(&[v, opts]).unwrap() {
            Ok(out) => Ok(out.as_string().unwrap().to_string()),
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn laid_out_as_go_lays_it_out() {
        // OPA's answers, from its own engine: Go's `json.MarshalIndent`,
        // the prefix before the first line too, `[]` and `{}` as they are,
        // a tab when only `pretty` asks, compact when `pretty` is false.
        let cases = [
            (
                r#"{"a": [1, {}, [], {"b": [[]]}], "c": "<"}"#,
                r#"{"pretty": true}"#,
                "{\n\t\"a\": [\n\t\t1,\n\t\t{},\n\t\t[],\n\t\t{\n\t\t\t\"b\": [\n\t\t\t\t[]\n\t\t\t]\n\t\t}\n\t],\n\t\"c\": \"\\u003c\"\n}",
            ),
            ("[1]", r#"{"prefix": "P"}"#, "P[\nP\t1\nP]"),
            (
                r#"{"a": [1, 2]}"#,
                r#"{"prefix": "P", "indent": "--"}"#,
                "P{\nP--\"a\": [\nP----1,\nP----2\nP--]\nP}",
            ),
            ("[1]", r#"{"pretty": false, "indent": "  "}"#, "[1]"),
            ("[1]", "{}", "[1]"),
            ("[]", r#"{"pretty": true, "prefix": "P"}"#, "P[]"),
            ("1", r#"{"prefix": "P"}"#, "P1"),
            ("[7.0, 2]", r#"{"indent": " "}"#, "[\n 7.0,\n 2\n]"),
            ("[1, [2]]", r#"{"indent": ""}"#, "[\n1,\n[\n2\n]\n]"),
            (
                "[1]",
                r#"{"pretty": true, "indent": "", "prefix": ""}"#,
                "[\n1\n]",
            ),
            (
                "[1, [2]]",
                r#"{"indent": "\n<é\u2028"}"#,
                "[\n\n<é\u{2028}1,\n\n<é\u{2028}[\n\n<é\u{2028}\n<é\u{2028}2\n\n<é\u{2028}]\n]",
            ),
        ];
        for (v, opts, want) in cases {
            assert_eq!(with_options(v, opts).as_deref(), Ok(want), "{v} {opts}");
        }
        // A set and keys that are not strings, as `json.marshal` writes them.
        let mut keys = Value::from_json_str(r#"{"a": 1}"#)
            .unwrap()
            .as_object()
            .unwrap()
            .clone();
        keys.insert(Value::from(1), Value::from(2));
        keys.insert(Value::from(true), Value::Null);
        let set: std::collections::BTreeSet<Value> = [Value::from(3)].into();
        keys.insert(Value::from("a"), Value::from(set));
        let opts = Value::from_json_str(r#"{"indent": " "}"#).unwrap();
        assert_eq!(
            with_options_of(Value::from(keys), opts).as_deref(),
            Ok("{\n \"1\": 2,\n \"a\": [\n  3\n ],\n \"true\": null\n}")
        );
    }

    #[test]
    fn bad_options_are_opas_errors() {
        // OPA's errors (eval_type_error), from its own engine: the keys in
        // order, the first bad one.
        let cases = [
            (r#"{"bogus": 1}"#, r#"object contained unknown key "bogus""#),
            (
                r#"{"pretty": true, "zzz": 1}"#,
                r#"object contained unknown key "zzz""#,
            ),
            (
                r#"{"pretty": "yes"}"#,
                r#"key "pretty" failed cast to bool"#,
            ),
            (
                r#"{"indent": 1}"#,
                r#"key "indent" failed cast to string: operand 0 must be string but got number"#,
            ),
            (
                r#"{"zzz": 1, "indent": 1}"#,
                r#"key "indent" failed cast to string: operand 0 must be string but got number"#,
            ),
            (
                r#"{"prefix": null}"#,
                r#"key "prefix" failed cast to string: operand 0 must be string but got null"#,
            ),
            (
                r#"{"pretty": 1, "prefix": 1}"#,
                r#"key "prefix" failed cast to string: operand 0 must be string but got number"#,
            ),
            (
                r#"{"abc": 1, "indent": 1}"#,
                r#"object contained unknown key "abc""#,
            ),
            (r#""s""#, "must be object but got string"),
        ];
        for (opts, why) in cases {
            assert_eq!(
                with_options("[1]", opts),
                Err(format!("json.marshal_with_options: operand 2 {why}")),
                "{opts}"
            );
        }
        let mut opts = Value::from_json_str(r#"{"zzz": 1}"#)
            .unwrap()
            .as_object()
            .unwrap()
            .clone();
        opts.insert(Value::from(1), Value::from("a"));
        assert_eq!(
            with_options_of(Value::from(1), Value::from(opts)),
            Err(
                "json.marshal_with_options: operand 2 failed to stringify key 1 at index 0: \
                 operand 0 must be string but got number"
                    .into()
            )
        );
        // A number whose text regent does not know is refused, laid out
        // or not.
        assert!(with_options("[1e-7]", r#"{"pretty": true}"#).is_err());
    }
}
