//! `cargo run --release -p regent-load -- [options]`: builds the release
//! `regent` (unless `--bin` names a binary) and runs the load generator.

use std::path::PathBuf;
use std::process::Command;

use clap::Parser;
use regent_load::Args;

fn main() {
    let args = Args::parse();
    if args.serve_floor {
        if let Err(e) = regent_load::serve_floor() {
            fail(&e);
        }
        return;
    }
    let bin = if args.bin.is_some() {
        PathBuf::new() // replaced by --bin
    } else {
        build_regent()
    };
    regent_load::run(args.opts(bin));
}

/// `cargo build --release -p regent` at the workspace root, then the binary
/// in the target directory this one was built in (so `CARGO_TARGET_DIR` is
/// followed): the same release build `cargo bench --bench load` measures.
fn build_regent() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--release", "-p", "regent", "--bin", "regent"])
        .current_dir(regent_testkit::repo_root())
        .status()
        .unwrap_or_else(|e| fail(&format!("cannot run cargo: {e}")));
    if !status.success() {
        fail(&format!(
            "`cargo build --release -p regent` failed ({status})"
        ));
    }
    let exe = std::env::current_exe().unwrap_or_else(|e| fail(&format!("own path: {e}")));
    let target = exe
        .parent()
        .and_then(|profile| profile.parent())
        .unwrap_or_else(|| fail("cannot find the target directory"));
    target
        .join("release")
        .join(format!("regent{}", std::env::consts::EXE_SUFFIX))
}

fn fail(why: &str) -> ! {
    eprintln!("load: {why}");
    std::process::exit(2)
}
