//! What a client of the `io.modelcontextprotocol/tool-resolution` extension
//! draft (2026-08-20) accepts as a `tools/resolve` result, written from the
//! draft's client rules (shared/reference/tool-resolution-extension-draft.md),
//! not from regent's code. Anything this rejects, such a client would count
//! as a resolution failure and fall back to the static listing.

use serde_json::{Map, Value, json};

pub const EXTENSION: &str = "io.modelcontextprotocol/tool-resolution";
/// regent's own extension, for its decision information.
pub const DECISION: &str = "io.github.regent/decision";
/// regent's own extension, for the resolved `securitySchemes` (SEP-1488).
pub const SECURITY: &str = "io.github.regent/security-schemes";

const HINTS: [&str; 4] = [
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];

/// Client capabilities advertising `ids`, each with empty settings.
pub fn capabilities(ids: &[&str]) -> Value {
    let ext: Map<String, Value> = ids.iter().map(|id| (id.to_string(), json!({}))).collect();
    json!({"extensions": ext})
}

/// Checks `result` as a draft client would for a resolution of `name`
/// whose listed annotations are `listed`, on a request that advertised the
/// extensions `advertised`. `Err` says what makes it a resolution failure.
pub fn validate(
    result: &Value,
    name: &str,
    listed: &Value,
    advertised: &[&str],
) -> Result<(), String> {
    let r = result.as_object().ok_or("result is not an object")?;
    for k in r.keys() {
        if !["resultType", "name", "annotations", "_meta"].contains(&k.as_str()) {
            return Err(format!("extra top-level key {k:?}"));
        }
    }
    if r.get("resultType") != Some(&json!("complete")) {
        return Err("resultType is not \"complete\"".into());
    }
    if r.get("name") != Some(&json!(name)) {
        return Err(format!("name is not {name:?}"));
    }
    let a = r
        .get("annotations")
        .and_then(Value::as_object)
        .ok_or("annotations missing or not an object")?;
    if a.len() != 4 {
        return Err(format!(
            "annotations must hold exactly the four hints: {a:?}"
        ));
    }
    let hint = |m: &Map<String, Value>, h: &str| m.get(h).and_then(Value::as_bool);
    for h in HINTS {
        if hint(a, h).is_none() {
            return Err(format!("{h} missing or not a boolean"));
        }
    }
    // The bound against the listing, core defaults applied first.
    let l = listed.as_object().cloned().unwrap_or_default();
    let listed_hint = |h: &str, default: bool| hint(&l, h).unwrap_or(default);
    let got = |h: &str| hint(a, h).unwrap();
    let (l_ro, l_de, l_id, l_ow) = (
        listed_hint("readOnlyHint", false),
        listed_hint("destructiveHint", true),
        listed_hint("idempotentHint", false),
        listed_hint("openWorldHint", true),
    );
    if l_ro && !got("readOnlyHint") {
        return Err("listed read-only resolved not read-only".into());
    }
    if !l_de && !l_ro && got("destructiveHint") {
        return Err("listed non-destructive resolved destructive".into());
    }
    if l_id && !got("idempotentHint") && !got("readOnlyHint") {
        return Err("listed idempotent resolved not idempotent".into());
    }
    if !l_ow && got("openWorldHint") {
        return Err("listed closed-world resolved open-world".into());
    }
    if let Some(meta) = r.get("_meta") {
        let meta = meta.as_object().ok_or("_meta is not an object")?;
        for (k, v) in meta {
            let core = k == "io.modelcontextprotocol/serverInfo";
            if !core && !advertised.contains(&k.as_str()) {
                return Err(format!("_meta key {k:?} was not negotiated"));
            }
            if !core && !v.is_object() {
                return Err(format!("_meta[{k:?}] is not an object"));
            }
        }
    }
    Ok(())
}
