//! `format_int`, `sum`, `product`, `round`, `ceil`, `floor`, `abs`,
//! `numbers.range_step`, `to_number` and `%` as OPA computes them, or a refusal where regent's
//! numbers cannot hold OPA's value.
//!
//! `sum` and `product` of fractions are OPA's `big.Float` folds
//! ([`super::arith::fold`]); regorus adds doubles (`sum([0.1, 0.2])` is
//! `0.30000000000000004` there, `0.3` in OPA). `round`, `ceil`, `floor`
//! and `abs` of a fraction are integers in OPA (`round(2.5)` is written
//! `3`, not `3.0`); of a double of 2^53 or more they depend on the text the
//! client wrote, which regent no longer knows, and OPA's `ceil` and `floor`
//! of a number between -1 and 0 are 1 and 0 (its `arithCeil` and
//! `arithFloor` read the sign of the truncated integer, which is never
//! negative there): both are refused. `to_number` keeps the string as the
//! number's text in OPA: a string whose value regent's number does not
//! have exactly (`"0.1000000000000000000001"`, a 30-digit integer) is
//! refused.
//!
//! `format_int`: as OPA computes it (`topdown/strings.go`): the number read
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

use super::arith::{self, Declined, Fold};
use super::error;
use super::sprintf::number_text;

/// 2^53: from here on a double's text is not known (many integers parse
/// to it), and every double is an integer.
const TEXT_KNOWN_BELOW: f64 = 9_007_199_254_740_992.0;

/// `sum(c)`.
pub(super) fn sum(a: &[Value]) -> Option<anyhow::Result<Value>> {
    fold("sum", Fold::Sum, &a[0])
}

/// `product(c)`.
pub(super) fn product(a: &[Value]) -> Option<anyhow::Result<Value>> {
    fold("product", Fold::Product, &a[0])
}

/// OPA's `sum` or `product` of an array or set of numbers; `None` for
/// anything else (a type error in both) and for machine integers whose
/// result fits 64 bits (regorus' answer is OPA's).
fn fold(name: &str, kind: Fold, c: &Value) -> Option<anyhow::Result<Value>> {
    let items: Vec<&Value> = match c {
        Value::Array(a) => a.iter().collect(),
        Value::Set(s) => s.iter().collect(),
        _ => return None,
    };
    if !items.iter().all(|v| matches!(v, Value::Number(_))) {
        return None;
    }
    // The common case, integers regorus holds: OPA's exact answer when it
    // fits; `number_text` tells an integral double (`2.0`) from one.
    let mut acc: Option<i64> = Some(if kind == Fold::Sum { 0 } else { 1 });
    for v in &items {
        let Value::Number(n) = v else { return None };
        acc = match (acc, n.as_i64()) {
            (Some(x), Some(i)) if !number_text(v).contains(['.', 'e']) => match kind {
                Fold::Sum => x.checked_add(i),
                Fold::Product => x.checked_mul(i),
            },
            _ => None,
        };
        if acc.is_none() {
            break;
        }
    }
    if acc.is_some() {
        return None;
    }
    match arith::fold(kind, &items) {
        Ok(v) => Some(Ok(v)),
        Err(Declined::Regorus) => None,
        Err(Declined::Unrepresentable(text)) => error(name, arith::builtin_refusal(name, &text)),
        Err(Declined::TextUnknown(text)) => error(name, unknown_text(&text)),
    }
}

/// The refusal of a builtin given a double of 2^53 or more.
fn unknown_text(text: &str) -> String {
    format!(
        "OPA computes on a number's text as it was written, which regent no longer knows for \
         {text} (a double of 2^53 or more, which many integers parse to): not supported by \
         regent, which refuses rather than answer for another number; send such numbers as \
         integers written in full, or as strings"
    )
}

/// `round`, `ceil`, `floor` or `abs` (`name`) of a number regorus holds
/// as a double: OPA's integer (or, for `abs`, the fraction), or a refusal
/// (see the module doc). Integers are left to regorus, whose identity is
/// OPA's.
pub(super) fn rounding(name: &str, a: &[Value]) -> Option<anyhow::Result<Value>> {
    let Value::Number(n) = &a[0] else {
        return None;
    };
    let text = number_text(&a[0]);
    if !text.contains(['.', 'e']) {
        return None;
    }
    let f = n.as_f64().filter(|f| f.is_finite())?;
    if f.abs() >= TEXT_KNOWN_BELOW {
        return error(name, unknown_text(&text));
    }
    let r = match name {
        "round" => f.round(),
        "abs" => f.abs(),
        "ceil" | "floor" if f > -1.0 && f < 0.0 => {
            let (theirs, ours) = if name == "ceil" { (1, 0) } else { (0, -1) };
            return error(
                name,
                format!(
                    "OPA v1 answers {theirs} for {name}({text}) (its {name} of a number between -1 \
                     and 0 reads the sign of the truncated integer, 0), where the floor or \
                     ceiling is {ours}: not supported by regent, which refuses rather than \
                     answer either; compare the number with 0 first, or keep it an integer"
                ),
            );
        }
        "ceil" => f.ceil(),
        _ => f.floor(),
    };
    // An integral result is an integer in OPA (`builtins.FloatToNumber`
    // writes it with `'f'`): `round(2.5)` is `3`, `abs(-0.0)` is `0`.
    if r.fract() == 0.0 {
        return Some(Ok(Value::from(r as i64)));
    }
    // A fraction (`abs` only) is kept as `'g'` text at 64 bits, as a sum
    // of one item is: `abs(1234567.5)` is `1.2345675e+06`.
    match arith::fold(Fold::Sum, &[&Value::from(r)]) {
        Ok(v) => Some(Ok(v)),
        Err(Declined::Unrepresentable(text)) => error(name, arith::builtin_refusal(name, &text)),
        Err(_) => None,
    }
}

/// `numbers.range_step(a, b, step)` with a step regorus holds as a double
/// of 2^53 or more: OPA reads it as the integer its text denotes, whatever
/// that text was a step past `b - a`, so the range is `[a]`; regorus cannot
/// count the elements and fails. Anything else is regorus' answer.
pub(super) fn range_step(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let (Value::Number(from), Value::Number(to), Value::Number(step)) = (&a[0], &a[1], &a[2])
    else {
        return None;
    };
    let integer = |v: &Value| !number_text(v).contains(['.', 'e']);
    let (x, y) = (from.as_i64()?, to.as_i64()?);
    if !integer(&a[0]) || !integer(&a[1]) || integer(&a[2]) {
        return None;
    }
    let s = step.as_f64()?;
    let span = (i128::from(y) - i128::from(x)).unsigned_abs();
    if !(s.is_finite() && s >= TEXT_KNOWN_BELOW && span < (1u128 << 52)) {
        return None;
    }
    Some(Ok(Value::from(vec![Value::from(x)])))
}

/// `to_number(s)`: OPA keeps `s` as the number's text, so a string whose
/// value the number regent reads it as does not have exactly (more digits
/// than a double holds) is refused, and so is one spelled otherwise than
/// regent writes that number (`1e2`, `1.50`, `-0`: OPA's `json.marshal`
/// and `sprintf` write the spelling back). A string that is not a number
/// as JSON writes it is an error: OPA's Go `strconv.ParseFloat` refuses
/// some (`0x10`, `" 1"`, `Inf`, `1e400`) and reads others into a number
/// spelled so (`"090"`, `"+1"`, `".5"`, `"1_0"`), which compares but
/// cannot be written back (`json: invalid number literal`): those are
/// refused, regorus would answer 90 or 1 and write it. The rest is
/// regorus' answer.
pub(super) fn to_number(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let Value::String(s) = &a[0] else {
        return None;
    };
    if s.trim() != s.as_ref() {
        return error(
            "to_number",
            format!("strconv.ParseFloat: parsing {s:?}: invalid syntax"),
        );
    }
    if !is_json_number(s) {
        return error(
            "to_number",
            format!(
                "{s:?} is not a number as JSON writes it: OPA refuses it, or reads it into a \
                 number spelled {s} that it cannot write back (not supported by regent, which \
                 refuses rather than answer another number); give to_number digits as JSON \
                 writes them (`90`, `0.5`, `1`), or compare the string itself"
            ),
        );
    }
    let held = if s.bytes().all(|c| c.is_ascii_digit() || c == b'-') {
        match s.parse::<i64>() {
            Ok(i) => Value::from(i),
            Err(_) => Value::from(s.parse::<f64>().ok()?),
        }
    } else {
        Value::from(s.parse::<f64>().ok()?)
    };
    if let Value::Number(n) = &held
        && n.as_f64().is_some_and(|f| !f.is_finite())
    {
        return error(
            "to_number",
            format!("strconv.ParseFloat: parsing {s:?}: value out of range"),
        );
    }
    match spelling(s, &held) {
        Spelling::Kept => None,
        // The same number spelled otherwise (`1e2`, `1.50`, `-0`): OPA
        // writes it back as spelled in `json.marshal` and `sprintf`,
        // where regent would write `ours`.
        Spelling::Respelled(ours) => error(
            "to_number",
            format!(
                "OPA keeps the number as written, {s}, and writes it so in json.marshal and \
                 sprintf, where regent would write {ours}: not supported by regent, which \
                 refuses rather than answer another text; give to_number the number as JSON \
                 writers spell it ({ours}), or compare the string itself"
            ),
        ),
        Spelling::Lost(ours) => error(
            "to_number",
            format!(
                "OPA keeps the number as written, {s}, which regent's numbers cannot hold (the \
                 nearest is {ours}): not supported by regent, which refuses rather than answer \
                 another number; compare the string itself, or keep to numbers of at most 15 \
                 significant digits"
            ),
        ),
    }
}

/// Whether `s` is a number as JSON writes it:
/// `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`.
pub(crate) fn is_json_number(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    let start = i;
    match digits(&mut i) {
        0 => return false,
        n if n > 1 && b[start] == b'0' => return false,
        _ => {}
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
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

/// How a number's JSON text stands against the text regent writes for the
/// number it reads it as ([`spelling`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Spelling {
    /// regent writes it so, or refuses to write any spelling of that
    /// number (`sprintf::text_unknown`: below 1e-4, from 1e16 to 1e21).
    Kept,
    /// The same number, which regent writes as this text (`1e2` is
    /// `100.0`, `1.50` is `1.5`, `-0` is `0` or `-0.0`): OPA writes the
    /// spelling back in `json.marshal` and `sprintf`.
    Respelled(String),
    /// A number regent's numbers cannot hold: this text is the nearest
    /// (`0.1000000000000000000001` is `0.1`).
    Lost(String),
}

/// How `text`, a number as JSON writes it, stands against `held`, the
/// number regent reads it as (`to_number`'s, or `serde_json`'s for a data
/// file): OPA keeps the text and computes and writes with it.
pub(crate) fn spelling(text: &str, held: &Value) -> Spelling {
    let ours = number_text(held);
    if ours == text {
        return Spelling::Kept;
    }
    let same = match (super::units::decimal(text), super::units::decimal(&ours)) {
        (Some(theirs), Some(mine)) => same_value(&theirs, &mine),
        _ => false,
    };
    if !same {
        return Spelling::Lost(ours);
    }
    // Below 1e-4 and from 1e16 regent refuses to print a float whatever
    // its spelling (`sprintf::text_unknown`), so any spelling is answered.
    if super::sprintf::text_unknown(held) {
        return Spelling::Kept;
    }
    Spelling::Respelled(ours)
}

/// Whether two decimals (`units::decimal`) denote the same number.
fn same_value(x: &(bool, num_bigint::BigUint, i64), y: &(bool, num_bigint::BigUint, i64)) -> bool {
    use num_traits::Zero;
    let norm = |(neg, d, e): &(bool, num_bigint::BigUint, i64)| {
        let (mut d, mut e) = (d.clone(), *e);
        if d.is_zero() {
            return (false, d, 0);
        }
        let ten = num_bigint::BigUint::from(10u8);
        while (&d % &ten).is_zero() {
            d /= &ten;
            e += 1;
        }
        (*neg, d, e)
    };
    norm(x) == norm(y)
}

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
    // OPA truncates into a `big.Int`, which has no negative zero;
    // regorus writes `-0` for a fraction between -1 and 0.
    if f < 0.0 && f > -1.0 {
        return Some(Ok(Value::from("0")));
    }
    if !f.is_finite() || f.abs() < TEXT_KNOWN_BELOW {
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
pub(crate) fn rem(a: &Value, b: &Value) -> Option<anyhow::Result<(Value, bool)>> {
    let (Value::Number(x), Value::Number(y)) = (a, b) else {
        return None;
    };
    // regorus refuses an integral float past 2^53 (`modulo on
    // floating-point number`), which OPA reads as the integer.
    let regorus_takes = |v: &Value| match v {
        Value::Number(n) => {
            !n.format_decimal_with_width(1).contains('.')
                || n.as_f64()
                    .is_some_and(|f| f.abs() <= 9_007_199_254_740_992.0)
        }
        _ => false,
    };
    if let (Some(i), Some(j)) = (x.as_i64(), y.as_i64()) {
        if j == 0 {
            return Some(Err(anyhow::anyhow!("modulo by zero")));
        }
        let agrees = regorus_takes(a) && regorus_takes(b);
        return Some(Ok((Value::from(i.wrapping_rem(j)), agrees)));
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

    /// `name(json)`: OPA's text, or `Err` with the error.
    fn call(f: super::super::Compat, json: &str) -> Result<String, String> {
        match f(&[Value::from_json_str(json).unwrap()]) {
            Some(Ok(v)) => Ok(number_text(&v)),
            Some(Err(e)) => Err(e.to_string()),
            None => Ok("regorus".into()),
        }
    }

    #[test]
    fn sums_and_products_as_opa() {
        // OPA's answers, from its own engine (v1, input numbers as text).
        assert_eq!(call(sum, "[0.1, 0.2]").unwrap(), "0.3");
        assert_eq!(call(sum, "[1.0, 2.0]").unwrap(), "3");
        assert_eq!(call(sum, "[0.5, 0.5]").unwrap(), "1");
        assert_eq!(call(sum, "[-0.5, 0.5]").unwrap(), "0");
        assert_eq!(call(sum, "[-0.0]").unwrap(), "0");
        assert_eq!(call(sum, "[1, 2, 3]").unwrap(), "regorus");
        assert_eq!(call(sum, "[1234567.5, 0.5]").unwrap(), "1234568");
        assert!(
            call(sum, "[1234567.25, 0.5]")
                .unwrap_err()
                .contains("1.23456775e+06")
        );
        assert!(
            call(
                sum,
                "[0.3333333333333333, 0.3333333333333333, 0.3333333333333333]"
            )
            .unwrap_err()
            .contains("0.99999999999999990004")
        );
        assert!(call(sum, "[1e300, 1]").unwrap_err().contains("2^53"));
        assert_eq!(call(sum, "[1, \"x\"]").unwrap(), "regorus");
        assert_eq!(call(product, "[0.1, 0.2]").unwrap(), "0.02");
        assert_eq!(call(product, "[0.1, 3]").unwrap(), "0.30000000000000004");
        assert_eq!(call(product, "[0.1, 0.1, 0.1]").unwrap(), "0.001");
        assert_eq!(
            call(
                product,
                "[0.3333333333333333, 0.3333333333333333, 0.3333333333333333]"
            )
            .unwrap(),
            "0.03703703703703703"
        );
        assert_eq!(call(product, "[1.5, 2]").unwrap(), "3");
        assert_eq!(
            call(product, "[9007199254740993, 1.0]").unwrap(),
            "9007199254740993"
        );
        assert_eq!(
            call(product, "[9007199254740993, 0.5]").unwrap(),
            "4503599627370496"
        );
        assert!(call(product, "[-0.5, 0]").unwrap_err().contains("as -0,"));
        assert!(
            call(product, "[1234567.5, 1]")
                .unwrap_err()
                .contains("1.2345675e+06")
        );
        assert_eq!(call(product, "[]").unwrap(), "regorus");
    }

    #[test]
    fn rounding_as_opa() {
        let round = |a: &[Value]| rounding("round", a);
        let ceil = |a: &[Value]| rounding("ceil", a);
        let floor = |a: &[Value]| rounding("floor", a);
        let abs = |a: &[Value]| rounding("abs", a);
        assert_eq!(call(round, "2.5").unwrap(), "3");
        assert_eq!(call(round, "-2.5").unwrap(), "-3");
        assert_eq!(call(round, "-0.4").unwrap(), "0");
        assert_eq!(
            call(round, "4503599627370497.5").unwrap(),
            "4503599627370498"
        );
        assert_eq!(call(round, "7").unwrap(), "regorus");
        assert!(call(round, "1e300").unwrap_err().contains("2^53"));
        assert_eq!(call(ceil, "-1.5").unwrap(), "-1");
        assert_eq!(call(floor, "-1.5").unwrap(), "-2");
        assert_eq!(call(floor, "1.5").unwrap(), "1");
        // OPA's own: ceil(-0.1) is 1 and floor(-0.1) is 0 there; refused.
        assert!(call(ceil, "-0.1").unwrap_err().contains("answers 1"));
        assert!(call(floor, "-0.1").unwrap_err().contains("answers 0"));
        assert_eq!(call(abs, "-0.1").unwrap(), "0.1");
        assert_eq!(call(abs, "-2.0").unwrap(), "2");
        assert_eq!(call(abs, "-0.0").unwrap(), "0");
        assert!(
            call(abs, "-1234567.5")
                .unwrap_err()
                .contains("1.2345675e+06")
        );
    }

    #[test]
    fn to_number_keeps_what_regent_can_hold() {
        let s = |t: &str| format!("{t:?}");
        assert_eq!(call(to_number, &s("0.1")).unwrap(), "regorus");
        assert_eq!(call(to_number, &s("1e-7")).unwrap(), "regorus");
        assert!(call(to_number, &s("1.50")).is_err());
        assert!(call(to_number, &s("-0")).is_err());
        assert!(call(to_number, &s("1e2")).is_err());
        assert!(call(to_number, &s("1E2")).is_err());
        assert_eq!(call(to_number, &s("100")).unwrap(), "regorus");
        assert_eq!(call(to_number, &s("1.5")).unwrap(), "regorus");
        assert_eq!(call(to_number, &s("2.0")).unwrap(), "regorus");
        assert_eq!(call(to_number, &s("9007199254740993")).unwrap(), "regorus");
        assert!(call(to_number, &s("0.1000000000000000000001")).is_err());
        assert!(call(to_number, &s("9007199254740993.0")).is_err());
        assert!(call(to_number, &s(" 7")).is_err());
        // OPA's answers, from its own engine: an error, or a number whose
        // text is not JSON (refused).
        for odd in [
            "090", "0x10", "+1", ".5", "5.", "1_0", "Inf", "-Inf", "NaN", "1e400", "", "-",
            "0x1p-2", "00",
        ] {
            assert!(call(to_number, &s(odd)).is_err(), "{odd}");
        }
        // 1e-400 is 0 as a double, a number OPA keeps as written.
        assert!(call(to_number, &s("1e-400")).is_err());
        assert_eq!(call(to_number, &s("0.00001")).unwrap(), "regorus");
        assert_eq!(call(to_number, &s("1e-05")).unwrap(), "regorus");
        assert!(call(to_number, &s("0.000010000000000000000001")).is_err());
        assert!(call(to_number, &s("12345678901234567891")).is_err());
    }

    #[test]
    fn json_numbers_are_json_grammar() {
        for ok in ["0", "-0", "1", "10", "1.5", "-1.5e+3", "1E2", "0.0", "1e-7"] {
            assert!(is_json_number(ok), "{ok}");
        }
        for bad in [
            "", "-", "01", "+1", ".5", "5.", "1e", "1e+", "1_0", "0x1", " 1", "--1",
        ] {
            assert!(!is_json_number(bad), "{bad}");
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
