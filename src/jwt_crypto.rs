//! `jsonwebtoken`'s cryptography on `ring`, the provider rustls already uses.
//!
//! `jsonwebtoken` 11 keeps its signatures behind a `CryptoProvider` and
//! ships two: RustCrypto's (a second generation of `sha2`, `digest`, `hmac`,
//! `rand` and `getrandom` beside the ones rmcp and rustls bring, plus `rsa`,
//! `p256`, `p384` and `ed25519-dalek`) and aws-lc-rs (a long C build). regent
//! already builds `ring` for TLS, and `ring` verifies and signs every
//! algorithm regent accepts, so this provider is the glue between the two and
//! nothing else: no cryptography is written here.
//!
//! One difference from RustCrypto's provider, on purpose: `ring` refuses RSA
//! keys under 2048 bits (its `RSA_*_2048_8192_*` algorithms), which NIST
//! stopped allowing in 2013 and RFC 7518 section 3.3 requires.
//!
//! [`install`] puts the provider in place once per process; every user of
//! `jsonwebtoken` in regent calls it first (`http/jwt`, and anything signing
//! or verifying a JWS). What a token must say is `http/jwt`'s and
//! `http/claims`' business.

use std::sync::Once;

use jsonwebtoken::crypto::{CryptoProvider, JwtSigner, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::{Error, ErrorKind, Result};
use jsonwebtoken::jwk::{EllipticCurve, ThumbprintHash};
use jsonwebtoken::signature;
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, DecodingKeyKind, EncodingKey};
use ring::rand::SystemRandom;
use ring::signature::{self as sig, KeyPair as _};

/// Installs the provider for this process (once; later calls do nothing).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Another provider can only be there if someone installed one
        // before regent did, which nothing in regent does.
        let _ = PROVIDER.install_default();
    });
}

static PROVIDER: CryptoProvider = CryptoProvider {
    signer_factory: signer,
    verifier_factory: verifier,
    key_utils: KeyUtils {
        rsa_pub_components_from_private_key: rsa_components_of_private,
        rsa_pub_components_from_public_key: rsa_components_of_public,
        ec_pub_components_from_private_key: ec_components_of_private,
        ed_pub_components_from_private_key: ed_component_of_private,
        compute_digest: digest,
    },
};

/// The family a key must belong to for `alg`; `None` for an algorithm
/// added to `jsonwebtoken` after this was written, which is refused.
fn family(alg: Algorithm) -> Option<AlgorithmFamily> {
    Some(match alg {
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => AlgorithmFamily::Hmac,
        Algorithm::RS256
        | Algorithm::RS384
        | Algorithm::RS512
        | Algorithm::PS256
        | Algorithm::PS384
        | Algorithm::PS512 => AlgorithmFamily::Rsa,
        Algorithm::ES256 | Algorithm::ES384 => AlgorithmFamily::Ec,
        Algorithm::EdDSA => AlgorithmFamily::Ed,
        _ => return None,
    })
}

fn hmac_of(alg: Algorithm) -> ring::hmac::Algorithm {
    match alg {
        Algorithm::HS384 => ring::hmac::HMAC_SHA384,
        Algorithm::HS512 => ring::hmac::HMAC_SHA512,
        _ => ring::hmac::HMAC_SHA256,
    }
}

/// `ring`'s parameters for an RSA `alg`.
fn rsa_params_of(alg: Algorithm) -> Option<&'static sig::RsaParameters> {
    Some(match alg {
        Algorithm::RS256 => &sig::RSA_PKCS1_2048_8192_SHA256,
        Algorithm::RS384 => &sig::RSA_PKCS1_2048_8192_SHA384,
        Algorithm::RS512 => &sig::RSA_PKCS1_2048_8192_SHA512,
        Algorithm::PS256 => &sig::RSA_PSS_2048_8192_SHA256,
        Algorithm::PS384 => &sig::RSA_PSS_2048_8192_SHA384,
        Algorithm::PS512 => &sig::RSA_PSS_2048_8192_SHA512,
        _ => return None,
    })
}

/// `ring`'s verification algorithm for a public-key `alg`.
fn verification_of(alg: Algorithm) -> Option<&'static dyn sig::VerificationAlgorithm> {
    if let Some(rsa) = rsa_params_of(alg) {
        return Some(rsa);
    }
    Some(match alg {
        Algorithm::ES256 => &sig::ECDSA_P256_SHA256_FIXED,
        Algorithm::ES384 => &sig::ECDSA_P384_SHA384_FIXED,
        Algorithm::EdDSA => &sig::ED25519,
        _ => return None,
    })
}

fn rsa_encoding_of(alg: Algorithm) -> &'static dyn sig::RsaEncoding {
    match alg {
        Algorithm::RS384 => &sig::RSA_PKCS1_SHA384,
        Algorithm::RS512 => &sig::RSA_PKCS1_SHA512,
        Algorithm::PS256 => &sig::RSA_PSS_SHA256,
        Algorithm::PS384 => &sig::RSA_PSS_SHA384,
        Algorithm::PS512 => &sig::RSA_PSS_SHA512,
        _ => &sig::RSA_PKCS1_SHA256,
    }
}

fn key_format() -> Error {
    ErrorKind::InvalidKeyFormat.into()
}

// ---- verifying ----

struct Verifier {
    alg: Algorithm,
    key: DecodingKey,
}

impl signature::Verifier<Vec<u8>> for Verifier {
    fn verify(&self, msg: &[u8], signature: &Vec<u8>) -> std::result::Result<(), signature::Error> {
        let refused = |_| signature::Error::new();
        if let Some(alg) = verification_of(self.alg) {
            return match self.key.kind() {
                DecodingKeyKind::SecretOrDer(public) => {
                    sig::UnparsedPublicKey::new(alg, public).verify(msg, signature)
                }
                DecodingKeyKind::RsaModulusExponent { n, e } => match rsa_params_of(self.alg) {
                    Some(params) => {
                        sig::RsaPublicKeyComponents { n, e }.verify(params, msg, signature)
                    }
                    None => return Err(signature::Error::new()),
                },
            }
            .map_err(refused);
        }
        let DecodingKeyKind::SecretOrDer(secret) = self.key.kind() else {
            return Err(signature::Error::new());
        };
        let key = ring::hmac::Key::new(hmac_of(self.alg), secret);
        ring::hmac::verify(&key, msg, signature).map_err(refused)
    }
}

impl JwtVerifier for Verifier {
    fn algorithm(&self) -> Algorithm {
        self.alg
    }
}

fn verifier(alg: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>> {
    if Some(key.family()) != family(*alg) {
        return Err(key_format());
    }
    // RSA components only make sense for RSA algorithms: `family` said so.
    Ok(Box::new(Verifier {
        alg: *alg,
        key: key.clone(),
    }))
}

// ---- signing ----

enum Signing {
    Hmac(ring::hmac::Key),
    Rsa(sig::RsaKeyPair, &'static dyn sig::RsaEncoding),
    Ecdsa(sig::EcdsaKeyPair),
    Ed(sig::Ed25519KeyPair),
}

struct Signer {
    alg: Algorithm,
    key: Signing,
}

impl signature::Signer<Vec<u8>> for Signer {
    fn try_sign(&self, msg: &[u8]) -> std::result::Result<Vec<u8>, signature::Error> {
        let rng = SystemRandom::new();
        match &self.key {
            Signing::Hmac(key) => Ok(ring::hmac::sign(key, msg).as_ref().to_vec()),
            Signing::Rsa(pair, encoding) => {
                let mut out = vec![0; pair.public().modulus_len()];
                pair.sign(*encoding, &rng, msg, &mut out)
                    .map_err(|_| signature::Error::new())?;
                Ok(out)
            }
            Signing::Ecdsa(pair) => pair
                .sign(&rng, msg)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| signature::Error::new()),
            Signing::Ed(pair) => Ok(pair.sign(msg).as_ref().to_vec()),
        }
    }
}

impl JwtSigner for Signer {
    fn algorithm(&self) -> Algorithm {
        self.alg
    }
}

/// An RSA private key as `EncodingKey::from_rsa_pem`/`from_rsa_der` hold it
/// (PKCS#1), or PKCS#8.
fn rsa_pair(der: &[u8]) -> Result<sig::RsaKeyPair> {
    sig::RsaKeyPair::from_der(der)
        .or_else(|_| sig::RsaKeyPair::from_pkcs8(der))
        .map_err(|e| ErrorKind::InvalidRsaKey(e.to_string()).into())
}

fn ecdsa_pair(alg: Algorithm, pkcs8: &[u8]) -> Result<sig::EcdsaKeyPair> {
    let signing = match alg {
        Algorithm::ES384 => &sig::ECDSA_P384_SHA384_FIXED_SIGNING,
        _ => &sig::ECDSA_P256_SHA256_FIXED_SIGNING,
    };
    sig::EcdsaKeyPair::from_pkcs8(signing, pkcs8, &SystemRandom::new())
        .map_err(|_| ErrorKind::InvalidEcdsaKey.into())
}

fn ed_pair(pkcs8: &[u8]) -> Result<sig::Ed25519KeyPair> {
    sig::Ed25519KeyPair::from_pkcs8_maybe_unchecked(pkcs8)
        .map_err(|_| ErrorKind::InvalidEddsaKey.into())
}

fn signer(alg: &Algorithm, key: &EncodingKey) -> Result<Box<dyn JwtSigner>> {
    let alg = *alg;
    let Some(fam) = family(alg).filter(|f| *f == key.family()) else {
        return Err(key_format());
    };
    let der = key.as_bytes();
    let key = match fam {
        AlgorithmFamily::Hmac => Signing::Hmac(ring::hmac::Key::new(hmac_of(alg), der)),
        AlgorithmFamily::Rsa => Signing::Rsa(rsa_pair(der)?, rsa_encoding_of(alg)),
        AlgorithmFamily::Ec => Signing::Ecdsa(ecdsa_pair(alg, der)?),
        AlgorithmFamily::Ed => Signing::Ed(ed_pair(der)?),
    };
    Ok(Box::new(Signer { alg, key }))
}

// ---- what JWK processing needs ----

fn rsa_components_of_private(der: &[u8]) -> Result<(Vec<u8>, Vec<u8>)> {
    let pair = rsa_pair(der)?;
    let c: sig::RsaPublicKeyComponents<Vec<u8>> = pair.public().into();
    Ok((c.n, c.e))
}

fn rsa_components_of_public(_der: &[u8]) -> Result<(Vec<u8>, Vec<u8>)> {
    // `ring` verifies with a DER public key but does not take one apart;
    // nothing in regent builds a JWK from one.
    Err(ErrorKind::InvalidRsaKey(
        "reading the components of an RSA public key is not supported; give the JWK's n and e"
            .into(),
    )
    .into())
}

fn ec_components_of_private(
    pkcs8: &[u8],
    alg: Algorithm,
) -> Result<(EllipticCurve, Vec<u8>, Vec<u8>)> {
    let (curve, half) = match alg {
        Algorithm::ES256 => (EllipticCurve::P256, 32),
        Algorithm::ES384 => (EllipticCurve::P384, 48),
        _ => return Err(ErrorKind::InvalidEcdsaKey.into()),
    };
    let pair = ecdsa_pair(alg, pkcs8)?;
    // An uncompressed point: 0x04, then x, then y.
    let point = pair.public_key().as_ref();
    if point.len() != 1 + 2 * half || point[0] != 4 {
        return Err(ErrorKind::InvalidEcdsaKey.into());
    }
    Ok((
        curve,
        point[1..1 + half].to_vec(),
        point[1 + half..].to_vec(),
    ))
}

fn ed_component_of_private(pkcs8: &[u8], curve: &EllipticCurve) -> Result<Vec<u8>> {
    match curve {
        EllipticCurve::Ed25519 => Ok(ed_pair(pkcs8)?.public_key().as_ref().to_vec()),
        _ => Err(ErrorKind::InvalidAlgorithm.into()),
    }
}

fn digest(data: &[u8], hash: ThumbprintHash) -> Result<Vec<u8>> {
    let alg = match hash {
        ThumbprintHash::SHA256 => &ring::digest::SHA256,
        ThumbprintHash::SHA384 => &ring::digest::SHA384,
        ThumbprintHash::SHA512 => &ring::digest::SHA512,
        _ => return Err(ErrorKind::InvalidAlgorithm.into()),
    };
    Ok(ring::digest::digest(alg, data).as_ref().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{Header, Validation, decode, encode};
    use ring::signature::KeyPair;
    use serde_json::{Value, json};

    fn b64(b: &[u8]) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
    }

    fn roundtrip(alg: Algorithm, enc: &EncodingKey, dec: &DecodingKey) {
        install();
        let claims = json!({"sub": "alice", "exp": 4_000_000_000u64});
        let token = encode(&Header::new(alg), &claims, enc).expect("signs");
        let mut v = Validation::new(alg);
        v.validate_aud = false;
        let got = decode::<Value>(&token, dec, &v).expect("verifies");
        assert_eq!(got.claims["sub"], "alice");
        // One flipped bit in the signature is refused.
        let mut bad = token.clone().into_bytes();
        let last = bad.len() - 2;
        bad[last] = if bad[last] == b'A' { b'B' } else { b'A' };
        let bad = String::from_utf8(bad).unwrap();
        assert!(
            decode::<Value>(&bad, dec, &v).is_err(),
            "{alg:?} accepted a bad signature"
        );
    }

    #[test]
    fn ecdsa_and_eddsa_sign_and_verify() {
        let rng = SystemRandom::new();
        for (alg, signing) in [
            (Algorithm::ES256, &sig::ECDSA_P256_SHA256_FIXED_SIGNING),
            (Algorithm::ES384, &sig::ECDSA_P384_SHA384_FIXED_SIGNING),
        ] {
            let pkcs8 = sig::EcdsaKeyPair::generate_pkcs8(signing, &rng).unwrap();
            let pair = sig::EcdsaKeyPair::from_pkcs8(signing, pkcs8.as_ref(), &rng).unwrap();
            let point = pair.public_key().as_ref();
            let half = (point.len() - 1) / 2;
            let dec = DecodingKey::from_ec_components(
                &b64(&point[1..1 + half]),
                &b64(&point[1 + half..]),
            )
            .unwrap();
            roundtrip(alg, &EncodingKey::from_ec_der(pkcs8.as_ref()), &dec);
        }
        let pkcs8 = sig::Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let pair = sig::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let dec = DecodingKey::from_ed_components(&b64(pair.public_key().as_ref())).unwrap();
        roundtrip(
            Algorithm::EdDSA,
            &EncodingKey::from_ed_der(pkcs8.as_ref()),
            &dec,
        );
    }

    #[test]
    fn rsa_signs_and_verifies() {
        use base64::Engine as _;
        let pem = include_str!("../tests/fixtures/jwks/rsa.key");
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .unwrap();
        let (n, e) = rsa_components_of_private(&der).unwrap();
        let dec = DecodingKey::from_rsa_components(&b64(&n), &b64(&e)).unwrap();
        for alg in [
            Algorithm::RS256,
            Algorithm::RS384,
            Algorithm::RS512,
            Algorithm::PS256,
            Algorithm::PS384,
            Algorithm::PS512,
        ] {
            roundtrip(alg, &EncodingKey::from_rsa_der(&der), &dec);
        }
    }

    #[test]
    fn hmac_signs_and_verifies() {
        let secret = b"a secret of thirty-two bytes....";
        for alg in [Algorithm::HS256, Algorithm::HS384, Algorithm::HS512] {
            roundtrip(
                alg,
                &EncodingKey::from_secret(secret),
                &DecodingKey::from_secret(secret),
            );
        }
    }

    #[test]
    fn a_key_of_another_family_is_refused() {
        install();
        let token = encode(
            &Header::new(Algorithm::HS256),
            &json!({"sub": "a", "exp": 4_000_000_000u64}),
            &EncodingKey::from_secret(b"s"),
        )
        .unwrap();
        let ed = DecodingKey::from_ed_components(&b64(&[7; 32])).unwrap();
        assert!(decode::<Value>(&token, &ed, &Validation::new(Algorithm::HS256)).is_err());
    }
}
