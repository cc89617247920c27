//! `units.parse_bytes` and `units.parse` as OPA computes them
//! (`topdown/parse_bytes.go`, `topdown/parse_units.go`).
//!
//! regorus splits the amount from the unit at the last digit, accepts units
//! OPA does not know (`μ`, `Q`, `da`) and answers `0` for `"."`; OPA splits at
//! the first byte that cannot be part of a number, refuses what Go's
//! `math/big` cannot parse, and computes with `big.Float` at 64 bits
//! (`parse_bytes`: `"1e-3k"` is 0, the 64-bit rounding of 0.001 times 1000
//! truncated) or exactly with `big.Rat` (`parse`). Both are reproduced here
//! with big integers, rounding as `math/big` rounds (to nearest, ties to
//! even), so every string gets OPA's answer or OPA's error.

use num_bigint::{BigInt, BigUint, Sign};
use num_traits::{One, ToPrimitive, Zero};
use regorus::Value;

use super::{error, go_lower};

/// Results wider than this many bits (OPA writes `1e999999` bytes out in a
/// million digits) are refused rather than computed.
const MAX_BITS: u64 = 1 << 16;

/// Go's `extractNumAndUnit`: the amount runs up to the first byte that is
/// neither a digit, `.`, `+`, `-` nor an `e` that starts an exponent.
/// `Err` when an exponent has more than six digits.
fn split(s: &str) -> Result<(&str, &str), ()> {
    let b = s.as_bytes();
    let mut first = None;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let numeric = c.is_ascii_digit() || c == b'.';
        if !numeric && !matches!(c, b'e' | b'E' | b'+' | b'-') {
            first = Some(i);
            break;
        }
        if c == b'e' || c == b'E' {
            let next = b.get(i + 1).copied();
            if !next.is_some_and(|n| n.is_ascii_digit() || n == b'+' || n == b'-') {
                first = Some(i);
                break;
            }
            if matches!(next, Some(b'+' | b'-')) {
                i += 1;
            }
            let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
            if digits > 6 {
                return Err(());
            }
        }
        i += 1;
    }
    Ok(match first {
        None => (s, ""),
        Some(0) => ("", s),
        Some(i) => (&s[..i], &s[i..]),
    })
}

/// A decimal as Go's `big.Float.Parse` (base 0) and `big.Rat.SetString`
/// read the amounts that reach them: `[+-]?(d+.?d*|.d+)([eE][+-]?d+)?`,
/// as its sign, its digits as an integer and its power of ten.
pub(super) fn decimal(s: &str) -> Option<(bool, BigUint, i64)> {
    let (negative, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (whole, fraction) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, ""),
    };
    let all_digits = |t: &str| t.bytes().all(|c| c.is_ascii_digit());
    if whole.len() + fraction.len() == 0 || !all_digits(whole) || !all_digits(fraction) {
        return None;
    }
    let mut exp: i64 = 0;
    if let Some(e) = exponent {
        let (minus, digits) = match e.as_bytes().first() {
            Some(b'-') => (true, &e[1..]),
            Some(b'+') => (false, &e[1..]),
            _ => (false, e),
        };
        // `split` let no more than six digits through.
        if digits.is_empty() || digits.len() > 6 || !all_digits(digits) {
            return None;
        }
        exp = digits.parse().ok()?;
        if minus {
            exp = -exp;
        }
    }
    let digits = format!("{whole}{fraction}");
    let n = BigUint::parse_bytes(digits.as_bytes(), 10)?;
    Some((negative, n, exp - fraction.len() as i64))
}

/// A finite `big.Float` of magnitude `m × 2^e`.
#[derive(Clone)]
pub(super) struct Float {
    pub(super) m: BigUint,
    pub(super) e: i64,
}

impl Float {
    fn int(m: BigUint) -> Float {
        Float { m, e: 0 }
    }

    /// Rounded to `prec` bits, to nearest, ties to even (`big.ToNearestEven`).
    pub(super) fn round(self, prec: u64) -> Float {
        let bits = self.m.bits();
        if bits <= prec {
            return self;
        }
        let shift = bits - prec;
        let mut q = &self.m >> shift;
        let rest = &self.m - (&q << shift);
        let half = BigUint::one() << (shift - 1);
        if rest > half || (rest == half && q.bit(0)) {
            q += 1u32;
        }
        let mut e = self.e + shift as i64;
        if q.bits() > prec {
            q >>= 1;
            e += 1;
        }
        Float { m: q, e }
    }

    pub(super) fn mul(&self, other: &Float, prec: u64) -> Float {
        Float {
            m: &self.m * &other.m,
            e: self.e + other.e,
        }
        .round(prec)
    }

    /// The quotient, correctly rounded: enough quotient bits, and a sticky
    /// bit below them for a nonzero remainder.
    pub(super) fn quo(&self, other: &Float, prec: u64) -> Float {
        let s = (prec + 2 + other.m.bits()).saturating_sub(self.m.bits());
        let num = &self.m << s;
        let mut q = &num / &other.m;
        let mut e = self.e - other.e - s as i64;
        if !(num - &q * &other.m).is_zero() {
            q = (q << 1u32) | BigUint::one();
            e -= 1;
        }
        Float { m: q, e }.round(prec)
    }
}

/// Go's `Float.pow5` on a float of precision `prec`.
fn pow5(n: u64, prec: u64) -> Float {
    if n <= 27 {
        return Float::int(BigUint::from(5u32).pow(n as u32));
    }
    let mut z = Float::int(BigUint::from(5u32).pow(27));
    let mut f = Float::int(BigUint::from(5u32));
    let mut n = n - 27;
    while n > 0 {
        if n & 1 != 0 {
            z = z.mul(&f, prec);
        }
        f = f.mul(&f, prec + 64);
        n >>= 1;
    }
    z
}

/// Go's `new(big.Float).SetString(num)`: the digits exactly, times the
/// power of five rounded to 128 bits, rounded once to 64 bits.
pub(super) fn parse_float(digits: BigUint, exp10: i64) -> Float {
    let z = Float { m: digits, e: 0 };
    let z = if exp10 == 0 {
        z.round(64)
    } else if exp10 < 0 {
        z.quo(&pow5(exp10.unsigned_abs(), 128), 64)
    } else {
        z.mul(&pow5(exp10 as u64, 128), 64)
    };
    Float {
        m: z.m,
        e: z.e + exp10,
    }
}

/// The integer part (truncated toward zero) of the decimal `text` read as
/// Go's `new(big.Float).SetString(text)` reads it, at 64 bits: what OPA's
/// `builtins.NumberToFloat(n).Int(nil)` makes of a number (`format_int`).
/// `None` for text that is not a decimal.
pub(super) fn big_float_int(text: &str) -> Option<BigInt> {
    let (negative, digits, exp10) = decimal(text)?;
    let f = parse_float(digits, exp10);
    let magnitude = if f.e >= 0 {
        f.m << (f.e as u64)
    } else {
        f.m >> (f.e.unsigned_abs())
    };
    Some(BigInt::from_biguint(
        if negative { Sign::Minus } else { Sign::Plus },
        magnitude,
    ))
}

/// An integer as regorus holds it: exactly up to 128 bits (OPA's too), as
/// the nearest double past them.
pub(super) fn number(negative: bool, magnitude: BigUint) -> Value {
    let n = BigInt::from_biguint(if negative { Sign::Minus } else { Sign::Plus }, magnitude);
    match n.to_i128() {
        Some(i) => Value::from(i),
        None => Value::from_json_str(&n.to_string()).unwrap_or(Value::Undefined),
    }
}

/// `units.parse_bytes(s)`.
pub(super) fn parse_bytes(a: &[Value]) -> Option<anyhow::Result<Value>> {
    const NAME: &str = "units.parse_bytes";
    let Value::String(raw) = &a[0] else {
        return None;
    };
    let s = go_lower(raw).replace('"', "");
    if s.contains(' ') {
        return error(NAME, "spaces not allowed in resource strings");
    }
    let Ok((num, unit)) = split(&s) else {
        return error(NAME, "exponent too large");
    };
    if num.is_empty() {
        return error(NAME, "no byte amount provided");
    }
    let multiple: u64 = match unit {
        "" => 1,
        "kb" | "k" => 1000,
        "kib" | "ki" => 1 << 10,
        "mb" | "m" => 1000u64.pow(2),
        "mib" | "mi" => 1 << 20,
        "gb" | "g" => 1000u64.pow(3),
        "gib" | "gi" => 1 << 30,
        "tb" | "t" => 1000u64.pow(4),
        "tib" | "ti" => 1 << 40,
        "pb" | "p" => 1000u64.pow(5),
        "pib" | "pi" => 1 << 50,
        "eb" | "e" => 1000u64.pow(6),
        "eib" | "ei" => 1 << 60,
        _ => return error(NAME, format!("byte unit {unit} not recognized")),
    };
    let Some((negative, digits, exp10)) = decimal(num) else {
        return error(NAME, "could not parse byte amount to a number");
    };
    if digits.is_zero() {
        return Some(Ok(Value::from(0u64)));
    }
    let x = parse_float(digits, exp10);
    let x = x.mul(&Float::int(BigUint::from(multiple)), 64);
    // `Float.Int`: truncated toward zero.
    let magnitude = if x.e >= 0 {
        if x.e as u64 + x.m.bits() > MAX_BITS {
            return error(NAME, "byte amount too large");
        }
        x.m << x.e as u64
    } else {
        x.m >> x.e.unsigned_abs()
    };
    Some(Ok(number(negative, magnitude)))
}

/// `units.parse(s)`: exact (`big.Rat`), except `m`, whose factor is the
/// double nearest 0.001; a fraction is written with ten decimals.
pub(super) fn parse(a: &[Value]) -> Option<anyhow::Result<Value>> {
    const NAME: &str = "units.parse";
    let Value::String(raw) = &a[0] else {
        return None;
    };
    let s = raw.replace('"', "");
    if s.contains(' ') {
        return error(NAME, "spaces not allowed in resource strings");
    }
    let Ok((num, unit)) = split(&s) else {
        return error(NAME, "exponent too large");
    };
    if num.is_empty() {
        return error(NAME, "no amount provided");
    }
    // Lower case after the first byte (`unit[1:]`): a unit starting with a
    // multi-byte character is cut inside it, and Go writes the bytes.
    let unit: String = if unit.len() > 1 {
        let b = unit.as_bytes();
        let rest = go_lower(&String::from_utf8_lossy(&b[1..]));
        let mut bytes = vec![b[0]];
        bytes.extend(rest.bytes());
        String::from_utf8_lossy(&bytes).into_owned()
    } else {
        unit.to_string()
    };
    // The factor as a fraction `n / 2^d`.
    let (factor, shift): (BigUint, u64) = match unit.as_str() {
        "m" => {
            // 0.001 as a double: mantissa × 2^exponent, exactly.
            let bits = 0.001f64.to_bits();
            let exponent = ((bits >> 52) & 0x7ff) as i64 - 1075;
            let mantissa = (bits & ((1 << 52) - 1)) | (1 << 52);
            (BigUint::from(mantissa), exponent.unsigned_abs())
        }
        "" => (BigUint::one(), 0),
        "k" | "K" => (BigUint::from(1000u32), 0),
        "ki" | "Ki" => (BigUint::from(1u64 << 10), 0),
        "M" => (BigUint::from(1000u64.pow(2)), 0),
        "mi" | "Mi" => (BigUint::from(1u64 << 20), 0),
        "g" | "G" => (BigUint::from(1000u64.pow(3)), 0),
        "gi" | "Gi" => (BigUint::from(1u64 << 30), 0),
        "t" | "T" => (BigUint::from(1000u64.pow(4)), 0),
        "ti" | "Ti" => (BigUint::from(1u64 << 40), 0),
        "p" | "P" => (BigUint::from(1000u64.pow(5)), 0),
        "pi" | "Pi" => (BigUint::from(1u64 << 50), 0),
        "e" | "E" => (BigUint::from(1000u64.pow(6)), 0),
        "ei" | "Ei" => (BigUint::from(1u64 << 60), 0),
        _ => return error(NAME, format!("unit {unit} not recognized")),
    };
    let Some((negative, digits, exp10)) = decimal(num) else {
        return error(NAME, "could not parse amount to a number");
    };
    // digits × 10^exp10 × factor / 2^shift, as numerator / denominator.
    let ten = BigUint::from(10u32);
    let mut numerator = digits * factor;
    let mut denominator = BigUint::one() << shift;
    if exp10 >= 0 {
        // 10^exp10 has about 3.33 bits per digit.
        if numerator.bits() + exp10 as u64 * 4 > MAX_BITS {
            return error(NAME, "amount too large");
        }
        numerator *= ten.pow(exp10 as u32);
    } else {
        if exp10.unsigned_abs() * 4 > MAX_BITS {
            return error(NAME, "amount too small");
        }
        denominator *= ten.pow(exp10.unsigned_abs() as u32);
    }
    let whole: BigUint = &numerator / &denominator;
    let rest = &numerator - &whole * &denominator;
    let sign = if negative && !numerator.is_zero() {
        "-"
    } else {
        ""
    };
    if rest.is_zero() {
        return Some(Ok(number(negative, whole)));
    }
    // `Rat.FloatString(10)`: ten decimals, halves away from zero.
    let scale = ten.pow(10);
    let scaled = rest * &scale;
    let mut fraction = &scaled / &denominator;
    let left = scaled - &fraction * &denominator;
    let mut whole = whole;
    if left * 2u32 >= denominator {
        fraction += 1u32;
        if fraction == scale {
            fraction = BigUint::zero();
            whole += 1u32;
        }
    }
    let text = format!("{sign}{whole}.{:010}", fraction.to_u64().unwrap_or(0));
    Some(Ok(Value::from_json_str(&text).unwrap_or(Value::Undefined)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(s: &str) -> String {
        match parse_bytes(&[Value::from(s)]).unwrap() {
            Ok(v) => v.to_json_str().unwrap(),
            Err(e) => format!("error: {e}"),
        }
    }

    fn units(s: &str) -> String {
        match parse(&[Value::from(s)]).unwrap() {
            Ok(v) => v.to_json_str().unwrap(),
            Err(e) => format!("error: {e}"),
        }
    }

    /// OPA v1's answers (`opa_bindings`), where regorus' differ.
    #[test]
    fn parse_bytes_as_opa() {
        assert!(bytes(".").contains("could not parse byte amount"));
        assert_eq!(bytes("1e"), "1000000000000000000");
        assert!(bytes("1e+").contains("could not parse"));
        assert_eq!(bytes("1.5"), "1");
        assert_eq!(bytes("-1.5k"), "-1500");
        assert_eq!(bytes("10K"), "10000");
        assert!(bytes("1e1000000").contains("exponent too large"));
        assert_eq!(bytes("0.1"), "0");
        assert_eq!(bytes("1KiB"), "1024");
        assert_eq!(bytes("1M"), "1000000");
        assert!(bytes("1μ").contains("byte unit μ not recognized"));
        assert!(bytes("1.2.3").contains("could not parse"));
        assert_eq!(bytes("+1"), "1");
        assert_eq!(bytes("\"1\"k"), "1000");
        assert!(bytes("1 k").contains("spaces"));
        assert!(bytes("1\tk").contains("byte unit \tk not recognized"));
        assert_eq!(bytes("1e-3k"), "0");
        assert_eq!(bytes("0.3m"), "300000");
        assert!(bytes("k").contains("no byte amount"));
        let big = parse_bytes(&[Value::from("12345678901234567890123")]);
        assert_eq!(
            big.unwrap().unwrap().as_i128().unwrap(),
            12345678901234567889920
        );
    }

    #[test]
    fn parse_as_opa() {
        assert_eq!(units("1.5"), "1.5");
        assert_eq!(units("1m"), "0.001");
        assert_eq!(units("0.3m"), "0.0003");
        assert_eq!(units("1e-3k"), "1");
        assert!(units("1KiB").contains("unit Kib not recognized"));
        assert!(units("1mb").contains("unit mb not recognized"));
        assert_eq!(units("1e"), "1000000000000000000");
        assert!(units(".").contains("could not parse amount"));
    }
}
