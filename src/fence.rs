//! Path arguments fenced under a root (a tool's `paths:`): each is
//! canonicalized against the real file system before the decision, and the
//! canonical form is what the policy decides on and what the call passes on
//! (to the CLI, the HTTP API or the upstream MCP server). So the policy
//! decides on exactly the file the tool will open, not on a spelling of it:
//! `..` is resolved, symbolic links are followed, a name that exists on disk
//! in another Unicode normalization form is the name on disk, and a path
//! that ends up outside the root is denied by regent itself.
//!
//! How a path is read, component by component from `/`:
//! - `.` is skipped; `..` goes to the parent of what was resolved so far
//!   (which holds no symbolic link, so the parent is the real one);
//! - a name that exists is looked at with `lstat`: a symbolic link is
//!   replaced by its target (at most [`MAX_LINKS`] of them, as the kernel's
//!   own limit), anything else is taken as is;
//! - a name that does not exist byte for byte, in a directory that does,
//!   is the one entry whose NFC form is the name's NFC form, if there is
//!   exactly one (a file system that normalizes names, or a client that
//!   sent the other form); otherwise it is kept as written, and so is
//!   everything after it, with `..` removing the name before it (the file
//!   does not exist yet: a write creates it there).
//!
//! What this does not do: it cannot stop a file from changing between the
//! decision and the open (a symbolic link swapped in after the check).
//! regent reads the path again just before the call runs (`redecide`), which
//! narrows that window but does not close it; an upstream that opens with
//! `O_NOFOLLOW` or `openat2(RESOLVE_BENEATH)` closes it. A relative path is
//! refused: what it names depends on a working directory regent does not
//! know.
//!
//! This module reads the file system and nothing else: it knows neither
//! policies nor MCP. `catalog` holds each tool's [`Fence`]s (compiled from
//! YAML) and `protocol` applies them before each decision.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

/// How many symbolic links one path may go through (Linux's `MAXSYMLINKS`).
pub const MAX_LINKS: usize = 40;

/// One fenced argument: a string, or an array of strings, naming paths that
/// must stay under `root`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    pub argument: String,
    /// Absolute, as declared; canonicalized itself at each call.
    pub root: PathBuf,
}

/// Canonicalizes every fenced argument of `args` in place. Returns the
/// deny reasons of the paths that leave their root or cannot be read (the
/// call must not run); an argument that is absent or not a string (the
/// schema's business) is left alone.
pub fn apply(fences: &[Fence], args: &mut Value) -> Vec<String> {
    let mut deny = Vec::new();
    let Some(map) = args.as_object_mut() else {
        return deny;
    };
    for fence in fences {
        let Some(value) = map.get_mut(&fence.argument) else {
            continue;
        };
        let root = canonical(&fence.root).unwrap_or_else(|_| fence.root.clone());
        let mut one = |v: &mut Value| {
            let Value::String(s) = v else {
                return;
            };
            // The policy decides on the canonical form, inside the root or
            // not: its own reasons then name the file that would be opened.
            match canonical(Path::new(s.as_str())) {
                Ok(p) => {
                    let inside = p.starts_with(&root);
                    match p.into_os_string().into_string() {
                        Ok(text) if inside => *s = text,
                        Ok(text) => {
                            let resolved = if text == *s {
                                String::new()
                            } else {
                                format!(" resolves to {text}, which")
                            };
                            deny.push(format!(
                                "argument `{}`: {s:?}{resolved} is outside {}",
                                fence.argument,
                                root.display()
                            ));
                            *s = text;
                        }
                        Err(_) => deny.push(format!(
                            "argument `{}`: {s:?} resolves to a path that is not valid UTF-8",
                            fence.argument
                        )),
                    }
                }
                Err(why) => deny.push(format!("argument `{}`: {s:?} {why}", fence.argument)),
            }
        };
        match value {
            Value::Array(items) => items.iter_mut().for_each(&mut one),
            v => one(v),
        }
    }
    deny
}

/// The canonical form of the absolute path `path`, as described in the
/// module's documentation; an error says why there is none.
pub fn canonical(path: &Path) -> Result<PathBuf, String> {
    if !path.is_absolute() {
        return Err("is not an absolute path".into());
    }
    // What is left to read, first component last (so `pop` gives the next).
    let mut todo: Vec<std::ffi::OsString> = Vec::new();
    push_components(&mut todo, path);
    let mut out = PathBuf::from("/");
    // Whether `out` names something that exists (then `..` and lookups ask
    // the file system; after a missing name, only the spelling is left).
    let mut exists = true;
    let mut links = 0;
    while let Some(name) = todo.pop() {
        if name == ".." {
            out.pop();
            // Back inside what exists once the missing part is undone.
            exists = exists || out.symlink_metadata().is_ok();
            continue;
        }
        let next = out.join(&name);
        if !exists {
            out = next;
            continue;
        }
        match next.symlink_metadata() {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(format!("goes through more than {MAX_LINKS} symbolic links"));
                }
                let target = std::fs::read_link(&next)
                    .map_err(|e| format!("has a link that cannot be read: {e}"))?;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                push_components(&mut todo, &target);
            }
            Ok(_) => out = next,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                match same_name_on_disk(&out, &name) {
                    Some(on_disk) => todo.push(on_disk),
                    None => {
                        exists = false;
                        out = next;
                    }
                }
            }
            // A directory that cannot be searched, a name too long: what
            // the call would open cannot be known.
            Err(e) => return Err(format!("cannot be read at {}: {e}", next.display())),
        }
    }
    Ok(out)
}

/// Pushes `path`'s components onto `todo` so that the first is popped first.
fn push_components(todo: &mut Vec<std::ffi::OsString>, path: &Path) {
    let parts: Vec<std::ffi::OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect();
    todo.extend(parts.into_iter().rev());
}

/// The one entry of `dir` whose name is `name` in NFC, when `name` itself is
/// not there: the same file as the file system and most programs see it.
fn same_name_on_disk(dir: &Path, name: &std::ffi::OsStr) -> Option<std::ffi::OsString> {
    let nfc = icu_normalizer::ComposingNormalizerBorrowed::new_nfc();
    let wanted = nfc.normalize(name.to_str()?).into_owned();
    let mut found = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let entry_name = entry.file_name();
        let Some(text) = entry_name.to_str() else {
            continue;
        };
        if nfc.normalize(text) == wanted {
            if found.is_some() {
                // Two names that normalize alike: which one the tool opens
                // depends on the tool, so neither is chosen.
                return None;
            }
            found = Some(entry_name);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::os::unix::fs::symlink;

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        // The temporary directory may itself be reached through a link.
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(root.join("sub/a.txt"), "a").unwrap();
        std::fs::write(base.join("outside/s.txt"), "s").unwrap();
        symlink(base.join("outside"), root.join("link_out")).unwrap();
        symlink("sub", root.join("link_in")).unwrap();
        (tmp, root)
    }

    fn fenced(root: &Path, path: impl Into<String>) -> (Value, Vec<String>) {
        let fence = Fence {
            argument: "path".into(),
            root: root.to_path_buf(),
        };
        let mut args = json!({"path": path.into()});
        let deny = apply(&[fence], &mut args);
        (args["path"].clone(), deny)
    }

    #[test]
    fn a_path_inside_stays_as_it_is() {
        let (_t, root) = tree();
        let p = root.join("sub/a.txt").display().to_string();
        assert_eq!(fenced(&root, p.clone()), (json!(p), vec![]));
    }

    #[test]
    fn dot_dot_is_resolved_and_leaving_the_root_is_denied() {
        let (_t, root) = tree();
        let inside = format!("{}/sub/../sub/./a.txt", root.display());
        let (v, deny) = fenced(&root, inside);
        assert_eq!(v, json!(root.join("sub/a.txt").display().to_string()));
        assert!(deny.is_empty(), "{deny:?}");
        let (_, deny) = fenced(&root, format!("{}/../outside/s.txt", root.display()));
        assert_eq!(deny.len(), 1);
        assert!(deny[0].contains("outside"), "{deny:?}");
    }

    #[test]
    fn a_symbolic_link_out_of_the_root_is_denied_and_one_inside_followed() {
        let (_t, root) = tree();
        let (_, deny) = fenced(&root, format!("{}/link_out/s.txt", root.display()));
        assert_eq!(deny.len(), 1, "{deny:?}");
        assert!(deny[0].contains("/outside/s.txt"), "{deny:?}");
        // Writing through the link to a file that does not exist yet.
        let (_, deny) = fenced(&root, format!("{}/link_out/new.txt", root.display()));
        assert_eq!(deny.len(), 1, "{deny:?}");
        let (v, deny) = fenced(&root, format!("{}/link_in/a.txt", root.display()));
        assert!(deny.is_empty(), "{deny:?}");
        assert_eq!(v, json!(root.join("sub/a.txt").display().to_string()));
    }

    #[test]
    fn a_missing_file_keeps_its_spelling_and_dot_dot_after_it_is_undone() {
        let (_t, root) = tree();
        let (v, deny) = fenced(&root, format!("{}/sub/new/../b.txt", root.display()));
        assert!(deny.is_empty(), "{deny:?}");
        assert_eq!(v, json!(root.join("sub/b.txt").display().to_string()));
        // Undoing a missing name goes back to reading the disk: the link
        // after it is still followed.
        let (_, deny) = fenced(&root, format!("{}/nope/../link_out/x", root.display()));
        assert_eq!(deny.len(), 1, "{deny:?}");
        let (_, deny) = fenced(&root, format!("{}/nope/../../outside", root.display()));
        assert_eq!(deny.len(), 1, "{deny:?}");
    }

    #[test]
    fn a_name_in_another_normalization_form_is_the_name_on_disk() {
        let (_t, root) = tree();
        let nfc = "caf\u{e9}.txt";
        let nfd = "cafe\u{301}.txt";
        std::fs::write(root.join(nfc), "x").unwrap();
        let (v, deny) = fenced(&root, format!("{}/{nfd}", root.display()));
        assert!(deny.is_empty(), "{deny:?}");
        assert_eq!(v, json!(root.join(nfc).display().to_string()));
        // Both forms on disk: neither is chosen, the name stays as sent.
        std::fs::write(root.join(nfd), "y").unwrap();
        let (v, _) = fenced(&root, format!("{}/{nfd}", root.display()));
        assert_eq!(v, json!(root.join(nfd).display().to_string()));
    }

    #[test]
    fn link_loops_and_relative_paths_are_refused() {
        let (_t, root) = tree();
        symlink(root.join("loop_b"), root.join("loop_a")).unwrap();
        symlink(root.join("loop_a"), root.join("loop_b")).unwrap();
        let (_, deny) = fenced(&root, format!("{}/loop_a", root.display()));
        assert!(deny[0].contains("symbolic links"), "{deny:?}");
        let (_, deny) = fenced(&root, "sub/a.txt");
        assert!(deny[0].contains("not an absolute path"), "{deny:?}");
    }

    #[test]
    fn every_item_of_an_array_is_fenced() {
        let (_t, root) = tree();
        let fence = Fence {
            argument: "paths".into(),
            root: root.clone(),
        };
        let inside = format!("{}/link_in/a.txt", root.display());
        let mut args = json!({"paths": [inside, "/etc/passwd"]});
        let deny = apply(&[fence], &mut args);
        assert_eq!(deny.len(), 1, "{deny:?}");
        assert_eq!(
            args["paths"][0],
            json!(root.join("sub/a.txt").display().to_string())
        );
    }
}
