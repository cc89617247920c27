//! Warm regorus engines, one template per tool, and evaluation under a time limit.
//!
//! Each tool owns an [`EnginePool`]: a prepared engine holding only that
//! tool's generated decision module, its own policy package, the shared
//! library packages and the data. Requests borrow an idle engine (cloning the
//! template when all are busy) so concurrent requests never wait on one
//! another and a clone never carries other tools' policies. This module is
//! the only one, with `catalog`'s builder, that knows regorus.

use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::Duration;

use regorus::Engine;
use regorus::utils::limits::ExecutionTimerConfig;
use serde_json::Value;

use crate::diag::{Diagnostic, Location};

/// A policy failure at evaluation: the engine's message, cleaned up.
#[derive(Debug, Clone)]
pub struct EvalError {
    pub message: String,
    /// `file:line:column` of the failing expression, when regorus says.
    pub location: Option<Location>,
    pub timed_out: bool,
}

/// Engines for one tool: a prepared template and the idle copies.
pub struct EnginePool {
    template: Engine,
    idle: Mutex<Vec<Engine>>,
}

impl EnginePool {
    /// Wraps a template engine that has already been prepared (evaluated once),
    /// so that clones start warm.
    pub fn new(template: Engine) -> EnginePool {
        // Copies are made on first use: a catalog of thousands of tools, most
        // of them rarely called, should not pay for an idle copy of each.
        EnginePool {
            template,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Evaluates each rule of `rules` with `input` on one engine, returning
    /// each value as JSON (`None` when undefined).
    pub fn eval<'r>(
        &self,
        steps: impl IntoIterator<Item = &'r Step>,
        input: regorus::Value,
    ) -> Result<Vec<Option<Value>>, EvalError> {
        let mut engine = self
            .idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop()
            .unwrap_or_else(|| self.template.clone());
        engine.set_input(input);
        let out: Result<Vec<_>, _> = steps.into_iter().map(|s| s.eval(&mut engine)).collect();
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
    /// (tests, coverage, explain).
    pub fn engine(&self) -> Engine {
        self.template.clone()
    }
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
    pub fn eval(&self, engine: &mut Engine) -> Result<Option<Value>, EvalError> {
        if self.by_query {
            eval_query(engine, &self.path)
        } else {
            eval_rule(engine, &self.path)
        }
    }
}

/// Evaluates `rule` on `engine` with whatever input it holds.
pub fn eval_rule(engine: &mut Engine, rule: &str) -> Result<Option<Value>, EvalError> {
    let value = engine
        .eval_rule(rule.to_string())
        .map_err(|e| eval_error(&e.to_string()))?;
    if value == regorus::Value::Undefined {
        return Ok(None);
    }
    // Sets and objects from Rego come out as JSON arrays and objects; every
    // value a policy can produce has a JSON form.
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
) -> Result<Option<Value>, EvalError> {
    engine.set_input(input);
    eval_query(engine, query)
}

/// Evaluates the reference `query` on `engine` with whatever input it holds.
pub fn eval_query(engine: &mut Engine, query: &str) -> Result<Option<Value>, EvalError> {
    let results = engine
        .eval_query(query.to_string(), false)
        .map_err(|e| eval_error(&e.to_string()))?;
    let Some(value) = results
        .result
        .into_iter()
        .next()
        .and_then(|r| r.expressions.into_iter().next())
        .map(|e| e.value)
    else {
        return Ok(None);
    };
    if value == regorus::Value::Undefined {
        return Ok(None);
    }
    serde_json::to_value(&value)
        .map(Some)
        .map_err(|e| EvalError {
            message: format!("policy produced a value that is not json: {e}"),
            location: None,
            timed_out: false,
        })
}

/// A new engine with regent's settings: Rego v1 and a time limit on every evaluation.
pub fn new_engine(timeout: Duration) -> Engine {
    let mut engine = Engine::new();
    engine.set_execution_timer_config(ExecutionTimerConfig {
        limit: timeout,
        check_interval: NonZeroU32::new(32).expect("non-zero"),
    });
    // A builtin given the wrong type is an error, not a silent undefined:
    // policies make safety claims, so mistakes must be loud.
    engine.set_strict_builtin_errors(true);
    engine
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

/// Builds a diagnostic from a regorus error, which reads like
/// `--> file:line:col` followed by the source line and a message.
pub fn rego_diagnostic(code: &'static str, path: &str, text: &str) -> Diagnostic {
    let location = find_location(text).unwrap_or_else(|| Location::file(path));
    Diagnostic::error(code, location, first_message(text))
}

fn eval_error(text: &str) -> EvalError {
    let lower = text.to_lowercase();
    EvalError {
        message: first_message(text),
        location: find_location(text),
        timed_out: lower.contains("time limit")
            || lower.contains("timed out")
            || lower.contains("timeout"),
    }
}

/// The `file:line:col` after regorus' `-->` marker.
pub fn find_location(text: &str) -> Option<Location> {
    let rest = text.split("--> ").nth(1)?;
    let spot = rest.lines().next()?.trim();
    let mut parts = spot.rsplitn(3, ':');
    let col: usize = parts.next()?.trim().parse().ok()?;
    let line: usize = parts.next()?.trim().parse().ok()?;
    let file = parts.next()?;
    // regorus quotes the source line as `N | text`; use it to turn its
    // column into ours.
    let prefix = format!("{line} | ");
    let col = rest
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(&prefix))
        .map_or(col, |src| char_column(src, col));
    Some(Location::new(file, line, col))
}

/// regorus counts a tab as four columns; diagnostics count characters.
/// Converts a regorus column on `line` to a 1-based character column.
pub fn char_column(line: &str, regorus_col: usize) -> usize {
    let mut width = 1;
    for (i, c) in line.chars().enumerate() {
        if width >= regorus_col {
            return i + 1;
        }
        width += if c == '\t' { 4 } else { 1 };
    }
    line.chars().count() + 1
}

/// regorus errors span several lines (location, source, caret, message); keep
/// the message itself, as one lowercase line.
fn first_message(text: &str) -> String {
    let candidates: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty()
                && !l.starts_with("-->")
                && !l.starts_with('|')
                && !l.chars().next().is_some_and(|c| c.is_ascii_digit())
                && !l.chars().all(|c| c == '^' || c == '-' || c == ' ')
        })
        .collect();
    let msg = candidates
        .iter()
        .find_map(|l| l.strip_prefix("error:").map(str::trim))
        .or_else(|| candidates.last().copied())
        .unwrap_or(text)
        .trim_end_matches('.')
        .to_string();
    let mut chars = msg.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().collect::<String>() + chars.as_str(),
        None => msg,
    }
}

/// Whether regorus refused `rule` because no module declares it (as opposed
/// to the rule failing).
pub fn is_undeclared(e: &EvalError) -> bool {
    e.message.contains("not a valid rule path")
}

/// The input document every policy sees: `{"tool": name, "arguments": {...}}`.
pub fn input(tool: &str, args: &Value) -> regorus::Value {
    use serde::Deserialize;
    let mut input = regorus::Value::new_object();
    if let Ok(obj) = input.as_object_mut() {
        obj.insert(regorus::Value::from("tool"), regorus::Value::from(tool));
        // Deserializing borrows the arguments instead of cloning them first.
        let args = regorus::Value::deserialize(args).unwrap_or(regorus::Value::Undefined);
        obj.insert(regorus::Value::from("arguments"), args);
    }
    input
}
