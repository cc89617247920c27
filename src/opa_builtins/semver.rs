//! `semver.is_valid` and `semver.compare` as OPA answers them.
//!
//! OPA's semver is looser than SemVer 2.0 (and regorus' `semver` crate,
//! which refuses `01.2.3` with `invalid semver`): observed through OPA's
//! own engine, a version is an optional `v`, three dot-separated runs of
//! ASCII digits that fit a signed 64-bit integer (leading zeros allowed:
//! `01.2.3` is `1.2.3`), then an optional `-` prerelease and an optional
//! `+` build, each of which may be empty (`1.2.3-` is `1.2.3`) or
//! dot-separated identifiers of `[0-9A-Za-z-]`, none empty. Nothing else
//! (no white space, no `V`, no missing part, no unicode digit).
//!
//! Comparing: the three numbers, then the prerelease (none is greater than
//! any; identifiers one by one, a longer list greater when one is a prefix
//! of the other). Two numeric identifiers compare by value, saturated at
//! 2^63-1 (`99999999999999999999` is greater than `1`), a numeric one is less
//! than any other, two others compare byte by byte; the build is ignored.
//! Where two numeric identifiers have the same (saturated) value but are
//! spelled differently (`01` and `1`, two numbers past 2^63-1) OPA never
//! answers: regent refuses (fail closed) rather than answer.

use regorus::Value;

/// A version as OPA reads one: its three numbers and its prerelease
/// identifiers (the build is only checked).
struct Version<'a> {
    core: [i64; 3],
    pre: Vec<&'a str>,
}

/// `s` read as OPA reads a version, `None` where OPA calls it not valid.
fn parse(s: &str) -> Option<Version<'_>> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let (s, build) = s.split_once('+').unwrap_or((s, ""));
    if !identifiers(build) {
        return None;
    }
    let (core, pre) = s.split_once('-').unwrap_or((s, ""));
    if !identifiers(pre) {
        return None;
    }
    let mut parts = core.split('.');
    let mut nums = [0i64; 3];
    for n in &mut nums {
        let p = parts.next()?;
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *n = p.parse().ok()?;
    }
    if parts.next().is_some() {
        return None;
    }
    let pre = if pre.is_empty() {
        Vec::new()
    } else {
        pre.split('.').collect()
    };
    Some(Version { core: nums, pre })
}

/// An empty prerelease or build, or dot-separated non-empty identifiers of
/// ASCII letters, digits and `-`.
fn identifiers(s: &str) -> bool {
    s.is_empty()
        || s.split('.')
            .all(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
}

/// A numeric identifier's value, saturated at `i64::MAX` as OPA reads it.
fn numeric(id: &str) -> Option<i64> {
    id.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| id.parse().unwrap_or(i64::MAX))
}

/// `semver.is_valid(x)`: `false` for anything but a string.
pub(super) fn is_valid(a: &[Value]) -> Option<anyhow::Result<Value>> {
    Some(Ok(Value::from(match &a[0] {
        Value::String(s) => parse(s).is_some(),
        _ => false,
    })))
}

/// `semver.compare(a, b)`: -1, 0 or 1, OPA's error for a string that is not
/// a version; operands that are not strings keep regorus' type error.
pub(super) fn compare(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let (Value::String(x), Value::String(y)) = (&a[0], &a[1]) else {
        return None;
    };
    let (x, y) = match (version(1, x), version(2, y)) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(e), _) | (_, Err(e)) => return Some(Err(e)),
    };
    Some(order(&x, &y).map(|o| Value::from(o as i64)))
}

/// The version operand `i` spells, or OPA's error.
fn version(i: usize, s: &str) -> anyhow::Result<Version<'_>> {
    parse(s).ok_or_else(|| {
        anyhow::anyhow!("semver.compare: operand {i}: string {s:?} is not a valid SemVer")
    })
}

/// The order of two versions, or regent's refusal where OPA never answers.
fn order(x: &Version, y: &Version) -> anyhow::Result<std::cmp::Ordering> {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let core = x.core.cmp(&y.core);
    if core != Equal {
        return Ok(core);
    }
    match (x.pre.is_empty(), y.pre.is_empty()) {
        (true, true) => return Ok(Equal),
        (true, false) => return Ok(Greater),
        (false, true) => return Ok(Less),
        _ => {}
    }
    for (a, b) in x.pre.iter().zip(&y.pre) {
        let o = match (numeric(a), numeric(b)) {
            (Some(m), Some(n)) if m == n && a != b => anyhow::bail!(
                "semver.compare: prerelease identifiers {a:?} and {b:?} have the same value \
                 but are spelled differently, where OPA never answers: not supported by regent; \
                 write prerelease numbers without leading zeros and below 2^63"
            ),
            (Some(m), Some(n)) => m.cmp(&n),
            (Some(_), None) => Less,
            (None, Some(_)) => Greater,
            (None, None) => a.as_bytes().cmp(b.as_bytes()),
        };
        if o != Equal {
            return Ok(o);
        }
    }
    Ok(x.pre.len().cmp(&y.pre.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmp(x: &str, y: &str) -> String {
        match compare(&[Value::from(x), Value::from(y)]).unwrap() {
            Ok(v) => v.to_string(),
            Err(e) => format!("error: {e}"),
        }
    }

    /// Answers observed from OPA's engine (tests/opa/oracle.py).
    #[test]
    fn answers_as_opa() {
        for (s, ok) in [
            ("01.2.3", true),
            ("v01.2.3", true),
            ("0009223372036854775807.0.0", true),
            ("9223372036854775808.0.0", false),
            ("1.2.3-", true),
            ("1.2.3-+", true),
            ("1.2.3--", true),
            ("1.2.3-a.", false),
            ("1.2.3+.a", false),
            ("1.2.3-a+b+c", false),
            ("V1.2.3", false),
            ("vv1.2.3", false),
            ("1.2", false),
            ("1.2.3 ", false),
            ("\u{661}.2.3", false),
            ("1.+2.3", false),
            ("-0.0.0", false),
        ] {
            let got = is_valid(&[Value::from(s)]).unwrap().unwrap();
            assert_eq!(got, Value::from(ok), "{s:?}");
        }
        for (x, y, want) in [
            ("01.2.3", "1.2.3", "0"),
            ("1.2.3-01", "1.2.3", "-1"),
            ("1.2.3-", "1.2.3-0", "1"),
            ("1.2.3-010", "1.2.3-9", "1"),
            ("1.2.3-01", "1.2.3-2", "-1"),
            (
                "1.2.3-99999999999999999999",
                "1.2.3-9223372036854775806",
                "1",
            ),
            ("1.2.3-99999999999999999999", "1.2.3-a", "-1"),
            ("1.2.3-A", "1.2.3-a", "-1"),
            ("1.2.3-a-", "1.2.3-a", "1"),
            ("1.2.3-a.b.c", "1.2.3-a.b", "1"),
            ("1.2.3-x+build", "1.2.3-x", "0"),
        ] {
            assert_eq!(cmp(x, y), want, "{x} {y}");
        }
        assert!(cmp("1.2.3-1", "1.2.3-01").contains("not supported by regent"));
        assert!(
            cmp("1.2.3-9223372036854775808", "1.2.3-99999999999999999999")
                .contains("not supported")
        );
        assert!(cmp("1.2", "1.2.3").contains("operand 1: string \"1.2\" is not a valid SemVer"));
    }
}
