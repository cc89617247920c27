//! Finding catalog files on disk and sorting them by kind.
//!
//! `regent` takes files and directories; directories are read recursively.
//! The kind of a file comes from its name alone, so that what a directory
//! holds is predictable without opening anything. Hidden entries (a leading
//! `.`) are skipped, which also skips editor droppings such as `.#foo.yaml`
//! and the `..data` directories of Kubernetes ConfigMap mounts (whose files
//! are reached through the visible symlinks beside them).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::diag::{Diagnostic, Location};

/// What a file is for, decided from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FileKind {
    /// `*.yaml`, `*.yml`: tool declarations.
    Tools,
    /// `*.test.yaml`, `*_test.yaml` (and `.yml`): `regent test` cases.
    Cases,
    /// `*.rego`: policies.
    Policy,
    /// `*_test.rego`: Rego tests, loaded by `regent test` only.
    PolicyTest,
    /// `*.json`: data documents merged into Rego's `data`.
    Data,
}

impl FileKind {
    pub fn of(path: &Path) -> Option<FileKind> {
        let name = path.file_name()?.to_str()?;
        if is_editor_dropping(name) {
            return None;
        }
        let lower = name.to_ascii_lowercase();
        let kind = if lower.ends_with("_test.rego") {
            FileKind::PolicyTest
        } else if lower.ends_with(".rego") {
            FileKind::Policy
        } else if [".test.yaml", ".test.yml", "_test.yaml", "_test.yml"]
            .iter()
            .any(|s| lower.ends_with(s))
        {
            FileKind::Cases
        } else if lower.ends_with(".yaml") || lower.ends_with(".yml") {
            FileKind::Tools
        } else if lower.ends_with(SNAPSHOT_SUFFIX) {
            // An upstream's pinned snapshot, read through the `snapshot:`
            // that names it (`source::upstream`), never as Rego data.
            return None;
        } else if lower.ends_with(".json") {
            FileKind::Data
        } else {
            return None;
        };
        Some(kind)
    }
}

/// The ending of an upstream's pinned snapshot file (`notes.snapshot.json`):
/// such a file beside the tool files is not read as Rego data.
pub const SNAPSHOT_SUFFIX: &str = ".snapshot.json";

/// Names that editors write beside the file being edited (vim's swap files
/// and its `4913` probe, backup files, Emacs lock files).
pub fn is_editor_dropping(name: &str) -> bool {
    name.starts_with('.')
        || name.ends_with('~')
        || name.ends_with(".swp")
        || name.ends_with(".swx")
        || name.ends_with(".tmp")
        || name == "4913"
}

/// One file read from disk.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub path: PathBuf,
    pub kind: FileKind,
    pub text: String,
}

/// Finds every catalog file under `paths`, sorted by path so that loading is
/// deterministic. A path given explicitly must exist and, if it is a file,
/// must have a known kind.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<(PathBuf, FileKind)>, Diagnostic> {
    let mut found = Vec::new();
    let mut seen_dirs = HashSet::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|e| {
            Diagnostic::error(
                "unreadable-path",
                Location::file(path),
                format!("cannot read {}: {}", path.display(), lower_io(&e)),
            )
            .with_help("pass an existing file or directory")
        })?;
        if meta.is_dir() {
            walk(path, &mut found, &mut seen_dirs)?;
        } else {
            let kind = FileKind::of(path).ok_or_else(|| {
                Diagnostic::error(
                    "unknown-file-kind",
                    Location::file(path),
                    format!("{} is not a catalog file", path.display()),
                )
                .with_help(
                    "regent reads *.yaml and *.yml (tools), *.rego (policies) and *.json (data); an upstream's *.snapshot.json is read through the `snapshot:` that names it",
                )
            })?;
            found.push((path.clone(), kind));
        }
    }
    found.sort();
    found.dedup();
    Ok(found)
}

/// `Some` when `found` (what [`discover`] returned for `paths`) holds no tool
/// file: a catalog without tools is almost always a wrong path, and a CI job
/// pointed at one must not pass. `check`, `test` and `serve` refuse it.
pub fn no_tool_files(paths: &[PathBuf], found: &[(PathBuf, FileKind)]) -> Option<Diagnostic> {
    if found.iter().any(|(_, k)| *k == FileKind::Tools) {
        return None;
    }
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let at = paths.first().cloned().unwrap_or_else(|| PathBuf::from("."));
    Some(
        Diagnostic::error(
            "no-tool-files",
            Location::file(at),
            format!("no tool files under {}", shown.join(", ")),
        )
        .with_help(
            "tools are declared in *.yaml or *.yml files (*.test.yaml files are test cases); pass the directory that holds them",
        ),
    )
}

fn walk(
    dir: &Path,
    found: &mut Vec<(PathBuf, FileKind)>,
    seen: &mut HashSet<PathBuf>,
) -> Result<(), Diagnostic> {
    // Following symlinked directories is wanted (ConfigMaps, shared policy
    // folders), so guard against cycles by canonical path.
    let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if !seen.insert(canonical) {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|e| {
        Diagnostic::error(
            "unreadable-path",
            Location::file(dir),
            format!("cannot list {}: {}", dir.display(), lower_io(&e)),
        )
    })?;
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        // The entry's own type comes with the listing on most file
        // systems: only a symlink (or a type the listing does not give)
        // costs a `stat` to follow it, not each of a large catalog's files.
        // A dangling symlink (a ConfigMap mid-swap, a deleted target) is
        // skipped, not an error: the next reload sees the settled state.
        let is_dir = match entry.file_type() {
            Ok(t) if !t.is_symlink() => t.is_dir(),
            _ => match std::fs::metadata(&path) {
                Ok(meta) => meta.is_dir(),
                Err(_) => continue,
            },
        };
        if is_dir {
            walk(&path, found, seen)?;
        } else if let Some(kind) = FileKind::of(&path) {
            found.push((path, kind));
        }
    }
    Ok(())
}

/// Reads one discovered file as UTF-8 text.
pub fn read(path: &Path, kind: FileKind) -> Result<SourceFile, Diagnostic> {
    let bytes = std::fs::read(path).map_err(|e| {
        Diagnostic::error(
            "unreadable-path",
            Location::file(path),
            format!("cannot read {}: {}", path.display(), lower_io(&e)),
        )
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let (line, column) = line_col(&String::from_utf8_lossy(e.as_bytes()), offset);
        Diagnostic::error(
            "not-utf8",
            Location::new(path, line, column),
            "file is not valid utf-8",
        )
        .with_help("save the file as UTF-8")
    })?;
    Ok(SourceFile {
        path: path.to_path_buf(),
        kind,
        text,
    })
}

/// The 1-based line and column of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

// Moved to `diag` (below `run_plan`, `exec` and `http`, which word I/O
// errors too); kept here for the callers not yet moved.
pub use crate::diag::lower_io;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_snapshot_is_not_data() {
        assert_eq!(FileKind::of(Path::new("a/notes.snapshot.json")), None);
        assert_eq!(FileKind::of(Path::new("a/NOTES.Snapshot.JSON")), None);
        assert_eq!(
            FileKind::of(Path::new("a/snapshot.json")),
            Some(FileKind::Data)
        );
    }
}
