//! The `regent` binary: parse arguments, run one command, map the outcome to
//! an exit code. Everything else lives in the library.

use clap::Parser;

use regent::cli::{Cli, Command};
use regent::commands::{self, exit};

fn main() {
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
    };
    match outcome {
        Ok(code) => std::process::exit(code),
        Err(failure) => {
            eprintln!("{}", failure.message);
            std::process::exit(failure.code);
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
