//! A JWKS fetched from an identity provider's `jwks_uri`
//! (`--jwt-jwks-url`) and kept current: fetched once at start-up (a failure
//! fails start-up), then every `--jwt-jwks-refresh-seconds` and when a token
//! names a `kid` the set lacks. Parsing and the rules a set must follow are
//! [`super::keyset::KeySet::parse`]'s, the same as for a file.
//!
//! - Only `https://` URLs; an extra CA (`--jwt-jwks-ca`) may be trusted
//!   beside the system's roots. No proxy, no redirects, a timeout and a size
//!   cap ([`MAX_BYTES`]) on every fetch.
//! - The request path never waits on the network except for an unknown
//!   `kid`, and those refetches are rate-limited: at most one per
//!   [`ON_DEMAND_WINDOW`], however many bogus `kid`s arrive (concurrent
//!   ones wait for the one fetch and then look again).
//! - A failed fetch, or a fetched set that would be refused at start-up,
//!   keeps the previous set (and is logged).
//! - Verification reads the current set through an `RwLock<Arc<KeySet>>`
//!   held only to clone the `Arc`; a refresh swaps the pointer.

use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::Algorithm;

use super::keyset::KeySet;

/// At most one refetch for unknown `kid`s per window.
pub const ON_DEMAND_WINDOW: Duration = Duration::from_secs(10);

/// The largest JWKS accepted, in bytes.
pub const MAX_BYTES: usize = 1024 * 1024;

/// How long one fetch may take, connecting included.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// A remote key set and what keeps it current.
pub struct Remote {
    url: reqwest::Url,
    client: reqwest::Client,
    algorithms: Vec<Algorithm>,
    refresh_every: Duration,
    current: RwLock<Arc<KeySet>>,
    /// Held while fetching, so concurrent refreshes make one fetch.
    fetching: tokio::sync::Mutex<()>,
    /// When the last refetch for an unknown `kid` began.
    last_on_demand: Mutex<Option<Instant>>,
}

impl Remote {
    /// Checks the URL and the CA, and fetches the set once, blocking (on a
    /// runtime of its own: call it outside any runtime).
    pub fn start(
        url: &str,
        ca: Option<&Path>,
        refresh_every: Duration,
        algorithms: Vec<Algorithm>,
    ) -> Result<Remote, String> {
        let parsed = reqwest::Url::parse(url).map_err(|e| {
            format!(
                "error: --jwt-jwks-url {url:?} is not a URL: {e}\n  help: give the identity provider's jwks_uri, such as https://idp.example.com/.well-known/jwks.json"
            )
        })?;
        if parsed.scheme() != "https" {
            return Err(format!(
                "error: --jwt-jwks-url {url} is not an https:// URL\n  help: the key set decides who may call, so it is fetched over https only; for a private identity provider, trust its CA with --jwt-jwks-ca PATH"
            ));
        }
        if refresh_every.is_zero() {
            return Err("error: --jwt-jwks-refresh-seconds must be at least 1".into());
        }
        let client = client(ca)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("error: cannot start the runtime: {e}"))?;
        let set = runtime
            .block_on(fetch(&client, &parsed, &algorithms))
            .map_err(|why| {
                if why.contains("\n  help:") {
                    format!("error: {why}")
                } else {
                    format!(
                        "error: {why}\n  help: check that --jwt-jwks-url is the identity provider's jwks_uri and is reachable; a certificate from a private CA needs --jwt-jwks-ca PATH"
                    )
                }
            })?;
        tracing::info!(url = %parsed, keys = set.key_count(), "fetched the JWKS");
        Ok(Remote {
            url: parsed,
            client,
            algorithms,
            refresh_every,
            current: RwLock::new(Arc::new(set)),
            fetching: tokio::sync::Mutex::new(()),
            last_on_demand: Mutex::new(None),
        })
    }

    /// The set in use now.
    pub fn current(&self) -> Arc<KeySet> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Refetches for a token whose `kid` is unknown, unless a refetch for
    /// one began less than [`ON_DEMAND_WINDOW`] ago. Returns once the set
    /// is as current as it will get; the caller looks again.
    pub async fn refresh_for_unknown_kid(&self) {
        let _one = self.fetching.lock().await;
        {
            let mut last = self
                .last_on_demand
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if last.is_some_and(|t| t.elapsed() < ON_DEMAND_WINDOW) {
                return;
            }
            *last = Some(Instant::now());
        }
        self.refresh("a token named an unknown kid").await;
    }

    /// Refetches every `--jwt-jwks-refresh-seconds`, forever: spawn it, and
    /// abort it when serving ends.
    pub async fn refresh_periodically(self: Arc<Self>) {
        loop {
            tokio::time::sleep(self.refresh_every).await;
            let _one = self.fetching.lock().await;
            self.refresh("periodic refresh").await;
        }
    }

    /// Fetches and swaps; on failure keeps the set in use. Called with
    /// `fetching` held.
    async fn refresh(&self, why: &str) {
        match fetch(&self.client, &self.url, &self.algorithms).await {
            Ok(set) => {
                tracing::info!(url = %self.url, keys = set.key_count(), "{why}: fetched the JWKS");
                *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(set);
            }
            Err(e) => {
                // The first line: the help is for start-up.
                let e = e.lines().next().unwrap_or_default();
                tracing::warn!("{why}: {e}; keeping the previous key set");
            }
        }
    }
}

/// The HTTPS client: system roots plus `ca`, no proxy, no redirects, no
/// pooled connections (the start-up fetch runs on a runtime of its own, and
/// fetches are minutes apart).
fn client(ca: Option<&Path>) -> Result<reqwest::Client, String> {
    crate::outbound::install_crypto();
    let mut b = reqwest::Client::builder()
        .no_proxy()
        .https_only(true)
        .redirect(reqwest::redirect::Policy::none())
        .timeout(FETCH_TIMEOUT)
        .connect_timeout(FETCH_TIMEOUT)
        .pool_max_idle_per_host(0)
        .user_agent(concat!("regent/", env!("CARGO_PKG_VERSION")));
    if let Some(path) = ca {
        let pem = std::fs::read(path).map_err(|e| {
            format!(
                "error: cannot read the CA file {}: {}\n  help: --jwt-jwks-ca names a PEM file with the certificate of the CA that signed the identity provider's certificate",
                path.display(),
                crate::diag::lower_io(&e)
            )
        })?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem)
            .ok()
            .filter(|c| !c.is_empty())
            .ok_or_else(|| {
                format!(
                    "error: the CA file {} holds no PEM certificate\n  help: --jwt-jwks-ca wants -----BEGIN CERTIFICATE----- blocks",
                    path.display()
                )
            })?;
        b = b.tls_certs_merge(certs);
    }
    b.build().map_err(|e| {
        format!(
            "error: cannot set up the client for --jwt-jwks-url: {}",
            crate::outbound::error_chain(&e)
        )
    })
}

/// One fetch: status 200, at most [`MAX_BYTES`], a valid set.
async fn fetch(
    client: &reqwest::Client,
    url: &reqwest::Url,
    algorithms: &[Algorithm],
) -> Result<KeySet, String> {
    let fail = |what: String| format!("cannot fetch the JWKS from {url}: {what}");
    let mut resp = client
        .get(url.clone())
        .header("accept", "application/json, application/jwk-set+json")
        .send()
        .await
        .map_err(|e| fail(crate::outbound::error_chain(&e)))?;
    if !resp.status().is_success() {
        return Err(fail(format!("the server answered {}", resp.status())));
    }
    let too_big = || fail(format!("the key set is larger than {MAX_BYTES} bytes"));
    if resp.content_length().is_some_and(|n| n > MAX_BYTES as u64) {
        return Err(too_big());
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| fail(crate::outbound::error_chain(&e)))?
    {
        if body.len() + chunk.len() > MAX_BYTES {
            return Err(too_big());
        }
        body.extend_from_slice(&chunk);
    }
    let text = String::from_utf8(body).map_err(|_| fail("the key set is not UTF-8".into()))?;
    KeySet::parse(&text, &format!("the JWKS at {url}"), algorithms)
        .map_err(|e| e.trim_start_matches("error: ").to_string())
}
