//! Rules that would change what resolution never changes: a rule in a
//! tool's package named like the tool's name, title, description or
//! schemas, an `annotations.title` set by the policy, and `meta` keys that
//! are regent's or MCP's own (`reserved_meta`).
//!
//! Only names and literal `title` keys are read; what the other rules
//! resolve is left to the proof and to evaluation.

use std::collections::BTreeSet;

use regorus::unstable::Expr;

use super::{PolicyModule, assigned_values, const_string, head, path_of, rule_defs, span_location};
use crate::diag::{Diagnostic, Location};

/// Names of rules in a tool's package that look like an attempt to change
/// the tool's identity, with what they would change.
const IDENTITY_RULES: &[(&str, &str)] = &[
    ("name", "name"),
    ("title", "title"),
    ("description", "description"),
    ("input_schema", "inputSchema"),
    ("inputSchema", "inputSchema"),
    ("output_schema", "outputSchema"),
    ("outputSchema", "outputSchema"),
];

/// Rules in any of `packages` (tool packages) that try to change a tool's
/// name, title, description or schemas, which resolution never does. All
/// packages at once: the rule definitions are read once, whatever the
/// number of tools.
pub fn identity_rules(modules: &[PolicyModule], packages: &BTreeSet<&str>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for def in rule_defs(modules)
        .iter()
        .filter(|d| packages.contains(d.package.as_str()))
    {
        let package = &def.package;
        if let Some((_, field)) = IDENTITY_RULES.iter().find(|(n, _)| *n == def.name()) {
            out.push(
                Diagnostic::error(
                    "changes-identity",
                    def.location.clone(),
                    format!("rule `{}` in package {package} would change the tool's {field}, which resolution never changes", def.name()),
                )
                .with_help(format!("regent does not read this rule; set the {field} in the tool's YAML, or rename the rule if it is a helper")),
            );
        }
        if def.name() == "annotations" && def.path.get(1).map(String::as_str) == Some("title") {
            out.push(title_diagnostic(def.location.clone(), package));
        }
    }
    // `annotations := {"title": ...}`: a literal title key in an annotations value.
    for (at, key, package) in literal_keys(modules, packages, "annotations") {
        if key == "title" {
            out.push(title_diagnostic(at, package));
        }
    }
    out
}

/// `meta` keys of `packages` (tool packages) that regent or MCP write
/// themselves (`regent/decision`, `io.modelcontextprotocol/…`; see
/// `meta_keys`), written literally: `meta := {"regent/decision": …}` or
/// `meta["regent/decision"] := …`. Merged into an answer they would stand
/// beside regent's real decision. A key the policy computes is refused when
/// it resolves.
pub fn reserved_meta(modules: &[PolicyModule], packages: &BTreeSet<&str>) -> Vec<Diagnostic> {
    let defs = rule_defs(modules);
    let mut found: Vec<(Location, String, &str)> = defs
        .iter()
        .filter(|d| packages.contains(d.package.as_str()) && d.name() == "meta")
        .filter_map(|d| {
            Some((
                d.location.clone(),
                d.path.get(1)?.clone(),
                d.package.as_str(),
            ))
        })
        .collect();
    found.extend(literal_keys(modules, packages, "meta"));
    found
        .into_iter()
        .filter_map(|(at, key, package)| {
            let whose = crate::meta_keys::reserved(&key)?;
            Some(
                Diagnostic::error(
                    "reserved-meta-key",
                    at,
                    format!("package {package} sets meta key `{key}`, a key of {whose} `_meta`"),
                )
                .with_help(crate::meta_keys::HELP),
            )
        })
        .collect()
}

/// The constant keys of object literals that rule `name` of any of
/// `packages` takes as its value (`name := {"k": …} if …`, `default name :=
/// {…}`), each with where it is written and its package.
fn literal_keys<'m>(
    modules: &'m [PolicyModule],
    packages: &BTreeSet<&str>,
    name: &str,
) -> Vec<(Location, String, &'m str)> {
    let mut out = Vec::new();
    for m in modules
        .iter()
        .filter(|m| packages.contains(m.package.as_str()))
    {
        for rule in &m.module.policy {
            if path_of(head(rule)) != [name] {
                continue;
            }
            for v in assigned_values(rule) {
                if let Expr::Object { fields, .. } = v.as_ref() {
                    for (span, k, _) in fields {
                        if let Some(key) = const_string(k) {
                            out.push((span_location(span), key, m.package.as_str()));
                        }
                    }
                }
            }
        }
    }
    out
}

fn title_diagnostic(at: Location, package: &str) -> Diagnostic {
    Diagnostic::error(
        "changes-identity",
        at,
        format!("package {package} sets annotations.title, which resolution never changes"),
    )
    .with_help("set the display title in the tool's YAML (annotations.title) and remove it from the policy")
}
