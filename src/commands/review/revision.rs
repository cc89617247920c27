//! Where `regent review --base` reads the earlier catalog from: a path (a
//! directory, a file or a bundle, as the catalog paths are given), or a git
//! revision, at which the catalog paths themselves are read.
//!
//! A revision is read through the git CLI (`git rev-parse`, `git ls-tree`,
//! `git cat-file --batch`) in the repository holding the catalog paths, and
//! its files written to a private temporary directory (removed on drop)
//! under the same relative paths, so that a location reads
//! `REF:examples/x/tools.yaml:7:5`. Only regular files are read: a symbolic
//! link or a submodule under the paths at the revision is refused (a
//! checkout of the base, `git worktree add`, is the way to review one).
//!
//! An argument that is both an existing path and a revision is refused,
//! as git refuses an ambiguous argument: `./NAME` names the path,
//! `NAME^{commit}` the revision. Building and comparing the catalogs is
//! `crate::review`'s.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

/// The base catalog's paths, and what to call them in the review.
pub struct BaseCatalog {
    pub paths: Vec<PathBuf>,
    /// `HEAD~1 (git revision 1a2b3c4d5e6f)` or the path as given.
    pub label: String,
    /// For a revision: the temporary directory and the prefix it stands
    /// for in the output (`HEAD~1:`).
    pub relabel: Option<(PathBuf, String)>,
}

impl Drop for BaseCatalog {
    fn drop(&mut self) {
        if let Some((dir, _)) = &self.relabel {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Reads `base` as a path or as a revision of the repository holding
/// `head` (the catalog paths). The error is a whole message: `error: …`
/// and its help.
pub fn resolve(base: &str, head: &[PathBuf]) -> Result<BaseCatalog, String> {
    if base.is_empty() {
        return Err(
            "error: --base is empty\n  = help: give a git revision (`origin/main`) or the base catalog's directory"
                .into(),
        );
    }
    let as_path = Path::new(base);
    let repo = repository(head);
    let commit = match &repo {
        Ok(top) => rev_parse(top, base)?,
        Err(_) => None,
    };
    match (as_path.exists(), commit) {
        (true, Some(_)) => Err(format!(
            "error: --base `{base}` names both a path and a git revision\n  = help: write `./{base}` for the path, or `{base}^{{commit}}` for the revision"
        )),
        (true, None) => Ok(BaseCatalog {
            paths: vec![as_path.to_path_buf()],
            label: base.to_string(),
            relabel: None,
        }),
        (false, Some(commit)) => {
            let top = repo.expect("a revision was found in it");
            at_revision(&top, base, &commit, head)
        }
        (false, None) => Err(match repo {
            Err(why) => format!(
                "error: --base `{base}` is not a path, and it cannot be a git revision: {why}\n  = help: give the base catalog's directory, or run in the git repository holding the catalog"
            ),
            Ok(top) => format!(
                "error: --base `{base}` is neither a path nor a revision of the git repository at {}\n  = help: check the name (`git log --oneline -3 {base}`); in CI, fetch the base branch first (actions/checkout with `fetch-depth: 0`) and name it `origin/BRANCH`",
                top.display()
            ),
        }),
    }
}

/// The top of the git repository holding every path of `head`.
fn repository(head: &[PathBuf]) -> Result<PathBuf, String> {
    let first = head.first().map(PathBuf::as_path).unwrap_or(Path::new("."));
    let dir = dir_of(first);
    let out = git(&dir, &["rev-parse", "--show-toplevel"])?;
    if !out.status.success() {
        return Err(format!("{} is not in a git repository", first.display()));
    }
    let top = String::from_utf8_lossy(&out.stdout).trim_end().to_string();
    Ok(PathBuf::from(top))
}

/// The directory to run git in for `path`: itself when it is a directory,
/// else its parent (a file, or a path that does not exist).
fn dir_of(path: &Path) -> PathBuf {
    if path.is_dir() {
        return path.to_path_buf();
    }
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn git(dir: &Path, args: &[&str]) -> Result<std::process::Output, String> {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git: {}", crate::source::files::lower_io(&e)))
}

/// The commit `rev` names in the repository at `top`, if any.
fn rev_parse(top: &Path, rev: &str) -> Result<Option<String>, String> {
    let spec = format!("{rev}^{{commit}}");
    let out = git(
        top,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &spec,
        ],
    )
    .map_err(|e| format!("error: {e}\n  = help: install git, or give --base a directory"))?;
    if !out.status.success() {
        return Ok(None);
    }
    Ok(Some(
        String::from_utf8_lossy(&out.stdout).trim_end().to_string(),
    ))
}

/// `head`'s paths relative to `top`, `.` for the top itself.
fn relative(top: &Path, head: &[PathBuf]) -> Result<Vec<String>, String> {
    let top = top.canonicalize().map_err(|e| {
        format!(
            "error: cannot read {}: {}",
            top.display(),
            crate::source::files::lower_io(&e)
        )
    })?;
    let mut out = Vec::new();
    for p in head {
        // A path that does not exist now may have existed at the revision:
        // its parent is made absolute instead.
        let abs = match p.canonicalize() {
            Ok(a) => a,
            Err(_) => {
                let parent = dir_of(p).canonicalize().map_err(|e| {
                    format!(
                        "error: cannot read {}: {}",
                        p.display(),
                        crate::source::files::lower_io(&e)
                    )
                })?;
                match p.file_name() {
                    Some(n) => parent.join(n),
                    None => parent,
                }
            }
        };
        let rel = abs.strip_prefix(&top).map_err(|_| {
            format!(
                "error: {} is outside the git repository at {}, so it cannot be read at a revision\n  = help: give --base the base catalog's directory instead",
                p.display(),
                top.display()
            )
        })?;
        let rel = rel.to_string_lossy().into_owned();
        out.push(if rel.is_empty() { ".".to_string() } else { rel });
    }
    Ok(out)
}

/// One entry of `git ls-tree -r -z`.
struct Entry {
    mode: String,
    object: String,
    path: String,
}

fn at_revision(
    top: &Path,
    rev: &str,
    commit: &str,
    head: &[PathBuf],
) -> Result<BaseCatalog, String> {
    let rels = relative(top, head)?;
    let mut args = vec!["ls-tree", "-r", "-z", "--full-tree", commit, "--"];
    args.extend(rels.iter().map(String::as_str));
    let out = git(top, &args).map_err(|e| format!("error: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "error: cannot list {rev} in {}: {}",
            top.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let mut entries = Vec::new();
    for record in out.stdout.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let record = String::from_utf8_lossy(record);
        let (meta, path) = record
            .split_once('\t')
            .ok_or_else(|| format!("error: git ls-tree printed an unexpected line: {record}"))?;
        let mut parts = meta.split(' ');
        let (Some(mode), Some(_kind), Some(object)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(format!(
                "error: git ls-tree printed an unexpected line: {record}"
            ));
        };
        entries.push(Entry {
            mode: mode.to_string(),
            object: object.to_string(),
            path: path.to_string(),
        });
    }
    for rel in &rels {
        let found = rel == "."
            || entries
                .iter()
                .any(|e| e.path == *rel || e.path.starts_with(&format!("{rel}/")));
        if !found {
            return Err(format!(
                "error: {rel} did not exist at {rev} (commit {})\n  = help: review a revision that has the catalog, or give --base the base catalog's directory",
                short(commit)
            ));
        }
    }
    for e in &entries {
        let what = match e.mode.as_str() {
            "100644" | "100755" => continue,
            "120000" => "a symbolic link",
            "160000" => "a submodule",
            _ => "not a regular file",
        };
        return Err(format!(
            "error: {rev}:{} is {what}; regent reads only regular files from a git revision\n  = help: check the base out (`git worktree add /tmp/base {rev}`) and give --base that directory",
            e.path
        ));
    }
    let dir = private_dir().map_err(|e| {
        format!(
            "error: cannot make a temporary directory: {}",
            crate::source::files::lower_io(&e)
        )
    })?;
    let base = BaseCatalog {
        paths: rels.iter().map(|r| dir.join(r)).collect(),
        label: format!("{rev} (git revision {})", short(commit)),
        relabel: Some((dir.clone(), format!("{rev}:"))),
    };
    let blobs = cat_blobs(top, &entries)?;
    for (e, bytes) in entries.iter().zip(blobs) {
        let rel = Path::new(&e.path);
        // git trees hold no `..` or absolute names; refused all the same.
        if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(format!(
                "error: {rev}:{} is not a plain relative path",
                e.path
            ));
        }
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|err| write_error(&path, &err))?;
        }
        std::fs::write(&path, bytes).map_err(|err| write_error(&path, &err))?;
    }
    Ok(base)
}

fn write_error(path: &Path, e: &std::io::Error) -> String {
    format!(
        "error: cannot write {}: {}",
        path.display(),
        crate::source::files::lower_io(e)
    )
}

fn short(commit: &str) -> &str {
    &commit[..12.min(commit.len())]
}

/// The contents of every entry's blob, in order, from one `git cat-file
/// --batch` (a process per file would be slow on a large catalog).
fn cat_blobs(top: &Path, entries: &[Entry]) -> Result<Vec<Vec<u8>>, String> {
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    let mut child = Command::new("git")
        .arg("-C")
        .arg(top)
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| {
            format!(
                "error: cannot run git: {}",
                crate::source::files::lower_io(&e)
            )
        })?;
    let mut stdin = child.stdin.take().expect("piped");
    let ids: String = entries.iter().map(|e| format!("{}\n", e.object)).collect();
    // Written on a thread of its own: git answers while it reads, and a
    // full pipe either way would block both.
    let writer = std::thread::spawn(move || stdin.write_all(ids.as_bytes()));
    let mut reader = BufReader::new(child.stdout.take().expect("piped"));
    let mut out = Vec::with_capacity(entries.len());
    let unexpected = |what: &str| format!("error: git cat-file answered unexpectedly: {what}");
    for e in entries {
        let mut line = String::new();
        reader
            .read_line(&mut line)
            .map_err(|err| unexpected(&err.to_string()))?;
        let mut parts = line.trim_end().split(' ');
        let (Some(_), Some("blob"), Some(size)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(unexpected(&format!("{} for {}", line.trim_end(), e.path)));
        };
        let size: usize = size.parse().map_err(|_| unexpected(&line))?;
        let mut bytes = vec![0; size + 1];
        reader
            .read_exact(&mut bytes)
            .map_err(|err| unexpected(&err.to_string()))?;
        bytes.pop(); // the newline after the contents
        out.push(bytes);
    }
    let _ = writer.join();
    let _ = child.wait();
    Ok(out)
}

/// A new directory only this user can read, under the system's temporary
/// directory.
fn private_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).map_err(|e| std::io::Error::other(e.to_string()))?;
    let dir = std::env::temp_dir().join(format!(
        "regent-base-{}-{}",
        std::process::id(),
        base16ct::lower::encode_string(&random)
    ));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}
