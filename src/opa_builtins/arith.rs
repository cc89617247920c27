//! `+`, `-`, `*` and `/` on numbers as OPA computes them, or a refusal
//! where regent's numbers cannot hold OPA's answer (issue 27).
//!
//! OPA (`topdown/arithmetic.go`, v1.20, observed through its own engine)
//! computes on a number's text: integers in the int32 window with int64
//! math; integers of any size exactly (`+ - *`; `/` only when the divisor
//! divides a nonzero dividend); everything else as `big.Float`s of 64 bits
//! read from the text (Go's `SetString`, [`super::units::parse_float`]),
//! rounded to nearest even, and keeps the result as text: the shortest
//! decimal that reads back as the same 64-bit float, in Go's `'g'` form
//! (`%e` when the exponent is below -4 or 6 or more: `1.2345675e+06`), or
//! its digits in full when it is an integer (`5000000000000000`, `-0`).
//! `0.1 + 0.2` is `0.3` there, `1 / 3` is `0.33333333333333333334`.
//!
//! regent's numbers are regorus' (`i64`, `u64`, a double, a big integer),
//! and a number's text is the one regent writes for it
//! (`sprintf::number_text`: the integer, or the shortest text of the
//! double), which is what an operand is read as. The result is OPA's when
//! regent holds a number whose text is exactly OPA's text: the integer, or
//! the double the text reads as. Anything else (`0.33333333333333333334`,
//! `1.2345675e+06`, `-0`, an integer past 64 bits regent writes as a
//! double) is refused, with OPA's text, rather than answered with another
//! number: a later `json.marshal`, comparison or sum would tell them
//! apart. Operands that are not both numbers (a set difference, a type
//! error) and division by zero are left to regorus, which answers or
//! raises the same error as OPA. The syntax tree, the evaluator and the
//! message's location are `native`'s and `rego::lower`'s business.

use num_bigint::{BigInt, BigUint, Sign};
use num_traits::Zero;
use regorus::Value;

use super::sprintf::{json_float, number_text};
use super::units::{Float, decimal, parse_float};

/// An arithmetic operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

/// Why [`eval`] did not answer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Declined {
    /// Not two numbers, or a zero divisor: regorus' answer or error is
    /// OPA's.
    Regorus,
    /// OPA's result, as OPA writes it, which regent's numbers cannot hold.
    Unrepresentable(String),
    /// An operand regent holds as a double of 2^53 or more, whose text
    /// (which OPA computes on) regent no longer knows: `18446744073709551616`
    /// and `18446744073709551617` parse to one double. Its shortest text.
    TextUnknown(String),
}

/// The precision of OPA's floats, in bits.
const PREC: u64 = 64;

/// `a op b` as OPA computes it: the value, and whether regorus computes the
/// same value (otherwise the debug cross-check has nothing to compare).
pub(crate) fn eval(op: Op, a: &Value, b: &Value) -> Result<(Value, bool), Declined> {
    let (Value::Number(x), Value::Number(y)) = (a, b) else {
        return Err(Declined::Regorus);
    };
    let text = opa_text(op, &operand(a)?, &operand(b)?)?;
    let value = held(&text).ok_or(Declined::Unrepresentable(text))?;
    let regorus = match op {
        Op::Add => x.add(y),
        Op::Sub => x.sub(y),
        Op::Mul => x.mul(y),
        Op::Div => x.clone().divide(y),
    };
    let agrees = regorus.is_ok_and(|n| {
        let theirs = Value::Number(n);
        // The same number, and the same kind (`1` and `1.0` are equal,
        // but regorus' `json.marshal` writes the double `1.0`).
        theirs == value && number_text(&theirs) == number_text(&value)
    });
    Ok((value, agrees))
}

/// [`eval`] where an operand may be a number the request spelled with
/// more digits than regent holds, given as the texts it may stand for
/// (`a_texts`, `b_texts`; regent matches by value, so each operand may as
/// well be its own double): OPA computes on the text, so regent answers
/// only where every reading gives its own number
/// (`0.1000000000000000000001 + 1` is `1.1` either way at OPA's 64 bits;
/// `4.999999999999999999 * 3` is not, nor `4.999999999999999999 / 5` with
/// the `5` read as that text or as 5), `None` otherwise.
pub(crate) fn eval_spelled(
    op: Op,
    a: &Value,
    b: &Value,
    a_texts: &[Box<str>],
    b_texts: &[Box<str>],
) -> Option<(Value, bool)> {
    let mine = eval(op, a, b).ok()?;
    let readings = |v: &Value, texts: &[Box<str>]| -> Option<Vec<(bool, BigUint, i64)>> {
        let mut out = vec![operand(v).ok()?];
        for t in texts {
            out.push(decimal(t)?);
        }
        Some(out)
    };
    let (xs, ys) = (readings(a, a_texts)?, readings(b, b_texts)?);
    for x in &xs {
        for y in &ys {
            let theirs = held(&opa_text(op, x, y).ok()?)?;
            if theirs != mine.0 || number_text(&theirs) != number_text(&mine.0) {
                return None;
            }
        }
    }
    Some(mine)
}

/// OPA's text of `x op y`, the operands given as decimals.
fn opa_text(
    op: Op,
    dx: &(bool, BigUint, i64),
    dy: &(bool, BigUint, i64),
) -> Result<String, Declined> {
    Ok(match (integer(dx), integer(dy)) {
        (Some(i), Some(j)) => match op {
            Op::Add => (i + j).to_string(),
            Op::Sub => (i - j).to_string(),
            Op::Mul => (i * j).to_string(),
            Op::Div if j.is_zero() => return Err(Declined::Regorus),
            Op::Div if !i.is_zero() && (&i % &j).is_zero() => (i / j).to_string(),
            Op::Div => float_text(op, dx, dy)?,
        },
        _ => float_text(op, dx, dy)?,
    })
}

/// The decimal an operand stands for: an integer's digits, or the shortest
/// text of a double below 2^53 (the text a client's number most likely
/// had: any other parses to another double, or is a long spelling of it).
fn operand(v: &Value) -> Result<(bool, BigUint, i64), Declined> {
    let Value::Number(n) = v else {
        return Err(Declined::Regorus);
    };
    // regorus writes a float with the width's fraction digits, an integer
    // as it is (as `sprintf::number_text` tells them apart).
    let float = n.format_decimal_with_width(1).contains('.');
    let text = if float || (n.as_i64().is_none() && n.as_u64().is_none()) {
        let f = n.as_f64().ok_or(Declined::Regorus)?;
        if f.abs() >= 9_007_199_254_740_992.0 {
            return Err(Declined::TextUnknown(number_text(v)));
        }
        number_text(v)
    } else {
        n.format_decimal()
    };
    decimal(&text).ok_or(Declined::Regorus)
}

/// The integer a decimal denotes, if it is one.
fn integer((negative, digits, exp): &(bool, BigUint, i64)) -> Option<BigInt> {
    let ten = BigUint::from(10u8);
    let magnitude = if *exp >= 0 {
        digits * ten.pow(u32::try_from(*exp).ok()?)
    } else {
        let scale = ten.pow(u32::try_from(exp.unsigned_abs()).ok()?);
        if !(digits % &scale).is_zero() {
            return None;
        }
        digits / scale
    };
    Some(BigInt::from_biguint(
        if *negative { Sign::Minus } else { Sign::Plus },
        magnitude,
    ))
}

/// The number regent holds whose text is exactly `text`, if any.
fn held(text: &str) -> Option<Value> {
    let v = if text.bytes().all(|c| c.is_ascii_digit() || c == b'-') {
        Value::from(text.parse::<i64>().ok()?)
    } else {
        let f: f64 = text.parse().ok()?;
        if !f.is_finite() {
            return None;
        }
        Value::from(f)
    };
    (number_text(&v) == text).then_some(v)
}

/// A signed 64-bit `big.Float`: `±m × 2^e`.
struct Signed {
    negative: bool,
    f: Float,
}

impl Signed {
    fn read((negative, digits, exp): &(bool, BigUint, i64)) -> Signed {
        Signed {
            negative: *negative,
            f: parse_float(digits.clone(), *exp),
        }
    }

    fn is_zero(&self) -> bool {
        self.f.m.is_zero()
    }
}

/// OPA's text of `x op y` on the float path.
fn float_text(
    op: Op,
    x: &(bool, BigUint, i64),
    y: &(bool, BigUint, i64),
) -> Result<String, Declined> {
    let (x, mut y) = (Signed::read(x), Signed::read(y));
    let r = match op {
        Op::Sub => {
            y.negative = !y.negative;
            add(x, y)
        }
        Op::Add => add(x, y),
        Op::Mul => Signed {
            negative: x.negative != y.negative,
            f: x.f.mul(&y.f, PREC),
        },
        Op::Div if y.is_zero() => return Err(Declined::Regorus),
        Op::Div => Signed {
            negative: x.negative != y.negative,
            f: x.f.quo(&y.f, PREC),
        },
    };
    Ok(text(&r, PREC))
}

/// `sum` or `product` of a collection of numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fold {
    Sum,
    Product,
}

/// The precision of OPA's `product` on fractions: it multiplies into
/// `big.NewFloat(1)`, a float of 53 bits, where `sum` adds into a float
/// whose precision is its first operand's (64 bits, read from the text).
const PRODUCT_PREC: u64 = 53;

/// `sum(items)` or `product(items)` as OPA computes them
/// (`topdown/aggregates.go`), every item a number: exactly when every item
/// is an integer (`1.0` is one), else on `big.Float`s read from the items'
/// texts, in the collection's order, kept as `'g'` text (the digits in
/// full when integral). The value, when regent holds a number whose text
/// is OPA's.
pub(crate) fn fold(kind: Fold, items: &[&Value]) -> Result<Value, Declined> {
    let decimals = items
        .iter()
        .map(|v| operand(v))
        .collect::<Result<Vec<_>, _>>()?;
    let integers: Option<Vec<BigInt>> = decimals.iter().map(integer).collect();
    let text = match (kind, integers) {
        (Fold::Sum, Some(is)) => is.into_iter().sum::<BigInt>().to_string(),
        (Fold::Product, Some(is)) => is.into_iter().product::<BigInt>().to_string(),
        (Fold::Sum, None) => {
            let zero = Signed {
                negative: false,
                f: Float {
                    m: BigUint::zero(),
                    e: 0,
                },
            };
            let sum = decimals
                .iter()
                .fold(zero, |acc, d| add(acc, Signed::read(d)));
            text(&sum, PREC)
        }
        (Fold::Product, None) => {
            let one = Signed {
                negative: false,
                f: Float {
                    m: BigUint::from(1u8),
                    e: 0,
                },
            };
            let product = decimals.iter().fold(one, |acc, d| {
                let x = Signed::read(d);
                Signed {
                    negative: acc.negative != x.negative,
                    f: acc.f.mul(&x.f, PRODUCT_PREC),
                }
            });
            text(&product, PRODUCT_PREC)
        }
    };
    held(&text).ok_or(Declined::Unrepresentable(text))
}

/// `x + y`, rounded to 64 bits; an exact zero is positive unless both
/// operands are negative zeros (`big.Float.Add`, rounding to nearest).
fn add(x: Signed, y: Signed) -> Signed {
    if x.is_zero() && y.is_zero() {
        return Signed {
            negative: x.negative && y.negative,
            f: x.f,
        };
    }
    let e = x.f.e.min(y.f.e);
    let signed = |s: &Signed| {
        let m = BigInt::from(s.f.m.clone() << (s.f.e - e) as u64);
        if s.negative { -m } else { m }
    };
    let sum = signed(&x) + signed(&y);
    Signed {
        negative: sum.sign() == Sign::Minus,
        f: Float {
            m: sum.magnitude().clone(),
            e,
        }
        .round(PREC),
    }
}

/// Go's `x.Text('g', -1)` as OPA keeps a float result of `prec` bits, or
/// the digits in full for an integral one (`builtins.FloatToNumber`).
fn text(x: &Signed, prec: u64) -> String {
    let sign = if x.negative { "-" } else { "" };
    if x.is_zero() {
        return format!("{sign}0");
    }
    let (digits, dp) = shortest(&x.f, prec);
    let n = digits.len() as i64;
    if dp >= n {
        return format!("{sign}{digits}{}", "0".repeat((dp - n) as usize));
    }
    let exp = dp - 1;
    if !(-4..6).contains(&exp) {
        let mut s = format!("{sign}{}", &digits[..1]);
        if n > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        let e = exp.abs();
        s.push_str(&format!(
            "e{}{}{e}",
            if exp < 0 { '-' } else { '+' },
            if e < 10 { "0" } else { "" }
        ));
        s
    } else if dp > 0 {
        let dp = dp as usize;
        format!("{sign}{}.{}", &digits[..dp], &digits[dp..])
    } else {
        format!("{sign}0.{}{digits}", "0".repeat((-dp) as usize))
    }
}

/// The shortest decimal that reads back as `x` at `prec` bits (rounding to
/// nearest even), as its digits (no trailing zero) and the position of
/// the point (`0.digits × 10^dp`). Of the decimals with fewest digits in
/// `x`'s rounding interval (its ends included when `x`'s mantissa is even),
/// the one nearest `x`, ties to the even one: what Go's `roundShortest`
/// picks walking the digits.
fn shortest(x: &Float, prec: u64) -> (String, i64) {
    // x = mant × 2^exp, with mant of prec + 1 bits: its last bit is half
    // an ulp.
    let shift = prec as i64 + 1 - x.m.bits() as i64;
    let mant = BigInt::from(if shift >= 0 {
        x.m.clone() << shift as u64
    } else {
        x.m.clone() >> (-shift) as u64
    });
    let exp = x.e - shift;
    let inclusive = !mant.bit(1);
    let ten = BigInt::from(10u8);
    let pow10 = |k: i64| ten.pow(k.unsigned_abs() as u32);
    let pow2 = |k: i64| BigInt::from(1u8) << k.unsigned_abs();
    // (num, den) with a × 10^p = a × num / den for a in units of 2^exp.
    let scale = |p: i64| {
        let mut num = BigInt::from(1u8);
        let mut den = BigInt::from(1u8);
        if p >= 0 {
            num *= pow10(p)
        } else {
            den *= pow10(p)
        }
        if exp >= 0 {
            num *= pow2(exp)
        } else {
            den *= pow2(exp)
        }
        (num, den)
    };
    // The decimal exponent: 10^d <= x < 10^(d+1).
    let mut d = ((x.m.bits() as i64 + x.e - 1) as f64 * std::f64::consts::LOG10_2).floor() as i64;
    loop {
        let (num, den) = scale(-d);
        let v = &mant * &num;
        if v < den {
            d -= 1;
        } else if v >= &den * &ten {
            d += 1;
        } else {
            break;
        }
    }
    for n in 1..=40i64 {
        let p = n - 1 - d;
        let (num, den) = scale(p);
        let v = &mant * &num;
        let (t, r) = (&v / &den, &v % &den);
        // t / 10^p against (mant ± 1) × 2^exp, both times den.
        let lower = (&mant - 1) * &num;
        let upper = (&mant + 1) * &num;
        let down = &t * &den;
        let up = (&t + 1) * &den;
        let ok_down = if inclusive {
            down >= lower
        } else {
            down > lower
        };
        let ok_up = if inclusive { up <= upper } else { up < upper };
        let c = match (ok_down, ok_up) {
            (true, true) => {
                let twice = &r * 2;
                if twice < den || (twice == den && !t.bit(0)) {
                    t
                } else {
                    t + 1
                }
            }
            (true, false) => t,
            (false, true) => t + 1,
            (false, false) => continue,
        };
        let mut s = c.to_string();
        let len = s.len() as i64;
        let trimmed = s.trim_end_matches('0').len();
        s.truncate(trimmed);
        return (s, len - p);
    }
    // 64 bits never need more than 21 digits.
    unreachable!("a 64-bit float has a decimal of at most 40 digits")
}

/// The portable spelling, for the refusal's help.
pub(crate) const PORTABLE: &str = "keep `+ - * /` on integers (scale fractions \
     into integers: cents, not dollars), compare a fraction rather than compute with it \
     (`input.a > 0.3`, not `input.a * 10 > 3`), or keep results to short decimals below 10^6";

/// The refusal of `what` whose operand regent holds as the double written
/// `text`, of 2^53 or more.
pub(crate) fn unknown_text(what: &str, text: &str) -> String {
    format!(
        "{what}: OPA computes on a number's text as it was written, which regent no longer knows \
         for {text} (a double of 2^53 or more, which many integers parse to); regent refuses \
         rather than answer for another number: {PORTABLE}"
    )
}

/// The refusal of `what` (the expression and where it is) whose result OPA
/// writes as `text`.
pub(crate) fn refusal(what: &str, text: &str) -> String {
    let near = text
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .map(|f| format!(" (the nearest double is {})", json_float(f)))
        .unwrap_or_default();
    format!(
        "{what}: OPA computes this to 64 bits as {text}, which regent's numbers cannot hold{near}; \
         regent refuses rather than answer another number: {PORTABLE}"
    )
}

/// The refusal of builtin `name` (`sum`, `product`) whose value OPA
/// writes as `text`.
pub(crate) fn builtin_refusal(name: &str, text: &str) -> String {
    let near = text
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .map(|f| format!(" (the nearest double is {})", json_float(f)))
        .unwrap_or_default();
    format!(
        "OPA computes this {name} on the numbers' texts as {text}, which regent's numbers cannot \
         hold{near}: not supported by regent, which refuses rather than answer another number; \
         keep the items integers (scale fractions into integers: cents, not dollars) or the \
         result a short decimal below 10^6"
    )
}

/// The text regent reads a double as (for the OPA oracle's input).
#[cfg(test)]
pub(crate) fn double_text(f: f64) -> String {
    json_float(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opa(op: Op, a: &str, b: &str) -> Result<String, Declined> {
        let (a, b) = (
            Value::from_json_str(a).unwrap(),
            Value::from_json_str(b).unwrap(),
        );
        eval(op, &a, &b).map(|(v, _)| number_text(&v))
    }

    /// OPA's text for operands as OPA reads them (their own text).
    fn text(op: Op, a: &str, b: &str) -> String {
        opa_text(op, &decimal(a).unwrap(), &decimal(b).unwrap()).unwrap()
    }

    fn refused(op: Op, a: &str, b: &str) -> String {
        match opa(op, a, b) {
            Err(Declined::Unrepresentable(t)) => t,
            other => panic!("{a} {op:?} {b}: {other:?}"),
        }
    }

    #[test]
    fn as_opa_computes_them() {
        // OPA's answers, from its own engine (v1.20.2).
        use Op::*;
        assert_eq!(opa(Add, "0.1", "0.2").unwrap(), "0.3");
        assert_eq!(opa(Sub, "0.1", "0.2").unwrap(), "-0.1");
        assert_eq!(opa(Div, "0.1", "0.2").unwrap(), "0.5");
        assert_eq!(refused(Mul, "0.1", "0.2"), "0.020000000000000000001");
        assert_eq!(refused(Div, "1", "3"), "0.33333333333333333334");
        assert_eq!(opa(Div, "10", "4").unwrap(), "2.5");
        assert_eq!(opa(Div, "7", "7.0").unwrap(), "1");
        assert_eq!(refused(Mul, "1234567.5", "1"), "1.2345675e+06");
        assert_eq!(text(Mul, "1.5e21", "1"), "1500000000000000000000");
        assert_eq!(text(Add, "1e+300", "7").len(), 301);
        assert_eq!(opa(Div, "5", "0").unwrap_err(), Declined::Regorus);
        assert_eq!(opa(Div, "5", "0.0").unwrap_err(), Declined::Regorus);
        assert_eq!(refused(Div, "0", "-5"), "-0");
        assert_eq!(refused(Mul, "0", "-0.5"), "-0");
        assert_eq!(opa(Add, "0.5", "0.5").unwrap(), "1");
        assert_eq!(opa(Mul, "2.5", "2").unwrap(), "5");
        assert_eq!(opa(Add, "2.5", "2").unwrap(), "4.5");
        assert_eq!(opa(Add, "0.00001", "1").unwrap(), "1.00001");
        assert_eq!(opa(Mul, "0.00001", "1").unwrap(), "1e-05");
        assert_eq!(opa(Mul, "0.0001", "1").unwrap(), "0.0001");
        assert_eq!(opa(Add, "100000.5", "1").unwrap(), "100001.5");
        assert_eq!(refused(Add, "1e-07", "1e+07"), "1.00000000000001e+07");
        assert_eq!(opa(Mul, "1e-07", "1e+07").unwrap(), "1");
        assert_eq!(opa(Div, "1e-07", "1e+07").unwrap(), "1e-14");
        assert_eq!(
            refused(Mul, "0.3333333333333333", "3"),
            "0.99999999999999990004"
        );
        assert_eq!(
            refused(Sub, "0.3333333333333333", "3"),
            "-2.6666666666666667"
        );
        assert_eq!(
            refused(Add, "0.3333333333333333", "3"),
            "3.3333333333333333"
        );
        assert_eq!(
            opa(Div, "0.3333333333333333", "3").unwrap(),
            "0.1111111111111111"
        );
        assert_eq!(
            refused(Mul, "1e-300", "1e-300"),
            "9.9999999999999999994e-601"
        );
        assert_eq!(text(Add, "1e16", "0.5"), "1.00000000000000005e+16");
        assert_eq!(text(Mul, "1e16", "0.5"), "5000000000000000");
        assert_eq!(text(Mul, "1e20", "0.5"), "50000000000000000000");
        assert_eq!(text(Add, "1e20", "0.5"), "100000000000000000000");
        assert_eq!(refused(Mul, "5e-324", "0.5"), "2.5e-324");
        assert!(text(Div, "1e+300", "7").starts_with("142857142857142857145000"));
        assert_eq!(text(Div, "1e+300", "7").len(), 300);
        assert_eq!(
            opa(Add, "9007199254740993", "1").unwrap(),
            "9007199254740994"
        );
        assert_eq!(
            opa(Mul, "2147483648", "2147483648").unwrap(),
            "4611686018427387904"
        );
        assert_eq!(opa(Add, "-0.5", "0.5").unwrap(), "0");
        // Past 2^53 a double's text is not known; an integer's is.
        assert!(
            matches!(opa(Add, "18446744073709551616", "1"), Err(Declined::TextUnknown(t)) if t == "1.8446744073709552e+19")
        );
        assert!(matches!(
            opa(Add, "1e300", "7"),
            Err(Declined::TextUnknown(_))
        ));
        assert_eq!(
            opa(Sub, "18446744073709551615", "18446744073709551614").unwrap(),
            "1"
        );
        assert_eq!(
            opa(Add, "9007199254740991", "0.5").unwrap_err(),
            Declined::Unrepresentable("9.0071992547409915e+15".into())
        );
        assert_eq!(opa(Mul, "1.5", "-1.5").unwrap(), "-2.25");
    }
}
