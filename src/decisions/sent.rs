//! A line's arguments (`--log-arguments`) with their numbers as the client
//! spelled them (`1.50`, `1E2`, `-0`, `12345678901234567890123`), where
//! regent holds an `f64` or an `i64` and `serde_json` would write its own
//! text (`1.5`, `100.0`, `-0.0`, `1.2345678901234568e22`). OPA's decision
//! log keeps the client's text (it holds `json.Number`); so does regent's.
//!
//! Only a request whose text held such a number carries its text to the
//! line (`policy::spelled::scan` keeps it, the entry's `spelled`); every
//! other request's numbers are written by `serde_json` as sent already.
//! Here, on the writer thread, the request's `params.arguments` is taken
//! from that text as a [`RawValue`] (`serde_json`, no JSON reader of our
//! own), and accepted only when it reads as the entry's arguments: a batch
//! names the message that was decided, anything else (an upstream's
//! request, a text the arguments did not come from) writes `serde_json`'s
//! text as before.
//!
//! The line's arguments, masked, are then written by walking them beside
//! the raw value: a number whose raw counterpart is a number token of the
//! same value is written as that token, byte for byte; everything else
//! (keys, their order, strings, a member the raw value lacks) as
//! `serde_json` writes it. The walk is driven by the masked value, so a
//! masked member is never written. It reads each object or array of the
//! raw value once per level it is nested in; [`WORK`] bounds that, past it
//! the line has `serde_json`'s text. Masking, the digest and cutting a
//! line down are `line`'s, `mask`'s and `cut`'s.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// How many bytes of raw text, per byte of the arguments' own text, the
/// walk may read before it gives up (a deeply nested value is read once per
/// level): a line is written on the writer thread, which every decision
/// waits behind.
const WORK: usize = 16;

/// The masked `arguments` of an entry whose request `text` spelled some of
/// their numbers by hand, written as compact JSON with those numbers as the
/// client spelled them; `None` when `text` does not hold `sent` (the
/// entry's arguments, unmasked) or is over `limit` bytes of arguments, and
/// the line writes `serde_json`'s text.
pub(super) fn arguments(
    text: &[u8],
    sent: &Value,
    masked: &Value,
    limit: usize,
) -> Option<Box<RawValue>> {
    let raw = find(text, sent)?;
    if raw.get().len() > limit {
        return None;
    }
    let mut walk = Walk {
        out: Vec::with_capacity(raw.get().len()),
        budget: raw.get().len().saturating_mul(WORK),
    };
    walk.value(masked, Some(raw))?;
    let text = String::from_utf8(walk.out).ok()?;
    RawValue::from_string(text).ok()
}

/// One JSON-RPC message's `params.arguments`, as sent.
#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
}

/// The arguments in `text` (one message, or a batch's) that read as `sent`.
fn find<'a>(text: &'a [u8], sent: &Value) -> Option<&'a RawValue> {
    let text = std::str::from_utf8(text).ok()?;
    let messages: Vec<Message<'a>> = if text.trim_start().starts_with('[') {
        serde_json::from_str(text).ok()?
    } else {
        vec![serde_json::from_str(text).ok()?]
    };
    messages
        .into_iter()
        .filter_map(|m| m.params?.arguments)
        .find(|raw| serde_json::from_str::<Value>(raw.get()).is_ok_and(|v| v == *sent))
}

/// The walk: the text written so far, and how much raw text it may still
/// read.
struct Walk {
    out: Vec<u8>,
    budget: usize,
}

impl Walk {
    /// Whether reading `raw` again is within the budget (and counts it).
    fn afford(&mut self, raw: &RawValue) -> Option<()> {
        self.budget = self.budget.checked_sub(raw.get().len())?;
        Some(())
    }

    /// Writes `v`, with the numbers of `raw` (its text as sent) where they
    /// are `v`'s; `None` when the budget ran out.
    fn value(&mut self, v: &Value, raw: Option<&RawValue>) -> Option<()> {
        // Writing into a Vec cannot fail.
        match (v, raw) {
            (Value::Number(_), Some(raw)) if same_number(v, raw.get()) => {
                self.out.extend_from_slice(raw.get().as_bytes());
            }
            (Value::Array(items), Some(raw)) if raw.get().starts_with('[') => {
                self.afford(raw)?;
                let raws: Vec<&RawValue> = serde_json::from_str(raw.get()).unwrap_or_default();
                self.out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    self.value(item, raws.get(i).copied())?;
                }
                self.out.push(b']');
            }
            (Value::Object(members), Some(raw)) if raw.get().starts_with('{') => {
                self.afford(raw)?;
                // A key sent twice is the last one's, as `serde_json` reads it.
                let raws: HashMap<String, &RawValue> =
                    serde_json::from_str(raw.get()).unwrap_or_default();
                self.out.push(b'{');
                for (i, (k, item)) in members.iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    let _ = serde_json::to_writer(&mut self.out, k);
                    self.out.push(b':');
                    self.value(item, raws.get(k).copied())?;
                }
                self.out.push(b'}');
            }
            _ => {
                let _ = serde_json::to_writer(&mut self.out, v);
            }
        }
        Some(())
    }
}

/// Whether `token` is a JSON number that reads as `v` (a number).
fn same_number(v: &Value, token: &str) -> bool {
    token.starts_with(|c: char| c == '-' || c.is_ascii_digit())
        && serde_json::from_str::<Value>(token).is_ok_and(|n| n == *v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(arguments: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{arguments}}}}}"#
        )
    }

    fn written(text: &str, masked: Option<Value>) -> Option<String> {
        let args_text = request(text);
        let sent: Value = serde_json::from_str(text).unwrap();
        let masked = masked.unwrap_or_else(|| sent.clone());
        arguments(args_text.as_bytes(), &sent, &masked, 1 << 20).map(|r| r.get().to_string())
    }

    #[test]
    fn numbers_are_written_as_sent_and_the_rest_as_serde_json_writes_it() {
        let text = r#"{ "a" : 1.50, "b": [1E2, -0, 2.0e0, 7],
            "c": {"d": 12345678901234567890123, "e": 0.1000000000000000000001},
            "s": "x\u0041 1.50", "t": true, "n": null }"#;
        assert_eq!(
            written(text, None).unwrap(),
            r#"{"a":1.50,"b":[1E2,-0,2.0e0,7],"c":{"d":12345678901234567890123,"e":0.1000000000000000000001},"s":"xA 1.50","t":true,"n":null}"#
        );
    }

    #[test]
    fn a_masked_member_is_never_written() {
        let text = r#"{"secret": 1.50, "keep": {"pin": 1E4, "n": 2.50}}"#;
        let masked = json!({"keep": {"n": 2.5}});
        assert_eq!(
            written(text, Some(masked)).unwrap(),
            r#"{"keep":{"n":2.50}}"#
        );
    }

    #[test]
    fn a_key_sent_twice_is_the_last_one() {
        let text = r#"{"a": 1.50, "a": 2.50}"#;
        assert_eq!(written(text, None).unwrap(), r#"{"a":2.50}"#);
    }

    #[test]
    fn arguments_not_in_the_text_are_not_written_from_it() {
        // Another request's text, or arguments that changed on the way.
        let text = request(r#"{"a": 1.50}"#);
        let other = json!({"a": 2.5});
        assert!(arguments(text.as_bytes(), &other, &other, 1 << 20).is_none());
        // A batch: the message whose arguments these are.
        let batch = format!(
            "[{}, {}]",
            request(r#"{"a": 2.50}"#),
            request(r#"{"a": 1.50}"#)
        );
        let sent = json!({"a": 1.5});
        let got = arguments(batch.as_bytes(), &sent, &sent, 1 << 20).unwrap();
        assert_eq!(got.get(), r#"{"a":1.50}"#);
        // Over the limit: `serde_json`'s text.
        assert!(arguments(text.as_bytes(), &sent, &sent, 4).is_none());
    }

    #[test]
    fn deep_nesting_stays_within_the_budget() {
        let depth = 120;
        let text = format!(
            "{}\"{}\", 1.50{}",
            "[".repeat(depth),
            "x".repeat(10_000),
            "]".repeat(depth)
        );
        let sent: Value = serde_json::from_str(&text).unwrap();
        let req = request(&text);
        // Each level reads the whole text again: past the budget, nothing.
        assert!(arguments(req.as_bytes(), &sent, &sent, 1 << 20).is_none());
        let shallow = format!("[[\"{}\", 1.50]]", "x".repeat(10_000));
        let sent: Value = serde_json::from_str(&shallow).unwrap();
        let got = arguments(request(&shallow).as_bytes(), &sent, &sent, 1 << 20).unwrap();
        assert!(got.get().ends_with(",1.50]]"));
    }
}
