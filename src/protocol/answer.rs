//! The answers to `tools/resolve` and `tools/annotations` as JSON text, for
//! the stdio transport, which writes them as they are.
//!
//! A `tools/resolve` answer repeats the tool as listed: its name, title,
//! description and schemas, which resolution never changes. Building those
//! as JSON values and serializing them again for every request was a fifth
//! of a resolve's cost (BENCHMARKS.md). [`Listed`] serializes them once per
//! tool and catalog revision; an answer is written around that text, with
//! only what the request decided (annotations, `_meta`, `securitySchemes`)
//! serialized per request.
//!
//! rmcp carries a custom result as a `serde_json::Value`, so the text travels
//! to the transport as the only member of an object, under [`RAW_KEY`], and
//! `transport::encode` writes it verbatim in place of that object. Only
//! handlers serving through that transport answer this way
//! (`Regent::with_text_answers`); elsewhere (HTTP, `regent resolve`) the same
//! members are built as values (`wire::listed_parts`).
//!
//! Which members an answer has, and their values, stay `protocol`'s (mod.rs
//! and `wire`); this module only writes them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use super::{call, wire};
use crate::catalog::{Resolution, Tool};

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

/// Each tool's [`wire::listed_parts`] as JSON text (the members, without the
/// braces), for the catalog revision last asked about. Filled as tools are
/// resolved, so a catalog of many tools costs nothing until they are used;
/// a request for another revision (after a reload) starts it afresh. A
/// revision digests every file, so equal revisions list tools the same way.
#[derive(Default)]
pub struct Listed {
    cache: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    revision: String,
    tools: HashMap<String, Arc<str>>,
}

impl Listed {
    /// The listed members of `tool` in the catalog of `revision`.
    pub fn members(&self, revision: &str, tool: &Tool) -> Arc<str> {
        let mut c = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if c.revision != revision {
            c.revision = revision.to_string();
            c.tools.clear();
        }
        if let Some(m) = c.tools.get(&tool.name) {
            return m.clone();
        }
        let text = members_text(&wire::listed_parts(tool));
        let text: Arc<str> = Arc::from(text);
        c.tools.insert(tool.name.clone(), text.clone());
        text
    }
}

/// `{"a":1,"b":2}` as `"a":1,"b":2`.
fn members_text(members: &Map<String, Value>) -> String {
    let mut out = Vec::new();
    write_members(&mut out, members);
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

fn write_members(out: &mut Vec<u8>, members: &Map<String, Value>) {
    for (i, (k, v)) in members.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        // Writing a string or a Value into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, k);
        out.push(b':');
        let _ = serde_json::to_writer(&mut *out, v);
    }
}

/// What a `tools/resolve` or `tools/annotations` answer is made of.
pub struct Parts<'a> {
    /// Whether the request's protocol has `resultType` (2026-07-28).
    pub result_type: bool,
    /// `tools/resolve` (the tool too) rather than `tools/annotations`.
    pub full: bool,
    pub name: &'a str,
    /// `wire::annotations` of the resolution.
    pub annotations: &'a Map<String, Value>,
    pub resolution: &'a Resolution<'a>,
    /// The tool's listed members, from [`Listed::members`].
    pub listed: &'a str,
}

/// The JSON text of the answer: the members `protocol::resolve_result`
/// builds as a value, in the same order, with the same values
/// (tests/resolve_matches_server.rs holds the two equal).
pub fn resolved(p: &Parts<'_>) -> String {
    let r = p.resolution;
    let tool = r.tool;
    let mut w = Writer(Vec::with_capacity(512 + p.listed.len()));
    w.0.push(b'{');
    let mut first = true;
    if p.result_type {
        w.key(&mut first, "resultType");
        w.value("complete");
    }
    if p.full {
        w.key(&mut first, "name");
        w.value(p.name);
        w.key(&mut first, "annotations");
        w.value(p.annotations);
        // The decision a call with these arguments would get, without an id.
        w.key(&mut first, "_meta");
        w.meta_with(&r.meta, call::DECISION_META, |w| {
            w.0.extend_from_slice(br#"{"allowed":"#);
            w.value(&r.deny.is_empty());
            w.0.extend_from_slice(br#","reasons":"#);
            w.value(&r.deny);
            if let Some(message) = &r.confirm {
                w.0.extend_from_slice(br#","confirm":"#);
                w.value(message);
            }
            w.0.push(b'}');
        });
        w.key(&mut first, "tool");
        w.0.push(b'{');
        w.0.extend_from_slice(p.listed.as_bytes());
        let mut first_in_tool = false;
        w.key(&mut first_in_tool, "annotations");
        w.value(p.annotations);
        if tool.is_resolvable() {
            w.key(&mut first_in_tool, "_meta");
            w.meta_with(&r.meta, wire::EXTENSION, |w| {
                w.0.extend_from_slice(br#"{"resolvable":true}"#);
            });
        } else if !r.meta.is_empty() {
            w.key(&mut first_in_tool, "_meta");
            w.value(&r.meta);
        }
        if let Some(s) = &r.security_schemes {
            w.key(&mut first_in_tool, "securitySchemes");
            w.value(s);
        }
        if tool.is_resolvable() {
            w.0.extend_from_slice(br#","resolve":true,"dynamicAnnotations":true"#);
        }
        w.0.push(b'}');
    } else {
        w.key(&mut first, "annotations");
        w.value(p.annotations);
    }
    w.0.push(b'}');
    String::from_utf8(w.0).expect("serde_json writes UTF-8")
}

struct Writer(Vec<u8>);

impl Writer {
    /// `"key":`, after a comma unless it is the object's first member.
    fn key(&mut self, first: &mut bool, key: &str) {
        if !std::mem::take(first) {
            self.0.push(b',');
        }
        self.value(key);
        self.0.push(b':');
    }

    fn value<T: serde::Serialize + ?Sized>(&mut self, v: &T) {
        // Writing into a Vec cannot fail, and these values always serialize.
        let _ = serde_json::to_writer(&mut self.0, v);
    }

    /// `base` with `key` set to what `write` writes, as `Map::insert` would
    /// do it: in place when `base` has the key, else last.
    fn meta_with(&mut self, base: &Map<String, Value>, key: &str, write: impl Fn(&mut Writer)) {
        self.0.push(b'{');
        let mut first = true;
        let mut written = false;
        for (k, v) in base {
            self.key(&mut first, k);
            if k == key {
                write(self);
                written = true;
            } else {
                self.value(v);
            }
        }
        if !written {
            self.key(&mut first, key);
            write(self);
        }
        self.0.push(b'}');
    }
}
