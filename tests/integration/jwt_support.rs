//! What http_jwt.rs (a JWKS file) and http_jwks.rs (a JWKS fetched over
//! HTTPS) share: the issuer and audience their tokens carry, the `restart`
//! tool (which caller_stdio.rs uses too) and a policy that wants a verified
//! on-call caller, P-256 keys and their JWKs, tokens signed by hand, and a
//! client that sends one.

use crate::common;

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use common::Era;
use common::draft_client::{self, DECISION, EXTENSION};
use common::http::{HttpServer, McpHttp};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

pub const ISSUER: &str = "https://idp.example";
pub const AUDIENCE: &str = "regent-tests";

/// The `restart` tool: it echoes, behind the policy `tools.restart` (here
/// [`POLICY`]; caller_stdio.rs has its own).
pub const TOOLS: &str = r#"tools:
  - name: restart
    description: restarts a service
    inputSchema:
      type: object
      properties: {service: {type: string}}
      required: [service]
    annotations: {readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false}
    policy: tools.restart
    run: {cli: {program: echo, args: ["restarted", "{service}"], timeout: 5s}}
"#;

/// Denies unless the caller is in the `oncall` group, and outright when
/// there is no verified caller.
const POLICY: &str = r#"package tools.restart

import rego.v1

oncall if "oncall" in input.caller.claims.groups

deny contains "no verified caller" if not input.caller

deny contains sprintf("%s (from %s) is not on call", [input.caller.subject, input.caller.issuer]) if {
	input.caller
	not oncall
}
"#;

/// Writes the `restart` catalog (tool and policy) into `dir`.
pub fn write_catalog(dir: &Path) {
    std::fs::write(dir.join("restart.yaml"), TOOLS).unwrap();
    std::fs::write(dir.join("restart.rego"), POLICY).unwrap();
}

/// A fresh ECDSA P-256 key (ES256).
pub fn p256(rng: &SystemRandom) -> EcdsaKeyPair {
    let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, rng).unwrap();
    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref(), rng).unwrap()
}

/// The public JWK of a P-256 `key`, named `kid`.
pub fn ec_jwk(key: &EcdsaKeyPair, kid: &str) -> Value {
    let point = key.public_key().as_ref();
    json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig",
           "x": B64.encode(&point[1..33]), "y": B64.encode(&point[33..65])})
}

/// Seconds since the epoch, for `iat` and `exp`.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The compact JWT of `header` and `claims`, its signature made by `sign`
/// over the signing input.
pub fn jwt(header: &Value, claims: &Value, sign: impl FnOnce(&[u8]) -> Vec<u8>) -> String {
    jwt_text(header, &claims.to_string(), sign)
}

/// [`jwt`] of `claims`, the payload's JSON text as given (numbers spelled
/// by hand kept).
pub fn jwt_text(header: &Value, claims: &str, sign: impl FnOnce(&[u8]) -> Vec<u8>) -> String {
    let input = format!("{}.{}", B64.encode(header.to_string()), B64.encode(claims));
    let sig = sign(input.as_bytes());
    format!("{input}.{}", B64.encode(sig))
}

/// A P-256 key named `kid` that signs the tests' ES256 tokens, and its
/// key set.
pub struct Signer {
    rng: SystemRandom,
    key: EcdsaKeyPair,
    kid: &'static str,
}

impl Signer {
    pub fn new(kid: &'static str) -> Signer {
        let rng = SystemRandom::new();
        let key = p256(&rng);
        Signer { rng, key, kid }
    }

    /// The JWKS document holding this key's public JWK.
    pub fn jwks(&self) -> Value {
        json!({"keys": [ec_jwk(&self.key, self.kid)]})
    }

    /// The token of `claims`, signed with this key.
    pub fn sign(&self, claims: &Value) -> String {
        let header = json!({"alg": "ES256", "typ": "JWT", "kid": self.kid});
        jwt(&header, claims, |input| {
            self.key.sign(&self.rng, input).unwrap().as_ref().to_vec()
        })
    }
}

/// A client of `http` in `era` that sends `token` as its bearer and
/// declares the decision extension.
pub fn bearer(http: &HttpServer, era: Era, token: &str) -> McpHttp {
    McpHttp::connect_caps(
        http.addr,
        era,
        vec![("Authorization".into(), format!("Bearer {token}"))],
        draft_client::capabilities(&[EXTENSION, DECISION]),
    )
}

/// A rustls server configuration with tests/fixtures/jwks' certificate for
/// 127.0.0.1 (issued by that directory's `ca.pem`), for the HTTPS servers
/// tests stand up on loopback: the JWKS endpoint (http_jwks.rs) and the
/// bundle server (bundle_serve.rs).
pub fn loopback_tls_config() -> std::sync::Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let fixture = |f: &str| common::repo_path(&format!("tests/fixtures/jwks/{f}"));
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(fixture("server.pem"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(fixture("server.key")).unwrap();
    std::sync::Arc::new(
        rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap(),
    )
}
