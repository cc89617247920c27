//! Command-line arguments. Parsing only: what each command does lives in
//! `commands`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "regent",
    version,
    about = "An MCP server whose tools are declared in YAML and decided, call by call, by Rego policies",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the catalog under PATH... as an MCP server on stdio
    Serve(ServeArgs),
}

/// Settings shared by every command that loads a catalog.
#[derive(Debug, Args, Clone)]
pub struct CatalogArgs {
    /// Tool files (*.yaml), policies (*.rego), data (*.json), or directories holding them
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,

    /// The longest one policy evaluation may run, in milliseconds
    #[arg(long, value_name = "MS", default_value_t = 100)]
    pub policy_timeout_ms: u64,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub catalog: CatalogArgs,

    /// Do not watch PATH... for changes (SIGHUP still reloads)
    #[arg(long)]
    pub no_watch: bool,

    /// Keep the reload status as JSON in FILE, rewritten atomically after every reload attempt
    #[arg(long, value_name = "FILE")]
    pub status_file: Option<PathBuf>,
}
