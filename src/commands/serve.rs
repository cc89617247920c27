//! `regent serve`: load the catalog, then answer MCP on stdio until the
//! client closes its end (or over HTTP with `--http`: see `serve_http`).

use std::sync::Arc;

use rmcp::ServiceExt;

use super::{Failure, exit, load_catalog};
use crate::cli::ServeArgs;
use crate::decisions::DecisionLog;
use crate::protocol::Regent;
use crate::protocol::confirm::RequestStates;
use crate::protocol::transport::LineTransport;
use crate::state::CatalogState;

pub fn run(args: &ServeArgs) -> Result<i32, Failure> {
    let catalog = load_catalog(&args.catalog).map_err(|d| Failure::from_diagnostics(&d))?;
    for w in &catalog.warnings {
        tracing::warn!("{w}");
    }
    tracing::info!(
        revision = catalog.short_revision(),
        tools = catalog.tools().len(),
        "catalog loaded"
    );
    let state = Arc::new(CatalogState::new(catalog));
    let decisions = match &args.decision_log {
        None => DecisionLog::stderr(args.log_arguments),
        Some(path) => DecisionLog::file(path, args.log_arguments).map_err(|e| {
            Failure::new(
                exit::CANNOT_RUN,
                format!(
                    "error: cannot open the decision log {}: {}",
                    path.display(),
                    crate::source::files::lower_io(&e)
                ),
            )
        })?,
    };

    let states = match &args.request_state_key_file {
        Some(path) => RequestStates::from_file(path),
        None => RequestStates::generated(),
    }
    .map_err(|e| Failure::new(exit::CANNOT_RUN, format!("error: {e}")))?
    .with_ttl(std::time::Duration::from_secs(
        args.request_state_ttl.max(1),
    ));
    if args.http.http.is_some() {
        let regent = Regent::new(state.clone())
            .with_decision_log(Arc::new(decisions))
            .with_request_states(states);
        return super::serve_http::run(&args.http, regent, state);
    }

    // Policy evaluation takes microseconds and stdio is one connection, so a
    // single-threaded runtime avoids cross-thread wake-ups on every message.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            Failure::new(
                exit::CANNOT_RUN,
                format!("error: cannot start the runtime: {e}"),
            )
        })?;
    runtime.block_on(async move {
        // Non-blocking pipes on fds 0 and 1 when both are pipes; tokio's
        // blocking stdio otherwise (a terminal, a file).
        let (read, write) = rmcp::transport::stdio_pipes();
        let service = Regent::new(state)
            .with_decision_log(Arc::new(decisions))
            .with_request_states(states)
            .serve(LineTransport::new(read, write))
            .await
            .map_err(|e| {
                Failure::new(
                    exit::CANNOT_RUN,
                    format!("error: mcp session failed to start: {e}"),
                )
            })?;
        service.waiting().await.map_err(|e| {
            Failure::new(exit::CANNOT_RUN, format!("error: mcp session failed: {e}"))
        })?;
        Ok(exit::OK)
    })
}
