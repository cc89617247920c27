//! `regent review`: run what `regent check` runs (through `check`'s own
//! functions), tabulate each tool's decisions (`crate::review`) and print
//! them as Markdown or write them as one HTML page.
//!
//! Exit codes: 0 when the review was written, whatever check found (the
//! findings are in it; `regent check` is the gate), 2 when it could not run
//! (no catalog at the paths, an unwritable output).

use std::path::Path;

use super::{Failure, build_options, exit, print_stdout};
use crate::check::{self, Started};
use crate::cli::{ReviewArgs, ReviewFormat};
use crate::diag;
use crate::review::{self, html, markdown};

pub fn run(args: &ReviewArgs) -> Result<i32, Failure> {
    let opts = build_options(&args.tooling.catalog());
    let checked = check::check_keeping(&args.tooling.paths, &opts, &Started::default());
    if checked.report.outcome() == diag::Outcome::CannotRun {
        let mut message = String::new();
        for d in checked
            .report
            .diagnostics
            .iter()
            .filter(|d| d.is_cannot_run())
        {
            message.push_str(&d.render());
        }
        message.push_str("error: nothing to review");
        return Err(Failure::new(exit::CANNOT_RUN, message));
    }
    let paths: Vec<String> = args
        .tooling
        .paths
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    // The callers of the catalog's own test cases are the caller classes;
    // without any, those the proof enumerates from a declared caller schema.
    let schema_classes = match (&checked.catalog, checked.callers.is_empty()) {
        (Some(catalog), true) => crate::catalog::caller_classes::for_catalog(catalog),
        _ => Vec::new(),
    };
    let callers = if schema_classes.is_empty() {
        &checked.callers
    } else {
        &schema_classes
    };
    let review = review::build(&paths, &checked, callers);
    let format = args.format.unwrap_or(match &args.output {
        Some(p) if is_html(p) => ReviewFormat::Html,
        _ => ReviewFormat::Markdown,
    });
    let text = match format {
        ReviewFormat::Markdown => markdown::render(&review, args.max_bytes),
        ReviewFormat::Html => html::render(&review),
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

fn is_html(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"))
}
