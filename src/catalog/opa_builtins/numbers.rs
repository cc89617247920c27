//! `format_int` as OPA computes it (`topdown/strings.go`): the number read
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
}
