//! Warm regorus engines, one template per tool, and evaluation under a time limit.
//!
//! Each tool owns an [`EnginePool`]: a prepared engine holding only that
//! tool's generated decision module, its own policy package, the shared
//! library packages and the data. Requests borrow an idle engine (cloning the
//! template when all are busy) so concurrent requests never wait on one
//! another and a clone never carries other tools' policies. This module
//! evaluates on regorus engines; `catalog`'s builder still prepares them
//! (the shared base engine, each tool's modules and data, `catalog/build`),
//! and the syntax tree is `rego`'s.
//!
//! A tool whose every planned rule runs on `native` needs regorus only as a
//! fallback, so its template is dropped once the build has warmed, checked
//! and lowered it ([`EnginePool::shed`]), keeping the [`Recipe`] it was made
//! by: regorus' memory is most of a tool's, and a catalog of thousands of
//! tools would otherwise hold an engine per tool that never runs. The
//! template is made again, from the same texts on the same shared base, the
//! first time something needs regorus (a fallback, explain, tests, check).

use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};

use regorus::Engine;
use regorus::utils::limits::ExecutionTimerConfig;
use serde_json::Value;

use super::budget::{self, Limits, Scope};
use super::errors::{Limit, find_location, first_message, limit_hit, rego_diagnostic};
use super::native::{Outcome, Program};
use crate::caller::Caller;
use crate::diag::{Diagnostic, Location};
use crate::rego::PolicyModule;

#[cfg(all(test, debug_assertions))]
thread_local! {
    /// How many native answers this thread has compared with regorus, so
    /// that a differential test can tell that it compared something rather
    /// than fell back to regorus on every input.
    pub(crate) static COMPARED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many native answers this thread has compared with regorus.
#[cfg(all(test, debug_assertions))]
pub(crate) fn compared() -> usize {
    COMPARED.with(std::cell::Cell::get)
}

/// A policy failure at evaluation: the engine's message, cleaned up.
#[derive(Debug, Clone)]
pub struct EvalError {
    pub message: String,
    /// `file:line:column` of the failing expression, when regorus says.
    pub location: Option<Location>,
    pub timed_out: bool,
}

impl EvalError {
    /// Whether a memory guard of [`budget`] stopped the evaluation.
    pub fn over_memory_budget(&self) -> bool {
        limit_hit(&self.message) == Some(Limit::Memory)
    }
}

/// Engines for one tool: a prepared template and the idle copies.
pub struct EnginePool {
    /// The prepared engine requests clone; `None` once shed (see `lazy`).
    template: Option<Engine>,
    /// For a shed template: how to make it again, and the one made since.
    lazy: Option<Lazy>,
    idle: Mutex<Vec<Engine>>,
    limits: Limits,
    /// The planned rules lowered for `native`, when any could be.
    native: Option<Program>,
    /// A construct of the planned rules where regorus answers differently
    /// from OPA (`rego/portability`), as `file:line:column: what`: when
    /// native hands a request to regorus, only regorus' error may come
    /// back, never its answer.
    flagged: Option<String>,
}

impl EnginePool {
    /// Wraps a template engine that has already been prepared (evaluated once),
    /// so that clones start warm.
    pub fn new(template: Engine, limits: Limits) -> EnginePool {
        // Copies are made on first use: a catalog of thousands of tools, most
        // of them rarely called, should not pay for an idle copy of each.
        EnginePool {
            template: Some(template),
            lazy: None,
            idle: Mutex::new(Vec::new()),
            limits,
            native: None,
            flagged: None,
        }
    }

    /// Marks the planned rules as holding a construct where regorus
    /// answers differently from OPA (`what`, located): a request native
    /// cannot decide then fails closed unless regorus fails too.
    pub fn with_flagged(mut self, what: Option<String>) -> EnginePool {
        self.flagged = what;
        self
    }

    /// Lowers the rules of `steps` for `native` (those it can), so that a
    /// request whose steps all were is evaluated without the interpreter.
    pub fn with_native<'s>(mut self, steps: impl IntoIterator<Item = &'s Step>) -> EnginePool {
        let paths = steps
            .into_iter()
            .filter(|s| !s.by_query)
            .map(|s| s.path.as_str());
        if let Some(template) = &mut self.template {
            self.native = super::lower::program(template, paths, self.limits);
        }
        self
    }

    /// Drops the template, keeping `recipe` to make it again when regorus is
    /// needed. For a tool whose every step runs on `native` (the build
    /// decides, after warming and lowering the template): regorus is then a
    /// fallback, and most tools of a large catalog never fall back.
    pub fn shed(mut self, recipe: Recipe) -> EnginePool {
        self.template = None;
        self.lazy = Some(Lazy {
            recipe,
            made: Mutex::new(None),
            parsed: Mutex::new(None),
        });
        self
    }

    /// Hands a shed pool the modules of its recipe's texts as the build
    /// parsed them (`added`, in the recipe's order, generated ones left
    /// out), so that the first reading of its modules (`check::on_load`'s
    /// proof and exercise) parses nothing again. Kept, as a parse made by
    /// [`EnginePool::modules`] is, until [`EnginePool::release`]. Nothing
    /// for a kept template, which holds its modules.
    pub fn with_parsed(self, added: Vec<PolicyModule>) -> EnginePool {
        if let Some(lazy) = &self.lazy {
            *lazy.parsed.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(added));
        }
        self
    }

    /// Forgets the template made again since [`EnginePool::shed`] and the
    /// idle copies, so that what needed regorus once (`check::on_load`
    /// examining the tool) does not keep it for the catalog's life; the
    /// next need makes it again. Nothing for a kept template.
    pub fn release(&self) {
        if let Some(lazy) = &self.lazy {
            *lazy.made.lock().unwrap_or_else(|p| p.into_inner()) = None;
            *lazy.parsed.lock().unwrap_or_else(|p| p.into_inner()) = None;
            self.idle.lock().unwrap_or_else(|p| p.into_inner()).clear();
        }
    }

    /// A copy of the template: the kept one, or for a shed one the engine
    /// made again (once, then kept until [`EnginePool::release`]).
    fn copy(&self) -> Result<Engine, EvalError> {
        if let Some(template) = &self.template {
            return Ok(template.clone());
        }
        let lazy = self.lazy.as_ref().ok_or_else(missing_engine)?;
        let engine = made_once(&lazy.made, || lazy.recipe.make(&self.limits))?;
        Ok((*engine).clone())
    }

    /// The modules this pool's engine holds that a person wrote, for the
    /// analyses that read the syntax tree (`Tool::modules`). For a shed
    /// template nothing is made again for this: the recipe's texts are
    /// parsed alone (no base engine copied, no warm-up), and the parse is
    /// kept until [`EnginePool::release`], since one examination asks
    /// several times.
    pub fn modules(&self) -> Result<Vec<PolicyModule>, EvalError> {
        if let Some(template) = &self.template {
            return Ok(crate::rego::modules(&mut template.clone()));
        }
        let lazy = self.lazy.as_ref().ok_or_else(missing_engine)?;
        let added = made_once(&lazy.parsed, || lazy.recipe.parse_added())?;
        let mut out = lazy.recipe.library.as_ref().clone();
        out.extend(added.iter().cloned());
        Ok(out)
    }

    /// Whether every one of `steps` runs on `native`.
    pub fn is_native<'r>(&self, steps: impl IntoIterator<Item = &'r Step>) -> bool {
        self.native_entries(steps).is_some()
    }

    fn native_entries<'r>(&self, steps: impl IntoIterator<Item = &'r Step>) -> Option<Vec<usize>> {
        let program = self.native.as_ref()?;
        steps
            .into_iter()
            .map(|s| {
                if s.by_query {
                    None
                } else {
                    program.entry(&s.path)
                }
            })
            .collect()
    }

    /// What one evaluation on these engines may spend.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Evaluates each rule of `rules` with `input` on one engine, returning
    /// each value as JSON (`None` when undefined).
    pub fn eval<'r>(
        &self,
        steps: impl IntoIterator<Item = &'r Step> + Clone,
        input: regorus::Value,
    ) -> Result<Vec<Option<Value>>, EvalError> {
        if let (Some(program), Some(entries)) = (&self.native, self.native_entries(steps.clone())) {
            let scope = Scope::begin();
            #[cfg(debug_assertions)]
            super::native::took_opa_only_path();
            match program.eval(&entries, &input, &self.limits, &scope) {
                Outcome::Values(values) => {
                    in_time(&scope, &self.limits)?;
                    let out = values
                        .into_iter()
                        .map(|v| to_json(v, &self.limits))
                        .collect::<Result<Vec<_>, _>>()?;
                    drop(scope);
                    // Where native answered as OPA and regorus would not,
                    // there is nothing to compare with.
                    #[cfg(debug_assertions)]
                    if !super::native::took_opa_only_path() {
                        self.agrees_with_regorus(steps, input, &out);
                    }
                    return Ok(out);
                }
                Outcome::TimedOut => {
                    in_time(&scope, &self.limits)?;
                }
                // OPA's answer is one regent cannot hold (issue 27): an
                // error, never regorus' other number.
                Outcome::Refused(message) => {
                    return Err(EvalError {
                        message,
                        location: None,
                        timed_out: false,
                    });
                }
                // Nothing of the attempt is kept, its charges included: the
                // scope ends here and regorus starts afresh.
                Outcome::Fallback => {}
            }
            if let Some(what) = &self.flagged {
                // regorus' answer may not be OPA's here: only its error is.
                self.eval_regorus(steps, input)?;
                return Err(EvalError {
                    message: format!("regent cannot evaluate this input as OPA does: {what}"),
                    location: None,
                    timed_out: false,
                });
            }
        }
        self.eval_regorus(steps, input)
    }

    /// Every answer of `native` is checked against regorus' in debug builds,
    /// so the whole test suite compares the two evaluators. An answer where
    /// regorus fails (other than by its clock, which a loaded debug build
    /// can pass) or answers differently is a bug in `native` or its lowering.
    #[cfg(debug_assertions)]
    fn agrees_with_regorus<'r>(
        &self,
        steps: impl IntoIterator<Item = &'r Step>,
        input: regorus::Value,
        native: &[Option<Value>],
    ) {
        let steps: Vec<&Step> = steps.into_iter().collect();
        #[cfg(test)]
        COMPARED.with(|c| c.set(c.get() + 1));
        match self.eval_regorus(steps.iter().copied(), input.clone()) {
            Ok(reference) => assert_eq!(
                native,
                &reference[..],
                "native evaluation differs from regorus for {:?} on input {input}",
                steps.iter().map(|s| &s.path).collect::<Vec<_>>()
            ),
            Err(e) if e.timed_out => {}
            Err(e) => panic!(
                "native evaluation answered {native:?} where regorus fails ({}) for {:?} on input {input}",
                e.message,
                steps.iter().map(|s| &s.path).collect::<Vec<_>>()
            ),
        }
    }

    fn eval_regorus<'r>(
        &self,
        steps: impl IntoIterator<Item = &'r Step>,
        input: regorus::Value,
    ) -> Result<Vec<Option<Value>>, EvalError> {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut engine = match idle {
            Some(engine) => engine,
            None => self.copy()?,
        };
        engine.set_input(input);
        // One budget and one clock for the whole plan: the rules of one
        // request share them, and each step's own check after it measures
        // from the plan's start.
        let _scope = Scope::begin();
        let out: Result<Vec<_>, _> = steps
            .into_iter()
            .map(|s| s.eval(&mut engine, &self.limits))
            .collect();
        // An engine that failed is not returned: its internal state after an
        // aborted evaluation is not something we want to reason about.
        if out.is_ok() {
            self.idle
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(engine);
        }
        out
    }

    /// A fresh copy of the template, for tools that need the engine itself
    /// (tests, coverage, explain). Making a shed template again adds the
    /// texts the build added to the same base, which parsed then; should it
    /// fail all the same, the error is the caller's to report (fail
    /// closed), never a panic in a serving process.
    pub fn engine(&self) -> Result<Engine, EvalError> {
        self.copy()
    }
}

/// How a tool's engine was made: the build's base engine (library packages
/// and data, one for every tool) and the modules the build added to it, in
/// order (the tool's own and shadow packages, the generated mapping rule).
pub struct Recipe {
    pub base: Arc<Engine>,
    /// The base's person-written modules, in its order: parsed once by the
    /// build and shared by every recipe of it, so that reading a shed
    /// tool's modules neither copies the base nor parses its libraries.
    pub library: Arc<Vec<PolicyModule>>,
    /// (file, text) of each module added to the base.
    pub modules: Vec<(String, Arc<str>)>,
    /// A planned step evaluated once on the made engine, so that its copies
    /// start prepared, as the build's warmed template's do; its answer (on
    /// an empty input) is not looked at.
    pub warm: Option<Step>,
}

impl Recipe {
    /// The person-written modules of the texts added to the base, in
    /// order, parsed without making the engine: each on a bare engine of
    /// its own (the base's are [`Recipe::library`]).
    fn parse_added(&self) -> Result<Vec<PolicyModule>, EvalError> {
        let mut out = Vec::new();
        for (path, text) in &self.modules {
            let mut scratch = parse_engine();
            scratch
                .add_policy(path.clone(), text.to_string())
                .map_err(|e| remake_error(&e.to_string()))?;
            out.extend(crate::rego::modules(&mut scratch));
        }
        Ok(out)
    }

    fn make(&self, limits: &Limits) -> Result<Engine, EvalError> {
        let mut engine = (*self.base).clone();
        for (path, text) in &self.modules {
            engine
                .add_policy(path.clone(), text.to_string())
                .map_err(|e| remake_error(&e.to_string()))?;
        }
        if let Some(step) = &self.warm {
            engine.set_input(regorus::Value::new_object());
            let _ = step.eval(&mut engine, limits);
        }
        Ok(engine)
    }
}

/// A shed template's text that no longer parses: an evaluation error
/// (the request fails closed), never a panic.
fn remake_error(text: &str) -> EvalError {
    EvalError {
        message: format!(
            "cannot make the tool's policy engine again: {}; reload the catalog (regent check names the problem)",
            first_message(text)
        ),
        location: find_location(text),
        timed_out: false,
    }
}

/// A shed template's recipe and the engine made from it since.
struct Lazy {
    recipe: Recipe,
    made: Mutex<Option<Arc<Engine>>>,
    /// The modules of the recipe's added texts, parsed without an engine
    /// made ([`EnginePool::modules`]) or handed over by the build
    /// ([`EnginePool::with_parsed`]).
    parsed: Mutex<Option<Arc<Vec<PolicyModule>>>>,
}

/// One rule read per request: a rule path for `eval_rule`, or, for a rule
/// that a policy defines by path (`annotations.readOnlyHint := true`), whose
/// prefix `eval_rule` refuses, a reference evaluated as a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub path: String,
    pub by_query: bool,
}

impl Step {
    /// Evaluates the step on `engine` with whatever input it holds.
    pub fn eval(&self, engine: &mut Engine, limits: &Limits) -> Result<Option<Value>, EvalError> {
        if self.by_query {
            eval_query(engine, &self.path, limits)
        } else {
            eval_rule(engine, &self.path, limits)
        }
    }
}

/// Evaluates `rule` on `engine` with whatever input it holds, within `limits`.
pub fn eval_rule(
    engine: &mut Engine,
    rule: &str,
    limits: &Limits,
) -> Result<Option<Value>, EvalError> {
    let scope = Scope::begin();
    let value = engine
        .eval_rule(rule.to_string())
        .map_err(|e| eval_error(&e.to_string()))?;
    in_time(&scope, limits)?;
    to_json(value, limits)
}

/// An answer that arrives after the time limit is not an answer: regorus
/// cannot interrupt a builtin, so an evaluation can finish late and
/// "successfully"; using what it returned would fail open.
fn in_time(scope: &Scope, limits: &Limits) -> Result<(), EvalError> {
    let took = scope.elapsed();
    if took > limits.time {
        return Err(EvalError {
            message: format!(
                "policy evaluation exceeded its time limit of {} ms (it took {} ms); its answer was discarded",
                limits.time.as_millis(),
                took.as_millis()
            ),
            location: None,
            timed_out: true,
        });
    }
    Ok(())
}

/// A rule's value as JSON (`None` when undefined). Sets and objects from Rego
/// come out as JSON arrays and objects; every value a policy can produce has
/// a JSON form, but a value whose parts are shared can be far larger written
/// out than in memory, so it is measured against the budget first.
fn to_json(value: regorus::Value, limits: &Limits) -> Result<Option<Value>, EvalError> {
    if value == regorus::Value::Undefined {
        return Ok(None);
    }
    if budget::logical_size(&value, limits.memory).is_none() {
        return Err(EvalError {
            message: format!(
                "policy evaluation exceeded its memory budget: its result would take more than {} bytes written out",
                limits.memory
            ),
            location: None,
            timed_out: false,
        });
    }
    serde_json::to_value(&value)
        .map(Some)
        .map_err(|e| EvalError {
            message: format!("policy produced a value that is not json: {e}"),
            location: None,
            timed_out: false,
        })
}

/// Evaluates the reference `query` (such as `data.tools.x.annotations`) on
/// `engine` with `input`. Unlike [`eval_rule`] it reaches any reference, also
/// the prefix of a rule defined by a path (`annotations.destructiveHint := ...`).
pub fn query_value(
    engine: &mut Engine,
    query: &str,
    input: regorus::Value,
    limits: &Limits,
) -> Result<Option<Value>, EvalError> {
    engine.set_input(input);
    eval_query(engine, query, limits)
}

/// Evaluates the reference `query` on `engine` with whatever input it holds.
pub fn eval_query(
    engine: &mut Engine,
    query: &str,
    limits: &Limits,
) -> Result<Option<Value>, EvalError> {
    let scope = Scope::begin();
    let results = engine
        .eval_query(query.to_string(), false)
        .map_err(|e| eval_error(&e.to_string()))?;
    in_time(&scope, limits)?;
    let Some(value) = results
        .result
        .into_iter()
        .next()
        .and_then(|r| r.expressions.into_iter().next())
        .map(|e| e.value)
    else {
        return Ok(None);
    };
    to_json(value, limits)
}

/// A new engine with regent's settings: Rego v1, a time limit on every
/// evaluation and the memory guards of [`budget`] on size-driving builtins.
pub fn new_engine(limits: Limits) -> Engine {
    let mut engine = Engine::new();
    engine.set_execution_timer_config(ExecutionTimerConfig {
        limit: limits.time,
        check_interval: NonZeroU32::new(32).expect("non-zero"),
    });
    // Installing on a fresh engine cannot collide with another extension.
    budget::install(&mut engine, limits).expect("guards install on a fresh engine");
    // A builtin given the wrong type is an error, not a silent undefined:
    // policies make safety claims, so mistakes must be loud.
    engine.set_strict_builtin_errors(true);
    engine
}

/// An engine to parse policies on and read their syntax tree, never to
/// evaluate: no limits and no guards, which only evaluation reads (a
/// catalog of 10,000 policy files installed the guards on an engine per
/// file only to parse it). Rego v1 and the policy length limits are
/// regorus' defaults, as on [`new_engine`].
pub fn parse_engine() -> Engine {
    Engine::new()
}

/// Adds a policy file, turning a parse error into a located diagnostic.
pub fn add_policy(engine: &mut Engine, path: &str, text: &str) -> Result<String, Diagnostic> {
    engine
        .add_policy(path.to_string(), text.to_string())
        .map_err(|e| {
            rego_diagnostic("rego-parse", path, &e.to_string())
                .with_help("fix the Rego at the caret; regent reads Rego v1, where rule bodies take `if` and partial sets `contains`")
        })
}

fn eval_error(text: &str) -> EvalError {
    EvalError {
        message: first_message(text),
        location: find_location(text),
        timed_out: limit_hit(text) == Some(Limit::Time),
    }
}

/// Whether regorus refused `rule` because no module declares it (as opposed
/// to the rule failing).
pub fn is_undeclared(e: &EvalError) -> bool {
    e.message.contains("not a valid rule path")
}

/// The input document every policy sees: `{"tool": name, "arguments": {...}}`.
pub fn input(tool: &str, args: &Value) -> regorus::Value {
    input_as(tool, args, None)
}

/// The policy input for a request from `caller`: `input.caller` is
/// `{"subject", "issuer", "claims"}` when there is one, absent otherwise.
pub fn input_as(tool: &str, args: &Value, caller: Option<&Caller>) -> regorus::Value {
    input_doc(tool, Some(args), caller)
}

/// The input of a tool's `visible` rule, evaluated for listing:
/// `{"tool": name}` and `caller` when there is one. There are no arguments
/// (a listing has none), so `input.arguments` is absent and any rule body
/// that reads it is undefined.
pub fn listing_input(tool: &str, caller: Option<&Caller>) -> regorus::Value {
    input_doc(tool, None, caller)
}

/// The input of a tool's `upstream_request` rule, evaluated when an
/// upstream sends a request during a forwarded call of the tool:
/// `{"tool", "arguments", "caller"?, "request": {"method", "params"}}`.
pub fn upstream_request_input(
    tool: &str,
    args: &Value,
    caller: Option<&Caller>,
    method: &str,
    params: &Value,
) -> regorus::Value {
    use serde::Deserialize;
    let mut input = input_doc(tool, Some(args), caller);
    if let Ok(obj) = input.as_object_mut() {
        let request = serde_json::json!({"method": method, "params": params});
        let request = regorus::Value::deserialize(&request).unwrap_or(regorus::Value::Undefined);
        obj.insert(regorus::Value::from("request"), request);
    }
    input
}

/// `{"tool", "arguments"?, "caller"?}`, the one builder of policy inputs.
fn input_doc(tool: &str, args: Option<&Value>, caller: Option<&Caller>) -> regorus::Value {
    use serde::Deserialize;
    let mut input = regorus::Value::new_object();
    if let Ok(obj) = input.as_object_mut() {
        obj.insert(regorus::Value::from("tool"), regorus::Value::from(tool));
        if let Some(args) = args {
            // Deserializing borrows the arguments instead of cloning them first.
            let args = regorus::Value::deserialize(args).unwrap_or(regorus::Value::Undefined);
            obj.insert(regorus::Value::from("arguments"), args);
        }
        if let Some(c) = caller {
            let c = regorus::Value::deserialize(&c.to_value()).unwrap_or(regorus::Value::Undefined);
            obj.insert(regorus::Value::from("caller"), c);
        }
    }
    input
}

/// What a shed pool keeps made: the value in `slot`, or `make`'s, kept
/// there. Made under the lock, so callers arriving together wait for one
/// making rather than each making its own.
fn made_once<T>(
    slot: &Mutex<Option<Arc<T>>>,
    make: impl FnOnce() -> Result<T, EvalError>,
) -> Result<Arc<T>, EvalError> {
    let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(value) = &*slot {
        return Ok(value.clone());
    }
    let value = Arc::new(make()?);
    *slot = Some(value.clone());
    Ok(value)
}

/// A pool with neither a template nor a recipe (never built so).
fn missing_engine() -> EvalError {
    EvalError {
        message: "the tool's policy engine is missing".to_string(),
        location: None,
        timed_out: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// An engine holding `rego` (package `p`) under `limits`.
    fn engine(rego: &str, limits: Limits) -> Engine {
        let mut e = new_engine(limits);
        add_policy(&mut e, "p.rego", &format!("package p\n{rego}")).unwrap();
        e
    }

    #[test]
    fn an_answer_after_the_time_limit_is_discarded() {
        // One builtin call that regorus cannot interrupt and that takes far
        // longer than a millisecond in any build: regorus' own timer never
        // gets a chance to fire, so only the check after the call stops it.
        let limits = Limits {
            time: Duration::from_millis(1),
            memory: 1 << 30,
        };
        let mut e = engine("x if count(numbers.range(1, 3000000)) > 0", limits);
        let err = eval_rule(&mut e, "data.p.x", &limits).unwrap_err();
        assert!(err.timed_out, "{}", err.message);
        assert!(
            err.message.contains("time limit of 1 ms"),
            "{}",
            err.message
        );
        let err = eval_query(&mut e, "data.p.x", &limits).unwrap_err();
        assert!(err.timed_out, "{}", err.message);
    }

    #[test]
    fn a_shed_template_is_made_again_alike() {
        // A pool that keeps its template and one that sheds it, from the
        // same base and text: regorus answers alike, once made, after a
        // release and made again, and through a copy of the engine.
        let limits = Limits::default();
        let base = Arc::new(new_engine(limits));
        let text: Arc<str> = "package p\nimport rego.v1\nx := input.n * 2 if input.n > 1\n".into();
        let mut e = (*base).clone();
        add_policy(&mut e, "p.rego", &text).unwrap();
        let step = Step {
            path: "data.p.x".into(),
            by_query: false,
        };
        let kept = EnginePool::new(e.clone(), limits);
        let shed = EnginePool::new(e, limits).shed(Recipe {
            base,
            library: Arc::default(),
            modules: vec![("p.rego".to_string(), text)],
            warm: Some(step.clone()),
        });
        let input = |n: i64| regorus::Value::from(serde_json::json!({ "n": n }));
        for round in 0..2 {
            for n in [0, 2, 21] {
                let want = kept.eval_regorus([&step], input(n)).unwrap();
                assert_eq!(
                    shed.eval_regorus([&step], input(n)).unwrap(),
                    want,
                    "n = {n}, round {round}"
                );
                let mut copy = shed.engine().unwrap();
                copy.set_input(input(n));
                assert_eq!(vec![step.eval(&mut copy, &limits).unwrap()], want);
            }
            shed.release();
        }
        assert_eq!(
            shed.eval_regorus([&step], input(21)).unwrap(),
            vec![Some(serde_json::json!(42))]
        );
    }

    #[test]
    fn a_shed_template_that_cannot_be_made_again_fails_closed() {
        // The recipe's text no longer parses (it cannot happen to a text
        // the build parsed, but a bug must not become a panic): every use
        // of the engine is an error saying so, never an answer.
        let limits = Limits::default();
        let base = Arc::new(new_engine(limits));
        let mut e = (*base).clone();
        add_policy(&mut e, "p.rego", "package p\nx := 1\n").unwrap();
        let step = Step {
            path: "data.p.x".into(),
            by_query: false,
        };
        let pool = EnginePool::new(e, limits).shed(Recipe {
            base,
            library: Arc::default(),
            modules: vec![("p.rego".to_string(), "package p\nx := := 1\n".into())],
            warm: Some(step.clone()),
        });
        let Err(err) = pool.engine() else {
            panic!("an engine was made from a text that does not parse")
        };
        assert!(
            err.message
                .starts_with("cannot make the tool's policy engine again: "),
            "{}",
            err.message
        );
        assert!(!err.timed_out);
        let err = pool
            .eval([&step], regorus::Value::new_object())
            .unwrap_err();
        assert!(
            err.message.contains("policy engine again"),
            "{}",
            err.message
        );
        assert!(pool.modules().is_err());
        // Asked again, it fails again: nothing half-made was kept.
        assert!(pool.engine().is_err());
    }

    #[test]
    fn a_shed_templates_modules_are_read_without_making_it() {
        let limits = Limits::default();
        let base = Arc::new(new_engine(limits));
        let text: Arc<str> = "package p\nx := 1\ny contains 2\n".into();
        let mut e = (*base).clone();
        add_policy(&mut e, "p.rego", &text).unwrap();
        let kept = EnginePool::new(e.clone(), limits);
        let shed = EnginePool::new(e, limits).shed(Recipe {
            base,
            library: Arc::default(),
            modules: vec![("p.rego".to_string(), text)],
            warm: None,
        });
        let names = |pool: &EnginePool| {
            let modules = pool.modules().unwrap();
            let defs = crate::rego::rule_defs(&modules);
            (
                modules
                    .iter()
                    .map(|m| m.package.clone())
                    .collect::<Vec<_>>(),
                defs.iter()
                    .map(|d| d.name().to_string())
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(names(&shed), names(&kept));
        assert_eq!(names(&shed).1, ["x", "y"]);
        let Some(lazy) = &shed.lazy else {
            panic!("shed")
        };
        assert!(lazy.made.lock().unwrap().is_none(), "no engine was made");
        shed.release();
        assert!(lazy.parsed.lock().unwrap().is_none());
    }

    #[test]
    fn a_shed_pools_modules_from_the_build_are_those_it_would_parse() {
        // A library in the base, the tool's text added: the modules a kept
        // template holds, those a shed pool parses alone and those the
        // build hands it are the same, and a release forgets the handed
        // ones (read again, they are parsed alike).
        let limits = Limits::default();
        let lib = "package lib\nimport rego.v1\nok := true\n";
        let mut base = new_engine(limits);
        add_policy(&mut base, "lib.rego", lib).unwrap();
        let library = Arc::new(crate::rego::modules(&mut base.clone()));
        let base = Arc::new(base);
        let text: Arc<str> = "package p\nimport data.lib\nx := lib.ok\ny contains 2\n".into();
        let mut e = (*base).clone();
        add_policy(&mut e, "p.rego", &text).unwrap();
        let recipe = || Recipe {
            base: base.clone(),
            library: library.clone(),
            modules: vec![("p.rego".to_string(), text.clone())],
            warm: None,
        };
        let kept = EnginePool::new(e.clone(), limits);
        let alone = EnginePool::new(e.clone(), limits).shed(recipe());
        let mut scratch = parse_engine();
        add_policy(&mut scratch, "p.rego", &text).unwrap();
        let handed = EnginePool::new(e, limits)
            .shed(recipe())
            .with_parsed(crate::rego::modules(&mut scratch));
        let read = |pool: &EnginePool| {
            let modules = pool.modules().unwrap();
            let defs = crate::rego::rule_defs(&modules);
            (
                modules
                    .iter()
                    .map(|m| (m.path.clone(), m.package.clone(), m.text.clone()))
                    .collect::<Vec<_>>(),
                defs.iter()
                    .map(|d| format!("{}.{} {}", d.package, d.name(), d.location))
                    .collect::<Vec<_>>(),
            )
        };
        let want = read(&kept);
        assert_eq!(want.0.len(), 2);
        assert_eq!(want.0[0].0, "lib.rego");
        assert_eq!(want.0[1].2, &*text);
        assert_eq!(read(&alone), want);
        assert_eq!(read(&handed), want);
        let Some(lazy) = &handed.lazy else {
            panic!("shed")
        };
        assert!(lazy.made.lock().unwrap().is_none(), "no engine was made");
        handed.release();
        assert!(lazy.parsed.lock().unwrap().is_none());
        assert_eq!(read(&handed), want);
        // A kept template takes no parse from the build.
        let kept = kept.with_parsed(Vec::new());
        assert_eq!(read(&kept), want);
    }

    #[test]
    fn a_plan_shares_one_budget() {
        // Each rule alone fits the budget; the plan's two together do not.
        let limits = Limits {
            time: Duration::from_secs(10),
            memory: 3 << 20,
        };
        let rego = "a := count(numbers.range(1, 60000))\nb := count(numbers.range(1, 60000))";
        let mut e = engine(rego, limits);
        assert!(eval_rule(&mut e, "data.p.a", &limits).unwrap().is_some());
        let pool = EnginePool::new(e, limits);
        let steps = [
            Step {
                path: "data.p.a".into(),
                by_query: false,
            },
            Step {
                path: "data.p.b".into(),
                by_query: false,
            },
        ];
        let err = pool.eval(&steps, regorus::Value::new_object()).unwrap_err();
        assert!(err.over_memory_budget(), "{}", err.message);
    }

    #[test]
    fn what_reads_only_data_is_computed_once_at_load() {
        let limits = Limits::default();
        let mut e = new_engine(limits);
        e.add_data(regorus::Value::from_json_str(r#"{"names": ["Ann", "bob"]}"#).unwrap())
            .unwrap();
        let rego = "names := {lower(n) | some n in data.names}\nmine := {n | some n in names; n == input.arguments.who}";
        add_policy(
            &mut e,
            "p.rego",
            &format!("package p\nimport rego.v1\n{rego}"),
        )
        .unwrap();
        let program =
            super::super::lower::program(&mut e, ["data.p.names", "data.p.mine"], limits).unwrap();
        let value =
            |path: &str| &program.rules[program.entry(path).unwrap()].defs[0].bodies[0].value;
        match value("data.p.names") {
            super::super::native::Term::Const(v) => {
                assert_eq!(
                    serde_json::to_value(v).unwrap(),
                    serde_json::json!(["ann", "bob"])
                )
            }
            _ => panic!("the data-only comprehension was not folded"),
        }
        // One that reads the input stays a comprehension.
        assert!(matches!(
            value("data.p.mine"),
            super::super::native::Term::Compr { .. }
        ));
    }

    #[test]
    fn a_reference_named_twice_is_looked_up_once() {
        let limits = Limits::default();
        let mut e = new_engine(limits);
        let rego = "r := input.a.b\ns := [input.a.b, input.a[\"b\"], input.a.c, r.d, r.d]";
        add_policy(
            &mut e,
            "p.rego",
            &format!("package p\nimport rego.v1\n{rego}"),
        )
        .unwrap();
        let program =
            super::super::lower::program(&mut e, ["data.p.r", "data.p.s"], limits).unwrap();
        // `input.a`, `input.a.b`, `input.a.c`, `r.d`.
        assert_eq!(program.paths.len(), 4);
    }
}
