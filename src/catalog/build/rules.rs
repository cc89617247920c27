//! The YAML mapping rules of one tool checked against its schema and listed
//! worst case: `when` values its argument's type cannot hold, and `meta`
//! keys regent or MCP write themselves.
//!
//! Compiling the rest of the tool is `tool`'s; generating the rules' Rego
//! is `rego::generate`'s.

use serde_json::Value;

use crate::catalog::{Rule, hints::Hints, schema};
use crate::diag::Diagnostic;
use crate::source::{ToolDecl, ToolSource, YamlPath};

/// Checks each mapping rule against the tool's schema and listed worst case.
pub(super) fn compile_rules(
    file: &ToolSource,
    at: &YamlPath,
    decl: &ToolDecl,
    listed: &Hints,
    diags: &mut Vec<Diagnostic>,
) -> Vec<Rule> {
    let props = schema::properties(&decl.input_schema);
    let mut rules = Vec::new();
    for (i, rule) in decl.resolve.iter().enumerate() {
        let rule_at = at.key("resolve").index(i);
        for (arg, expected) in &rule.when {
            let arg_at = rule_at.key("when").key(arg);
            let Some(prop) = props.and_then(|p| p.get(arg)) else {
                let known: Vec<String> = props
                    .map(|p| p.keys().map(|k| format!("`{k}`")).collect())
                    .unwrap_or_default();
                diags.push(
                    Diagnostic::error(
                        "unknown-argument",
                        file.locate(&arg_at),
                        format!("rule {} of `{}` tests argument `{arg}`, which inputSchema does not declare", i + 1, decl.name),
                    )
                    .with_help(if known.is_empty() {
                        "declare it under inputSchema.properties".to_string()
                    } else {
                        format!("declared arguments: {}", known.join(", "))
                    }),
                );
                continue;
            };
            if let Some(why) = type_mismatch(prop, expected) {
                diags.push(
                    Diagnostic::error(
                        "value-wrong-type",
                        file.locate(&arg_at),
                        format!("rule {} of `{}` compares `{arg}` with {why}, so the rule can never match", i + 1, decl.name),
                    )
                    .with_help(
                        "a `when` value is compared for equality (a list means any of, null means absent); write the value itself, and test patterns or ranges in a Rego policy",
                    ),
                );
                continue;
            }
            if let Some(allowed) = prop.get("enum").and_then(Value::as_array) {
                for v in when_values(expected) {
                    if !allowed.contains(v) {
                        diags.push(
                            Diagnostic::error(
                                "value-not-in-enum",
                                file.locate(&arg_at),
                                format!("rule {} of `{}` compares `{arg}` with {v}, which its enum does not allow", i + 1, decl.name),
                            )
                            .with_help(format!(
                                "allowed values: {}",
                                allowed.iter().map(Value::to_string).collect::<Vec<_>>().join(", ")
                            )),
                        );
                    }
                }
            }
        }
        let hints = rule.annotations.unwrap_or_default();
        let resolved = listed.overlay(&hints);
        for h in resolved.riskier_than(listed) {
            diags.push(
                Diagnostic::error(
                    "riskier-than-listed",
                    file.locate(&rule_at.key("annotations").key(h.key())),
                    format!(
                        "rule {} of `{}` sets {} to {}, riskier than the listed {}",
                        i + 1,
                        decl.name,
                        h.key(),
                        resolved.get(h),
                        listed.get(h)
                    ),
                )
                .with_help(format!(
                    "the listed annotations must state the worst case; set annotations.{} to {} on the tool, or change the rule",
                    h.key(),
                    resolved.get(h)
                )),
            );
        }
        reserved_meta(
            rule.meta.as_ref(),
            file,
            &rule_at.key("meta"),
            &decl.name,
            diags,
        );
        rules.push(Rule {
            when: rule.when.clone(),
            annotations: hints,
            meta: rule.meta.clone(),
            security_schemes: rule.security_schemes.clone(),
            deny: rule.deny.0.clone(),
            confirm: rule.confirm.clone(),
            location: file.locate(&rule_at),
        });
    }
    rules
}

/// Refuses the keys of a YAML `meta` that regent or MCP write themselves
/// (see `meta_keys`): merged into an answer, they would stand beside
/// regent's real decision.
pub(super) fn reserved_meta(
    meta: Option<&serde_json::Map<String, Value>>,
    file: &ToolSource,
    at: &YamlPath,
    tool: &str,
    diags: &mut Vec<Diagnostic>,
) {
    for key in meta.into_iter().flat_map(|m| m.keys()) {
        if let Some(whose) = crate::meta_keys::reserved(key) {
            diags.push(
                Diagnostic::error(
                    "reserved-meta-key",
                    file.locate(&at.key(key)),
                    format!("meta of `{tool}` sets `{key}`, a key of {whose} `_meta`"),
                )
                .with_help(crate::meta_keys::HELP),
            );
        }
    }
}

/// The values a `when` entry compares its argument with: the items of a
/// list (any of them), or the one value; `null` stands for an absent
/// argument, never a value, and is left out.
fn when_values(expected: &Value) -> Vec<&Value> {
    match expected {
        Value::Array(vs) => vs.iter().filter(|v| !v.is_null()).collect(),
        Value::Null => Vec::new(),
        v => vec![v],
    }
}

/// Why a `when` value can never equal the argument, judged by the
/// argument's declared `type`: "{...}, which its type string does not
/// allow". `None` when it can, or when the schema leaves it open. Arrays
/// and objects are not judged: a list in `when` means any of its items,
/// and an object argument may be compared with an object.
fn type_mismatch(prop: &Value, expected: &Value) -> Option<String> {
    let types: Vec<&str> = match prop.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    if types.is_empty() || types.iter().any(|t| matches!(*t, "array" | "object")) {
        return None;
    }
    let fits = |v: &Value| match v {
        Value::Null => true, // never given: `when_values` leaves it out
        Value::Bool(_) => types.contains(&"boolean"),
        Value::String(_) => types.contains(&"string"),
        Value::Number(n) => {
            types.contains(&"number")
                || (types.contains(&"integer")
                    && (n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)))
        }
        Value::Array(_) | Value::Object(_) => false,
    };
    let bad = when_values(expected).into_iter().find(|v| !fits(v))?;
    Some(format!(
        "{bad}, which its type {} does not allow",
        types.join(" or ")
    ))
}
