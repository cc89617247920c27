//! Which paths to watch for a catalog, and which file-system events matter.
//!
//! Directories given on the command line are watched recursively. Every
//! given path is also watched through its parent directory (filtered to that
//! one name), so a file or directory that is replaced by a rename, or deleted
//! and re-created, keeps being seen: inotify watches inodes, and an editor's
//! atomic save puts a new inode at the old name. A given path or a catalog
//! file that is a symlink to somewhere outside the watched directories gets
//! its target's directory watched the same way.
//!
//! Events for editor droppings (`*.swp`, `*~`, `.#*`, `4913`, ...) and inside
//! hidden directories are ignored, except for names starting with `..`: a
//! Kubernetes ConfigMap mount swaps its `..data` symlink to a new `..<time>`
//! directory, and that rename is the only event an update makes at the top
//! of the mount. Which files a catalog holds is `source::files`' business;
//! this module only decides when to look again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecursiveMode};
use notify_debouncer_full::{DebounceEventHandler, Debouncer, RecommendedCache, new_debouncer};

use crate::source::files;

/// What to watch for one set of catalog paths, computed from the disk as it is now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatchPlan {
    /// Directories watched with everything below them (absolute paths).
    recursive: Vec<PathBuf>,
    /// Directories watched for some of their entries only: dir -> names.
    entries: BTreeMap<PathBuf, BTreeSet<OsString>>,
}

impl WatchPlan {
    /// The plan for `paths` (as given on the command line).
    pub fn new(paths: &[PathBuf]) -> WatchPlan {
        let given: Vec<PathBuf> = paths.iter().map(|p| absolute(p)).collect();
        let mut plan = WatchPlan::default();
        for p in &given {
            if std::fs::metadata(p).is_ok_and(|m| m.is_dir()) {
                plan.recursive.push(p.clone());
            }
        }
        for p in &given {
            plan.add_entry(p);
            if is_symlink(p)
                && let Ok(target) = std::fs::canonicalize(p)
            {
                plan.add_entry(&target);
            }
        }
        // Catalog files that are symlinks to outside the watched directories
        // (a shared policy linked into the catalog): watch their targets.
        // Files reached through symlinked directories are covered, because
        // the recursive watch follows directory symlinks.
        if let Ok(found) = files::discover(paths) {
            let roots: Vec<PathBuf> = plan
                .recursive
                .iter()
                .filter_map(|r| std::fs::canonicalize(r).ok())
                .collect();
            for (file, _) in found {
                if !is_symlink(&file) {
                    continue;
                }
                if let Ok(target) = std::fs::canonicalize(&file)
                    && !roots.iter().any(|r| target.starts_with(r))
                {
                    plan.add_entry(&target);
                }
            }
        }
        plan
    }

    /// Watch `path`'s parent for `path`'s name, unless a recursive watch covers it.
    fn add_entry(&mut self, path: &Path) {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return;
        };
        if self.covered(dir) {
            return;
        }
        self.entries
            .entry(dir.to_path_buf())
            .or_default()
            .insert(name.to_os_string());
    }

    fn covered(&self, dir: &Path) -> bool {
        self.recursive.iter().any(|r| dir.starts_with(r))
    }

    /// Every directory to watch, with how.
    pub fn watches(&self) -> Vec<(PathBuf, RecursiveMode)> {
        let mut out: Vec<(PathBuf, RecursiveMode)> = self
            .recursive
            .iter()
            .map(|p| (p.clone(), RecursiveMode::Recursive))
            .collect();
        out.extend(
            self.entries
                .keys()
                .map(|p| (p.clone(), RecursiveMode::NonRecursive)),
        );
        out
    }

    /// Whether a change at `path` may change the catalog.
    pub fn is_relevant(&self, path: &Path) -> bool {
        for root in &self.recursive {
            if let Ok(rel) = path.strip_prefix(root) {
                return relevant_below_root(rel);
            }
        }
        match (path.parent(), path.file_name()) {
            (Some(dir), Some(name)) => self.entries.get(dir).is_some_and(|names| {
                names.contains(name) || name.to_string_lossy().starts_with("..")
            }),
            _ => false,
        }
    }

    /// Whether an event may change the catalog: a write, create, remove or
    /// rename of a relevant path. Opening or reading a file (which the
    /// reload itself does) is not a change.
    pub fn is_relevant_event(&self, event: &Event) -> bool {
        let kind_counts = match event.kind {
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
            EventKind::Access(_) => false,
            _ => true,
        };
        if event.need_rescan() {
            return true;
        }
        kind_counts && event.paths.iter().any(|p| self.is_relevant(p))
    }
}

/// Below a watched directory: ignore editor droppings and anything inside a
/// hidden directory, but not the `..data` machinery of ConfigMap mounts.
fn relevant_below_root(rel: &Path) -> bool {
    let names: Vec<String> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_string_lossy().to_string()),
            _ => None,
        })
        .collect();
    let Some((last, dirs)) = names.split_last() else {
        return true; // the root itself
    };
    let hidden = |n: &str| n.starts_with('.') && !n.starts_with("..");
    if dirs.iter().any(|d| hidden(d)) {
        return false;
    }
    last.starts_with("..") || !files::is_editor_dropping(last)
}

fn is_symlink(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

/// `p` made absolute without resolving symlinks, so that event paths (which
/// notify reports under the watched path as given) compare with it.
pub fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The watcher: a debounced notify watcher whose set of watches follows the
/// plan. Directories that are replaced (a new inode at the same path) are
/// watched again.
pub struct Watcher {
    debouncer: Debouncer<notify::RecommendedWatcher, RecommendedCache>,
    /// Watched directory -> (mode, device and inode when watched).
    active: HashMap<PathBuf, (RecursiveMode, Option<(u64, u64)>)>,
}

impl Watcher {
    pub fn new(
        debounce: std::time::Duration,
        handler: impl DebounceEventHandler,
    ) -> notify::Result<Watcher> {
        Ok(Watcher {
            debouncer: new_debouncer(debounce, None, handler)?,
            active: HashMap::new(),
        })
    }

    /// Makes the active watches match `plan`. Returns the errors of watches
    /// that could not be added, as readable lines.
    pub fn apply(&mut self, plan: &WatchPlan) -> Vec<String> {
        let mut errors = Vec::new();
        let desired = plan.watches();
        let wanted: BTreeSet<&PathBuf> = desired.iter().map(|(p, _)| p).collect();
        let stale: Vec<PathBuf> = self
            .active
            .keys()
            .filter(|p| !wanted.contains(p))
            .cloned()
            .collect();
        for p in stale {
            let _ = self.debouncer.unwatch(&p);
            self.active.remove(&p);
        }
        for (path, mode) in desired {
            let identity = std::fs::metadata(&path).ok().map(|m| (m.dev(), m.ino()));
            match (self.active.get(&path), identity) {
                (Some(&(m, Some(id))), Some(now)) if m == mode && id == now => continue,
                (Some(_), _) => {
                    // Gone or replaced: the old watch (if inotify has not
                    // already dropped it) points at a dead inode.
                    let _ = self.debouncer.unwatch(&path);
                    self.active.remove(&path);
                }
                (None, _) => {}
            }
            if identity.is_none() {
                // Missing for now; the parent's watch sees it come back.
                continue;
            }
            match self.debouncer.watch(&path, mode) {
                Ok(()) => {
                    tracing::debug!(path = %path.display(), ?mode, "watching");
                    self.active.insert(path, (mode, identity));
                }
                Err(e) => errors.push(format!(
                    "cannot watch {}: {}",
                    path.display(),
                    watch_error(&e)
                )),
            }
        }
        errors
    }
}

fn watch_error(e: &notify::Error) -> String {
    match e.kind {
        notify::ErrorKind::MaxFilesWatch => {
            "the inotify watch limit is reached; raise fs.inotify.max_user_watches or pass --no-watch and reload with SIGHUP".into()
        }
        _ => e.to_string().to_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn droppings_and_hidden_dirs_are_ignored_but_configmap_names_are_not() {
        let plan = WatchPlan {
            recursive: vec![PathBuf::from("/cat")],
            entries: BTreeMap::from([(
                PathBuf::from("/etc"),
                BTreeSet::from([OsString::from("one.rego")]),
            )]),
        };
        for yes in [
            "/cat/a.rego",
            "/cat/sub/b.yaml",
            "/cat/..data",
            "/cat/..2024_01_01/a.rego",
            "/cat",
            "/cat/README",
        ] {
            assert!(plan.is_relevant(Path::new(yes)), "{yes} should be relevant");
        }
        for no in [
            "/cat/.a.rego.swp",
            "/cat/a.rego~",
            "/cat/.#a.rego",
            "/cat/4913",
            "/cat/.git/index",
            "/elsewhere/a.rego",
        ] {
            assert!(!plan.is_relevant(Path::new(no)), "{no} should be ignored");
        }
        assert!(plan.is_relevant(Path::new("/etc/one.rego")));
        assert!(plan.is_relevant(Path::new("/etc/..data")));
        assert!(!plan.is_relevant(Path::new("/etc/other.rego")));
    }
}
