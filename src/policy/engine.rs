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
//!
//! `engine.rs` evaluates one step under limits (the time limit, the
//! budget's scope, the answer's size) and makes and feeds engines;
//! `engine/pool` holds a tool's engines ([`EnginePool`], [`Recipe`]) and
//! runs a plan on `native` or regorus; `engine/tests` the evaluation's
//! tests (the pool's own are beside it).

use std::num::NonZeroU32;

use regorus::Engine;
use regorus::utils::limits::ExecutionTimerConfig;
use serde_json::Value;

use super::budget::{self, Limits, Scope};
use super::errors::{Limit, find_location, first_message, limit_hit, rego_diagnostic};
use crate::caller::Caller;
use crate::diag::{Diagnostic, Location};

mod clocked;
mod pool;
#[cfg(test)]
mod tests;

pub(crate) use clocked::regorus_eval;
pub use pool::{EnginePool, Recipe};

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
    /// A failure regent itself decides (a refusal, a limit, a missing
    /// engine), with no place in the policy to point at and no clock
    /// involved.
    pub fn refused(message: impl Into<String>) -> EvalError {
        EvalError {
            message: message.into(),
            location: None,
            timed_out: false,
        }
    }

    /// Whether a memory guard of [`budget`] stopped the evaluation.
    pub fn over_memory_budget(&self) -> bool {
        limit_hit(&self.message) == Some(Limit::Memory)
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
    let value = regorus_eval(engine, &scope, limits, |e| e.eval_rule(rule.to_string()))?;
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
                "policy evaluation exceeded its time limit of {} (it took {} ms); its answer was discarded",
                super::clock::limit_text(limits.time),
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
        return Err(EvalError::refused(format!(
            "policy evaluation exceeded its memory budget: its result would take more than {} bytes written out",
            limits.memory
        )));
    }
    if let Some(digits) = wide_integer(&value) {
        return Err(EvalError::refused(format!(
            "the rule's value holds the integer {digits}, which OPA writes in full and regent \
             only as the nearest double (its JSON numbers are 64-bit integers and doubles): not \
             supported by regent, which refuses rather than answer another number; keep such \
             integers within 64 bits, or write them as strings (`format_int(n, 10)`)"
        )));
    }
    let mut json = serde_json::to_value(&value).map_err(|e| {
        EvalError::refused(format!("policy produced a value that is not json: {e}"))
    })?;
    // serde writes a set in regorus' order, which puts sets before objects;
    // OPA writes its members in its own order.
    crate::opa_builtins::order::fix_json(&value, &mut json);
    Ok(Some(json))
}

/// Whether regent's text of the double nearest `n` denotes `n` itself:
/// `1500000000000000000000` is written `1.5e+21`, the same number (OPA's
/// answer holds the same value); 2^64 + 1 is written
/// `1.8446744073709552e+19`, another one.
fn written_exactly(n: &num_bigint::BigInt) -> bool {
    let Some(text) = n
        .to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map(|f| f.to_string())
    else {
        return false;
    };
    // `d.ddde[+-]x` or plain digits: the decimal it denotes, as an integer.
    let (mantissa, exp) = text.split_once(['e', 'E']).unwrap_or((&text, "0"));
    let Ok(exp) = exp.parse::<i64>() else {
        return false;
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let frac = frac.trim_end_matches('0');
    let Some(shift) = exp.checked_sub(frac.len() as i64).filter(|s| *s >= 0) else {
        return false;
    };
    let (Ok(digits), Ok(shift)) = (
        format!("{int}{frac}").parse::<num_bigint::BigInt>(),
        u32::try_from(shift),
    ) else {
        return false;
    };
    digits * num_bigint::BigInt::from(10u8).pow(shift) == *n
}

/// The digits of the first integer of `value` (keys too) past 64 bits
/// (`units.parse("18446744073709551617")`, a policy's literal, big integer
/// arithmetic): regorus holds it exactly, as OPA does, but serde_json
/// would read its digits back as the nearest double, so regent's answer
/// would write `1.8446744073709552e+19` where OPA writes the digits.
/// A double (`1e+20`) is not one: what regent writes for it is its own
/// text, which the number refusals already judge.
fn wide_integer(value: &regorus::Value) -> Option<String> {
    match value {
        regorus::Value::Number(n) => (n.as_i64().is_none()
            && n.as_u64().is_none()
            && n.as_big().is_some_and(|b| !written_exactly(&b)))
        .then(|| n.format_decimal()),
        regorus::Value::Array(a) => a.iter().find_map(wide_integer),
        regorus::Value::Set(s) => s.iter().find_map(wide_integer),
        regorus::Value::Object(o) => o
            .iter()
            .find_map(|(k, v)| wide_integer(k).or_else(|| wide_integer(v))),
        _ => None,
    }
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
    let results = regorus_eval(engine, &scope, limits, |e| {
        e.eval_query(query.to_string(), false)
    })?;
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

/// regorus' timer at `limit`, checked every 32 steps of its interpreter:
/// every engine's (`new_engine`), and the backstop `clocked` sets for a
/// second attempt.
fn timer(limit: std::time::Duration) -> ExecutionTimerConfig {
    ExecutionTimerConfig {
        limit,
        check_interval: NonZeroU32::new(32).expect("non-zero"),
    }
}

/// A new engine with regent's settings: Rego v1, a time limit on every
/// evaluation and the memory guards of [`budget`] on size-driving builtins.
pub fn new_engine(limits: Limits) -> Engine {
    let mut engine = Engine::new();
    engine.set_execution_timer_config(timer(limits.time));
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
