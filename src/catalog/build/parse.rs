//! Parsing the serving policy files once per build: each file's package,
//! its parse errors and the reserved `regent` namespace located at the
//! `package` line, and every parsed module for `check`'s lints.
//!
//! What a package is used for (tool, shadow or library) is the parent's
//! (`build`); the modules are read, not compiled, here.

use super::PolicyFile;
use crate::diag::{Diagnostic, Diagnostics, Location};
use crate::policy::engine as policy;
use crate::rego;
use crate::source::{FileKind, Source};

/// Parses every serving policy file to learn its package, reporting parse
/// errors and the reserved `regent` namespace. Beside the files that may
/// serve, the module of every file that parsed, in the files' order (those
/// in a reserved package too): what `check`'s lints read
/// ([`Catalog::take_policy_modules`](crate::catalog::Catalog::take_policy_modules)), so that they parse nothing again.
pub(super) fn parse_policies<'a>(
    source: &'a Source,
    diags: &mut Diagnostics,
) -> (Vec<PolicyFile<'a>>, Vec<rego::PolicyModule>) {
    let files: Vec<_> = source
        .policies
        .iter()
        .filter(|f| f.kind == FileKind::Policy)
        .collect();
    // Each file is parsed on its own scratch engine, so files are parsed in
    // parallel; the order (and so the diagnostics) stays the files' order.
    // Nothing evaluates on it: a bare engine, without the guards.
    let parsed = crate::par::map_ordered(&files, 32, |file| {
        let path = file.path.to_string_lossy().to_string();
        let mut scratch = policy::parse_engine();
        let pkg =
            policy::add_policy(&mut scratch, &path, &file.text).map_err(|d| Box::new((d, None)))?;
        let package = pkg.strip_prefix("data.").unwrap_or(&pkg).to_string();
        let module = rego::modules(&mut scratch).pop();
        if package == "regent" || package.starts_with("regent.") {
            return Err(Box::new((
                Diagnostic::error(
                    "reserved-package",
                    package_location(&file.path, &file.text),
                    format!("package `{package}` is reserved for regent's generated rules"),
                )
                .with_help("rename the package, for example to `tools.<tool name>`"),
                module,
            )));
        }
        Ok(PolicyFile {
            path,
            text: &file.text,
            package,
            module,
        })
    });
    let mut out = Vec::new();
    let mut linted = Vec::new();
    for p in parsed {
        match p {
            Ok(p) => {
                linted.extend(p.module.clone());
                out.push(p);
            }
            Err(failed) => {
                let (d, module) = *failed;
                linted.extend(module);
                diags.push(d);
            }
        }
    }
    (out, linted)
}

/// Where the `package` line of a policy is.
fn package_location(path: &std::path::Path, text: &str) -> Location {
    let line = text
        .lines()
        .position(|l| l.trim_start().starts_with("package "))
        .map_or(1, |i| i + 1);
    Location::new(path, line, 1)
}
