//! `regent test`: YAML cases (`*.test.yaml`) resolved as `tools/resolve`
//! would, Rego `test_*` rules as `opa test` runs them, and coverage of both
//! policy lines and YAML mapping rules.
//!
//! This module runs tests and collects results; the case format and its
//! judging are in [`cases`], printing in [`report`], and everything that
//! touches regorus in `analysis::rego_test`.

pub mod cases;
mod numbers;
pub mod report;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::Value;

use crate::analysis::rego_test::{self, RegoTest};
use crate::catalog::{self, BuildOptions};
use crate::diag::{Diagnostic, Location, Outcome};
use crate::source::{Source, files};
use cases::LocatedCase;

/// One case and how it went.
#[derive(Debug, Clone)]
pub struct CaseResult {
    pub case: LocatedCase,
    pub outcome: cases::Outcome,
    /// What resolving the case logged (a failed policy, a failed `visible`
    /// rule), one line each, without time: reported with the case instead
    /// of on stderr, where it came apart from the case and, read after
    /// stdout, after the summary.
    pub log: Vec<String>,
}

/// Collects the log events of code run under it, as text, in place of the
/// process's logger (stderr). The dispatcher is set for the current thread
/// only, around one case at a time, so nothing else's lines are taken.
struct Capture {
    dispatch: tracing::Dispatch,
    buffer: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

/// One write into a [`Capture`]'s buffer.
struct Sink(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Capture {
    fn new() -> Capture {
        let buffer = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = buffer.clone();
        // What the process logs by default (main's `regent=info`), as plain
        // text: the report adds its own colour.
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || Sink(sink.clone()))
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .with_target(false)
            .without_time()
            .finish();
        Capture {
            dispatch: tracing::Dispatch::new(subscriber),
            buffer,
        }
    }

    /// Runs `f`, returning what it returned and the lines it logged.
    fn run<T>(&self, f: impl FnOnce() -> T) -> (T, Vec<String>) {
        let out = tracing::dispatcher::with_default(&self.dispatch, f);
        let mut buffer = self.buffer.lock().unwrap_or_else(|p| p.into_inner());
        let text = String::from_utf8_lossy(&buffer).into_owned();
        buffer.clear();
        (out, text.lines().map(|l| l.trim().to_string()).collect())
    }
}

/// Coverage of one policy file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileCoverage {
    pub path: String,
    pub covered: BTreeSet<u32>,
    pub not_covered: BTreeSet<u32>,
}

/// How often one YAML mapping rule matched in the cases.
#[derive(Debug, Clone)]
pub struct RuleCoverage {
    pub tool: String,
    /// 0-based.
    pub index: usize,
    pub location: Location,
    pub matched: usize,
}

#[derive(Debug, Clone, Default)]
pub struct Coverage {
    pub files: Vec<FileCoverage>,
    pub rules: Vec<RuleCoverage>,
}

/// Everything `regent test` found.
#[derive(Debug, Default)]
pub struct TestReport {
    pub cases: Vec<CaseResult>,
    pub rego: Vec<RegoTest>,
    pub coverage: Option<Coverage>,
    /// Problems that stopped tests from running (a broken catalog or case file).
    pub diagnostics: Vec<Diagnostic>,
    /// Cases that do not parse (a misspelt key, a wrong value), each an
    /// error counted as a failed test; their files' other cases still run.
    pub malformed: Vec<Diagnostic>,
    /// Tests left out by `--run`.
    pub filtered_out: usize,
}

/// What `regent test` runs and measures.
#[derive(Debug, Clone, Default)]
pub struct TestOptions {
    /// Report coverage of policy lines and YAML mapping rules.
    pub coverage: bool,
    /// `--run`: only cases and Rego tests whose name this matches.
    pub filter: Option<regex::Regex>,
}

impl TestOptions {
    /// Whether the test called `name` runs.
    pub fn selects(&self, name: &str) -> bool {
        self.filter.as_ref().is_none_or(|re| re.is_match(name))
    }
}

impl TestReport {
    pub fn passed(&self) -> usize {
        self.cases.iter().filter(|c| c.outcome.passed).count()
            + self.rego.iter().filter(|t| t.failure.is_none()).count()
    }

    /// Failed tests, malformed cases included.
    pub fn failed(&self) -> usize {
        self.cases.len() + self.rego.len() + self.malformed.len() - self.passed()
    }

    /// Clean when every test passed, could not run when the paths could not
    /// be read, errors found otherwise (failures, a broken catalog, or no
    /// tests at all).
    pub fn outcome(&self) -> Outcome {
        Outcome::of(
            &self.diagnostics,
            self.diagnostics.iter().any(Diagnostic::is_error)
                || self.failed() > 0
                || self.cases.len() + self.rego.len() == 0,
        )
    }

    /// The process exit code of [`TestReport::outcome`].
    pub fn exit_code(&self) -> i32 {
        self.outcome().exit_code()
    }
}

/// Runs the tests of the catalog under `paths`.
pub fn run(paths: &[PathBuf], opts: &BuildOptions, test: &TestOptions) -> TestReport {
    let coverage = test.coverage;
    let mut report = TestReport::default();
    match files::discover(paths) {
        Ok(found) => {
            if let Some(d) = files::no_tool_files(paths, &found) {
                report.diagnostics.push(d);
                return report;
            }
        }
        Err(d) => {
            report.diagnostics.push(d);
            return report;
        }
    }
    let mut source = match Source::load(paths) {
        Ok(s) => s,
        Err(d) => {
            report.diagnostics = d.0;
            return report;
        }
    };
    // Upstream tools come from pinned snapshots; nothing is started.
    let imported = source.import_pinned();
    if imported.has_errors() {
        report.diagnostics = imported.0;
        return report;
    }
    let catalog = match catalog::build(&source, opts) {
        Ok(c) => c,
        Err(d) => {
            report.diagnostics = d.0;
            return report;
        }
    };

    let mut all_cases = Vec::new();
    for f in &source.cases {
        match cases::parse(&f.path, &f.text) {
            Ok(parsed) => {
                all_cases.extend(parsed.cases);
                report.malformed.extend(parsed.malformed);
            }
            Err(d) => report.diagnostics.push(d),
        }
    }
    let capture = Capture::new();
    for c in all_cases {
        if !test.selects(&c.title()) {
            report.filtered_out += 1;
            continue;
        }
        if let Some(d) = c.caller_problem(&catalog) {
            report.malformed.push(d);
            continue;
        }
        let (outcome, log) = capture.run(|| cases::run(&catalog, &c.case, c.caller.as_ref()));
        report.cases.push(CaseResult {
            case: c,
            outcome,
            log,
        });
    }

    let rego_filtered = std::cell::Cell::new(0);
    let selected = |name: &str| {
        let keep = test.selects(name);
        if !keep {
            rego_filtered.set(rego_filtered.get() + 1);
        }
        keep
    };
    let ran = rego_test::run_tests(&source, opts.policy_limits, coverage, &selected);
    report.filtered_out += rego_filtered.get();
    let covered = match ran {
        Ok((tests, covered)) => {
            report.rego = tests;
            covered
        }
        Err(ds) => {
            report.diagnostics.extend(ds);
            Default::default()
        }
    };

    if coverage {
        report.coverage = Some(measure(&source, &catalog, &report.cases, covered, opts));
    }
    report
}

fn measure(
    source: &Source,
    catalog: &catalog::Catalog,
    results: &[CaseResult],
    mut covered: rego_test::Covered,
    opts: &BuildOptions,
) -> Coverage {
    let mut inputs: BTreeMap<&str, Vec<rego_test::CoverInput>> = BTreeMap::new();
    let mut matched: BTreeMap<(&str, usize), usize> = BTreeMap::new();
    for r in results {
        let tool = r.case.case.tool.as_str();
        inputs.entry(tool).or_default().push(rego_test::CoverInput {
            arguments: Value::Object(r.case.case.arguments.clone()),
            caller: r.case.caller.clone(),
            // What the case's run saw: a number it spells by hand stops
            // the evaluation there, as in `serve`, so the lines past it
            // are not covered.
            spelled: cases::numbers(&r.case.case, r.case.caller.as_ref()),
        });
        if let Some(i) = r.outcome.mapping {
            *matched.entry((tool, i)).or_default() += 1;
        }
    }
    for (name, args) in &inputs {
        if let Some(tool) = catalog.tool(name) {
            for (path, lines) in rego_test::cover_tool(tool, args) {
                covered.entry(path).or_default().extend(lines);
            }
        }
    }
    let files = rego_test::coverable(source, opts.policy_limits)
        .into_iter()
        .map(|(path, lines)| {
            let hit = covered.get(&path).cloned().unwrap_or_default();
            FileCoverage {
                covered: lines.intersection(&hit).copied().collect(),
                not_covered: lines.difference(&hit).copied().collect(),
                path,
            }
        })
        .collect();
    let mut rules = Vec::new();
    for tool in catalog.tools() {
        for (i, rule) in tool.rules.iter().enumerate() {
            rules.push(RuleCoverage {
                tool: tool.name.clone(),
                index: i,
                location: rule.location.clone(),
                matched: matched.get(&(tool.name.as_str(), i)).copied().unwrap_or(0),
            });
        }
    }
    Coverage { files, rules }
}
