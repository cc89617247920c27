//! Reload-specific helpers: a served catalog in its own working directory,
//! with regent's debug logs on stderr, and the bound for what a reload
//! test waits for. The client is the kit's ([`common::Server`]).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::{self, Era, Server};

/// The bound for anything a reload test waits for. Generous: tests run in
/// parallel on a small machine, and nothing here is a speed assertion.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// `regent serve ARGS...` in `cwd`, logging regent's debug lines.
fn serve(cwd: &Path, args: &[&str]) -> Command {
    let mut cmd = common::regent();
    cmd.arg("serve")
        .args(args)
        .current_dir(cwd)
        .env("RUST_LOG", "regent=debug,rmcp=error")
        .env_remove("RUST_BACKTRACE");
    cmd
}

/// Starts a server in `cwd` and opens a 2025-11-25 session (`initialize`).
pub fn legacy(cwd: &Path, args: &[&str]) -> Server {
    Server::spawn(Era::Legacy, serve(cwd, args))
}

/// Starts a server in `cwd` and opens a 2026-07-28 session (`server/discover`).
pub fn modern(cwd: &Path, args: &[&str]) -> Server {
    let mut s = Server::spawn(Era::Modern, serve(cwd, args));
    let r = s.request("server/discover", json!({}));
    assert!(
        r.get("result").is_some(),
        "discover failed: {r}\nstderr:\n{}",
        s.stderr()
    );
    s
}

/// Polls `f` until it returns `Some`, for at most [`PATIENCE`].
pub fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() > deadline {
            panic!("{what}: not within {PATIENCE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
