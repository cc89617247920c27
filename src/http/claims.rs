//! The shape a bearer JWT must have beyond what `jsonwebtoken` checks: the
//! `crit` header parameter (RFC 7515 section 4.1.11) and the types of the
//! registered claims regent reads or a policy may (`sub`, `iss`, `aud`,
//! `exp`, `nbf`, `iat`; RFC 7519 section 4.1).
//!
//! Why this exists: `jsonwebtoken` 11 ignores `crit` altogether, coerces or
//! skips ill-typed claims (a string `exp` reads as a missing one, a string
//! `nbf` or a `null` one is not checked at all, an array `iss` is accepted,
//! `iat` is never looked at, an empty `sub` passes), and reports what it
//! refuses in terms too vague to act on. Every check here refuses with a
//! fixed text naming the claim and the problem.
//!
//! What it leaves to others: the signature, the algorithm and the key
//! (`jsonwebtoken`, through [`super::jwt`]); whether `exp` has passed, `nbf`
//! has come, `iss` is the configured issuer and `aud` names a configured
//! audience, and which of the claims are required (`jsonwebtoken`'s
//! `Validation`, set up by [`super::jwt`]). Only the types and ranges of
//! claims that are present are checked here, and `iat`'s place in time,
//! which `jsonwebtoken` does not check. And, once a token verified, the
//! numbers its payload's text spells by hand ([`spelled`], for
//! `Caller::spelled`; the scan is `policy::spelled`'s, reached through
//! `protocol`).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};

/// The header parameters RFC 7515 section 4.1 registers: a `crit` that names
/// one of them is invalid (section 4.1.11: producers must not list them).
const REGISTERED_HEADERS: &[&str] = &[
    "alg", "jku", "jwk", "kid", "x5u", "x5c", "x5t", "x5t#S256", "typ", "cty", "crit",
];

/// Why a token was refused: the `error_description` of the 401's
/// `WWW-Authenticate` header (fixed texts: nothing the client sent is
/// echoed back).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub &'static str);

/// The numbers of a verified token's claims spelled otherwise than regent
/// writes them (`1E2`, `2.50`), found in the payload's own JSON text as
/// requests' are (`protocol::claims_spelled`): OPA, given the claims, writes
/// that text back. A payload that does not decode (`jsonwebtoken` decoded
/// it already, so it cannot happen) refuses the token.
pub fn spelled(token: &str) -> Result<Vec<Box<str>>, Refused> {
    let payload = token
        .split('.')
        .nth(1)
        .and_then(|p| URL_SAFE_NO_PAD.decode(p).ok())
        .ok_or(Refused("the token's payload is not base64url-encoded JSON"))?;
    Ok(crate::protocol::claims_spelled(&payload))
}

/// Refuses a token whose header has a `crit` parameter. regent understands
/// no JWS extension, so any well-formed `crit` names one it does not
/// understand, which RFC 7515 says makes the token invalid; an empty or
/// ill-typed `crit`, or one naming a registered parameter, is invalid in
/// itself. A header that does not decode is left to `jsonwebtoken`, which
/// refuses it.
pub fn check_crit(token: &str) -> Result<(), Refused> {
    let Some(header) = token.split('.').next() else {
        return Ok(());
    };
    let Some(header) = URL_SAFE_NO_PAD
        .decode(header)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Map<String, Value>>(&bytes).ok())
    else {
        return Ok(());
    };
    let Some(crit) = header.get("crit") else {
        return Ok(());
    };
    let Some(names) = crit
        .as_array()
        .and_then(|a| a.iter().map(Value::as_str).collect::<Option<Vec<_>>>())
    else {
        return Err(Refused(
            "the token's crit header is not an array of header parameter names (RFC 7515 section 4.1.11)",
        ));
    };
    if names.is_empty() {
        return Err(Refused(
            "the token's crit header is an empty array, which RFC 7515 section 4.1.11 forbids",
        ));
    }
    if names.iter().any(|n| REGISTERED_HEADERS.contains(n)) {
        return Err(Refused(
            "the token's crit header lists a header parameter RFC 7515 registers (such as alg), which it forbids",
        ));
    }
    Err(Refused(
        "the token's crit header lists an extension regent does not understand; tokens with crit are refused",
    ))
}

/// Why a NumericDate claim is refused, one text per claim.
struct DateClaim {
    name: &'static str,
    not_a_number: &'static str,
    out_of_range: &'static str,
}

const DATE_CLAIMS: &[DateClaim] = &[
    DateClaim {
        name: "exp",
        not_a_number: "the token's exp claim is not a number (NumericDate)",
        out_of_range: "the token's exp claim is negative or too large for a NumericDate (seconds since 1970)",
    },
    DateClaim {
        name: "nbf",
        not_a_number: "the token's nbf claim is not a number (NumericDate)",
        out_of_range: "the token's nbf claim is negative or too large for a NumericDate (seconds since 1970)",
    },
    DateClaim {
        name: "iat",
        not_a_number: "the token's iat claim is not a number (NumericDate)",
        out_of_range: "the token's iat claim is negative or too large for a NumericDate (seconds since 1970)",
    },
];

/// Refuses a token whose registered claims, where present, have the wrong
/// type or an impossible value; `now` is seconds since the epoch and
/// `leeway` the allowed clock skew (`--jwt-leeway-seconds`).
///
/// A claim that is present with `null` counts as present and ill-typed:
/// `jsonwebtoken` reads a `null` `nbf` as absent, which would let a token
/// through whose policy input still carries the claim.
///
/// `iat` in the future (beyond the leeway) is refused, although RFC 7519
/// makes `iat` informational and `jsonwebtoken` ignores it: a policy may
/// judge a token's age by it (`input.caller.claims.iat`), and a future
/// `iat` would make a token look fresher than it is. `exp` and `nbf` bound
/// the token's use either way.
pub fn check_claims(claims: &Map<String, Value>, now: u64, leeway: u64) -> Result<(), Refused> {
    for (name, empty, not_string) in [
        (
            "sub",
            "the token's sub claim is an empty string",
            "the token's sub claim is not a string",
        ),
        (
            "iss",
            "the token's iss claim is an empty string",
            "the token's iss claim is not a string",
        ),
    ] {
        match claims.get(name) {
            None => {}
            Some(Value::String(s)) if s.is_empty() => return Err(Refused(empty)),
            Some(Value::String(_)) => {}
            Some(_) => return Err(Refused(not_string)),
        }
    }
    match claims.get("aud") {
        None => {}
        Some(Value::String(s)) if s.is_empty() => {
            return Err(Refused("the token's aud claim is an empty string"));
        }
        Some(Value::String(_)) => {}
        Some(Value::Array(items)) if items.is_empty() => {
            return Err(Refused("the token's aud claim is an empty array"));
        }
        Some(Value::Array(items)) => {
            for item in items {
                match item {
                    Value::String(s) if s.is_empty() => {
                        return Err(Refused("the token's aud claim holds an empty string"));
                    }
                    Value::String(_) => {}
                    _ => {
                        return Err(Refused(
                            "the token's aud claim is not a string or an array of strings",
                        ));
                    }
                }
            }
        }
        Some(_) => {
            return Err(Refused(
                "the token's aud claim is not a string or an array of strings",
            ));
        }
    }
    for date in DATE_CLAIMS {
        let Some(value) = claims.get(date.name) else {
            continue;
        };
        // RFC 7519's NumericDate is a JSON number, fractions allowed.
        let Some(secs) = value.as_f64() else {
            return Err(Refused(date.not_a_number));
        };
        // What `jsonwebtoken` can read as seconds (a u64): negative and
        // huge values are refused rather than clamped.
        if !(secs.is_finite() && secs >= 0.0 && secs < u64::MAX as f64) {
            return Err(Refused(date.out_of_range));
        }
        if date.name == "iat" && secs > now.saturating_add(leeway) as f64 {
            return Err(Refused(
                "the token's iat claim is in the future (issued later than now, beyond --jwt-leeway-seconds)",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn b64(v: &Value) -> String {
        URL_SAFE_NO_PAD.encode(v.to_string())
    }

    fn crit(header: Value) -> Result<(), Refused> {
        check_crit(&format!("{}.{}.sig", b64(&header), b64(&json!({}))))
    }

    #[test]
    fn any_crit_is_refused_with_what_is_wrong_with_it() {
        assert_eq!(crit(json!({"alg": "EdDSA"})), Ok(()));
        let why = |h: Value| crit(h).unwrap_err().0;
        assert!(why(json!({"alg": "EdDSA", "crit": []})).contains("empty array"));
        assert!(why(json!({"alg": "EdDSA", "crit": "b64"})).contains("not an array"));
        assert!(why(json!({"alg": "EdDSA", "crit": [1]})).contains("not an array"));
        assert!(why(json!({"alg": "EdDSA", "crit": ["alg"]})).contains("registers"));
        assert!(
            why(json!({"alg": "EdDSA", "crit": ["b64"], "b64": false}))
                .contains("does not understand")
        );
        // Not decodable: jsonwebtoken refuses it with its own message.
        assert_eq!(check_crit("%%%.e30.sig"), Ok(()));
    }

    #[test]
    fn date_claims_must_be_non_negative_numbers_and_iat_not_in_the_future() {
        let check = |c: Value| check_claims(c.as_object().unwrap(), 1_000_000, 60);
        assert_eq!(check(json!({"exp": 1_000_100.5, "iat": 1_000_060})), Ok(()));
        assert!(
            check(json!({"iat": 1_000_061}))
                .unwrap_err()
                .0
                .contains("future")
        );
        assert!(
            check(json!({"nbf": null}))
                .unwrap_err()
                .0
                .contains("nbf claim is not a number")
        );
        assert!(
            check(json!({"exp": -1}))
                .unwrap_err()
                .0
                .contains("negative")
        );
        assert!(
            check(json!({"exp": 1e300}))
                .unwrap_err()
                .0
                .contains("too large")
        );
    }
}
