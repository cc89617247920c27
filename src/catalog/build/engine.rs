//! Making and warming one tool's engine: the base plus its own and shadow
//! packages and the generated mapping module, every planned step evaluated
//! once on a sample input so clones start prepared and evaluation-time
//! errors surface at load, and which contract rules the package declares.
//!
//! Locating the errors for the user is `tool`'s (with
//! [`LocatedError::located_or`]); pooling and evaluating under limits is
//! `policy::engine`'s.

use serde_json::Value;

use super::PolicyFile;
use crate::catalog::{Field, schema};
use crate::diag::{Diagnostic, Location};
use crate::policy::budget::Limits;
use crate::policy::engine as policy;
use crate::rego::generate;
use crate::source::ToolDecl;

/// A prepared engine for one tool (base + own packages + generated mapping
/// module) and its evaluation plan. Every planned rule is evaluated once on a
/// sample input, which warms the engine so clones start prepared, surfaces
/// the errors regorus only reports at evaluation, and tells which contract
/// rules the package actually declares.
pub(super) fn tool_engine(
    decl: &ToolDecl,
    Own { own, shadow }: Own<'_>,
    base: &std::sync::Arc<regorus::Engine>,
    library: &[(&str, &str)],
    resolver_rules: &[&str],
    limits: &Limits,
) -> Result<ToolEngine, LocatedError> {
    let mut engine = (**base).clone();
    // What is added to the base, in order, for the engine's recipe.
    let mut added: Vec<(String, std::sync::Arc<str>)> = Vec::new();
    // Every module that could declare a contract rule: (file, package,
    // and the text for the tool's own files, see `declares`).
    let modules: Vec<Module> = own
        .iter()
        .chain(shadow)
        .map(|p| (p.path.as_str(), p.package.as_str(), Some(p.text)))
        .chain(library.iter().map(|&(file, package)| (file, package, None)))
        .collect();
    for p in own.iter().chain(shadow) {
        policy::add_policy(&mut engine, &p.path, p.text).map_err(LocatedError::Diag)?;
        added.push((p.path.clone(), p.text.into()));
    }
    let mut candidates = Vec::new();
    if let Some(module) = generate::mapping_module(&decl.name, &decl.resolve) {
        let gen_path = format!("regent-generated/{}.rego", decl.name);
        policy::add_policy(&mut engine, &gen_path, &module).map_err(LocatedError::Diag)?;
        added.push((gen_path, module.into()));
        candidates.push((
            Field::Mapping,
            generate::MAPPING_RULE.to_string(),
            String::new(),
        ));
    }
    if let Some(pkg) = &decl.policy {
        for rule in generate::CONTRACT_RULES {
            candidates.push((
                Field::Contract(rule),
                generate::rule_ref(pkg, rule),
                format!("{pkg}.{rule}"),
            ));
        }
    }

    engine.set_input(policy::input(
        &decl.name,
        &schema::sample(&decl.input_schema),
    ));
    let mut plan = Vec::new();
    let mut visible = None;
    for (field, path, dotted) in candidates {
        // A contract rule is planned when a loaded module declares it.
        if field != Field::Mapping && !declares(&engine, &modules, &dotted) {
            continue;
        }
        if field == Field::Contract(generate::VISIBLE_RULE) {
            visible = Some(path);
            continue;
        }
        let step = warmed_step(path, &mut engine, limits)
            .map_err(|(e, _)| LocatedError::Eval(e.location, e.message))?;
        plan.push((field, step));
    }
    // The shadow plan: the same mapping rule (YAML rules are layered under
    // either policy), then the shadow package's contract rules but
    // `visible`, which decides listing, not a request. A failure here is
    // kept beside the step, for a warning: it must not stop the enforced
    // policy from loading.
    let mut shadow_plan: Vec<(Field, policy::Step)> = plan
        .iter()
        .filter(|(f, _)| *f == Field::Mapping)
        .cloned()
        .collect();
    let mut shadow_errors = Vec::new();
    if let Some(pkg) = &decl.shadow_policy {
        for rule in generate::CONTRACT_RULES {
            if *rule == generate::VISIBLE_RULE {
                continue;
            }
            if !declares(&engine, &modules, &format!("{pkg}.{rule}")) {
                continue;
            }
            let path = generate::rule_ref(pkg, rule);
            let step = match warmed_step(path.clone(), &mut engine, limits) {
                Ok(step) => step,
                Err((e, step)) => {
                    shadow_errors.push(LocatedError::Eval(e.location, e.message));
                    step
                }
            };
            shadow_plan.push((Field::Contract(rule), step));
        }
    }
    let steps = resolver_rules
        .iter()
        .map(|rule| resolver_step(&mut engine, &modules, rule, limits))
        .collect();
    // `visible` is warmed last, on the listing's input (no arguments, no
    // caller): an error there is a load error, as for the other contract
    // rules; a value of the wrong type is judged per caller, where it hides
    // the tool.
    let visible = match visible {
        Some(path) => {
            engine.set_input(policy::listing_input(&decl.name, None));
            Some(
                warmed_step(path, &mut engine, limits)
                    .map_err(|(e, _)| LocatedError::Eval(e.location, e.message))?,
            )
        }
        None => None,
    };
    // `upstream_request` likewise, on the input of an upstream's request
    // during a call (the sample arguments, an elicitation without params).
    let upstream_request = match &decl.policy {
        Some(pkg)
            if declares(
                &engine,
                &modules,
                &format!("{pkg}.{}", generate::UPSTREAM_REQUEST_RULE),
            ) =>
        {
            engine.set_input(policy::upstream_request_input(
                &decl.name,
                &schema::sample(&decl.input_schema),
                None,
                "elicitation/create",
                &serde_json::json!({}),
            ));
            let path = generate::rule_ref(pkg, generate::UPSTREAM_REQUEST_RULE);
            Some(
                warmed_step(path, &mut engine, limits)
                    .map_err(|(e, _)| LocatedError::Eval(e.location, e.message))?,
            )
        }
        _ => None,
    };
    Ok(ToolEngine {
        engine,
        added,
        plan,
        resolver_steps: steps,
        visible,
        upstream_request,
        shadow: (shadow_plan, shadow_errors),
    })
}

/// The policy files a tool's engine holds beside the libraries: those of
/// its enforced package and those of its shadow package.
#[derive(Clone, Copy)]
pub(super) struct Own<'a> {
    pub(super) own: &'a [&'a PolicyFile<'a>],
    pub(super) shadow: &'a [&'a PolicyFile<'a>],
}

/// Evaluates `step` once to warm the engine and surface evaluation errors at
/// load. The first evaluation on a fresh engine also pays one-time costs
/// (lazily built tables, compiled patterns), which on a loaded or
/// instrumented machine (valgrind) can pass the time limit on their own; a
/// time-out is therefore tried once more, warm, before it fails the load.
fn warm(
    step: &policy::Step,
    engine: &mut regorus::Engine,
    limits: &Limits,
) -> Result<Option<Value>, policy::EvalError> {
    match step.eval(engine, limits) {
        Err(e) if e.timed_out => step.eval(engine, limits),
        other => other,
    }
}

/// A prepared engine, its per-request plan, one step (or the reason
/// there is none) per policy resolver rule, the `visible` rule's step
/// when the package declares one, and the shadow plan with the failures
/// its warm-up met.
pub(super) struct ToolEngine {
    pub(super) engine: regorus::Engine,
    /// The modules added to the base, in order: the engine's recipe.
    pub(super) added: Vec<(String, std::sync::Arc<str>)>,
    pub(super) plan: Vec<(Field, policy::Step)>,
    pub(super) resolver_steps: Vec<Result<policy::Step, LocatedError>>,
    pub(super) visible: Option<policy::Step>,
    pub(super) upstream_request: Option<policy::Step>,
    pub(super) shadow: (Vec<(Field, policy::Step)>, Vec<LocatedError>),
}

/// The step that evaluates a policy resolver's rule, checked to exist and
/// evaluated once on the sample input (which the engine holds).
fn resolver_step(
    engine: &mut regorus::Engine,
    modules: &[Module],
    rule: &str,
    limits: &Limits,
) -> Result<policy::Step, LocatedError> {
    let dotted = rule.strip_prefix("data.").unwrap_or(rule);
    if !declares(engine, modules, dotted) {
        return Err(LocatedError::Undeclared(rule.to_string()));
    }
    warmed_step(rule.to_string(), engine, limits)
        .map_err(|(e, _)| LocatedError::Eval(e.location, e.message))
}

/// Whether a module of `modules` declares a rule at `dotted`
/// (`tools.files.deny`) or below it (regorus takes the path relative to the
/// module's package). When regorus cannot say, assume it does: evaluating an
/// absent rule by query is merely undefined, while skipping a present one
/// would silently drop its answer.
///
/// regorus is not asked about one of the tool's own modules whose text
/// never spells the rule's name (one identifier after the package): a rule
/// head names its first part as written, so such a module cannot declare
/// it. regorus parses a selector for each question, and the contract rules
/// asked of every tool were a measurable part of a 10,000-tool start-up
/// (BENCHMARKS.md, session 27); most tools declare one or two of them.
fn declares(engine: &regorus::Engine, modules: &[Module], dotted: &str) -> bool {
    modules.iter().any(|&(file, package, text)| {
        dotted
            .strip_prefix(&format!("{package}."))
            .is_some_and(|root| {
                let spelled = match text {
                    Some(text) if is_identifier(root) => spells_word(text, root),
                    _ => true,
                };
                spelled
                    && engine
                        .has_declared_rule_rooted_at(file, root)
                        .unwrap_or(true)
            })
    })
}

/// A module a tool's engine holds: (file, package, its text when it is one
/// of the tool's own files rather than a library's).
type Module<'a> = (&'a str, &'a str, Option<&'a str>);

/// Whether `name` is one Rego identifier (what a contract rule's name is).
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `text` holds `word` anywhere not inside a longer identifier
/// (comments and strings count: a false "yes" only means regorus is asked).
fn spells_word(text: &str, word: &str) -> bool {
    let is_part = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_part) && !after.is_some_and(is_part)
    })
}

/// The step that reads `path`, evaluated once on the input `engine` holds:
/// by `eval_rule`, or, for a rule defined by path
/// (`annotations.readOnlyHint := ...`), whose prefix `eval_rule` refuses,
/// by query. On failure, the error and the step as far as it got.
fn warmed_step(
    path: String,
    engine: &mut regorus::Engine,
    limits: &Limits,
) -> Result<policy::Step, (policy::EvalError, policy::Step)> {
    let mut step = policy::Step {
        path,
        by_query: false,
    };
    match warm(&step, engine, limits) {
        Ok(_) => Ok(step),
        Err(e) if policy::is_undeclared(&e) => {
            step.by_query = true;
            match warm(&step, engine, limits) {
                Ok(_) => Ok(step),
                Err(e) => Err((e, step)),
            }
        }
        Err(e) => Err((e, step)),
    }
}

pub(super) enum LocatedError {
    Diag(Diagnostic),
    /// A resolver's rule that no loaded module declares.
    Undeclared(String),
    Eval(Option<Location>, String),
}

impl LocatedError {
    /// `sample` is the input the engine was prepared with.
    pub(super) fn located_or(self, fallback: Location, sample: &Value) -> Diagnostic {
        match self {
            LocatedError::Diag(d) => d,
            LocatedError::Undeclared(rule) => Diagnostic::error(
                "resolver-policy",
                fallback,
                format!("no policy module declares the resolver rule `{rule}`"),
            )
            .with_help("define the rule in the tool's policy package, or fix its name"),
            LocatedError::Eval(loc, msg) if crate::policy::errors::is_conflict(&msg) => Diagnostic::error(
                "rego-conflict",
                loc.unwrap_or(fallback),
                format!("rules conflict for arguments {sample}: {msg}"),
            )
            .with_help(crate::policy::errors::CONFLICT_HELP),
            LocatedError::Eval(loc, msg) => Diagnostic::error(
                "policy-eval",
                loc.unwrap_or(fallback),
                format!("policy fails when evaluated on the sample arguments {sample}: {msg}"),
            )
            .with_help("fix the rule; regorus reports unknown functions, wrong arity and unsafe variables only when a rule runs"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{is_identifier, spells_word};

    #[test]
    fn a_rule_name_is_spelled_only_as_a_whole_word() {
        let text = "package p\n\nannotations.readOnlyHint := true\nmy_deny contains 1\n";
        assert!(spells_word(text, "annotations"));
        // Inside a longer identifier it is not the rule: regorus is not asked.
        assert!(!spells_word(text, "deny"));
        assert!(!spells_word(text, "confirm"));
        assert!(spells_word("deny[m] {", "deny"));
        assert!(spells_word("x\ndeny", "deny"));
        assert!(is_identifier("security_schemes"));
        assert!(!is_identifier("a.b"));
        assert!(!is_identifier("1a"));
        assert!(!is_identifier(""));
    }
}
