//! What verifying a bearer JWT costs per request, and what the cache of
//! verified tokens (`http/verified`) saves: `Verifier::verify` on tokens
//! seen for the first time (every one distinct, so each is a full
//! signature check) and on one token seen before, for EdDSA and ES256.
//! Prints mean and p50/p99 per call in µs (the numbers BENCHMARKS.md
//! quotes, "Issue 18: verified tokens").
//!
//!     cargo bench --bench jwt

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use regent::http::jwt::{JwksSource, JwtConfig, Verifier, parse_algorithms};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair};
use serde_json::json;

const N: usize = 2000;

fn main() {
    let rng = SystemRandom::new();
    let ed =
        Ed25519KeyPair::from_pkcs8(Ed25519KeyPair::generate_pkcs8(&rng).unwrap().as_ref()).unwrap();
    let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let ec =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref(), &rng).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let jwks = dir.path().join("jwks.json");
    let point = ec.public_key().as_ref();
    std::fs::write(
        &jwks,
        json!({"keys": [
            {"kty": "OKP", "crv": "Ed25519", "kid": "ed", "use": "sig", "alg": "EdDSA",
             "x": B64.encode(ed.public_key().as_ref())},
            {"kty": "EC", "crv": "P-256", "kid": "ec", "use": "sig",
             "x": B64.encode(&point[1..33]), "y": B64.encode(&point[33..65])},
        ]})
        .to_string(),
    )
    .unwrap();
    let cfg = JwtConfig {
        jwks: JwksSource::File(jwks),
        issuer: "https://idp.example".into(),
        audiences: vec!["regent".into()],
        algorithms: parse_algorithms(&["EdDSA".into(), "ES256".into()]).unwrap(),
        leeway_seconds: 30,
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let token = |alg: &str, i: usize| {
        let kid = if alg == "EdDSA" { "ed" } else { "ec" };
        let input = format!(
            "{}.{}",
            B64.encode(json!({"alg": alg, "typ": "JWT", "kid": kid}).to_string()),
            B64.encode(
                json!({"sub": format!("user{i}"), "iss": "https://idp.example", "aud": "regent",
                       "exp": now + 3600, "iat": now, "groups": ["dev", "oncall"]})
                .to_string()
            )
        );
        let sig = if alg == "EdDSA" {
            ed.sign(input.as_bytes()).as_ref().to_vec()
        } else {
            ec.sign(&rng, input.as_bytes()).unwrap().as_ref().to_vec()
        };
        format!("{input}.{}", B64.encode(sig))
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    println!("| algorithm | token | mean | p50 | p99 |\n| --- | --- | ---: | ---: | ---: |");
    for alg in ["EdDSA", "ES256"] {
        let verifier = Verifier::load(&cfg).unwrap();
        let fresh: Vec<String> = (0..N).map(|i| token(alg, i)).collect();
        let again = token(alg, N);
        rt.block_on(verifier.verify(&again)).unwrap();
        for (label, tokens) in [
            ("first use (full check)", fresh.iter().collect::<Vec<_>>()),
            ("seen before (cached)", vec![&again; N]),
        ] {
            let mut times: Vec<f64> = tokens
                .iter()
                .map(|t| {
                    let start = Instant::now();
                    std::hint::black_box(rt.block_on(verifier.verify(t)).unwrap());
                    start.elapsed().as_nanos() as f64 / 1000.0
                })
                .collect();
            times.sort_by(f64::total_cmp);
            let mean = times.iter().sum::<f64>() / times.len() as f64;
            let p = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
            println!(
                "| {alg} | {label} | {mean:.1} µs | {:.1} µs | {:.1} µs |",
                p(0.5),
                p(0.99)
            );
        }
    }
}
