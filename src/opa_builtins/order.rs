//! OPA's total order of values, and what regent answers by it: `sort`,
//! `max`, `min`, and a set's members wherever their order shows.
//!
//! OPA orders null < booleans < numbers < strings < arrays < objects <
//! sets; regorus puts sets before objects, and keeps a set's members (and
//! an object's keys) in its own order. The two agree on any pair of values
//! unless a set meets an object somewhere inside them, so every function
//! here answers `None` (regorus' own order is OPA's) unless a set is
//! present. Within a kind the order is OPA's `ast.Compare`, checked against
//! OPA's own engine (`differential/opa_builtins`, `tests/opa/constructs.yaml`):
//! arrays element by element then by length, objects key, value, next key,
//! … then by size, sets by their sorted members then by size.

use std::cmp::Ordering;

use regorus::Value;

/// Whether `v` holds a set anywhere (the only values whose order regorus
/// and OPA may disagree on).
pub(crate) fn has_set(v: &Value) -> bool {
    match v {
        Value::Set(_) => true,
        Value::Array(items) => items.iter().any(has_set),
        Value::Object(fields) => fields.iter().any(|(k, v)| has_set(k) || has_set(v)),
        _ => false,
    }
}

/// OPA's order of values (`ast.Compare`); within a scalar kind regorus'.
pub(crate) fn cmp(a: &Value, b: &Value) -> Ordering {
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
    fn seq(a: &[&Value], b: &[&Value]) -> Ordering {
        for (x, y) in a.iter().zip(b) {
            let o = cmp(x, y);
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
                let o = cmp(k1, k2).then_with(|| {
                    cmp(
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

/// `items` in OPA's order (a stable sort: equal members keep theirs).
pub(crate) fn sorted<'v>(items: impl Iterator<Item = &'v Value>) -> Vec<&'v Value> {
    let mut v: Vec<&Value> = items.collect();
    v.sort_by(|x, y| cmp(x, y));
    v
}

/// A collection's members (a set's, an object's keys) in OPA's order when
/// it differs from the order regorus keeps them in; `None` when the two
/// agree, which they do unless a member holds a set.
/// (`items` walks them afresh at each call).
pub(crate) fn reordered<'v, I: Iterator<Item = &'v Value>>(
    items: impl Fn() -> I,
) -> Option<Vec<&'v Value>> {
    if !items().any(has_set) {
        return None;
    }
    let opa = sorted(items());
    if opa.iter().zip(items()).all(|(a, b)| std::ptr::eq(*a, b)) {
        return None;
    }
    Some(opa)
}

/// The members of `sort`, `max` and `min`'s argument when one holds a set;
/// `None` otherwise, or for a wrong type (regorus' answer, or its error).
fn members(a: &Value) -> Option<Vec<&Value>> {
    let items: Vec<&Value> = match a {
        Value::Array(items) => items.iter().collect(),
        Value::Set(items) => items.iter().collect(),
        _ => return None,
    };
    items.iter().any(|v| has_set(v)).then_some(items)
}

/// `sort(coll)` in OPA's order.
pub(super) fn sort(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let mut items = members(&a[0])?;
    items.sort_by(|x, y| cmp(x, y));
    Some(Ok(Value::from(
        items.into_iter().cloned().collect::<Vec<Value>>(),
    )))
}

/// `max(coll)`: OPA keeps the first of equal greatest members.
pub(super) fn max(a: &[Value]) -> Option<anyhow::Result<Value>> {
    pick(a, Ordering::Less)
}

/// `min(coll)`: OPA keeps the first of equal least members.
pub(super) fn min(a: &[Value]) -> Option<anyhow::Result<Value>> {
    pick(a, Ordering::Greater)
}

/// The member `m` that no later one beats (`cmp(m, later) == replace` takes
/// the later), as OPA's `builtinMax`/`builtinMin` walk; a collection with a
/// set is never empty.
fn pick(a: &[Value], replace: Ordering) -> Option<anyhow::Result<Value>> {
    let items = members(&a[0])?;
    let mut best = items[0];
    for &v in &items[1..] {
        if cmp(best, v) == replace {
            best = v;
        }
    }
    Some(Ok(best.clone()))
}

/// Puts the sets inside `json` (regorus' `v` written by serde, its sets as
/// arrays in regorus' order) in OPA's order, as OPA writes a set.
pub(crate) fn fix_json(v: &Value, json: &mut serde_json::Value) {
    match (v, json) {
        (Value::Set(items), serde_json::Value::Array(out)) if out.len() == items.len() => {
            for (item, j) in items.iter().zip(out.iter_mut()) {
                fix_json(item, j);
            }
            if reordered(|| items.iter()).is_some() {
                let mut pairs: Vec<(&Value, serde_json::Value)> =
                    items.iter().zip(out.drain(..)).collect();
                pairs.sort_by(|x, y| cmp(x.0, y.0));
                out.extend(pairs.into_iter().map(|(_, j)| j));
            }
        }
        (Value::Array(items), serde_json::Value::Array(out)) => {
            for (item, j) in items.iter().zip(out.iter_mut()) {
                fix_json(item, j);
            }
        }
        (Value::Object(fields), serde_json::Value::Object(out)) => {
            for (k, item) in fields.iter() {
                if let (Value::String(k), true) = (k, has_set(item))
                    && let Some(j) = out.get_mut(k.as_ref())
                {
                    fix_json(item, j);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(json: &str) -> Value {
        Value::from_json_str(json).unwrap()
    }

    fn set(items: Vec<Value>) -> Value {
        Value::from(
            items
                .into_iter()
                .collect::<std::collections::BTreeSet<Value>>(),
        )
    }

    #[test]
    fn objects_before_sets() {
        let (o, s) = (v("{}"), set(vec![]));
        assert_eq!(cmp(&o, &s), Ordering::Less);
        let both = [s.clone(), o.clone()];
        assert_eq!(
            sort(&[Value::from(both.to_vec())]).unwrap().unwrap(),
            Value::from(vec![o.clone(), s.clone()])
        );
        assert_eq!(max(&[Value::from(both.to_vec())]).unwrap().unwrap(), s);
        assert_eq!(min(&[Value::from(both.to_vec())]).unwrap().unwrap(), o);
        // Without a set regorus' own answer stands.
        assert!(sort(&[v("[2, 1]")]).is_none());
    }

    #[test]
    fn json_writes_sets_in_opa_order() {
        let s = set(vec![set(vec![]), v("{}"), v("[]")]);
        let mut j = serde_json::to_value(&s).unwrap();
        fix_json(&s, &mut j);
        assert_eq!(j.to_string(), "[[],{},[]]");
        let wrapped = Value::from(vec![s]);
        let mut j = serde_json::to_value(&wrapped).unwrap();
        fix_json(&wrapped, &mut j);
        assert_eq!(j.to_string(), "[[[],{},[]]]");
    }
}
