//! Value helpers of the native evaluator, apart from how a plan is walked:
//! OPA's order of values (sets after objects), indexing as regorus does,
//! giving a rule or function one value only, truthiness, and the note
//! (debug builds) that an evaluation answered as OPA where regorus would
//! not, which the cross-check with regorus reads.

use regorus::Value;

use super::Stop;

#[cfg(debug_assertions)]
thread_local! {
    /// Whether this thread's last native evaluation took a path where OPA
    /// and regorus answer differently (and native answered as OPA): the
    /// debug cross-check with regorus skips that evaluation.
    static OPA_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A set's members as OPA iterates them: sorted in its order (objects
/// before sets), where regorus keeps its own; where the two differ, OPA's,
/// and the evaluation is noted as answering as OPA ([`opa_only`]).
/// (`items` walks them afresh at each call).
pub(super) fn set_members<'v, I: Iterator<Item = &'v Value> + 'v>(
    items: impl Fn() -> I,
) -> Box<dyn Iterator<Item = &'v Value> + 'v> {
    match crate::opa_builtins::order::reordered(&items) {
        Some(opa) => {
            opa_only();
            Box::new(opa.into_iter())
        }
        None => Box::new(items()),
    }
}

/// Notes that the evaluation answered as OPA where regorus would not.
#[inline]
pub(super) fn opa_only() {
    #[cfg(debug_assertions)]
    OPA_ONLY.with(|c| c.set(true));
}

/// Whether a note of [`opa_only`] is pending.
#[inline]
pub(super) fn opa_only_noted() -> bool {
    #[cfg(debug_assertions)]
    return OPA_ONLY.with(std::cell::Cell::get);
    #[cfg(not(debug_assertions))]
    false
}

#[inline]
pub(super) fn clear_opa_only() {
    #[cfg(debug_assertions)]
    OPA_ONLY.with(|c| c.set(false));
}

/// Whether the evaluations since the last call answered as OPA where
/// regorus would not; clears the note.
#[cfg(debug_assertions)]
pub(in crate::policy) fn took_opa_only_path() -> bool {
    OPA_ONLY.with(|c| c.replace(false))
}

// OPA's order of values (sets after objects) is `opa_builtins::order`'s,
// which the builtins that order (`sort`, `max`, `min`) answer by too.
pub(super) use crate::opa_builtins::order::{cmp as opa_cmp, has_set};

/// `base[key]` as regorus indexes: undefined when either is, or the key is
/// absent.
pub(super) fn index(base: &Value, key: &Value) -> Result<Value, Stop> {
    match (base, key) {
        (Value::Undefined, _) | (_, Value::Undefined) => Ok(Value::Undefined),
        (Value::Object(_) | Value::Array(_) | Value::Set(_), _) => Ok(base[key].clone()),
        // Indexing a scalar: whatever regorus says.
        _ => Err(Stop::Fallback),
    }
}

/// Gives the undefined `slot` the value `v`, or checks that it already has
/// it: a rule or function that gives two values is regorus' error to raise.
pub(super) fn settle(slot: &mut Value, v: Value) -> Result<(), Stop> {
    if undefined(slot) {
        *slot = v;
        Ok(())
    } else if *slot == v {
        Ok(())
    } else {
        Err(Stop::Fallback)
    }
}

/// Whether `v` is undefined: a look at the tag, where `==` would call
/// regorus' comparison.
pub(super) fn undefined(v: &Value) -> bool {
    matches!(v, Value::Undefined)
}

/// Whether a statement's value lets the body go on: anything but `false` and
/// undefined (regorus, like OPA).
pub(super) fn truthy(v: &Value) -> bool {
    !matches!(v, Value::Bool(false) | Value::Undefined)
}
