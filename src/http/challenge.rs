//! The one place `WWW-Authenticate: Bearer ...` challenges are written
//! (RFC 6750 section 3, with RFC 9728 section 5.1's `resource_metadata`):
//! the 401 of `guard::authenticate` and the 403 `insufficient_scope` of
//! `scope::challenge`, both through [`Challenger::header`].
//!
//! What it owns: the parameters' order and quoting, and which parameters a
//! server with protected resource metadata adds. What it leaves to others:
//! why a request is refused (the caller passes the error and its
//! description) and the status code.

use http::HeaderValue;

use super::metadata::ResourceMetadata;

/// Builds challenges for one server; made once at start-up.
#[derive(Debug, Clone, Default)]
pub struct Challenger {
    /// The document's URL (`resource_metadata`), with `--oauth-resource`.
    resource_metadata: Option<String>,
    /// `scopes_supported`, space-separated: the `scope` of a 401.
    scopes: Option<String>,
}

impl Challenger {
    pub fn new(meta: Option<&ResourceMetadata>) -> Challenger {
        Challenger {
            resource_metadata: meta.map(|m| m.url.clone()),
            scopes: meta
                .filter(|m| !m.scopes_supported.is_empty())
                .map(|m| m.scopes_supported.join(" ")),
        }
    }

    /// The scopes a 401 names: every supported one (RFC 6750's `scope`,
    /// which MCP's scope selection reads when a client first connects).
    pub fn default_scope(&self) -> Option<&str> {
        self.scopes.as_deref()
    }

    /// `Bearer realm="regent"`, then `error` and `error_description` when
    /// given, then `resource_metadata` when the server has the document,
    /// then `scope` when given (`None` for a 401 means
    /// [`Challenger::default_scope`]'s; a 403 passes the scopes it needs).
    pub fn header(
        &self,
        error: Option<&str>,
        description: Option<&str>,
        scope: Option<&str>,
    ) -> HeaderValue {
        let mut v = String::from("Bearer ");
        param(&mut v, "realm", "regent");
        if let Some(e) = error {
            param(&mut v, "error", e);
        }
        if let Some(d) = description {
            param(&mut v, "error_description", d);
        }
        if let Some(url) = &self.resource_metadata {
            param(&mut v, "resource_metadata", url);
        }
        if let Some(s) = scope.or(self.default_scope()) {
            param(&mut v, "scope", s);
        }
        // Every part was checked at start-up or is a fixed text; a control
        // character (which no quoting can carry) falls back to the bare
        // challenge rather than dropping the header.
        HeaderValue::from_str(&v)
            .unwrap_or_else(|_| HeaderValue::from_static(r#"Bearer realm="regent""#))
    }
}

/// Appends `, name="value"` (the first without the comma), with `"` and `\`
/// escaped as RFC 9110's quoted-string asks.
fn param(out: &mut String, name: &str, value: &str) {
    if !out.ends_with(' ') {
        out.push_str(", ");
    }
    out.push_str(name);
    out.push_str("=\"");
    for c in value.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::metadata::{OAuthFlags, ResourceMetadata};

    #[test]
    fn parameters_come_in_one_order_and_are_quoted() {
        let plain = Challenger::default();
        assert_eq!(plain.header(None, None, None), r#"Bearer realm="regent""#);
        assert_eq!(
            plain.header(Some("invalid_token"), Some(r#"a "b" \c"#), None),
            r#"Bearer realm="regent", error="invalid_token", error_description="a \"b\" \\c""#
        );
        let meta = ResourceMetadata::build(
            &OAuthFlags {
                resource: Some("https://mcp.example.com/mcp".into()),
                scopes_supported: vec!["tools:read".into(), "tools:call".into()],
                ..OAuthFlags::default()
            },
            "https://idp.example.com",
        )
        .unwrap();
        let c = Challenger::new(Some(&meta));
        assert_eq!(
            c.header(None, None, None),
            r#"Bearer realm="regent", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="tools:read tools:call""#
        );
        assert_eq!(
            c.header(
                Some("insufficient_scope"),
                Some("needs tools:call"),
                Some("tools:call")
            ),
            r#"Bearer realm="regent", error="insufficient_scope", error_description="needs tools:call", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="tools:call""#
        );
    }
}
