//! OAuth 2.0 Protected Resource Metadata (RFC 9728) for `serve --http` with
//! JWT verification and `--oauth-resource`: the document that tells a
//! client which authorization servers issue tokens for this server, where
//! it is served, and the `resource_metadata` URL that every 401 names (MCP
//! 2025-11-25 and 2026-07-28, "Authorization Server Discovery").
//!
//! What it owns: checking the `--oauth-*` URLs and scopes, the document's
//! JSON (built once at start-up), its two well-known paths, and the handler
//! that serves it. What it leaves to others: the route's Host/Origin guard
//! (`guard::host_and_origin`), the 401's header (`challenge`), and the
//! audience a token must name (`commands::serve_http` adds the resource to
//! the verifier's accepted audiences); it knows nothing of tokens.

use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use std::sync::Arc;

/// The well-known URI suffix of RFC 9728 section 3.
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// How long a client may cache the document: it changes only when regent
/// restarts with other flags.
const CACHE_CONTROL: &str = "public, max-age=300";

/// The protected resource's metadata, checked and rendered once.
#[derive(Debug, Clone)]
pub struct ResourceMetadata {
    /// `--oauth-resource`, exactly as given: the `resource` member and the
    /// audience tokens must name (RFC 8707), compared as a string.
    pub resource: String,
    pub scopes_supported: Vec<String>,
    /// The path (on this server) of the path-suffixed well-known form,
    /// `/.well-known/oauth-protected-resource/mcp` for a resource at
    /// `/mcp`; the plain form when the resource has no path.
    pub path: String,
    /// The absolute URL of the document, for the 401's `resource_metadata`.
    pub url: String,
    /// The document's JSON text.
    body: Arc<str>,
}

/// What the `--oauth-*` flags said, before checking.
#[derive(Debug, Default, Clone)]
pub struct OAuthFlags {
    pub resource: Option<String>,
    pub authorization_servers: Vec<String>,
    pub scopes_supported: Vec<String>,
    pub resource_documentation: Option<String>,
}

impl OAuthFlags {
    /// Whether any `--oauth-*` flag was given.
    pub fn any(&self) -> bool {
        self.resource.is_some()
            || !self.authorization_servers.is_empty()
            || !self.scopes_supported.is_empty()
            || self.resource_documentation.is_some()
    }

    /// The flag names given, for messages.
    pub fn given(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.resource.is_some() {
            v.push("--oauth-resource");
        }
        if !self.authorization_servers.is_empty() {
            v.push("--oauth-authorization-server");
        }
        if !self.scopes_supported.is_empty() {
            v.push("--oauth-scopes-supported");
        }
        if self.resource_documentation.is_some() {
            v.push("--oauth-resource-documentation");
        }
        v
    }
}

impl ResourceMetadata {
    /// Checks the flags and builds the document. `issuer` is `--jwt-issuer`:
    /// the authorization server when none is named (RFC 9728's
    /// `authorization_servers` holds issuer identifiers, and a token is
    /// accepted only from that issuer).
    pub fn build(flags: &OAuthFlags, issuer: &str) -> Result<ResourceMetadata, String> {
        let Some(resource) = flags.resource.as_deref() else {
            return Err(format!(
                "error: {} given without --oauth-resource\n  help: add --oauth-resource URL, this server's resource identifier (such as https://mcp.example.com/mcp), or drop the other --oauth-* flags",
                flags.given().join(", ")
            ));
        };
        let resource = resource.trim().to_string();
        let parsed = check_url("--oauth-resource", &resource, false)?;
        // Clients compare the identifier as a string (the document's
        // `resource`, a token's `aud`) and build the well-known URL from
        // it: it must already be in the form a URL parser gives back, or
        // the two sides would disagree about `https://MCP.example.com/a/../mcp`.
        let normal = parsed.as_str();
        if normal != resource && normal != format!("{resource}/") {
            return Err(format!(
                "error: --oauth-resource {resource:?} is not in normal form, so clients would compare it differently\n  help: write it as {:?}",
                normal
                    .strip_suffix('/')
                    .filter(|_| parsed.path() == "/")
                    .unwrap_or(normal)
            ));
        }
        let mut servers = Vec::new();
        for s in &flags.authorization_servers {
            let s = s.trim();
            check_url("--oauth-authorization-server", s, false)?;
            if !servers.iter().any(|x| x == s) {
                servers.push(s.to_string());
            }
        }
        if servers.is_empty() {
            check_url("--jwt-issuer", issuer, false).map_err(|e| {
                let why = e.lines().next().unwrap_or_default();
                format!(
                    "{why}, and without --oauth-authorization-server the issuer is the authorization server the metadata names\n  help: give --oauth-authorization-server URL, the identity provider's issuer URL"
                )
            })?;
            servers.push(issuer.to_string());
        } else if !servers.iter().any(|s| s == issuer) {
            tracing::warn!(
                "no --oauth-authorization-server is the --jwt-issuer {issuer}: tokens from the advertised authorization servers are refused unless their iss is {issuer}"
            );
        }
        let mut scopes: Vec<String> = Vec::new();
        for s in &flags.scopes_supported {
            let s = s.trim();
            if s.is_empty() {
                continue;
            }
            // RFC 6749 section 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ).
            if !s
                .bytes()
                .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
            {
                return Err(format!(
                    "error: --oauth-scopes-supported {s:?} is not an OAuth scope\n  help: a scope is printable ASCII without spaces, quotes or backslashes (RFC 6749 section 3.3), such as tools:read"
                ));
            }
            if !scopes.iter().any(|x| x == s) {
                scopes.push(s.to_string());
            }
        }
        let documentation = match flags.resource_documentation.as_deref() {
            Some(d) => {
                let d = d.trim();
                check_url("--oauth-resource-documentation", d, true)?;
                Some(d.to_string())
            }
            None => None,
        };
        // RFC 9728 section 3.1: the well-known string goes between the host
        // and the path; a path of only "/" counts as none.
        let suffix = match parsed.path() {
            "/" => "",
            p => p,
        };
        let path = format!("{WELL_KNOWN}{suffix}");
        let url = format!("{}{path}", parsed.origin().ascii_serialization());
        let mut doc = serde_json::Map::new();
        doc.insert("resource".into(), resource.clone().into());
        doc.insert("authorization_servers".into(), servers.into());
        if !scopes.is_empty() {
            doc.insert("scopes_supported".into(), scopes.clone().into());
        }
        doc.insert("bearer_methods_supported".into(), vec!["header"].into());
        if let Some(d) = documentation {
            doc.insert("resource_documentation".into(), d.into());
        }
        Ok(ResourceMetadata {
            resource,
            scopes_supported: scopes,
            path,
            url,
            body: serde_json::Value::Object(doc).to_string().into(),
        })
    }

    /// The paths the document is served at: the path-suffixed form and the
    /// plain one (MCP clients try the first, then the second).
    pub fn paths(&self) -> Vec<String> {
        let mut v = vec![self.path.clone()];
        if self.path != WELL_KNOWN {
            v.push(WELL_KNOWN.to_string());
        }
        v
    }
}

/// The routes the document needs: the plain well-known path and every path
/// under it. [`serve`] answers only the document's two paths; matching
/// them there, not in axum's route table, keeps a resource path with
/// characters axum's route syntax reserves (`:`, `*`) from mattering.
pub const ROUTES: [&str; 2] = [WELL_KNOWN, "/.well-known/oauth-protected-resource/{*rest}"];

/// `GET` (and `HEAD`) of the document at its paths: 200, `application/json`,
/// cacheable; 404 under the well-known prefix otherwise.
pub async fn serve(State(meta): State<Arc<ResourceMetadata>>, uri: http::Uri) -> Response {
    if !meta.paths().iter().any(|p| p == uri.path()) {
        let mut r = Response::new(Body::from("Not Found"));
        *r.status_mut() = StatusCode::NOT_FOUND;
        return r;
    }
    let mut r = Response::new(Body::from(meta.body.to_string()));
    *r.status_mut() = StatusCode::OK;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(CACHE_CONTROL),
    );
    r
}

/// Whether `host` names this machine: http is allowed only there.
fn is_loopback(host: &url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(d) => d.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    }
}

/// An absolute https URL (http only for a loopback host), without a
/// fragment or credentials, and without a query unless `query_ok` (an
/// issuer identifier (RFC 8414) and a resource identifier (RFC 9728) have
/// none).
fn check_url(flag: &str, text: &str, query_ok: bool) -> Result<url::Url, String> {
    let example = match flag {
        "--oauth-resource" => "https://mcp.example.com/mcp",
        "--oauth-resource-documentation" => "https://docs.example.com/mcp",
        _ => "https://idp.example.com",
    };
    let bad = |why: &str| {
        format!(
            "error: {flag} {text:?} {why}\n  help: give an absolute https:// URL (http:// only for localhost or a loopback address), such as {example}"
        )
    };
    let u = url::Url::parse(text).map_err(|e| bad(&format!("is not a URL ({e})")))?;
    let host = u.host().ok_or_else(|| bad("has no host"))?;
    match u.scheme() {
        "https" => {}
        "http" if is_loopback(&host) => {}
        "http" => {
            return Err(bad(
                "uses http:// for a host that is not loopback, so tokens and metadata would travel in the clear",
            ));
        }
        other => return Err(bad(&format!("has the scheme {other}:, not https:"))),
    }
    if u.fragment().is_some() {
        return Err(bad(
            "has a fragment (#...), which an OAuth URL must not have",
        ));
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err(bad(
            "holds credentials (user@), which must never be published",
        ));
    }
    if !query_ok && u.query().is_some() {
        return Err(bad(
            "has a query (?...), which this identifier must not have",
        ));
    }
    Ok(u)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(resource: &str) -> OAuthFlags {
        OAuthFlags {
            resource: Some(resource.into()),
            ..OAuthFlags::default()
        }
    }

    #[test]
    fn the_well_known_path_goes_between_host_and_path() {
        let m =
            ResourceMetadata::build(&flags("https://mcp.example.com/mcp"), "https://idp").unwrap();
        assert_eq!(m.path, "/.well-known/oauth-protected-resource/mcp");
        assert_eq!(
            m.url,
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(m.paths().len(), 2);
        for root in ["https://mcp.example.com", "https://mcp.example.com/"] {
            let m = ResourceMetadata::build(&flags(root), "https://idp").unwrap();
            assert_eq!(m.path, WELL_KNOWN);
            assert_eq!(m.paths(), vec![WELL_KNOWN.to_string()]);
            assert_eq!(m.resource, root, "kept as given: it is the audience");
        }
        let m =
            ResourceMetadata::build(&flags("http://127.0.0.1:8080/a/mcp"), "https://idp").unwrap();
        assert_eq!(
            m.url,
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource/a/mcp"
        );
    }

    #[test]
    fn urls_must_be_https_unless_loopback_and_plain() {
        for (url, why) in [
            ("http://mcp.example.com/mcp", "not loopback"),
            ("https://mcp.example.com/mcp#x", "fragment"),
            ("https://mcp.example.com/mcp?a=1", "query"),
            ("https://u:p@mcp.example.com/mcp", "credentials"),
            ("ftp://mcp.example.com/mcp", "scheme ftp"),
            ("mcp.example.com/mcp", "not a URL"),
        ] {
            let e = ResourceMetadata::build(&flags(url), "https://idp").unwrap_err();
            assert!(e.contains(why), "{url}: {e}");
            assert!(e.starts_with("error: --oauth-resource "), "{e}");
        }
        for ok in [
            "http://localhost:1/mcp",
            "http://[::1]/mcp",
            "https://x/mcp",
        ] {
            assert!(
                ResourceMetadata::build(&flags(ok), "https://idp").is_ok(),
                "{ok}"
            );
        }
    }

    #[test]
    fn the_resource_must_be_written_in_normal_form() {
        for (given, normal) in [
            ("https://MCP.example.com/mcp", "https://mcp.example.com/mcp"),
            ("https://x/a/../mcp", "https://x/mcp"),
            ("https://x:443/mcp", "https://x/mcp"),
            ("HTTPS://x", "https://x"),
        ] {
            let e = ResourceMetadata::build(&flags(given), "https://idp").unwrap_err();
            assert!(
                e.contains(&format!("write it as {normal:?}")),
                "{given}: {e}"
            );
        }
        let e = ResourceMetadata::build(&flags("https://x/mcp"), "idp").unwrap_err();
        assert!(
            e.starts_with(r#"error: --jwt-issuer "idp" is not a URL"#)
                && e.contains("give --oauth-authorization-server URL"),
            "{e}"
        );
    }

    #[test]
    fn scopes_are_scope_tokens() {
        let mut f = flags("https://x/mcp");
        f.scopes_supported = vec!["tools:read".into(), "a\"b".into()];
        let e = ResourceMetadata::build(&f, "https://idp").unwrap_err();
        assert!(e.contains("not an OAuth scope"), "{e}");
    }
}
