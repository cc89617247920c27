//! Go's float formatting (`strconv.FormatFloat` and `fmt`'s `fmtF`,
//! `fmtE`, `%#g`, `%b`, `%x`) on a float's exact decimal digits, for the
//! verbs `printer` formats and for [`super::json_float`]. The shortest digits
//! of a float are the parent's (`shortest`); flags, widths and signs are
//! `printer`'s.

use std::fmt::Write as _;

use super::{digits_of, shortest};

/// Go's `fmtF`: `digits` with the point at `dp`, `prec` fraction digits
/// (`None`: as many as there are).
pub(super) fn fixed(out: &mut String, digits: &str, dp: i32, prec: Option<usize>) {
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
pub(super) fn format_float(f: f64, verb: char, prec: Option<usize>) -> String {
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
pub(super) fn sharp_float(body: &str, verb: char, prec: Option<usize>) -> String {
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
pub(super) fn binary_float(v: f64) -> String {
    let (mant, exp) = float_parts(v);
    let e = exp - 52;
    format!("{mant}p{}{}", if e < 0 { '-' } else { '+' }, e.abs())
}

/// Go's `%x` / `%X` of a float (`strconv` format `x`), without the sign.
pub(super) fn hex_float(v: f64, prec: Option<usize>, verb: char) -> String {
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
