//! What regent's outbound HTTP clients share (`exec::http`, the decision
//! log's shipper, the JWKS fetcher, upstreams over Streamable HTTP): the
//! rustls crypto provider, installed once, and a client error with its
//! causes as one line. Each client's own settings (redirects, timeouts,
//! proxies) stay with the module that builds it.

use std::sync::Once;

/// Installs rustls' ring provider once; reqwest is built without one.
pub(crate) fn install_crypto() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Another part of the process may have installed one first; either is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// An error and its sources as one line: reqwest's own message is often
/// only "error sending request", with the cause further down.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    error_chain_with(e, str::to_string)
}

/// [`error_chain`] with each part written by `part` (the upstream client
/// lowercases them); a source whose text an earlier part already holds is
/// left out.
pub(crate) fn error_chain_with(e: &dyn std::error::Error, part: impl Fn(&str) -> String) -> String {
    let mut parts = vec![part(&e.to_string())];
    let mut src = e.source();
    while let Some(s) = src {
        let text = part(&s.to_string());
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        src = s.source();
    }
    parts.join(": ")
}
