//! OPA's bundle signatures: `.signatures.json` is `{"signatures": [JWS]}`,
//! one compact JWS whose payload lists every other file of the bundle with
//! its digest (`{"files": [{"name", "hash", "algorithm"}], "keyid"?,
//! "scope"?, "iss"?, "iat"?}`), signed with RS256/384/512, PS256/384/512 or
//! ES256/384. The key id is the header's `kid`, else the payload's `keyid`
//! (deprecated in OPA, still written by `opa build --signing-key`).
//!
//! Verifying follows OPA's reader: exactly one JWS, no signing plugin, the
//! signature checked with the configured public key, the payload's `scope`
//! equal to the configured one (regent configures none, so a scoped
//! signature is refused, as OPA refuses one without a matching `scope`),
//! then every file hashed (`bundle::hash`) and compared: a file the payload
//! does not list, a digest that differs, or a listed file the bundle lacks
//! refuses the whole bundle. HMAC (HS256), which OPA also accepts, is not:
//! a shared secret on every replica could sign as well as verify.
//!
//! Keys are PEM files (`PUBLIC KEY` SPKI or `RSA PUBLIC KEY` for
//! verifying; `PRIVATE KEY` PKCS#8 or `RSA PRIVATE KEY` for signing) or, for
//! verifying, a JWK set whose keys are chosen by `kid`. They are parsed with
//! RustCrypto's `pkcs8`/`spki` and handed to jsonwebtoken as DER.

use std::collections::BTreeMap;

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use pkcs8::der::Decode;
use serde::{Deserialize, Serialize};

use super::archive::Files;
use super::hash;
use super::{BundleError, SIGNATURES};

const RSA_OID: &str = "1.2.840.113549.1.1.1";
const EC_OID: &str = "1.2.840.10045.2.1";
const P256_OID: &str = "1.2.840.10045.3.1.7";
const P384_OID: &str = "1.3.132.0.34";

/// One entry of the payload's `files`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileInfo {
    pub name: String,
    pub hash: String,
    pub algorithm: String,
}

/// The JWS payload.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Payload {
    files: Vec<FileInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    keyid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scope: Option<String>,
}

/// `.signatures.json`.
#[derive(Debug, Deserialize, Serialize)]
struct SignaturesFile {
    #[serde(default)]
    signatures: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    plugin: Option<String>,
}

/// Public keys a bundle's signature is verified with.
pub struct PublicKeys {
    keys: Vec<PublicKey>,
    /// Where they were read from, for messages.
    from: String,
}

struct PublicKey {
    kid: Option<String>,
    key: DecodingKey,
    algorithms: Vec<Algorithm>,
}

impl std::fmt::Debug for PublicKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKeys({}, {} keys)", self.from, self.keys.len())
    }
}

const RSA_ALGS: [Algorithm; 6] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
];

impl PublicKeys {
    /// Reads `--bundle-public-key`: a PEM public key or a JWK set.
    pub fn read(path: &std::path::Path) -> Result<PublicKeys, String> {
        let shown = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| {
            format!(
                "cannot read the bundle public key {shown}: {}",
                crate::source::files::lower_io(&e)
            )
        })?;
        PublicKeys::parse(&bytes, &shown)
    }

    pub fn parse(bytes: &[u8], from: &str) -> Result<PublicKeys, String> {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| format!("the bundle public key {from} is not utf-8 text"))?;
        if text.trim_start().starts_with('{') {
            return PublicKeys::jwks(text, from);
        }
        let (label, der) = pkcs8::der::pem::decode_vec(text.trim().as_bytes()).map_err(|e| {
            format!("the bundle public key {from} is neither a PEM key nor a JWK set: {e}")
        })?;
        let (key, algorithms) = match label {
            "PUBLIC KEY" => spki_key(&der).map_err(|e| format!("{from}: {e}"))?,
            "RSA PUBLIC KEY" => (DecodingKey::from_rsa_der(&der), RSA_ALGS.to_vec()),
            other => {
                return Err(format!(
                    "{from} holds a PEM `{other}`; the bundle public key must be a `PUBLIC KEY` (RSA or EC P-256/P-384) or `RSA PUBLIC KEY`"
                ));
            }
        };
        Ok(PublicKeys {
            keys: vec![PublicKey {
                kid: None,
                key,
                algorithms,
            }],
            from: from.to_string(),
        })
    }

    fn jwks(text: &str, from: &str) -> Result<PublicKeys, String> {
        let set: JwkSet =
            serde_json::from_str(text).map_err(|e| format!("{from} is not a JWK set: {e}"))?;
        let mut keys = Vec::new();
        for jwk in &set.keys {
            let algorithms = match &jwk.algorithm {
                AlgorithmParameters::RSA(_) => RSA_ALGS.to_vec(),
                AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
                    EllipticCurve::P256 => vec![Algorithm::ES256],
                    EllipticCurve::P384 => vec![Algorithm::ES384],
                    _ => continue,
                },
                _ => continue,
            };
            let key = DecodingKey::from_jwk(jwk)
                .map_err(|e| format!("{from}: a key cannot be used: {e}"))?;
            keys.push(PublicKey {
                kid: jwk.common.key_id.clone(),
                key,
                algorithms,
            });
        }
        if keys.is_empty() {
            return Err(format!(
                "{from} holds no RSA or EC P-256/P-384 key to verify bundles with"
            ));
        }
        Ok(PublicKeys {
            keys,
            from: from.to_string(),
        })
    }

    fn pick(&self, kid: Option<&str>) -> Result<&PublicKey, String> {
        if let [only] = self.keys.as_slice()
            && (only.kid.is_none() || kid.is_none() || only.kid.as_deref() == kid)
        {
            return Ok(only);
        }
        let Some(kid) = kid else {
            return Err(format!(
                "the signature names no key id and {} holds several keys",
                self.from
            ));
        };
        self.keys
            .iter()
            .find(|k| k.kid.as_deref() == Some(kid))
            .ok_or_else(|| format!("{} holds no key with id `{kid}`", self.from))
    }
}

/// The key and algorithm of an SPKI `PUBLIC KEY`.
fn spki_key(der: &[u8]) -> Result<(DecodingKey, Vec<Algorithm>), String> {
    let spki = pkcs8::spki::SubjectPublicKeyInfoRef::from_der(der)
        .map_err(|e| format!("not a public key: {e}"))?;
    let bits = spki.subject_public_key.raw_bytes();
    match spki.algorithm.oid.to_string().as_str() {
        RSA_OID => Ok((DecodingKey::from_rsa_der(bits), RSA_ALGS.to_vec())),
        EC_OID => {
            let curve = spki
                .algorithm
                .parameters_oid()
                .map_err(|_| "an EC key without its curve".to_string())?
                .to_string();
            let alg = match curve.as_str() {
                P256_OID => Algorithm::ES256,
                P384_OID => Algorithm::ES384,
                other => return Err(format!("EC curve {other} is not P-256 or P-384")),
            };
            Ok((DecodingKey::from_ec_der(bits), vec![alg]))
        }
        other => Err(format!(
            "key algorithm {other} is not RSA or EC (P-256, P-384)"
        )),
    }
}

/// A private key bundles are signed with (`--signing-key`).
pub struct SigningKey {
    key: EncodingKey,
    algorithm: Algorithm,
}

impl SigningKey {
    pub fn read(path: &std::path::Path) -> Result<SigningKey, String> {
        let shown = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| {
            format!(
                "cannot read the signing key {shown}: {}",
                crate::source::files::lower_io(&e)
            )
        })?;
        SigningKey::parse(&bytes, &shown)
    }

    pub fn parse(bytes: &[u8], from: &str) -> Result<SigningKey, String> {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| format!("the signing key {from} is not PEM text"))?;
        let (label, der) = pkcs8::der::pem::decode_vec(text.trim().as_bytes())
            .map_err(|e| format!("the signing key {from} is not a PEM key: {e}"))?;
        match label {
            "RSA PRIVATE KEY" => Ok(SigningKey {
                key: EncodingKey::from_rsa_der(&der),
                algorithm: Algorithm::RS256,
            }),
            "PRIVATE KEY" => {
                let info = pkcs8::PrivateKeyInfo::from_der(&der)
                    .map_err(|e| format!("the signing key {from} is not PKCS#8: {e}"))?;
                match info.algorithm.oid.to_string().as_str() {
                    RSA_OID => Ok(SigningKey {
                        key: EncodingKey::from_rsa_der(info.private_key),
                        algorithm: Algorithm::RS256,
                    }),
                    EC_OID => {
                        let curve = info
                            .algorithm
                            .parameters_oid()
                            .map(|o| o.to_string())
                            .unwrap_or_default();
                        let algorithm = match curve.as_str() {
                            P256_OID => Algorithm::ES256,
                            P384_OID => Algorithm::ES384,
                            _ => {
                                return Err(format!(
                                    "the signing key {from} is on a curve other than P-256 or P-384"
                                ));
                            }
                        };
                        Ok(SigningKey {
                            key: EncodingKey::from_ec_der(&der),
                            algorithm,
                        })
                    }
                    other => Err(format!(
                        "the signing key {from} is of algorithm {other}; use an RSA or EC (P-256, P-384) key"
                    )),
                }
            }
            "EC PRIVATE KEY" => Err(format!(
                "the signing key {from} is a SEC1 `EC PRIVATE KEY`; convert it to PKCS#8 with `openssl pkcs8 -topk8 -nocrypt -in {from}`"
            )),
            other => Err(format!(
                "the signing key {from} holds a PEM `{other}`; use an RSA or EC private key (`PRIVATE KEY` or `RSA PRIVATE KEY`)"
            )),
        }
    }

    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }
}

/// The `.signatures.json` of `files` (every file but itself), as
/// `opa build --signing-key` writes it: SHA-256 digests, `kid` in the
/// header and `keyid` in the payload when a key id is given.
pub fn sign(files: &Files, key: &SigningKey, key_id: Option<&str>) -> Result<Vec<u8>, String> {
    let mut infos = Vec::new();
    for (name, bytes) in files {
        if name == SIGNATURES {
            continue;
        }
        let digest = hash::file_digest(name, bytes, hash::Algorithm::Sha256)
            .map_err(|e| format!("{name}: {e}"))?;
        infos.push(FileInfo {
            name: name.clone(),
            hash: base16ct::lower::encode_string(&digest),
            algorithm: hash::Algorithm::Sha256.opa_name().to_string(),
        });
    }
    let payload = Payload {
        files: infos,
        keyid: key_id.map(str::to_string),
        scope: None,
    };
    let mut header = Header::new(key.algorithm);
    header.kid = key_id.map(str::to_string);
    crate::jwt_crypto::install();
    let token = jsonwebtoken::encode(&header, &payload, &key.key)
        .map_err(|e| format!("cannot sign the bundle: {e}"))?;
    let file = SignaturesFile {
        signatures: vec![token],
        plugin: None,
    };
    let mut out = serde_json::to_vec_pretty(&file).map_err(|e| e.to_string())?;
    out.push(b'\n');
    Ok(out)
}

/// The key id a signature names (header `kid`, else payload `keyid`),
/// read without verifying anything: for saying which key signed a bundle
/// that was not verified.
pub fn claimed_key_id(signatures: &[u8]) -> Result<Option<String>, BundleError> {
    let token = one_token(signatures)?;
    let header = jsonwebtoken::decode_header(&token).map_err(|e| bad_token(&e))?;
    if header.kid.is_some() {
        return Ok(header.kid);
    }
    let payload = token.split('.').nth(1).unwrap_or_default();
    use base64::Engine;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|_| sig_error("the signature's payload is not base64url"))?;
    let payload: Payload = serde_json::from_slice(&bytes)
        .map_err(|e| sig_error(&format!("the signature's payload is malformed: {e}")))?;
    Ok(payload.keyid)
}

fn sig_error(message: &str) -> BundleError {
    BundleError::at(SIGNATURES, message.to_string())
}

fn bad_token(e: &jsonwebtoken::errors::Error) -> BundleError {
    sig_error(&format!("the signature is not a readable JWS: {e}"))
}

fn one_token(signatures: &[u8]) -> Result<String, BundleError> {
    let file: SignaturesFile =
        serde_json::from_slice(signatures).map_err(|e| sig_error(&format!("malformed: {e}")))?;
    if let Some(plugin) = file.plugin.filter(|p| !p.is_empty()) {
        return Err(sig_error(&format!(
            "the bundle is signed by plugin `{plugin}`, which regent does not have"
        )));
    }
    match file.signatures.len() {
        0 => Err(sig_error("no signature (expected exactly one JWS)")),
        1 => Ok(file.signatures.into_iter().next().unwrap_or_default()),
        n => Err(sig_error(&format!(
            "{n} signatures; OPA's format has exactly one JWS"
        ))),
    }
}

/// Verifies the signature `signatures` over `files` (which hold every file
/// of the bundle but `.signatures.json`) with `keys`; the key id it names.
pub fn verify(
    signatures: &[u8],
    files: &Files,
    keys: &PublicKeys,
) -> Result<Option<String>, BundleError> {
    let token = one_token(signatures)?;
    let header = jsonwebtoken::decode_header(&token).map_err(|e| bad_token(&e))?;
    let claimed = claimed_key_id(signatures)?;
    let key = keys.pick(claimed.as_deref()).map_err(|e| sig_error(&e))?;
    if !key.algorithms.contains(&header.alg) {
        return Err(sig_error(&format!(
            "the bundle is signed with {:?}, which the key in {} does not verify",
            header.alg, keys.from
        )));
    }
    let mut validation = Validation::new(header.alg);
    validation.algorithms = key.algorithms.clone();
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    crate::jwt_crypto::install();
    let payload = jsonwebtoken::decode::<Payload>(&token, &key.key, &validation)
        .map_err(|e| {
            let why = match e.kind() {
                jsonwebtoken::errors::ErrorKind::InvalidSignature => {
                    "it was signed with another key, or changed after signing".to_string()
                }
                _ => e.to_string().to_lowercase(),
            };
            sig_error(&format!(
                "the signature does not verify with the key in {}: {why}",
                keys.from
            ))
        })?
        .claims;
    if let Some(scope) = payload.scope.as_deref().filter(|s| !s.is_empty()) {
        return Err(sig_error(&format!(
            "the signature has scope `{scope}`; regent verifies bundles signed without a scope"
        )));
    }
    let mut listed: BTreeMap<&str, &FileInfo> = BTreeMap::new();
    for f in &payload.files {
        if listed.insert(f.name.as_str(), f).is_some() {
            return Err(sig_error(&format!(
                "the signature lists `{}` twice",
                f.name
            )));
        }
    }
    for (name, bytes) in files {
        let Some(info) = listed.remove(name.as_str()) else {
            return Err(BundleError::at(
                name,
                "the file is not covered by the bundle's signature".to_string(),
            )
            .with_help("rebuild and sign the bundle from the files it should hold"));
        };
        let alg = hash::Algorithm::from_opa_name(&info.algorithm).ok_or_else(|| {
            BundleError::at(
                name,
                format!(
                    "the signature hashes this file with `{}`, which regent does not accept (SHA-224, SHA-256, SHA-384, SHA-512, SHA-512-224, SHA-512-256)",
                    info.algorithm
                ),
            )
        })?;
        let digest = hash::file_digest(name, bytes, alg).map_err(|e| BundleError::at(name, e))?;
        let matches = base16ct::mixed::decode_vec(&info.hash).is_ok_and(|want| want == digest);
        if !matches {
            return Err(BundleError::at(
                name,
                "the file's digest does not match the bundle's signature (it was changed after signing)".to_string(),
            ));
        }
    }
    if let Some(name) = listed.keys().next() {
        return Err(BundleError::at(
            name,
            "the bundle's signature lists this file but the bundle does not hold it".to_string(),
        ));
    }
    Ok(claimed)
}
