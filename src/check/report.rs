//! Printing a check [`Report`]: for people (rustc style, coloured on a
//! terminal), as JSON for machines (the stable shape documented in
//! docs/policy-tooling.md), and as SARIF 2.1.0 for code-scanning in CI.
//! People see a few failing decisions per tool and how many more there
//! are; JSON and SARIF carry every diagnostic.

use serde_json::{Map, Value, json};

use std::collections::BTreeMap;

use super::{Report, SHOWN_FAILURES};
use crate::analysis::proof::{Outcome, Proof};
use crate::diag::{Diagnostic, Style};

/// The version of the JSON shape; bumped only when a field changes meaning
/// or disappears (new fields may appear at any time).
pub const JSON_VERSION: u32 = 1;

/// The report for a terminal.
pub fn human(r: &Report, style: Style) -> String {
    let mut out = String::new();
    // The first `SHOWN_FAILURES` failing decisions of each tool, then one
    // line saying how many more (unless `--all-failures`). The counts and
    // the exit code are every one's.
    let mut total: BTreeMap<&str, usize> = BTreeMap::new();
    for tool in r.failing_decisions.values() {
        *total.entry(tool).or_default() += 1;
    }
    let mut shown: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, d) in r.diagnostics.iter().enumerate() {
        let tool = r.failing_decisions.get(&i).map(String::as_str);
        if let Some(tool) = tool
            && !r.all_failures
        {
            let n = shown.entry(tool).or_default();
            *n += 1;
            if *n > SHOWN_FAILURES {
                continue;
            }
        }
        out.push_str(&d.render_styled(style));
        out.push('\n');
        if let Some(tool) = tool
            && !r.all_failures
            && shown[tool] == SHOWN_FAILURES
            && total[tool] > SHOWN_FAILURES
        {
            let more = total[tool] - SHOWN_FAILURES;
            out.push_str(&format!(
                "and {more} more failing decision{} for `{tool}` (use --all-failures to see them)\n\n",
                plural(more)
            ));
        }
    }
    for p in &r.proofs {
        if let Outcome::Proved { .. } = p.outcome {
            let args = if p.arguments.is_empty() {
                "no arguments".to_string()
            } else {
                p.arguments
                    .iter()
                    .map(|a| format!("`{a}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let partitions = if p.partitions.is_empty() {
                String::new()
            } else {
                format!(
                    " (partitioned {})",
                    p.partitions
                        .values()
                        .map(|x| x.describe())
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            };
            let reached = if p.by_reach() {
                format!(
                    " (literal-directed, reached but not partitioned: {})",
                    p.reached_text()
                )
            } else {
                String::new()
            };
            let args = match &p.callers {
                Some(c) => format!("{args} and {}", c.describe()),
                None => args,
            };
            out.push_str(&format!(
                "{} `{}`: all {} combination{} of {args} resolve no riskier than listed{partitions}{reached}\n",
                style.green("proved"),
                p.tool,
                p.combinations,
                if p.combinations == 1 { "" } else { "s" }
            ));
        }
    }
    let (e, w) = (r.errors(), r.warnings());
    let mut summary = format!(
        "checked {} file{} and {} tool{}: {e} error{}, {w} warning{}",
        r.files,
        plural(r.files),
        r.tools,
        plural(r.tools),
        plural(e),
        plural(w)
    );
    if r.warnings_fail() {
        summary.push_str(" (--deny-warnings: warnings fail the check)");
    }
    out.push_str(&if e > 0 || r.warnings_fail() {
        style.red(&summary)
    } else if w > 0 {
        style.yellow(&summary)
    } else {
        style.green(&summary)
    });
    out.push('\n');
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn diagnostic_json(d: &Diagnostic) -> Value {
    json!({
        "severity": d.severity.as_str(),
        "code": d.code,
        "message": d.message,
        "help": d.help,
        "location": {
            "file": d.location.file.to_string_lossy(),
            "line": d.location.line,
            "column": d.location.column,
        },
    })
}

fn hints_json(h: &crate::catalog::Hints) -> Value {
    Value::Object(h.to_json())
}

fn proof_json(p: &Proof) -> Value {
    let mut m = Map::new();
    m.insert("tool".into(), json!(p.tool));
    m.insert("arguments".into(), json!(p.arguments));
    m.insert("combinations".into(), json!(p.combinations));
    m.insert("evaluated".into(), json!(p.evaluated));
    if !p.partitions.is_empty() {
        m.insert(
            "partitions".into(),
            Value::Array(p.partitions.values().map(|x| x.to_json()).collect()),
        );
    }
    if let Some(c) = &p.callers {
        m.insert("callerClasses".into(), c.to_json());
    }
    if !p.reached.is_empty() {
        m.insert(
            "literalDirected".into(),
            Value::Array(p.reached.values().map(|x| x.to_json()).collect()),
        );
    }
    match &p.outcome {
        Outcome::Proved { tightest } => {
            m.insert("status".into(), json!("proved"));
            if p.by_reach() {
                m.insert("by".into(), json!("reach"));
            }
            m.insert("tightest".into(), hints_json(tightest));
        }
        Outcome::Refuted {
            counterexamples,
            failures,
        } => {
            m.insert("status".into(), json!("refuted"));
            m.insert(
                "counterexamples".into(),
                Value::Array(
                    counterexamples
                        .iter()
                        .map(|c| {
                            let mut j = json!({
                                "arguments": c.arguments,
                                "hint": c.hint.key(),
                                "listed": c.listed,
                                "resolved": c.resolved,
                                "count": c.count,
                            });
                            // `caller` only when the proof enumerated
                            // caller classes (`null`: no caller).
                            if let (Some(caller), Value::Object(m)) = (&c.caller, &mut j) {
                                m.insert(
                                    "caller".into(),
                                    crate::analysis::proof::caller_json(caller.as_ref()),
                                );
                            }
                            j
                        })
                        .collect(),
                ),
            );
            m.insert(
                "failures".into(),
                Value::Array(
                    failures
                        .iter()
                        .map(|f| {
                            let mut j = json!({"arguments": f.arguments, "message": f.message, "location": f.location});
                            if let (Some(caller), Value::Object(m)) = (&f.caller, &mut j) {
                                m.insert(
                                    "caller".into(),
                                    crate::analysis::proof::caller_json(caller.as_ref()),
                                );
                            }
                            j
                        })
                        .collect(),
                ),
            );
        }
        Outcome::Partial { rejected, example } => {
            m.insert("status".into(), json!("partial"));
            m.insert("rejected".into(), json!(rejected));
            m.insert("rejectedExample".into(), example.clone());
        }
        Outcome::NotCovered { reason, .. } => {
            m.insert("status".into(), json!("not-covered"));
            m.insert("reason".into(), json!(reason));
            if let Some(s) = &p.sampled {
                m.insert(
                    "sampled".into(),
                    json!({"combinations": s.evaluated + s.rejected, "rejected": s.rejected}),
                );
            }
        }
    }
    Value::Object(m)
}

/// The stable JSON shape (version [`JSON_VERSION`]).
pub fn json(r: &Report) -> Value {
    json!({
        "version": JSON_VERSION,
        "ok": r.errors() == 0 && !r.warnings_fail(),
        "exitCode": r.exit_code(),
        "summary": {
            "files": r.files,
            "tools": r.tools,
            "errors": r.errors(),
            "warnings": r.warnings(),
        },
        "diagnostics": r.diagnostics.iter().map(diagnostic_json).collect::<Vec<_>>(),
        "proofs": r.proofs.iter().map(proof_json).collect::<Vec<_>>(),
    })
}

/// SARIF 2.1.0, one run, one rule per diagnostic code.
pub fn sarif(r: &Report) -> Value {
    let mut codes: Vec<&str> = r.diagnostics.iter().map(|d| d.code).collect();
    codes.sort();
    codes.dedup();
    let rules: Vec<Value> = codes
        .iter()
        .map(|c| {
            json!({
                "id": c,
                "name": c,
                "shortDescription": {"text": describe(c)},
            })
        })
        .collect();
    let results: Vec<Value> = r
        .diagnostics
        .iter()
        .map(|d| {
            let text = match &d.help {
                Some(h) => format!("{}\nhelp: {h}", d.message),
                None => d.message.clone(),
            };
            let mut physical = Map::new();
            physical.insert(
                "artifactLocation".into(),
                json!({"uri": uri(&d.location.file)}),
            );
            if d.location.line > 0 {
                let mut region = Map::new();
                region.insert("startLine".into(), json!(d.location.line));
                if d.location.column > 0 {
                    region.insert("startColumn".into(), json!(d.location.column));
                }
                physical.insert("region".into(), Value::Object(region));
            }
            json!({
                "ruleId": d.code,
                "ruleIndex": codes.iter().position(|c| *c == d.code).unwrap_or(0),
                "level": if d.is_error() { "error" } else { "warning" },
                "message": {"text": text},
                "locations": [{"physicalLocation": Value::Object(physical)}],
            })
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "regent",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "results": results,
        }],
    })
}

/// A relative path with forward slashes, as SARIF's `uri` wants.
fn uri(path: &std::path::Path) -> String {
    let shown = crate::diag::display_path(path);
    shown
        .to_string_lossy()
        .replace('\\', "/")
        .split('/')
        .map(|seg| seg.replace('%', "%25").replace(' ', "%20"))
        .collect::<Vec<_>>()
        .join("/")
}

/// One line per diagnostic code, for SARIF rule descriptions and the docs.
pub fn describe(code: &str) -> &'static str {
    match code {
        "yaml-syntax" => "the file is not valid YAML",
        "yaml-shape" => "a value has the wrong type or a required key is missing",
        "unknown-key" => "a key the file format does not have (often a typo)",
        "schema" => "the file breaks the published JSON Schema",
        "json-syntax" => "a data file is not valid JSON",
        "data-not-object" => "a data file does not hold a JSON object",
        "data-conflict" => "two data files set the same key differently",
        "duplicate-tool" => "two tools share a name",
        "empty-name" => "a tool has an empty name",
        "input-schema-not-object" => "inputSchema does not declare type: object",
        "invalid-schema" => "inputSchema or outputSchema is not a valid JSON Schema",
        "unknown-argument" => "a mapping rule tests an argument inputSchema does not declare",
        "value-not-in-enum" => "a mapping rule compares an argument with a value outside its enum",
        "riskier-than-listed" => "a mapping rule sets a hint riskier than the listing",
        "changes-identity" => "a rule would change name, title, description or a schema",
        "rego-parse" => "a policy does not parse",
        "reserved-package" => "a policy uses regent's reserved package",
        "missing-package" => "a tool names a policy package no file defines",
        "rego-unknown-function" => "a policy calls a function that does not exist",
        "rego-arity" => "a policy calls a function with the wrong number of arguments",
        "rego-recursion" => "policy rules depend on each other in a cycle (recursion)",
        "rego-undefined-input" => {
            "a policy reads an input or argument path the tool's inputSchema cannot have"
        }
        "rego-undefined-data" => "a policy reads a data path no data document or rule defines",
        "input-sized-allocation" => "a builtin allocates a size the client chooses",
        "nondeterministic-builtin" => "a policy calls a builtin whose answer changes between calls",
        "policy-eval" => "a policy fails when evaluated on a sample input",
        "policy-timeout" => "a policy runs past the time limit on a sample input",
        "yaml-limit" => "a YAML file expands aliases or nests past the parser's limits",
        "policy-memory" => "a policy exceeds its memory budget on a sample input",
        "counterexample" => "some arguments resolve riskier than the listing",
        "listed-looser" => "the listing is riskier than any resolution needs",
        "proof-incomplete" => "the worst-case proof could not evaluate every combination",
        "proof-not-covered" => "the worst-case proof does not cover a tool",
        "unreadable-path" => "a path cannot be read",
        "unknown-file-kind" => "a file given by name is not a catalog file",
        "not-utf8" => "a file is not UTF-8",
        _ => "a problem in the catalog",
    }
}
