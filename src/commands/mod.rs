//! One module per subcommand. Each returns an exit code or an error that
//! `main` prints; none of them calls `process::exit` itself.

pub mod bundle;
pub mod check;
pub mod resolve;
pub mod review;
pub mod serve;
pub mod serve_http;
pub mod test;
pub mod upstream;

use std::time::Duration;

use crate::catalog::{self, BuildOptions, Catalog};
use crate::cli::CatalogArgs;
use crate::diag::{Diagnostics, Outcome};
use crate::policy::budget;
use crate::source::{Source, files};

/// Exit codes shared by every command.
pub mod exit {
    use crate::diag::Outcome;
    /// Success.
    pub const OK: i32 = Outcome::Clean.exit_code();
    /// The catalog or the tests had errors.
    pub const FOUND_ERRORS: i32 = Outcome::FoundErrors.exit_code();
    /// The command could not run: bad usage, unreadable path.
    pub const CANNOT_RUN: i32 = Outcome::CannotRun.exit_code();
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
        let mut message = String::new();
        for d in diags.errors() {
            message.push_str(&d.render());
        }
        let n = diags.errors().count();
        message.push_str(&format!(
            "error: the catalog has {n} error{}",
            if n == 1 { "" } else { "s" }
        ));
        Failure::new(Outcome::of(diags.errors(), true).exit_code(), message)
    }
}

/// Writes a command's output to stdout. A reader that went away (`regent
/// check | head -1`) ends the command quietly with exit code 1, as ripgrep
/// does; `print!` would panic (exit 101) on the broken pipe instead.
pub fn print_stdout(text: &str) -> Result<(), Failure> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            Err(Failure::new(exit::FOUND_ERRORS, String::new()))
        }
        Err(e) => Err(Failure::new(
            exit::CANNOT_RUN,
            format!(
                "error: cannot write to stdout: {}",
                crate::source::files::lower_io(&e)
            ),
        )),
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

/// Loads and compiles the catalog under `args.paths`, with the tools of
/// upstreams that name a pinned `snapshot:` imported from it (nothing is
/// started; `serve` starts upstreams itself).
pub fn load_catalog(args: &CatalogArgs) -> Result<Catalog, Diagnostics> {
    let mut source = load_source(args)?;
    let imported = source.import_pinned();
    if imported.has_errors() {
        return Err(imported);
    }
    catalog::build(&source, &build_options(args))
}

/// Reads and parses the catalog files under `args.paths`, refusing paths
/// that hold no tool file.
pub fn load_source(args: &CatalogArgs) -> Result<Source, Diagnostics> {
    let found = files::discover(&args.paths).map_err(|d| Diagnostics(vec![d]))?;
    if let Some(d) = files::no_tool_files(&args.paths, &found) {
        return Err(Diagnostics(vec![d]));
    }
    Source::load(&args.paths)
}
