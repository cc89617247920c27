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

    /// Evaluates `rule` with `input`, returning the rule's value as JSON
    /// (`None` when undefined).
    pub fn eval(&self, rule: &str, input: regorus::Value) -> Result<Option<Value>, EvalError> {
        let mut engine = self
            .idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop()
            .unwrap_or_else(|| self.template.clone());
        let out = eval_on(&mut engine, rule, input);
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

/// Evaluates `rule` on `engine` with `input`.
pub fn eval_on(
    engine: &mut Engine,
    rule: &str,
    input: regorus::Value,
) -> Result<Option<Value>, EvalError> {
    engine.set_input(input);
    let value = engine
        .eval_rule(rule.to_string())
        .map_err(|e| eval_error(&e.to_string()))?;
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
        .map_err(|e| rego_diagnostic("rego-parse", path, &e.to_string()))
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
    let col = parts.next()?.trim().parse().ok()?;
    let line = parts.next()?.trim().parse().ok()?;
    let file = parts.next()?;
    Some(Location::new(file, line, col))
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
