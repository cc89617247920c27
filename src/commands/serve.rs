//! `regent serve`: load the catalog, then answer MCP on stdio until the
//! client closes its end (or over HTTP with `--http`: see `serve_http`).

use std::sync::Arc;

use rmcp::ServiceExt;

use super::{Failure, exit, load_catalog};
use crate::cli::ServeArgs;
use crate::protocol::Regent;
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
    if args.http.http.is_some() {
        return super::serve_http::run(&args.http, Regent::new(state.clone()), state);
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
