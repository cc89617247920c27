//! `regent bundle build`, and bundles given to `check` and `test`.
//!
//! `build` loads the catalog under a directory (refusing one that does not
//! load, as `serve` would), lays its files out as `bundle::layout` says,
//! merges its data into one `data.json`, writes a `.manifest` (revision,
//! roots `[""]`, rego_version 1), signs when asked, and writes a
//! reproducible gzip tarball.
//!
//! [`Inputs`] opens each bundle among `check`'s or `test`'s paths
//! (verifying it with `--bundle-public-key` when given), writes the files
//! regent reads into a private temporary directory, and hands that
//! directory to the command in the bundle's place; the command's output is
//! then relabelled so that a problem reads `bundle.tar.gz:policies/x.rego:3:1`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::Digest;

use super::{Failure, exit, load_source, print_stdout};
use crate::bundle::{self, Bundle, Files, PublicKeys, SigningKey, layout};
use crate::catalog;
use crate::cli::{BundleArgs, BundleBuildArgs, BundleCommand, CatalogArgs};
use crate::source::files::{self, FileKind, lower_io};

pub fn run(args: &BundleArgs) -> Result<i32, Failure> {
    match &args.command {
        BundleCommand::Build(b) => build(b),
    }
}

fn cannot(message: String) -> Failure {
    Failure::new(exit::CANNOT_RUN, format!("error: {message}"))
}

fn build(args: &BundleBuildArgs) -> Result<i32, Failure> {
    let dir = &args.dir;
    if !dir.is_dir() {
        return Err(cannot(format!(
            "{} is not a directory; `regent bundle build` takes the catalog's directory",
            dir.display()
        )));
    }
    // Read the key before anything long, so a wrong path fails at once.
    let key = match &args.signing_key {
        Some(p) => Some(SigningKey::read(p).map_err(cannot)?),
        None => None,
    };
    let catalog_args = CatalogArgs {
        paths: vec![dir.clone()],
        policy_timeout_ms: crate::policy::DEFAULT_POLICY_TIMEOUT_MS,
        policy_memory_mb: crate::policy::budget::DEFAULT_POLICY_MEMORY_MB,
    };
    // A bundle is what replicas will serve: one that does not load is not
    // built.
    let mut source = load_source(&catalog_args).map_err(|d| Failure::from_diagnostics(&d))?;
    let imported = source.import_pinned();
    if imported.has_errors() {
        return Err(Failure::from_diagnostics(&imported));
    }
    catalog::build(&source, &super::build_options(&catalog_args))
        .map_err(|d| Failure::from_diagnostics(&d))?;

    let found = files::discover(std::slice::from_ref(dir)).map_err(|d| cannot(d.to_string()))?;
    let mut out = Files::new();
    let mut data = serde_json::Value::Object(serde_json::Map::new());
    let mut data_from: BTreeMap<String, String> = BTreeMap::new();
    for (path, kind) in &found {
        let rel = inner_path(dir, path)?;
        let bytes = std::fs::read(path)
            .map_err(|e| cannot(format!("cannot read {}: {}", path.display(), lower_io(&e))))?;
        if *kind == FileKind::Data {
            let value: serde_json::Value = serde_json::from_slice(&bytes)
                .map_err(|e| cannot(format!("{}: invalid json: {e}", path.display())))?;
            merge(&mut data, value, &rel, &mut data_from, String::new())?;
            continue;
        }
        if let Some(why) = layout::refusal(&rel) {
            return Err(cannot(format!("{}: {why}", path.display())));
        }
        out.insert(rel, bytes);
    }
    // Pinned upstream snapshots travel with the tool files that name them.
    for (f, _, u) in source.upstreams() {
        let Some(name) = &u.snapshot else { continue };
        let path = source.tool_files[f]
            .path
            .parent()
            .unwrap_or(Path::new(""))
            .join(name);
        let rel = inner_path(dir, &path)?;
        let bytes = std::fs::read(&path)
            .map_err(|e| cannot(format!("cannot read {}: {}", path.display(), lower_io(&e))))?;
        out.insert(rel, bytes);
    }
    let mut data_text = serde_json::to_vec_pretty(&data).unwrap_or_default();
    data_text.push(b'\n');
    out.insert("data.json".to_string(), data_text);

    let revision = match &args.revision {
        Some(r) => r.clone(),
        None => content_digest(&out),
    };
    let manifest = bundle::Manifest {
        revision: revision.clone(),
        roots: Some(vec![String::new()]),
        rego_version: Some(1),
        ..bundle::Manifest::default()
    };
    let mut manifest_text = serde_json::to_vec_pretty(&manifest).unwrap_or_default();
    manifest_text.push(b'\n');
    out.insert(bundle::MANIFEST.to_string(), manifest_text);

    let mut signed = String::new();
    if let Some(key) = &key {
        let sigs = bundle::sign::sign(&out, key, args.key_id.as_deref()).map_err(cannot)?;
        out.insert(bundle::SIGNATURES.to_string(), sigs);
        signed = format!(
            ", signed ({:?}{})",
            key.algorithm(),
            args.key_id
                .as_deref()
                .map(|k| format!(", key id `{k}`"))
                .unwrap_or_default()
        );
    }
    let bytes = bundle::archive::write(&out)
        .map_err(|e| cannot(format!("cannot write the bundle: {}", lower_io(&e))))?;
    // What was written must read back as a bundle.
    bundle::open(&bytes, None, bundle::Limits::default())
        .map_err(|e| cannot(e.render(&args.output.display().to_string())))?;
    write_atomically(&args.output, &bytes)?;
    print_stdout(&format!(
        "wrote {}: {} files, revision {revision}{signed}\n",
        args.output.display(),
        out.len()
    ))?;
    Ok(exit::OK)
}

/// `path`'s path inside the bundle: from `dir`, with `/` separators.
fn inner_path(dir: &Path, path: &Path) -> Result<String, Failure> {
    let rel = path.strip_prefix(dir).map_err(|_| {
        cannot(format!(
            "{} is outside {}; a bundle holds only what is under its directory",
            path.display(),
            dir.display()
        ))
    })?;
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let joined = parts.join("/");
    bundle::archive::clean_path(joined.as_bytes())
        .map_err(|why| cannot(format!("{}: {why}", path.display())))
}

/// Deep-merges a data document into `into`, as regorus merges regent's data
/// files: objects key by key, any other value only where none is (or the
/// same one is).
fn merge(
    into: &mut serde_json::Value,
    value: serde_json::Value,
    file: &str,
    from: &mut BTreeMap<String, String>,
    at: String,
) -> Result<(), Failure> {
    match (into, value) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in b {
                let here = format!("{at}/{k}");
                match a.get_mut(&k) {
                    Some(existing) => merge(existing, v, file, from, here)?,
                    None => {
                        from.insert(here, file.to_string());
                        a.insert(k, v);
                    }
                }
            }
            Ok(())
        }
        (a, b) if *a == b => Ok(()),
        (_, _) => Err(cannot(format!(
            "{file} and {} set data at `{at}` differently; keep one",
            from.get(&at)
                .map(String::as_str)
                .unwrap_or("another data file")
        ))),
    }
}

/// A sha256 over the bundle's files (name, length, bytes, in order).
fn content_digest(files: &Files) -> String {
    let mut h = sha2::Sha256::new();
    for (name, bytes) in files {
        h.update(name.as_bytes());
        h.update([0]);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    }
    base16ct::lower::encode_string(&h.finalize())
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bundle".into());
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            cannot(format!("cannot write {}: {}", path.display(), lower_io(&e)))
        })
}

/// Whether `path` is given as a bundle: a file named `*.tar.gz` or `*.tgz`.
pub fn is_bundle_path(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    (name.ends_with(".tar.gz") || name.ends_with(".tgz")) && path.is_file()
}

/// `check`'s or `test`'s paths with each bundle opened, verified and
/// written out to a private directory that stands in its place.
pub struct Inputs {
    pub paths: Vec<PathBuf>,
    /// (directory, the bundle's name as given) for each bundle.
    opened: Vec<(PathBuf, String)>,
}

impl Inputs {
    pub fn open(paths: &[PathBuf], public_key: Option<&Path>) -> Result<Inputs, Failure> {
        let keys = match public_key {
            Some(p) => Some(PublicKeys::read(p).map_err(cannot)?),
            None => None,
        };
        let mut inputs = Inputs {
            paths: Vec::new(),
            opened: Vec::new(),
        };
        let mut toolless = Vec::new();
        for path in paths {
            if !is_bundle_path(path) {
                inputs.paths.push(path.clone());
                continue;
            }
            let label = path.display().to_string();
            let bytes = std::fs::read(path)
                .map_err(|e| cannot(format!("cannot read {label}: {}", lower_io(&e))))?;
            let opened = bundle::open(&bytes, keys.as_ref(), bundle::Limits::default())
                .map_err(|e| cannot(e.render(&label)))?;
            let catalog =
                layout::catalog_files(&opened.files).map_err(|e| cannot(e.render(&label)))?;
            note(&label, &opened);
            if !catalog
                .keys()
                .any(|p| FileKind::of(Path::new(p)) == Some(FileKind::Tools))
            {
                toolless.push(label.clone());
            }
            let dir = private_dir().map_err(|e| {
                cannot(format!(
                    "cannot make a directory for {label}: {}",
                    lower_io(&e)
                ))
            })?;
            // Recorded before writing, so a failed write is still removed.
            inputs.opened.push((dir.clone(), label.clone()));
            layout::write_dir(&catalog, &dir)
                .map_err(|e| cannot(format!("cannot write out {label}: {}", lower_io(&e))))?;
            inputs.paths.push(dir);
        }
        if keys.is_some() && inputs.opened.is_empty() {
            return Err(cannot(
                "--bundle-public-key is given but no bundle (*.tar.gz, *.tgz) is among the paths"
                    .to_string(),
            ));
        }
        // A bundle of Rego and data only (as `opa build` makes) is the
        // policy part of a catalog whose tools come from other paths.
        if !toolless.is_empty() && inputs.paths.len() == toolless.len() {
            return Err(Failure::new(
                exit::CANNOT_RUN,
                format!(
                    "error: {} holds no tool files (a bundle of Rego and data only, as `opa build` makes)\n  help: give the tool files beside it: `regent check tools/ {}`; or build the whole catalog with `regent bundle build DIR -o FILE`",
                    toolless.join(", "),
                    toolless[0]
                ),
            ));
        }
        Ok(inputs)
    }

    /// `text` with each bundle's directory shown as the bundle's name:
    /// `/tmp/regent-bundle-…/policies/x.rego` reads `b.tar.gz:policies/x.rego`.
    pub fn relabel(&self, text: &str) -> String {
        let mut text = text.to_string();
        for (dir, label) in &self.opened {
            let mut forms = vec![dir.clone()];
            if let Ok(cwd) = std::env::current_dir()
                && let Ok(rel) = dir.strip_prefix(&cwd)
            {
                forms.push(rel.to_path_buf());
            }
            for form in forms {
                let shown = form.display().to_string();
                text = text.replace(&format!("{shown}/"), &format!("{label}:"));
                text = text.replace(&shown, label);
            }
        }
        text
    }
}

impl Drop for Inputs {
    fn drop(&mut self) {
        for (dir, _) in &self.opened {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// What was verified of a bundle, on stderr (stdout carries the report).
fn note(label: &str, b: &Bundle) {
    let revision = if b.manifest.revision.is_empty() {
        "no revision".to_string()
    } else {
        format!("revision {}", b.manifest.revision)
    };
    eprintln!("note: {label}: {revision}, {}", b.describe_signature());
}

/// A new directory only this user can read, under the system's temporary
/// directory.
fn private_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).map_err(|e| std::io::Error::other(e.to_string()))?;
    let dir = std::env::temp_dir().join(format!(
        "regent-bundle-{}-{}",
        std::process::id(),
        base16ct::lower::encode_string(&random)
    ));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}
