//! `urlquery.decode_object` as OPA answers it: Go's `url.ParseQuery`,
//! observed through OPA's engine (tests).
//!
//! Why (issue 27): regorus trims white space from the query and its keys
//! (`"  x  "` became the key `"  x"`, `"\t\n"` no key at all) and keeps a
//! bad escape (`%`, `%d`) as it is, where OPA raises an error (fail open).
//! Go splits at `&` only; a part holding `;` is an error, an empty part is
//! skipped, the rest is split at its first `=` and both sides unescaped
//! (`+` a space, `%XX` a byte, any other `%` an error); a part's error does
//! not stop the walk, and the first one found is the answer.

use regorus::Value;

const NAME: &str = "urlquery.decode_object";

/// `urlquery.decode_object(s)`; `None` for a non-string (regorus' type
/// error, as OPA's).
pub(super) fn urlquery_decode_object(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let Value::String(s) = &a[0] else {
        return None;
    };
    let mut first_error: Option<String> = None;
    let mut pairs: std::collections::BTreeMap<Value, Vec<Value>> = Default::default();
    for part in s.split('&') {
        if part.contains(';') {
            first_error.get_or_insert_with(|| "invalid semicolon separator in query".into());
            continue;
        }
        if part.is_empty() {
            continue;
        }
        let (key, value) = part.split_once('=').unwrap_or((part, ""));
        let (key, value) = match (unescape(key), unescape(value)) {
            (Ok(k), Ok(v)) => (k, v),
            (Err(e), _) | (_, Err(e)) => {
                first_error.get_or_insert(e);
                continue;
            }
        };
        pairs
            .entry(Value::from(key))
            .or_default()
            .push(Value::from(value));
    }
    if let Some(e) = first_error {
        return super::error(NAME, e);
    }
    let object: std::collections::BTreeMap<Value, Value> = pairs
        .into_iter()
        .map(|(k, vs)| (k, Value::from(vs)))
        .collect();
    Some(Ok(Value::from(object)))
}

/// Go's `url.QueryUnescape`; bytes that are not UTF-8 come out as one
/// U+FFFD each, as OPA writes them. `urlquery.decode` is this too.
pub(super) fn unescape(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = |j: usize| b.get(j).and_then(|c| (*c as char).to_digit(16));
                let (Some(h), Some(l)) = (hex(i + 1), hex(i + 2)) else {
                    let end = (i + 3).min(b.len());
                    let bad = String::from_utf8_lossy(&b[i..end]);
                    return Err(format!("invalid URL escape {bad:?}"));
                };
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(super::strings::go_string(&out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_go() {
        // OPA's answers, from its own engine.
        let cases = [
            ("  x  ", r#"{"  x  ":[""]}"#),
            ("\t\n", r#"{"\t\n":[""]}"#),
            ("%", "error"),
            ("%d", "error"),
            ("a=1;b=2", "error"),
            ("a=1&b=2;c=3", "error"),
            ("a+b=c+d", r#"{"a b":["c d"]}"#),
            ("=x", r#"{"":["x"]}"#),
            ("&&", "{}"),
            ("", "{}"),
            ("a=1&a=2&a", r#"{"a":["1","2",""]}"#),
            ("b=1&a=%zz", "error"),
            ("a=1=2", r#"{"a":["1=2"]}"#),
            ("a%3Db=c", r#"{"a=b":["c"]}"#),
            ("%C3%A9=%FF", r#"{"é":["�"]}"#),
            ("a=%2", "error"),
            ("x=1&&y=", r#"{"x":["1"],"y":[""]}"#),
        ];
        for (s, want) in cases {
            let got = match urlquery_decode_object(&[Value::from(s)]).unwrap() {
                Ok(v) => serde_json::to_string(&v).unwrap(),
                Err(_) => "error".into(),
            };
            assert_eq!(got, want, "{s:?}");
        }
    }
}
