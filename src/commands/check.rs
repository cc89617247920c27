//! `regent check`: validate a catalog without serving it and print the
//! report in the chosen format. What is checked lives in `crate::check`;
//! starting upstreams for `--start-upstreams` (a side effect) is here.

use super::{Failure, build_options, print_stdout};
use crate::check::{self, Started, report};
use crate::cli::{CheckArgs, CheckFormat};
use crate::diag::Style;
use crate::source::Source;
use crate::upstream::{START_TIMEOUT, Upstreams};

pub fn run(args: &CheckArgs) -> Result<i32, Failure> {
    // Whether a policy is too slow, not whether this machine is busy: the
    // time limit counts the evaluating thread's CPU (`policy::clock`).
    crate::policy::clock::count_thread_cpu();
    // A check is one load: freed pages go back as serve's load gives them
    // back (`heap`), which keeps a 10,000-tool check's peak and its page
    // faults down.
    let _loading = crate::heap::loading();
    let opts = build_options(&args.tooling.catalog());
    // Bundles among the paths are opened (and verified) first; each stands
    // in as a directory, and the report names the files inside it.
    let inputs = super::bundle::Inputs::open(
        &args.tooling.paths,
        args.tooling.bundle_public_key.as_deref(),
    )?;
    let started = if args.start_upstreams {
        start_unpinned(&inputs.paths)
    } else {
        Started::default()
    };
    let mut r = check::check_with(&inputs.paths, &opts, &started);
    r.deny_warnings = args.deny_warnings;
    r.all_failures = args.all_failures;
    let code = r.exit_code();
    let text = match args.format {
        CheckFormat::Human => report::human(&r, Style::for_stdout()),
        CheckFormat::Json => pretty(&report::json(&r)),
        CheckFormat::Sarif => pretty(&report::sarif(&r)),
    };
    print_stdout(&inputs.relabel(&text))?;
    Ok(code)
}

/// Starts every upstream that names no pinned snapshot, one at a time,
/// lists its tools and stops it. A catalog that does not load starts
/// nothing (the check reports why); an upstream that fails to start is an
/// error in the report, and the others are still started.
fn start_unpinned(paths: &[std::path::PathBuf]) -> Started {
    let mut started = Started {
        attempted: true,
        ..Started::default()
    };
    let Ok((source, _)) = Source::load_partial(paths) else {
        return started;
    };
    // By index among the declared upstreams: a duplicate name is reported
    // by the load, and only its first declaration is started.
    let mut names = std::collections::BTreeSet::new();
    let unpinned: Vec<usize> = source
        .upstreams()
        .enumerate()
        // One with neither or both of `command` and `url` is reported by
        // the load; there is nothing to start.
        .filter(|(_, (_, _, u))| names.insert(u.name.clone()))
        .filter(|(_, (_, _, u))| u.snapshot.is_none() && u.endpoint().is_some())
        .map(|(i, _)| i)
        .collect();
    if unpinned.is_empty() {
        return started;
    }
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return started;
    };
    for index in unpinned {
        // Each starts alone, in the whole catalog (so that its errors point
        // at its own declaration), and stops before the next.
        match runtime.block_on(Upstreams::start_some(&source, START_TIMEOUT, |i| {
            i == index
        })) {
            Ok(u) => started.snapshots.extend(u.snapshots()),
            Err(d) => started.problems.extend(d.0),
        }
    }
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    started
}

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
}
