//! Rules that would change what resolution never changes: a rule in a
//! tool's package named like the tool's name, title, description or
//! schemas, and an `annotations.title` set by the policy.
//!
//! Only names and literal `title` keys are read; what the other rules
//! resolve is left to the proof and to evaluation.

use regorus::unstable::{Expr, Ref, Rule, RuleHead};

use super::{PolicyModule, const_string, head, path_of, rule_defs, span_location};
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

/// Rules in `package` that try to change a tool's name, title,
/// description or schemas, which resolution never does.
pub fn identity_rules(modules: &[PolicyModule], package: &str) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for def in rule_defs(modules).iter().filter(|d| d.package == package) {
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
    for m in modules.iter().filter(|m| m.package == package) {
        for rule in &m.module.policy {
            let head = head(rule);
            if path_of(head) != ["annotations"] {
                continue;
            }
            let mut values: Vec<&Ref<Expr>> = Vec::new();
            match rule.as_ref() {
                Rule::Default { value, .. } => values.push(value),
                Rule::Spec { head, bodies, .. } => {
                    if let RuleHead::Compr {
                        assign: Some(a), ..
                    } = head
                    {
                        values.push(&a.value);
                    }
                    values.extend(
                        bodies
                            .iter()
                            .filter_map(|b| b.assign.as_ref().map(|a| &a.value)),
                    );
                }
            }
            for v in values {
                if let Expr::Object { fields, .. } = v.as_ref() {
                    for (span, k, _) in fields {
                        if const_string(k).as_deref() == Some("title") {
                            out.push(title_diagnostic(span_location(span), package));
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
