//! Where regent's catalog files sit in a bundle, so that OPA and regent read
//! the same bundle alike.
//!
//! OPA reads, by name: `*.rego` as policies; `data.json` (and `data.yaml`,
//! `data.yml`) as the data at its directory's path (`a/b/data.json` is
//! `data.a.b`); `.manifest`; `.signatures.json`. It ignores every other
//! file, but a signed bundle must list them all. regent reads `*.rego` the
//! same, but every `*.json` as a document merged at the root of `data`, and
//! `*.yaml` as tools. So a regent bundle holds:
//!
//! - tool files, test cases and `*.rego` at their catalog paths; a tool or
//!   case file named `data.yaml` or `data.yml` is refused (OPA would read it
//!   as data);
//! - all of the catalog's data merged into one `data.json` at the root (what
//!   `opa build` writes too); a `data.json` deeper down, as OPA may have
//!   it, is read at its directory's path, as OPA reads it;
//! - pinned upstream snapshots (`*.snapshot.json`) at their paths (neither
//!   reader takes them for data);
//! - no other `*.json` (regent would read it as data, OPA would not), and
//!   nothing under a hidden directory or hidden name but `.manifest` and
//!   `.signatures.json` (OPA reads those files, regent's reader skips them).
//!
//! [`catalog_files`] checks a bundle's files against this and gives the
//! files regent's reader is to read; [`write_dir`] puts them under a
//! directory.

use std::path::Path;

use super::archive::Files;
use super::{BundleError, MANIFEST};
use crate::source::files::SNAPSHOT_SUFFIX;

/// Why a file cannot sit at `path` in a regent bundle, if it cannot.
pub fn refusal(path: &str) -> Option<String> {
    let base = path.rsplit('/').next().unwrap_or(path);
    let lower = base.to_ascii_lowercase();
    if path.split('/').any(|seg| seg.starts_with('.')) {
        return Some(
            "a hidden file or directory: OPA would read it, regent's catalog reader skips it"
                .to_string(),
        );
    }
    if base == "data.yaml" || base == "data.yml" {
        return Some(format!(
            "OPA reads `{base}` as data; regent reads data from `data.json` and tools from other YAML files: rename it"
        ));
    }
    if lower.ends_with(".json") && base != "data.json" && !lower.ends_with(SNAPSHOT_SUFFIX) {
        return Some(format!(
            "regent would read `{base}` as data and OPA would not; bundle data goes in `data.json`"
        ));
    }
    None
}

/// The files regent's catalog reader is to read from a bundle's `files`:
/// every file but the manifest, a `data.json` below the root wrapped in
/// the objects of its directory's path.
pub fn catalog_files(files: &Files) -> Result<Files, BundleError> {
    let mut out = Files::new();
    for (path, bytes) in files {
        if path == MANIFEST {
            continue;
        }
        if let Some(why) = refusal(path) {
            return Err(BundleError::at(path, why));
        }
        let Some(dir) = path.strip_suffix("/data.json") else {
            out.insert(path.clone(), bytes.clone());
            continue;
        };
        let mut value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
            BundleError::at(
                path,
                format!("invalid json at {}:{}: {e}", e.line(), e.column()),
            )
        })?;
        for seg in dir.rsplit('/') {
            let mut wrap = serde_json::Map::new();
            wrap.insert(seg.to_string(), value);
            value = serde_json::Value::Object(wrap);
        }
        let mut text = serde_json::to_vec_pretty(&value).unwrap_or_default();
        text.push(b'\n');
        out.insert(path.clone(), text);
    }
    Ok(out)
}

/// Writes `files` under `dir` (which must exist), creating directories.
/// Paths come from `archive::clean_path` (no `..`, no absolute path).
pub fn write_dir(files: &Files, dir: &Path) -> std::io::Result<()> {
    for (path, bytes) in files {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&target)
            .and_then(|mut f| std::io::Write::write_all(&mut f, bytes))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_opa_and_regent_would_read_differently_are_refused() {
        for (path, refused) in [
            ("tools/deploy.yaml", false),
            ("policies/deploy.rego", false),
            ("data.json", false),
            ("a/b/data.json", false),
            ("notes.snapshot.json", false),
            ("deploy.test.yaml", false),
            ("tools/data.yaml", true),
            ("data.yml", true),
            ("limits.json", true),
            ("Data.json", true),
            (".hidden/x.rego", true),
            ("a/.x.rego", true),
        ] {
            assert_eq!(refusal(path).is_some(), refused, "{path}");
        }
    }

    #[test]
    fn nested_data_is_placed_at_its_directory() {
        let mut files = Files::new();
        files.insert("a/b/data.json".into(), br#"{"k": 1}"#.to_vec());
        files.insert("data.json".into(), br#"{"top": true}"#.to_vec());
        files.insert(".manifest".into(), b"{}".to_vec());
        let out = catalog_files(&files).unwrap();
        assert!(!out.contains_key(".manifest"));
        let v: serde_json::Value = serde_json::from_slice(&out["a/b/data.json"]).unwrap();
        assert_eq!(v, serde_json::json!({"a": {"b": {"k": 1}}}));
        assert_eq!(out["data.json"], br#"{"top": true}"#.to_vec());
    }
}
