//! `regent serve`: load the catalog, then answer MCP on stdio until the
//! client closes its end (or over HTTP with `--http`: see `serve_http`),
//! reloading the catalog when its files change or on `SIGHUP` (see `reload`).

use std::sync::Arc;

use rmcp::ServiceExt;

use super::{Failure, build_options, exit, load_source};
use crate::cli::ServeArgs;
use crate::decisions::{self, DecisionLog, ship};
use crate::diag::Diagnostics;
use crate::metrics::Metrics;
use crate::protocol::Regent;
use crate::protocol::call::CallLimit;
use crate::protocol::input::RequestStates;
use crate::protocol::transport::LineTransport;
use crate::reload;
use crate::state::CatalogState;
use crate::upstream::{self, Upstreams};

/// The environment variable that names the caller file when `--caller-file`
/// is not given.
pub const CALLER_FILE_ENV: &str = "REGENT_CALLER_FILE";

/// The configured stdio caller: `--caller-file`, else `REGENT_CALLER_FILE`.
/// Refused with `--http`, whose callers come only from verified tokens.
fn caller(args: &ServeArgs) -> Result<Option<crate::caller::Caller>, Failure> {
    let from_env = std::env::var_os(CALLER_FILE_ENV).filter(|v| !v.is_empty());
    let (path, named_by) = match (&args.caller_file, from_env) {
        (Some(p), _) => (p.clone(), "--caller-file"),
        (None, Some(v)) => (std::path::PathBuf::from(v), CALLER_FILE_ENV),
        (None, None) => return Ok(None),
    };
    if args.http.http.is_some() {
        return Err(cannot_run(format!(
            "{named_by} cannot be used with --http: over HTTP the caller comes only from a verified token\n  = help: drop {named_by} (unset {CALLER_FILE_ENV}), or give --jwt-jwks-file or --jwt-jwks-url so each request names its caller"
        )));
    }
    // Its numbers spelled by hand as a token's are (`policy::spelled`).
    crate::caller::Caller::from_file(&path, crate::policy::spelled::claim_numbers)
        .map(Some)
        .map_err(|d| Failure::new(exit::CANNOT_RUN, d.render().trim_end().to_string()))
}

pub fn run(args: &ServeArgs) -> Result<i32, Failure> {
    check_status_file(args)?;
    if args.max_concurrent_calls == 0 {
        return Err(cannot_run(
            "--max-concurrent-calls must be at least 1".into(),
        ));
    }
    let caller = caller(args)?;
    // With --bundle-url the catalog is the bundle's, unpacked under
    // --bundle-dir; the rest of start-up reads it as files.
    let bundle = match &args.bundle_url {
        Some(url) => Some(bundle_start(args, url)?),
        None => None,
    };
    let catalog_args = crate::cli::CatalogArgs {
        // The bundle's directory goes last: the reload thread replaces it
        // with the next bundle's (`reload::Settings::bundle`).
        paths: {
            let mut paths = args.catalog.paths.clone();
            paths.extend(bundle.as_ref().map(|(ready, _)| ready.catalog_dir.clone()));
            paths
        },
        policy_timeout_ms: args.catalog.policy_timeout_ms,
        policy_memory_mb: args.catalog.policy_memory_mb,
    };
    if args.enforce_scopes {
        let nobody = match args.http.http {
            Some(_) => args.http.jwt_jwks_file.is_none() && args.http.jwt_jwks_url.is_none(),
            None => caller.is_none(),
        };
        if nobody {
            tracing::warn!(
                "--enforce-scopes without a caller (no --jwt-jwks-file or --jwt-jwks-url over HTTP, no --caller-file over stdio): every call whose securitySchemes need an OAuth scope will be refused"
            );
        }
    }
    let http = match args.http.http {
        Some(_) => Some(super::serve_http::prepare(&args.http)?),
        None => None,
    };
    // Policy evaluation takes microseconds and stdio is one connection, so a
    // single-threaded runtime avoids cross-thread wake-ups on every message.
    // HTTP serves many connections at once on a multi-threaded one. Reloads
    // run on their own thread and never block either.
    let runtime = match &http {
        Some(_) => super::serve_http::runtime()?,
        None => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| cannot_run(format!("cannot start the runtime: {e}")))?,
    };
    // Take SIGHUP over before the (possibly long) first load: its default
    // action would kill the server. One that arrives early is kept, and
    // handled once the reload thread runs.
    let mut hangup = {
        let _in_runtime = runtime.enter();
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
            .map_err(|e| cannot_run(format!("cannot handle SIGHUP: {e}")))?
    };

    // Upstream MCP servers are started and listed before the catalog is
    // built: the build imports what they listed, as data.
    let reading = std::time::Instant::now();
    let cpu = crate::par::cpu_time();
    let load_cpu = cpu;
    // Most of what a load makes is freed within it (each tool's engine is
    // made, warmed and dropped): purged as it is freed, it is not all held
    // at the peak (`heap`).
    let loading = crate::heap::loading();
    let mut source = load_source(&catalog_args).map_err(|d| Failure::from_diagnostics(&d))?;
    tracing::debug!(
        took_ms = reading.elapsed().as_millis() as u64,
        cpu_ms = crate::par::cpu_ms_since(cpu),
        rss_kb = resident_kb(),
        "read the catalog's files"
    );
    let upstreams = runtime
        .block_on(Upstreams::start(&source, upstream::START_TIMEOUT))
        .map_err(|d| Failure::from_diagnostics(&d))?;
    let snapshots = upstreams.snapshots();
    // Tools that drifted from their pins are held back (quarantined) here,
    // as at every reload.
    let (imported, drift) = source.import_served(&snapshots);
    for w in drift {
        tracing::warn!("{w}");
    }
    if imported.has_errors() {
        return Err(Failure::from_diagnostics(&imported));
    }
    // Tools left out (a bad or taken name) leave the rest serving.
    for w in &imported.0 {
        tracing::warn!("{w}");
    }
    let upstreams = Arc::new(upstreams);
    let shared = crate::state::UpstreamSnapshots::new(snapshots);
    let building = std::time::Instant::now();
    let cpu = crate::par::cpu_time();
    let catalog = crate::catalog::build(&source, &build_options(&catalog_args))
        .map_err(|d| Failure::from_diagnostics(&d))?;
    tracing::debug!(
        took_ms = building.elapsed().as_millis() as u64,
        cpu_ms = crate::par::cpu_ms_since(cpu),
        rss_kb = resident_kb(),
        "compiled the catalog"
    );
    // What `regent check` would refuse does not serve either (see
    // `check::on_load`); reloads then run only the tools that change.
    let ran = std::time::Instant::now();
    let cpu = crate::par::cpu_time();
    // The listing's digest (for reloads to compare with) is taken beside
    // the check: it reads only the compiled tools, and on its own it would
    // be one core's work between the check and serving.
    let (mut checked, listing) = crate::par::join(
        || crate::check::on_load::on_load(&source, &catalog, &Default::default()),
        || crate::protocol::wire::listing_digest(&catalog),
    );
    if args.skip_load_check {
        checked.allow_errors();
    }
    if !checked.errors.is_empty() {
        return Err(Failure::from_diagnostics(&Diagnostics(checked.errors)));
    }
    tracing::debug!(
        tools = checked.ran,
        took_ms = ran.elapsed().as_millis() as u64,
        cpu_ms = crate::par::cpu_ms_since(cpu),
        rss_kb = resident_kb(),
        "checked the catalog as regent check does"
    );
    drop(source);
    // The build's and the check's temporaries are freed by now: their pages
    // go back to the system before serving, and serving purges at the
    // allocator's own pace again (`heap`).
    let collecting = std::time::Instant::now();
    drop(loading);
    tracing::debug!(
        took_us = collecting.elapsed().as_micros() as u64,
        rss_kb = resident_kb(),
        "returned the memory the load freed"
    );
    for w in catalog.warnings.iter().chain(&checked.warnings) {
        tracing::warn!("{w}");
    }
    // What `run:` needs from this machine and is missing here (a program, an
    // HTTP base's variable): the build never looks; the serving machine is
    // the one whose calls will fail, so say so at start-up as check would.
    for tool in catalog.tools() {
        for w in crate::check::environment(tool) {
            tracing::warn!("{w}");
        }
    }
    tracing::info!(
        revision = %catalog.revision,
        tools = catalog.tools().len(),
        "catalog loaded"
    );
    let state = Arc::new(CatalogState::new(catalog));
    if let Some((ready, _)) = &bundle {
        state.record_bundle(&state.current().revision, ready.info.clone());
    }
    let metrics = Arc::new(Metrics::new());
    let shipper = match &args.decision_log_url {
        None => None,
        Some(url) => {
            let mut settings = ship::Settings::new(url.clone(), args.decision_log_buffer);
            settings.buffer_bytes = args.decision_log_buffer_bytes;
            settings.upload_bytes = args.decision_log_upload_bytes;
            if settings.buffer_bytes < settings.upload_bytes.max(args.decision_log_line_bytes) {
                return Err(cannot_run(format!(
                    "--decision-log-buffer-bytes ({}) must hold at least one upload (--decision-log-upload-bytes, {}) and one line (--decision-log-line-bytes, {})",
                    settings.buffer_bytes, settings.upload_bytes, args.decision_log_line_bytes
                )));
            }
            tracing::info!(
                url = %url,
                buffer = settings.buffer,
                buffer_bytes = settings.buffer_bytes,
                upload_bytes = settings.upload_bytes,
                "shipping decisions"
            );
            Some(Arc::new(
                ship::Shipper::start(settings, metrics.clone()).map_err(cannot_run)?,
            ))
        }
    };
    let options = decisions::Options {
        log_arguments: args.log_arguments,
        labels: args.decision_log_label.clone(),
        mask: args.decision_log_mask.clone(),
        line_limit: Some(args.decision_log_line_bytes),
        shipper,
        sync: args.decision_log_sync,
        bundles: bundle.as_ref().map(|_| state.bundles()),
    };
    let decisions = Arc::new(match &args.decision_log {
        None => DecisionLog::to_stderr(options),
        Some(path) => DecisionLog::file(path, options).map_err(|e| {
            cannot_run(format!(
                "cannot open the decision log {}: {}",
                path.display(),
                crate::source::files::lower_io(&e)
            ))
        })?,
    });
    let states = match &args.request_state_key_file {
        Some(path) => RequestStates::from_file(path),
        None => RequestStates::generated(),
    }
    .map_err(|e| cannot_run(e.to_string()))?
    .with_ttl(std::time::Duration::from_secs(
        args.request_state_ttl.max(1),
    ));
    let states = match &args.request_state_store {
        None => states,
        Some(url) => states.with_spent(state_store(args, url, &runtime, &metrics)?),
    };
    // The upstreams each catalog read declares, from the reload thread to
    // the supervisors (which start, restart and stop upstreams to match).
    let (declared, redeclared) = tokio::sync::mpsc::unbounded_channel();
    let reloads = reload::start(
        state.clone(),
        reload::Settings {
            paths: catalog_args.paths.clone(),
            options: build_options(&catalog_args),
            // A bundle's files change only through the poller; the tool
            // paths given beside it are watched.
            watch: !args.no_watch && !args.catalog.paths.is_empty(),
            bundle: bundle.is_some(),
            status_file: args.status_file.clone(),
            debounce: reload::DEBOUNCE,
            settle: reload::SETTLE,
            upstreams: shared.clone(),
            listing: crate::protocol::wire::listing_digest,
            declared: Some(declared),
            checked: checked.checked,
            listing_now: Some(listing),
            skip_load_check: args.skip_load_check,
        },
    )
    .map_err(cannot_run)?;
    tracing::debug!(
        took_ms = reading.elapsed().as_millis() as u64,
        cpu_ms = crate::par::cpu_ms_since(load_cpu),
        "ready to serve"
    );
    // From now on each upstream is restarted when it exits and re-listed
    // when it says its tools changed; a change reloads the catalog. One
    // whose declaration changes is restarted as now declared.
    {
        let _in_runtime = runtime.enter();
        upstreams.supervise(
            &upstream::supervise::Hooks {
                state: state.clone(),
                snapshots: shared,
                reload: Arc::new(reloads.requester()),
            },
            Some(redeclared),
        );
    }
    if let Some((ready, settings)) = bundle {
        reload::bundle::Poller {
            settings,
            state: state.clone(),
            metrics: metrics.clone(),
            reload: reloads.requester(),
        }
        .start(ready)
        .map_err(cannot_run)?;
    }
    if !args.no_watch && !args.catalog.paths.is_empty() {
        tracing::info!("watching the catalog for changes");
    }

    let calls = Arc::new(CallLimit::new(args.max_concurrent_calls, metrics.clone()));

    let requester = reloads.requester();
    let forward_hangups = async move {
        while hangup.recv().await.is_some() {
            tracing::info!("SIGHUP received");
            requester.request();
        }
    };
    if let Some(mut opts) = http {
        // Only a server that refuses calls for scope reads answers for it.
        opts.enforce_scopes = args.enforce_scopes;
        let regent = Regent::new(state.clone())
            .with_decision_log(decisions.clone())
            .with_request_states(states)
            .with_call_limit(calls)
            .with_scope_enforcement(args.enforce_scopes)
            .with_upstreams(upstreams.clone())
            .with_metrics(metrics.clone());
        let outcome = runtime.block_on(async move {
            tokio::spawn(forward_hangups);
            super::serve_http::serve(opts, regent, state, metrics).await
        });
        reloads.stop();
        // Requests still running after the grace period are abandoned here.
        runtime.shutdown_timeout(std::time::Duration::from_secs(1));
        // Every decision made is written before the process exits.
        decisions.close();
        return outcome;
    }
    let log = decisions.clone();
    let outcome = runtime.block_on(async move {
        tokio::spawn(forward_hangups);
        // Non-blocking pipes on fds 0 and 1 when both are pipes; tokio's
        // blocking stdio otherwise (a terminal, a file).
        let (read, write) = rmcp::transport::stdio_pipes();
        // SIGTERM and SIGINT end the session as the end of input does, so
        // the decision log is written out before the process exits.
        let stop = super::serve_http::shutdown_signal()
            .map_err(|e| cannot_run(format!("cannot handle SIGTERM and SIGINT: {e}")))?;
        // A configured caller the catalog's caller schema refuses gets no
        // decision; say so once, now. (A reload may change the schema: the
        // check is made per request.)
        if let Some(c) = &caller
            && let Some(why) = state.current().caller_problem(Some(c))
        {
            tracing::warn!("the configured caller gets no decision from this catalog: {why}");
        }
        let mut regent = Regent::new(state);
        if let Some(caller) = caller {
            tracing::info!(subject = %caller.subject, issuer = %caller.issuer, "serving as the configured caller");
            regent = regent.with_caller(caller);
        }
        let (regent, direct) = regent
            .with_decision_log(log)
            .with_request_states(states)
            .with_call_limit(calls)
            .with_scope_enforcement(args.enforce_scopes)
            .with_upstreams(upstreams.clone())
            .with_text_answers()
            .with_direct();
        let service = regent
            .serve(LineTransport::new(read, write).with_direct(direct))
            .await
            .map_err(|e| cannot_run(format!("mcp session failed to start: {e}")))?;
        let token = service.cancellation_token();
        tokio::spawn(async move {
            stop.await;
            token.cancel();
        });
        service
            .waiting()
            .await
            .map_err(|e| cannot_run(format!("mcp session failed: {e}")))?;
        Ok(exit::OK)
    });
    reloads.stop();
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    decisions.close();
    outcome
}

/// Supervisors ask the reload thread through `upstream`'s own trait: the
/// two meet here, so `upstream` never knows `reload`.
impl upstream::supervise::Reload for reload::Requester {
    fn upstream_changed(&self, why: String) {
        reload::Requester::upstream_changed(self, why);
    }

    fn status_changed(&self) {
        reload::Requester::status_changed(self);
    }
}

fn cannot_run(message: String) -> Failure {
    Failure::new(exit::CANNOT_RUN, format!("error: {message}"))
}

/// A status file inside a watched directory would be read as a catalog file
/// (`*.json` is data) and would trigger a reload each time it is written.
fn check_status_file(args: &ServeArgs) -> Result<(), Failure> {
    let Some(status) = &args.status_file else {
        return Ok(());
    };
    let status_abs = reload::watch::absolute(status);
    let is_catalog_file = crate::source::FileKind::of(status).is_some();
    for p in &args.catalog.paths {
        let p_abs = reload::watch::absolute(p);
        if status_abs == p_abs
            || (is_catalog_file && p_abs.is_dir() && status_abs.starts_with(&p_abs))
        {
            return Err(Failure::new(
                exit::CANNOT_RUN,
                format!(
                    "error: the status file {} is inside the catalog path {}, where it would be read as a catalog file\n  = help: put the status file outside the catalog, for example in /run or /tmp",
                    status.display(),
                    p.display()
                ),
            ));
        }
    }
    Ok(())
}

/// The shared store of spent requestStates (`--request-state-store`). Redis
/// down at start is a warning, not a refusal: a replica must not die with
/// Redis; each retry then fails closed until Redis answers.
fn state_store(
    args: &ServeArgs,
    url: &str,
    runtime: &tokio::runtime::Runtime,
    metrics: &Arc<Metrics>,
) -> Result<crate::protocol::spent::Spent, Failure> {
    use crate::protocol::spent::{RedisSpent, Spent, redact};
    if args.request_state_key_file.is_none() {
        return Err(cannot_run(format!(
            "--request-state-store {} needs --request-state-key-file: the replicas sharing the store must share the key that seals the states; write one with `head -c 32 /dev/urandom > state.key` and give it to every replica",
            redact(url)
        )));
    }
    let password = match &args.request_state_store_password_file {
        Some(path) => {
            let mut text = std::fs::read_to_string(path).map_err(|e| {
                cannot_run(format!(
                    "cannot read the request-state store password file {}: {}",
                    path.display(),
                    crate::source::files::lower_io(&e)
                ))
            })?;
            if text.ends_with('\n') {
                text.pop();
            }
            Some(text)
        }
        None => std::env::var("REGENT_REQUEST_STATE_STORE_PASSWORD").ok(),
    };
    let ca = match &args.request_state_store_ca {
        Some(path) => Some(std::fs::read(path).map_err(|e| {
            cannot_run(format!(
                "cannot read the request-state store CA file {}: {}",
                path.display(),
                crate::source::files::lower_io(&e)
            ))
        })?),
        None => None,
    };
    let store = RedisSpent::with_ca(url, password, ca, metrics.clone()).map_err(cannot_run)?;
    match runtime.block_on(store.ping()) {
        Ok(()) => tracing::info!(
            store = store.shown(),
            "spent requestStates are kept in the shared store"
        ),
        Err(why) => tracing::warn!(
            store = store.shown(),
            why,
            "the request-state store cannot be reached at start; starting anyway, and refusing every 2026-07-28 retry until it answers"
        ),
    }
    Ok(Spent::Redis(Box::new(store)))
}

/// `--bundle-url`: checks the flags, then gets the bundle to start with
/// (the persisted copy, else a download; see `reload::bundle`).
fn bundle_start(
    args: &ServeArgs,
    url: &str,
) -> Result<(reload::bundle::Ready, reload::bundle::Settings), Failure> {
    let parsed = reqwest::Url::parse(url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
        .ok_or_else(|| {
            cannot_run(format!(
                "--bundle-url {url} is not an http or https URL\n  = help: give the URL the bundle is served at, e.g. https://bundles.example.com/regent.tar.gz"
            ))
        })?;
    let keys = match &args.bundle_public_key {
        Some(p) => Some(Arc::new(
            crate::bundle::PublicKeys::read(p).map_err(cannot_run)?,
        )),
        None => None,
    };
    let Some(dir) = args.bundle_dir.clone() else {
        return Err(cannot_run(
            "--bundle-url needs --bundle-dir, where the last good bundle is kept for restarts"
                .into(),
        ));
    };
    let ca = match &args.bundle_ca {
        Some(p) if parsed.scheme() != "https" => {
            return Err(cannot_run(format!(
                "--bundle-ca {} is for an https bundle server, but --bundle-url {url} is not https\n  = help: serve the bundle over https, or drop --bundle-ca",
                p.display()
            )));
        }
        Some(p) => Some(reload::bundle::read_ca(p).map_err(cannot_run)?),
        None => None,
    };
    let settings = reload::bundle::Settings {
        url: parsed,
        keys,
        ca,
        poll: std::time::Duration::from_secs(args.bundle_poll),
        dir,
        limits: crate::bundle::Limits::default(),
        tools_elsewhere: !args.catalog.paths.is_empty(),
    };
    let ready = reload::bundle::start_up(&settings).map_err(cannot_run)?;
    tracing::info!(
        bundle = %ready.info.name,
        revision = %ready.info.revision,
        key_id = ready.info.key_id.as_deref().unwrap_or(""),
        verified = ready.info.verified,
        "bundle loaded"
    );
    Ok((ready, settings))
}

/// The process's resident memory in KiB (Linux's `VmRSS`), for the debug
/// lines that say where start-up's memory goes; `None` elsewhere.
fn resident_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
