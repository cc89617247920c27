//! The usable public keys of one JSON Web Key Set, parsed the same way for
//! `--jwt-jwks-file` and for a set `jwks` fetched (`KeySet::parse`), and the
//! key a token names. It leaves the token's checks to `jwt` and `claims`,
//! and fetching to `jwks`; it sits below both so that neither uses the
//! other for it.

use jsonwebtoken::jwk::{
    AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm, PublicKeyUse,
};
use jsonwebtoken::{Algorithm, DecodingKey};

use super::claims::Refused;

/// One public key of the set.
struct Key {
    kid: Option<String>,
    /// The algorithms of the allow-list this key can verify (only the JWK's
    /// own `alg`, when it names one).
    fits: Vec<Algorithm>,
    key: DecodingKey,
}

/// The usable keys of one JWKS document.
pub struct KeySet {
    keys: Vec<Key>,
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.keys.iter().map(|k| &k.kid))
            .finish()
    }
}

impl KeySet {
    /// The keys of the JWKS `text` usable with `algorithms`; `origin` names
    /// where it came from in errors ("the JWKS file PATH", "the JWKS at
    /// URL"). Refuses symmetric keys and a set with no usable key.
    pub fn parse(text: &str, origin: &str, algorithms: &[Algorithm]) -> Result<KeySet, String> {
        let set: JwkSet = serde_json::from_str(text).map_err(|e| {
            format!(
                "error: {origin} is not a JSON Web Key Set: {e}\n  help: it must be {{\"keys\": [...]}} with RSA, EC or OKP (Ed25519) public keys"
            )
        })?;
        let mut keys = Vec::new();
        for (i, jwk) in set.keys.iter().enumerate() {
            let name = match &jwk.common.key_id {
                Some(kid) => format!("key {kid:?}"),
                None => format!("key {}", i + 1),
            };
            if let AlgorithmParameters::OctetKey(_) = jwk.algorithm {
                return Err(format!(
                    "error: {origin} holds a symmetric (oct) {name}\n  help: regent verifies tokens with public keys only; remove the shared secret from the set"
                ));
            }
            if matches!(
                jwk.common.public_key_use,
                Some(PublicKeyUse::Encryption) | Some(PublicKeyUse::Other(_))
            ) {
                tracing::warn!("{origin}: {name} is not for signatures; skipped");
                continue;
            }
            let fits = fits(jwk, algorithms);
            if fits.is_empty() {
                tracing::warn!("{origin}: {name} cannot verify any of --jwt-algorithms; skipped");
                continue;
            }
            let key = DecodingKey::from_jwk(jwk)
                .map_err(|e| format!("error: {origin}: {name} is not a usable public key: {e}"))?;
            keys.push(Key {
                kid: jwk.common.key_id.clone(),
                fits,
                key,
            });
        }
        if keys.is_empty() {
            return Err(format!(
                "error: {origin} has no public key usable with --jwt-algorithms {}\n  help: RSA keys verify RS*/PS*, EC P-256 ES256, EC P-384 ES384, OKP Ed25519 EdDSA",
                algorithms
                    .iter()
                    .map(|a| format!("{a:?}"))
                    .collect::<Vec<_>>()
                    .join(",")
            ));
        }
        Ok(KeySet { keys })
    }

    /// How many usable keys the set holds (never zero).
    pub fn key_count(&self) -> usize {
        self.keys.len()
    }

    pub(super) fn has_kid(&self, kid: &str) -> bool {
        self.keys.iter().any(|k| k.kid.as_deref() == Some(kid))
    }

    /// The key named by `kid`; without one, the only key that fits `alg`.
    pub(super) fn key_for(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<&DecodingKey, Refused> {
        let usable = |k: &&Key| k.fits.contains(&alg);
        match kid {
            Some(kid) => {
                let key = self
                    .keys
                    .iter()
                    .find(|k| k.kid.as_deref() == Some(kid))
                    .ok_or(Refused("the token's key id (kid) is not in the key set"))?;
                if !usable(&key) {
                    return Err(Refused(
                        "the key the token names (kid) is not for its signing algorithm",
                    ));
                }
                Ok(&key.key)
            }
            None => {
                let mut fitting = self.keys.iter().filter(usable);
                match (fitting.next(), fitting.next()) {
                    (Some(k), None) => Ok(&k.key),
                    (None, _) => Err(Refused("no key in the key set fits the token's algorithm")),
                    (Some(_), Some(_)) => Err(Refused(
                        "the token has no key id (kid) and more than one key fits its algorithm",
                    )),
                }
            }
        }
    }
}

/// The allowed algorithms `jwk` can verify: by key type and curve, and only
/// its own `alg` when it names one.
fn fits(jwk: &Jwk, allowed: &[Algorithm]) -> Vec<Algorithm> {
    allowed
        .iter()
        .copied()
        .filter(|alg| {
            let kind = match &jwk.algorithm {
                AlgorithmParameters::RSA(_) => matches!(
                    alg,
                    Algorithm::RS256
                        | Algorithm::RS384
                        | Algorithm::RS512
                        | Algorithm::PS256
                        | Algorithm::PS384
                        | Algorithm::PS512
                ),
                AlgorithmParameters::EllipticCurve(p) => matches!(
                    (&p.curve, alg),
                    (EllipticCurve::P256, Algorithm::ES256)
                        | (EllipticCurve::P384, Algorithm::ES384)
                ),
                AlgorithmParameters::OctetKeyPair(p) => {
                    p.curve == EllipticCurve::Ed25519 && *alg == Algorithm::EdDSA
                }
                _ => false,
            };
            kind && jwk
                .common
                .key_algorithm
                .is_none_or(|own| own == KeyAlgorithm::from(*alg))
        })
        .collect()
}
