//! A tool's engines: the prepared template requests clone and the idle
//! copies, the template shed for its [`Recipe`] and made again on first
//! need, the modules read without making it, and which planned rules run on
//! `native` (with regorus compared or fallen back to).
//!
//! Evaluating one step under limits, making and feeding engines, and the
//! errors' wording are the parent's (`policy/engine`); what the build puts
//! in a recipe is `catalog/build`'s.

use std::sync::{Arc, Mutex};

use regorus::Engine;
use serde_json::Value;

#[cfg(all(test, debug_assertions))]
use super::COMPARED;
use super::{EvalError, Step, in_time, parse_engine, to_json};
use crate::policy::budget::{Limits, Scope};
use crate::policy::errors::{find_location, first_message};
use crate::policy::native::{Outcome, Program};
use crate::rego::PolicyModule;

/// Engines for one tool: a prepared template and the idle copies.
pub struct EnginePool {
    /// The prepared engine requests clone; `None` once shed (see `lazy`).
    /// Boxed: a regorus engine is 768 bytes inline, which a shed pool (most
    /// of a large catalog's) would otherwise carry empty (7.7 MB at 10,000
    /// tools).
    template: Option<Box<Engine>>,
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
    /// Where the tool's modules first index with a key that is not a
    /// literal (`file:line:column`), when they do: regorus indexes an
    /// array by a number the request spelled with an exponent (`2E0`) as
    /// by the integer, OPA's answer is undefined, and regent cannot see
    /// inside regorus' interpreter, so a request holding such a number
    /// evaluated there fails closed (`policy::spelled::regorus_index_refusal`).
    computed_index: Option<String>,
    /// Whether the tool's modules refer to a request's value that may be
    /// a number (`rego::portability::number_references`, found once at
    /// load). When they do not, no number of the request can meet its
    /// rules, so they are evaluated without the request's numbers spelled
    /// by hand (`policy::spelled::without`): a number regent cannot hold
    /// refuses nothing there, as it meets nothing in OPA either
    /// (`count(input.arguments.s) == 5` beside an unread
    /// `4.999999999999999999`).
    request_numbers: bool,
}

impl EnginePool {
    /// Wraps a template engine that has already been prepared (evaluated once),
    /// so that clones start warm.
    pub fn new(template: Engine, limits: Limits) -> EnginePool {
        // Copies are made on first use: a catalog of thousands of tools, most
        // of them rarely called, should not pay for an idle copy of each.
        EnginePool {
            template: Some(Box::new(template)),
            lazy: None,
            idle: Mutex::new(Vec::new()),
            limits,
            native: None,
            flagged: None,
            computed_index: None,
            request_numbers: true,
        }
    }

    /// Marks the planned rules as holding a construct where regorus
    /// answers differently from OPA (`what`, located): a request native
    /// cannot decide then fails closed unless regorus fails too.
    pub fn with_flagged(mut self, what: Option<String>) -> EnginePool {
        self.flagged = what;
        self
    }

    /// Notes where the tool's modules first index with a computed key
    /// (`rego::data_numbers::computed_index`, found once at load), so that a
    /// request holding an integer spelled with an exponent is never
    /// answered by regorus (a plan that runs there, or native's fallback).
    pub fn with_computed_index(mut self, at: Option<String>) -> EnginePool {
        self.computed_index = at;
        self
    }

    /// Notes whether the tool's modules refer to a request's value that
    /// may be a number (found once at load); `false` evaluates them without
    /// the request's numbers spelled by hand.
    pub fn with_request_numbers(mut self, read: bool) -> EnginePool {
        self.request_numbers = read;
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
            self.native = crate::policy::lower::program(template, paths, self.limits);
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
            return Ok((**template).clone());
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
            return Ok(crate::rego::modules(&mut (**template).clone()));
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
        if self.request_numbers {
            self.eval_as_read(steps, input)
        } else {
            crate::policy::spelled::without(|| self.eval_as_read(steps, input))
        }
    }

    /// [`EnginePool::eval`] with the request's numbers as the thread holds
    /// them.
    fn eval_as_read<'r>(
        &self,
        steps: impl IntoIterator<Item = &'r Step> + Clone,
        input: regorus::Value,
    ) -> Result<Vec<Option<Value>>, EvalError> {
        if let (Some(program), Some(entries)) = (&self.native, self.native_entries(steps.clone())) {
            let scope = Scope::begin();
            #[cfg(debug_assertions)]
            crate::policy::native::took_opa_only_path();
            match program.eval(&entries, &input, &self.limits, &scope) {
                Outcome::Values(values) => {
                    in_time(&scope, &self.limits)?;
                    // A value holding a number regent cannot hold is the
                    // nearest double, OPA's the exact decimal (issue 27).
                    if let Some(message) = crate::policy::spelled::answer_refusal(&values) {
                        return Err(EvalError::refused(message));
                    }
                    let out = values
                        .into_iter()
                        .map(|v| to_json(v, &self.limits))
                        .collect::<Result<Vec<_>, _>>()?;
                    drop(scope);
                    // Where native answered as OPA and regorus would not,
                    // there is nothing to compare with.
                    #[cfg(debug_assertions)]
                    if !crate::policy::native::took_opa_only_path() {
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
                    return Err(EvalError::refused(message));
                }
                // Nothing of the attempt is kept, its charges included: the
                // scope ends here and regorus starts afresh.
                Outcome::Fallback => {}
            }
            self.regorus_refusal()?;
            if let Some(what) = &self.flagged {
                // regorus' answer may not be OPA's here: only its error is.
                self.eval_regorus(steps, input)?;
                return Err(EvalError::refused(format!(
                    "regent cannot evaluate this input as OPA does: {what}"
                )));
            }
        } else {
            self.regorus_refusal()?;
        }
        self.eval_regorus(steps, input)
    }

    /// Refuses, before regorus evaluates a request, one that holds an
    /// integer spelled with an exponent when the tool's modules index with
    /// a computed key: regorus would read it as the integer where OPA's
    /// index is undefined. Native decides each index itself
    /// (`native::terms`), so this is for what runs on regorus only.
    ///
    /// A request holding a number regent's numbers cannot hold
    /// (`0.1000000000000000000001`) is refused here too, whatever the
    /// policy: OPA compares, picks (`max`), merges (`{n, 0.1}`) and looks
    /// up (`{0.1: "x"}[n]`) by its exact decimal, regorus by the nearest
    /// double, and regent cannot see regorus do it. Coarse on purpose: which
    /// comparisons a policy makes on the request is not known at load (any
    /// rule may reach `input` through a variable or a function), and such
    /// numbers are rare; native refuses only the comparison that meets one.
    fn regorus_refusal(&self) -> Result<(), EvalError> {
        use crate::policy::spelled::{regorus_index_refusal, regorus_lost_refusal};
        let refused = regorus_lost_refusal()
            .or_else(|| (self.computed_index.as_deref()).and_then(regorus_index_refusal));
        match refused {
            None => Ok(()),
            Some(message) => Err(EvalError::refused(message)),
        }
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
    EvalError::refused("the tool's policy engine is missing")
}

#[cfg(test)]
mod tests {
    use super::super::{add_policy, new_engine};
    use super::*;

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
}
