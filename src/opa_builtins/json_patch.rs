//! `json.patch` as OPA answers it: an error wherever a patch does not
//! apply.
//!
//! regorus applies the patches as OPA does on every shape the differential
//! test reaches (add, remove, replace, move, copy, test; paths as JSON
//! pointers, `~0 ~1` unescaped, or arrays of segments; `-` past an array's
//! end), but answers undefined where a patch does not apply (a missing key,
//! an index out of bounds, a failed `test`, a missing `op`, `path`, `from`
//! or `value`, an unknown op, an element that is not an object). OPA,
//! evaluating with strict builtin errors as regent does, answers an error
//! there (`json.patch: index for array insertion out of bounds`), so a
//! `not json.patch(...)` or a default would hold in regent where OPA's
//! evaluation fails: [`after`] turns regorus' undefined into an error
//! (`budget::call` asks it after regorus' builtin).
//!
//! Where OPA answers and regorus does not, regent fails closed through that
//! same error (asked of OPA): an array index that is a number written with
//! a decimal point or `-0` (`["a", 2.0]`; OPA reads its text, regent holds
//! a double) or a string with one (`"/a/1.0"`), and a set of patches
//! (regorus takes an array only), and a number of an array path that
//! becomes an object key (OPA keys by its text, `7.0`; regent by its
//! value, `7`). An integer spelled with an exponent
//! (`["a", 2E0]`) is OPA's error `invalid number type for indexing` and
//! regent's too: regent holds it as a double, which regorus does not index
//! with. This module knows regorus' values, not budgets or engines.

use regorus::Value;

/// OPA's error for `json.patch(args)` where regorus answered `v`, or
/// `None` where regorus' answer is OPA's.
pub(super) fn after(args: &[Value], v: &Value) -> Option<anyhow::Error> {
    if matches!(v, Value::Undefined) {
        return Some(anyhow::anyhow!(
            "json.patch: the patches do not apply to the document (a missing key or `from`, an \
             index out of bounds, a failed `test`, a missing `op`, `path` or `value`, or an \
             array index written with a decimal point or an exponent); OPA answers an error \
             here, and so does regent: check the patches against the document, or guard the \
             call"
        ));
    }
    // A number of an array path that became an object key: OPA keys the
    // object by the number as spelled (`7.0` stays `7.0` in JSON), regent
    // by its value (`7`). Matched by value, as `policy::spelled` matches.
    let numbers: Vec<&Value> = segments(args.get(1))
        .filter(|s| matches!(s, Value::Number(_)))
        .collect();
    if !numbers.is_empty() && has_number_key(v, &numbers) {
        return Some(anyhow::anyhow!(
            "json.patch: a number in a patch's path names an object key, which OPA writes as \
             the number was spelled (`7.0`) and regent as its value (`7`): not supported by \
             regent, which refuses rather than answer otherwise; give object keys in a path as \
             strings (`[\"a\", \"7\"]`)"
        ));
    }
    None
}

/// `json.patch(doc, patches)`: regorus' own answer on every shape, checked
/// afterwards ([`after`]).
pub(super) fn patch(_: &[Value]) -> Option<anyhow::Result<Value>> {
    None
}

/// The segments of the array paths (`path`, `from`) of the patches.
fn segments(patches: Option<&Value>) -> impl Iterator<Item = &Value> {
    let items: Box<dyn Iterator<Item = &Value>> = match patches {
        Some(Value::Array(a)) => Box::new(a.iter()),
        Some(Value::Set(s)) => Box::new(s.iter()),
        _ => Box::new(std::iter::empty()),
    };
    items
        .filter_map(|p| match p {
            Value::Object(o) => Some(o),
            _ => None,
        })
        .flat_map(|o| {
            ["path", "from"]
                .into_iter()
                .filter_map(|k| match o.get(&Value::from(k)) {
                    Some(Value::Array(a)) => Some(a.iter()),
                    _ => None,
                })
                .flatten()
        })
}

/// Whether an object of `v` (any depth) has one of `numbers` as a key.
fn has_number_key(v: &Value, numbers: &[&Value]) -> bool {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(a) => stack.extend(a.iter()),
            Value::Set(s) => stack.extend(s.iter()),
            Value::Object(o) => {
                for (k, x) in o.iter() {
                    if numbers.contains(&k) {
                        return true;
                    }
                    stack.push(x);
                }
            }
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(s: &str) -> Value {
        Value::from_json_str(s).unwrap()
    }

    #[test]
    fn undefined_is_an_error_and_a_number_key_is_refused() {
        let args = [
            json(r#"{"a": 1}"#),
            json(r#"[{"op": "remove", "path": "/b"}]"#),
        ];
        let e = after(&args, &Value::Undefined).unwrap().to_string();
        assert!(e.starts_with("json.patch: the patches do not apply"), "{e}");
        // An answer without a number key from a path is regorus' own.
        assert!(after(&args, &json(r#"{"a": 1}"#)).is_none());
        // `[7]` became an object key: OPA keys it by its text.
        let args = [
            json("{}"),
            json(r#"[{"op": "add", "path": [7], "value": 9}]"#),
        ];
        let mut keyed = std::collections::BTreeMap::new();
        keyed.insert(json("7"), json("9"));
        let v = Value::from(keyed);
        let e = after(&args, &v).unwrap().to_string();
        assert!(e.contains("names an object key"), "{e}");
        // An array index of a path is no key.
        let args = [
            json("[1]"),
            json(r#"[{"op": "add", "path": [0], "value": 9}]"#),
        ];
        assert!(after(&args, &json("[9, 1]")).is_none());
    }
}
