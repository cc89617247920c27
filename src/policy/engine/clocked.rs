//! One regorus evaluation under the time limit, on the clock the process
//! counts ([`crate::policy::clock`]): wall-clock serving, the evaluating
//! thread's CPU in `check`, `test` and `review`.
//!
//! regorus' own timer reads wall-clock time in every std build, and it is
//! the only thing that can interrupt regorus' interpreter. So when the
//! process counts CPU, an attempt that ran past regorus' limit of
//! wall-clock time is judged here by the thread's CPU: timed out when the
//! CPU passed the limit too, else run again once under a wall-clock
//! backstop. What an evaluation spent and since when is `budget`'s; the
//! evaluation around it (steps, answers, `in_time`) is the parent's.

use std::time::Instant;

use regorus::Engine;

use super::{EvalError, eval_error, timer};
use crate::policy::budget::{Limits, Scope};
use crate::policy::clock;

/// Runs one regorus evaluation, `eval`, of `engine` within `scope`, its
/// time-out worded with its clock.
///
/// When the process counts CPU time (`check`, `test`: [`clock`]),
/// regorus' own timer, wall-clock in every std build, may stop a thread
/// that was only waiting for a core. Whether a stop surfaces as an error is
/// regorus' business (its RVM swallows errors raised in rule bodies), so
/// an attempt that ran longer than regorus' limit of wall-clock time is
/// never taken as it is, whatever it returned: when the thread's CPU
/// passed the limit too, it timed out; otherwise it is run again once from
/// its start, its CPU forgiven, under regorus' timer at [`clock::BACKSTOP`]
/// times the limit, and an attempt that passes that too times out. Serving
/// counts wall-clock time, which every timer stop passes, so `in_time`
/// after the evaluation already refuses whatever a stop left.
pub(crate) fn regorus_eval<T>(
    engine: &mut Engine,
    scope: &Scope,
    limits: &Limits,
    mut eval: impl FnMut(&mut Engine) -> anyhow::Result<T>,
) -> Result<T, EvalError> {
    if !clock::counts_thread_cpu() {
        return eval(engine).map_err(|e| worded(eval_error(&e.to_string()), scope, limits));
    }
    let backstop = limits.time.saturating_mul(clock::BACKSTOP);
    let before = scope.elapsed();
    let wall = Instant::now();
    let first = eval(engine);
    if wall.elapsed() <= limits.time {
        return first.map_err(|e| worded(eval_error(&e.to_string()), scope, limits));
    }
    if scope.elapsed() > limits.time {
        return Err(timed_out(scope, limits));
    }
    clock::forgive(scope.elapsed().saturating_sub(before));
    engine.set_execution_timer_config(timer(backstop));
    let wall = Instant::now();
    let again = eval(engine);
    let late = wall.elapsed() > backstop;
    engine.set_execution_timer_config(timer(limits.time));
    if late {
        return Err(timed_out(scope, limits));
    }
    again.map_err(|e| worded(eval_error(&e.to_string()), scope, limits))
}

/// A time-out of regorus' timer, worded by [`time_out_message`]; any
/// other failure as it is.
fn worded(mut error: EvalError, scope: &Scope, limits: &Limits) -> EvalError {
    // regorus' own words (`execution exceeded time limit (elapsed=…ns,
    // limit=…ns)`) name no clock; a guard's refusal already does.
    if error.timed_out && error.message.contains("execution exceeded time limit") {
        error.message = time_out_message(scope, limits);
    }
    error
}

/// The time-out of an attempt that ran past regorus' limit.
fn timed_out(scope: &Scope, limits: &Limits) -> EvalError {
    EvalError {
        message: time_out_message(scope, limits),
        location: None,
        timed_out: true,
    }
}

/// What a time-out says: the limit and its clock, and, when regorus' wall
/// backstop stopped an evaluation the thread's CPU had not taken past the
/// limit, that the machine was too busy to tell.
fn time_out_message(scope: &Scope, limits: &Limits) -> String {
    let spent = scope.elapsed();
    if clock::counts_thread_cpu() && spent <= limits.time {
        return format!(
            "policy evaluation exceeded its time limit: regorus' wall-clock backstop stopped it after {} ms, when it had used {} ms of its {}; the machine is too busy to finish it, run it again on a quieter one",
            limits.time.saturating_mul(clock::BACKSTOP).as_millis(),
            spent.as_millis(),
            clock::limit_text(limits.time)
        );
    }
    format!(
        "policy evaluation exceeded its time limit of {}",
        clock::limit_text(limits.time)
    )
}
