//! `base64.decode` as OPA answers it: Go's `base64.StdEncoding`, observed
//! through OPA's engine (tests).
//!
//! Why (issue 27): Go's decoder skips `\r` and `\n` anywhere in the text
//! (`"aGVsbG8=\n"` is `hello`), where regorus' raised an error; Go also
//! takes a last group whose unused bits are not zero (`aGVsbG9=`). The
//! rest is strict: padding required, the standard alphabet only, nothing
//! after the padding. Bytes that are not UTF-8 come out as one U+FFFD
//! each, as OPA writes them (regorus wrote one per bad sequence).

use regorus::Value;

const NAME: &str = "base64.decode";

/// `base64.decode(s)`; `None` for a non-string (regorus' type error, as
/// OPA's).
pub(super) fn decode(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let Value::String(s) = &a[0] else {
        return None;
    };
    Some(match go_decode(s.as_bytes()) {
        Ok(bytes) => Ok(Value::from(super::strings::go_string(&bytes))),
        Err(at) => return super::error(NAME, format!("illegal base64 data at input byte {at}")),
    })
}

/// The decoded bytes, or the offset (in the text without line breaks)
/// where Go's decoder gives up.
fn go_decode(text: &[u8]) -> Result<Vec<u8>, usize> {
    let clean: Vec<u8> = text
        .iter()
        .copied()
        .filter(|b| !matches!(b, b'\r' | b'\n'))
        .collect();
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let groups = clean.len().div_ceil(4);
    let mut out = Vec::with_capacity(groups * 3);
    for (g, group) in clean.chunks(4).enumerate() {
        let at = g * 4;
        let last = g + 1 == groups;
        // How many characters of the group carry data: 4, or 2 or 3
        // before padding that ends the text.
        let data = match group {
            [_, _, b'=', b'='] if last => 2,
            [_, _, _, b'='] if last => 3,
            [_, _, _, _] => 4,
            _ => return Err(at + group.len()),
        };
        let mut bits = 0u32;
        for (i, &c) in group[..data].iter().enumerate() {
            bits = bits << 6 | value(c).ok_or(at + i)?;
        }
        bits <<= 6 * (4 - data) as u32;
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..data]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_as_go() {
        // OPA's answers, from its own engine.
        let cases: &[(&str, Option<&str>)] = &[
            ("aGVsbG8=\n", Some("hello")),
            ("aGV\r\nsbG8=", Some("hello")),
            ("aGVsbG8\n=", Some("hello")),
            ("aGVsbG9=", Some("hello")),
            ("aGVsbA==", Some("hell")),
            ("aGVsbB==", Some("hell")),
            ("aGVsbA=\n=", Some("hell")),
            ("/w==", Some("\u{fffd}")),
            ("", Some("")),
            ("\n", Some("")),
            ("aGVsbG8", None),
            ("aGVsbG8=aGVsbG8=", None),
            (" aGVsbG8=", None),
            ("aGVsbA==x", None),
            ("a-_b", None),
            ("aGVsbA", None),
            ("aGVsbA=", None),
        ];
        for (s, want) in cases {
            let got = decode(&[Value::from(*s)]).unwrap().ok();
            assert_eq!(got, want.map(Value::from), "{s:?}");
        }
    }
}
