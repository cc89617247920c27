//! `bits.and`, `bits.or`, `bits.xor`, `bits.negate`, `bits.lsh` and
//! `bits.rsh` as OPA answers them, or refused.
//!
//! Why (issue 27): OPA computes on `math/big` integers, so
//! `bits.lsh(1, 70)` and `bits.and(-2, 123456789012345678901234567890)`
//! have values, where regorus' rule was silently undefined: a deny rule
//! that quietly did not fire. Here operands that are 64-bit integers are
//! computed exactly (two's complement, as `big.Int` is, with an
//! arithmetic right shift); a result or an operand past 64 bits, which
//! regent's numbers cannot hold as OPA writes them, is refused (fail
//! closed, `not supported by regent`). A fraction is OPA's type error, and
//! so is a negative shift count. Anything but numbers is left to regorus,
//! whose type errors are OPA's.

use regorus::Value;

use super::error;

/// One operand: a 64-bit integer, or the error that ends the call.
fn operand(name: &str, a: &[Value], i: usize) -> Result<i64, Option<anyhow::Result<Value>>> {
    let Value::Number(n) = &a[i] else {
        // regorus' type error, as OPA's.
        return Err(None);
    };
    if let Some(v) = n.as_i64() {
        return Ok(v);
    }
    if n.as_f64().is_some_and(|f| f.fract() != 0.0) {
        return Err(error(
            name,
            format!(
                "operand {} must be integer number but got floating-point number",
                i + 1
            ),
        ));
    }
    Err(past_64_bits(name, "an operand"))
}

/// The refusal of an integer regent cannot hold as OPA does.
fn past_64_bits(name: &str, what: &str) -> Option<anyhow::Result<Value>> {
    error(
        name,
        format!(
            "{what} is an integer past 64 bits, which OPA computes as a big integer: not \
             supported by regent, which refuses rather than answer another number; keep the \
             operands and the result within 64-bit integers"
        ),
    )
}

/// `bits.and`, `bits.or`, `bits.xor`.
fn binary(name: &str, a: &[Value], op: fn(i64, i64) -> i64) -> Option<anyhow::Result<Value>> {
    let x = match operand(name, a, 0) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let y = match operand(name, a, 1) {
        Ok(y) => y,
        Err(e) => return e,
    };
    Some(Ok(Value::from(op(x, y))))
}

pub(super) fn and(a: &[Value]) -> Option<anyhow::Result<Value>> {
    binary("bits.and", a, |x, y| x & y)
}

pub(super) fn or(a: &[Value]) -> Option<anyhow::Result<Value>> {
    binary("bits.or", a, |x, y| x | y)
}

pub(super) fn xor(a: &[Value]) -> Option<anyhow::Result<Value>> {
    binary("bits.xor", a, |x, y| x ^ y)
}

/// `bits.negate(x)` is `-x - 1`, which a 64-bit integer always holds.
pub(super) fn negate(a: &[Value]) -> Option<anyhow::Result<Value>> {
    match operand("bits.negate", a, 0) {
        Ok(x) => Some(Ok(Value::from(!x))),
        Err(e) => e,
    }
}

/// The shift count: OPA refuses a negative one.
fn count(name: &str, a: &[Value]) -> Result<u64, Option<anyhow::Result<Value>>> {
    let s = operand(name, a, 1)?;
    u64::try_from(s).map_err(|_| {
        error(
            name,
            "operand 2 must be an unsigned integer number but got a negative integer",
        )
    })
}

/// A shift's value and count, or OPA's error for either.
fn shift(name: &str, a: &[Value]) -> Result<(i64, u64), Option<anyhow::Result<Value>>> {
    Ok((operand(name, a, 0)?, count(name, a)?))
}

pub(super) fn lsh(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let name = "bits.lsh";
    let (x, s) = match shift(name, a) {
        Ok(xs) => xs,
        Err(e) => return e,
    };
    if x == 0 {
        return Some(Ok(Value::from(0)));
    }
    // |x| < 2^63 and s < 64 stay within an i128.
    let wide = (s < 64).then(|| i128::from(x) << s);
    match wide.and_then(|w| i64::try_from(w).ok()) {
        Some(v) => Some(Ok(Value::from(v))),
        None => past_64_bits(name, "the result"),
    }
}

/// An arithmetic shift, as `big.Int.Rsh` rounds toward minus infinity.
pub(super) fn rsh(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let (x, s) = match shift("bits.rsh", a) {
        Ok(xs) => xs,
        Err(e) => return e,
    };
    Some(Ok(Value::from(x >> s.min(63))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(f: fn(&[Value]) -> Option<anyhow::Result<Value>>, args: &[Value]) -> String {
        match f(args).unwrap() {
            Ok(v) => serde_json::to_string(&v).unwrap(),
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn as_opa_or_refused() {
        let n = |i: i64| Value::from(i);
        let f = |x: f64| Value::from(x);
        // OPA's answers, from its own engine.
        assert_eq!(call(lsh, &[n(1), n(62)]), "4611686018427387904");
        assert_eq!(call(rsh, &[n(-8), n(1)]), "-4");
        assert_eq!(call(rsh, &[n(-8), n(100)]), "-1");
        assert_eq!(call(rsh, &[n(8), n(100)]), "0");
        assert_eq!(call(negate, &[n(i64::MAX)]), i64::MIN.to_string());
        assert_eq!(call(and, &[n(-2), n(7)]), "6");
        assert_eq!(call(and, &[f(2.0), n(3)]), "2");
        assert!(call(and, &[f(1.5), n(1)]).contains("operand 1 must be integer"));
        assert!(call(lsh, &[n(1), n(-1)]).contains("unsigned"));
        // OPA answers with big integers: refused, never undefined.
        for (g, args) in [
            (lsh as fn(&[Value]) -> _, vec![n(1), n(63)]),
            (lsh, vec![n(-1), n(64)]),
            (lsh, vec![n(1), n(70)]),
            (and, vec![n(-2), f(1.2345678901234568e29)]),
            (negate, vec![f(1e30)]),
        ] {
            assert!(
                call(g, &args).contains("not supported by regent"),
                "{args:?}"
            );
        }
        assert!(and(&[Value::from("x"), n(1)]).is_none());
    }
}
