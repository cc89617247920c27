//! Starting an upstream and opening its MCP session: a `command:` upstream
//! as a child over stdio (its environment from the allow-list, its standard
//! error to regent's log), a `url:` upstream over Streamable HTTP (its
//! `auth` credentials read at each connection, a watcher pinging it in place
//! of a process to wait for); either way its tools listed into a
//! [`Snapshot`], and why it failed in regent's words.
//!
//! What to do with a connection once made (calls: `forward`; restarts and
//! re-listing: `supervise`) is left to others.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::service::RoleClient;
use tokio::io::AsyncBufReadExt;
use tokio::sync::{Notify, oneshot, watch};

use super::{Conn, Listener, PING_INTERVAL, PING_TIMEOUT, STDERR_TAIL_LINES, oversize, relay};
use crate::diag::{Diagnostic, Location};
use crate::run_plan::ValueFrom;
use crate::run_plan::http::Auth;
use crate::source::run::ValueSource;
use crate::source::upstream::{Endpoint, Snapshot, UpstreamDecl};

pub(super) fn start_failed(decl: &UpstreamDecl, location: Location, why: &str) -> Diagnostic {
    match decl.endpoint() {
        Some(Endpoint::Url(url)) => Diagnostic::error(
            "upstream-start",
            location,
            format!("upstream `{}` at {url} could not be reached: {why}", decl.name),
        )
        .with_help("check `url` and `auth`: the server must be running and serve MCP's streamable http transport at that url"),
        _ => Diagnostic::error(
            "upstream-start",
            location,
            format!("upstream `{}` could not be started: {why}", decl.name),
        )
        .with_help("check `command`, `args` and `env`; run the command by hand to see whether it speaks MCP on stdio"),
    }
}

/// Connects to the upstream as its declaration says, and lists its tools.
pub(super) async fn connect(
    decl: &UpstreamDecl,
    base_dir: &Path,
    tools_changed: Arc<Notify>,
) -> Result<Conn, String> {
    match decl.endpoint() {
        Some(Endpoint::Command(command)) => {
            connect_child(decl, command, base_dir, tools_changed).await
        }
        Some(Endpoint::Url(url)) => connect_http(decl, url, base_dir, tools_changed).await,
        // The catalog does not load with such a declaration
        // (`source::upstream::check_endpoints`); never guess which was meant.
        None => Err("give exactly one of `command` or `url`".into()),
    }
}

/// Starts the child, connects, and lists its tools. The child is owned by a
/// waiter task that reports its exit (and kills it when asked, or when the
/// runtime ends).
async fn connect_child(
    decl: &UpstreamDecl,
    command: &str,
    base_dir: &Path,
    tools_changed: Arc<Notify>,
) -> Result<Conn, String> {
    let program = program(command, base_dir)?;
    let mut cmd = tokio::process::Command::new(&program);
    cmd.args(&decl.args)
        .current_dir(base_dir)
        .env_clear()
        .envs(environment(decl, base_dir)?)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| {
        format!(
            "cannot run {}: {}",
            program.display(),
            crate::source::files::lower_io(&e)
        )
    })?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err("the child's standard streams are not pipes".into());
    };
    // The upstream's standard error goes to regent's log, never to regent's
    // own standard error (where the decision log may be written).
    // The last lines are kept to explain a failed start.
    let name = decl.name.clone();
    let tail = std::sync::Arc::new(std::sync::Mutex::new(std::collections::VecDeque::new()));
    let kept = tail.clone();
    let drained = tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(upstream = %name, "{line}");
            if let Ok(mut t) = kept.lock() {
                if t.len() == STDERR_TAIL_LINES {
                    t.pop_front();
                }
                t.push_back(line);
            }
        }
    });
    let failed = |what: String| {
        let tail = tail.clone();
        async move {
            // What the child wrote before it went away, if it did.
            let _ = tokio::time::timeout(Duration::from_millis(500), drained).await;
            let lines: Vec<String> = tail
                .lock()
                .map(|t| t.iter().cloned().collect())
                .unwrap_or_default();
            if lines.is_empty() {
                what
            } else {
                format!(
                    "{what}; its standard error ends with:\n{}",
                    lines.join("\n")
                )
            }
        }
    };
    let pid = child.id();
    let (exited_tx, exited) = watch::channel(false);
    let (kill, kill_rx) = oneshot::channel::<()>();
    let upstream = decl.name.clone();
    tokio::spawn(async move {
        let status = tokio::select! {
            s = child.wait() => s,
            _ = kill_rx => {
                let _ = child.start_kill();
                child.wait().await
            }
        };
        match status {
            Ok(s) => tracing::debug!(upstream = %upstream, "upstream process exited: {s}"),
            Err(e) => {
                tracing::debug!(upstream = %upstream, "cannot wait for the upstream process: {e}")
            }
        }
        let _ = exited_tx.send(true);
    });
    // Whatever fails below, the child does not outlive the attempt.
    let kill = std::sync::Mutex::new(Some(kill));
    let give_up = |kill: &std::sync::Mutex<Option<oneshot::Sender<()>>>| {
        if let Some(k) = kill.lock().ok().and_then(|mut k| k.take()) {
            let _ = k.send(());
        }
    };
    let relays = relay::Relays::new(&decl.name);
    // A line rmcp's transport would drop (its id lost, the call waiting out
    // its timeout) is answered at once instead (see `oversize`).
    let limit = oversize::line_limit(
        decl.limits()
            .0
            .max_output
            .unwrap_or(crate::run_plan::cli::DEFAULT_MAX_OUTPUT),
    );
    let transport = tapped(
        rmcp::transport::async_rw::AsyncRwTransport::new_client(
            oversize::Oversize::new(stdout, limit),
            stdin,
        )
        .with_max_line_length(limit),
        relays.clone(),
    );
    let listener = Listener {
        tools_changed,
        relays: relays.clone(),
    };
    let client = match listener.serve(transport).await {
        Ok(c) => c,
        Err(e) => {
            give_up(&kill);
            return Err(failed(format!(
                "the mcp handshake failed: {}",
                lower(&e.to_string())
            ))
            .await);
        }
    };
    let tools = match client.peer().list_all_tools().await {
        Ok(t) => t,
        Err(e) => {
            give_up(&kill);
            return Err(failed(format!("`tools/list` failed: {}", lower(&e.to_string()))).await);
        }
    };
    let snapshot = snapshot_of(&tools).inspect_err(|_| give_up(&kill))?;
    Ok(Conn {
        client,
        snapshot,
        relays,
        exited,
        kill,
        pid,
        url: None,
        lost: Default::default(),
        started: Instant::now(),
    })
}

/// Opens an MCP session with a `url:` upstream over Streamable HTTP and
/// lists its tools. A watcher task then pings it every [`PING_INTERVAL`]
/// and reports the connection lost when a ping fails, the transport closes,
/// or it is asked to give up; the session ends when the connection is dropped.
async fn connect_http(
    decl: &UpstreamDecl,
    url: &str,
    base_dir: &Path,
    tools_changed: Arc<Notify>,
) -> Result<Conn, String> {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    // As over stdio: at least 16 MiB of one event, twice `max_output` when
    // that is more (a JSON body stays within rmcp's fixed 16 MiB).
    config.max_sse_event_size = oversize::line_limit(
        decl.limits()
            .0
            .max_output
            .unwrap_or(crate::run_plan::cli::DEFAULT_MAX_OUTPUT),
    );
    match credentials(decl, base_dir)? {
        None => {}
        Some(Credentials::Bearer(token)) => config = config.auth_header(token),
        Some(Credentials::Header(name, value)) => {
            config = config.custom_headers([(name, value)].into_iter().collect());
        }
    }
    crate::outbound::install_crypto();
    // As `run.http`: no system proxy, and no redirects (the declared url is
    // the endpoint; a redirect would send the token elsewhere). No idle
    // pool, as rmcp's own client: a reused half-read connection stalls.
    let http = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(0)
        .user_agent(concat!("regent/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot set up the http client: {}", error_chain(&e)))?;
    let relays = relay::Relays::new(&decl.name);
    // An answer too big for one message is answered at once (`oversize`).
    let transport = tapped(
        StreamableHttpClientTransport::with_client(oversize::Http(http), config),
        relays.clone(),
    );
    let listener = Listener {
        tools_changed,
        relays: relays.clone(),
    };
    let client = listener
        .serve(transport)
        .await
        .map_err(|e| format!("the mcp handshake failed: {}", error_chain(&e)))?;
    let tools = client
        .peer()
        .list_all_tools()
        .await
        .map_err(|e| format!("`tools/list` failed: {}", error_chain(&e)))?;
    let snapshot = snapshot_of(&tools)?;
    let (exited_tx, exited) = watch::channel(false);
    let (kill, mut kill_rx) = oneshot::channel::<()>();
    let lost: Arc<std::sync::Mutex<Option<String>>> = Default::default();
    let peer = client.peer().clone();
    let (upstream, noted) = (decl.name.clone(), lost.clone());
    tokio::spawn(async move {
        let why = loop {
            tokio::select! {
                // Asked by the supervisor, which saw the transport close.
                _ = &mut kill_rx => break "its connection closed".to_string(),
                _ = tokio::time::sleep(PING_INTERVAL) => {}
            }
            let ping = rmcp::model::ClientRequest::PingRequest(rmcp::model::PingRequest {
                method: Default::default(),
                extensions: Default::default(),
            });
            match tokio::time::timeout(PING_TIMEOUT, peer.send_request(ping)).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => break format!("a ping failed: {}", error_chain(&e)),
                Err(_) => {
                    break format!(
                        "a ping had no answer within {}",
                        crate::timestamp::human_duration(PING_TIMEOUT)
                    );
                }
            }
        };
        tracing::debug!(upstream = %upstream, "upstream connection lost: {why}");
        if let Ok(mut l) = noted.lock() {
            *l = Some(why);
        }
        let _ = exited_tx.send(true);
    });
    Ok(Conn {
        client,
        snapshot,
        relays,
        exited,
        kill: std::sync::Mutex::new(Some(kill)),
        pid: None,
        url: Some(url.to_string()),
        lost,
        started: Instant::now(),
    })
}

/// `transport` with the upstream's progress and log notifications taken
/// off it for `relays` as they are read.
fn tapped<T, E, A>(
    transport: T,
    relays: Arc<relay::Relays>,
) -> relay::Tapped<impl rmcp::transport::Transport<RoleClient, Error = E>>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    relay::Tapped {
        inner: transport.into_transport(),
        relays,
    }
}

/// What a `url:` upstream's `auth` sends: a bearer token (rmcp's own
/// `Authorization: Bearer`), or a header (`basic`'s `Authorization: Basic`,
/// or `header`'s own), its value marked sensitive.
enum Credentials {
    Bearer(String),
    Header(reqwest::header::HeaderName, reqwest::header::HeaderValue),
}

/// The credentials of a `url:` upstream, read now from regent's environment
/// or files (relative to the tool file), if it declares `auth`: the
/// declaration is checked as `run.http.auth` ([`crate::source::run::AuthDecl::compile`], which
/// `check_endpoints` already ran when the catalog loaded) and each secret
/// read as a call reads it ([`ValueFrom::read`]). A missing optional secret
/// sends nothing.
fn credentials(decl: &UpstreamDecl, base_dir: &Path) -> Result<Option<Credentials>, String> {
    use base64::Engine;
    use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};

    let Some(auth) = &decl.auth else {
        return Ok(None);
    };
    // A declaration that does not load never gets here; never connect
    // without the credentials it asked for.
    let auth = auth
        .compile(&crate::source::YamlPath::root(), base_dir)
        .map_err(|problems| {
            let p = &problems[0];
            format!("`auth` {} ({})", p.message, p.help)
        })?;
    let read = |from: &ValueFrom, what: &str| {
        from.read().map_err(|why| {
            format!("cannot read {what} of `auth`: {why} (set it, or add `optional: true` to connect without it)")
        })
    };
    let header = |name: HeaderName, value: String, what: &str| {
        let mut v = HeaderValue::from_str(&value)
            .map_err(|_| format!("{what} of `auth` is not a valid header value"))?;
        v.set_sensitive(true);
        Ok::<_, String>(Credentials::Header(name, v))
    };
    Ok(match auth {
        Auth::Bearer(t) => read(&t, "the bearer token")?.map(Credentials::Bearer),
        Auth::Basic { username, password } => {
            match (
                read(&username, "the user name")?,
                read(&password, "the password")?,
            ) {
                (Some(u), Some(p)) => {
                    let encoded =
                        base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
                    Some(header(
                        AUTHORIZATION,
                        format!("Basic {encoded}"),
                        "`basic`",
                    )?)
                }
                _ => None,
            }
        }
        Auth::Header { name, value } => match read(&value, &format!("header `{name}`"))? {
            Some(v) => {
                let name = HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| format!("`{name}` is not a valid header name"))?;
                Some(header(name, v, "`header.value`")?)
            }
            None => None,
        },
    })
}

/// An error and its sources, lowercase, so that an HTTP upstream's error
/// names the underlying cause (connection refused, a refused token, ...)
/// rather than rmcp's transport type.
pub(super) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    use rmcp::service::{ClientInitializeError, ServiceError};
    use rmcp::transport::DynamicTransportError;
    use rmcp::transport::streamable_http_client::StreamableHttpError;

    // rmcp keeps the transport's own error in a field, not as a source.
    if let Some(ClientInitializeError::TransportError { error, .. }) = e.downcast_ref() {
        return error_chain(error);
    }
    if let Some(ServiceError::TransportSend(error)) = e.downcast_ref() {
        return error_chain(error);
    }
    if let Some(d) = e.downcast_ref::<DynamicTransportError>() {
        return error_chain(d.error.as_ref());
    }
    match e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        Some(StreamableHttpError::AuthRequired(_)) => {
            return "the server answered 401 unauthorized: it wants credentials that `auth` does not give or that it does not accept".into();
        }
        Some(StreamableHttpError::InsufficientScope(_)) => {
            return "the server answered 403 forbidden: the token lacks a scope it requires".into();
        }
        // The HTTP client's error, whose sources say why (connection refused, ...).
        Some(StreamableHttpError::Client(c)) => return error_chain(c),
        _ => {}
    }
    crate::outbound::error_chain_with(e, lower)
}

/// rmcp's tools as a [`Snapshot`]: through their JSON, as the upstream sent them.
pub fn snapshot_of(tools: &[rmcp::model::Tool]) -> Result<Snapshot, String> {
    let value = serde_json::json!({ "tools": tools });
    serde_json::from_value(value).map_err(|e| format!("the upstream's tool list is malformed: {e}"))
}

/// The program to run: absolute, relative to the tool file, or from `PATH`.
fn program(command: &str, base_dir: &Path) -> Result<PathBuf, String> {
    if command.contains('/') {
        return Ok(base_dir.join(command));
    }
    crate::run_plan::cli::find_in_path(command)
        .ok_or_else(|| format!("`{command}` is not found in regent's PATH"))
}

/// The child's environment: the allow-list (`env.inherit`, else the same
/// default as commands get) and `env.set`.
fn environment(decl: &UpstreamDecl, base_dir: &Path) -> Result<Vec<(String, String)>, String> {
    let inherit: Vec<String> = match decl.env.as_ref().and_then(|e| e.inherit.clone()) {
        Some(list) => list,
        None => crate::run_plan::cli::DEFAULT_INHERIT
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    let mut env: Vec<(String, String)> = inherit
        .iter()
        .filter_map(|n| std::env::var(n).ok().map(|v| (n.clone(), v)))
        .collect();
    for (name, value) in decl.env.iter().flat_map(|e| &e.set) {
        let v = match value {
            ValueSource::Literal(s) => Some(s.clone()),
            ValueSource::External(e) => {
                let read = match (&e.env, &e.file) {
                    (Some(var), None) => std::env::var(var).ok(),
                    (None, Some(file)) => std::fs::read_to_string(base_dir.join(file))
                        .ok()
                        .map(|s| s.trim_end_matches('\n').to_string()),
                    _ => {
                        return Err(format!(
                            "env.set.{name}: give exactly one of `env` or `file`"
                        ));
                    }
                };
                match (read, &e.default) {
                    (Some(v), _) => Some(v),
                    (None, Some(d)) => Some(d.clone()),
                    (None, None) if e.optional => None,
                    (None, None) => {
                        return Err(format!(
                            "env.set.{name}: the variable or file it names is missing (add `optional: true` to go on without it)"
                        ));
                    }
                }
            }
        };
        if let Some(v) = v {
            env.retain(|(k, _)| k != name);
            env.push((name.clone(), v));
        }
    }
    Ok(env)
}

pub(super) fn lower(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().collect::<String>() + chars.as_str(),
        None => String::new(),
    }
}
