//! `regent serve --http --jwt-jwks-url`: the JWKS fetched over real HTTPS
//! from a small identity provider on 127.0.0.1 (rustls, with a test CA and
//! server certificate from tests/fixtures/jwks, trusted by `--jwt-jwks-ca`).
//! RS256 (an RSA key from the fixtures) and ES256 (a P-256 key made here)
//! tokens, signed by hand with ring, reach the policy as `input.caller`; a
//! key rotated in after start-up is fetched on its unknown `kid`; bogus
//! `kid`s cannot make regent hammer the provider; a provider that is down
//! or serves a bad set leaves the previous keys in use. The token checks
//! themselves (expiry, issuer, audience, alg none, signatures) are
//! tests/integration/http_jwt.rs's.

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::jwt_support::{AUDIENCE, ISSUER, bearer, ec_jwk, jwt, now, p256, write_catalog};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use common::draft_client::DECISION;
use common::http::{HttpServer, McpHttp};
use common::{Era, regent};
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, RsaKeyPair};
use rustls::pki_types::PrivatePkcs8KeyDer;
use rustls::pki_types::pem::PemObject;
use serde_json::{Value, json};

fn fixture(name: &str) -> PathBuf {
    common::repo_path("tests/fixtures/jwks").join(name)
}

/// What the identity provider serves, and what it has seen.
#[derive(Default)]
struct IdpState {
    body: Mutex<String>,
    /// Requests answered (a connection closed while `down` is not one).
    fetches: AtomicUsize,
    down: AtomicBool,
}

/// An HTTPS server on 127.0.0.1 answering every request with the JWKS.
struct Idp {
    addr: SocketAddr,
    state: Arc<IdpState>,
}

impl Idp {
    fn start(jwks: &Value) -> Idp {
        let config = crate::jwt_support::loopback_tls_config();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(IdpState::default());
        *state.body.lock().unwrap() = jwks.to_string();
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (config, state) = (config.clone(), shared.clone());
                std::thread::spawn(move || answer(stream, config, &state));
            }
        });
        Idp { addr, state }
    }

    fn url(&self) -> String {
        format!("https://{}/.well-known/jwks.json", self.addr)
    }

    fn serve(&self, jwks: &Value) {
        *self.state.body.lock().unwrap() = jwks.to_string();
    }

    fn fetches(&self) -> usize {
        self.state.fetches.load(Ordering::SeqCst)
    }
}

fn answer(stream: TcpStream, config: Arc<rustls::ServerConfig>, state: &IdpState) {
    if state.down.load(Ordering::SeqCst) {
        return;
    }
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let conn = rustls::ServerConnection::new(config).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, stream);
    let mut request = Vec::new();
    let mut chunk = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match tls.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&chunk[..n]),
        }
    }
    state.fetches.fetch_add(1, Ordering::SeqCst);
    let body = state.body.lock().unwrap().clone();
    let _ = write!(
        tls,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    tls.conn.send_close_notify();
    let _ = tls.flush();
}

/// The signing keys: RSA from the fixtures (ring cannot make RSA keys),
/// two P-256 keys made here, and the catalog.
struct Keys {
    dir: tempfile::TempDir,
    rng: SystemRandom,
    rsa: RsaKeyPair,
    ec: EcdsaKeyPair,
    rotated: EcdsaKeyPair,
}

impl Keys {
    fn new() -> Keys {
        let rng = SystemRandom::new();
        let der = PrivatePkcs8KeyDer::from_pem_file(fixture("rsa.key")).unwrap();
        let rsa = RsaKeyPair::from_pkcs8(der.secret_pkcs8_der()).unwrap();
        let (ec, rotated) = (p256(&rng), p256(&rng));
        let dir = tempfile::tempdir().unwrap();
        write_catalog(dir.path());
        Keys {
            dir,
            rng,
            rsa,
            ec,
            rotated,
        }
    }

    fn catalog(&self) -> String {
        self.dir.path().display().to_string()
    }

    fn rsa_jwk(&self) -> Value {
        let public = ring::rsa::PublicKeyComponents::<Vec<u8>>::from(self.rsa.public());
        json!({"kty": "RSA", "kid": "rsa-1", "use": "sig", "alg": "RS256",
               "n": B64.encode(&public.n), "e": B64.encode(&public.e)})
    }

    /// The set published at start-up: rsa-1 and ec-1.
    fn jwks(&self) -> Value {
        json!({"keys": [self.rsa_jwk(), ec_jwk(&self.ec, "ec-1")]})
    }

    /// After rotation: ec-2 joins.
    fn rotated_jwks(&self) -> Value {
        json!({"keys": [
            self.rsa_jwk(),
            ec_jwk(&self.ec, "ec-1"),
            ec_jwk(&self.rotated, "ec-2"),
        ]})
    }

    /// A token for `sub` in `groups`, signed by the key `kid` names.
    fn token(&self, kid: &str, sub: &str, groups: &[&str]) -> String {
        let alg = if kid == "rsa-1" { "RS256" } else { "ES256" };
        let now = now();
        let header = json!({"alg": alg, "typ": "JWT", "kid": kid});
        let claims = json!({"sub": sub, "iss": ISSUER, "aud": AUDIENCE,
                            "iat": now, "exp": now + 300, "groups": groups});
        jwt(&header, &claims, |input| match kid {
            "rsa-1" => {
                let mut sig = vec![0; self.rsa.public().modulus_len()];
                let rs256 = &ring::signature::RSA_PKCS1_SHA256;
                self.rsa.sign(rs256, &self.rng, input, &mut sig).unwrap();
                sig
            }
            "ec-1" => self.ec.sign(&self.rng, input).unwrap().as_ref().to_vec(),
            _ => self
                .rotated
                .sign(&self.rng, input)
                .unwrap()
                .as_ref()
                .to_vec(),
        })
    }

    fn serve(&self, idp: &Idp, more: &[&str]) -> HttpServer {
        let ca = fixture("ca.pem");
        let url = idp.url();
        let mut args = vec![
            "--jwt-jwks-url",
            &url,
            "--jwt-jwks-ca",
            ca.to_str().unwrap(),
            "--jwt-issuer",
            ISSUER,
            "--jwt-audience",
            AUDIENCE,
        ];
        args.extend_from_slice(more);
        let catalog = self.catalog();
        args.push(&catalog);
        HttpServer::start(&args)
    }
}

/// The decision for `token` (`allowed`, `reasons`), or Err(the 401's
/// challenge).
fn decide(http: &HttpServer, token: &str) -> Result<Value, String> {
    let mut c = McpHttp::connect(http.addr, Era::Modern);
    let msg = c.message("tools/list", json!({}));
    let req = c
        .req(&msg, "tools/list")
        .header("Authorization", &format!("Bearer {token}"));
    let resp = http.send(&req);
    if resp.status == 401 {
        return Err(resp
            .header("www-authenticate")
            .unwrap_or_default()
            .to_string());
    }
    assert_eq!(resp.status, 200);
    let mut c = bearer(http, Era::Modern, token);
    let r = c.resolve("restart", json!({"service": "web"}));
    Ok(r["_meta"][DECISION].clone())
}

/// Whether one request with `token` is answered 401.
fn unauthorized(http: &HttpServer, token: &str) -> bool {
    let mut c = McpHttp::connect(http.addr, Era::Modern);
    let msg = c.message("tools/list", json!({}));
    let req = c
        .req(&msg, "tools/list")
        .header("Authorization", &format!("Bearer {token}"));
    http.send(&req).status == 401
}

fn allowed(http: &HttpServer, token: &str) -> bool {
    match decide(http, token) {
        Ok(decision) => decision["allowed"] == json!(true),
        Err(challenge) => panic!("refused: {challenge}\n{}", http.stderr()),
    }
}

#[test]
fn rs256_and_es256_tokens_verified_by_a_fetched_jwks_reach_the_policy() {
    let keys = Keys::new();
    let idp = Idp::start(&keys.jwks());
    let http = keys.serve(&idp, &[]);
    assert!(allowed(&http, &keys.token("rsa-1", "alice", &["oncall"])));
    assert!(allowed(&http, &keys.token("ec-1", "carol", &["oncall"])));
    for kid in ["rsa-1", "ec-1"] {
        let decision = decide(&http, &keys.token(kid, "bob", &["dev"])).unwrap();
        assert_eq!(
            decision["reasons"],
            json!([format!("bob (from {ISSUER}) is not on call")]),
            "{kid}"
        );
    }
    // Known kids never make regent fetch again.
    assert_eq!(idp.fetches(), 1);
}

#[test]
fn a_key_rotated_in_after_start_up_is_fetched_on_its_kid_and_bogus_kids_are_bounded() {
    let keys = Keys::new();
    let idp = Idp::start(&keys.jwks());
    let http = keys.serve(&idp, &[]);
    assert_eq!(idp.fetches(), 1);
    idp.serve(&keys.rotated_jwks());
    assert!(allowed(&http, &keys.token("ec-2", "alice", &["oncall"])));
    assert_eq!(idp.fetches(), 2);
    // A flood of kids that are in no key set: each is 401, and within the
    // window they make no fetch at all.
    for i in 0..20 {
        let challenge = decide(
            &http,
            &keys.token(&format!("bogus-{i}"), "eve", &["oncall"]),
        )
        .expect_err("a bogus kid is refused");
        assert!(
            challenge.contains("key id (kid) is not in the key set"),
            "{challenge}"
        );
    }
    assert!(idp.fetches() <= 3, "{} fetches", idp.fetches());
    assert!(allowed(&http, &keys.token("ec-1", "carol", &["oncall"])));

    // A fresh server flooded at once: the concurrent unknown kids share one
    // fetch (beside the start-up one).
    let http = keys.serve(&idp, &[]);
    let before = idp.fetches();
    std::thread::scope(|s| {
        for i in 0..16 {
            let (http, keys) = (&http, &keys);
            s.spawn(move || {
                let token = keys.token(&format!("flood-{i}"), "eve", &["oncall"]);
                assert!(decide(http, &token).is_err());
            });
        }
    });
    assert_eq!(idp.fetches(), before + 1);
    assert!(allowed(&http, &keys.token("ec-2", "alice", &["oncall"])));
}

#[test]
fn the_previous_keys_stay_when_a_refresh_fails() {
    let keys = Keys::new();
    let idp = Idp::start(&keys.jwks());
    let http = keys.serve(&idp, &["--jwt-jwks-refresh-seconds", "1"]);
    let token = keys.token("ec-1", "alice", &["oncall"]);
    assert!(allowed(&http, &token));

    // Down: connections are closed before TLS. A periodic refresh fails
    // (its warning is the event waited for), and the keys stay.
    idp.state.down.store(true, Ordering::SeqCst);
    http.wait_for_stderr("keeping the previous key set");
    assert!(allowed(&http, &token));
    assert!(allowed(&http, &keys.token("rsa-1", "alice", &["oncall"])));
    // An unknown kid cannot be fetched either: 401, old keys still fine.
    assert!(decide(&http, &keys.token("ec-2", "alice", &["oncall"])).is_err());
    assert!(allowed(&http, &token));

    // Up again, but serving a set regent refuses (a symmetric key).
    idp.serve(&json!({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}));
    idp.state.down.store(false, Ordering::SeqCst);
    let before = idp.fetches();
    // The next refresh fetches it and refuses it, saying why.
    http.wait_for_stderr("symmetric (oct)");
    assert!(idp.fetches() > before, "the refresh kept running");
    assert!(allowed(&http, &token));
    let log = http.stderr();
    assert!(log.contains("keeping the previous key set"), "{log}");
    assert!(log.contains("symmetric (oct)"), "{log}");

    // And a good set is picked up by the periodic refresh (its next
    // "fetched" line is the event).
    let fetched = "periodic refresh: fetched the JWKS";
    let seen = http.stderr().matches(fetched).count();
    idp.serve(&keys.rotated_jwks());
    let deadline = std::time::Instant::now() + common::WAIT;
    while http.stderr().matches(fetched).count() == seen {
        assert!(
            std::time::Instant::now() < deadline,
            "no periodic refresh fetched the new set:\n{}",
            http.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let fetches = idp.fetches();
    assert!(allowed(&http, &keys.token("ec-2", "alice", &["oncall"])));
    assert!(idp.fetches() <= fetches + 1);
}

#[test]
fn bad_jwks_urls_are_refused_at_start_up() {
    let keys = Keys::new();
    let idp = Idp::start(&keys.jwks());
    let bad = Idp::start(&json!({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}));
    let closed_port = common::ClosedPort::new();
    let closed = closed_port.addr();
    let ca = fixture("ca.pem").display().to_string();
    let jwks_file = keys.dir.path().join("jwks.json");
    std::fs::write(&jwks_file, keys.jwks().to_string()).unwrap();
    let http_url = format!("http://{}/.well-known/jwks.json", idp.addr);
    let closed_url = format!("https://{closed}/jwks.json");
    let (url, bad_url) = (idp.url(), bad.url());
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--jwt-jwks-url", &http_url, "--jwt-jwks-ca", &ca],
            "is not an https:// URL",
        ),
        (vec!["--jwt-jwks-url", &url], "cannot fetch the JWKS from"),
        (
            vec!["--jwt-jwks-url", &closed_url, "--jwt-jwks-ca", &ca],
            "cannot fetch the JWKS from",
        ),
        (
            vec!["--jwt-jwks-url", &bad_url, "--jwt-jwks-ca", &ca],
            "symmetric (oct)",
        ),
        (
            vec![
                "--jwt-jwks-url",
                &url,
                "--jwt-jwks-file",
                jwks_file.to_str().unwrap(),
            ],
            "cannot be used with",
        ),
        (
            vec![
                "--jwt-jwks-url",
                &url,
                "--jwt-jwks-ca",
                "/nonexistent/ca.pem",
            ],
            "cannot read the CA file",
        ),
    ];
    for (args, want) in cases {
        let out = regent()
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(&args)
            .args(["--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE])
            .arg(keys.catalog())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
    // The URLs fetched were the ones that could be: no retries.
    assert_eq!(bad.fetches(), 1);
}

#[test]
fn a_token_remembered_as_verified_is_refused_once_its_key_is_rotated_out() {
    let keys = Keys::new();
    let idp = Idp::start(&keys.jwks());
    let http = keys.serve(&idp, &["--jwt-jwks-refresh-seconds", "1"]);
    // The same token on every request: verified once, then remembered.
    let token = keys.token("ec-1", "alice", &["oncall"]);
    for _ in 0..3 {
        assert!(allowed(&http, &token));
    }
    // The IdP drops ec-1; the periodic refresh fetches the new set.
    idp.serve(&json!({"keys": [keys.rsa_jwk()]}));
    // Remembering it was under the old set: once the refresh has swapped
    // the new set in (the event waited for: the first refusal, within the
    // kit's bound), it is checked again, and fails.
    // (One request a turn: `decide` makes two, and the swap may fall
    // between them.)
    let deadline = std::time::Instant::now() + common::WAIT;
    while !unauthorized(&http, &token) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let refused = decide(&http, &token);
    assert!(
        refused.is_err(),
        "a token of a removed key was accepted: {refused:?}\n{}",
        http.stderr()
    );
    assert!(allowed(&http, &keys.token("rsa-1", "alice", &["oncall"])));
}
