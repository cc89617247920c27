//! Whether a caller may make a call whose resolved `securitySchemes` require
//! OAuth scopes (`serve --enforce-scopes`): the schemes as SEP-1488 writes
//! them, the scopes a caller's claims grant, and what is missing.
//!
//! What the texts say, and what regent reads where they are silent (the
//! strict reading; docs/http.md, "Scopes per call"):
//!
//! - `securitySchemes` is a list of alternatives: the call may be made under
//!   any one of them (SEP-1488's mixed-auth example lists `noauth` beside
//!   `oauth2` for a tool anyone may call and a signed-in user may call
//!   with more). An absent list requires nothing. An empty list offers no
//!   way to call, and refuses.
//! - `{"type": "noauth"}` is met by anyone, with or without a caller.
//! - `{"type": "oauth2", "scopes": [...]}` is met by a caller whose token
//!   grants every scope listed (all of them; none listed: any caller).
//!   Scopes are compared as exact strings: a broader scope implying a
//!   narrower one (MCP 2026-07-28's "scope hierarchies") is for the policy
//!   to say, by listing the broader one as another alternative.
//! - Any other type is one regent cannot verify: never met.
//! - A scheme that is not an object with a string `type`, or whose
//!   `scopes` is not a list of strings, is a malformed requirement, and
//!   refuses the call.
//! - The granted scopes are the `scope` claim (a space-separated string,
//!   RFC 8693 and RFC 9068) or `scp` (a list of strings, or such a
//!   string). A claim of another type, or `scope` and `scp` naming
//!   different sets, grants nothing usable: a call that needs a scope is
//!   refused, saying which claim is at fault.
//!
//! When the call is refused for scope, the challenge names the scopes of
//! the first `oauth2` alternative in the listed order, all of them (what
//! the call needs, not only what is missing: MCP asks for all the scopes
//! of the operation in one challenge). A policy lists its preferred
//! alternative first.
//!
//! It knows nothing of MCP, HTTP or how the caller was verified.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::caller::Caller;

/// Why a call may not be made under its resolved `securitySchemes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shortfall {
    /// The caller lacks scopes an `oauth2` alternative needs.
    InsufficientScope {
        /// Every scope of the alternative the challenge names.
        required: Vec<String>,
        /// Those the caller's token does not grant (all of them when there
        /// is no caller, or its scope claim is unusable).
        missing: Vec<String>,
        /// Why the caller's scope claim could not be read, when it could not.
        claim: Option<String>,
        /// Whether there was a caller at all.
        caller: bool,
    },
    /// No alternative can ever be met here: the list is empty, or offers
    /// only types regent cannot verify.
    Unsatisfiable(String),
    /// The schemes are malformed (a policy or tool file's mistake).
    Malformed(String),
}

impl Shortfall {
    /// One line for the decision log and the error message.
    pub fn describe(&self) -> String {
        match self {
            Shortfall::InsufficientScope {
                required,
                missing,
                claim,
                caller,
            } => {
                let missing = missing.join(" ");
                let required = required.join(" ");
                match (caller, claim) {
                    (false, _) => format!(
                        "insufficient_scope: the call needs the OAuth scopes \"{required}\" and there is no caller (no verified token)"
                    ),
                    (true, Some(problem)) => format!(
                        "insufficient_scope: the call needs the OAuth scopes \"{required}\" and the token's scopes cannot be read: {problem}"
                    ),
                    (true, None) => format!(
                        "insufficient_scope: the token lacks \"{missing}\" (the call needs \"{required}\")"
                    ),
                }
            }
            Shortfall::Unsatisfiable(why) | Shortfall::Malformed(why) => why.clone(),
        }
    }
}

/// Checks `schemes` (the resolved `securitySchemes`, `None` when absent)
/// against what `caller` is granted.
pub fn check(schemes: Option<&[Value]>, caller: Option<&Caller>) -> Result<(), Shortfall> {
    let Some(schemes) = schemes else {
        return Ok(());
    };
    if schemes.is_empty() {
        return Err(Shortfall::Unsatisfiable(
            "securitySchemes is an empty list, which offers no way to make the call; list {\"type\": \"noauth\"} for a call that needs no credentials".into(),
        ));
    }
    let mut oauth: Vec<Vec<String>> = Vec::new();
    let mut noauth = false;
    for (i, scheme) in schemes.iter().enumerate() {
        match parse(scheme)
            .map_err(|why| Shortfall::Malformed(format!("securitySchemes[{i}] {why}")))?
        {
            Scheme::NoAuth => noauth = true,
            Scheme::OAuth2(scopes) => oauth.push(scopes),
            Scheme::Other => {}
        }
    }
    // Every scheme is read first, so a malformed one refuses whatever
    // else is listed.
    if noauth {
        return Ok(());
    }
    let Some(first) = oauth.first() else {
        let types: Vec<String> = schemes
            .iter()
            .filter_map(|s| s.get("type").and_then(Value::as_str))
            .map(|t| format!("`{t}`"))
            .collect();
        return Err(Shortfall::Unsatisfiable(format!(
            "securitySchemes offers only {}, which regent cannot verify (it checks `noauth` and `oauth2` scopes)",
            types.join(", ")
        )));
    };
    let required = || first.clone();
    let Some(caller) = caller else {
        return Err(Shortfall::InsufficientScope {
            required: required(),
            missing: required(),
            claim: None,
            caller: false,
        });
    };
    let granted = match granted(caller) {
        Ok(g) => g,
        Err(problem) => {
            return Err(Shortfall::InsufficientScope {
                required: required(),
                missing: required(),
                claim: Some(problem),
                caller: true,
            });
        }
    };
    if oauth
        .iter()
        .any(|scopes| scopes.iter().all(|s| granted.contains(s.as_str())))
    {
        return Ok(());
    }
    let missing = first
        .iter()
        .filter(|s| !granted.contains(s.as_str()))
        .cloned()
        .collect();
    Err(Shortfall::InsufficientScope {
        required: required(),
        missing,
        claim: None,
        caller: true,
    })
}

enum Scheme {
    NoAuth,
    /// Its scopes, each once, in the listed order.
    OAuth2(Vec<String>),
    Other,
}

fn parse(scheme: &Value) -> Result<Scheme, String> {
    let Some(obj) = scheme.as_object() else {
        return Err(format!(
            "must be an object such as {{\"type\": \"oauth2\", \"scopes\": [\"repo:read\"]}}, got {}",
            crate::diag::json_kind(scheme)
        ));
    };
    let kind = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(other) => {
            return Err(format!(
                "has `type` {}, which must be a string",
                crate::diag::json_kind(other)
            ));
        }
        None => return Err("has no `type` (`noauth` or `oauth2`)".into()),
    };
    match kind {
        "noauth" => Ok(Scheme::NoAuth),
        "oauth2" => {
            let mut scopes: Vec<String> = Vec::new();
            match obj.get("scopes") {
                None | Some(Value::Null) => {}
                Some(Value::Array(a)) => {
                    for (j, s) in a.iter().enumerate() {
                        match s {
                            Value::String(s) if valid_scope(s) => {
                                if !scopes.contains(s) {
                                    scopes.push(s.clone());
                                }
                            }
                            Value::String(s) => {
                                return Err(format!(
                                    "has scope {s:?} at scopes[{j}], which is not an OAuth scope token (printable ASCII without spaces, `\"` or `\\`)"
                                ));
                            }
                            other => {
                                return Err(format!(
                                    "has {} at scopes[{j}]; scopes must be strings",
                                    crate::diag::json_kind(other)
                                ));
                            }
                        }
                    }
                }
                Some(other) => {
                    return Err(format!(
                        "has `scopes` {}, which must be a list of strings",
                        crate::diag::json_kind(other)
                    ));
                }
            }
            Ok(Scheme::OAuth2(scopes))
        }
        _ => Ok(Scheme::Other),
    }
}

/// RFC 6749's scope-token: one or more of %x21 / %x23-5B / %x5D-7E.
fn valid_scope(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b == 0x21 || (0x23..=0x5B).contains(&b) || (0x5D..=0x7E).contains(&b))
}

/// The scopes `caller`'s claims grant, or why they cannot be read.
pub fn granted(caller: &Caller) -> Result<BTreeSet<&str>, String> {
    let scope = match caller.claims.get("scope") {
        None => None,
        Some(Value::String(s)) => Some(split(s)),
        Some(other) => {
            return Err(format!(
                "the `scope` claim is {}; it must be a space-separated string",
                crate::diag::json_kind(other)
            ));
        }
    };
    let scp = match caller.claims.get("scp") {
        None => None,
        Some(Value::String(s)) => Some(split(s)),
        Some(Value::Array(a)) => {
            let mut set = BTreeSet::new();
            for (i, v) in a.iter().enumerate() {
                match v {
                    Value::String(s) => {
                        set.insert(s.as_str());
                    }
                    other => {
                        return Err(format!(
                            "the `scp` claim has {} at [{i}]; it must be a list of strings or a space-separated string",
                            crate::diag::json_kind(other)
                        ));
                    }
                }
            }
            Some(set)
        }
        Some(other) => {
            return Err(format!(
                "the `scp` claim is {}; it must be a list of strings or a space-separated string",
                crate::diag::json_kind(other)
            ));
        }
    };
    match (scope, scp) {
        (Some(a), Some(b)) if a != b => Err(
            "the `scope` and `scp` claims name different scopes; a token should carry one of them"
                .into(),
        ),
        (Some(a), _) => Ok(a),
        (None, Some(b)) => Ok(b),
        (None, None) => Ok(BTreeSet::new()),
    }
}

/// RFC 6749 §3.3: scopes are separated by single spaces; runs of spaces
/// are read leniently (no empty scope is granted).
fn split(s: &str) -> BTreeSet<&str> {
    s.split(' ').filter(|t| !t.is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn caller(claims: Value) -> Caller {
        Caller {
            subject: "alice".into(),
            issuer: "https://idp".into(),
            claims: claims.as_object().unwrap().clone(),
            spelled: Vec::new(),
        }
    }

    fn schemes(v: Value) -> Vec<Value> {
        v.as_array().unwrap().clone()
    }

    #[test]
    fn absent_schemes_and_noauth_require_nothing() {
        assert_eq!(check(None, None), Ok(()));
        let s = schemes(json!([{"type": "noauth"}, {"type": "oauth2", "scopes": ["x"]}]));
        assert_eq!(check(Some(&s), None), Ok(()));
        // A broken claim does not matter where no token is needed.
        let c = caller(json!({"scope": 7}));
        assert_eq!(check(Some(&s), Some(&c)), Ok(()));
    }

    #[test]
    fn every_scope_of_one_alternative_is_required() {
        let s = schemes(json!([{"type": "oauth2", "scopes": ["repo:read", "repo:write"]}]));
        let read = caller(json!({"scope": "repo:read openid"}));
        assert_eq!(
            check(Some(&s), Some(&read)),
            Err(Shortfall::InsufficientScope {
                required: vec!["repo:read".into(), "repo:write".into()],
                missing: vec!["repo:write".into()],
                claim: None,
                caller: true,
            })
        );
        let both = caller(json!({"scope": "repo:write repo:read"}));
        assert_eq!(check(Some(&s), Some(&both)), Ok(()));
        let scp = caller(json!({"scp": ["repo:read", "repo:write"]}));
        assert_eq!(check(Some(&s), Some(&scp)), Ok(()));
        let scp = caller(json!({"scp": "repo:read  repo:write"}));
        assert_eq!(check(Some(&s), Some(&scp)), Ok(()));
    }

    #[test]
    fn any_alternative_will_do_and_the_first_is_challenged() {
        let s = schemes(json!([
            {"type": "oauth2", "scopes": ["repo:write"]},
            {"type": "oauth2", "scopes": ["repo"]},
        ]));
        assert_eq!(
            check(Some(&s), Some(&caller(json!({"scope": "repo"})))),
            Ok(())
        );
        let Err(Shortfall::InsufficientScope { required, .. }) =
            check(Some(&s), Some(&caller(json!({}))))
        else {
            panic!("refused for scope")
        };
        assert_eq!(required, vec!["repo:write".to_string()]);
        // No scopes listed: any caller, no caller refused.
        let any = schemes(json!([{"type": "oauth2"}]));
        assert_eq!(check(Some(&any), Some(&caller(json!({})))), Ok(()));
        assert!(matches!(
            check(Some(&any), None),
            Err(Shortfall::InsufficientScope { caller: false, .. })
        ));
    }

    #[test]
    fn ill_typed_claims_fail_closed() {
        let s = schemes(json!([{"type": "oauth2", "scopes": ["a"]}]));
        for claims in [
            json!({"scope": ["a"]}),
            json!({"scope": 1}),
            json!({"scp": [1]}),
            json!({"scp": {"a": true}}),
            json!({"scope": "a", "scp": ["a", "b"]}),
        ] {
            let got = check(Some(&s), Some(&caller(claims.clone())));
            assert!(
                matches!(&got, Err(Shortfall::InsufficientScope { claim: Some(_), missing, .. }) if missing == &["a"]),
                "{claims}: {got:?}"
            );
        }
        // Both, naming the same set, are fine.
        let same = caller(json!({"scope": "a b", "scp": ["b", "a"]}));
        assert_eq!(check(Some(&s), Some(&same)), Ok(()));
    }

    #[test]
    fn what_cannot_be_met_or_read_refuses() {
        assert!(matches!(
            check(Some(&[]), None),
            Err(Shortfall::Unsatisfiable(_))
        ));
        let apikey = schemes(json!([{"type": "apikey"}]));
        let got = check(Some(&apikey), Some(&caller(json!({"scope": "a"}))));
        assert!(
            matches!(&got, Err(Shortfall::Unsatisfiable(m)) if m.contains("`apikey`")),
            "{got:?}"
        );
        for bad in [
            json!(["oauth2"]),
            json!([{"scopes": ["a"]}]),
            json!([{"type": "oauth2", "scopes": "a"}]),
            json!([{"type": "oauth2", "scopes": [1]}]),
            json!([{"type": "oauth2", "scopes": ["a b"]}]),
            json!([{"type": "noauth"}, {"type": 2}]),
        ] {
            let got = check(Some(&schemes(bad.clone())), None);
            assert!(
                matches!(got, Err(Shortfall::Malformed(_))),
                "{bad}: {got:?}"
            );
        }
    }
}
