//! Rego unit tests (`test_*` rules, as `opa test` runs them) and line
//! coverage of policies, for `regent test`.
//!
//! Rego tests run in one engine that holds every policy, every `*_test.rego`
//! file and the data, so a test can reach any tool's package (usually with
//! `with input as {...}`). Coverage uses regorus' own line coverage: lines
//! are counted the way regorus counts them (expressions in rule values and
//! bodies), and lines of files that no evaluation touched are computed with
//! the same rule from the syntax tree.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::catalog::Tool;
use crate::diag::{Diagnostic, Location};
use crate::policy::budget::{Limits, Scope};
use crate::policy::engine as policy;
use crate::rego::{self, RuleKind};
use crate::source::{FileKind, Source};

/// How one Rego test went.
#[derive(Debug, Clone)]
pub struct RegoTest {
    /// `data.tools.manage_files_test.test_read_is_read_only`
    pub name: String,
    pub location: Location,
    /// `None` when it passed; otherwise why not.
    pub failure: Option<String>,
}

/// Lines covered per policy file.
pub type Covered = BTreeMap<String, BTreeSet<u32>>;

/// An engine with every policy, test and data file; coverage on when asked.
fn test_engine(
    source: &Source,
    limits: Limits,
    coverage: bool,
) -> Result<regorus::Engine, Vec<Diagnostic>> {
    let mut engine = policy::new_engine(limits);
    let mut errors = Vec::new();
    for f in &source.policies {
        if let Err(d) = policy::add_policy(&mut engine, &f.path.to_string_lossy(), &f.text) {
            errors.push(d);
        }
    }
    for d in &source.data {
        if let Err(e) = engine.add_data(regorus::Value::from(d.value.clone())) {
            errors.push(Diagnostic::error(
                "data-conflict",
                Location::new(&d.path, 1, 1),
                format!("cannot merge data file: {}", e.to_string().to_lowercase()),
            ));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    engine.set_enable_coverage(coverage);
    Ok(engine)
}

/// Runs every `test_*` rule whose full name (`data.pkg.test_x`) is
/// `selected`; returns the results and, with `coverage`, the lines the tests
/// evaluated.
pub fn run_tests(
    source: &Source,
    limits: Limits,
    coverage: bool,
    selected: &dyn Fn(&str) -> bool,
) -> Result<(Vec<RegoTest>, Covered), Vec<Diagnostic>> {
    let mut engine = test_engine(source, limits, coverage)?;
    let modules = rego::modules(&mut engine);
    let mut seen = BTreeSet::new();
    let mut tests = Vec::new();
    for d in rego::rule_defs(&modules) {
        if d.kind != RuleKind::Complete || d.path.len() != 1 || !d.name().starts_with("test_") {
            continue;
        }
        let path = crate::rego::generate::rule_ref(&d.package, d.name());
        if !seen.insert(path.clone()) || !selected(&path) {
            continue;
        }
        tests.push((path, d.location.clone()));
    }
    let mut out = Vec::new();
    let mut covered = Covered::new();
    for (path, location) in tests {
        engine.set_input(regorus::Value::new_object());
        let scope = Scope::begin();
        // Through `regorus_eval`, as every evaluation: a stop by regorus'
        // wall-clock timer that the thread's CPU does not confirm is run
        // again (`policy::clock`).
        let result =
            policy::regorus_eval(&mut engine, &scope, &limits, |e| e.eval_rule(path.clone()));
        let late = scope.elapsed() > limits.time;
        drop(scope);
        let failure = match result {
            Ok(_) if late => Some(format!(
                "the test exceeded the policy time limit of {}; raise --policy-timeout-ms if it is meant to be slow",
                crate::policy::clock::limit_text(limits.time)
            )),
            Ok(regorus::Value::Bool(true)) => None,
            Ok(regorus::Value::Undefined) => {
                Some("the test is undefined: some expression in its body did not hold".to_string())
            }
            Ok(v) => Some(format!("the test evaluated to {v}, not true")),
            Err(e) => {
                let at = e
                    .location
                    .unwrap_or_else(|| Location::file(location.file.clone()));
                // Keep what the failed evaluation covered, then start afresh.
                if coverage {
                    merge(&mut covered, &engine);
                    engine = test_engine(source, limits, coverage)?;
                }
                Some(format!("error at {at}: {}", e.message))
            }
        };
        out.push(RegoTest {
            name: path,
            location,
            failure,
        });
    }
    if coverage {
        merge(&mut covered, &engine);
    }
    Ok((out, covered))
}

fn merge(covered: &mut Covered, engine: &regorus::Engine) {
    if let Ok(report) = engine.get_coverage_report() {
        for f in report.files {
            covered.entry(f.path).or_default().extend(f.covered);
        }
    }
}

/// One evaluation [`cover_tool`] covers lines with: a test case's.
pub struct CoverInput {
    pub arguments: Value,
    pub caller: Option<crate::caller::Caller>,
    /// The numbers the case spells by hand (`policy::spelled`), which its
    /// evaluation sees as `serve`'s sees a request's.
    pub spelled: Option<std::sync::Arc<crate::policy::spelled::Spelled>>,
}

/// Evaluates `tool`'s decision on each input (its arguments, asked by its
/// caller, if any, seeing its numbers as spelled) with coverage on, as a
/// request would, and returns the lines covered.
pub fn cover_tool(tool: &Tool, inputs: &[CoverInput]) -> Covered {
    let mut covered = Covered::new();
    // No engine (no policy, or a shed one that cannot be made again):
    // nothing is covered, and the cases' evaluations report the failure.
    let Some(Ok(template)) = tool.engine() else {
        return covered;
    };
    let mut engine = template.clone();
    engine.set_enable_coverage(true);
    let limits = tool.limits();
    for input in inputs {
        let caller = input.caller.as_ref();
        let decided = crate::policy::spelled::with(input.spelled.as_ref(), || {
            tool.evaluate_on(&mut engine, &input.arguments, caller)
        });
        // Listing evaluates `visible` for the caller, without arguments, as
        // `catalog/visibility` does; its lines count as covered too.
        let listed = match tool.visible_rule() {
            Some(step) => {
                engine.set_input(policy::listing_input(&tool.name, caller));
                step.eval(&mut engine, &limits).map(|_| ())
            }
            None => Ok(()),
        };
        if decided.is_err() || listed.is_err() {
            merge(&mut covered, &engine);
            engine = template.clone();
            engine.set_enable_coverage(true);
        }
    }
    merge(&mut covered, &engine);
    covered
}

/// The lines regorus would count in each serving policy file (not tests).
pub fn coverable(source: &Source, limits: Limits) -> BTreeMap<String, BTreeSet<u32>> {
    let mut out = BTreeMap::new();
    for f in source
        .policies
        .iter()
        .filter(|f| f.kind == FileKind::Policy)
    {
        let mut engine = policy::new_engine(limits);
        let path = f.path.to_string_lossy().to_string();
        if policy::add_policy(&mut engine, &path, &f.text).is_ok() {
            let modules = rego::modules(&mut engine);
            if let Some(m) = modules.first() {
                out.insert(path, rego::coverable_lines(m));
            }
        }
    }
    out
}
