//! The JSON shapes regent puts on the wire for tools and resolutions.
//!
//! rmcp's typed `Tool` cannot carry the fields that the tool-resolution
//! proposals add (`resolve`, `dynamicAnnotations`, `securitySchemes`), so
//! tools are built here as JSON. For `tools/list`, whose result rmcp types,
//! the extra top-level fields travel under a private `_meta` key and the
//! transport hoists them into place just before writing (see [`hoist`]).

use serde_json::{Map, Value, json};

use crate::catalog::{Hint, Resolution, Tool};

/// The extension's identifier, used as a capability and a `_meta` key.
pub const EXTENSION: &str = "io.modelcontextprotocol/tool-resolution";
/// Private `_meta` key that carries top-level tool fields through rmcp's
/// typed `Tool`; removed by [`hoist`] before anything is written.
pub const HOIST_KEY: &str = "x-regent/hoist";

/// A tool as `tools/list` shows it, or as `tools/resolve` returns it when
/// `resolution` is given. `name`, `title`, `description` and both schemas are
/// the listed ones in either case.
pub fn tool_json(tool: &Tool, resolution: Option<&Resolution<'_>>) -> Map<String, Value> {
    tool_json_with(tool, resolution, annotations(tool, resolution))
}

fn tool_json_with(
    tool: &Tool,
    resolution: Option<&Resolution<'_>>,
    annotations: Map<String, Value>,
) -> Map<String, Value> {
    let mut t = listed_parts(tool);
    t.extend(decided_parts(tool, resolution, annotations));
    t
}

/// The members of a tool's JSON that resolution never changes, in listing
/// order: `name`, `title`, `description`, `inputSchema`, `outputSchema`.
/// They come first in the tool object; [`decided_parts`] follow.
pub fn listed_parts(tool: &Tool) -> Map<String, Value> {
    let mut t = Map::new();
    t.insert("name".into(), json!(tool.name));
    if let Some(title) = &tool.title {
        t.insert("title".into(), json!(title));
    }
    if let Some(d) = &tool.description {
        t.insert("description".into(), json!(d));
    }
    t.insert("inputSchema".into(), tool.listed_input_schema.clone());
    if let Some(o) = &tool.output_schema {
        t.insert("outputSchema".into(), o.clone());
    }
    t
}

/// The members of a tool's JSON after [`listed_parts`]: `annotations` (as
/// given), `_meta`, `securitySchemes` (listed, or as `resolution` decided)
/// and the resolvability flags.
pub fn decided_parts(
    tool: &Tool,
    resolution: Option<&Resolution<'_>>,
    annotations: Map<String, Value>,
) -> Map<String, Value> {
    let mut t = Map::new();
    t.insert("annotations".into(), Value::Object(annotations));
    let mut meta = resolution.map_or_else(|| tool.meta.clone(), |r| r.meta.clone());
    if tool.is_resolvable() {
        meta.insert(EXTENSION.into(), json!({"resolvable": true}));
    }
    if !meta.is_empty() {
        t.insert("_meta".into(), Value::Object(meta));
    }
    let schemes = resolution.map_or(tool.security_schemes.as_ref(), |r| {
        r.security_schemes.as_ref()
    });
    if let Some(s) = schemes {
        t.insert("securitySchemes".into(), Value::Array(s.clone()));
    }
    if tool.is_resolvable() {
        t.insert("resolve".into(), Value::Bool(true));
        t.insert("dynamicAnnotations".into(), Value::Bool(true));
    }
    t
}

/// Removes the tool-resolution extension's marker from a tool's `_meta`
/// (and `_meta` itself when nothing else is left), for a `tools/list` whose
/// request did not negotiate the extension.
pub fn unmark(tool: &mut Map<String, Value>) {
    if let Some(Value::Object(meta)) = tool.get_mut("_meta") {
        meta.remove(EXTENSION);
        if meta.is_empty() {
            tool.remove("_meta");
        }
    }
}

/// All four hints (listed or resolved), the display title, and any extra
/// hints a policy added.
pub fn annotations(tool: &Tool, resolution: Option<&Resolution<'_>>) -> Map<String, Value> {
    let extra = resolution.map_or(0, |r| r.extra_annotations.len());
    // Sized once and filled in place: this runs for every resolve, and each
    // insert into serde_json's ordered map hashes its key.
    let mut a = Map::with_capacity(5 + extra);
    if let Some(title) = &tool.annotations_title {
        a.insert("title".into(), json!(title));
    }
    let hints = resolution.map_or(tool.listed, |r| r.hints);
    for h in Hint::ALL {
        a.insert(h.key().into(), Value::Bool(hints.get(h)));
    }
    if let Some(r) = resolution {
        for (k, v) in &r.extra_annotations {
            a.insert(k.clone(), v.clone());
        }
    }
    a
}

/// Moves the fields rmcp's `Tool` cannot hold from `_meta[HOIST_KEY]` into
/// a `tools/list` tool object.
pub fn stash_for_list(mut tool: Map<String, Value>) -> Map<String, Value> {
    let mut hoisted = Map::new();
    for key in ["securitySchemes", "resolve", "dynamicAnnotations"] {
        if let Some(v) = tool.remove(key) {
            hoisted.insert(key.into(), v);
        }
    }
    if !hoisted.is_empty() {
        let meta = tool
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(m) = meta.as_object_mut() {
            m.insert(HOIST_KEY.into(), Value::Object(hoisted));
        }
    }
    tool
}

/// Undoes [`stash_for_list`] on an outgoing result, and adds the tool
/// capability flags the proposals define (`resolve`, `dynamicAnnotations`).
pub fn hoist(result: &mut Value) {
    if let Some(tools) = result
        .pointer_mut("/capabilities/tools")
        .and_then(Value::as_object_mut)
    {
        tools.insert("resolve".into(), Value::Bool(true));
        tools.insert("dynamicAnnotations".into(), Value::Bool(true));
    }
    if let Some(list) = result.get_mut("tools").and_then(Value::as_array_mut) {
        for tool in list.iter_mut().filter_map(Value::as_object_mut) {
            let extra = tool
                .get_mut("_meta")
                .and_then(Value::as_object_mut)
                .and_then(|m| m.remove(HOIST_KEY));
            if tool
                .get("_meta")
                .and_then(Value::as_object)
                .is_some_and(Map::is_empty)
            {
                tool.remove("_meta");
            }
            if let Some(Value::Object(extra)) = extra {
                tool.extend(extra);
            }
        }
    }
}

/// A digest of everything `tools/list` shows for `catalog`: each tool's JSON,
/// in order. Two catalogs with the same listing digest list the same tools the
/// same way, so a reload that keeps it (a policy-only change) need not tell
/// clients that the list changed.
pub fn listing_digest(catalog: &crate::catalog::Catalog) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for tool in catalog.tools() {
        let json = Value::Object(tool_json(tool, None));
        // Serializing a Value cannot fail; the length prefix keeps tool
        // boundaries unambiguous.
        let bytes = serde_json::to_vec(&json).unwrap_or_default();
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    base16ct::lower::encode_string(&hasher.finalize())
}

/// Applies [`hoist`] to the result of one outgoing JSON-RPC message, for
/// transports that see messages only as JSON (HTTP bodies). Returns whether
/// anything changed, so a caller can pass unchanged bytes through untouched.
/// Only results [`hoist`] would change are touched: `initialize` and
/// `server/discover` (they carry `capabilities.tools`) and `tools/list` (its
/// tools carry the private key).
pub fn hoist_message(message: &mut Value) -> bool {
    let Some(result) = message.get_mut("result") else {
        return false;
    };
    let has_tool_caps = result
        .pointer("/capabilities/tools")
        .is_some_and(Value::is_object);
    let has_stash = result
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|tools| {
            tools
                .iter()
                .any(|t| t.pointer("/_meta").and_then(|m| m.get(HOIST_KEY)).is_some())
        });
    if !has_tool_caps && !has_stash {
        return false;
    }
    hoist(result);
    true
}
