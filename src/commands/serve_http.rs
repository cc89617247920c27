//! `regent serve --http ADDR`: turn the command-line flags into checked
//! [`HttpOptions`] (before the catalog loads, so a bad flag fails fast), build
//! the multi-threaded runtime, and serve until SIGINT or SIGTERM. Loading the
//! catalog and reloading it are `serve`'s, as for stdio; what is served, and
//! how requests are guarded, is `http`'s job.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::protocol::Regent;

use super::{Failure, exit};
use crate::cli::HttpArgs;
use crate::http::metadata::{OAuthFlags, ResourceMetadata};
use crate::http::{self, HttpOptions, jwt};
use crate::metrics::Metrics;
use crate::state::CatalogState;

/// The environment variable that may hold the bearer token.
pub const TOKEN_ENV: &str = "REGENT_AUTH_TOKEN";

/// Stack size of the runtime's threads: the same as every thread that
/// evaluates policies (`par::STACK_SIZE`, like main.rs). regorus recurses a
/// few KiB per Rego call, so an unbounded recursive function must hit the
/// policy time limit before the stack ends; an overflow aborts the process,
/// and over HTTP that drops every client's connection. The memory is
/// reserved, not committed, until a deep evaluation touches it.
///
/// Measured on the release build with the 1 s default limit: the first
/// endless-recursion request fails closed, the second overflows, at 512 MiB
/// and at 1 GiB alike (a warm engine recurses deeper within the same limit),
/// over stdio as over HTTP. Stack size alone cannot fix that; see the report.
pub const WORKER_STACK_SIZE: usize = crate::par::STACK_SIZE;

/// Cap on the runtime's blocking threads, each with the stack above.
const MAX_BLOCKING_THREADS: usize = 64;

/// Checks the flags and reads the token: the HTTP options, before anything
/// is loaded.
pub fn prepare(args: &HttpArgs) -> Result<HttpOptions, Failure> {
    let env_token = std::env::var(TOKEN_ENV).ok();
    let opts = options(args, env_token).map_err(|m| Failure::new(exit::CANNOT_RUN, m))?;
    warn_about_exposure(&opts, args);
    Ok(opts)
}

/// The runtime HTTP serving runs on: one worker per core, big stacks.
pub fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("regent-http")
        .thread_stack_size(WORKER_STACK_SIZE)
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .build()
        .map_err(|e| {
            Failure::new(
                exit::CANNOT_RUN,
                format!("error: cannot start the runtime: {e}"),
            )
        })
}

/// Serves `handler` over HTTP until SIGINT or SIGTERM, then shuts down
/// gracefully. Runs inside [`runtime`].
pub async fn serve(
    opts: HttpOptions,
    handler: Regent,
    state: Arc<CatalogState>,
    metrics: Arc<Metrics>,
) -> Result<i32, Failure> {
    let addr = opts.addr;
    let auth = if opts.jwt.is_some() {
        "jwt"
    } else if opts.auth_token.is_some() {
        "bearer"
    } else {
        "none"
    };
    let result = async {
        let shutdown = shutdown_signal()?;
        // Stateless 2026-07-28 resolves are answered without rmcp, by the
        // same server.
        let direct = Some(handler.http_direct());
        http::serve(opts, handler, direct, state, metrics, shutdown, |bound| {
            tracing::info!(
                auth,
                "serving MCP at http://{}/mcp (health: /healthz, metrics: /metrics)",
                bound.addr
            );
        })
        .await
    }
    .await;
    result.map(|()| exit::OK).map_err(|e| {
        Failure::new(
            exit::CANNOT_RUN,
            format!("error: cannot serve HTTP on {addr}: {e}"),
        )
    })
}

/// Resolves when SIGINT or SIGTERM arrives (stdio serving uses it too).
pub(super) fn shutdown_signal() -> std::io::Result<impl Future<Output = ()> + Send> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM received"),
            _ = int.recv() => tracing::info!("SIGINT received"),
        }
    })
}

/// Checks the flags and reads the token; every error says what to do.
pub fn options(args: &HttpArgs, env_token: Option<String>) -> Result<HttpOptions, String> {
    let addr = args
        .http
        .ok_or("error: --http ADDR is required for HTTP serving")?;
    if !addr.ip().is_loopback() && !args.allow_remote {
        return Err(format!(
            "error: --http {addr} is not a loopback address, so other machines could reach it\n  \
             help: serve this machine only with --http 127.0.0.1:{port}, or pass --allow-remote \
             (with --auth-token-file and --allowed-host) to accept remote clients",
            port = addr.port()
        ));
    }
    let flags = oauth_flags(args);
    let (jwt, oauth) = jwt(args, &flags)?;
    if jwt.is_some() && env_token.is_some() {
        return Err(format!(
            "error: both a JWT key set (--jwt-jwks-file or --jwt-jwks-url) and {TOKEN_ENV} are set\n  help: a server checks either a static token or JWTs; unset {TOKEN_ENV}"
        ));
    }
    let auth_token = token(args, env_token)?;
    let allowed_hosts = if args.allowed_hosts.is_empty() {
        let mut hosts = http::default_allowed_hosts();
        add_bound_ip(&mut hosts, addr);
        hosts
    } else {
        args.allowed_hosts.clone()
    };
    for h in &allowed_hosts {
        if h.trim().is_empty() || h.contains('/') {
            return Err(format!(
                "error: --allowed-host {h:?} is not a host name\n  help: give a name or name:port, such as mcp.example.com or mcp.example.com:8443"
            ));
        }
    }
    let allowed_origins = if args.allowed_origins.is_empty() {
        http::default_allowed_origins()
    } else {
        args.allowed_origins.clone()
    };
    for o in &allowed_origins {
        if !(o == "null" || o.contains("://")) {
            return Err(format!(
                "error: --allowed-origin {o:?} is not an origin\n  help: give scheme://host, scheme://host:port or scheme://host:* (any port), such as https://app.example.com"
            ));
        }
    }
    if args.max_body_bytes == 0 {
        return Err("error: --max-body-bytes must be at least 1".into());
    }
    if args.max_connections == 0 {
        return Err("error: --max-connections must be at least 1".into());
    }
    let max_connections_per_peer =
        per_peer_limit(args.max_connections, args.max_connections_per_peer)?;
    if args.request_timeout_secs == 0 {
        return Err("error: --request-timeout-secs must be at least 1".into());
    }
    Ok(HttpOptions {
        // Set by `serve`, whose flag it is.
        enforce_scopes: false,
        addr,
        allowed_hosts,
        allowed_origins,
        auth_token,
        jwt,
        oauth,
        max_body_bytes: args.max_body_bytes,
        max_connections: args.max_connections,
        max_connections_per_peer,
        request_timeout: Duration::from_secs(args.request_timeout_secs),
        shutdown_grace: Duration::from_secs(args.shutdown_grace_secs),
    })
}

/// The per-address connection limit `listener` enforces, 0 for none.
///
/// Off by default: regent is reached through a TLS-terminating proxy or a
/// load balancer (docs/deploying.md), or from the same machine, and either
/// way every connection comes from one address, which a per-address limit
/// below `--max-connections` would starve. It is for a server that clients
/// reach directly. A limit at or above `--max-connections` never binds
/// before the global one, so it is turned off; one given above it is
/// refused as a mistake.
fn per_peer_limit(global: usize, given: Option<usize>) -> Result<usize, String> {
    let limit = match given {
        Some(0) => return Ok(0),
        Some(n) if n > global => {
            return Err(format!(
                "error: --max-connections-per-peer {n} is more than --max-connections {global}, so it would never apply\n  \
                 help: give at most {global}, or 0 to turn the per-address limit off (as behind a load balancer or proxy, \
                 where every connection comes from its address)"
            ));
        }
        Some(n) => n,
        None => return Ok(0),
    };
    Ok(if limit >= global { 0 } else { limit })
}

/// A specific address the server binds is a name clients may use: it was
/// not chosen by a web page, so it cannot be a rebinding.
fn add_bound_ip(hosts: &mut Vec<String>, addr: SocketAddr) {
    if addr.ip().is_unspecified() {
        return;
    }
    let ip = addr.ip().to_string();
    if !hosts.contains(&ip) {
        hosts.push(ip);
    }
}

fn oauth_flags(args: &HttpArgs) -> OAuthFlags {
    OAuthFlags {
        resource: args.oauth_resource.clone(),
        authorization_servers: args.oauth_authorization_servers.clone(),
        scopes_supported: args.oauth_scopes_supported.clone(),
        resource_documentation: args.oauth_resource_documentation.clone(),
    }
}

/// The JWT verifier, when `--jwt-jwks-file` or `--jwt-jwks-url` is given:
/// the allow-list is checked and the key set read (or fetched) now, so a
/// bad one fails start-up; and the protected resource metadata, when
/// `--oauth-resource` is given too. The `--oauth-*` flags without a key set
/// are refused: they would advertise tokens nobody checks.
///
/// The audiences a token may name are `--jwt-audience`'s and the resource
/// identifier (RFC 8707: a token for this server names it in `aud`); one of
/// the two is needed.
type Jwt = (Option<Arc<jwt::Verifier>>, Option<Arc<ResourceMetadata>>);

fn jwt(args: &HttpArgs, flags: &OAuthFlags) -> Result<Jwt, String> {
    let (jwks, flag) = match (&args.jwt_jwks_file, &args.jwt_jwks_url) {
        (Some(_), Some(_)) => {
            return Err(
                "error: both --jwt-jwks-file and --jwt-jwks-url are given\n  help: give the key set one way".into(),
            );
        }
        (Some(path), None) => (jwt::JwksSource::File(path.clone()), "--jwt-jwks-file"),
        (None, Some(url)) => (
            jwt::JwksSource::Url {
                url: url.clone(),
                ca: args.jwt_jwks_ca.clone(),
                refresh: Duration::from_secs(args.jwt_jwks_refresh_seconds),
            },
            "--jwt-jwks-url",
        ),
        (None, None) if flags.any() => {
            return Err(format!(
                "error: {} given without JWT verification, so the server would advertise OAuth protection it does not check\n  help: add --jwt-jwks-file PATH or --jwt-jwks-url URL (with --jwt-issuer), or drop the --oauth-* flags",
                flags.given().join(", ")
            ));
        }
        (None, None) => return Ok((None, None)),
    };
    let issuer = args
        .jwt_issuer
        .clone()
        .filter(|i| !i.trim().is_empty())
        .ok_or(format!(
            "error: {flag} needs --jwt-issuer ISS, the issuer tokens must name"
        ))?;
    let oauth = match flags.any() {
        true => Some(Arc::new(ResourceMetadata::build(flags, &issuer)?)),
        false => None,
    };
    let mut audiences: Vec<String> = args
        .jwt_audiences
        .iter()
        .filter(|a| !a.trim().is_empty())
        .cloned()
        .collect();
    if let Some(meta) = &oauth
        && !audiences.contains(&meta.resource)
    {
        audiences.push(meta.resource.clone());
    }
    if audiences.is_empty() {
        return Err(format!(
            "error: {flag} needs --jwt-audience AUD or --oauth-resource URL, an audience tokens must name (this server's identifier at the identity provider)"
        ));
    }
    if oauth.is_none() {
        tracing::warn!(
            "JWTs are verified but no --oauth-resource is given: clients get no resource_metadata in a 401 and cannot discover the authorization server on their own (MCP clients need it; see docs/http.md, Authorization)"
        );
    }
    let cfg = jwt::JwtConfig {
        jwks,
        issuer,
        audiences,
        algorithms: jwt::parse_algorithms(&args.jwt_algorithms)?,
        leeway_seconds: args.jwt_leeway_seconds,
    };
    let verifier = jwt::Verifier::load(&cfg)?;
    Ok((Some(Arc::new(verifier)), oauth))
}

fn token(args: &HttpArgs, env_token: Option<String>) -> Result<Option<String>, String> {
    let (token, origin) = match (&args.auth_token_file, env_token) {
        (Some(_), Some(_)) => {
            return Err(format!(
                "error: both --auth-token-file and {TOKEN_ENV} are set\n  help: give the token one way"
            ));
        }
        (Some(path), None) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                format!(
                    "error: cannot read the token file {}: {}\n  help: --auth-token-file names a file holding the bearer token on one line",
                    path.display(),
                    crate::source::files::lower_io(&e)
                )
            })?;
            (text, format!("the token file {}", path.display()))
        }
        (None, Some(t)) => (t, TOKEN_ENV.to_string()),
        (None, None) => return Ok(None),
    };
    let token = token.trim().to_string();
    if token.is_empty() {
        return Err(format!(
            "error: {origin} holds no token\n  help: put the bearer token in it, for instance from `openssl rand -hex 32`"
        ));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!(
            "error: the token in {origin} has spaces or characters that cannot travel in an HTTP header\n  help: use printable ASCII only, for instance from `openssl rand -hex 32`"
        ));
    }
    Ok(Some(token))
}

fn warn_about_exposure(opts: &HttpOptions, args: &HttpArgs) {
    if args.allow_remote && opts.auth_token.is_none() && opts.jwt.is_none() {
        tracing::warn!(
            "--allow-remote without a bearer token: anyone who can reach {} can list and call tools (set --auth-token-file)",
            opts.addr
        );
    }
    if opts.addr.ip().is_unspecified() && args.allowed_hosts.is_empty() {
        tracing::warn!(
            "bound to {} but only loopback Host names are allowed; remote clients get 403 until you add --allowed-host",
            opts.addr
        );
    }
}

#[cfg(test)]
mod tests {
    use super::per_peer_limit;

    #[test]
    fn the_per_peer_limit_is_off_unless_given_and_below_the_global_one() {
        assert_eq!(per_peer_limit(1024, None), Ok(0));
        assert_eq!(per_peer_limit(4, None), Ok(0));
        assert_eq!(per_peer_limit(1024, Some(0)), Ok(0));
        assert_eq!(per_peer_limit(1024, Some(1024)), Ok(0));
        assert_eq!(per_peer_limit(1024, Some(3)), Ok(3));
        assert!(
            per_peer_limit(8, Some(9))
                .unwrap_err()
                .contains("never apply")
        );
    }
}
