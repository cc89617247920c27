//! OPA's `sprintf`: Go's `fmt.Sprintf` over OPA's conversion of each
//! argument (`topdown/strings.go`, `builtinSprintf`).
//!
//! OPA hands Go four kinds of values, and Go's `fmt` decides the rest:
//! - a number that is an integer within 64 bits (also when written `2.0`,
//!   `-0.0`) is an `int64`; a larger integer a `*big.Int`; any other number
//!   a `float64`, except one whose JSON text has no decimal point (`1e+20`,
//!   `1e-07`), which OPA passes as that text, a `string`;
//! - a string is a `string`;
//! - anything else is the `string` of its Rego text: `null`, `true`,
//!   `[1, "a"]`, `{"a": 1}`, `{1, 2}`, `set()`, strings inside quoted as Go's
//!   `strconv.Quote` does.
//!
//! Go's verbs, flags, widths, precisions (`*` too), argument indexes and
//! its in-band errors (`%!d(string=x)`, `%!d(MISSING)`, `%!(EXTRA …)`,
//! `%!(NOVERB)`, `%!(BADWIDTH)`) are written here as Go writes them. The
//! shapes whose answer is not certain are refused with an error (fail
//! closed) rather than guessed: see [`Unsure`].
//!
//! regorus keeps no number's text, so the text of a non-integral number is
//! the shortest one that reads back as the same `float64`, written the way
//! JSON writers such as Python's (and so OPA's oracle in the tests) write it.
//!
//! This file converts the arguments ([`Arg`]) and holds a number's text
//! (also `json.marshal`'s and `opa_builtins::numbers`'); the rest is one
//! job per file: `verbs` reads the format, `printer` formats one argument
//! for its verb, `float` is Go's float formatting, `quote` the Rego text of
//! a composite argument and Go's quoting.

use std::fmt::Write as _;

use regorus::Value;

mod float;
mod printer;
mod quote;
mod verbs;

use float::fixed;
use quote::rego_text;
use verbs::format_values;

/// OPA's answer for `sprintf(format, values)`; `None` (regorus' answer, its
/// type error) when the operands are not a string and an array.
pub(super) fn sprintf(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let (Value::String(format), Value::Array(values)) = (&a[0], &a[1]) else {
        return None;
    };
    Some(
        format_values(format, &values.iter().cloned().collect::<Vec<_>>())
            .map(|s| Value::String(s.into()))
            .map_err(|Unsure(why)| anyhow::anyhow!("sprintf: {why} (not supported by regent)")),
    )
}

/// A shape whose Go output this module does not reproduce with certainty.
#[derive(Debug)]
pub(super) struct Unsure(&'static str);

type Out<T> = Result<T, Unsure>;

/// One argument as OPA hands it to Go.
#[derive(Debug, Clone)]
enum Arg {
    Int(i64),
    /// A `*big.Int`: sign and decimal digits.
    Big(bool, String),
    Float(f64),
    Str(String),
}

impl Arg {
    fn type_name(&self) -> &'static str {
        match self {
            Arg::Int(_) => "int64",
            Arg::Big(..) => "*big.Int",
            Arg::Float(_) => "float64",
            Arg::Str(_) => "string",
        }
    }
}

fn convert(v: &Value) -> Out<Arg> {
    Ok(match v {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                // An integral float from 1e16 was spelled `1e+16` (a
                // string to OPA) or `1.2e+17` (a float64) by the client:
                // JavaScript writes the digits, an integer to regent too.
                if text_unknown(v) {
                    return Err(Unsure(TEXT_UNKNOWN));
                }
                Arg::Int(i)
            } else if let Some(f) = n.as_f64() {
                let (digits, dp) = shortest(f);
                if digits.len() == 1 && !(-3..=16).contains(&dp) {
                    // OPA passes the text when it has no decimal point:
                    // `0.00001` is a float64, `1e-05` a string.
                    if text_unknown(v) {
                        return Err(Unsure(TEXT_UNKNOWN));
                    }
                    Arg::Str(json_float(f))
                } else {
                    Arg::Float(f)
                }
            } else {
                let d = n.format_decimal();
                match d.strip_prefix('-') {
                    Some(rest) => Arg::Big(true, rest.to_string()),
                    None => Arg::Big(false, d),
                }
            }
        }
        Value::String(s) => Arg::Str(s.to_string()),
        v => {
            let mut s = String::new();
            rego_text(&mut s, v)?;
            Arg::Str(s)
        }
    })
}

/// Whether `v` is a number whose text OPA keeps as the client wrote it and
/// clients write differently (issue 27): a double below 1e-4 (`1e-05` in
/// Python, `0.00001` in JavaScript and Go, `1e-7` in JavaScript and Go for
/// `1e-07`) or from 1e16 to 1e21 (`1e+20` in Python, the digits in full in
/// JavaScript and Go). regent keeps the double, not the text: writing it
/// (`json.marshal`, `sprintf`) would guess, so it is refused. Elsewhere the
/// common writers agree on the shortest digits (`0.1`, `1234567.5`,
/// `1e+21`).
pub(super) fn text_unknown(v: &Value) -> bool {
    let Value::Number(n) = v else {
        return false;
    };
    if n.as_i64().is_some() && !n.format_decimal_with_width(1).contains('.') {
        return false;
    }
    n.as_f64().is_some_and(|f| {
        let a = f.abs();
        a.is_finite() && ((a > 0.0 && a < 1e-4) || (1e16..1e21).contains(&a))
    })
}

/// Why a number of [`text_unknown`] is refused.
pub(super) const TEXT_UNKNOWN: &str = "a number below 1e-4 or from 1e16 to 1e21, which OPA writes \
     as the client spelled it (`0.00001` or `1e-05`) and regent no longer knows; write it with \
     format_int, or compare it instead";

/// A number's text inside a composite value: OPA writes the number's JSON
/// text. regorus keeps none: an integer's digits, and the shortest
/// text of a float, as JSON writers write it (`2.0`, `1e+300`).
pub(super) fn number_text(v: &Value) -> String {
    let Value::Number(n) = v else {
        return String::new();
    };
    // regorus writes a float with the width's fraction digits, an integer
    // as it is: the one way to tell an integral float from an integer.
    let float = n.format_decimal_with_width(1).contains('.');
    match (n.as_i64(), n.as_f64()) {
        (Some(_), Some(f)) if float => json_float(f),
        (Some(i), _) => i.to_string(),
        (None, Some(f)) => json_float(f),
        (None, None) => n.format_decimal(),
    }
}

/// The shortest decimal digits that read back as `f` (no sign, no trailing
/// zeros) and the position of the decimal point (Go's `decimalSlice`).
fn shortest(f: f64) -> (String, i32) {
    if f == 0.0 {
        return (String::new(), 0);
    }
    digits_of(&format!("{:e}", f.abs()))
}

/// Digits and point of Rust's `{:e}` text (`1.2345e-7`).
fn digits_of(e: &str) -> (String, i32) {
    let (mantissa, exp) = e.split_once('e').unwrap_or((e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    (digits, exp + 1)
}

/// A float as JSON writers write it: the shortest digits, a fixed point
/// for exponents -4 to 15 (always with a fraction, `2.0`), otherwise an
/// exponent of at least two digits (`1e+300`, `1.5e-07`).
pub(super) fn json_float(f: f64) -> String {
    let sign = if f.is_sign_negative() { "-" } else { "" };
    let (digits, dp) = shortest(f);
    if digits.is_empty() {
        return format!("{sign}0.0");
    }
    let exp = dp - 1;
    if (-4..16).contains(&exp) {
        let mut s = String::from(sign);
        fixed(&mut s, &digits, dp, None);
        if !s.contains('.') {
            s.push_str(".0");
        }
        s
    } else {
        let mut s = String::from(sign);
        s.push_str(&digits[..1]);
        if digits.len() > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        let _ = write!(s, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
        s
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value as Json, json};

    /// Integral floats as Python writes them (issue 27), OPA's answers
    /// asked once: `100.0` is an int64 to OPA, `1e+16` text and `1.2e+17`
    /// a float64, where a JavaScript client's digits are integers to both:
    /// refused from 1e16.
    #[test]
    fn integral_floats_as_python_spells_them() {
        let v = |t: &str| regorus::Value::from_json_str(t).unwrap();
        let f = |f: &str, t: &str| super::format_values(f, &[v(t)]);
        assert_eq!(f("%v", "100.0").ok().as_deref(), Some("100"));
        assert_eq!(
            f("%d", "9007199254740992.0").ok().as_deref(),
            Some("9007199254740992")
        );
        assert_eq!(f("%s", "-0.0").ok().as_deref(), Some("%!s(int64=0)"));
        for t in ["1e+16", "1.2e+17", "1e16"] {
            assert!(f("%v", t).is_err(), "{t}");
            assert!(f("%d", t).is_err(), "{t}");
        }
        assert_eq!(
            f("%v", "10000000000000000").ok().as_deref(),
            Some("10000000000000000")
        );
    }

    /// Precisions past what Rust's formatting takes (65535; it panics),
    /// up to Go's 10^7: OPA's answers (asked once), kept by their lengths
    /// and pieces.
    #[test]
    fn huge_precisions_do_not_panic() {
        let v = |j: Json| regorus::Value::from(j);
        let out = super::format_values(
            "%.70000f|%.70000e|%.70000g|%.2000f",
            &[
                v(json!(0.5)),
                v(json!(1e300)),
                v(json!(0.1)),
                v(json!(5e300)),
            ],
        )
        .unwrap();
        let parts: Vec<&str> = out.split('|').collect();
        assert_eq!(parts[0].len(), 70002);
        assert!(parts[0].starts_with("0.5000") && parts[0].ends_with("0000"));
        assert_eq!(parts[1], "%!e(string=1e+300)");
        assert_eq!(
            parts[2],
            "0.1000000000000000055511151231257827021181583404541015625"
        );
        assert_eq!(parts[3], "%!f(string=5e+300)");
        // Below 1e-4 the text depends on the client (`1e-300` or its
        // digits in full): refused.
        assert!(super::format_values("%.70000e", &[v(json!(1e-300))]).is_err());
        let out = super::format_values(
            "%.70000e|%.70000g",
            &[v(json!(1.5e-300)), v(json!(1.5e-300))],
        )
        .unwrap();
        let parts: Vec<&str> = out.split('|').collect();
        assert_eq!((parts[0].len(), parts[1].len()), (70007, 755));
        assert!(parts[0].starts_with("1.5000000000000001204790983373"));
        assert!(parts[1].ends_with("3127052485942840576171875e-300"));
        assert!(super::format_values("%.9999999f", &[v(json!(0.5))]).is_ok());
    }
}
