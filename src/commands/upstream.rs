//! `regent upstream snapshot`: start every upstream MCP server a catalog
//! declares, list its tools, and print them as a
//! [`Pinned`](crate::source::upstream::Pinned) JSON document, so that what an
//! upstream offers can be pinned in a file and reviewed.

use super::{Failure, exit, print_stdout};
use crate::cli::{CatalogArgs, UpstreamArgs, UpstreamCommand};
use crate::diag::{Diagnostic, Diagnostics, Location};
use crate::source::upstream::Pinned;
use crate::upstream::{START_TIMEOUT, Upstreams};

pub fn run(args: &UpstreamArgs) -> Result<i32, Failure> {
    match &args.command {
        UpstreamCommand::Snapshot(s) => {
            let catalog = CatalogArgs {
                paths: s.paths.clone(),
                policy_timeout_ms: crate::policy::DEFAULT_POLICY_TIMEOUT_MS,
                policy_memory_mb: crate::policy::budget::DEFAULT_POLICY_MEMORY_MB,
            };
            let source = super::load_source(&catalog).map_err(|d| Failure::from_diagnostics(&d))?;
            if source.upstreams().next().is_none() {
                let at = s.paths.first().cloned().unwrap_or_default();
                let d = Diagnostic::error(
                    "no-upstreams",
                    Location::file(at),
                    "the catalog declares no upstreams",
                )
                .with_help(
                    "declare MCP servers under `upstreams:` in a tool file (see docs/upstreams.md)",
                );
                return Err(Failure::from_diagnostics(&Diagnostics(vec![d])));
            }
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| {
                    Failure::new(
                        exit::CANNOT_RUN,
                        format!("error: cannot start the runtime: {e}"),
                    )
                })?;
            let upstreams = runtime
                .block_on(Upstreams::start(&source, START_TIMEOUT))
                .map_err(|d| Failure::from_diagnostics(&d))?;
            let pinned = Pinned {
                upstreams: upstreams.snapshots(),
            };
            let text = serde_json::to_string_pretty(&pinned).unwrap_or_default() + "\n";
            drop(upstreams);
            runtime.shutdown_timeout(std::time::Duration::from_secs(1));
            match &s.output {
                None => print_stdout(&text)?,
                Some(path) => std::fs::write(path, text).map_err(|e| {
                    Failure::new(
                        exit::CANNOT_RUN,
                        format!(
                            "error: cannot write {}: {}\n  = help: choose a writable path; a pin beside the tool file is named NAME.snapshot.json",
                            path.display(),
                            crate::source::files::lower_io(&e)
                        ),
                    )
                })?,
            }
            Ok(exit::OK)
        }
    }
}
