//! The TypeScript peer: the SEP's reference server on the official SDK, in
//! `benches/peer`. Installed from npm (`npm ci`, from the committed lock
//! file) and compiled with `tsc` the first time the benchmark needs it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::stdio::Spawn;

pub fn dir() -> PathBuf {
    regent_testkit::repo_path("benches/peer")
}

/// Installs and builds the peer when needed. `Err` says why it cannot run.
pub fn prepare() -> Result<Spawn, String> {
    let dir = dir();
    let node = Command::new("node")
        .arg("--version")
        .output()
        .map_err(|e| format!("node is not installed ({e})"))?;
    if !node.status.success() {
        return Err("`node --version` failed".into());
    }
    if !dir
        .join("node_modules/@modelcontextprotocol/sdk/package.json")
        .exists()
        || !dir.join("node_modules/typescript").exists()
        || !dir.join("node_modules/@types/node").exists()
    {
        eprintln!(
            "load: installing the TypeScript peer (npm ci in {})",
            dir.display()
        );
        run(
            &dir,
            "npm",
            &["ci", "--no-audit", "--no-fund", "--loglevel=error"],
        )?;
    }
    let built = dir.join("dist/server.js");
    let newest_source = ["manage_files.ts", "server.ts", "http.ts"]
        .iter()
        .filter_map(|f| modified(&dir.join("src").join(f)))
        .max();
    let oldest_built = ["manage_files.js", "server.js", "http.js"]
        .iter()
        .map(|f| modified(&dir.join("dist").join(f)))
        .collect::<Option<Vec<_>>>()
        .and_then(|v| v.into_iter().min());
    let stale = match (oldest_built, newest_source) {
        (Some(b), Some(s)) => b < s,
        _ => true,
    };
    if stale {
        eprintln!("load: compiling the TypeScript peer (tsc)");
        run(&dir, "npx", &["--no-install", "tsc", "-p", "."])?;
    }
    Ok(Spawn {
        program: "node".into(),
        args: vec![built.to_string_lossy().into_owned()],
        dir: Some(dir),
        regent: false,
    })
}

/// How to start the peer over HTTP on `port` (it prints `listening`).
pub fn http_spawn(port: u16) -> Spawn {
    Spawn {
        program: "node".into(),
        args: vec![
            dir().join("dist/http.js").to_string_lossy().into_owned(),
            port.to_string(),
        ],
        dir: Some(dir()),
        regent: false,
    }
}

/// The SDK version actually installed, for the report.
pub fn sdk_version() -> String {
    std::fs::read_to_string(dir().join("node_modules/@modelcontextprotocol/sdk/package.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["version"].as_str().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

fn modified(p: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

fn run(dir: &Path, program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
