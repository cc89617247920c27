//! The DNS-rebinding and cross-origin checks for the operator routes
//! ([`host_and_origin`]): the allowed `Host` names and `Origin`s, read from
//! `--allowed-host`/`--allowed-origin` (rmcp makes the same checks on `/mcp`
//! itself). Where they apply is `http`'s business.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderMap, StatusCode, header};

use super::{Shared, plain};

/// `Host` and `Origin` checks for the operator routes, with the same rules
/// and lists rmcp applies to `/mcp`: a `Host` must match an allowed name (and
/// port, when the entry has one); an `Origin`, when present, must match an
/// allowed origin. Anything else is 403.
pub async fn host_and_origin(State(s): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    if let Err(why) = check_host_and_origin(&s, req.uri(), req.headers()) {
        tracing::warn!("refused {} {}: {why}", req.method(), req.uri().path());
        return plain(StatusCode::FORBIDDEN, format!("Forbidden: {why}"));
    }
    next.run(req).await
}

pub(in crate::http) fn check_host_and_origin(
    s: &Shared,
    uri: &http::Uri,
    headers: &HeaderMap,
) -> Result<(), String> {
    let authority = match headers.get(header::HOST) {
        Some(h) => h
            .to_str()
            .ok()
            .and_then(|h| h.parse::<http::uri::Authority>().ok())
            .ok_or("Host header is malformed")?,
        None => uri.authority().cloned().ok_or("Host header is missing")?,
    };
    // Compared without case rather than lowercased: no copy per request.
    let host = unbracket(authority.host());
    let port = authority.port_u16();
    if !s.hosts.iter().any(|r| r.matches(host, port)) {
        return Err("Host header is not allowed".into());
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin
            .to_str()
            .ok()
            .and_then(Origin::parse)
            .ok_or("Origin header is malformed")?;
        if !s.origins.iter().any(|r| r.matches(&origin)) {
            return Err("Origin header is not allowed".into());
        }
    }
    Ok(())
}

fn normalize(host: &str) -> String {
    unbracket(host).to_ascii_lowercase()
}

/// An IPv6 host without its brackets.
fn unbracket(host: &str) -> &str {
    host.trim_start_matches('[').trim_end_matches(']')
}

/// An allowed `Host`: a name, and a port when the entry names one.
pub(super) struct HostRule {
    host: String,
    port: Option<u16>,
}

impl HostRule {
    pub(super) fn parse(s: &str) -> Option<HostRule> {
        let s = s.trim();
        if s.is_empty() {
            return None;
        }
        Some(match s.parse::<http::uri::Authority>() {
            Ok(a) => HostRule {
                host: normalize(a.host()),
                port: a.port_u16(),
            },
            // A bare IPv6 address (`::1`) is not an authority.
            Err(_) => HostRule {
                host: normalize(s),
                port: None,
            },
        })
    }

    /// `host` unbracketed, in any case (the rule's is lowercase).
    fn matches(&self, host: &str, port: Option<u16>) -> bool {
        self.host.eq_ignore_ascii_case(host) && self.port.is_none_or(|p| Some(p) == port)
    }
}

/// A browser origin: scheme, host, port (the scheme's default when absent).
struct Origin {
    null: bool,
    scheme: String,
    host: String,
    port: Option<u16>,
}

impl Origin {
    pub(super) fn parse(s: &str) -> Option<Origin> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("null") {
            return Some(Origin {
                null: true,
                scheme: String::new(),
                host: String::new(),
                port: None,
            });
        }
        let uri: http::Uri = s.parse().ok()?;
        let scheme = uri.scheme_str()?.to_ascii_lowercase();
        let authority = uri.authority()?;
        let port = authority.port_u16().or(match scheme.as_str() {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        });
        Some(Origin {
            null: false,
            scheme,
            host: normalize(authority.host()),
            port,
        })
    }
}

/// An allowed origin: `scheme://host:port`, `scheme://host:*` (any port),
/// `scheme://host` (any port, as rmcp treats it), or `null`.
pub(super) struct OriginRule {
    null: bool,
    scheme: String,
    host: String,
    /// `None` matches any port.
    port: Option<u16>,
}

impl OriginRule {
    pub(super) fn parse(s: &str) -> Option<OriginRule> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("null") {
            return Some(OriginRule {
                null: true,
                scheme: String::new(),
                host: String::new(),
                port: None,
            });
        }
        let (base, any_port) = match s.strip_suffix(":*") {
            Some(base) => (base, true),
            None => (s, false),
        };
        let uri: http::Uri = base.parse().ok()?;
        let authority = uri.authority()?;
        Some(OriginRule {
            null: false,
            scheme: uri.scheme_str()?.to_ascii_lowercase(),
            host: normalize(authority.host()),
            port: if any_port { None } else { authority.port_u16() },
        })
    }

    fn matches(&self, o: &Origin) -> bool {
        if self.null || o.null {
            return self.null && o.null;
        }
        self.scheme == o.scheme
            && self.host == o.host
            && self.port.is_none_or(|p| o.port == Some(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_rules_match_names_and_optional_ports() {
        let any = HostRule::parse("localhost").unwrap();
        assert!(any.matches("localhost", Some(8080)));
        assert!(any.matches("localhost", None));
        let pinned = HostRule::parse("example.com:8443").unwrap();
        assert!(pinned.matches("example.com", Some(8443)));
        assert!(!pinned.matches("example.com", Some(80)));
        let v6 = HostRule::parse("::1").unwrap();
        assert!(v6.matches(&normalize("[::1]"), Some(1)));
    }

    #[test]
    fn origin_rules_follow_scheme_host_port() {
        let rule = OriginRule::parse("http://localhost:*").unwrap();
        assert!(rule.matches(&Origin::parse("http://localhost:3000").unwrap()));
        assert!(!rule.matches(&Origin::parse("https://localhost:3000").unwrap()));
        assert!(!rule.matches(&Origin::parse("http://evil.example").unwrap()));
        let exact = OriginRule::parse("https://app.example:443").unwrap();
        assert!(exact.matches(&Origin::parse("https://app.example").unwrap()));
        assert!(!exact.matches(&Origin::parse("https://app.example:8443").unwrap()));
        assert!(!rule.matches(&Origin::parse("null").unwrap()));
    }
}
