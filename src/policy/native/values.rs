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

/// Whether `v` holds a set anywhere.
pub(super) fn has_set(v: &Value) -> bool {
    match v {
        Value::Set(_) => true,
        Value::Array(items) => items.iter().any(has_set),
        Value::Object(fields) => fields.iter().any(|(k, v)| has_set(k) || has_set(v)),
        _ => false,
    }
}

/// OPA's order of values: null, booleans, numbers, strings, arrays,
/// objects, sets (regorus puts sets before objects); within a kind as
/// regorus, objects and sets compared by their sorted members.
pub(super) fn opa_cmp(a: &Value, b: &Value) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Number(_) => 2,
            Value::String(_) => 3,
            Value::Array(_) => 4,
            Value::Object(_) => 5,
            Value::Set(_) => 6,
            Value::Undefined => 7,
        }
    }
    fn sorted<'v>(it: impl Iterator<Item = &'v Value>) -> Vec<&'v Value> {
        let mut v: Vec<&Value> = it.collect();
        v.sort_by(|x, y| opa_cmp(x, y));
        v
    }
    fn seq(a: &[&Value], b: &[&Value]) -> Ordering {
        for (x, y) in a.iter().zip(b) {
            let o = opa_cmp(x, y);
            if o != Ordering::Equal {
                return o;
            }
        }
        a.len().cmp(&b.len())
    }
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            seq(&x.iter().collect::<Vec<_>>(), &y.iter().collect::<Vec<_>>())
        }
        (Value::Set(x), Value::Set(y)) => seq(&sorted(x.iter()), &sorted(y.iter())),
        (Value::Object(x), Value::Object(y)) => {
            let (kx, ky) = (sorted(x.keys()), sorted(y.keys()));
            for (&k1, &k2) in kx.iter().zip(&ky) {
                let o = opa_cmp(k1, k2).then_with(|| {
                    opa_cmp(
                        x.get(k1).unwrap_or(&Value::Undefined),
                        y.get(k2).unwrap_or(&Value::Undefined),
                    )
                });
                if o != Ordering::Equal {
                    return o;
                }
            }
            kx.len().cmp(&ky.len())
        }
        _ if rank(a) != rank(b) => rank(a).cmp(&rank(b)),
        _ => a.cmp(b),
    }
}

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
