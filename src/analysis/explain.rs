//! Why a resolution differs from the listing: for each field that changed,
//! the YAML rule or the Rego rule definition that produced it; and for the
//! decision, which the listing does not have, each `deny` reason and the
//! `confirm` question with what produced it.
//!
//! YAML origins come from the resolution itself. For Rego, each definition
//! of the contract rule (`annotations`, `meta`, `security_schemes`) in the
//! tool's package is copied, under a fresh name, into a probe module of the
//! same package with the same imports, and evaluated on the same input: the
//! definitions whose copy is defined and yields the field's value are the
//! ones that produced it (for `deny`, a partial set: the definitions whose
//! set holds the reason; for `confirm`, those that give the message). A `default` definition is named when no other
//! definition applies. Evaluation stays side-effect free: probes run on a
//! copy of the tool's engine.

use serde_json::{Map, Value};

use crate::caller::Caller;
use crate::catalog::hints::Hint;
use crate::catalog::{Origin, Resolution, Tool};
use crate::diag::Location;
use crate::policy::engine as policy;
use crate::rego::generate;
use crate::rego::{self, RuleKind};

/// Which layer produced a field.
#[derive(Debug, Clone, PartialEq)]
pub enum Producer {
    /// The YAML mapping rule at this 0-based index.
    YamlRule { index: usize, location: Location },
    /// A definition of a contract rule in the tool's policy package.
    Rego { rule: String, location: Location },
    /// The policy produced it, but no single definition could be named.
    Policy { package: String },
}

impl std::fmt::Display for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Producer::YamlRule { index, location } => {
                write!(f, "yaml rule {} at {location}", index + 1)
            }
            Producer::Rego { rule, location } => write!(f, "rego rule {rule} at {location}"),
            Producer::Policy { package } => write!(f, "policy package {package}"),
        }
    }
}

/// One field of the resolved tool that differs from the listing, or one
/// part of the decision (`deny`, `confirm`), which nothing lists.
#[derive(Debug, Clone)]
pub struct Change {
    /// `annotations.destructiveHint`, `_meta.region`, `securitySchemes`,
    /// `deny` (one change per reason), `confirm`.
    pub field: String,
    pub listed: Option<Value>,
    pub resolved: Value,
    pub producers: Vec<Producer>,
}

/// The changes `r` makes to its tool's listing, each with its producers.
pub fn explain(
    tool: &Tool,
    args: &Value,
    caller: Option<&Caller>,
    r: &Resolution<'_>,
) -> Vec<Change> {
    let mut probe = Probe::new(tool, args, caller);
    let mut out = Vec::new();
    for (k, h) in Hint::ALL.into_iter().enumerate() {
        let (listed, resolved) = (tool.listed.get(h), r.hints.get(h));
        if listed == resolved {
            continue;
        }
        let producers = match r.hint_origins[k] {
            Origin::Rule(i) => vec![yaml(tool, i)],
            Origin::Policy => probe.producers("annotations", Some(h.key()), &Value::Bool(resolved)),
            Origin::Listed => Vec::new(),
        };
        out.push(Change {
            field: format!("annotations.{}", h.key()),
            listed: Some(Value::Bool(listed)),
            resolved: Value::Bool(resolved),
            producers,
        });
    }
    for (key, value) in &r.extra_annotations {
        out.push(Change {
            field: format!("annotations.{key}"),
            listed: None,
            resolved: value.clone(),
            producers: probe.producers("annotations", Some(key), value),
        });
    }
    let policy_result = probe.result.clone();
    for (key, value) in &r.meta {
        let listed = tool.meta.get(key);
        if listed == Some(value) {
            continue;
        }
        let from_policy = policy_result
            .get("meta")
            .and_then(Value::as_object)
            .is_some_and(|m| m.get(key) == Some(value));
        let producers = if from_policy {
            probe.producers("meta", Some(key), value)
        } else {
            r.rule.map(|i| vec![yaml(tool, i)]).unwrap_or_default()
        };
        out.push(Change {
            field: format!("_meta.{key}"),
            listed: listed.cloned(),
            resolved: value.clone(),
            producers,
        });
    }
    if r.security_schemes != tool.security_schemes {
        let resolved = Value::Array(r.security_schemes.clone().unwrap_or_default());
        let from_policy = policy_result
            .get("security_schemes")
            .is_some_and(|v| !v.is_null());
        let producers = if from_policy {
            probe.producers("security_schemes", None, &resolved)
        } else {
            r.rule.map(|i| vec![yaml(tool, i)]).unwrap_or_default()
        };
        out.push(Change {
            field: "securitySchemes".to_string(),
            listed: tool.security_schemes.clone().map(Value::Array),
            resolved,
            producers,
        });
    }
    // The decision: each reason a call is refused for, by every layer that
    // gave it (a YAML rule and a policy may give the same one).
    let policy_deny = policy_result
        .get("deny")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for reason in &r.deny {
        let mut producers = Vec::new();
        if let Some(i) = r.rule
            && tool.rules[i].deny.contains(reason)
        {
            producers.push(yaml(tool, i));
        }
        let reason = Value::String(reason.clone());
        if policy_deny.contains(&reason) {
            producers.extend(probe.producers_by("deny", |got| {
                got.as_array().is_some_and(|set| set.contains(&reason))
            }));
        }
        out.push(Change {
            field: "deny".to_string(),
            listed: None,
            resolved: reason,
            producers,
        });
    }
    // A deny wins: a denied decision has no question to explain.
    if let Some(message) = &r.confirm {
        let message = Value::String(message.clone());
        let producers = if policy_result.get("confirm") == Some(&message) {
            probe.producers("confirm", None, &message)
        } else {
            r.rule.map(|i| vec![yaml(tool, i)]).unwrap_or_default()
        };
        out.push(Change {
            field: "confirm".to_string(),
            listed: None,
            resolved: message,
            producers,
        });
    }
    out
}

impl Change {
    /// Whether this is part of the decision (`deny`, `confirm`), which has
    /// no listed value to differ from.
    pub fn is_decision(&self) -> bool {
        self.field == "deny" || self.field == "confirm"
    }
}

fn yaml(tool: &Tool, i: usize) -> Producer {
    Producer::YamlRule {
        index: i,
        location: tool.rules[i].location.clone(),
    }
}

/// Probes rule definitions of one tool's package for one input.
struct Probe<'a> {
    tool: &'a Tool,
    args: &'a Value,
    caller: Option<&'a Caller>,
    /// The decision module's result for this input (`mapping`, contract rules).
    result: Map<String, Value>,
}

impl<'a> Probe<'a> {
    fn new(tool: &'a Tool, args: &'a Value, caller: Option<&'a Caller>) -> Probe<'a> {
        let result = tool
            .engine()
            .and_then(Result::ok)
            .and_then(|mut e| tool.evaluate_on(&mut e, args, caller).ok())
            .unwrap_or_default();
        Probe {
            tool,
            args,
            caller,
            result,
        }
    }

    /// The definitions of `rule` (in the tool's package) that yield `value`
    /// at `key` (or as a whole when `key` is `None`) for this input.
    fn producers(&mut self, rule: &str, key: Option<&str>, value: &Value) -> Vec<Producer> {
        // The probe holds what this definition contributes, shaped like
        // the whole rule: `annotations.destructiveHint := v` gives
        // {"destructiveHint": v}, like `annotations := {...}` does.
        self.producers_by(rule, |got| match key {
            Some(k) => got.get(k).is_some_and(|g| contained(g, value)),
            None => contained(got, value),
        })
    }

    /// The definitions of `rule` (in the tool's package) whose value for
    /// this input `contributes` says produced the field.
    fn producers_by(&mut self, rule: &str, contributes: impl Fn(&Value) -> bool) -> Vec<Producer> {
        let Some(package) = self.tool.policy.clone() else {
            return Vec::new();
        };
        let fallback = vec![Producer::Policy {
            package: package.clone(),
        }];
        let Some(Ok(mut engine)) = self.tool.engine() else {
            return fallback;
        };
        let modules = rego::modules(&mut engine);
        let defs: Vec<_> = rego::rule_defs(&modules)
            .into_iter()
            .filter(|d| d.package == package && d.name() == rule && d.kind != RuleKind::Function)
            .collect();
        let mut found = Vec::new();
        let mut default = None;
        for (n, def) in defs.iter().enumerate() {
            if def.kind == RuleKind::Default {
                default = Some(def);
                continue;
            }
            let m = &modules[def.module];
            let probe_name = format!("regent_probe_{n}");
            let text = format!(
                "{}\n{}\n{}{}{}\n",
                m.package_decl(),
                m.imports_text(),
                &m.text[def.start..def.name_start],
                probe_name,
                &m.text[def.name_end..def.end]
            );
            let mut e = engine.clone();
            if policy::add_policy(&mut e, "regent-generated/probe.rego", &text).is_err() {
                return fallback;
            }
            let got = match policy::query_value(
                &mut e,
                &generate::rule_ref(&package, &probe_name),
                policy::input_as(&self.tool.name, self.args, self.caller),
                &self.tool.limits(),
            ) {
                Ok(v) => v,
                Err(_) => return fallback,
            };
            let Some(got) = got else { continue };
            if contributes(&got) {
                found.push(Producer::Rego {
                    rule: format!("{package}.{}", def.path.join(".")),
                    location: def.location.clone(),
                });
            }
        }
        if found.is_empty()
            && let Some(d) = default
        {
            found.push(Producer::Rego {
                rule: format!("{package}.{} (default)", d.path.join(".")),
                location: d.location.clone(),
            });
        }
        if found.is_empty() { fallback } else { found }
    }
}

/// Whether `part` is (part of) `whole`: equal, a subset of an object's
/// entries (several definitions may fill one object), or, for partial set
/// rules that come back as arrays, a subset of the items.
fn contained(part: &Value, whole: &Value) -> bool {
    match (part, whole) {
        (Value::Object(p), Value::Object(w)) => p
            .iter()
            .all(|(k, v)| w.get(k).is_some_and(|wv| contained(v, wv))),
        (Value::Array(p), Value::Array(w)) => p.iter().all(|i| w.contains(i)),
        _ => part == whole,
    }
}
