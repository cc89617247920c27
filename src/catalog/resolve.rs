//! Resolution: validate the arguments, evaluate the tool's decision module,
//! and layer the answer over the listed tool.
//!
//! Layering is fixed and documented in the README: the listed (static) values,
//! then the first matching YAML rule, then the Rego policy's contract rules.
//! Whatever the layers say, a hint that ends up riskier than the listed worst
//! case is a configuration error, never a silently adjusted answer. Resolution
//! has no side effects: it reads the snapshot and the arguments only.

use serde_json::{Map, Value};

use super::hints::{Hint, Hints};
use super::schema::{self, ArgError};
use super::{Catalog, Field, Tool};
use crate::caller::Caller;
use crate::policy::engine as policy;
use crate::rego::generate::CONTRACT_RULES;

/// Which layer set a field, for error messages and `--explain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Listed,
    /// The YAML rule at this index (0-based).
    Rule(usize),
    Policy,
}

/// A tool refined for one set of arguments.
#[derive(Debug, Clone)]
pub struct Resolution<'a> {
    pub tool: &'a Tool,
    pub hints: Hints,
    /// Which layer decided each hint, in [`Hint::ALL`] order.
    pub hint_origins: [Origin; 4],
    /// Hints other than the four (for example `privateHint`) a policy added.
    pub extra_annotations: Map<String, Value>,
    pub meta: Map<String, Value>,
    pub security_schemes: Option<Vec<Value>>,
    /// The YAML rule that matched, if any.
    pub rule: Option<usize>,
    /// Why a call with these arguments is refused: the matched YAML rule's
    /// `deny` and the policy's `deny` set, sorted. Empty means allowed.
    pub deny: Vec<String>,
    /// The question the user must accept before a call runs: the policy's
    /// `confirm` message, else the matched YAML rule's. `None`: no question,
    /// and always `None` when `deny` is not empty: a refused call asks
    /// nothing, so a denied decision carries no question.
    pub confirm: Option<String>,
}

/// A [`Resolution`] without its tool, to carry across threads: a call's
/// decision evaluated off the session's thread (`protocol::pace`) comes back
/// as one and is [`attached`](Detached::attach) to the tool again.
pub struct Detached {
    hints: Hints,
    hint_origins: [Origin; 4],
    extra_annotations: Map<String, Value>,
    meta: Map<String, Value>,
    security_schemes: Option<Vec<Value>>,
    rule: Option<usize>,
    deny: Vec<String>,
    confirm: Option<String>,
}

impl Detached {
    /// The resolution of `tool`, which must be the tool it was made for.
    pub fn attach(self, tool: &Tool) -> Resolution<'_> {
        let Detached {
            hints,
            hint_origins,
            extra_annotations,
            meta,
            security_schemes,
            rule,
            deny,
            confirm,
        } = self;
        Resolution {
            tool,
            hints,
            hint_origins,
            extra_annotations,
            meta,
            security_schemes,
            rule,
            deny,
            confirm,
        }
    }
}

impl Resolution<'_> {
    /// This resolution without its tool (see [`Detached`]).
    pub fn detach(self) -> Detached {
        let Resolution {
            tool: _,
            hints,
            hint_origins,
            extra_annotations,
            meta,
            security_schemes,
            rule,
            deny,
            confirm,
        } = self;
        Detached {
            hints,
            hint_origins,
            extra_annotations,
            meta,
            security_schemes,
            rule,
            deny,
            confirm,
        }
    }

    /// Whether a call with these arguments may run.
    pub fn allowed(&self) -> bool {
        self.deny.is_empty()
    }

    /// Adds reasons found outside the policy (a path that leaves its root,
    /// see `fence`), keeping the list sorted and without repeats.
    pub fn add_deny(&mut self, reasons: Vec<String>) {
        if reasons.is_empty() {
            return;
        }
        self.deny.extend(reasons);
        self.deny.sort();
        self.deny.dedup();
        // A deny wins: nothing would be asked.
        self.confirm = None;
    }
}

/// Why a tool could not be resolved.
#[derive(Debug, Clone)]
pub enum ResolveError {
    UnknownTool(String),
    /// The caller's claims do not match the catalog's caller schema: no
    /// decision is made about it (see `caller_schema`).
    CallerClaimsInvalid(super::CallerInvalid),
    InvalidArguments {
        tool: String,
        errors: Vec<ArgError>,
    },
    /// The policy failed, timed out, or produced something the contract does not allow.
    Policy {
        tool: String,
        message: String,
        location: Option<String>,
    },
    /// A layer resolved a hint to something riskier than the listed worst case.
    RiskierThanListed {
        tool: String,
        hint: Hint,
        listed: bool,
        resolved: bool,
        origin: String,
    },
}

impl std::fmt::Display for ResolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResolveError::UnknownTool(name) => write!(f, "unknown tool: {name}"),
            ResolveError::CallerClaimsInvalid(why) => write!(f, "{why}"),
            ResolveError::InvalidArguments { tool, errors } => {
                write!(f, "invalid arguments for tool {tool}")?;
                for e in errors.iter().take(3) {
                    write!(f, "; {e}")?;
                }
                Ok(())
            }
            ResolveError::Policy {
                tool,
                message,
                location,
            } => {
                write!(f, "policy for tool {tool} failed: {message}")?;
                if let Some(l) = location {
                    write!(f, " (at {l})")?;
                }
                Ok(())
            }
            ResolveError::RiskierThanListed {
                tool,
                hint,
                listed,
                resolved,
                origin,
            } => write!(
                f,
                "{origin} resolved {} to {resolved} for tool {tool}, riskier than the listed {listed} \
                 (the tool {} while its listing says it does not); fix the policy or list the worst case",
                hint.key(),
                hint.risky_meaning()
            ),
        }
    }
}

impl Catalog {
    /// Resolves `name` for `args`. Works for every tool: one without rules
    /// or a policy resolves to its listing.
    pub fn resolve(&self, name: &str, args: &Value) -> Result<Resolution<'_>, ResolveError> {
        self.resolve_as(name, args, None)
    }

    /// Resolves `name` for `args` asked by `caller` (`input.caller`; absent
    /// when `None`).
    pub fn resolve_as(
        &self,
        name: &str,
        args: &Value,
        caller: Option<&Caller>,
    ) -> Result<Resolution<'_>, ResolveError> {
        let r = self.resolve_layers_as(name, args, caller)?;
        let package = r.tool.policy.as_deref();
        not_riskier(r, package)
    }

    /// The decision `name`'s shadow policy would give for `args` asked by
    /// `caller`, exactly as [`Catalog::resolve_as`] would decide with the
    /// shadow package in place of the enforced one (listed values, then the
    /// first matching YAML rule, then the shadow package's contract rules,
    /// and the never-riskier check). `None` when the tool is unknown or
    /// declares no `shadow_policy`.
    ///
    /// Log-only: the answer is for the decision log and `regent test`,
    /// never for a client, and its failure is not the request's.
    pub fn shadow_as(
        &self,
        name: &str,
        args: &Value,
        caller: Option<&Caller>,
    ) -> Option<Shadow<'_>> {
        let tool = self.tool(name)?;
        let package = tool.shadow_policy.as_deref()?;
        let resolution = self
            .lookup_as(name, caller)
            .and_then(|_| self.validate_partial(name, args))
            .and_then(|tool| {
                let r = layers(tool, &tool.shadow_plan, package, name, args, caller)?;
                not_riskier(r, Some(package))
            });
        Some(Shadow {
            package,
            resolution,
        })
    }

    /// Tool `name` as `caller` may see it: refused first when the caller's
    /// claims do not match the catalog's caller schema, then unknown when
    /// the catalog does not list it or the caller may not see it
    /// ([`Catalog::tool_as`]).
    pub fn lookup_as(&self, name: &str, caller: Option<&Caller>) -> Result<&Tool, ResolveError> {
        if let Some(why) = self.caller_problem(caller) {
            return Err(ResolveError::CallerClaimsInvalid(why));
        }
        self.seen_by(name, caller)
            .ok_or_else(|| ResolveError::UnknownTool(name.to_string()))
    }

    /// Checks `args` as a client sends them (resolved parameters may be
    /// missing), without evaluating anything.
    pub fn validate_partial(&self, name: &str, args: &Value) -> Result<&Tool, ResolveError> {
        let tool = self
            .tool(name)
            .ok_or_else(|| ResolveError::UnknownTool(name.to_string()))?;
        let validator = tool.partial_validator.as_ref().unwrap_or(&*tool.validator);
        let errors = schema::validate(validator, args);
        if errors.is_empty() {
            Ok(tool)
        } else {
            Err(ResolveError::InvalidArguments {
                tool: name.to_string(),
                errors,
            })
        }
    }

    /// Validates and layers like [`Catalog::resolve`] but does not apply the
    /// never-riskier check, so that `regent check` can see how risky a
    /// resolution would be. Never answer a client with this.
    pub fn resolve_layers(&self, name: &str, args: &Value) -> Result<Resolution<'_>, ResolveError> {
        self.resolve_layers_as(name, args, None)
    }

    /// [`Catalog::resolve_layers`] for a request from `caller`.
    pub fn resolve_layers_as(
        &self,
        name: &str,
        args: &Value,
        caller: Option<&Caller>,
    ) -> Result<Resolution<'_>, ResolveError> {
        if let Some(why) = self.caller_problem(caller) {
            return Err(ResolveError::CallerClaimsInvalid(why));
        }
        let tool = self.validate_partial(name, args)?;
        layers(
            tool,
            &tool.plan,
            tool.policy.as_deref().unwrap_or(""),
            name,
            args,
            caller,
        )
    }
}

/// The decision of a tool's shadow policy (see [`Catalog::shadow_as`]).
#[derive(Debug)]
pub struct Shadow<'a> {
    /// The shadow package.
    pub package: &'a str,
    pub resolution: Result<Resolution<'a>, ResolveError>,
}

/// `r`, unless a hint ended up riskier than the listed one; `package` is
/// the policy that layered it, for the message.
fn not_riskier<'a>(
    r: Resolution<'a>,
    package: Option<&str>,
) -> Result<Resolution<'a>, ResolveError> {
    let tool = r.tool;
    for (k, h) in Hint::ALL.into_iter().enumerate() {
        let resolved = r.hints.get(h);
        if resolved != tool.listed.get(h) && resolved != h.safe_value() {
            let origin = match r.hint_origins[k] {
                Origin::Rule(i) => format!("yaml rule {} at {}", i + 1, tool.rules[i].location),
                Origin::Policy => format!("policy package {}", package.unwrap_or("?")),
                Origin::Listed => "the listing".to_string(),
            };
            return Err(ResolveError::RiskierThanListed {
                tool: tool.name.clone(),
                hint: h,
                listed: tool.listed.get(h),
                resolved,
                origin,
            });
        }
    }
    Ok(r)
}

/// Evaluates `plan` (the tool's, or its shadow plan) and layers the answer
/// over the listing; `pkg` names the policy package in messages.
fn layers<'a>(
    tool: &'a Tool,
    plan: &[(Field, policy::Step)],
    pkg: &str,
    name: &str,
    args: &Value,
    caller: Option<&Caller>,
) -> Result<Resolution<'a>, ResolveError> {
    {
        let mut r = Resolution {
            tool,
            hints: tool.listed,
            hint_origins: [Origin::Listed; 4],
            extra_annotations: Map::new(),
            meta: tool.meta.clone(),
            security_schemes: tool.security_schemes.clone(),
            rule: None,
            deny: Vec::new(),
            confirm: None,
        };
        let Some(engines) = &tool.engines else {
            return Ok(r);
        };

        let rules = plan.iter().map(|(_, step)| step);
        let values = engines
            .eval(rules, policy::input_as(name, args, caller))
            .map_err(|e| policy_error(tool, e.message, e.location.map(|l| l.to_string())))?;
        let mut mapping = None;
        let mut result = Contract::default();
        for ((field, _), value) in plan.iter().zip(values) {
            match field {
                Field::Mapping => mapping = value.as_ref().and_then(Value::as_u64),
                Field::Contract(name) => result.set(name, value),
            }
        }

        if let Some(i) = mapping {
            let i = i as usize;
            let rule = &tool.rules[i];
            r.rule = Some(i);
            r.hints = r.hints.overlay(&rule.annotations);
            for (k, h) in Hint::ALL.into_iter().enumerate() {
                if hint_value(&rule.annotations, h).is_some() {
                    r.hint_origins[k] = Origin::Rule(i);
                }
            }
            if let Some(m) = &rule.meta {
                merge(&mut r.meta, m);
            }
            if let Some(s) = &rule.security_schemes {
                r.security_schemes = Some(s.clone());
            }
            r.deny.extend(rule.deny.iter().cloned());
            r.confirm.clone_from(&rule.confirm);
        }
        apply_policy(tool, pkg, result, &mut r)?;
        // A deny wins over a confirmation: a call that is refused asks the
        // user nothing, so the decision (tools/resolve's, the log's) holds
        // no question. The rule is still evaluated, so a malformed one
        // fails closed either way.
        if !r.deny.is_empty() {
            r.confirm = None;
        }
        Ok(r)
    }
}

fn hint_value(v: &crate::source::HintValues, h: Hint) -> Option<bool> {
    match h {
        Hint::ReadOnly => v.read_only,
        Hint::Destructive => v.destructive,
        Hint::Idempotent => v.idempotent,
        Hint::OpenWorld => v.open_world,
    }
}

fn policy_error(tool: &Tool, message: String, location: Option<String>) -> ResolveError {
    ResolveError::Policy {
        tool: tool.name.clone(),
        message,
        location,
    }
}

/// The values of a policy's contract rules (`generate::CONTRACT_RULES`), by
/// name. An array, not a map: it is filled and read once per resolution,
/// and building a map of it cost a tenth of the policy's share (issue 17).
#[derive(Default)]
struct Contract([Option<Value>; CONTRACT_RULES.len()]);

impl Contract {
    fn slot(&mut self, name: &str) -> Option<&mut Option<Value>> {
        let i = CONTRACT_RULES.iter().position(|r| *r == name)?;
        Some(&mut self.0[i])
    }

    fn set(&mut self, name: &str, value: Option<Value>) {
        if let Some(slot) = self.slot(name) {
            *slot = value;
        }
    }

    /// Rule `name`'s value, moved out.
    fn take(&mut self, name: &str) -> Option<Value> {
        self.slot(name)?.take()
    }
}

/// Applies the policy's `annotations`, `meta` and `security_schemes`, checking
/// that each has the type the contract promises.
fn apply_policy(
    tool: &Tool,
    pkg: &str,
    mut result: Contract,
    r: &mut Resolution<'_>,
) -> Result<(), ResolveError> {
    match result.take("annotations") {
        None | Some(Value::Null) => {}
        Some(Value::Object(obj)) => {
            for (key, value) in obj {
                if let Some(h) = Hint::from_key(&key) {
                    let Value::Bool(b) = value else {
                        return Err(policy_error(
                            tool,
                            format!(
                                "rule {pkg}.annotations sets {key} to {value}; hints must be true or false"
                            ),
                            None,
                        ));
                    };
                    r.hints.set(h, b);
                    r.hint_origins[Hint::ALL.iter().position(|x| *x == h).unwrap_or(0)] =
                        Origin::Policy;
                } else if key == "title" {
                    return Err(policy_error(
                        tool,
                        format!(
                            "rule {pkg}.annotations sets title; resolution never changes a tool's title"
                        ),
                        None,
                    ));
                } else {
                    r.extra_annotations.insert(key, value);
                }
            }
        }
        Some(other) => {
            return Err(policy_error(
                tool,
                format!(
                    "rule {pkg}.annotations must be an object of hints, got {}",
                    crate::diag::json_kind(&other)
                ),
                None,
            ));
        }
    }
    match result.take("meta") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            if let Some((key, whose)) = m
                .keys()
                .find_map(|k| crate::meta_keys::reserved(k).map(|w| (k, w)))
            {
                return Err(policy_error(
                    tool,
                    format!(
                        "rule {pkg}.meta sets `{key}`, a key of {whose} `_meta`, which a policy may not set"
                    ),
                    None,
                ));
            }
            r.meta.extend(m)
        }
        Some(other) => {
            return Err(policy_error(
                tool,
                format!(
                    "rule {pkg}.meta must be an object, got {}",
                    crate::diag::json_kind(&other)
                ),
                None,
            ));
        }
    }
    match result.take("deny") {
        None | Some(Value::Null) => {}
        Some(Value::Array(reasons)) => {
            for reason in reasons {
                let Value::String(text) = reason else {
                    return Err(policy_error(
                        tool,
                        format!(
                            "rule {pkg}.deny holds {reason}; deny must be a set of reason strings (`deny contains msg if {{ ... }}`)"
                        ),
                        None,
                    ));
                };
                r.deny.push(text);
            }
        }
        Some(other) => {
            return Err(policy_error(
                tool,
                format!(
                    "rule {pkg}.deny must be a set of reason strings (`deny contains msg if {{ ... }}`), got {}",
                    crate::diag::json_kind(&other)
                ),
                None,
            ));
        }
    }
    r.deny.sort();
    r.deny.dedup();
    match result.take("confirm") {
        None | Some(Value::Null) => {}
        Some(Value::String(message)) if !message.trim().is_empty() => {
            r.confirm = Some(message);
        }
        Some(other) => {
            // Fail closed: a malformed confirmation is an error, never a
            // call that runs without asking.
            return Err(policy_error(
                tool,
                format!(
                    "rule {pkg}.confirm must be a non-empty message string, got {}",
                    match other {
                        Value::String(_) => "an empty string",
                        v => crate::diag::json_kind(&v),
                    }
                ),
                None,
            ));
        }
    }
    match result.take("security_schemes") {
        None | Some(Value::Null) => {}
        Some(Value::Array(a)) => r.security_schemes = Some(a),
        Some(other) => {
            return Err(policy_error(
                tool,
                format!(
                    "rule {pkg}.security_schemes must be an array, got {}",
                    crate::diag::json_kind(&other)
                ),
                None,
            ));
        }
    }
    Ok(())
}

/// Shallow merge: keys of `over` replace those of `base`.
fn merge(base: &mut Map<String, Value>, over: &Map<String, Value>) {
    for (k, v) in over {
        base.insert(k.clone(), v.clone());
    }
}
