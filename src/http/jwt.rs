//! JWT bearer verification (`--jwt-jwks-file`, `--jwt-jwks-url`): the
//! public keys of a JWKS, an allow-list of public-key algorithms, and the
//! issuer, audience, expiry and not-before checks, with `jsonwebtoken` doing
//! the signature and claim checks. A verified token becomes a [`Caller`].
//! A key set read from a file is fixed; one fetched from a URL is kept
//! current by [`super::jwks`], and both are parsed by [`KeySet::parse`]
//! (`super::keyset`).
//!
//! What is refused, and where:
//! - at start-up: `none` and the HMAC algorithms in the allow-list (a
//!   public key must never be used as an HMAC secret), symmetric (`oct`)
//!   keys in the JWKS, a JWKS without a key usable with an allowed
//!   algorithm (a refetched set that breaks these rules is not used: the
//!   previous one stays);
//! - per request: a token whose algorithm is not allowed, whose `kid` names
//!   no key (for a remote set, after one rate-limited refetch) or, without
//!   `kid`, when not exactly one key fits its algorithm, whose signature
//!   does not verify, that has expired or is not yet valid (with `--jwt-leeway-seconds` of skew), whose issuer or
//!   audience is not the configured one, or that lacks `exp`, `iss`, `aud`
//!   or `sub`; and, by [`super::claims`], a token with a `crit` header or
//!   with ill-typed registered claims (checked once the signature verified).

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::claims;
// Where `guard` and the tests find them; defined below `jwt` so that
// `claims`, `keyset` and `jwks` need nothing of it (no cycle).
pub use super::claims::Refused;
use super::jwks::Remote;
pub use super::keyset::KeySet;
use super::verified::{self, Verified};
use crate::caller::Caller;

/// The algorithms accepted when `--jwt-algorithms` is not given.
pub const DEFAULT_ALGORITHMS: &str = "RS256,ES256,EdDSA";

/// What `--jwt-*` said, checked.
#[derive(Debug, Clone)]
pub struct JwtConfig {
    pub jwks: JwksSource,
    pub issuer: String,
    pub audiences: Vec<String>,
    pub algorithms: Vec<Algorithm>,
    pub leeway_seconds: u64,
}

/// Where the key set comes from.
#[derive(Debug, Clone)]
pub enum JwksSource {
    /// `--jwt-jwks-file`: read once at start-up.
    File(PathBuf),
    /// `--jwt-jwks-url`: fetched at start-up, then every `refresh` and on a
    /// token whose `kid` is unknown; `ca` is an extra trusted CA (PEM).
    Url {
        url: String,
        ca: Option<PathBuf>,
        refresh: Duration,
    },
}

/// Parses `--jwt-algorithms`: public-key algorithms only.
pub fn parse_algorithms(names: &[String]) -> Result<Vec<Algorithm>, String> {
    let mut out = Vec::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        if name.eq_ignore_ascii_case("none") {
            return Err(
                "error: --jwt-algorithms none is refused: an unsigned token proves nothing about its caller\n  \
                 help: list public-key algorithms only, such as RS256,ES256,EdDSA"
                    .to_string(),
            );
        }
        let alg = Algorithm::from_str(name).map_err(|_| {
            format!(
                "error: --jwt-algorithms {name:?} is not a JWS algorithm regent verifies\n  \
                 help: choose from RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, EdDSA"
            )
        })?;
        if matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512) {
            return Err(format!(
                "error: --jwt-algorithms {name} is refused: HMAC algorithms use a shared secret, and the keys of a JWKS are public, \
                 so anyone could sign with them\n  help: list public-key algorithms only, such as RS256,ES256,EdDSA"
            ));
        }
        if !out.contains(&alg) {
            out.push(alg);
        }
    }
    if out.is_empty() {
        return Err(
            "error: --jwt-algorithms names no algorithm\n  help: such as RS256,ES256,EdDSA".into(),
        );
    }
    Ok(out)
}

/// Where a [`Verifier`] finds its keys.
enum Keys {
    Fixed(KeySet),
    Remote(Arc<Remote>),
}

/// Verifies bearer tokens; built once at start-up.
pub struct Verifier {
    keys: Keys,
    /// One per allowed algorithm, allowing only it: `jsonwebtoken` refuses
    /// a validation whose algorithms are not all of the key's family.
    validations: Vec<(Algorithm, Validation)>,
    leeway_seconds: u64,
    /// Tokens verified before, by digest (`http/verified`).
    verified: Verified,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys = match &self.keys {
            Keys::Fixed(set) => set.key_count(),
            Keys::Remote(r) => r.current().key_count(),
        };
        f.debug_struct("Verifier")
            .field("keys", &keys)
            .field(
                "algorithms",
                &self.validations.iter().map(|(a, _)| a).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Verifier {
    /// Reads (or fetches) the key set and checks it against the
    /// configuration. Fetching a remote set at start-up blocks: call it
    /// outside the async runtime.
    pub fn load(cfg: &JwtConfig) -> Result<Verifier, String> {
        let keys = match &cfg.jwks {
            JwksSource::File(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    format!(
                        "error: cannot read the JWKS file {}: {}\n  help: --jwt-jwks-file names a JSON Web Key Set ({{\"keys\": [...]}}), as an identity provider publishes at its jwks_uri",
                        path.display(),
                        crate::diag::lower_io(&e)
                    )
                })?;
                let origin = format!("the JWKS file {}", path.display());
                Keys::Fixed(KeySet::parse(&text, &origin, &cfg.algorithms)?)
            }
            JwksSource::Url { url, ca, refresh } => Keys::Remote(Arc::new(Remote::start(
                url,
                ca.as_deref(),
                *refresh,
                cfg.algorithms.clone(),
            )?)),
        };
        Ok(Verifier::with_keys(keys, cfg))
    }

    fn with_keys(keys: Keys, cfg: &JwtConfig) -> Verifier {
        let validations = cfg
            .algorithms
            .iter()
            .map(|&alg| {
                let mut v = Validation::new(alg);
                v.leeway = cfg.leeway_seconds;
                v.validate_exp = true;
                v.validate_nbf = true;
                v.validate_aud = true;
                v.set_issuer(&[&cfg.issuer]);
                v.set_audience(&cfg.audiences);
                v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
                (alg, v)
            })
            .collect();
        Verifier {
            keys,
            validations,
            leeway_seconds: cfg.leeway_seconds,
            verified: Verified::default(),
        }
    }

    /// The remote key set, when the keys come from `--jwt-jwks-url`: its
    /// periodic refresh runs while the server does.
    pub fn remote(&self) -> Option<Arc<Remote>> {
        match &self.keys {
            Keys::Remote(r) => Some(r.clone()),
            Keys::Fixed(_) => None,
        }
    }

    /// The caller a bearer token proves, or why it proves nothing. A `kid`
    /// that a remote key set lacks makes it refetch (at most once per
    /// [`super::jwks::ON_DEMAND_WINDOW`]) and look once more.
    pub async fn verify(&self, token: &str) -> Result<Arc<Caller>, Refused> {
        let digest = verified::digest(token);
        // Which key set would verify it now: a rotation makes earlier
        // verifications count for nothing.
        let remote_set = match &self.keys {
            Keys::Fixed(_) => None,
            Keys::Remote(remote) => Some(remote.current()),
        };
        let generation = remote_set.as_ref().map_or(0, verified::key_id);
        if let Some(caller) = self.verified.get(&digest, generation, self.leeway_seconds) {
            return Ok(caller);
        }
        let (caller, used) = self.verify_signed(token).await.inspect_err(|why| {
            // The fixed text only: never the token or anything in it.
            tracing::info!("refused a bearer token: {}", why.0);
        })?;
        let caller = Arc::new(caller);
        let expires = caller.claims.get("exp").and_then(Value::as_u64);
        // Remembered under the set that verified it (after a refetch for an
        // unknown `kid`, the new one).
        let pin = used.map(|set| set as Arc<dyn std::any::Any + Send + Sync>);
        if let Some(expires) = expires {
            self.verified.insert(digest, caller.clone(), expires, pin);
        }
        Ok(caller)
    }

    /// Verifies `token`'s signature and claims; with a remote key set, also
    /// the set that verified it.
    async fn verify_signed(&self, token: &str) -> Result<(Caller, Option<Arc<KeySet>>), Refused> {
        // Before `decode_header`, which reads an ill-typed `crit` as a
        // malformed token and a well-typed one as nothing at all.
        claims::check_crit(token)?;
        let header = jsonwebtoken::decode_header(token).map_err(|_| {
            Refused(
                "the token is not a signed JWT with an algorithm regent verifies (alg none is never accepted)",
            )
        })?;
        let Some((_, validation)) = self.validations.iter().find(|(a, _)| *a == header.alg) else {
            return Err(Refused("the token's signing algorithm is not allowed"));
        };
        let kid = header.kid.as_deref();
        // A remote set is the one current now, or after a refetch for an
        // unknown `kid`; it is returned as the set that verified the token.
        let mut used = None;
        let set = match &self.keys {
            Keys::Fixed(set) => set,
            Keys::Remote(remote) => {
                let mut set = remote.current();
                if let Some(kid) = kid
                    && !set.has_kid(kid)
                {
                    remote.refresh_for_unknown_kid().await;
                    set = remote.current();
                }
                &**used.insert(set)
            }
        };
        let claims = decode(
            token,
            set.key_for(kid, header.alg)?,
            validation,
            self.leeway_seconds,
        )?;
        let text = |k: &str| claims.get(k).and_then(Value::as_str).map(str::to_string);
        let subject = text("sub").ok_or(Refused("the token's sub claim is not a string"))?;
        let issuer = text("iss").ok_or(Refused("the token's iss claim is not a string"))?;
        let spelled = claims::spelled(token)?;
        Ok((
            Caller {
                subject,
                issuer,
                claims,
                spelled,
            },
            used,
        ))
    }
}

/// Verifies `token` with `key` and checks its claims: their types first
/// ([`claims::check_claims`]), then `validation`'s checks. `jsonwebtoken`
/// checks the signature before any claim, so when it refuses a claim the
/// signature has verified, and the claims are looked at again for a type
/// problem, which is what the refusal then names (a string `exp` would
/// otherwise read as "the token has no expiry").
fn decode(
    token: &str,
    key: &DecodingKey,
    validation: &Validation,
    leeway: u64,
) -> Result<Map<String, Value>, Refused> {
    crate::jwt_crypto::install();
    let now = jsonwebtoken::get_current_timestamp();
    match jsonwebtoken::decode::<Map<String, Value>>(token, key, validation) {
        Ok(data) => {
            claims::check_claims(&data.claims, now, leeway)?;
            Ok(data.claims)
        }
        Err(e) => {
            if claims_refused(e.kind())
                && let Ok(claims) =
                    jsonwebtoken::dangerous::insecure_decode_claims::<Map<String, Value>>(token)
            {
                claims::check_claims(&claims, now, leeway)?;
            }
            Err(Refused(describe(e.kind())))
        }
    }
}

/// Whether `jsonwebtoken` refused a claim, which it does only after the
/// signature verified. `Json` is its reading of the claims (a claim of a
/// type its validation cannot skip, such as an array `sub`, fails the whole
/// read); the header, the only other JSON, was read before `decode`.
fn claims_refused(kind: &ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::Json(_)
            | ErrorKind::ExpiredSignature
            | ErrorKind::ImmatureSignature
            | ErrorKind::InvalidIssuer
            | ErrorKind::InvalidAudience
            | ErrorKind::InvalidSubject
            | ErrorKind::MissingRequiredClaim(_)
            | ErrorKind::InvalidClaimFormat(_)
    )
}

/// A fixed description of why `jsonwebtoken` refused a token.
fn describe(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::ExpiredSignature => "the token has expired",
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)",
        ErrorKind::InvalidIssuer => "the token's issuer (iss) is not accepted",
        ErrorKind::InvalidAudience => "the token's audience (aud) is not accepted",
        ErrorKind::InvalidSignature => "the token's signature does not verify",
        ErrorKind::InvalidAlgorithm => "the token's signing algorithm is not allowed",
        ErrorKind::MissingRequiredClaim(c) => match c.as_str() {
            "exp" => "the token has no expiry (exp)",
            "iss" => "the token has no issuer (iss)",
            "aud" => "the token has no audience (aud)",
            "sub" => "the token has no subject (sub)",
            _ => "the token lacks a required claim",
        },
        ErrorKind::InvalidClaimFormat(_) => "a claim of the token has the wrong type",
        _ => "the token is malformed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, algs: &[Algorithm]) -> Result<KeySet, String> {
        KeySet::parse(text, "the JWKS file jwks.json", algs)
    }

    const ED: &str =
        r#"{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#;

    #[test]
    fn none_and_hmac_are_refused_in_the_allow_list() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(
            parse_algorithms(&s(&["none"]))
                .unwrap_err()
                .contains("unsigned")
        );
        assert!(
            parse_algorithms(&s(&["RS256", "HS256"]))
                .unwrap_err()
                .contains("HMAC")
        );
        assert!(parse_algorithms(&s(&["XX1"])).is_err());
        assert_eq!(
            parse_algorithms(&s(&["RS256", "ES256", "EdDSA"])).unwrap(),
            vec![Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA]
        );
    }

    #[test]
    fn symmetric_keys_and_sets_without_a_usable_key_are_refused() {
        let oct = r#"{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}"#;
        let e = parse(oct, &[Algorithm::RS256]).unwrap_err();
        assert!(e.contains("symmetric"), "{e}");
        let ed = format!(r#"{{"keys":[{ED}]}}"#);
        let e = parse(&ed, &[Algorithm::RS256]).unwrap_err();
        assert!(e.contains("no public key usable"), "{e}");
        assert!(parse(&ed, &[Algorithm::EdDSA]).is_ok());
    }

    #[test]
    fn a_token_without_kid_needs_exactly_one_fitting_key() {
        let one = format!(r#"{{"keys":[{ED}]}}"#);
        let v = parse(&one, &[Algorithm::EdDSA]).unwrap();
        assert!(v.key_for(None, Algorithm::EdDSA).is_ok());
        assert!(v.key_for(Some("x"), Algorithm::EdDSA).is_err());
        let two = format!(r#"{{"keys":[{ED},{ED}]}}"#);
        let v = parse(&two, &[Algorithm::EdDSA]).unwrap();
        assert_eq!(
            v.key_for(None, Algorithm::EdDSA).err(),
            Some(Refused(
                "the token has no key id (kid) and more than one key fits its algorithm"
            ))
        );
    }
}
