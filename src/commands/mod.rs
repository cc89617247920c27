//! One module per subcommand. Each returns an exit code or an error that
//! `main` prints; none of them calls `process::exit` itself.

pub mod check;
pub mod resolve;
pub mod serve;
pub mod serve_http;
pub mod test;

use std::time::Duration;

use crate::catalog::{self, BuildOptions, Catalog, budget};
use crate::cli::CatalogArgs;
use crate::diag::Diagnostics;
use crate::source::Source;

/// Exit codes shared by every command.
pub mod exit {
    /// Success.
    pub const OK: i32 = 0;
    /// The catalog or the tests had errors.
    pub const FOUND_ERRORS: i32 = 1;
    /// The command could not run: bad usage, unreadable path.
    pub const CANNOT_RUN: i32 = 2;
}

/// A command failed; `code` is the process exit code.
#[derive(Debug)]
pub struct Failure {
    pub code: i32,
    pub message: String,
}

impl Failure {
    pub fn new(code: i32, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// A catalog that failed to load: exit 2 when a path could not be read at
    /// all, 1 for problems inside the files.
    pub fn from_diagnostics(diags: &Diagnostics) -> Failure {
        let cannot_run = diags
            .errors()
            .any(|d| matches!(d.code, "unreadable-path" | "unknown-file-kind"));
        let mut message = String::new();
        for d in diags.errors() {
            message.push_str(&d.render());
        }
        let n = diags.errors().count();
        message.push_str(&format!(
            "error: the catalog has {n} error{}",
            if n == 1 { "" } else { "s" }
        ));
        Failure::new(
            if cannot_run {
                exit::CANNOT_RUN
            } else {
                exit::FOUND_ERRORS
            },
            message,
        )
    }
}

pub fn build_options(args: &CatalogArgs) -> BuildOptions {
    BuildOptions {
        policy_limits: budget::Limits {
            time: Duration::from_millis(args.policy_timeout_ms.max(1)),
            memory: args.policy_memory_mb.max(1).saturating_mul(1024 * 1024),
        },
        ..BuildOptions::default()
    }
}

/// Loads and compiles the catalog under `args.paths`.
pub fn load_catalog(args: &CatalogArgs) -> Result<Catalog, Diagnostics> {
    let source = Source::load(&args.paths)?;
    catalog::build(&source, &build_options(args))
}
