//! The compiled catalog: an immutable snapshot of every tool, its validator
//! and its warm policy engines, built from a [`Source`](crate::source::Source).
//!
//! With `rego` (Rego as syntax) and `policy` (evaluation) below it, this is the
//! layer of the serving path that knows regorus and jsonschema; what only
//! `check`, `test`, `review` and `--explain` ask of a built catalog (the
//! proof, the exercise, explain) is `analysis`', above it, which nothing
//! here uses. It knows nothing of MCP wire types: `protocol` turns what it
//! returns into JSON-RPC. A `Catalog` is never changed after it is built;
//! reload builds a new one and swaps the `Arc` (see `state`), so a request
//! that holds one sees one consistent revision from start to end.

mod build;
pub mod caller_schema;
pub mod hints;
mod resolve;
pub mod resolvers;
pub mod run;
pub mod schema;
mod schema_keywords;
pub mod upstream_request;
pub mod visibility;

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::diag::{Diagnostic, Location};
use crate::policy::budget;
use crate::policy::engine as policy;
use crate::rego;
pub use build::{build, build_partial};
pub use caller_schema::{CallerInvalid, CallerSchema};
pub use hints::{Hint, Hints};
pub use resolve::{Detached, Origin, Resolution, ResolveError, Shadow};
pub use schema::ArgError;

/// Settings that shape how a catalog is compiled.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// What a single policy evaluation may spend: wall-clock time and memory.
    pub policy_limits: budget::Limits,
    /// Compile a tool even when a YAML rule is riskier than its listing (the
    /// error is still reported). Only `regent check` sets this, so that its
    /// proof can show which arguments reach the rule; never for serving.
    pub keep_riskier_rules: bool,
}

/// A YAML mapping rule, compiled: its outputs and where it was written.
#[derive(Debug, Clone)]
pub struct Rule {
    pub when: Map<String, Value>,
    pub annotations: crate::source::HintValues,
    pub meta: Option<Map<String, Value>>,
    pub security_schemes: Option<Vec<Value>>,
    /// Reasons to refuse a call when this rule matches.
    pub deny: Vec<String>,
    /// A message the user must accept before a call matching this rule runs.
    pub confirm: Option<String>,
    pub location: Location,
}

/// One tool, ready to answer.
pub struct Tool {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    /// The whole input schema: what arguments are validated against once
    /// every parameter has its value.
    pub input_schema: Value,
    /// The input schema `tools/list` shows: `input_schema` without the
    /// parameters the server fills itself (parameter resolvers).
    pub listed_input_schema: Value,
    pub output_schema: Option<Value>,
    /// `annotations.title`, MCP's display name kept beside the hints.
    pub annotations_title: Option<String>,
    /// The listed worst case: declared hints, MCP's defaults for the rest.
    pub listed: Hints,
    pub meta: Map<String, Value>,
    pub security_schemes: Option<Vec<Value>>,
    pub rules: Vec<Rule>,
    /// The Rego package holding this tool's policy.
    pub policy: Option<String>,
    /// The package evaluated beside it in log-only mode (see
    /// [`Catalog::shadow_as`]).
    pub shadow_policy: Option<String>,
    pub location: Location,
    /// The whole input schema, for arguments once every parameter is
    /// filled; shared by the tools of the build with the same schema.
    validator: std::sync::Arc<jsonschema::Validator>,
    /// The input schema without requiring resolved parameters, for what a
    /// client or test case sends; `None` when the tool has no resolvers.
    partial_validator: Option<jsonschema::Validator>,
    /// Parameters the server fills, in dependency order.
    pub resolvers: Vec<resolvers::Resolver>,
    /// Compiled once at load, for results of tools that declare `outputSchema`.
    output_validator: Option<std::sync::Arc<jsonschema::Validator>>,
    /// Absent for tools with neither mapping rules nor a policy. Boxed: a
    /// pool is 1 KB inline (most of it regorus' engine, `None` once shed),
    /// twice the rest of a tool, and a 10,000-tool catalog held three vectors
    /// of tools at its build's peak (issue 32 item 2).
    engines: Option<Box<policy::EnginePool>>,
    /// How `tools/call` executes the tool; absent when it declares no `run`.
    pub run: Option<crate::run_plan::RunPlan>,
    /// What its `run:` needs from the machine, for `check` to look at.
    pub probes: Vec<run::Probe>,
    /// The upstream MCP server tool `tools/call` forwards to, for a tool
    /// imported from one (it has no `run`).
    pub upstream: Option<crate::source::upstream::UpstreamRef>,
    /// What one resolution evaluates, in order: the generated mapping rule
    /// when there are YAML rules, then each contract rule the policy declares.
    plan: Vec<(Field, policy::Step)>,
    /// What one shadow decision evaluates: the mapping rule when there are
    /// YAML rules, then each contract rule the shadow package declares
    /// (`visible` aside). Empty without `shadow_policy`.
    shadow_plan: Vec<(Field, policy::Step)>,
    /// The package's `visible` rule, evaluated per caller for listing (see
    /// `visibility`); `None` when it declares none (visible to everyone).
    visible: Option<policy::Step>,
    /// The package's `upstream_request` rule, evaluated for each request an
    /// upstream sends during a forwarded call (see `upstream_request`);
    /// `None` when it declares none (the defaults decide).
    upstream_request: Option<policy::Step>,
    /// Arguments fenced under a root (`paths:`), canonicalized by
    /// `protocol` through `fence` before every decision.
    pub fences: Vec<crate::fence::Fence>,
    /// A digest of everything the tool's answers are made from (its
    /// declaration, its packages, the library packages it reaches and the
    /// data): equal fingerprints in two builds mean the same decisions, so
    /// what `check::on_load` found about it still holds.
    pub fingerprint: [u8; 32],
    /// Which of the library packages its engine holds the tool's policy
    /// reaches (`rego::reach`): only those count toward its proof, its
    /// warnings and its exercise ([`Tool::modules`]).
    pub(crate) reach: Reach,
}

/// The library modules one tool reaches, by file path, beside every
/// library module of the build. A module that is not a library one (the
/// tool's own and shadow packages) is always reached, and so is any module
/// when nothing was recorded (the default): on doubt, more, not less.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reach {
    pub(crate) library: std::sync::Arc<std::collections::BTreeSet<String>>,
    pub(crate) reached: std::collections::BTreeSet<String>,
}

impl Reach {
    /// Whether the module in file `path` counts for the tool.
    pub(crate) fn keeps(&self, path: &str) -> bool {
        !self.library.contains(path) || self.reached.contains(path)
    }
}

/// What a planned rule evaluation answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The index of the first matching YAML rule.
    Mapping,
    /// A contract rule of the tool's policy package (`annotations`, `meta`, ...).
    Contract(&'static str),
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("listed", &self.listed)
            .field("policy", &self.policy)
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// Whether `tools/resolve` can refine this tool.
    pub fn is_resolvable(&self) -> bool {
        self.engines.is_some()
    }

    /// Every reason `output` fails the tool's `outputSchema` (none when it
    /// declares none).
    pub fn validate_output(&self, output: &Value) -> Vec<ArgError> {
        self.output_validator
            .as_ref()
            .map(|v| schema::validate(v, output))
            .unwrap_or_default()
    }

    /// The resolver of `param`, if the server fills it.
    pub fn resolver(&self, param: &str) -> Option<&resolvers::Resolver> {
        self.resolvers.iter().find(|r| r.param == param)
    }

    /// Every reason `args` fails the whole input schema: for arguments once
    /// the server has filled its parameters.
    pub fn validate_complete(&self, args: &Value) -> Vec<ArgError> {
        schema::validate(&self.validator, args)
    }

    /// Evaluates a `policy` resolver's rule for `args` (the arguments known
    /// so far). `None`: undefined for these arguments.
    pub fn eval_resolver(
        &self,
        step: &policy::Step,
        args: &Value,
    ) -> Result<Option<Value>, policy::EvalError> {
        let Some(engines) = &self.engines else {
            return Ok(None);
        };
        let mut out = engines.eval([step], policy::input(&self.name, args))?;
        Ok(out.pop().flatten())
    }

    /// Whether a resolution's plan runs on `native` rather than on regorus'
    /// interpreter (always with regorus as its fallback).
    pub fn is_native(&self) -> bool {
        self.engines
            .as_ref()
            .is_some_and(|e| e.is_native(self.plan.iter().map(|(_, s)| s)))
    }

    /// Whether the plan and each of `rules` (rule paths, `data.p.r`) run on
    /// `native`, so that [`Tool::eval_pooled`] evaluates them without
    /// regorus' interpreter (and, for a shed engine, without making it).
    pub fn runs_natively<'r>(&self, rules: impl IntoIterator<Item = &'r str>) -> bool {
        let Some(engines) = &self.engines else {
            return false;
        };
        engines.is_native(self.plan.iter().map(|(_, s)| s))
            && rules.into_iter().all(|path| {
                engines.is_native([&policy::Step {
                    path: path.to_string(),
                    by_query: false,
                }])
            })
    }

    /// Evaluates `steps` for `args` (no caller) through the tool's engines,
    /// as a request does: `native` when every step was lowered, regorus
    /// otherwise. `None` without a policy.
    pub fn eval_pooled<'s>(
        &self,
        steps: impl IntoIterator<Item = &'s policy::Step> + Clone,
        args: &Value,
    ) -> Option<Result<Vec<Option<Value>>, policy::EvalError>> {
        let engines = self.engines.as_ref()?;
        Some(engines.eval(steps, policy::input(&self.name, args)))
    }

    /// Whether the shadow plan runs on `native` (false without
    /// `shadow_policy`).
    pub fn is_shadow_native(&self) -> bool {
        !self.shadow_plan.is_empty()
            && self
                .engines
                .as_ref()
                .is_some_and(|e| e.is_native(self.shadow_plan.iter().map(|(_, s)| s)))
    }

    /// The rules one resolution evaluates, with what each answers.
    pub fn plan(&self) -> &[(Field, policy::Step)] {
        &self.plan
    }

    /// The tool's `visible` rule, when its package declares one: evaluated
    /// per caller for listing (`visibility`), and with coverage on by
    /// `regent test` (`analysis::rego_test`).
    pub fn visible_rule(&self) -> Option<&policy::Step> {
        self.visible.as_ref()
    }

    /// Evaluates this tool's plan on `engine` for `args`, as a request does,
    /// returning the defined values keyed `mapping` and by contract rule name.
    /// For explain, tests, coverage and the worst-case proof, which need the
    /// engine itself (coverage, a clone per probe) rather than the pool.
    pub fn evaluate_on(
        &self,
        engine: &mut regorus::Engine,
        args: &Value,
        caller: Option<&crate::caller::Caller>,
    ) -> Result<Map<String, Value>, policy::EvalError> {
        engine.set_input(policy::input_as(&self.name, args, caller));
        let limits = self.limits();
        // One budget for the whole plan, as a request has.
        let _scope = budget::Scope::begin();
        let mut out = Map::new();
        for (field, step) in &self.plan {
            if let Some(v) = step.eval(engine, &limits)? {
                let key = match field {
                    Field::Mapping => "mapping",
                    Field::Contract(name) => name,
                };
                out.insert(key.to_string(), v);
            }
        }
        Ok(out)
    }

    /// Each rule set a request evaluates, as `(what, steps, input)`: the
    /// plan and the shadow plan on `args`, `visible` on the listing input,
    /// `upstream_request` on the arguments and an upstream's request.
    /// For the differential test against OPA, which evaluates them through
    /// [`Tool::eval_steps`], the request's own path.
    #[cfg(test)]
    pub(crate) fn plans(&self) -> Vec<(&'static str, Vec<&policy::Step>)> {
        let mut out = vec![("plan", self.plan.iter().map(|(_, s)| s).collect())];
        if !self.shadow_plan.is_empty() {
            out.push(("shadow", self.shadow_plan.iter().map(|(_, s)| s).collect()));
        }
        if let Some(v) = &self.visible {
            out.push(("visible", vec![v]));
        }
        if let Some(u) = &self.upstream_request {
            out.push(("upstream_request", vec![u]));
        }
        out
    }

    /// Evaluates `steps` on `input` exactly as a request does (native when
    /// every step was lowered, regorus otherwise); `None` without engines.
    #[cfg(test)]
    pub(crate) fn eval_steps(
        &self,
        steps: &[&policy::Step],
        input: regorus::Value,
    ) -> Option<Result<Vec<Option<Value>>, policy::EvalError>> {
        let engines = self.engines.as_ref()?;
        Some(engines.eval(steps.iter().copied(), input))
    }

    /// What one evaluation of this tool's policy may spend.
    pub fn limits(&self) -> budget::Limits {
        self.engines
            .as_deref()
            .map_or_else(budget::Limits::default, policy::EnginePool::limits)
    }

    /// A fresh copy of this tool's prepared engine, for explain, tests and
    /// coverage; `None` without a policy, an error when a shed engine
    /// cannot be made again (`policy::EnginePool::engine`).
    pub fn engine(&self) -> Option<Result<regorus::Engine, policy::EvalError>> {
        self.engines.as_deref().map(policy::EnginePool::engine)
    }

    /// Forgets the engine made again for a tool whose plan runs on
    /// `native` (its template is dropped at build, `policy::EnginePool::shed`),
    /// so that examining every tool at load leaves no engine behind; the next
    /// need makes it again.
    pub fn release_engine(&self) {
        if let Some(engines) = &self.engines {
            engines.release();
        }
    }

    /// The policy modules this tool reaches: its own and shadow packages
    /// and the library packages they reach (`rego::reach`), not the other
    /// library packages its engine holds. What the proof, the exercise and
    /// the argument analyses read; evaluation uses the whole engine.
    ///
    /// A shed engine is not made again for this (`policy::EnginePool::modules`).
    /// Should its texts not parse again, there is nothing to read: what
    /// evaluates the tool then fails closed and reports it.
    pub fn modules(&self) -> Vec<rego::PolicyModule> {
        let Some(Ok(mut modules)) = self.engines.as_deref().map(policy::EnginePool::modules) else {
            return Vec::new();
        };
        modules.retain(|m| self.reach.keeps(&m.path));
        modules
    }

    /// Where the first definition of rule `dotted` (`tools.files.deny`) is,
    /// among the policies this tool's engine holds.
    pub fn rule_location(&self, dotted: &str) -> Option<crate::diag::Location> {
        let modules = self.engines.as_ref()?.modules().ok()?;
        rego::rule_defs(&modules)
            .into_iter()
            .find(|d| format!("{}.{}", d.package, d.name()) == dotted)
            .map(|d| d.location)
    }
}

/// An immutable, compiled catalog revision.
pub struct Catalog {
    /// sha256 of every file's path and content.
    pub revision: String,
    tools: Vec<Tool>,
    by_name: HashMap<String, usize>,
    /// Problems that did not stop the catalog from loading.
    pub warnings: Vec<Diagnostic>,
    /// Visibility sets by caller, when some tool declares `visible`: a
    /// memo of a pure function of this snapshot and the caller, never an
    /// input to it (see `visibility`).
    visibility: Option<visibility::Cache>,
    /// Upstream tools held back because they drifted from their pin: not
    /// among `tools`, so nothing can run them; kept to say why a call to
    /// one is refused, and for the status (`state`).
    pub quarantined: Vec<crate::source::upstream::Quarantined>,
    /// The declared shape of a caller's claims (`caller:`), held against
    /// every caller before any decision about it (see `caller_schema`).
    caller_schema: Option<caller_schema::CallerSchema>,
    /// Every serving policy file's module as the build parsed it, in the
    /// files' order, until `check`'s lints take it
    /// ([`Catalog::take_policy_modules`]): they read the same files, and
    /// parsing 10,000 of them again was a tenth of a large catalog's start.
    policy_modules: std::sync::Mutex<Option<Vec<rego::PolicyModule>>>,
}

impl Catalog {
    /// The build's parse of every serving policy file (those that parsed,
    /// in the files' order), once: the first caller takes it, so that a
    /// serving catalog does not keep the syntax trees; `None` after.
    pub fn take_policy_modules(&self) -> Option<Vec<rego::PolicyModule>> {
        self.policy_modules
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// The quarantined upstream tool that would be listed as `name`.
    pub fn quarantined(&self, name: &str) -> Option<&crate::source::upstream::Quarantined> {
        self.quarantined.iter().find(|q| q.listed == name)
    }

    /// Tools in declaration order (files sorted by path).
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    /// The first 12 hex digits of the revision, for logs.
    pub fn short_revision(&self) -> &str {
        &self.revision[..12.min(self.revision.len())]
    }
}

/// For the unit tests of per-tool rules outside the plan (`visibility`,
/// `upstream_request`): a catalog of tool `a`, whose inputSchema is
/// `a_schema` (YAML) and whose policy is package `p` holding `rego` when it
/// is given, and tool `b`, without a policy.
#[cfg(test)]
pub(crate) fn two_tool_catalog(a_schema: &str, rego: Option<&str>) -> Catalog {
    let dir = tempfile::tempdir().unwrap();
    let policy = if rego.is_some() {
        "\n    policy: p"
    } else {
        ""
    };
    std::fs::write(
        dir.path().join("tools.yaml"),
        format!(
            "tools:\n  - name: a\n    inputSchema: {a_schema}{policy}\n  - name: b\n    inputSchema: {{type: object}}\n"
        ),
    )
    .unwrap();
    if let Some(rego) = rego {
        std::fs::write(
            dir.path().join("p.rego"),
            format!("package p\n\nimport rego.v1\n\n{rego}\n"),
        )
        .unwrap();
    }
    let source = crate::source::Source::load(&[dir.path().to_path_buf()]).unwrap();
    build(&source, &Default::default()).unwrap()
}
