//! `yaml.unmarshal` as OPA reads YAML: `sigs.k8s.io/yaml` (go-yaml v2,
//! YAML 1.1's plain scalars) turned into JSON by Go's `encoding/json` and
//! read back keeping each number's text.
//!
//! regorus reads YAML 1.2 (`yaml_serde`), which differs on plain scalars:
//! in OPA `yes`, `on`, `y` are `true`, `017` is 15, `1_000` is 1000,
//! `0b101` is 5, `1e400` a string, a timestamp a string, a duplicate key
//! the last value, and a float that holds an integer (`1e3`, `2.0`) is
//! written as the integer (`1000`, `2`) because the value passed through
//! Go's JSON writer. Here the document is read with `saphyr-parser`'s
//! events and each plain scalar resolved as go-yaml v2's `resolve` does
//! (read, not copied: `goyaml.v2/resolve.go`), with the keys turned into
//! strings as `sigs.k8s.io/yaml` does (an integer's digits, `true`,
//! `false`).
//!
//! Refused (an error, `not supported by regent`), where regent is not
//! certain of OPA's value: tags, anchors and aliases, merge keys
//! (`<<`), directives (`%YAML`), a tab in the indentation, several
//! documents, NEL, LS, PS and a byte order mark (YAML 1.1 breaks lines
//! at the first three), a float key, keys of different kinds that turn
//! into the same string (Go then picks one at random), a hex, octal or
//! binary integer beyond 64 bits (a decimal one is read as a float), an
//! integral float from 2^63 to 1e21 (Go writes all its digits),
//! negative zero as a float (`-0.0`, written `-0` by Go), and a plain
//! scalar Go's `strconv` might read otherwise than regent (`.5_0`).
//! Errors where OPA errors: `.inf`, `.nan` (Go's JSON writer refuses
//! them), a null, collection or 64-bit unsigned key, a control
//! character (libyaml's reader refuses them). A document saphyr cannot
//! read is refused too: go-yaml answers the first node of some that go
//! on with text it never reads. What OPA writes for a float is the
//! shortest text of the double, as regent writes it (below 1e-4 regent
//! refuses to write any: `sprintf::text_unknown`).

use saphyr_parser::{Event, Parser, ScalarStyle};
use serde_json::{Map, Value as Json};

use regorus::Value;

/// `yaml.unmarshal(s)`.
pub(super) fn unmarshal(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let Value::String(text) = &a[0] else {
        return None;
    };
    match read(text) {
        Ok(v) => Some(Ok(Value::from(v))),
        Err(Fail::Error(why)) => super::error("yaml.unmarshal", why),
        Err(Fail::Refused(why)) => super::error(
            "yaml.unmarshal",
            format!(
                "{why}: not supported by regent, which refuses rather than answer another value \
                 than OPA's; write the document as plain JSON-like YAML, or use json.unmarshal"
            ),
        ),
    }
}

enum Fail {
    /// OPA fails too.
    Error(String),
    /// OPA answers, or may: regent is not certain of its value.
    Refused(String),
}

/// A resolved plain scalar, or a string of any style.
enum Scalar {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
}

/// A collection being read: a sequence, or a mapping with the key whose
/// value comes next.
enum Frame {
    Seq(Vec<Json>),
    Map {
        map: Map<String, Json>,
        /// Each key's kind as go-yaml held it, to tell a duplicate (the
        /// last wins) from two keys that become the same string.
        kinds: std::collections::HashMap<String, u8>,
        key: Option<String>,
    },
}

fn read(text: &str) -> Result<Json, Fail> {
    // libyaml's reader, which go-yaml ports, refuses these characters;
    // YAML 1.1 breaks lines at NEL, LS and PS, which YAML 1.2 (saphyr)
    // reads as text; a byte order mark is read as an encoding there.
    for c in text.chars() {
        match c {
            '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{feff}' => {
                return Err(Fail::Refused(format!(
                    "the character U+{:04X}, which YAML 1.1 reads otherwise",
                    c as u32
                )));
            }
            '\t' | '\n' | '\r' | ' '..='~' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' => {}
            c if c >= '\u{10000}' => {}
            _ => {
                return Err(Fail::Error(
                    "yaml: control characters are not allowed".into(),
                ));
            }
        }
    }
    // go-yaml knows only `%YAML 1.1` (and refuses 1.2), saphyr the reverse.
    if text.lines().any(|l| l.starts_with('%')) {
        return Err(Fail::Refused("a yaml directive (`%`)".into()));
    }
    // libyaml refuses a tab in a block's indentation, saphyr skips it.
    if text
        .lines()
        .any(|l| l.trim_start_matches(' ').starts_with('\t'))
    {
        return Err(Fail::Refused("a tab in the indentation".into()));
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut root: Option<Json> = None;
    let mut documents = 0;
    for item in Parser::new_from_str(text) {
        // go-yaml stops reading at the end of the first node and answers
        // it, where saphyr may refuse what follows (`a: 1\nb` less
        // indented, `x #c: 1`): refused, not an error of OPA's.
        let (event, _) = item.map_err(|e| {
            Fail::Refused(format!("yaml: {e}, which OPA's reader may read otherwise"))
        })?;
        let opens_sequence = matches!(event, Event::SequenceStart(..));
        let node = match event {
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(Fail::Refused("several yaml documents".into()));
                }
                continue;
            }
            Event::Alias(_) => return Err(Fail::Refused("a yaml alias".into())),
            Event::Scalar(value, style, anchor, tag) => {
                if anchor != 0 || tag.is_some() {
                    return Err(Fail::Refused("a yaml tag or anchor".into()));
                }
                let is_key = matches!(stack.last(), Some(Frame::Map { key: None, .. }));
                let scalar = if style == ScalarStyle::Plain {
                    if is_key && value == "<<" {
                        return Err(Fail::Refused("a yaml merge key (`<<`)".into()));
                    }
                    resolve(&value)?
                } else {
                    Scalar::Str(value.into_owned())
                };
                if is_key {
                    let (key, kind) = match scalar {
                        Scalar::Str(s) => (s, 0),
                        Scalar::Int(i) => (i.to_string(), 1),
                        Scalar::Bool(b) => (b.to_string(), 2),
                        Scalar::Float(_) => {
                            return Err(Fail::Refused("a number with a fraction as a key".into()));
                        }
                        Scalar::Null | Scalar::Uint(_) => {
                            return Err(Fail::Error("unsupported map key".into()));
                        }
                    };
                    let Some(Frame::Map {
                        kinds, key: next, ..
                    }) = stack.last_mut()
                    else {
                        unreachable!("a key is read inside a mapping");
                    };
                    if kinds.insert(key.clone(), kind).is_some_and(|k| k != kind) {
                        return Err(Fail::Refused(format!(
                            "keys of different kinds that are both `{key}`"
                        )));
                    }
                    *next = Some(key);
                    continue;
                }
                json(scalar)?
            }
            Event::SequenceStart(anchor, tag) | Event::MappingStart(anchor, tag) => {
                if anchor != 0 || tag.is_some() {
                    return Err(Fail::Refused("a yaml tag or anchor".into()));
                }
                if matches!(stack.last(), Some(Frame::Map { key: None, .. })) {
                    return Err(Fail::Error("invalid map key".into()));
                }
                stack.push(if opens_sequence {
                    Frame::Seq(Vec::new())
                } else {
                    Frame::Map {
                        map: Map::new(),
                        kinds: Default::default(),
                        key: None,
                    }
                });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Frame::Seq(items)) => Json::Array(items),
                Some(Frame::Map { map, .. }) => Json::Object(map),
                None => return Err(Fail::Error("yaml: unbalanced document".into())),
            },
            _ => continue,
        };
        match stack.last_mut() {
            Some(Frame::Seq(items)) => items.push(node),
            Some(Frame::Map { map, key, .. }) => {
                let k = key
                    .take()
                    .ok_or_else(|| Fail::Error("invalid map key".into()))?;
                map.insert(k, node);
            }
            None => root = Some(node),
        }
    }
    Ok(root.unwrap_or(Json::Null))
}

/// A scalar as Go's JSON writer writes it and OPA reads it back.
fn json(s: Scalar) -> Result<Json, Fail> {
    Ok(match s {
        Scalar::Null => Json::Null,
        Scalar::Bool(b) => Json::Bool(b),
        Scalar::Int(i) => Json::from(i),
        Scalar::Uint(u) => Json::from(u),
        Scalar::Str(s) => Json::String(s),
        Scalar::Float(f) if !f.is_finite() => {
            return Err(Fail::Error(format!(
                "json: unsupported value: {}",
                if f.is_nan() {
                    "NaN"
                } else if f > 0.0 {
                    "+Inf"
                } else {
                    "-Inf"
                }
            )));
        }
        Scalar::Float(f) if f == 0.0 && f.is_sign_negative() => {
            return Err(Fail::Refused("negative zero, which OPA writes -0".into()));
        }
        // `i64::MAX as f64` is 2^63.
        Scalar::Float(f) if f.fract() == 0.0 && f.abs() < i64::MAX as f64 => {
            // Go writes an integral double as its digits: OPA reads an
            // integer back.
            Json::from(f as i64)
        }
        Scalar::Float(f) if f.fract() == 0.0 && f.abs() < 1e21 => {
            return Err(Fail::Refused(format!(
                "the number {f:e}, which Go writes with all its digits"
            )));
        }
        Scalar::Float(f) => serde_json::Number::from_f64(f).map_or(Json::Null, Json::Number),
    })
}

/// go-yaml v2's reading of a plain scalar (`resolve` with no tag).
fn resolve(s: &str) -> Result<Scalar, Fail> {
    let Some(&first) = s.as_bytes().first() else {
        return Ok(Scalar::Null);
    };
    // Only a scalar starting with one of these may be other than a string.
    let hint = match first {
        b'+' | b'-' | b'0'..=b'9' => b'D',
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => b'M',
        b'.' => b'.',
        _ => return Ok(Scalar::Str(s.to_string())),
    };
    match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Ok(Scalar::Bool(true));
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Ok(Scalar::Bool(false));
        }
        "~" | "null" | "Null" | "NULL" => return Ok(Scalar::Null),
        ".nan" | ".NaN" | ".NAN" => return Ok(Scalar::Float(f64::NAN)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Ok(Scalar::Float(f64::INFINITY));
        }
        "-.inf" | "-.Inf" | "-.INF" => return Ok(Scalar::Float(f64::NEG_INFINITY)),
        _ => {}
    }
    let numberish = |t: &str| {
        t.bytes()
            .all(|c| c.is_ascii_digit() || b"_.eE+-".contains(&c))
    };
    match hint {
        b'.' => {
            // Go's `strconv.ParseFloat`: a string with another character
            // is not a number for it.
            if !numberish(s) {
                return Ok(Scalar::Str(s.to_string()));
            }
            if is_yaml_float(s) && !s.contains('_') {
                return float(s);
            }
            Err(Fail::Refused(format!("the plain scalar `{s}`")))
        }
        b'D' => {
            // A timestamp (`2001-12-14`, four digits and a dash) stays
            // the string it is written as, and nothing so written is a
            // number.
            let b = s.as_bytes();
            if b.len() > 4 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' {
                return Ok(Scalar::Str(s.to_string()));
            }
            let plain: String = s.chars().filter(|&c| c != '_').collect();
            let int = go_parse_int(&plain);
            if let Ok(i) = int {
                return Ok(Scalar::Int(i));
            }
            let uint = go_parse_uint(&plain);
            if let Ok(u) = uint {
                return Ok(Scalar::Uint(u));
            }
            if is_yaml_float(&plain) {
                if let Ok(f) = plain.parse::<f64>()
                    && f.is_finite()
                {
                    return Ok(Scalar::Float(f));
                }
                if plain.parse::<f64>().is_err() {
                    return Err(Fail::Refused(format!("the plain scalar `{s}`")));
                }
                // Out of range for Go too: on to the cases below.
            }
            if plain.starts_with("0b") || plain.starts_with("-0b") || uint == Err(IntError::Range) {
                return Err(Fail::Refused(format!("the plain scalar `{s}`")));
            }
            Ok(Scalar::Str(s.to_string()))
        }
        _ => Ok(Scalar::Str(s.to_string())),
    }
}

fn float(s: &str) -> Result<Scalar, Fail> {
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() => Ok(Scalar::Float(f)),
        _ => Err(Fail::Refused(format!("the plain scalar `{s}`"))),
    }
}

/// go-yaml's `yamlStyleFloat`:
/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`.
fn is_yaml_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

#[derive(Debug, PartialEq, Eq)]
enum IntError {
    Syntax,
    Range,
}

/// Go's `strconv.ParseInt(s, 0, 64)` (underscores already removed).
fn go_parse_int(s: &str) -> Result<i64, IntError> {
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let magnitude = go_parse_uint(digits)?;
    if negative {
        if magnitude > 1 << 63 {
            return Err(IntError::Range);
        }
        Ok((magnitude as i64).wrapping_neg())
    } else {
        i64::try_from(magnitude).map_err(|_| IntError::Range)
    }
}

/// Go's `strconv.ParseUint(s, 0, 64)` (underscores already removed).
fn go_parse_uint(s: &str) -> Result<u64, IntError> {
    let lower = s.get(..2).map(str::to_ascii_lowercase);
    let (radix, digits) = match lower.as_deref() {
        Some("0x") => (16, &s[2..]),
        Some("0b") => (2, &s[2..]),
        Some("0o") => (8, &s[2..]),
        _ if s.len() > 1 && s.starts_with('0') => (8, &s[1..]),
        _ => (10, s),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(IntError::Syntax);
    }
    u64::from_str_radix(digits, radix).map_err(|_| IntError::Range)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// OPA's answers, from its own engine (`json.marshal(yaml.unmarshal(s))`).
    #[test]
    fn reads_yaml_as_opa_does() {
        let ok = |yaml: &str, want: &str| {
            let got = read(yaml).unwrap_or_else(|_| panic!("{yaml:?} is refused"));
            assert_eq!(got, serde_json::from_str::<Json>(want).unwrap(), "{yaml:?}");
        };
        ok("a: 0x1F", r#"{"a": 31}"#);
        ok("a: 1_000", r#"{"a": 1000}"#);
        ok("a: .5", r#"{"a": 0.5}"#);
        ok("a: +1", r#"{"a": 1}"#);
        ok("a: 1e3", r#"{"a": 1000}"#);
        ok("a: ~", r#"{"a": null}"#);
        ok(
            "a: yes\nb: off\nc: y\nd: TRUE\ne: yEs",
            r#"{"a": true, "b": false, "c": true, "d": true, "e": "yEs"}"#,
        );
        ok(
            "a: 2001-12-14t21:59:43.10-05:00",
            r#"{"a": "2001-12-14t21:59:43.10-05:00"}"#,
        );
        ok(
            "a: 017\nb: 0o17\nc: 0b101\nd: 09",
            r#"{"a": 15, "b": 15, "c": 5, "d": 9}"#,
        );
        ok(
            "a: 1.50\nb: 1e400\nc: 1e-400",
            r#"{"a": 1.5, "b": "1e400", "c": 0}"#,
        );
        ok("a: 1\na: 2", r#"{"a": 2}"#);
        ok(
            "1: 2\ntrue: x\n0x10: z",
            r#"{"1": 2, "true": "x", "16": "z"}"#,
        );
        ok("a: [1, 2.0]", r#"{"a": [1, 2]}"#);
        ok(
            "a: 1:20\nb: <<\nc: 0x\nd: +",
            r#"{"a": "1:20", "b": "<<", "c": "0x", "d": "+"}"#,
        );
        ok("a: 18446744073709551615", r#"{"a": 18446744073709551615}"#);
        ok(
            "a: 1e21\nb: 1.5e16",
            r#"{"a": 1e21, "b": 15000000000000000}"#,
        );
        ok("", "null");
        ok("# c\n", "null");
        ok("'x'", r#""x""#);
        ok("a: 'it''s'\nb: \"\\x41\"", r#"{"a": "it's", "b": "A"}"#);
        ok("a: |\n  hi\n  there\n", r#"{"a": "hi\nthere\n"}"#);
        let refused = |yaml: &str| {
            assert!(
                matches!(read(yaml), Err(Fail::Refused(_))),
                "{yaml:?} is answered"
            );
        };
        for yaml in [
            "a: &x 1\nb: *x",
            "a: !!str 1",
            "<<: {b: 1}\nc: 2",
            "---\na: 1\n---\nb: 2",
            "1.5: x",
            "1: a\n'1': b",
            "a: -0.0",
            "a: 1e20",
            "a: 18446744073709551616",
            "a: 0xFFFFFFFFFFFFFFFFF",
            "a: .5_0",
        ] {
            refused(yaml);
        }
        refused("a: x\u{2028}y");
        refused("[1, 2");
        refused("  a: 1\nb");
        for yaml in ["a: .inf", "a: .nan", "~: x", "a: \u{7}"] {
            assert!(matches!(read(yaml), Err(Fail::Error(_))), "{yaml:?}");
        }
    }
}
