//! `regent review`: run what `regent check` runs (through `check`'s own
//! functions), tabulate each tool's decisions (`crate::review`) and print
//! them as Markdown or write them as one HTML page. With `--base`, the
//! same for the earlier catalog (`review/revision` finds it: a path, or the
//! catalog paths at a git revision), both tabulated for the same callers,
//! and what changed (`crate::review::diff`) leads.
//!
//! Bundles among the paths (and a bundle given as the base) are opened as
//! `check` opens them; the review names their files `b.tar.gz:x.rego`, and
//! a revision's `REF:path`.
//!
//! Exit codes: 0 when the review was written, whatever check found (the
//! findings are in it; `regent check` is the gate), 2 when it could not run
//! (no catalog at the paths or at the base, a base that is no path or
//! revision, an unwritable output).

use std::path::{Path, PathBuf};

use super::bundle::{Inputs, is_bundle_path};
use super::{Failure, build_options, exit, print_stdout};
use crate::caller::Caller;
use crate::catalog::BuildOptions;
use crate::check::{self, Checked, Started};
use crate::cli::{ReviewArgs, ReviewFormat};
use crate::diag;
use crate::review::{self, Compared, Review, diff, html, markdown};

mod revision;

pub fn run(args: &ReviewArgs) -> Result<i32, Failure> {
    // Whether a policy is too slow, not whether this machine is busy: the
    // time limit counts the evaluating thread's CPU (`policy::clock`).
    crate::policy::clock::count_thread_cpu();
    let opts = build_options(&args.tooling.catalog());
    let key = args.tooling.bundle_public_key.as_deref();
    // Bundles among the paths are opened (and verified) first, as `check`
    // opens them; the review names the files inside as `b.tar.gz:x.rego`.
    let inputs = Inputs::open(&args.tooling.paths, key)?;
    let checked = check_or_fail(&inputs.paths, &opts, "")?;
    let paths: Vec<String> = args
        .tooling
        .paths
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let format = args.format.unwrap_or(match &args.output {
        Some(p) if is_html(p) => ReviewFormat::Html,
        _ => ReviewFormat::Markdown,
    });
    let text = match &args.base {
        None => {
            let callers = caller_classes(&checked);
            let mut review = review::build(&paths, &checked, &callers);
            review.relabel(&|s| inputs.relabel(s));
            match format {
                ReviewFormat::Markdown => markdown::render(&review, args.max_bytes),
                ReviewFormat::Html => html::render(&review),
            }
        }
        Some(base) => {
            let at = revision::resolve(base, &args.tooling.paths)
                .map_err(|m| Failure::new(exit::CANNOT_RUN, m))?;
            // A key verifies the base's bundles too, when it has any.
            let base_key = key.filter(|_| at.paths.iter().any(|p| is_bundle_path(p)));
            let base_inputs = Inputs::open(&at.paths, base_key)?;
            let base_checked = check_or_fail(&base_inputs.paths, &opts, &at.label)?;
            // Both sides are tabulated for the same callers (both catalogs'
            // caller classes), so that their rows line up.
            let callers = union(&caller_classes(&checked), &caller_classes(&base_checked));
            let mut review = review::build(&paths, &checked, &callers);
            review.relabel(&|s| inputs.relabel(s));
            let base_paths: Vec<String> =
                at.paths.iter().map(|p| p.display().to_string()).collect();
            let mut base_review = review::build(&base_paths, &base_checked, &callers);
            base_review.relabel(&|s| {
                let s = base_inputs.relabel(s);
                match &at.relabel {
                    Some((dir, prefix)) => relabel_dir(&s, dir, prefix),
                    None => s,
                }
            });
            let d = diff::compare(&base_review, &review);
            let compared = Compared {
                review: &base_review,
                label: &at.label,
                diff: &d,
            };
            render_compared(&review, &compared, format, args.max_bytes)
        }
    };
    match &args.output {
        None => print_stdout(&text)?,
        Some(path) => std::fs::write(path, text).map_err(|e| {
            Failure::new(
                exit::CANNOT_RUN,
                format!(
                    "error: cannot write the review to {}: {}\n  = help: choose a writable path, or leave out -o to print it",
                    path.display(),
                    crate::source::files::lower_io(&e)
                ),
            )
        })?,
    }
    Ok(exit::OK)
}

/// The caller classes a catalog's rows are per: the callers of its own
/// test cases; without any, those the proof enumerates from a declared
/// caller schema (none without one).
fn caller_classes(checked: &Checked) -> Vec<Caller> {
    match &checked.catalog {
        Some(catalog) if checked.callers.is_empty() => {
            crate::analysis::caller_classes::for_catalog(catalog)
        }
        _ => checked.callers.clone(),
    }
}

fn render_compared(
    review: &Review,
    base: &Compared,
    format: ReviewFormat,
    max_bytes: usize,
) -> String {
    match format {
        ReviewFormat::Markdown => markdown::render_compared(review, base, max_bytes),
        ReviewFormat::Html => html::render_compared(review, base),
    }
}

/// What `check` finds at `paths`, or why there is nothing to review
/// (`which` names the base, empty for the catalog itself).
fn check_or_fail(paths: &[PathBuf], opts: &BuildOptions, which: &str) -> Result<Checked, Failure> {
    let checked = check::check_keeping(paths, opts, &Started::default());
    if checked.report.outcome() != diag::Outcome::CannotRun {
        return Ok(checked);
    }
    let mut message = String::new();
    for d in checked
        .report
        .diagnostics
        .iter()
        .filter(|d| d.is_cannot_run())
    {
        message.push_str(&d.render());
    }
    if which.is_empty() {
        message.push_str("error: nothing to review");
    } else {
        message.push_str(&format!(
            "error: the base ({which}) has no catalog to review\n  = help: give --base a revision or directory that holds the catalog"
        ));
    }
    Err(Failure::new(exit::CANNOT_RUN, message))
}

/// `a`'s callers, then those of `b` not among them.
fn union(a: &[Caller], b: &[Caller]) -> Vec<Caller> {
    let mut out = a.to_vec();
    for c in b {
        if !out.iter().any(|x| x.to_value() == c.to_value()) {
            out.push(c.clone());
        }
    }
    out
}

/// `s` with the temporary directory a revision was written to shown as
/// the revision: `/tmp/regent-base-…/x/tools.yaml` reads `HEAD~1:x/tools.yaml`.
fn relabel_dir(s: &str, dir: &Path, prefix: &str) -> String {
    let shown = dir.display().to_string();
    s.replace(&format!("{shown}/"), prefix)
        .replace(&shown, prefix)
}

fn is_html(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"))
}
