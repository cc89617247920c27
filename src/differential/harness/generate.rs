//! What the differential tests feed regent: a small fixed-seed PRNG
//! ([`Rng`]), the constants a tool's rules compare arguments with
//! ([`Seeds`]), arguments generated from a tool's inputSchema with hostile
//! strings (path separators, `..`, format verbs, quotes, escapes, control
//! and non-ASCII characters), a wrong type, an invalid enum value, a missing
//! or extra key now and then, and hostile callers. What is compared, and
//! against which engine, is the tests'.

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::analysis::proof;
use crate::caller::Caller;
use crate::catalog::{Tool, schema};

/// The pieces hostile strings are made of.
pub(super) const PIECES: &[&str] = &[
    "/", "..", ".", "~", "\\", "\"", "%", "%s", "%q", "é", "ß", "😀", "\u{7f}", "\t", "\n",
    "\u{0}", " ", "a", "-", "*", "content", "",
];

/// splitmix64: small, deterministic, and good enough to pick from lists
/// (also `builtins`' generated test).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True once in `n` times.
    pub(crate) fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub(crate) fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

/// What the generator knows of one tool beside its schema.
pub(in crate::differential) struct Seeds {
    /// String constants the rules compare each argument with.
    literals: BTreeMap<String, Vec<String>>,
    /// Every such constant, for any string.
    all: Vec<String>,
    /// Strings matching each `pattern` met so far: hostile strings rarely
    /// do, and a string argument with a pattern would otherwise seldom pass
    /// validation.
    patterns: RefCell<BTreeMap<String, Vec<String>>>,
}

impl Seeds {
    /// Nothing beyond the schema: for callers, which no rule literal seeds.
    pub(in crate::differential) fn empty() -> Seeds {
        Seeds {
            literals: BTreeMap::new(),
            all: Vec::new(),
            patterns: RefCell::default(),
        }
    }

    /// The string constants `tool`'s rules compare its arguments with.
    pub(in crate::differential) fn of(tool: &Tool) -> Seeds {
        let literals: BTreeMap<String, Vec<String>> = proof::literals(tool)
            .into_iter()
            .map(|(k, vs)| {
                let strings = vs
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect();
                (k, strings)
            })
            .collect();
        let mut all: Vec<String> = literals.values().flatten().cloned().collect();
        all.sort();
        all.dedup();
        Seeds {
            literals,
            all,
            patterns: RefCell::default(),
        }
    }

    fn matching(&self, rng: &mut Rng, pattern: &str) -> Option<String> {
        let mut cache = self.patterns.borrow_mut();
        let pool = cache
            .entry(pattern.to_string())
            .or_insert_with(|| crate::regex_samples::pattern_strings(pattern, 16, 32));
        if pool.is_empty() {
            return None;
        }
        let s = rng.pick::<String>(pool).clone();
        // Case matters to rules that compare after `lower` or `upper`.
        Some(match rng.below(4) {
            0 => s.to_uppercase(),
            1 => s.to_lowercase(),
            _ => s,
        })
    }
}

/// A string of 0–6 hostile pieces, sometimes built around a rule constant
/// or a value the schema suggests.
fn hostile_string(rng: &mut Rng, seeds: &Seeds, key: Option<&str>, hints: &[Value]) -> String {
    let mut s = String::new();
    let own = key
        .and_then(|k| seeds.literals.get(k))
        .filter(|l| !l.is_empty());
    match rng.below(6) {
        0 if own.is_some() => s.push_str(rng.pick::<String>(own.unwrap())),
        1 if !seeds.all.is_empty() => s.push_str(rng.pick::<String>(&seeds.all)),
        2 => {
            let strings: Vec<&str> = hints.iter().filter_map(Value::as_str).collect();
            if !strings.is_empty() {
                s.push_str(rng.pick::<&str>(&strings));
            }
        }
        _ => {}
    }
    // A constant alone, unchanged, now and then: the rules' own cases.
    if !s.is_empty() && rng.one_in(3) {
        return s;
    }
    for _ in 0..rng.below(7) {
        let piece = *rng.pick(PIECES);
        if rng.one_in(2) {
            s.push_str(piece);
        } else {
            s.insert_str(0, piece);
        }
    }
    s
}

/// Any JSON value, for a wrong type or a schema that says nothing.
fn any_value(rng: &mut Rng, seeds: &Seeds, depth: usize) -> Value {
    match rng.below(if depth > 1 { 5 } else { 7 }) {
        0 => json!(rng.pick(&[0i64, 1, -1, 7, 1 << 40])),
        // Decimal fractions too: OPA computes on their text to 64 bits,
        // where a double's sum or quotient differs (issue 27).
        1 => json!(rng.pick(&[
            0.5,
            -0.5,
            -2.25,
            1e300,
            0.1,
            0.2,
            0.3,
            1.0 / 3.0,
            1234567.5,
            1e-5,
            1.5e21,
            // Integral doubles: `3` in JavaScript, `3.0` and `1e+16` in
            // Python, where OPA takes the second for a non-integer.
            3.0,
            1e16
        ])),
        2 => Value::Bool(rng.one_in(2)),
        3 => Value::Null,
        4 => Value::String(hostile_string(rng, seeds, None, &[])),
        5 => Value::Array(
            (0..rng.below(3))
                .map(|_| any_value(rng, seeds, depth + 1))
                .collect(),
        ),
        _ => {
            let mut m = Map::new();
            for _ in 0..rng.below(3) {
                m.insert(
                    hostile_string(rng, seeds, None, &[]),
                    any_value(rng, seeds, depth + 1),
                );
            }
            Value::Object(m)
        }
    }
}

/// A value for `s` (the schema of argument `key`), mostly of its type.
fn value_for(rng: &mut Rng, seeds: &Seeds, s: &Value, key: Option<&str>, depth: usize) -> Value {
    if rng.one_in(16) || depth > 3 {
        return any_value(rng, seeds, depth);
    }
    if let Some(c) = s.get("const") {
        return c.clone();
    }
    if let Some(e) = s
        .get("enum")
        .and_then(Value::as_array)
        .filter(|e| !e.is_empty())
    {
        if rng.one_in(8) {
            return Value::String(hostile_string(rng, seeds, key, e));
        }
        return rng.pick(e).clone();
    }
    let ty = match s.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) if !ts.is_empty() => rng.pick(ts).as_str().unwrap_or(""),
        _ => "",
    };
    match ty {
        "string" => {
            let hints = schema::candidates(s);
            // A value the schema suggests, as is, some of the time: a
            // `pattern` or `format` the hostile strings rarely meet.
            if !hints.is_empty() && rng.one_in(4) {
                return rng.pick(&hints).clone();
            }
            if let Some(p) = s.get("pattern").and_then(Value::as_str)
                && !rng.one_in(4)
                && let Some(m) = seeds.matching(rng, p)
            {
                return Value::String(m);
            }
            Value::String(hostile_string(rng, seeds, key, &hints))
        }
        "integer" | "number" => {
            let mut vs = schema::candidates(s);
            vs.extend([json!(0), json!(1), json!(-1), json!(1i64 << 53)]);
            if ty == "number" {
                vs.push(json!(0.5));
            }
            rng.pick(&vs).clone()
        }
        "boolean" => Value::Bool(rng.one_in(2)),
        "null" => Value::Null,
        "array" => {
            let items = s.get("items").cloned().unwrap_or(json!({}));
            Value::Array(
                (0..rng.below(4))
                    .map(|_| value_for(rng, seeds, &items, key, depth + 1))
                    .collect(),
            )
        }
        "object" => object_for(rng, seeds, s, depth + 1),
        _ if s.get("properties").is_some() => object_for(rng, seeds, s, depth + 1),
        _ => any_value(rng, seeds, depth),
    }
}

/// An object for object schema `s`: required keys mostly present, optional
/// ones often, and now and then an extra key.
fn object_for(rng: &mut Rng, seeds: &Seeds, s: &Value, depth: usize) -> Value {
    let required: Vec<&str> = s
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut m = Map::new();
    for (name, p) in schema::properties(s).into_iter().flatten() {
        let keep = if required.contains(&name.as_str()) {
            !rng.one_in(24)
        } else {
            !rng.one_in(3)
        };
        if keep {
            let v = value_for(rng, seeds, p, Some(name), depth);
            m.insert(name.clone(), v);
        }
    }
    if rng.one_in(8) {
        let key = if rng.one_in(2) {
            "content".to_string()
        } else {
            hostile_string(rng, seeds, None, &[])
        };
        let v = any_value(rng, seeds, depth);
        m.insert(key, v);
    }
    Value::Object(m)
}

/// A sample the tool's own checker builds, with each string argument
/// replaced, some of the time, by a hostile one.
fn mutated(rng: &mut Rng, seeds: &Seeds, tool: &Tool, base: &Value) -> Value {
    let Value::Object(mut m) = base.clone() else {
        return base.clone();
    };
    let props = schema::properties(&tool.input_schema);
    let keys: Vec<String> = m.keys().cloned().collect();
    for k in keys {
        if !m[&k].is_string() || rng.one_in(2) {
            continue;
        }
        let s = props.and_then(|p| p.get(&k)).cloned().unwrap_or(json!({}));
        let hints = vec![m[&k].clone()];
        let v = if s.get("enum").is_some() || s.get("pattern").is_some() {
            value_for(rng, seeds, &s, Some(&k), 0)
        } else {
            Value::String(hostile_string(rng, seeds, Some(&k), &hints))
        };
        m.insert(k, v);
    }
    Value::Object(m)
}

/// The `i`th generated arguments for `tool`: every other one a mutated
/// sample of its checker (`samples`), the rest built from its schema, and
/// now and then not an object at all.
pub(in crate::differential) fn arguments(
    rng: &mut Rng,
    seeds: &Seeds,
    tool: &Tool,
    samples: &[Value],
    i: usize,
) -> Value {
    let args = if i.is_multiple_of(2) && !samples.is_empty() {
        let base = rng.pick(samples).clone();
        mutated(rng, seeds, tool, &base)
    } else {
        object_for(rng, seeds, &tool.input_schema, 0)
    };
    if rng.one_in(64) {
        any_value(rng, seeds, 0)
    } else {
        args
    }
}

/// A caller: none, or one with hostile names and maybe groups.
pub(in crate::differential) fn caller(rng: &mut Rng, seeds: &Seeds) -> Option<Caller> {
    if rng.one_in(2) {
        return None;
    }
    let subject = hostile_string(rng, seeds, None, &[json!("alice")]);
    let issuer = if rng.one_in(2) {
        "local".to_string()
    } else {
        hostile_string(rng, seeds, None, &[])
    };
    let mut claims = Map::new();
    claims.insert("sub".into(), json!(subject));
    claims.insert("iss".into(), json!(issuer));
    match rng.below(4) {
        0 => {}
        1 => {
            claims.insert("groups".into(), any_value(rng, seeds, 1));
        }
        _ => {
            let groups: Vec<Value> = (0..rng.below(3))
                .map(|_| {
                    let g = ["oncall", "admin", "ops", "dev"];
                    if rng.one_in(3) {
                        json!(hostile_string(rng, seeds, None, &[]))
                    } else {
                        json!(rng.pick(&g))
                    }
                })
                .collect();
            claims.insert("groups".into(), Value::Array(groups));
        }
    }
    Some(Caller {
        subject,
        issuer,
        claims,
        spelled: Vec::new(),
    })
}
