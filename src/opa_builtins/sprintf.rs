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

use std::fmt::Write as _;

use regorus::Value;
use unicode_general_category::{GeneralCategory as G, get_general_category};

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

/// The Rego text of a value, as OPA's `Term.String()` writes it.
fn rego_text(out: &mut String, v: &Value) -> Out<()> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(_) if text_unknown(v) => return Err(Unsure(TEXT_UNKNOWN)),
        Value::Number(_) => out.push_str(&number_text(v)),
        Value::String(s) => quote(out, s, false)?,
        Value::Array(a) => {
            out.push('[');
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                rego_text(out, e)?;
            }
            out.push(']');
        }
        Value::Set(s) => {
            if s.is_empty() {
                out.push_str("set()");
                return Ok(());
            }
            check_order(s.iter())?;
            out.push('{');
            for (i, e) in s.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                rego_text(out, e)?;
            }
            out.push('}');
        }
        Value::Object(o) => {
            check_order(o.keys())?;
            out.push('{');
            for (i, (k, e)) in o.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                rego_text(out, k)?;
                out.push_str(": ");
                rego_text(out, e)?;
            }
            out.push('}');
        }
        Value::Undefined => return Err(Unsure("an undefined value")),
    }
    Ok(())
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

/// OPA orders a collection with its own comparison; regorus' agrees on
/// elements of one kind, except objects (OPA compares their sorted keys
/// first) and a mix of sets and objects (ordered apart in OPA).
fn check_order<'a>(items: impl Iterator<Item = &'a Value>) -> Out<()> {
    let (mut objects, mut sets) = (0, 0);
    for v in items {
        match v {
            Value::Object(_) => objects += 1,
            Value::Set(_) => sets += 1,
            _ => {}
        }
    }
    if objects > 1 || (objects > 0 && sets > 0) {
        return Err(Unsure("a set or object key of several objects"));
    }
    Ok(())
}

/// Go's `strconv.IsPrint`: letters, marks, numbers, punctuation, symbols
/// and the ASCII space.
fn is_print(c: char) -> bool {
    if c.is_ascii() {
        return (' '..='~').contains(&c);
    }
    !matches!(
        get_general_category(c),
        G::Control
            | G::Format
            | G::Surrogate
            | G::PrivateUse
            | G::Unassigned
            | G::SpaceSeparator
            | G::LineSeparator
            | G::ParagraphSeparator
    )
}

/// Go's `strconv.Quote` (`ascii`: `QuoteToASCII`).
fn quote(out: &mut String, s: &str, ascii: bool) -> Out<()> {
    out.push('"');
    for c in s.chars() {
        quote_char(out, c, '"', ascii);
    }
    out.push('"');
    Ok(())
}

fn quote_char(out: &mut String, c: char, q: char, ascii: bool) {
    if c == q || c == '\\' {
        out.push('\\');
        out.push(c);
        return;
    }
    if c.is_ascii() {
        if is_print(c) {
            out.push(c);
            return;
        }
    } else if !ascii && is_print(c) {
        out.push(c);
        return;
    }
    match c {
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        c if (c as u32) < 0x20 || c == '\u{7f}' => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if (c as u32) < 0x10000 => {
            let _ = write!(out, "\\u{:04x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\U{:08x}", c as u32);
        }
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

/// Go's `fmtF`: `digits` with the point at `dp`, `prec` fraction digits
/// (`None`: as many as there are).
fn fixed(out: &mut String, digits: &str, dp: i32, prec: Option<usize>) {
    let d = digits.as_bytes();
    let nd = d.len() as i32;
    if dp > 0 {
        for i in 0..dp {
            out.push(if i < nd { d[i as usize] as char } else { '0' });
        }
    } else {
        out.push('0');
    }
    let prec = prec.unwrap_or_else(|| (nd - dp).max(0) as usize);
    if prec > 0 {
        out.push('.');
        for i in 1..=prec as i32 {
            let j = dp + i - 1;
            out.push(if j >= 0 && j < nd {
                d[j as usize] as char
            } else {
                '0'
            });
        }
    }
}

/// Go's `fmtE`: `prec` fraction digits, an exponent of two digits at least.
fn exponent(out: &mut String, digits: &str, dp: i32, prec: usize, e: char) {
    let d = digits.as_bytes();
    out.push(d.first().map_or('0', |c| *c as char));
    if prec > 0 {
        out.push('.');
        for i in 1..=prec {
            out.push(d.get(i).map_or('0', |c| *c as char));
        }
    }
    let exp = if d.is_empty() { 0 } else { dp - 1 };
    let _ = write!(
        out,
        "{e}{}{:02}",
        if exp < 0 { '-' } else { '+' },
        exp.abs()
    );
}

/// Rust's formatting takes precisions up to 65535 (it panics past them),
/// Go's up to 10^7. A float's exact decimal expansion ends within 1100
/// digits (767 significant, 1074 after the point), so past that every digit
/// is a zero and nothing rounds: format at most that many, then pad.
const EXACT: usize = 1100;

/// `{:.p$e}`, for any `p`.
fn sci(f: f64, p: usize) -> String {
    let s = format!("{:.*e}", p.min(EXACT), f);
    if p <= EXACT {
        return s;
    }
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    format!("{m}{}e{e}", "0".repeat(p - EXACT))
}

/// `{:.p$}`, for any `p`.
fn fixed_point(f: f64, p: usize) -> String {
    let mut s = format!("{:.*}", p.min(EXACT), f);
    if p > EXACT {
        s.extend(std::iter::repeat_n('0', p - EXACT));
    }
    s
}

/// Digits of `f` rounded to `n` significant digits, trailing zeros cut.
fn rounded(f: f64, n: usize) -> (String, i32) {
    if f == 0.0 {
        return (String::new(), 0);
    }
    let (mut digits, dp) = digits_of(&sci(f.abs(), n.saturating_sub(1)));
    while digits.ends_with('0') {
        digits.pop();
    }
    (digits, dp)
}

/// Go's `strconv.FormatFloat(f, verb, prec, 64)` for `e E f g G`, without
/// the sign.
fn format_float(f: f64, verb: char, prec: Option<usize>) -> String {
    let mut out = String::new();
    match verb {
        'e' | 'E' => {
            let (digits, dp) = match prec {
                Some(p) => {
                    let (d, dp) = if f == 0.0 {
                        (String::new(), 0)
                    } else {
                        digits_of(&sci(f.abs(), p))
                    };
                    (d, dp)
                }
                None => shortest(f),
            };
            let p = prec.unwrap_or(digits.len().saturating_sub(1));
            exponent(&mut out, &digits, dp, p, verb);
        }
        'f' => {
            let p = prec.unwrap_or_else(|| {
                let (d, dp) = shortest(f);
                (d.len() as i32 - dp).max(0) as usize
            });
            out.push_str(&fixed_point(f.abs(), p));
        }
        _ => {
            // 'g' / 'G'
            let shortest_form = prec.is_none();
            let (digits, dp) = match prec {
                None => shortest(f),
                Some(p) => rounded(f, p.max(1)),
            };
            let nd = digits.len() as i32;
            let mut p = match prec {
                None => nd,
                Some(p) => p.max(1) as i32,
            };
            let mut eprec = p;
            if eprec > nd && nd >= dp {
                eprec = nd;
            }
            if shortest_form {
                eprec = 6;
            }
            let exp = dp - 1;
            let e = if verb == 'G' { 'E' } else { 'e' };
            if digits.is_empty() {
                // Zero: Go writes `0`.
                out.push('0');
            } else if exp < -4 || exp >= eprec {
                if p > nd {
                    p = nd;
                }
                exponent(&mut out, &digits, dp, (p - 1).max(0) as usize, e);
            } else {
                if p > dp {
                    p = nd;
                }
                fixed(&mut out, &digits, dp, Some((p - dp).max(0) as usize));
            }
        }
    }
    out
}

/// Go's `%#` of a float: a decimal point always, and for `g` `G` (and
/// `v`) trailing zeros up to the precision's digits (6 by default).
fn sharp_float(body: &str, verb: char, prec: Option<usize>) -> String {
    let mut digits: i64 = match verb {
        'v' | 'g' | 'G' | 'x' => prec.map_or(6, |p| p as i64),
        _ => 0,
    };
    // The exponent is kept apart: `p` of a hex float, `e` of the others
    // (in a hex float `e` is a digit).
    let hex = matches!(verb, 'x' | 'X');
    let at = if hex {
        body.find(['p', 'P'])
    } else {
        body.find(['e', 'E'])
    };
    let (num, tail) = match at {
        Some(i) => body.split_at(i),
        None => (body, ""),
    };
    let mut saw_nonzero = false;
    let mut point = false;
    for c in num.chars() {
        if c == '.' {
            point = true;
            continue;
        }
        if c != '0' {
            saw_nonzero = true;
        }
        if saw_nonzero {
            digits -= 1;
        }
    }
    let mut out = num.to_string();
    if !point {
        if num == "0" {
            digits -= 1;
        }
        out.push('.');
    }
    while digits > 0 {
        out.push('0');
        digits -= 1;
    }
    out.push_str(tail);
    out
}

/// A finite float's mantissa and binary exponent, as Go's `FormatFloat`
/// takes them apart (the exponent of the mantissa's lowest bit is
/// `exp - 52`).
fn float_parts(v: f64) -> (u64, i64) {
    let bits = v.to_bits();
    let mut exp = ((bits >> 52) & 0x7ff) as i64;
    let mut mant = bits & ((1u64 << 52) - 1);
    if exp == 0 {
        exp += 1;
    } else {
        mant |= 1u64 << 52;
    }
    (mant, exp - 1023)
}

/// Go's `%b` of a float: `mantissa p exponent`, without the sign.
fn binary_float(v: f64) -> String {
    let (mant, exp) = float_parts(v);
    let e = exp - 52;
    format!("{mant}p{}{}", if e < 0 { '-' } else { '+' }, e.abs())
}

/// Go's `%x` / `%X` of a float (`strconv` format `x`), without the sign.
fn hex_float(v: f64, prec: Option<usize>, verb: char) -> String {
    let (mut mant, mut exp) = float_parts(v);
    if mant == 0 {
        exp = 0;
    }
    mant <<= 60 - 52;
    while mant != 0 && mant & (1 << 60) == 0 {
        mant <<= 1;
        exp -= 1;
    }
    if let Some(p) = prec.filter(|p| *p < 15) {
        let shift = (p * 4) as u32;
        let extra = (mant << shift) & ((1u64 << 60) - 1);
        mant >>= 60 - shift;
        if extra | (mant & 1) > 1 << 59 {
            mant += 1;
        }
        mant <<= 60 - shift;
        if mant & (1 << 61) != 0 {
            mant >>= 1;
            exp += 1;
        }
    }
    let upper = verb == 'X';
    let hex = |d: u64| {
        let c = char::from_digit(d as u32, 16).unwrap_or('0');
        if upper { c.to_ascii_uppercase() } else { c }
    };
    let mut out = String::from("0");
    out.push(verb);
    out.push(if (mant >> 60) & 1 == 1 { '1' } else { '0' });
    mant <<= 4;
    match prec {
        None if mant != 0 => {
            out.push('.');
            while mant != 0 {
                out.push(hex((mant >> 60) & 15));
                mant <<= 4;
            }
        }
        Some(p) if p > 0 => {
            out.push('.');
            for _ in 0..p {
                out.push(hex((mant >> 60) & 15));
                mant <<= 4;
            }
        }
        _ => {}
    }
    out.push(if upper { 'P' } else { 'p' });
    out.push(if exp < 0 { '-' } else { '+' });
    let _ = write!(out, "{:02}", exp.abs());
    out
}

/// Go's `fmt` flags of one verb.
#[derive(Default, Clone, Copy)]
struct Flags {
    wid: Option<usize>,
    prec: Option<usize>,
    minus: bool,
    plus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    plus_v: bool,
    sharp_v: bool,
}

struct Printer {
    out: String,
    f: Flags,
}

impl Printer {
    fn padding(&mut self, n: usize) {
        let c = if self.f.zero && !self.f.minus {
            '0'
        } else {
            ' '
        };
        self.out.extend(std::iter::repeat_n(c, n));
    }

    /// Go's `fmt.pad`/`padString`: widths count runes.
    fn pad(&mut self, s: &str) {
        let Some(w) = self.f.wid.filter(|w| *w > 0) else {
            self.out.push_str(s);
            return;
        };
        let n = w.saturating_sub(s.chars().count());
        if self.f.minus {
            self.out.push_str(s);
            self.padding(n);
        } else {
            self.padding(n);
            self.out.push_str(s);
        }
    }

    fn truncate<'a>(&self, s: &'a str) -> &'a str {
        match self.f.prec {
            Some(p) => match s.char_indices().nth(p) {
                Some((i, _)) => &s[..i],
                None => s,
            },
            None => s,
        }
    }

    fn bad_verb(&mut self, verb: char, arg: &Arg) -> Out<()> {
        self.out.push_str("%!");
        self.out.push(verb);
        self.out.push('(');
        self.out.push_str(arg.type_name());
        self.out.push('=');
        // Go prints the argument with `%v` and the verb's flags, as
        // plain flags (not `%+v`/`%#v`).
        match arg {
            Arg::Str(s) => {
                let s = self.truncate(s).to_string();
                self.pad(&s);
            }
            Arg::Int(i) => self.integer(*i, 'v')?,
            Arg::Float(x) => self.float(*x, 'g', None)?,
            Arg::Big(..) => return Err(Unsure("a big integer in a bad verb")),
        }
        self.out.push(')');
        Ok(())
    }

    fn print_arg(&mut self, arg: &Arg, verb: char) -> Out<()> {
        match verb {
            'T' => {
                let t = self.truncate(arg.type_name()).to_string();
                self.pad(&t);
                return Ok(());
            }
            'p' => {
                if let Arg::Big(..) = arg {
                    return Err(Unsure("%p of a big integer"));
                }
                return self.bad_verb(verb, arg);
            }
            _ => {}
        }
        match arg {
            Arg::Str(s) => self.string(s, verb, arg),
            Arg::Int(i) => match verb {
                'v' | 'd' | 'b' | 'o' | 'x' | 'X' => self.integer(*i, verb),
                'O' | 'c' | 'q' | 'U' => self.rune(*i, verb),
                _ => self.bad_verb(verb, arg),
            },
            Arg::Float(x) => match verb {
                'v' => self.float(*x, 'g', None),
                'g' | 'G' => self.float(*x, verb, None),
                'e' | 'E' | 'f' => self.float(*x, verb, Some(6)),
                'F' => self.float(*x, 'f', Some(6)),
                'b' | 'x' | 'X' => self.float(*x, verb, None),
                _ => self.bad_verb(verb, arg),
            },
            Arg::Big(neg, digits) => self.big(*neg, digits, verb),
        }
    }

    fn string(&mut self, s: &str, verb: char, arg: &Arg) -> Out<()> {
        match verb {
            'v' if self.f.sharp_v => self.quoted(s),
            'v' | 's' => {
                let t = self.truncate(s).to_string();
                self.pad(&t);
                Ok(())
            }
            'x' | 'X' => {
                self.hex_string(s, verb == 'X');
                Ok(())
            }
            'q' => self.quoted(s),
            _ => self.bad_verb(verb, arg),
        }
    }

    /// Go's `fmtQ`.
    fn quoted(&mut self, s: &str) -> Out<()> {
        let s = self.truncate(s).to_string();
        let backquote = self.f.sharp
            && !s
                .chars()
                .any(|c| c == '`' || c == '\u{feff}' || (c.is_control() && c != '\t'));
        let mut q = String::with_capacity(s.len() + 2);
        if backquote {
            q.push('`');
            q.push_str(&s);
            q.push('`');
        } else {
            quote(&mut q, &s, self.f.plus)?;
        }
        self.pad(&q);
        Ok(())
    }

    /// Go's `fmtSbx`.
    fn hex_string(&mut self, s: &str, upper: bool) {
        let b = s.as_bytes();
        let len = self.f.prec.map_or(b.len(), |p| p.min(b.len()));
        let x = if upper { 'X' } else { 'x' };
        let mut width = 2 * len;
        if width > 0 {
            if self.f.space {
                if self.f.sharp {
                    width *= 2;
                }
                width += len - 1;
            } else if self.f.sharp {
                width += 2;
            }
        } else {
            if let Some(w) = self.f.wid {
                self.padding(w);
            }
            return;
        }
        let wid = self.f.wid.unwrap_or(0);
        if wid > width && !self.f.minus {
            self.padding(wid - width);
        }
        if self.f.sharp {
            self.out.push('0');
            self.out.push(x);
        }
        for (i, c) in b[..len].iter().enumerate() {
            if self.f.space && i > 0 {
                self.out.push(' ');
                if self.f.sharp {
                    self.out.push('0');
                    self.out.push(x);
                }
            }
            let _ = if upper {
                write!(self.out, "{c:02X}")
            } else {
                write!(self.out, "{c:02x}")
            };
        }
        if wid > width && self.f.minus {
            self.padding(wid - width);
        }
    }

    /// Go's `fmtInteger` for an `int64`.
    fn integer(&mut self, v: i64, verb: char) -> Out<()> {
        let base: u32 = match verb {
            'b' => 2,
            'o' => 8,
            'x' | 'X' => 16,
            _ => 10,
        };
        // `%#v` of a signed integer is its `%v`.
        let negative = v < 0;
        let u = v.unsigned_abs();
        if self.f.prec == Some(0) && v == 0 {
            let zero = self.f.zero;
            self.f.zero = false;
            let w = self.f.wid.unwrap_or(0);
            self.padding(w);
            self.f.zero = zero;
            return Ok(());
        }
        let mut prec = 0usize;
        let mut zero = self.f.zero;
        if let Some(p) = self.f.prec {
            prec = p;
            zero = false;
        } else if self.f.zero && !self.f.minus && self.f.wid.is_some_and(|w| w > 0) {
            prec = self.f.wid.unwrap_or(0);
            if negative || self.f.plus || self.f.space {
                prec = prec.saturating_sub(1);
            }
        }
        let mut digits = match base {
            2 => format!("{u:b}"),
            8 => format!("{u:o}"),
            16 if verb == 'X' => format!("{u:X}"),
            16 => format!("{u:x}"),
            _ => u.to_string(),
        };
        if digits.len() < prec {
            digits = "0".repeat(prec - digits.len()) + &digits;
        }
        let mut s = String::new();
        if negative {
            s.push('-');
        } else if self.f.plus {
            s.push('+');
        } else if self.f.space {
            s.push(' ');
        }
        if self.f.sharp {
            match base {
                2 => s.push_str("0b"),
                8 if !digits.starts_with('0') => s.push('0'),
                16 => s.push_str(if verb == 'X' { "0X" } else { "0x" }),
                _ => {}
            }
        }
        s.push_str(&digits);
        let saved = self.f.zero;
        self.f.zero = zero;
        self.pad(&s);
        self.f.zero = saved;
        Ok(())
    }

    /// `%O`, `%c`, `%q`, `%U` of an integer.
    fn rune(&mut self, v: i64, verb: char) -> Out<()> {
        match verb {
            'c' => {
                let c = u32::try_from(v)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{fffd}');
                let mut b = [0u8; 4];
                let s = c.encode_utf8(&mut b).to_string();
                self.pad(&s);
                Ok(())
            }
            'q' => {
                let c = u32::try_from(v)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{fffd}');
                let mut s = String::from("'");
                quote_char(&mut s, c, '\'', self.f.plus);
                s.push('\'');
                self.pad(&s);
                Ok(())
            }
            'U' => {
                let mut s = format!("{:X}", v as u64);
                let prec = self.f.prec.filter(|p| *p > 4).unwrap_or(4);
                if s.len() < prec {
                    s = "0".repeat(prec - s.len()) + &s;
                }
                let mut s = format!("U+{s}");
                // `%#U` adds the character, quoted, when it is printable.
                if let Some(c) = u32::try_from(v).ok().and_then(char::from_u32)
                    && self.f.sharp
                    && is_print(c)
                {
                    let _ = write!(s, " '{c}'");
                }
                let zero = self.f.zero;
                self.f.zero = false;
                self.pad(&s);
                self.f.zero = zero;
                Ok(())
            }
            _ => Err(Unsure("%O of an integer")),
        }
    }

    /// Go's `fmtFloat` for `e E f g G` (`v` is `g`).
    fn float(&mut self, v: f64, verb: char, default_prec: Option<usize>) -> Out<()> {
        // `%#v` of a float is its `%v` (Go's `sharpV` adds nothing here).
        let prec = self.f.prec.or(default_prec);
        let mut body = match verb {
            'b' => binary_float(v),
            'x' | 'X' => hex_float(v, prec, verb),
            _ => format_float(v, verb, prec),
        };
        if self.f.sharp && verb != 'b' {
            body = sharp_float(&body, verb, prec);
        }
        let sign = if v.is_sign_negative() {
            '-'
        } else if self.f.plus {
            '+'
        } else if self.f.space {
            ' '
        } else {
            '\0'
        };
        if sign == '\0' {
            self.pad(&body);
            return Ok(());
        }
        let mut num = String::with_capacity(body.len() + 1);
        num.push(sign);
        num.push_str(&body);
        if self.f.zero && !self.f.minus && self.f.wid.is_some_and(|w| w > num.len()) {
            self.out.push(sign);
            let saved = self.f.wid;
            self.f.wid = saved.map(|w| w - 1);
            self.pad(&body);
            self.f.wid = saved;
        } else {
            self.pad(&num);
        }
        Ok(())
    }

    /// `*big.Int`'s own `Format` (math/big `intconv.go`).
    fn big(&mut self, neg: bool, digits: &str, verb: char) -> Out<()> {
        let f = self.f;
        let sign = if neg {
            "-"
        } else if f.plus || f.plus_v {
            "+"
        } else if f.space {
            " "
        } else {
            ""
        };
        let n: num_bigint_digits::Digits = num_bigint_digits::Digits(digits);
        let body = match verb {
            'd' | 's' | 'v' => digits.to_string(),
            'b' => n.radix(2)?,
            'o' | 'O' => n.radix(8)?,
            'x' => n.radix(16)?,
            'X' => n.radix(16)?.to_ascii_uppercase(),
            _ => {
                let _ = write!(
                    self.out,
                    "%!{verb}(big.Int={}{digits})",
                    if neg { "-" } else { "" }
                );
                return Ok(());
            }
        };
        let prefix = match verb {
            'O' => "0o",
            'b' if f.sharp || f.sharp_v => "0b",
            'o' if f.sharp || f.sharp_v => "0",
            'x' if f.sharp || f.sharp_v => "0x",
            'X' if f.sharp || f.sharp_v => "0X",
            _ => "",
        };
        let mut zeros = 0;
        if let Some(p) = f.prec {
            zeros = p.saturating_sub(body.len());
        }
        let length = sign.len() + prefix.len() + zeros + body.len();
        let (mut left, mut right) = (0, 0);
        if let Some(w) = f.wid.filter(|w| length < *w) {
            let d = w - length;
            if f.minus {
                right = d;
            } else if f.zero && f.prec.is_none() {
                zeros = d;
            } else {
                left = d;
            }
        }
        self.out.extend(std::iter::repeat_n(' ', left));
        self.out.push_str(sign);
        self.out.push_str(prefix);
        self.out.extend(std::iter::repeat_n('0', zeros));
        self.out.push_str(&body);
        self.out.extend(std::iter::repeat_n(' ', right));
        Ok(())
    }
}

/// Decimal digits of a big integer, rewritten in another base.
mod num_bigint_digits {
    use super::{Out, Unsure};

    pub(super) struct Digits<'a>(pub(super) &'a str);

    impl Digits<'_> {
        pub(super) fn radix(&self, base: u32) -> Out<String> {
            // Repeated division of the decimal digits by `base`.
            let mut n: Vec<u32> = self.0.bytes().map(|b| u32::from(b - b'0')).collect();
            if n.is_empty() || n.len() > 400 {
                return Err(Unsure("a big integer of that size"));
            }
            let mut out = Vec::new();
            while !(n.is_empty() || n.len() == 1 && n[0] == 0) {
                let mut rem = 0u32;
                let mut q = Vec::with_capacity(n.len());
                for d in &n {
                    let cur = rem * 10 + d;
                    q.push(cur / base);
                    rem = cur % base;
                }
                out.push(char::from_digit(rem, base).unwrap_or('0'));
                let first = q.iter().position(|d| *d != 0).unwrap_or(q.len() - 1);
                n = q[first..].to_vec();
            }
            if out.is_empty() {
                out.push('0');
            }
            Ok(out.iter().rev().collect())
        }
    }
}

/// Go's `tooLarge`.
fn too_large(x: i64) -> bool {
    !(-1_000_000..=1_000_000).contains(&x)
}

/// Go's `parsenum` from byte `i`: the number, whether there was one, and
/// the index after it (the end of the format on overflow).
fn parse_num(s: &[u8], mut i: usize) -> (i64, bool, usize) {
    if i >= s.len() {
        return (0, false, s.len());
    }
    let (mut num, mut isnum) = (0i64, false);
    while i < s.len() && s[i].is_ascii_digit() {
        if too_large(num) {
            return (0, false, s.len());
        }
        num = num * 10 + i64::from(s[i] - b'0');
        isnum = true;
        i += 1;
    }
    (num, isnum, i)
}

/// Go's `intFromArg`: an argument used as a width or precision.
fn int_from_arg(args: &[Arg], n: usize) -> (i64, bool, usize) {
    if n < args.len() {
        let (num, ok) = match args[n] {
            Arg::Int(i) if !too_large(i) => (i, true),
            _ => (0, false),
        };
        (num, ok, n + 1)
    } else {
        (0, false, n)
    }
}

/// `fmt.Sprintf(format, args...)` over OPA's arguments.
pub(super) fn format_values(format: &str, values: &[Value]) -> Out<String> {
    let args: Vec<Arg> = values.iter().map(convert).collect::<Out<_>>()?;
    let mut p = Printer {
        out: String::with_capacity(format.len() + 16),
        f: Flags::default(),
    };
    let s = format.as_bytes();
    let end = s.len();
    let mut arg_num = 0usize;
    let mut reordered = false;
    let mut i = 0usize;
    // Go's `argNumber`: an explicit `[n]` at `i`.
    let arg_number = |arg_num: usize, i: usize, reordered: &mut bool, good: &mut bool| {
        if i >= end || s[i] != b'[' {
            return (arg_num, i, false);
        }
        *reordered = true;
        // parseArgNumber
        let rest = &s[i..];
        let (index, wid, ok) = if rest.len() < 3 {
            (0i64, 1usize, false)
        } else {
            match rest.iter().skip(1).position(|&c| c == b']') {
                Some(pos) => {
                    let close = pos + 1;
                    let (w, ok, newi) = parse_num(&rest[..close], 1);
                    if !ok || newi != close {
                        (0, close + 1, false)
                    } else {
                        (w - 1, close + 1, true)
                    }
                }
                None => (0, 1, false),
            }
        };
        if ok && index >= 0 && (index as usize) < args.len() {
            return (index as usize, i + wid, true);
        }
        *good = false;
        (arg_num, i + wid, ok)
    };
    while i < end {
        let mut good = true;
        let last = i;
        while i < end && s[i] != b'%' {
            i += 1;
        }
        if i > last {
            p.out.push_str(&format[last..i]);
        }
        if i >= end {
            break;
        }
        i += 1;
        p.f = Flags::default();
        let mut simple = false;
        while i < end {
            match s[i] {
                b'#' => p.f.sharp = true,
                b'0' => p.f.zero = true,
                b'+' => p.f.plus = true,
                b'-' => p.f.minus = true,
                b' ' => p.f.space = true,
                c => {
                    if c.is_ascii_lowercase() && arg_num < args.len() {
                        let verb = c as char;
                        if verb == 'v' {
                            p.f.sharp_v = p.f.sharp;
                            p.f.sharp = false;
                            p.f.plus_v = p.f.plus;
                            p.f.plus = false;
                        }
                        if verb == 'w' {
                            return Err(Unsure("%w"));
                        }
                        p.print_arg(&args[arg_num], verb)?;
                        arg_num += 1;
                        i += 1;
                        simple = true;
                    }
                    break;
                }
            }
            i += 1;
        }
        if simple {
            continue;
        }
        let mut after_index;
        (arg_num, i, after_index) = arg_number(arg_num, i, &mut reordered, &mut good);
        if i < end && s[i] == b'*' {
            i += 1;
            let (w, ok, n) = int_from_arg(&args, arg_num);
            arg_num = n;
            p.f.wid = if ok {
                Some(w.unsigned_abs() as usize)
            } else {
                None
            };
            if !ok {
                p.out.push_str("%!(BADWIDTH)");
                // Go keeps wid = 0 and widPresent false.
            }
            if w < 0 {
                p.f.minus = true;
                p.f.zero = false;
            }
            after_index = false;
        } else {
            let (w, ok, n) = parse_num(s, i);
            i = n;
            p.f.wid = ok.then_some(w as usize);
            if after_index && ok {
                good = false;
            }
        }
        if i + 1 < end && s[i] == b'.' {
            i += 1;
            if after_index {
                good = false;
            }
            (arg_num, i, after_index) = arg_number(arg_num, i, &mut reordered, &mut good);
            if i < end && s[i] == b'*' {
                i += 1;
                let (pr, ok, n) = int_from_arg(&args, arg_num);
                arg_num = n;
                let ok = ok && pr >= 0;
                p.f.prec = ok.then_some(pr as usize);
                if !ok {
                    p.out.push_str("%!(BADPREC)");
                }
                after_index = false;
            } else {
                let (pr, ok, n) = parse_num(s, i);
                i = n;
                p.f.prec = Some(if ok { pr as usize } else { 0 });
            }
        }
        if !after_index {
            (arg_num, i, _) = arg_number(arg_num, i, &mut reordered, &mut good);
        }
        if i >= end {
            p.out.push_str("%!(NOVERB)");
            break;
        }
        let verb = format[i..].chars().next().unwrap_or('\u{fffd}');
        i += verb.len_utf8();
        if verb == '%' {
            p.out.push('%');
        } else if !good {
            let _ = write!(p.out, "%!{verb}(BADINDEX)");
        } else if arg_num >= args.len() {
            let _ = write!(p.out, "%!{verb}(MISSING)");
        } else {
            if verb == 'w' {
                return Err(Unsure("%w"));
            }
            if verb == 'v' {
                p.f.sharp_v = p.f.sharp;
                p.f.sharp = false;
                p.f.plus_v = p.f.plus;
                p.f.plus = false;
            }
            p.print_arg(&args[arg_num], verb)?;
            arg_num += 1;
        }
    }
    if !reordered && arg_num < args.len() {
        p.f = Flags::default();
        p.out.push_str("%!(EXTRA ");
        for (j, a) in args[arg_num..].iter().enumerate() {
            if j > 0 {
                p.out.push_str(", ");
            }
            p.out.push_str(a.type_name());
            p.out.push('=');
            p.print_arg(a, 'v')?;
        }
        p.out.push(')');
    }
    Ok(p.out)
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
