//! `regent check`: validate a catalog without serving it and print the
//! report in the chosen format. What is checked lives in `crate::check`.

use super::{Failure, build_options, print_stdout};
use crate::check::{self, report};
use crate::cli::{CheckArgs, CheckFormat};
use crate::diag::Style;

pub fn run(args: &CheckArgs) -> Result<i32, Failure> {
    let opts = build_options(&args.tooling.catalog());
    let mut r = check::check(&args.tooling.paths, &opts);
    r.deny_warnings = args.deny_warnings;
    let code = r.exit_code();
    let text = match args.format {
        CheckFormat::Human => report::human(&r, Style::for_stdout()),
        CheckFormat::Json => pretty(&report::json(&r)),
        CheckFormat::Sarif => pretty(&report::sarif(&r)),
    };
    print_stdout(&text)?;
    Ok(code)
}

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
}
