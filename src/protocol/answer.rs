//! Every answer to `tools/resolve` and `tools/annotations`, decided and
//! built in one place, for every transport and for `regent resolve`.
//!
//! [`build`] picks the shape from the method, the request's protocol era and
//! what the request negotiated ([`Shape`]):
//!
//! - `tools/resolve` negotiating `io.modelcontextprotocol/tool-resolution`:
//!   the extension draft's `{resultType, name, annotations, _meta?}` ([`draft`]);
//! - `tools/resolve` otherwise: SEP-1862's answer, the tool included ([`sep1862`]);
//! - `tools/annotations`: the older draft's `{annotations}` ([`annotations_only`]).
//!
//! Each builds an [`Obj`], a JSON object whose members borrow from the
//! resolution, and [`Obj::render`] turns it into what the transport sends by
//! one walk: a `Value` (rmcp's `CustomResult`: HTTP, `regent resolve`) or the
//! same JSON as text (stdio). Nothing else builds these answers.
//!
//! Why text at all: a SEP-1862 answer repeats the tool as listed (name,
//! title, description, schemas), which resolution never changes. Building
//! and serializing those for every request was a fifth of a resolve's cost
//! (BENCHMARKS.md). [`Listed`] keeps them per tool and catalog revision, as
//! a value and as text, and a text answer is written around that text.
//! rmcp 3.9 carries a custom result only as a `serde_json::Value`
//! (`CustomResult(pub Value)`, `#[serde(transparent)]`), so text travels
//! through rmcp under [`RAW_KEY`] and the stdio transport writes it inside
//! the envelope ([`raw_text`], `transport::encode`): the one place a result
//! is spliced. rmcp's HTTP service serializes inside and offers no such
//! hook, so HTTP answers are values.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use super::negotiation::{self, Negotiated};
use super::{call, wire};
use crate::catalog::{Hint, Resolution, Tool};

/// The key under which a result's JSON text travels through rmcp.
pub const RAW_KEY: &str = "x-regent/raw-result";

/// An answer: as a value, or as the JSON text of one.
pub enum Answer {
    Value(Value),
    Text(String),
}

impl Answer {
    /// The answer as rmcp carries it: text goes under [`RAW_KEY`].
    pub fn into_value(self) -> Value {
        match self {
            Answer::Value(v) => v,
            Answer::Text(t) => {
                let mut m = Map::with_capacity(1);
                m.insert(RAW_KEY.into(), Value::String(t));
                Value::Object(m)
            }
        }
    }
}

/// The JSON text of a result produced by [`Answer::into_value`], if it is one.
pub fn raw_text(result: &Value) -> Option<&str> {
    match result {
        Value::Object(m) if m.len() == 1 => m.get(RAW_KEY).and_then(Value::as_str),
        _ => None,
    }
}

/// The members of a tool that resolution never changes ([`wire::listed_parts`]),
/// as a value and as JSON text (the members, without the braces).
pub struct ListedTool {
    value: Map<String, Value>,
    text: String,
}

impl ListedTool {
    pub fn of(tool: &Tool) -> ListedTool {
        let value = wire::listed_parts(tool);
        let mut out = Vec::new();
        write_members(&mut out, value.iter().map(|(k, v)| (k.as_str(), v)));
        let text = String::from_utf8(out).expect("serde_json writes UTF-8");
        ListedTool { value, text }
    }
}

/// Each tool's [`ListedTool`], for the catalog revision last asked about.
/// Filled as tools are resolved, so a catalog of many tools costs nothing
/// until they are used; a request for another revision (after a reload)
/// starts it afresh. A revision digests every file, so equal revisions list
/// tools the same way.
#[derive(Default)]
pub struct Listed {
    cache: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    revision: String,
    tools: HashMap<String, Arc<ListedTool>>,
}

impl Listed {
    /// The listed members of `tool` in the catalog of `revision`.
    pub fn get(&self, revision: &str, tool: &Tool) -> Arc<ListedTool> {
        let mut c = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if c.revision != revision {
            c.revision = revision.to_string();
            c.tools.clear();
        }
        if let Some(m) = c.tools.get(&tool.name) {
            return m.clone();
        }
        let listed = Arc::new(ListedTool::of(tool));
        c.tools.insert(tool.name.clone(), listed.clone());
        listed
    }
}

/// What decides an answer's shape.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// `tools/resolve` rather than `tools/annotations`.
    pub full: bool,
    /// Whether the request's protocol has `resultType` (2026-07-28).
    pub result_type: bool,
    /// The extensions the request negotiated.
    pub negotiated: Negotiated,
}

impl Shape {
    /// Whether this is the tool-resolution extension's answer.
    pub fn draft(&self) -> bool {
        self.full && self.negotiated.resolution
    }

    /// Whether the answer repeats the tool (and so needs its [`ListedTool`]).
    pub fn has_tool(&self) -> bool {
        self.full && !self.draft()
    }
}

/// What an answer is made of.
pub struct Parts<'a> {
    pub name: &'a str,
    /// `wire::annotations` of the resolution.
    pub annotations: &'a Map<String, Value>,
    pub resolution: &'a Resolution<'a>,
    /// The tool's listed members, when [`Shape::has_tool`].
    pub listed: Option<&'a ListedTool>,
}

/// The answer of `shape` made of `p`.
pub fn build<'a>(shape: Shape, p: &'a Parts<'a>) -> Obj<'a> {
    if shape.draft() {
        draft(p, shape.negotiated)
    } else if shape.full {
        sep1862(p, shape.result_type)
    } else {
        annotations_only(p, shape.result_type)
    }
}

/// The tool-resolution extension's answer, exactly: `{resultType:
/// "complete", name, annotations, _meta?}`, the annotations being the four
/// hints as booleans (no title, no extra hints). `_meta` holds only objects
/// of extensions the request negotiated: regent's decision (what a call with
/// these arguments would get, without an id) and the policy's `meta` under
/// [`negotiation::DECISION_EXTENSION`]; the resolved `securitySchemes`
/// (SEP-1488's shape) under [`negotiation::SECURITY_EXTENSION`].
pub fn draft<'a>(p: &'a Parts<'a>, negotiated: Negotiated) -> Obj<'a> {
    let r = p.resolution;
    let hints = Hint::ALL
        .iter()
        .map(|&h| (h.key(), Node::Bool(r.hints.get(h))))
        .collect();
    let mut meta = Vec::new();
    if negotiated.decision {
        let mut d = decision(r);
        if !r.meta.is_empty() {
            d.0.push(("meta", Node::Map(&r.meta)));
        }
        meta.push((negotiation::DECISION_EXTENSION, Node::Obj(d)));
    }
    if negotiated.security
        && let Some(s) = &r.security_schemes
    {
        meta.push((
            negotiation::SECURITY_EXTENSION,
            Node::Obj(Obj(vec![("securitySchemes", Node::Values(s))])),
        ));
    }
    let mut out = Obj(vec![
        ("resultType", Node::Str("complete")),
        ("name", Node::Str(p.name)),
        ("annotations", Node::Obj(Obj(hints))),
    ]);
    if !meta.is_empty() {
        out.0.push(("_meta", Node::Obj(Obj(meta))));
    }
    out
}

/// SEP-1862's answer: the name, the resolved annotations, `_meta` (the
/// policy's `meta` and regent's decision under `regent/decision`) and the
/// tool as listed with what resolution decided.
pub fn sep1862<'a>(p: &'a Parts<'a>, result_type: bool) -> Obj<'a> {
    let r = p.resolution;
    let tool = r.tool;
    let mut out = Obj(Vec::with_capacity(5));
    if result_type {
        out.0.push(("resultType", Node::Str("complete")));
    }
    out.0.push(("name", Node::Str(p.name)));
    out.0.push(("annotations", Node::Map(p.annotations)));
    // The decision a call with these arguments would get, without an id.
    out.0.push((
        "_meta",
        Node::MapWith(&r.meta, call::DECISION_META, decision(r)),
    ));
    let mut decided = Obj(Vec::with_capacity(5));
    decided.0.push(("annotations", Node::Map(p.annotations)));
    if tool.is_resolvable() {
        let marker = Obj(vec![("resolvable", Node::Bool(true))]);
        decided
            .0
            .push(("_meta", Node::MapWith(&r.meta, wire::EXTENSION, marker)));
    } else if !r.meta.is_empty() {
        decided.0.push(("_meta", Node::Map(&r.meta)));
    }
    if let Some(s) = &r.security_schemes {
        decided.0.push(("securitySchemes", Node::Values(s)));
    }
    if tool.is_resolvable() {
        decided.0.push(("resolve", Node::Bool(true)));
        decided.0.push(("dynamicAnnotations", Node::Bool(true)));
    }
    let listed = p
        .listed
        .expect("a SEP-1862 answer is built with the tool's listed members");
    out.0.push(("tool", Node::Tool(listed, decided)));
    out
}

/// The older draft's `tools/annotations` answer: `{annotations}`.
pub fn annotations_only<'a>(p: &'a Parts<'a>, result_type: bool) -> Obj<'a> {
    let mut out = Obj(Vec::with_capacity(2));
    if result_type {
        out.0.push(("resultType", Node::Str("complete")));
    }
    out.0.push(("annotations", Node::Map(p.annotations)));
    out
}

/// `{allowed, reasons, confirm?}`: what a call with these arguments would get.
fn decision<'a>(r: &'a Resolution<'a>) -> Obj<'a> {
    let mut d = Obj(Vec::with_capacity(4));
    d.0.push(("allowed", Node::Bool(r.deny.is_empty())));
    d.0.push(("reasons", Node::Strs(&r.deny)));
    if let Some(message) = &r.confirm {
        d.0.push(("confirm", Node::Str(message)));
    }
    d
}

/// A JSON object, members in order, borrowing its values. Its keys are
/// regent's own constants, which need no escaping (a debug assertion holds
/// them to that); keys that come from a catalog or policy live in the maps
/// the nodes borrow and are escaped as they are written.
pub struct Obj<'a>(Vec<(&'static str, Node<'a>)>);

/// One member's value.
enum Node<'a> {
    Bool(bool),
    Str(&'a str),
    Strs(&'a [String]),
    Values(&'a [Value]),
    Map(&'a Map<String, Value>),
    Obj(Obj<'a>),
    /// `base` with `key` set to the node, as `Map::insert` does it: in place
    /// when `base` has the key, else last.
    MapWith(&'a Map<String, Value>, &'static str, Obj<'a>),
    /// A tool object: its listed members, then these.
    Tool(&'a ListedTool, Obj<'a>),
}

impl Obj<'_> {
    /// The answer as the transport sends it: JSON text (`text`) or a value.
    pub fn render(&self, text: bool) -> Answer {
        if text {
            let listed = self.0.iter().map(|(_, v)| match v {
                Node::Tool(l, _) => l.text.len(),
                _ => 0,
            });
            let mut w = Writer {
                out: Vec::with_capacity(512 + listed.sum::<usize>()),
                last_map: None,
            };
            self.write(&mut w);
            Answer::Text(String::from_utf8(w.out).expect("serde_json writes UTF-8"))
        } else {
            Answer::Value(self.to_value())
        }
    }

    /// As a value.
    pub fn to_value(&self) -> Value {
        Value::Object(self.to_map(Map::with_capacity(self.0.len())))
    }

    fn to_map(&self, mut m: Map<String, Value>) -> Map<String, Value> {
        for (k, v) in &self.0 {
            m.insert((*k).to_string(), v.to_value());
        }
        m
    }

    fn write(&self, w: &mut Writer) {
        w.out.push(b'{');
        self.write_members(w, true);
        w.out.push(b'}');
    }

    fn write_members(&self, w: &mut Writer, mut first: bool) {
        for (k, v) in &self.0 {
            own_key(&mut w.out, &mut first, k);
            v.write(w);
        }
    }
}

/// The text being written, and where the last map written by [`Node::Map`]
/// landed in it: an answer repeats the resolved annotations (the result's
/// and the tool's), and the second copy is the bytes of the first.
/// The pointer is only compared, never read through; every map an answer
/// borrows lives until its rendering ends, so no address is reused.
struct Writer {
    out: Vec<u8>,
    last_map: Option<(*const Map<String, Value>, std::ops::Range<usize>)>,
}

impl Node<'_> {
    fn to_value(&self) -> Value {
        match self {
            Node::Bool(b) => Value::Bool(*b),
            Node::Str(s) => Value::String((*s).to_string()),
            Node::Strs(s) => Value::Array(s.iter().map(|s| Value::String(s.clone())).collect()),
            Node::Values(v) => Value::Array(v.to_vec()),
            Node::Map(m) => Value::Object((*m).clone()),
            Node::Obj(o) => o.to_value(),
            Node::MapWith(base, k, v) => {
                let mut m = (*base).clone();
                m.insert((*k).to_string(), v.to_value());
                Value::Object(m)
            }
            Node::Tool(listed, decided) => Value::Object(decided.to_map(listed.value.clone())),
        }
    }

    fn write(&self, w: &mut Writer) {
        let out = &mut w.out;
        match self {
            Node::Bool(true) => out.extend_from_slice(b"true"),
            Node::Bool(false) => out.extend_from_slice(b"false"),
            Node::Str(s) => value(out, s),
            Node::Strs(s) => value(out, s),
            Node::Values(v) => value(out, v),
            Node::Map(m) => {
                let at = *m as *const Map<String, Value>;
                match &w.last_map {
                    Some((p, range)) if *p == at => out.extend_from_within(range.clone()),
                    _ => {
                        let start = out.len();
                        value(out, m);
                        w.last_map = Some((at, start..out.len()));
                    }
                }
            }
            Node::Obj(o) => o.write(w),
            Node::MapWith(base, k, v) => {
                out.push(b'{');
                let mut first = true;
                let mut written = false;
                for (bk, bv) in base.iter() {
                    key(&mut w.out, &mut first, bk);
                    if bk == k {
                        v.write(w);
                        written = true;
                    } else {
                        value(&mut w.out, bv);
                    }
                }
                if !written {
                    own_key(&mut w.out, &mut first, k);
                    v.write(w);
                }
                w.out.push(b'}');
            }
            Node::Tool(listed, decided) => {
                out.push(b'{');
                out.extend_from_slice(listed.text.as_bytes());
                decided.write_members(w, listed.text.is_empty());
                w.out.push(b'}');
            }
        }
    }
}

/// `"key":` for one of regent's own keys, written as it is.
fn own_key(out: &mut Vec<u8>, first: &mut bool, k: &'static str) {
    debug_assert!(
        k.bytes()
            .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\'),
        "{k} needs escaping"
    );
    if !std::mem::take(first) {
        out.push(b',');
    }
    out.push(b'"');
    out.extend_from_slice(k.as_bytes());
    out.extend_from_slice(b"\":");
}

/// `"key":` for any key, escaped as JSON needs.
fn key(out: &mut Vec<u8>, first: &mut bool, k: &str) {
    if !std::mem::take(first) {
        out.push(b',');
    }
    value(out, k);
    out.push(b':');
}

fn value<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    // Writing into a Vec cannot fail, and these values always serialize.
    let _ = serde_json::to_writer(&mut *out, v);
}

/// `{"a":1,"b":2}`'s members as `"a":1,"b":2`.
fn write_members<'a>(out: &mut Vec<u8>, members: impl Iterator<Item = (&'a str, &'a Value)>) {
    let mut first = true;
    for (k, v) in members {
        key(out, &mut first, k);
        value(out, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TOOLS: &str = r#"tools:
  - name: rich
    title: Rich tool
    description: Every member a resolved tool can carry
    inputSchema:
      type: object
      properties:
        mode: {type: string, enum: [plain, secret, risky, ask]}
      required: [mode]
    outputSchema:
      type: object
      properties:
        ok: {type: boolean}
    annotations: {title: Rich, readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true}
    meta: {team: "quotes \" and \\ and ünïcode"}
    securitySchemes: [{type: noauth}]
    resolve:
      - when: {mode: plain}
        annotations: {readOnlyHint: true, destructiveHint: false}
        meta: {rule: plain}
      - when: {mode: secret}
        securitySchemes: [{type: oauth2, scopes: [read]}]
      - when: {mode: risky}
        deny: [too risky, "and \"quoted\""]
      - when: {mode: ask}
        confirm: Really do it?
"#;

    fn catalog() -> crate::catalog::Catalog {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tools.yaml"), TOOLS).unwrap();
        let source = crate::source::Source::load(&[dir.path().to_path_buf()]).unwrap();
        crate::catalog::build(&source, &Default::default()).unwrap()
    }

    fn shapes() -> Vec<Shape> {
        let mut out = Vec::new();
        for full in [true, false] {
            for result_type in [true, false] {
                for (resolution, decision, security) in [
                    (false, false, false),
                    (true, false, false),
                    (true, true, false),
                    (true, false, true),
                    (true, true, true),
                ] {
                    out.push(Shape {
                        full,
                        result_type,
                        negotiated: Negotiated {
                            resolution,
                            decision,
                            security,
                        },
                    });
                }
            }
        }
        out
    }

    /// The text stdio writes and the value HTTP and `regent resolve` send
    /// are one walk of the same answer: equal, member order included.
    #[test]
    fn text_and_value_are_the_same_answer() {
        let catalog = catalog();
        let tool = catalog.tool("rich").unwrap();
        let listed = Listed::default();
        for mode in ["plain", "secret", "risky", "ask"] {
            let r = catalog.resolve("rich", &json!({"mode": mode})).unwrap();
            let annotations = wire::annotations(tool, Some(&r));
            for shape in shapes() {
                let l = listed.get(&catalog.revision, tool);
                let p = Parts {
                    name: "rich",
                    annotations: &annotations,
                    resolution: &r,
                    listed: shape.has_tool().then_some(&*l),
                };
                let obj = build(shape, &p);
                let Answer::Text(text) = obj.render(true) else {
                    panic!("text asked for")
                };
                let Answer::Value(value) = obj.render(false) else {
                    panic!("value asked for")
                };
                assert_eq!(
                    text,
                    serde_json::to_string(&value).unwrap(),
                    "{mode} {shape:?}"
                );
                if shape.has_tool() {
                    let mut tool_json = wire::tool_json(tool, Some(&r));
                    tool_json.insert("annotations".into(), Value::Object(annotations.clone()));
                    assert_eq!(value["tool"], Value::Object(tool_json), "{mode} {shape:?}");
                }
            }
        }
    }

    #[test]
    fn security_schemes_go_under_their_extension_only_when_negotiated() {
        let catalog = catalog();
        let tool = catalog.tool("rich").unwrap();
        let r = catalog.resolve("rich", &json!({"mode": "secret"})).unwrap();
        let annotations = wire::annotations(tool, Some(&r));
        let p = Parts {
            name: "rich",
            annotations: &annotations,
            resolution: &r,
            listed: None,
        };
        let answer = |decision, security| {
            let negotiated = Negotiated {
                resolution: true,
                decision,
                security,
            };
            draft(&p, negotiated).to_value()
        };
        assert_eq!(answer(false, false).get("_meta"), None);
        assert_eq!(
            answer(false, true)["_meta"],
            json!({negotiation::SECURITY_EXTENSION:
                {"securitySchemes": [{"type": "oauth2", "scopes": ["read"]}]}})
        );
        let both = answer(true, true);
        let keys: Vec<_> = both["_meta"].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                negotiation::DECISION_EXTENSION,
                negotiation::SECURITY_EXTENSION
            ]
        );
        assert_eq!(
            both.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["resultType", "name", "annotations", "_meta"]
        );
    }
}
