//! The `regent` binary: parse arguments, run one command, map the outcome to
//! an exit code. Everything else lives in the library.

use clap::Parser;

use regent::cli::{Cli, Command};
use regent::commands::{self, exit};

/// mimalloc instead of the system allocator: a request allocates and frees
/// hundreds of small JSON values, and glibc's malloc/free were about a third
/// of the instructions of a `tools/resolve` (callgrind; see BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// regorus evaluates recursively: a deeply recursive policy function uses a
/// few KiB of stack per level and would overflow a default 8 MiB main stack,
/// aborting the process before the evaluation time limit can stop it. The
/// program therefore runs on a thread with a large stack; the memory is only
/// reserved, and committed as it is used.
pub const STACK_SIZE: usize = 512 * 1024 * 1024;

fn main() {
    let code = std::thread::Builder::new()
        .name("regent".into())
        .stack_size(STACK_SIZE)
        .spawn(real_main)
        .expect("start the main thread")
        .join()
        .unwrap_or(101);
    std::process::exit(code);
}

fn real_main() -> i32 {
    quiet_library_backtraces();
    init_logging();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::CANNOT_RUN
            } else {
                exit::OK
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let outcome = match &cli.command {
        Command::Serve(args) => commands::serve::run(args),
    };
    match outcome {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("{}", failure.message);
            failure.code
        }
    }
}

/// Logs go to stderr (stdout carries the protocol). `RUST_LOG` overrides the
/// default, which keeps rmcp's per-error warnings quiet.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("regent=info,rmcp=error"));
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(use_colour_on_stderr())
        .init();
}

/// Colour only for a person at a terminal, and never with `NO_COLOR` set.
fn use_colour_on_stderr() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// regorus reports errors through `anyhow`, which captures a backtrace for
/// every error when `RUST_BACKTRACE` is set; that doubles the cost of a failing
/// policy evaluation. `RUST_LIB_BACKTRACE=0` turns off only those library
/// captures (panics still print backtraces), unless the user chose otherwise.
fn quiet_library_backtraces() {
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        // SAFETY: called first thing in main, before any thread exists.
        unsafe { std::env::set_var("RUST_LIB_BACKTRACE", "0") };
    }
}
