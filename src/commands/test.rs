//! `regent test`: run the catalog's YAML cases and Rego tests and print the
//! results. What a test is lives in `crate::testing`.

use super::{Failure, build_options, exit, print_stdout};
use crate::cli::{TestArgs, TestFormat};
use crate::diag::Style;
use crate::testing::{self, report};

pub fn run(args: &TestArgs) -> Result<i32, Failure> {
    // Whether a policy is too slow, not whether this machine is busy: the
    // time limit counts the evaluating thread's CPU (`policy::clock`).
    crate::policy::clock::count_thread_cpu();
    let opts = build_options(&args.tooling.catalog());
    let filter = match &args.run {
        None => None,
        Some(re) => Some(regex::Regex::new(re).map_err(|e| {
            Failure::new(
                exit::CANNOT_RUN,
                format!("error: --run {re:?} is not a valid regular expression: {e}"),
            )
        })?),
    };
    let test = testing::TestOptions {
        coverage: args.coverage,
        filter,
    };
    // Bundles among the paths stand in as directories (see `check`).
    let inputs = super::bundle::Inputs::open(
        &args.tooling.paths,
        args.tooling.bundle_public_key.as_deref(),
    )?;
    let r = testing::run(&inputs.paths, &opts, &test);
    let text = match args.format {
        TestFormat::Human => report::human(&r, Style::for_stdout(), args.verbose),
        TestFormat::Junit => report::junit(&r),
    };
    print_stdout(&inputs.relabel(&text))?;
    // JUnit has no place for coverage; people still want to see it.
    if let (TestFormat::Junit, Some(cov)) = (args.format, &r.coverage) {
        eprint!("{}", inputs.relabel(&report::coverage(cov, Style::plain())));
    }
    Ok(r.exit_code())
}
