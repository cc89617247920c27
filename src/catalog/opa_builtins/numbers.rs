//! `format_int` and `%` as OPA computes them. `format_int`: as OPA computes it (`topdown/strings.go`): the number read
//! as a `big.Float` of 64 bits (`builtins.NumberToFloat`), truncated toward
//! zero, written in base 2, 8, 10 or 16.
//!
//! regorus formats the double itself, so a double of 2^53 or more (where
//! doubles and 64-bit floats part ways) gets other digits:
//! `format_int(1e300, 10)` is `1` and 300 zeros in regorus, the 64-bit
//! rounding of 10^300 in OPA. OPA reads the number's JSON text; regent
//! holds the double, whose shortest decimal form (`{:e}`) is read the same
//! way, which gives OPA's answer for every number a JSON parser turns into
//! that double from its shortest form (what clients send). Integers held
//! exactly and doubles below 2^53 are left to regorus, which agrees.

use num_bigint::{BigInt, Sign};
use regorus::Value;

/// `format_int(number, base)`.
pub(super) fn format_int(a: &[Value]) -> Option<anyhow::Result<Value>> {
    if !matches!(&a[0], Value::Number(_)) {
        return None;
    }
    // regorus' number types are private: a double is what serializes as one.
    let f = match serde_json::to_value(&a[0]) {
        Ok(serde_json::Value::Number(n)) if n.is_f64() => n.as_f64()?,
        _ => return None,
    };
    if !f.is_finite() || f.abs() < 9_007_199_254_740_992.0 {
        return None;
    }
    let base = match &a[1] {
        Value::Number(b) => b.as_u64()?,
        _ => return None,
    };
    if ![2, 8, 10, 16].contains(&base) {
        return None;
    }
    let i = super::units::big_float_int(&format!("{f:e}"))?;
    Some(Ok(Value::from(i.to_str_radix(base as u32))))
}

/// `a % b` as OPA computes it (`topdown/arithmetic.go`, `builtinRem`):
/// the remainder, truncated (the sign of `a`), of the integers the two
/// numbers' texts denote exactly, so an integral float past 2^53 (which
/// regorus refuses) is the integer its shortest text spells: `1e300 % 7`
/// is 10^300 mod 7. `Ok` with whether regorus answers the same; `Err` for
/// OPA's errors (a fraction, modulo by zero); `None` for operands that are
/// not numbers (a type error in both).
pub(in crate::catalog) fn rem(a: &Value, b: &Value) -> Option<anyhow::Result<(Value, bool)>> {
    let (Value::Number(x), Value::Number(y)) = (a, b) else {
        return None;
    };
    if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
        if y == 0 {
            return Some(Err(anyhow::anyhow!("modulo by zero")));
        }
        return Some(Ok((Value::from(x.wrapping_rem(y)), true)));
    }
    // (the integer, whether regorus holds it exactly)
    let exact = |v: &Value| -> Option<(BigInt, bool)> {
        match serde_json::to_value(v).ok()? {
            serde_json::Value::Number(n) if n.is_f64() => {
                let f = n.as_f64()?;
                if !f.is_finite() || f.fract() != 0.0 {
                    return None;
                }
                let text = format!("{:e}", f.abs());
                let (mantissa, exp) = text.split_once('e')?;
                let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
                let shift = exp.parse::<i64>().ok()? - (digits.len() as i64 - 1);
                let mut i: BigInt = digits.parse().ok()?;
                i *= BigInt::from(10u8).pow(u32::try_from(shift).ok()?);
                if f < 0.0 {
                    i = -i;
                }
                Some((i, f.abs() <= 9_007_199_254_740_992.0))
            }
            _ => match v {
                Value::Number(n) => Some((n.format_decimal().parse().ok()?, true)),
                _ => None,
            },
        }
    };
    let (Some((x, xr)), Some((y, yr))) = (exact(a), exact(b)) else {
        return Some(Err(anyhow::anyhow!("modulo on floating-point number")));
    };
    if y.sign() == Sign::NoSign {
        return Some(Err(anyhow::anyhow!("modulo by zero")));
    }
    let r = x % y;
    let negative = r.sign() == Sign::Minus;
    Some(Ok((
        super::units::number(negative, r.magnitude().clone()),
        xr && yr,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(json: &str, base: u64) -> Option<String> {
        let args = [Value::from_json_str(json).unwrap(), Value::from(base)];
        format_int(&args).map(|r| r.unwrap().as_string().unwrap().to_string())
    }

    #[test]
    fn huge_doubles_are_read_as_64_bit_floats() {
        // OPA's answer, from its own engine.
        assert_eq!(
            fmt("1e300", 10).unwrap(),
            "1000000000000000000008997324079559193870523944273290747938260082321265646596180935755849152083750497190350372508614274835903592556184672983913096260520748646287327135641843653294084255107606016789726652932370030551382947620994540294772781889620606179267611627097410650567187386105690089424915104006144"
        );
        assert_eq!(fmt("-1e300", 10).unwrap().chars().next(), Some('-'));
        // Small numbers stay regorus'.
        assert_eq!(fmt("12.5", 10), None);
        assert_eq!(fmt("7", 2), None);
    }

    fn rem_of(a: &str, b: &str) -> Result<String, String> {
        let (a, b) = (
            Value::from_json_str(a).unwrap(),
            Value::from_json_str(b).unwrap(),
        );
        match rem(&a, &b).unwrap() {
            Ok((v, _)) => Ok(serde_json::to_string(&v).unwrap()),
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn remainders_as_opa() {
        // OPA's answers, from its own engine.
        assert_eq!(rem_of("7", "-3").unwrap(), "1");
        assert_eq!(rem_of("-7", "3").unwrap(), "-1");
        assert_eq!(rem_of("3.0", "2").unwrap(), "1");
        assert_eq!(rem_of("1e300", "1e300").unwrap(), "0");
        assert_eq!(rem_of("1e300", "7").unwrap(), "1");
        assert_eq!(rem_of("18446744073709551615", "10").unwrap(), "5");
        assert!(rem_of("3.5", "2").is_err());
        assert!(rem_of("3", "0").is_err());
    }
}
