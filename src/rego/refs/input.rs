//! References into `input`: its members (`tool`, `arguments`, `caller`,
//! `request`), `input.arguments.…` walked through each owning tool's
//! inputSchema (`properties`, `items`, `additionalProperties`, the
//! combinators; `$ref` and `patternProperties` stop the check), and
//! `input.caller.claims.…` through the declared caller schema. How a miss
//! is worded is `report`'s.

use serde_json::Value;

use super::report::{Miss, diagnostic, listed};
use super::{Part, Schemas, Scope};
use crate::diag::Diagnostic;

pub(super) fn check_input(scope: &Scope<'_, '_>, parts: &[Part]) -> Option<Diagnostic> {
    let second = parts.get(1)?;
    let name = second.name.as_deref()?;
    match name {
        // tools/list decides `visible` once per caller, with no arguments:
        // a `visible` rule that reads them is undefined, so the tool is
        // hidden from everyone.
        "arguments" if scope.visible => Some(diagnostic(
            "rego-undefined-input",
            parts,
            &Miss {
                at: 1,
                why: "a `visible` rule is decided per caller, without arguments (its input is `tool` and `caller`), so a definition that reads them never holds".to_string(),
                candidates: Vec::new(),
            },
            "decide visibility from `input.caller` alone; refuse calls by their arguments with `deny`",
        )),
        "arguments" => check_arguments(scope.schemas, parts),
        // The upstream's request, in the input of `upstream_request` (the
        // request's params are the upstream's: any shape).
        "request" => None,
        "tool" => {
            let third = parts.get(2)?;
            third.name.as_ref()?;
            Some(diagnostic(
                "rego-undefined-input",
                parts,
                &Miss {
                    at: 2,
                    why: "`input.tool` is the tool's name, a string".to_string(),
                    candidates: Vec::new(),
                },
                "compare `input.tool` as a whole",
            ))
        }
        // The verified caller (HTTP with a JWT): `subject`, `issuer` and
        // `claims`, whatever the token holds under `claims`.
        "caller" => {
            let third = parts.get(2)?;
            let name = third.name.as_deref()?;
            match name {
                "claims" => return check_claims(scope.ctx.claims.as_ref()?, parts),
                "subject" | "issuer" => {
                    // Both are strings: a field of either is never defined.
                    parts.get(3)?.name.as_ref()?;
                    return Some(diagnostic(
                        "rego-undefined-input",
                        parts,
                        &Miss {
                            at: 3,
                            why: format!("`input.caller.{name}` is a string"),
                            candidates: Vec::new(),
                        },
                        &format!(
                            "compare `input.caller.{name}` as a whole, or read the token's claims under `input.caller.claims`"
                        ),
                    ));
                }
                _ => {}
            }
            Some(diagnostic(
                "rego-undefined-input",
                parts,
                &Miss {
                    at: 2,
                    why: "`input.caller` has only `subject`, `issuer` and `claims`".to_string(),
                    candidates: vec!["claims".into(), "issuer".into(), "subject".into()],
                },
                "read the token's other claims under `input.caller.claims`",
            ))
        }
        _ => Some(diagnostic(
            "rego-undefined-input",
            parts,
            &Miss {
                at: 1,
                why: "the policy input has only `tool`, `arguments`, `caller` and (in `upstream_request`) `request`".to_string(),
                candidates: vec![
                    "arguments".to_string(),
                    "caller".to_string(),
                    "request".to_string(),
                    "tool".to_string(),
                ],
            },
            "read the tool's arguments under `input.arguments`",
        )),
    }
}

/// `input.caller.claims.a.b` against the catalog's declared claims schema,
/// as arguments are against an inputSchema.
fn check_claims(schema: &Value, parts: &[Part]) -> Option<Diagnostic> {
    let mut miss = walk_schema(schema, parts, 3).err()?;
    miss.why = format!(
        "in the catalog's caller schema (`caller.claims`), {}",
        miss.why
    );
    Some(diagnostic(
        "rego-undefined-input",
        parts,
        &miss,
        "declare the claim in the tool file's `caller: {claims: ...}` schema, or fix the reference",
    ))
}

fn check_arguments(schemas: &Schemas<'_>, parts: &[Part]) -> Option<Diagnostic> {
    if schemas.tools.is_empty() {
        return None;
    }
    let mut first: Option<Miss> = None;
    for (_, schema) in &schemas.tools {
        match walk_schema(schema, parts, 2) {
            Ok(()) => return None,
            Err(m) => {
                first.get_or_insert(m);
            }
        }
    }
    let mut miss = first?;
    let whose = if schemas.library {
        format!(
            "no tool's inputSchema has it ({} tools; this library package may be used by any of them)",
            schemas.tools.len()
        )
    } else if schemas.tools.len() == 1 {
        format!(
            "in the inputSchema of `{}`, {}",
            schemas.tools[0].0, miss.why
        )
    } else {
        let names: Vec<String> = schemas.tools.iter().map(|(n, _)| n.to_string()).collect();
        format!(
            "in the inputSchema of every tool of this package ({}), {}",
            listed(&names),
            miss.why
        )
    };
    miss.why = whose;
    Some(diagnostic(
        "rego-undefined-input",
        parts,
        &miss,
        "declare it in inputSchema, or fix the reference",
    ))
}

fn combinators(schema: &serde_json::Map<String, Value>) -> Vec<&Value> {
    ["anyOf", "oneOf", "allOf"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_array))
        .flatten()
        .collect()
}

/// Whether `parts[i..]` can be defined in a value valid against `schema`.
fn walk_schema(schema: &Value, parts: &[Part], i: usize) -> Result<(), Miss> {
    if i >= parts.len() {
        return Ok(());
    }
    let Some(obj) = schema.as_object() else {
        // `true`, `false` or nonsense: nothing to check against.
        return Ok(());
    };
    if obj.contains_key("$ref") || obj.contains_key("$dynamicRef") {
        return Ok(());
    }
    let branches = combinators(obj);
    if branches.is_empty() {
        return walk_own(obj, parts, i);
    }
    let shaped = ["type", "properties", "items", "additionalProperties"]
        .iter()
        .any(|k| obj.contains_key(*k));
    let mut first = None;
    if shaped {
        match walk_own(obj, parts, i) {
            Ok(()) => return Ok(()),
            Err(m) => first = Some(m),
        }
    }
    for b in branches {
        match walk_schema(b, parts, i) {
            Ok(()) => return Ok(()),
            Err(m) => {
                first.get_or_insert(m);
            }
        }
    }
    first.map_or(Ok(()), Err)
}

fn types(obj: &serde_json::Map<String, Value>) -> Option<Vec<&str>> {
    match obj.get("type")? {
        Value::String(s) => Some(vec![s.as_str()]),
        Value::Array(a) => Some(a.iter().filter_map(Value::as_str).collect()),
        _ => None,
    }
}

fn walk_own(obj: &serde_json::Map<String, Value>, parts: &[Part], i: usize) -> Result<(), Miss> {
    let types = types(obj);
    let has = |t: &str| types.as_ref().is_none_or(|ts| ts.contains(&t));
    let is_array = types.as_ref().is_some_and(|ts| ts.contains(&"array"))
        || (types.is_none() && obj.contains_key("items") && !obj.contains_key("properties"));
    let Some(name) = parts[i].name.as_deref() else {
        // A computed key: follow an array's items; an object's key is unknown.
        if is_array {
            return match obj.get("items") {
                Some(items) => walk_schema(items, parts, i + 1),
                None => Ok(()),
            };
        }
        return Ok(());
    };
    if !has("object") {
        if is_array {
            return Err(Miss {
                at: i,
                why: "its parent is an array, indexed by number (`[_]`, `[0]`)".to_string(),
                candidates: Vec::new(),
            });
        }
        if let Some(ts) = &types
            && !ts.is_empty()
        {
            return Err(Miss {
                at: i,
                why: format!("its parent is a {}, which has no fields", ts.join(" or ")),
                candidates: Vec::new(),
            });
        }
        return Ok(());
    }
    let props = obj.get("properties").and_then(Value::as_object);
    if let Some(sub) = props.and_then(|p| p.get(name)) {
        return walk_schema(sub, parts, i + 1);
    }
    if obj.contains_key("patternProperties") {
        return Ok(());
    }
    let candidates: Vec<String> = props.map_or(Vec::new(), |p| p.keys().cloned().collect());
    match obj.get("additionalProperties") {
        Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => return Ok(()),
        Some(sub @ Value::Object(_)) => return walk_schema(sub, parts, i + 1),
        _ if candidates.is_empty() => return Ok(()),
        _ => {}
    }
    Err(Miss {
        at: i,
        why: format!("there is no property `{name}`"),
        candidates,
    })
}
