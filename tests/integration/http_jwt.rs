//! `regent serve --http --jwt-jwks-file`: JWT bearer tokens verified against
//! a JWKS, over real sockets on 127.0.0.1 with the real binary. The key pairs
//! are made here (Ed25519 and ECDSA P-256, with ring) and tokens are signed
//! by hand, so the verifier is tested against another implementation. A
//! verified token's claims reach the policy as `input.caller`; anything
//! else is 401 and never reaches the policy.
//! The claims' own checks (types, `crit`, the caller schema) are in
//! `http_jwt_claims`.

use crate::common;

use crate::jwt_support::{
    AUDIENCE, ISSUER, TOOLS, bearer, ec_jwk, jwt_text, now, p256, write_catalog,
};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use common::draft_client::{self, DECISION, EXTENSION};
use common::http::{HttpServer, McpHttp, Req};
use common::{Era, Server, regent};
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, Ed25519KeyPair, KeyPair};
use serde_json::{Value, json};

/// The signing keys, the JWKS file and the catalog, in one directory.
pub(crate) struct Keys {
    dir: tempfile::TempDir,
    rng: SystemRandom,
    ed: Ed25519KeyPair,
    ec: EcdsaKeyPair,
}

impl Keys {
    pub(crate) fn new() -> Keys {
        let rng = SystemRandom::new();
        let ed = Ed25519KeyPair::from_pkcs8(Ed25519KeyPair::generate_pkcs8(&rng).unwrap().as_ref())
            .unwrap();
        let ec = p256(&rng);
        let dir = tempfile::tempdir().unwrap();
        let catalog = dir.path().join("catalog");
        std::fs::create_dir(&catalog).unwrap();
        write_catalog(&catalog);
        let k = Keys { dir, rng, ed, ec };
        let jwks = json!({"keys": [
            {"kty": "OKP", "crv": "Ed25519", "kid": "ed-1", "use": "sig", "alg": "EdDSA",
             "x": B64.encode(k.ed.public_key().as_ref())},
            ec_jwk(&k.ec, "ec-1"),
        ]});
        std::fs::write(k.jwks(), jwks.to_string()).unwrap();
        k
    }

    pub(crate) fn jwks(&self) -> String {
        self.dir.path().join("jwks.json").display().to_string()
    }

    pub(crate) fn catalog(&self) -> String {
        self.dir.path().join("catalog").display().to_string()
    }

    pub(crate) fn decision_log(&self) -> std::path::PathBuf {
        self.dir.path().join("decisions.jsonl")
    }

    /// A JWT with `header` and `claims`, signed as its `alg` says (`none`:
    /// no signature; `HS256`: HMAC with the Ed25519 public key's bytes).
    pub(crate) fn sign(&self, header: &Value, claims: &Value) -> String {
        self.sign_text(header, &claims.to_string())
    }

    /// [`Keys::sign`] of `claims`, the payload's JSON text as given.
    pub(crate) fn sign_text(&self, header: &Value, claims: &str) -> String {
        jwt_text(header, claims, |input| {
            match header["alg"].as_str().unwrap() {
                "EdDSA" => self.ed.sign(input).as_ref().to_vec(),
                "ES256" => self.ec.sign(&self.rng, input).unwrap().as_ref().to_vec(),
                "HS256" => {
                    let key = ring::hmac::Key::new(
                        ring::hmac::HMAC_SHA256,
                        self.ed.public_key().as_ref(),
                    );
                    ring::hmac::sign(&key, input).as_ref().to_vec()
                }
                "none" => Vec::new(),
                other => panic!("no key for {other}"),
            }
        })
    }

    /// A valid Ed25519 token for `sub` in `groups`.
    pub(crate) fn token(&self, sub: &str, groups: &[&str]) -> String {
        self.sign(&header("EdDSA", Some("ed-1")), &claims(sub, groups))
    }

    pub(crate) fn serve(&self) -> HttpServer {
        self.serve_with(&[])
    }

    pub(crate) fn serve_with(&self, extra: &[&str]) -> HttpServer {
        let mut args = extra.to_vec();
        let catalog = self.catalog();
        let log = self.decision_log();
        let jwks = self.jwks();
        args.extend([
            "--jwt-jwks-file",
            &jwks,
            "--jwt-issuer",
            ISSUER,
            "--jwt-audience",
            "another-service",
            "--jwt-audience",
            AUDIENCE,
            "--decision-log",
            log.to_str().unwrap(),
            &catalog,
        ]);
        HttpServer::start(&args)
    }
}

/// The decision log once it has `n` decision lines (its writer runs on a
/// thread of its own). A call that ran also has an intent line, written
/// before it ran; its outcome line carries the whole decision, so intent
/// lines are left out.
pub(crate) fn wait_for_lines(path: &std::path::Path, n: usize) -> String {
    let deadline = std::time::Instant::now() + common::WAIT;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        // Only complete lines: the writer may be mid-way through one.
        let complete = text.rfind('\n').map_or("", |end| &text[..=end]);
        let decisions: String = complete
            .lines()
            .filter(|l| !l.contains(r#""phase":"intent""#))
            .map(|l| format!("{l}\n"))
            .collect();
        if decisions.lines().count() >= n || std::time::Instant::now() > deadline {
            return decisions;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

pub(crate) fn header(alg: &str, kid: Option<&str>) -> Value {
    let mut h = json!({"alg": alg, "typ": "JWT"});
    if let Some(kid) = kid {
        h["kid"] = json!(kid);
    }
    h
}

pub(crate) fn claims(sub: &str, groups: &[&str]) -> Value {
    json!({
        "sub": sub, "iss": ISSUER, "aud": AUDIENCE,
        "iat": now(), "exp": now() + 300,
        "groups": groups, "email": format!("{sub}@example.com"),
    })
}

pub(crate) fn call(c: &mut McpHttp, service: &str) -> Value {
    let r = c.request(
        "tools/call",
        json!({"name": "restart", "arguments": {"service": service}}),
    );
    r.get("result")
        .cloned()
        .unwrap_or_else(|| panic!("tools/call failed: {r}"))
}

#[test]
fn the_verified_caller_reaches_the_policy_in_resolve_and_call() {
    let keys = Keys::new();
    let http = keys.serve();
    let oncall = keys.token("alice", &["dev", "oncall"]);
    // The same claims shape, signed by the other key (ES256, kid ec-1).
    let dev = keys.sign(&header("ES256", Some("ec-1")), &claims("bob", &["dev"]));
    for era in Era::ALL {
        let mut c = bearer(&http, era, &oncall);
        let r = c.resolve("restart", json!({"service": "web"}));
        assert_eq!(r["_meta"][DECISION]["allowed"], json!(true), "{era:?}: {r}");
        let r = call(&mut c, "web");
        assert_eq!(r["isError"], json!(false), "{era:?}: {r}");
        assert!(r.to_string().contains("restarted web"), "{era:?}: {r}");

        let mut c = bearer(&http, era, &dev);
        let r = c.resolve("restart", json!({"service": "web"}));
        assert_eq!(
            r["_meta"][DECISION]["allowed"],
            json!(false),
            "{era:?}: {r}"
        );
        assert_eq!(
            r["_meta"][DECISION]["reasons"],
            json!([format!("bob (from {ISSUER}) is not on call")]),
            "{era:?}: {r}"
        );
        let r = call(&mut c, "web");
        assert_eq!(r["isError"], json!(true), "{era:?}: {r}");
        assert!(
            r.to_string()
                .contains("bob (from https://idp.example) is not on call"),
            "{era:?}: {r}"
        );
        assert!(!r.to_string().contains("restarted web"), "{era:?}: {r}");
    }

    // The decision log records who asked: subject and issuer, not the token
    // nor its other claims.
    let log = wait_for_lines(&keys.decision_log(), 8);
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 8, "{log}");
    for line in &lines {
        let who = &line["caller"];
        assert_eq!(who["issuer"], json!(ISSUER), "{line}");
        assert!(who["subject"] == json!("alice") || who["subject"] == json!("bob"));
        assert_eq!(who.as_object().unwrap().len(), 2, "{line}");
    }
    assert!(
        !log.contains("oncall") && !log.contains("example.com"),
        "{log}"
    );
    assert!(!log.contains(&oncall) && !http.stderr().contains(&oncall));
}

#[test]
fn over_http_a_shadow_policy_sees_the_verified_caller_and_masks_erase_it_from_the_line() {
    let keys = Keys::new();
    let catalog = std::path::Path::new(&keys.catalog()).to_path_buf();
    std::fs::write(
        catalog.join("restart.yaml"),
        TOOLS.replace(
            "    policy: tools.restart\n",
            "    policy: tools.restart\n    shadow_policy: tools.restart_next\n",
        ),
    )
    .unwrap();
    // The next policy: on call is not enough, SRE membership is needed.
    std::fs::write(
        catalog.join("restart_next.rego"),
        "package tools.restart_next\n\nimport rego.v1\n\ndeny contains \"not in sre\" if not \"sre\" in input.caller.claims.groups\n",
    )
    .unwrap();
    let http = keys.serve_with(&["--decision-log-mask", "/input/caller/subject"]);
    let oncall = keys.token("alice", &["dev", "oncall"]);
    let mut c = bearer(&http, Era::Legacy, &oncall);
    let r = call(&mut c, "web");
    assert_eq!(
        r["isError"],
        json!(false),
        "the enforced policy decides: {r}"
    );
    let log = wait_for_lines(&keys.decision_log(), 1);
    let line: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(line["decision"], json!("allowed"), "{line}");
    assert_eq!(
        line["shadow"]["result"]["deny"],
        json!(["not in sre"]),
        "{line}"
    );
    assert_eq!(line["caller"], json!({"issuer": ISSUER}), "{line}");
    assert_eq!(line["input"]["caller"], json!({"issuer": ISSUER}), "{line}");
    assert_eq!(line["erased"], json!(["/input/caller/subject"]), "{line}");
    assert!(!log.contains("alice"), "{log}");
}

#[test]
fn without_a_verified_caller_input_caller_is_absent() {
    // Over stdio there is no caller: the fixture's policy denies.
    let keys = Keys::new();
    let mut s = Server::start_with(
        Era::Modern,
        &[&keys.catalog()],
        draft_client::capabilities(&[EXTENSION, DECISION]),
    );
    let r = s.resolve("restart", json!({"service": "web"}));
    assert_eq!(
        r["_meta"][DECISION]["reasons"],
        json!(["no verified caller"]),
        "{r}"
    );
}

/// The 401 and its challenge for a request carrying `authorization`.
pub(crate) fn refused(http: &HttpServer, authorization: Option<&str>) -> (u16, String) {
    let mut c = McpHttp::connect(http.addr, Era::Modern);
    let msg = c.message("tools/list", json!({}));
    let mut req = c.req(&msg, "tools/list");
    if let Some(a) = authorization {
        req = req.header("Authorization", a);
    }
    let resp = http.send(&req);
    (
        resp.status,
        resp.header("www-authenticate")
            .unwrap_or_default()
            .to_string(),
    )
}

#[test]
fn invalid_tokens_are_401_with_the_reason_and_never_reach_the_policy() {
    let keys = Keys::new();
    let http = keys.serve();
    let ed = header("EdDSA", Some("ed-1"));
    let with = |edit: &dyn Fn(&mut Value)| {
        let mut c = claims("mallory", &["oncall"]);
        edit(&mut c);
        c
    };
    let good = keys.token("mallory", &["oncall"]);
    let tampered = {
        // The claims of another token under this token's signature.
        let other = keys.token("mallory", &["oncall", "admin"]);
        let parts: Vec<&str> = good.split('.').collect();
        let other: Vec<&str> = other.split('.').collect();
        format!("{}.{}.{}", parts[0], other[1], parts[2])
    };
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "expired",
            keys.sign(&ed, &with(&|c| c["exp"] = json!(now() - 600))),
            "the token has expired",
        ),
        (
            "not yet valid",
            keys.sign(&ed, &with(&|c| c["nbf"] = json!(now() + 600))),
            "not valid yet",
        ),
        (
            "wrong issuer",
            keys.sign(&ed, &with(&|c| c["iss"] = json!("https://evil.example"))),
            "issuer (iss) is not accepted",
        ),
        (
            "wrong audience",
            keys.sign(&ed, &with(&|c| c["aud"] = json!("someone-else"))),
            "audience (aud) is not accepted",
        ),
        (
            "no expiry",
            keys.sign(
                &ed,
                &with(&|c| {
                    c.as_object_mut().unwrap().remove("exp");
                }),
            ),
            "no expiry (exp)",
        ),
        (
            "no subject",
            keys.sign(
                &ed,
                &with(&|c| {
                    c.as_object_mut().unwrap().remove("sub");
                }),
            ),
            "no subject (sub)",
        ),
        ("bad signature", tampered, "signature does not verify"),
        (
            "signed by the other key under this kid",
            keys.sign(
                &header("ES256", Some("ed-1")),
                &claims("mallory", &["oncall"]),
            ),
            "not for its signing algorithm",
        ),
        (
            "alg none",
            keys.sign(
                &header("none", Some("ed-1")),
                &claims("mallory", &["oncall"]),
            ),
            "alg none is never accepted",
        ),
        (
            "HS256 keyed with the public key",
            keys.sign(
                &header("HS256", Some("ed-1")),
                &claims("mallory", &["oncall"]),
            ),
            "algorithm is not allowed",
        ),
        (
            "unknown kid",
            keys.sign(
                &header("EdDSA", Some("ed-2")),
                &claims("mallory", &["oncall"]),
            ),
            "key id (kid) is not in the key set",
        ),
        ("not a JWT", "s3cret-token".to_string(), "not a signed JWT"),
    ];
    for (label, token, why) in &cases {
        let (status, challenge) = refused(&http, Some(&format!("Bearer {token}")));
        assert_eq!(status, 401, "{label}");
        assert!(
            challenge.starts_with(
                r#"Bearer realm="regent", error="invalid_token", error_description=""#
            ) && challenge.contains(why),
            "{label}: {challenge}"
        );
    }
    // Missing: a challenge without an error (RFC 6750 section 3.1).
    for auth in [None, Some("Basic YWxpY2U6cHc=")] {
        let (status, challenge) = refused(&http, auth);
        assert_eq!(status, 401, "{auth:?}");
        assert_eq!(challenge, r#"Bearer realm="regent""#, "{auth:?}");
    }
    // A token without kid is accepted when exactly one key fits its
    // algorithm (one Ed25519 key here).
    let no_kid = keys.sign(&header("EdDSA", None), &claims("carol", &["oncall"]));
    let mut c = bearer(&http, Era::Modern, &no_kid);
    let r = c.resolve("restart", json!({"service": "web"}));
    assert_eq!(r["_meta"][DECISION]["allowed"], json!(true), "{r}");
    // /metrics wants a token too; /healthz does not.
    assert_eq!(http.send(&Req::get("/metrics")).status, 401);
    assert_eq!(
        http.send(&Req::get("/metrics").header("Authorization", &format!("Bearer {good}")))
            .status,
        200
    );
    assert_eq!(http.send(&Req::get("/healthz")).status, 200);
    // None of the refused requests was decided.
    let log = std::fs::read_to_string(keys.decision_log()).unwrap_or_default();
    assert!(!log.contains("mallory"), "{log}");
}

#[test]
fn unsafe_jwt_settings_are_refused_at_start_up() {
    let keys = Keys::new();
    let dir = tempfile::tempdir().unwrap();
    let oct = dir.path().join("oct.json");
    std::fs::write(&oct, r#"{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}"#).unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    let base = |jwks: &str| {
        vec![
            "--jwt-jwks-file".to_string(),
            jwks.to_string(),
            "--jwt-issuer".into(),
            ISSUER.into(),
            "--jwt-audience".into(),
            AUDIENCE.into(),
        ]
    };
    let with = |jwks: &str, more: &[&str]| {
        let mut v = base(jwks);
        v.extend(more.iter().map(|s| s.to_string()));
        v
    };
    let jwks = keys.jwks();
    for (args, want) in [
        (with(&jwks, &["--jwt-algorithms", "none"]), "unsigned token"),
        (
            with(&jwks, &["--jwt-algorithms", "EdDSA,HS256"]),
            "HMAC algorithms use a shared secret",
        ),
        (base(oct.to_str().unwrap()), "symmetric (oct)"),
        (
            with(&jwks, &["--jwt-algorithms", "RS256"]),
            "no public key usable",
        ),
        (
            with(&jwks, &["--auth-token-file", token.to_str().unwrap()]),
            "cannot be used with",
        ),
        (
            vec!["--jwt-jwks-file".to_string(), jwks.clone()],
            "--jwt-issuer",
        ),
    ] {
        let out = regent()
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(&args)
            .arg(keys.catalog())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}

#[test]
fn tools_list_shows_a_tool_only_to_the_callers_its_visible_rule_admits() {
    let keys = Keys::new();
    let catalog = std::path::Path::new(&keys.catalog()).to_path_buf();
    std::fs::write(
        catalog.join("page.yaml"),
        "tools:\n  - name: page\n    inputSchema: {type: object}\n    policy: tools.page\n",
    )
    .unwrap();
    std::fs::write(
        catalog.join("page.rego"),
        "package tools.page\n\nimport rego.v1\n\nvisible if \"oncall\" in input.caller.claims.groups\n",
    )
    .unwrap();
    let http = keys.serve();
    let oncall = keys.token("alice", &["dev", "oncall"]);
    let dev = keys.token("bob", &["dev"]);
    for era in Era::ALL {
        for (token, want) in [(&oncall, vec!["page", "restart"]), (&dev, vec!["restart"])] {
            let mut c = bearer(&http, era, token);
            let list = c.request("tools/list", json!({}));
            let names: Vec<&str> = list["result"]["tools"]
                .as_array()
                .unwrap_or_else(|| panic!("{era:?}: {list}"))
                .iter()
                .filter_map(|t| t["name"].as_str())
                .collect();
            assert_eq!(names, want, "{era:?}: {list}");
            let r = c.request("tools/resolve", json!({"name": "page", "arguments": {}}));
            if want.contains(&"page") {
                assert!(r.get("result").is_some(), "{era:?}: {r}");
            } else {
                assert_eq!(
                    r["error"]["data"],
                    json!({"tool": "page", "reason": "unknown-tool"}),
                    "{era:?}: {r}"
                );
            }
        }
    }
}

#[test]
fn a_session_answers_only_the_caller_who_opened_it() {
    let keys = Keys::new();
    let http = keys.serve();
    let alice_token = keys.token("alice", &["oncall"]);
    let mut alice = bearer(&http, Era::Legacy, &alice_token);
    let session = alice.session.clone().expect("a 2025-11-25 session");

    // Bob has a valid token of his own and alice's session id.
    let mut bob = bearer(&http, Era::Legacy, &keys.token("bob", &["oncall"]));
    bob.session = Some(session.clone());
    let msg = bob.message("tools/list", json!({}));
    let resp = bob.post(&msg, "tools/list");
    assert_eq!(resp.status, 404, "{}", resp.text());
    assert!(resp.text().contains("Session not found"), "{}", resp.text());
    let msg = bob.message(
        "tools/call",
        json!({"name": "restart", "arguments": {"service": "web"}}),
    );
    assert_eq!(bob.post(&msg, "tools/call").status, 404);
    // Ending someone else's session is refused too, and the session lives on.
    let delete = Req {
        method: "DELETE".into(),
        ..bob.req(&json!({}), "")
    };
    let resp = http.send(&delete.body(Vec::new()));
    assert_eq!(resp.status, 404, "{}", resp.text());

    // Alice's session is untouched by all that.
    let r = alice.resolve("restart", json!({"service": "web"}));
    assert_eq!(r["_meta"][DECISION]["allowed"], json!(true), "{r}");

    // Alice, with a fresh token of hers (same issuer and subject), goes on.
    alice.extra = vec![(
        "Authorization".into(),
        format!("Bearer {}", keys.token("alice", &["oncall"])),
    )];
    let r = call(&mut alice, "web");
    assert!(r.to_string().contains("restarted web"), "{r}");

    // Her own DELETE ends it; afterwards the id is unknown to everyone.
    let delete = Req {
        method: "DELETE".into(),
        ..alice.req(&json!({}), "")
    };
    let resp = http.send(&delete.body(Vec::new()));
    assert!(resp.status == 204 || resp.status == 200, "{}", resp.text());
    let msg = alice.message("tools/list", json!({}));
    assert_eq!(alice.post(&msg, "tools/list").status, 404);
}
