//! `regent check`: everything that can be known about a catalog without
//! serving it, gathered into one [`Report`].
//!
//! The checks run in layers and each layer goes as far as the previous one
//! allows: files that do not parse are reported and the rest are still
//! compiled; tools that do not compile are reported and the rest are still
//! linted, exercised and proved. Finding problems is the job of `source`,
//! `catalog` (including `rego`, `exercise` and `proof`) and
//! [`published_schema`]; this module decides what to run and turns their
//! findings into located diagnostics (those of the proof and of failing
//! decisions in `proof_diag`). Printing is in [`report`].

pub mod on_load;
mod proof_diag;
pub mod published_schema;
pub mod report;
pub mod upstream;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::analysis::exercise;
use crate::analysis::proof::{self, Outcome, Proof};
use crate::catalog::{self, BuildOptions, Catalog, Tool};
use crate::diag::{self, Diagnostic};
use crate::policy::engine as policy;
use crate::rego;
use crate::source::{FileKind, Source, files};
use proof_diag::{counterexample, failure, proof_diagnostics};

/// Everything `regent check` found.
#[derive(Debug, Default)]
pub struct Report {
    pub diagnostics: Vec<Diagnostic>,
    pub proofs: Vec<Proof>,
    /// Catalog files read.
    pub files: usize,
    /// Tools declared (whether or not they compiled).
    pub tools: usize,
    /// `--deny-warnings`: warnings fail the check as errors do.
    pub deny_warnings: bool,
    /// Which of `diagnostics` are failing decisions (a resolution a client
    /// would get -32603 for), by index, with the tool they are of. The
    /// human report shows [`SHOWN_FAILURES`] of them per tool unless
    /// `all_failures`; JSON and SARIF carry every one.
    pub failing_decisions: BTreeMap<usize, String>,
    /// `--all-failures`: the human report shows every failing decision.
    pub all_failures: bool,
}

/// How many distinct failing decisions of one tool the human report shows
/// before it says how many more there are (`--all-failures` shows them). A
/// few locate the problem; a screenful of them buries everything else.
pub const SHOWN_FAILURES: usize = 3;

impl Report {
    pub fn errors(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.is_error()).count()
    }

    pub fn warnings(&self) -> usize {
        self.diagnostics.len() - self.errors()
    }

    /// Whether the warnings found make the check fail (`--deny-warnings`).
    pub fn warnings_fail(&self) -> bool {
        self.deny_warnings && self.warnings() > 0
    }

    /// Clean (warnings allowed unless `--deny-warnings`), errors found, or
    /// could not run.
    pub fn outcome(&self) -> diag::Outcome {
        diag::Outcome::of(&self.diagnostics, self.errors() > 0 || self.warnings_fail())
    }

    /// The process exit code of [`Report::outcome`].
    pub fn exit_code(&self) -> i32 {
        self.outcome().exit_code()
    }
}

/// What `tool`'s `run:` needs from a machine ([`catalog::run::Probe`]) and
/// does not find on this one: a program missing from its path or from `PATH`,
/// an HTTP base that is unset, unreadable or unusable. Warnings, since the
/// machine that serves may differ; there, a call without them fails closed.
/// The catalog build records these and never looks.
pub fn environment(tool: &Tool) -> Vec<Diagnostic> {
    use crate::catalog::run::Need;
    use crate::run_plan::cli::{Program, find_in_path};
    tool.probes
        .iter()
        .filter_map(|p| match &p.need {
            Need::Program(Program::Path(path)) => (!path.is_file()).then(|| {
                Diagnostic::warning(
                    "program-not-found",
                    p.at.clone(),
                    format!("program {} does not exist (yet)", path.display()),
                )
                .with_help("calls fail until it exists; relative paths are relative to the tool file")
            }),
            Need::Program(Program::Search(name)) => find_in_path(name).is_none().then(|| {
                Diagnostic::warning(
                    "program-not-found",
                    p.at.clone(),
                    format!("program `{name}` is not in regent's PATH"),
                )
                .with_help("calls fail until it is installed; regent looks it up again at each call")
            }),
            Need::Base(base) => base.resolve().err().map(|why| {
                Diagnostic::warning("bad-base", p.at.clone(), why).with_help(
                    "calls fail until it is set to an absolute http(s) url; regent reads it at each call, or give `default:`",
                )
            }),
        })
        .collect()
}

/// Checks the catalog under `paths`.
pub fn check(paths: &[PathBuf], opts: &BuildOptions) -> Report {
    check_with(paths, opts, &Started::default())
}

/// Upstreams started for the check (`check --start-upstreams`): what each
/// listed, by name, and the problems starting them.
#[derive(Debug, Default)]
pub struct Started {
    /// Whether upstreams without a pin were started at all; when they were,
    /// each has either its snapshot here or a problem.
    pub attempted: bool,
    pub snapshots: BTreeMap<String, crate::source::upstream::Snapshot>,
    pub problems: Vec<Diagnostic>,
}

/// Checks the catalog under `paths`, with the tools of upstreams that name
/// no pinned snapshot taken from `started`.
pub fn check_with(paths: &[PathBuf], opts: &BuildOptions, started: &Started) -> Report {
    check_keeping(paths, opts, started).report
}

/// What [`check_keeping`] ran, kept for a command that reads the catalog
/// further (`review` tabulates its decisions): the report, the catalog
/// check built (with `keep_riskier_rules`, so a riskier rule shows where it
/// applies), the arguments sampled for each tool the proof does not cover,
/// the distinct callers of the catalog's own test cases and their arguments.
#[derive(Default)]
pub struct Checked {
    pub report: Report,
    /// `None` when the catalog's files could not be found or read.
    pub catalog: Option<Catalog>,
    /// By tool name, for tools whose proof is `NotCovered`.
    pub sampled: BTreeMap<String, Vec<Value>>,
    pub callers: Vec<crate::caller::Caller>,
    /// By tool name, the arguments of the catalog's own test cases.
    pub cases: BTreeMap<String, Vec<Value>>,
}

/// As [`check_with`], keeping what it built and sampled ([`Checked`]).
pub fn check_keeping(paths: &[PathBuf], opts: &BuildOptions, started: &Started) -> Checked {
    let mut checked = Checked::default();
    let report = &mut checked.report;
    let found = match files::discover(paths) {
        Ok(f) => f,
        Err(d) => {
            report.diagnostics.push(d);
            return checked;
        }
    };
    report.files = found.len();
    if let Some(d) = files::no_tool_files(paths, &found) {
        report.diagnostics.push(d);
        return checked;
    }
    let (mut source, diags) = match Source::load_partial(paths) {
        Ok(x) => x,
        Err(d) => {
            report.diagnostics.push(d);
            return checked;
        }
    };
    let mut out = diags.0;
    // Upstream tools are known from pinned snapshots; check never starts an
    // upstream (see `upstream`).
    out.extend(source.import_pinned_or(&started.snapshots).0);
    out.extend(started.problems.iter().cloned());
    out.extend(upstream::findings(&source, started.attempted));

    let build_opts = BuildOptions {
        keep_riskier_rules: true,
        ..opts.clone()
    };
    let (catalog, diags) = catalog::build_partial(&source, &build_opts);
    out.extend(diags.0);
    report.tools = source.tools().count();

    // The published schema, over every tool file including those serde
    // refused; merged after the build so that a finding both make is told once.
    let tool_files: Vec<_> = found
        .iter()
        .filter(|(_, k)| *k == FileKind::Tools)
        .collect();
    let schema_diags = crate::par::map_ordered(&tool_files, 8, |(path, kind)| {
        files::read(path, *kind)
            .map(|file| published_schema::check_file(path, &file.text))
            .unwrap_or_default()
    });
    merge_schema_diagnostics(&mut out, schema_diags.into_iter().flatten().collect());

    let cases = case_arguments(&source);
    let callers = case_callers(&source);
    // Each failing decision, by what tells it apart after `dedupe`, with
    // its tool (the first, when two tools fail at one spot alike).
    let mut failing: BTreeMap<(&'static str, String, String), String> = BTreeMap::new();
    let tools: Vec<&Tool> = catalog.tools().iter().collect();
    let (all, catalog_wide) = run_catalog(&source, &catalog, &tools, &cases, &callers);
    out.extend(catalog_wide);
    for (tool, found) in tools.into_iter().zip(all) {
        // What `run:` needs from this machine: warnings only, so not part
        // of what `serve`'s load check runs too.
        out.extend(environment(tool));
        for &i in &found.failing {
            failing
                .entry(failure_key(&found.diagnostics[i]))
                .or_insert_with(|| tool.name.clone());
        }
        out.extend(found.diagnostics);
        report.proofs.extend(found.proof);
        if let Some(s) = found.sampled {
            checked.sampled.insert(tool.name.clone(), s);
        }
    }

    report.diagnostics = dedupe(out);
    report.failing_decisions = report
        .diagnostics
        .iter()
        .enumerate()
        .filter_map(|(i, d)| Some((i, failing.get(&failure_key(d))?.clone())))
        .collect();
    checked.catalog = Some(catalog);
    checked.callers = callers;
    checked.cases = cases;
    checked
}

/// `tools` run ([`tool_findings`], over the cores, in `tools`' order)
/// beside the catalog-wide analyses (the lints, the Rego test files'
/// parse errors): what `check` and `serve`'s load check ([`on_load`]) both
/// run, in one place. The lints read every policy and nothing of the runs,
/// so they fill the cores the runs' threads leave idle (`par::join`)
/// instead of waiting for them. A tool run here lets go of an engine made
/// again for the run (`Tool::release_engine`): a catalog of thousands
/// would otherwise end up holding all.
fn run_catalog(
    source: &Source,
    catalog: &Catalog,
    tools: &[&Tool],
    cases: &BTreeMap<String, Vec<Value>>,
    callers: &[crate::caller::Caller],
) -> (Vec<Findings>, Vec<Diagnostic>) {
    crate::par::join(
        || {
            // A tool is run in milliseconds; a few per thread already pay.
            crate::par::map_ordered(tools, 4, |tool| {
                let found = tool_findings(source, catalog, tool, cases, callers);
                tool.release_engine();
                found
            })
        },
        || {
            let mut found = lint_policies(source, catalog);
            found.extend(test_file_errors(source));
            found
        },
    )
}

/// What tells one failing decision apart in a report.
fn failure_key(d: &Diagnostic) -> (&'static str, String, String) {
    (d.code, d.location.to_string(), d.message.clone())
}

/// What [`tool_findings`] found about one tool.
struct Findings {
    diagnostics: Vec<Diagnostic>,
    /// The worst-case proof; none for a tool without anything to resolve.
    proof: Option<Proof>,
    /// Which of `diagnostics` are failing decisions (the proof's and the
    /// samples' resolutions that fail), by index.
    failing: Vec<usize>,
    /// The arguments sampled when the proof does not cover the tool.
    sampled: Option<Vec<Value>>,
}

/// What `check` finds about one tool by running it: its `visible` and
/// `upstream_request` rules, its rules exercised on samples
/// (schema-generated, the catalog's own test cases, the proof's
/// combinations), and the worst-case proof, which a tool without anything
/// to resolve has none of.
fn tool_findings(
    source: &Source,
    catalog: &Catalog,
    tool: &Tool,
    cases: &BTreeMap<String, Vec<Value>>,
    callers: &[crate::caller::Caller],
) -> Findings {
    let mut out = Vec::new();
    let mut failing = Vec::new();
    // Where each rule named by a failure is: every failure is reported
    // (issue 31), and looking a rule up reads the engine's modules.
    let mut rules = BTreeMap::new();
    if tool.has_visible_rule() {
        out.extend(visible_failure(tool, callers));
    }
    if tool.has_upstream_request_rule() {
        out.extend(upstream_request_failure(tool));
    }
    if !tool.is_resolvable() {
        return Findings {
            diagnostics: out,
            proof: None,
            failing,
            sampled: None,
        };
    }
    let mut proof = proof::prove(catalog, tool);
    // The catalog's own test cases for this tool, those inputSchema
    // accepts (a case may test a refusal on purpose): whole, and each
    // argument's value for sampling.
    let own: Vec<Value> = cases
        .get(&tool.name)
        .into_iter()
        .flatten()
        .filter(|a| tool.validate_complete(a).is_empty())
        .cloned()
        .collect();
    let mut per_argument: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for a in &own {
        for (k, v) in a.as_object().into_iter().flatten() {
            let e = per_argument.entry(k.clone()).or_default();
            if !e.contains(v) {
                e.push(v.clone());
            }
        }
    }
    let generated = exercise::samples(tool);
    let total = generated.len();
    let checked = exercise::validated(tool, generated);
    if let Some(example) = checked.rejected.first() {
        out.push(
            Diagnostic::warning(
                "samples-rejected",
                tool.location.clone(),
                format!(
                    "inputSchema refused {} of the {total} sample arguments generated for `{}`, such as {example}, so its rules were not exercised on them",
                    checked.rejected.len(),
                    tool.name
                ),
            )
            .with_help("regent cannot generate values for some keyword of this schema; give those arguments a `default` or `examples` that inputSchema accepts"),
        );
    }
    let mut samples = checked.valid;
    for a in own {
        if !samples.contains(&a) {
            samples.push(a);
        }
    }
    if proof.combinations > 0
        && proof.combinations <= 512
        && let Ok(combos) = proof::proof_combinations(tool, &proof)
    {
        for c in combos {
            if !samples.contains(&c) {
                samples.push(c);
            }
        }
    }
    out.extend(exercise::exercise(tool, &samples));
    let mut sampled_args = None;
    if let Outcome::NotCovered { .. } = proof.outcome {
        // Literal-directed candidates, reached or not, are good samples.
        for (k, r) in &proof.reached {
            let e = per_argument.entry(k.clone()).or_default();
            for c in &r.candidates {
                let v = Value::String(c.clone());
                if !e.contains(&v) {
                    e.push(v);
                }
            }
        }
        let mut sampled = proof::finite_part(tool, &per_argument);
        for s in &samples {
            if !sampled.contains(s) {
                sampled.push(s.clone());
            }
        }
        let found = proof::sample(catalog, tool, &sampled);
        for c in &found.counterexamples {
            out.push(counterexample(
                source,
                catalog,
                tool,
                c,
                " (found by sampling; the proof does not cover this tool)",
            ));
        }
        for f in &found.failures {
            failing.push(out.len());
            out.push(failure(tool, f, &mut rules));
        }
        proof.sampled = Some(found);
        sampled_args = Some(sampled);
    } else {
        // The proof covers the hints; the other contract rules (`deny`,
        // `confirm`, `meta`) may still fail on arguments it did not
        // vary, which a client would get as -32603.
        for f in &proof::sample(catalog, tool, &samples).failures {
            failing.push(out.len());
            out.push(failure(tool, f, &mut rules));
        }
    }
    if let Outcome::Refuted { failures, .. } = &proof.outcome {
        for f in failures {
            failing.push(out.len());
            out.push(failure(tool, f, &mut rules));
        }
    }
    out.extend(proof_diagnostics(source, catalog, tool, &proof));

    Findings {
        diagnostics: out,
        proof: Some(proof),
        failing,
        sampled: sampled_args,
    }
}

/// The arguments of every `regent test` case in the catalog, by tool. Case
/// files that do not parse are `regent test`'s to report.
fn case_arguments(source: &Source) -> BTreeMap<String, Vec<Value>> {
    let mut out: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for f in &source.cases {
        let Ok(cases) = crate::testing::cases::parse(&f.path, &f.text) else {
            continue;
        };
        for c in cases.cases {
            out.entry(c.case.tool)
                .or_default()
                .push(Value::Object(c.case.arguments));
        }
    }
    out
}

/// The callers of every `regent test` case in the catalog, distinct.
fn case_callers(source: &Source) -> Vec<crate::caller::Caller> {
    let mut out: Vec<crate::caller::Caller> = Vec::new();
    for f in &source.cases {
        let Ok(cases) = crate::testing::cases::parse(&f.path, &f.text) else {
            continue;
        };
        for c in cases.cases.into_iter().filter_map(|c| c.caller) {
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

/// The first failure of a `visible` rule (an error or a value that is not a
/// boolean), without a caller, then for each caller of the catalog's own
/// test cases: the tool would be hidden from that caller (and the failure
/// logged) on every `tools/list`.
fn visible_failure(
    tool: &crate::catalog::Tool,
    callers: &[crate::caller::Caller],
) -> Option<Diagnostic> {
    use crate::catalog::visibility::Verdict;
    let pkg = tool.policy.as_deref().unwrap_or("");
    for caller in std::iter::once(None).chain(callers.iter().map(Some)) {
        let Verdict::Failed {
            message,
            timed_out: false,
        } = tool.visibility(caller)
        else {
            continue;
        };
        let who = match caller {
            Some(c) => format!("for caller {} ({})", c.subject, c.issuer),
            None => "without a caller".to_string(),
        };
        let location = tool
            .rule_location(&format!("{pkg}.visible"))
            .unwrap_or_else(|| tool.location.clone());
        return Some(
            Diagnostic::error(
                "visible-failed",
                location,
                format!("the visible rule of `{}` fails {who}: {message}", tool.name),
            )
            .with_help("a failing `visible` hides the tool from that caller and logs an error on every listing; make it true or false (`default visible := false`)"),
        );
    }
    None
}

/// The first failure of an `upstream_request` rule (an error, or a value
/// other than `"relay"` and `"refuse"`) on the tool's sample arguments, for
/// each method an upstream may send: every such request of the upstream
/// would be refused, whatever the rule meant.
fn upstream_request_failure(tool: &crate::catalog::Tool) -> Option<Diagnostic> {
    use crate::catalog::upstream_request::RequestDecision;
    let pkg = tool.policy.as_deref().unwrap_or("");
    let args = crate::catalog::schema::sample(&tool.input_schema);
    for method in ["elicitation/create", "roots/list", "sampling/createMessage"] {
        let RequestDecision::Failed(message) =
            tool.upstream_request(&args, None, method, &serde_json::json!({}))
        else {
            continue;
        };
        let location = tool
            .rule_location(&format!("{pkg}.upstream_request"))
            .unwrap_or_else(|| tool.location.clone());
        return Some(
            Diagnostic::error(
                "upstream-request-failed",
                location,
                format!(
                    "the upstream_request rule of `{}` fails on `{method}` with the sample arguments: {message}",
                    tool.name
                ),
            )
            .with_help("a failing `upstream_request` refuses the upstream's request (fail closed); make it \"relay\" or \"refuse\", or leave it undefined for the default"),
        );
    }
    None
}

/// Rego tests are loaded only by `regent test`, but a parse error in one is
/// still a broken catalog.
fn test_file_errors(source: &Source) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for f in source
        .policies
        .iter()
        .filter(|f| f.kind == FileKind::PolicyTest)
    {
        let mut scratch = policy::parse_engine();
        if let Err(d) = policy::add_policy(&mut scratch, &f.path.to_string_lossy(), &f.text) {
            out.push(d);
        }
    }
    out
}

/// Lints every serving policy (packages of all tools side by side), and
/// flags rules in a tool's package that would change its identity. The
/// modules are those the build of `catalog` parsed (every file that parsed,
/// in the files' order), taken from it; parsed here only if already taken.
fn lint_policies(source: &Source, catalog: &Catalog) -> Vec<Diagnostic> {
    let modules = catalog
        .take_policy_modules()
        .unwrap_or_else(|| parse_policy_modules(source));
    let packages: BTreeSet<&str> = source
        .tools()
        .filter_map(|(_, _, t)| t.policy.as_deref())
        .collect();
    // Two passes over every module, independent: side by side. The
    // identity rules in all packages in one pass: one per tool would be
    // quadratic.
    let (mut out, identity) = crate::par::join(
        || rego::lint(&modules),
        || rego::identity_rules(&modules, &packages),
    );
    out.extend(identity);
    out
}

/// Every serving policy file's module, parsed as the build parses them:
/// each file on its own over the cores, in the files' order, those that do
/// not parse left out (the build reported them).
fn parse_policy_modules(source: &Source) -> Vec<rego::PolicyModule> {
    let files: Vec<_> = source
        .policies
        .iter()
        .filter(|f| f.kind == FileKind::Policy)
        .collect();
    crate::par::map_ordered(&files, 32, |f| {
        let mut engine = policy::parse_engine();
        let _ = policy::add_policy(&mut engine, &f.path.to_string_lossy(), &f.text);
        rego::modules(&mut engine)
    })
    .into_iter()
    .flatten()
    .collect()
}

/// A schema finding and a serde finding on the same line say the same thing;
/// keep serde's (it suggests the near key) unless the schema one is more
/// specific (a rule that tries to change the tool's identity).
fn merge_schema_diagnostics(out: &mut Vec<Diagnostic>, schema: Vec<Diagnostic>) {
    for d in schema {
        let same_line = |o: &Diagnostic| {
            o.location.file == d.location.file && o.location.line == d.location.line
        };
        if d.code == "changes-identity" {
            out.retain(|o| {
                !(same_line(o) && o.code.starts_with("yaml")
                    || same_line(o) && o.code == "unknown-key")
            });
            out.push(d);
        } else if !out.iter().any(same_line) {
            out.push(d);
        }
    }
}

fn dedupe(mut ds: Vec<Diagnostic>) -> Vec<Diagnostic> {
    ds.sort_by(|a, b| {
        (
            &a.location.file,
            a.location.line,
            a.location.column,
            b.severity,
            a.code,
            &a.message,
        )
            .cmp(&(
                &b.location.file,
                b.location.line,
                b.location.column,
                a.severity,
                b.code,
                &b.message,
            ))
    });
    // A lint finding says more than the evaluation failure it explains
    // (regorus may point at another column of the same line).
    let line_of = |d: &Diagnostic| (d.location.file.clone(), d.location.line);
    let linted: BTreeSet<_> = ds
        .iter()
        .filter(|d| d.code.starts_with("rego-"))
        .map(line_of)
        .collect();
    ds.retain(|d| d.code != "policy-eval" || !linted.contains(&line_of(d)));
    // An undefined argument is an error at the reference; the proof's
    // warning about the same argument says less.
    let undefined: BTreeSet<_> = ds
        .iter()
        .filter(|d| d.code == "rego-undefined-input")
        .map(line_of)
        .collect();
    ds.retain(|d| d.code != "proof-not-covered" || !undefined.contains(&line_of(d)));
    let mut seen = BTreeSet::new();
    ds.retain(|d| {
        // Two evaluations failing at one spot are one problem.
        let key = if matches!(d.code, "policy-eval" | "rego-conflict") {
            (d.code.to_string(), d.location.to_string(), String::new())
        } else {
            (
                d.code.to_string(),
                d.location.to_string(),
                d.message.clone(),
            )
        };
        seen.insert(key)
    });
    ds
}
