//! regent's decisions against OPA's, on every catalog the repository ships.
//!
//! A policy must mean in regent what it means in OPA (issue 27). For each
//! tool with a policy or YAML rules, in every catalog under `examples/`,
//! `tests/cases/` and `tests/opa/corpus/`, this test loads the tool's own
//! engine contents (its modules, the generated mapping module, the data)
//! into OPA's Go engine ([`super::opa::Oracle`]) and evaluates each rule
//! set a request evaluates (the plan, the shadow plan, `visible`) on
//! generated inputs, in regent by the request's own path
//! ([`Tool::eval_steps`]: native or regorus) and in OPA rule by rule. The
//! arguments are `differential`'s: built from the schema, hostile strings,
//! the rules' own constants, callers with claims of any JSON type; only
//! arguments that pass the tool's schema are compared, since no others
//! reach a policy.
//!
//! Each input is sent as a JavaScript client spells its numbers, where
//! that differs as Python's `json.dumps` does, and for every other input
//! with its numbers spelled by hand (`2.50`, `1E2`, `-0`: [`super::opa::hand_text`]),
//! regent evaluating it as a transport would, with the numbers its text
//! spelled by hand (`policy::spelled`); a refusal of those is what regent
//! promises, counted as failing closed, never a construct's difference.
//!
//! A plan's answer is its rules' values, or an error when any rule fails.
//! Four outcomes per input:
//! - the same values, or both failing: agreement;
//! - different values: regent answers what OPA would not (a failure);
//! - regent answers where OPA fails: fail-open (a failure);
//! - regent fails where OPA answers: fail-closed, which the issue allows
//!   only where `check` flags the construct; counted and shown.
//!
//! What counts as the same value: JSON equality, with numbers equal when
//! they are the same number (OPA writes `1.0` as `1`), OPA's number read
//! from the text OPA writes (to 64 bits: `json.marshal(1/3)` is
//! `0.33333333333333333334`) and regent's from the text `serde_json` writes
//! for its double ([`super::opa::same`]); inputs reach OPA as JSON text.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use serde_json::Value;

use super::harness::{Rng, Seeds, arguments, caller, load, shipped_catalogs};
use super::opa::{Answer, Oracle, SKIPPED, client_text, python_text, same};
use crate::analysis::exercise;
use crate::catalog::{BuildOptions, Catalog, build};
use crate::policy::engine as policy;
use crate::policy::spelled;

/// Where the arguments' own text goes in an input sent with numbers spelled
/// by hand.
const HAND_ARGUMENTS: &str = "@@arguments spelled by hand@@";

/// What `policy::spelled`'s refusals say.
const SPELLED_REFUSAL: &str = "the request spelled the number";
use crate::source::Source;

/// Generated inputs per rule set of each tool.
const PER_PLAN: usize = 400;

/// Generated callers per `visible` rule.
const PER_VISIBLE: usize = 100;

/// Examples of each kind of difference kept per tool.
const EXAMPLES: usize = 3;

/// One catalog to compare: its name, the catalog (or why it does not
/// build), and the ways it is known to differ from OPA still.
/// A catalog, its name, the differences it may show, and whether its
/// inputs spelled by hand hold numbers regent cannot hold
/// ([`Construct::lost`]).
type Case = (String, Result<Catalog, String>, Vec<Outcome>, bool);

/// The catalogs compared: those `differential` drives (a case that is
/// meant not to build is left out there), then one per entry of
/// `tests/opa/constructs.yaml`, each of which must build.
fn catalogs(scratch: &Path) -> Vec<Case> {
    let mut out: Vec<Case> = Vec::new();
    for dir in shipped_catalogs() {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        match load(&dir) {
            Some(c) => out.push((name, Ok(c), Vec::new(), false)),
            None => eprintln!("skipped {name}: does not load or build"),
        }
    }
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/opa/constructs.yaml");
    let text = std::fs::read_to_string(&file).expect("tests/opa/constructs.yaml");
    let entries: Vec<Construct> = yaml_serde::from_str(&text).expect("constructs.yaml parses");
    for e in entries {
        let dir = scratch.join(&e.name);
        std::fs::create_dir_all(&dir).unwrap();
        // Untyped arguments; `examples` only give the load's warm-up
        // evaluation arguments the construct accepts.
        let sample = e
            .sample
            .unwrap_or_else(|| serde_json::json!({"a": "a/b", "b": "/", "c": 1}));
        let props: serde_json::Map<String, Value> = ["a", "b", "c"]
            .iter()
            .map(|k| {
                let ex = sample.get(*k).cloned().unwrap_or(Value::Null);
                (k.to_string(), serde_json::json!({"examples": [ex]}))
            })
            .collect();
        let schema = serde_json::json!({"type": "object", "properties": props});
        std::fs::write(
            dir.join("tools.yaml"),
            format!("tools:\n  - name: t\n    policy: tools.t\n    inputSchema: {schema}\n"),
        )
        .unwrap();
        if let Some(data) = &e.data {
            std::fs::write(dir.join("data.json"), data).unwrap();
        }
        std::fs::write(
            dir.join("t.rego"),
            format!("package tools.t\n\nimport rego.v1\n\n{}\n", e.rego),
        )
        .unwrap();
        let name = format!("constructs/{}", e.name);
        let built = Source::load(std::slice::from_ref(&dir))
            .map_err(|d| format!("does not build: {d:?}"))
            .and_then(|s| {
                build(&s, &BuildOptions::default()).map_err(|d| format!("does not build: {d:?}"))
            });
        if let Some(code) = &e.refused {
            // Refused at load, with its code: nothing to compare.
            match built {
                Err(why) if why.contains(&format!("code: {code:?}")) => {}
                Err(why) => out.push((
                    name,
                    Err(format!("refused, but not with {code}: {why}")),
                    vec![],
                    false,
                )),
                Ok(_) => out.push((
                    name,
                    Err(format!("builds, but should be refused with {code}")),
                    vec![],
                    false,
                )),
            }
            continue;
        }
        if e.differs.contains(&Outcome::FailClosed)
            && let Some(why) = unflagged(&dir)
        {
            out.push((format!("{name} (check)"), Err(why), vec![], false));
        }
        out.push((name, built, e.differs, e.lost));
    }
    out
}

/// Why `regent check` does not flag a construct that fails closed where
/// OPA answers, or `None` when it reports a diagnostic in the policy: the
/// issue allows a fail-closed difference only where `check` flags it.
fn unflagged(dir: &Path) -> Option<String> {
    let report = crate::check::check(&[dir.to_path_buf()], &BuildOptions::default());
    let flagged = report
        .diagnostics
        .iter()
        .any(|d| d.location.file.ends_with("t.rego") && d.location.line > 0);
    (!flagged).then(|| {
        format!(
            "fails closed where OPA answers, but `regent check` reports nothing located in its \
             policy (it reported {:?})",
            report
                .diagnostics
                .iter()
                .map(|d| format!("{}: {}", d.code, d.message))
                .collect::<Vec<_>>()
        )
    })
}

/// An entry of `tests/opa/constructs.yaml`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Construct {
    name: String,
    rego: String,
    /// Arguments the construct accepts, for the load's warm-up evaluation
    /// (default `{"a": "a/b", "b": "/", "c": 1}`).
    #[serde(default)]
    sample: Option<Value>,
    /// How regent still differs from OPA on this construct (issue 27): the
    /// test fails on any other difference, and on a listed one that no
    /// longer happens, so the list only shrinks.
    #[serde(default)]
    differs: Vec<Outcome>,
    /// The code of the load error regent refuses the construct with, when
    /// it cannot evaluate it as OPA does (issue 27).
    #[serde(default)]
    refused: Option<String>,
    /// A data file's JSON text, as spelled (`2E0`), beside the policy.
    #[serde(default)]
    data: Option<String>,
    /// Whether its inputs spelled by hand also hold numbers with more
    /// digits than a double (`0.1000000000000000000001`,
    /// `super::opa::hand_text`).
    #[serde(default)]
    lost: bool,
}

/// How one input came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum Outcome {
    Agree,
    /// regent's time limit or memory budget stopped it, by design; OPA,
    /// which has neither, is not asked (it could run out of memory).
    Limited,
    Different,
    FailOpen,
    FailClosed,
    /// regent panicked (regorus' own builtins can).
    Panicked,
}

fn compare(mine: &Result<Vec<Option<Value>>, policy::EvalError>, theirs: &[Answer]) -> Outcome {
    let opa_error = theirs.iter().any(|a| matches!(a, Answer::Error(_)));
    match mine {
        Err(_) if opa_error => Outcome::Agree,
        Err(_) => Outcome::FailClosed,
        Ok(_) if opa_error => Outcome::FailOpen,
        Ok(values) => {
            let equal = values.iter().zip(theirs).all(|(m, t)| match (m, t) {
                (None, Answer::Undefined) => true,
                (Some(m), Answer::Value(t)) => same(m, t),
                _ => false,
            });
            if equal {
                Outcome::Agree
            } else {
                Outcome::Different
            }
        }
    }
}

#[test]
fn every_shipped_policy_answers_as_opa() {
    let Some(mut opa) = Oracle::start() else {
        eprintln!("{SKIPPED}");
        return;
    };
    let started = Instant::now();
    let mut totals: BTreeMap<Outcome, usize> = BTreeMap::new();
    // The outcomes of the inputs spelled as Python writes them, also in
    // `totals`.
    let mut python: BTreeMap<Outcome, usize> = BTreeMap::new();
    // The outcomes of the inputs with numbers spelled by hand, also in
    // `totals`.
    let mut hand: BTreeMap<Outcome, usize> = BTreeMap::new();
    // Of those, refused by `policy::spelled`.
    let mut hand_refused = 0;
    let (mut tools, mut invalid) = (0, 0);
    let mut failures: Vec<String> = Vec::new();
    let scratch = tempfile::tempdir().unwrap();
    for (name, catalog, differs, lost) in catalogs(scratch.path()) {
        let catalog = match catalog {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        for tool in catalog.tools().iter().filter(|t| t.is_resolvable()) {
            tools += 1;
            let engine = tool
                .engine()
                .expect("a resolvable tool has engines")
                .expect("its engine is made");
            if let Err(e) = opa.load_engine(&engine) {
                failures.push(format!("{name}/{}: OPA refuses the policy: {e}", tool.name));
                continue;
            }
            // Each tool's inputs depend on its name alone, so that a change
            // to one catalog does not change what another is compared on.
            let mut rng = Rng(name
                .bytes()
                .chain(tool.name.bytes())
                .fold(0xcbf2_9ce4_8422_2325, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
                }));
            // The hand spellings draw from a generator of their own, so the
            // other inputs stay those compared before they were added.
            let mut hand_rng = Rng(rng.0 ^ 0x6861_6e64);
            let seeds = Seeds::of(tool);
            let samples = exercise::samples(tool);
            let mut counts: BTreeMap<Outcome, usize> = BTreeMap::new();
            let mut examples: BTreeMap<Outcome, Vec<String>> = BTreeMap::new();
            for (what, steps) in tool.plans() {
                let paths: Vec<&str> = steps.iter().map(|s| s.path.as_str()).collect();
                let n = if what == "visible" {
                    PER_VISIBLE
                } else {
                    PER_PLAN
                };
                for i in 0..n {
                    let who = caller(&mut rng, &Seeds::empty());
                    // Each input as a JavaScript client spells its numbers
                    // and, where that differs, as a Python one (issue 27):
                    // OPA keeps the text, regent reads the same text.
                    let mut spellings: Vec<(&str, Option<String>)> = Vec::new();
                    if what == "visible" {
                        spellings.push(("", None));
                    } else {
                        let args = arguments(&mut rng, &seeds, tool, &samples, i);
                        let js = client_text(&args);
                        let py = python_text(&super::opa::as_python_floats(&args));
                        let differs = py != js;
                        // Numbers spelled by hand (`1.50`, `1E2`, `-0`),
                        // every other input: OPA writes them back as
                        // spelled, regent refuses where it would write them
                        // (`policy::spelled`, which the transports apply).
                        let by_hand =
                            (i % 2 == 0).then(|| super::opa::hand_text(&args, &mut hand_rng, lost));
                        if let Some(h) = by_hand.filter(|h| *h != js) {
                            spellings.push(("hand ", Some(h)));
                        }
                        spellings.insert(0, ("", Some(js)));
                        if differs {
                            spellings.push(("python ", Some(py)));
                        }
                    }
                    for (spelled, text) in spellings {
                        let input = match &text {
                            None => policy::listing_input(&tool.name, who.as_ref()),
                            Some(text) => {
                                let args: Value =
                                    serde_json::from_str(text).expect("client text parses");
                                if catalog.validate_partial(&tool.name, &args).is_err() {
                                    invalid += 1;
                                    continue;
                                }
                                if what == "upstream_request" {
                                    // Each method an upstream may send, in turn.
                                    let method = [
                                        "elicitation/create",
                                        "roots/list",
                                        "sampling/createMessage",
                                    ][i % 3];
                                    policy::upstream_request_input(
                                        &tool.name,
                                        &args,
                                        who.as_ref(),
                                        method,
                                        &serde_json::json!({"mode": "form"}),
                                    )
                                } else {
                                    policy::input_as(&tool.name, &args, who.as_ref())
                                }
                            }
                        };
                        let mut json = serde_json::to_value(&input).expect("input is json");
                        // The input's text for OPA: the arguments as they
                        // were spelled (regorus writes an integral float as
                        // an integer, so its input is not written back).
                        let sent = match &text {
                            // The arguments as their text, which no value
                            // holds.
                            Some(text) if spelled == "hand " => {
                                json["arguments"] = Value::from(HAND_ARGUMENTS);
                                client_text(&json).replacen(
                                    &format!("\"{HAND_ARGUMENTS}\""),
                                    text,
                                    1,
                                )
                            }
                            Some(text) if !spelled.is_empty() => {
                                json["arguments"] = serde_json::from_str(text).expect("parses");
                                python_text(&json)
                            }
                            _ => client_text(&json),
                        };
                        // As a transport would: the numbers the request's
                        // text spelled by hand, for its evaluation.
                        let found = text.as_deref().and_then(|t| spelled::scan(t.as_bytes()));
                        let run = std::panic::AssertUnwindSafe(|| {
                            spelled::with(found.as_ref(), || tool.eval_steps(&steps, input))
                        });
                        let Ok(mine) = std::panic::catch_unwind(run) else {
                            *counts.entry(Outcome::Panicked).or_default() += 1;
                            let kept = examples.entry(Outcome::Panicked).or_default();
                            if kept.len() < EXAMPLES {
                                kept.push(format!(
                                    "  {what} {paths:?}\n    {spelled}input: {sent}"
                                ));
                            }
                            continue;
                        };
                        let mine = mine.expect("engines");
                        let (outcome, theirs) = match &mine {
                            Err(e) if crate::policy::errors::limit_hit(&e.message).is_some() => {
                                (Outcome::Limited, Vec::new())
                            }
                            _ => {
                                let theirs = opa.eval_sent(&paths, &sent);
                                (compare(&mine, &theirs), theirs)
                            }
                        };
                        // The refusal of a number spelled by hand is what
                        // regent promises where OPA would answer with its
                        // spelling (`policy::spelled`): counted, not a
                        // difference of the construct.
                        if spelled == "hand "
                            && outcome == Outcome::FailClosed
                            && matches!(&mine, Err(e) if e.message.contains(SPELLED_REFUSAL))
                        {
                            *totals.entry(outcome).or_default() += 1;
                            *hand.entry(outcome).or_default() += 1;
                            hand_refused += 1;
                            continue;
                        }
                        *counts.entry(outcome).or_default() += 1;
                        match spelled {
                            "python " => *python.entry(outcome).or_default() += 1,
                            "hand " => *hand.entry(outcome).or_default() += 1,
                            _ => {}
                        }
                        let kept = examples.entry(outcome).or_default();
                        if outcome > Outcome::Limited && kept.len() < EXAMPLES {
                            kept.push(format!(
                                "  {what} {paths:?}\n    {spelled}input: {sent}\n    regent: {}\n    opa:    {theirs:?}",
                                match &mine {
                                    Ok(v) => format!("{v:?}"),
                                    Err(e) => format!("error: {}", e.message),
                                }
                            ));
                        }
                    }
                }
            }
            let line = counts
                .iter()
                .map(|(o, n)| format!("{o:?} {n}"))
                .collect::<Vec<_>>()
                .join(", ");
            eprintln!("{name}/{}: {line}", tool.name);
            for known in &differs {
                if !counts.contains_key(known) {
                    failures.push(format!(
                        "{name}/{}: no longer {known:?}: remove it from its `differs` in \
                         tests/opa/constructs.yaml",
                        tool.name
                    ));
                }
            }
            for (o, n) in &counts {
                *totals.entry(*o).or_default() += n;
                if *o > Outcome::Limited && !differs.contains(o) {
                    failures.push(format!(
                        "{name}/{}: {o:?} on {n} inputs, e.g.\n{}",
                        tool.name,
                        examples[o].join("\n")
                    ));
                }
            }
        }
    }
    eprintln!(
        "{tools} tools, {invalid} generated arguments refused by their schema, outcomes {totals:?} \
         (of which spelled as Python writes numbers: {python:?}; with numbers spelled by hand: \
         {hand:?}, {hand_refused} of them refused for the spelling), in {:?}",
        started.elapsed()
    );
    assert!(
        totals.get(&Outcome::Agree).copied().unwrap_or(0) > 10_000,
        "too little was compared: {totals:?}"
    );
    assert!(
        failures.is_empty(),
        "regent and OPA differ:\n{}",
        failures.join("\n")
    );
}

#[test]
fn numbers_are_the_same_whatever_their_spelling() {
    use serde_json::json;
    assert!(same(&json!(1), &json!(1.0)));
    assert!(same(&json!({"a": [1, 2.5]}), &json!({"a": [1.0, 2.5]})));
    assert!(!same(&json!(1), &json!(2)));
    assert!(!same(&json!([1]), &json!([1, 1])));
    assert!(!same(&json!("1"), &json!(1)));
}
