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

fn main() {
    quiet_library_backtraces();
    let main = std::thread::Builder::new()
        .name("regent".into())
        .stack_size(regent::par::STACK_SIZE)
        .spawn(real_main);
    let code = match main {
        Ok(main) => main.join().unwrap_or(101),
        // Policies are evaluated on this stack: running on a smaller one
        // could abort mid-evaluation, so regent refuses to start instead.
        Err(e) => {
            eprintln!(
                "error: cannot reserve the {} MiB stack regent evaluates policies on: {e}\n  \
                 = help: the process's address-space limit (`ulimit -v`, `prlimit --as`) is too low; \
                 allow regent at least {} MiB more than it uses",
                regent::par::STACK_SIZE >> 20,
                regent::par::STACK_SIZE >> 20,
            );
            exit::CANNOT_RUN
        }
    };
    std::process::exit(code);
}

fn real_main() -> i32 {
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
        Command::Check(args) => commands::check::run(args),
        Command::Test(args) => commands::test::run(args),
        Command::Resolve(args) => commands::resolve::run(args),
        Command::Upstream(args) => commands::upstream::run(args),
        Command::Bundle(args) => commands::bundle::run(args),
        Command::Review(args) => commands::review::run(args),
    };
    match outcome {
        Ok(code) => code,
        Err(failure) => {
            // An empty message is a quiet exit (stdout's reader went away).
            if !failure.message.is_empty() {
                eprintln!("{}", failure.message);
            }
            failure.code
        }
    }
}

/// regorus' parser builds `anyhow` errors while backtracking over valid
/// policies; with `RUST_BACKTRACE=1` in the environment each one captures a
/// stack trace, which made a 500-policy reload about 1.7 times slower
/// (benches/reload.rs). `RUST_LIB_BACKTRACE=0` turns that off for library
/// errors while panics still print their backtrace. An explicit
/// `RUST_LIB_BACKTRACE` is respected.
fn quiet_library_backtraces() {
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        // SAFETY: called first thing in main, before any thread exists, so
        // nothing can read the environment concurrently.
        unsafe { std::env::set_var("RUST_LIB_BACKTRACE", "0") };
    }
}

/// Logs go to stderr (stdout carries the protocol). `RUST_LOG` overrides the
/// default, which keeps rmcp's per-error warnings quiet, and silences its
/// HTTP client worker, whose failures a `url:` upstream's supervisor reports
/// itself (with the upstream's name and url).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new("regent=info,rmcp=error,rmcp::transport::worker=off")
    });
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(regent::diag::Style::for_stderr().colour)
        .init();
}
