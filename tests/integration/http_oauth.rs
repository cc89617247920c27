//! `regent serve --http` with `--oauth-resource`: the OAuth protected
//! resource metadata (RFC 9728) at both well-known paths, the 401's
//! `resource_metadata` and `scope`, the resource as an accepted audience
//! (RFC 8707), and the start-up refusals. Real binary, real sockets on
//! 127.0.0.1, tokens signed here with a P-256 key (ring).

use crate::common;

use crate::jwt_support::{AUDIENCE, ISSUER, Signer, bearer, now, write_catalog};

use common::Era;
use common::draft_client::DECISION;
use common::http::{HttpServer, Req};
use common::regent;
use serde_json::{Value, json};

const RESOURCE: &str = "https://mcp.example.com/mcp";
const DOCUMENT: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";

/// A P-256 key, its JWKS file and the `restart` catalog, in one directory.
struct Setup {
    dir: tempfile::TempDir,
    signer: Signer,
}

impl Setup {
    fn new() -> Setup {
        let signer = Signer::new("ec-1");
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("catalog")).unwrap();
        write_catalog(&dir.path().join("catalog"));
        std::fs::write(dir.path().join("jwks.json"), signer.jwks().to_string()).unwrap();
        Setup { dir, signer }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    /// The JWT key set flags, then `extra`, then the catalog.
    fn args(&self, extra: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = ["--jwt-jwks-file", &self.path("jwks.json")]
            .iter()
            .chain(&["--jwt-issuer", ISSUER])
            .map(|s| s.to_string())
            .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v.push(self.path("catalog"));
        v
    }

    fn serve(&self, extra: &[&str]) -> HttpServer {
        let args = self.args(extra);
        HttpServer::start(&args.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// A token of an on-call caller naming `aud`.
    fn token(&self, aud: &str) -> String {
        let claims = json!({
            "sub": "alice", "iss": ISSUER, "aud": aud,
            "iat": now(), "exp": now() + 300, "groups": ["oncall"],
        });
        self.signer.sign(&claims)
    }
}

/// The flags of a fully described resource.
const OAUTH: &[&str] = &[
    "--oauth-resource",
    RESOURCE,
    "--oauth-authorization-server",
    "https://login.example.com",
    "--oauth-authorization-server",
    ISSUER,
    "--oauth-scopes-supported",
    "tools:read,tools:call",
    "--oauth-scopes-supported",
    "admin",
    "--oauth-resource-documentation",
    "https://docs.example.com/mcp",
];

#[test]
fn the_metadata_document_is_served_at_both_well_known_paths_without_a_token() {
    let s = Setup::new();
    let http = s.serve(OAUTH);
    let want = json!({
        "resource": RESOURCE,
        "authorization_servers": ["https://login.example.com", ISSUER],
        "scopes_supported": ["tools:read", "tools:call", "admin"],
        "bearer_methods_supported": ["header"],
        "resource_documentation": "https://docs.example.com/mcp",
    });
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let r = http.send(&Req::get(path));
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        assert_eq!(r.header("content-type"), Some("application/json"), "{path}");
        assert_eq!(
            r.header("cache-control"),
            Some("public, max-age=300"),
            "{path}"
        );
        let doc: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(doc, want, "{path}");
        // The same guard as the operator routes: a rebinding Host or a
        // foreign page is refused before anything is served.
        let r = http.send(&Req::get(path).header("Host", "evil.example"));
        assert_eq!(r.status, 403, "{path}: {}", r.text());
        let r = http.send(&Req::get(path).header("Origin", "https://evil.example"));
        assert_eq!(r.status, 403, "{path}: {}", r.text());
        let r = http.send(&Req::get(path).header("Origin", "http://localhost:6274"));
        assert_eq!(r.status, 200, "{path}: {}", r.text());
    }
    // Other paths under the well-known prefix are not documents.
    let r = http.send(&Req::get("/.well-known/oauth-protected-resource/other"));
    assert_eq!(r.status, 404);
    // Without --oauth-resource there is no document.
    let plain = s.serve(&["--jwt-audience", AUDIENCE]);
    let r = plain.send(&Req::get("/.well-known/oauth-protected-resource"));
    assert_eq!(r.status, 404);
    assert!(
        plain.stderr().contains("no --oauth-resource is given"),
        "{}",
        plain.stderr()
    );
}

#[test]
fn every_401_names_the_document_and_the_scopes() {
    let s = Setup::new();
    let http = s.serve(OAUTH);
    let challenge = |req: Req| {
        let r = http.send(&req);
        assert_eq!(r.status, 401, "{}", r.text());
        r.header("www-authenticate").unwrap_or_default().to_string()
    };
    let tail = format!(r#"resource_metadata="{DOCUMENT}", scope="tools:read tools:call admin""#);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    // No token: no error (RFC 6750 section 3.1), the document and scopes.
    assert_eq!(
        challenge(Req::mcp(&list)),
        format!(r#"Bearer realm="regent", {tail}"#)
    );
    assert_eq!(
        challenge(Req::get("/metrics")),
        format!(r#"Bearer realm="regent", {tail}"#)
    );
    // A refused token keeps its error and description.
    let wrong = s.token("https://other.example.com/mcp");
    assert_eq!(
        challenge(Req::mcp(&list).header("Authorization", &format!("Bearer {wrong}"))),
        format!(
            r#"Bearer realm="regent", error="invalid_token", error_description="the token's audience (aud) is not accepted", {tail}"#
        )
    );
}

#[test]
fn the_resource_is_an_audience_tokens_may_name() {
    let s = Setup::new();
    let resolves = |http: &HttpServer, aud: &str| -> Result<(), String> {
        let token = s.token(aud);
        let mut c = bearer(http, Era::Modern, &token);
        let msg = c.message(
            "tools/resolve",
            json!({"name": "restart", "arguments": {"service": "web"}}),
        );
        let r = c.post(&msg, "tools/resolve");
        if r.status != 200 {
            return Err(r.header("www-authenticate").unwrap_or_default().into());
        }
        let answer = r.response_to(&msg["id"]);
        assert_eq!(
            answer["result"]["_meta"][DECISION]["allowed"],
            json!(true),
            "{answer}"
        );
        Ok(())
    };
    // Only the resource: a token for it passes, one for anything else not.
    let http = s.serve(&["--oauth-resource", RESOURCE]);
    resolves(&http, RESOURCE).unwrap();
    for aud in [
        AUDIENCE,
        "https://mcp.example.com/mcp/",
        "https://mcp.example.com",
    ] {
        let why = resolves(&http, aud).unwrap_err();
        assert!(
            why.contains("the token's audience (aud) is not accepted"),
            "{aud}: {why}"
        );
    }
    // With --jwt-audience too, either is accepted.
    let http = s.serve(&["--oauth-resource", RESOURCE, "--jwt-audience", AUDIENCE]);
    resolves(&http, RESOURCE).unwrap();
    resolves(&http, AUDIENCE).unwrap();
    assert!(resolves(&http, "someone-else").is_err());
}

#[test]
fn misleading_or_malformed_oauth_settings_are_refused_at_start_up() {
    let s = Setup::new();
    let refused = |args: Vec<String>, want: &str| {
        let out = regent()
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    };
    let catalog = s.path("catalog");
    let token = s.path("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    // The --oauth-* flags without JWT verification would advertise a
    // protection nothing checks: with no auth, and with a static token.
    for extra in [vec![], vec!["--auth-token-file", &token]] {
        let mut args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        args.extend(["--oauth-resource".into(), RESOURCE.into(), catalog.clone()]);
        refused(
            args,
            "error: --oauth-resource given without JWT verification, so the server would advertise OAuth protection it does not check",
        );
    }
    refused(
        vec![
            "--oauth-scopes-supported".into(),
            "tools:read".into(),
            catalog.clone(),
        ],
        "error: --oauth-scopes-supported given without JWT verification",
    );
    for (extra, want) in [
        (
            vec!["--oauth-resource", "http://mcp.example.com/mcp"],
            r#"error: --oauth-resource "http://mcp.example.com/mcp" uses http:// for a host that is not loopback"#,
        ),
        (
            vec!["--oauth-resource", "https://mcp.example.com/mcp#top"],
            "has a fragment",
        ),
        (
            vec!["--oauth-resource", "mcp.example.com"],
            r#"error: --oauth-resource "mcp.example.com" is not a URL"#,
        ),
        (
            vec![
                "--oauth-resource",
                RESOURCE,
                "--oauth-authorization-server",
                "http://login.example.com",
            ],
            r#"error: --oauth-authorization-server "http://login.example.com" uses http://"#,
        ),
        (
            vec![
                "--oauth-resource",
                RESOURCE,
                "--oauth-scopes-supported",
                "a b",
            ],
            r#"error: --oauth-scopes-supported "a b" is not an OAuth scope"#,
        ),
        (
            vec!["--oauth-scopes-supported", "tools:read"],
            "error: --oauth-scopes-supported given without --oauth-resource",
        ),
        (
            vec![],
            "error: --jwt-jwks-file needs --jwt-audience AUD or --oauth-resource URL",
        ),
    ] {
        refused(s.args(&extra), want);
    }
}
