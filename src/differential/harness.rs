//! A differential test of the native evaluator against regorus, on every
//! catalog the repository ships.
//!
//! In a debug build, `policy::EnginePool::eval` recomputes each answer of
//! `native` with regorus and panics when the two differ
//! (`agrees_with_regorus`). So driving many arguments through the real
//! request path, [`Catalog::resolve_as`], compares the two evaluators on
//! each of them. A difference would be a policy bypass: a call one
//! evaluator denies and the other allows, or a different confirmation
//! question or hint. The arguments are generated from each tool's
//! inputSchema (so that most pass validation and reach the policy), with
//! strings drawn from a hostile alphabet (path separators, `..`, format
//! verbs, quotes, escapes, control and non-ASCII characters), the constants
//! the rules compare arguments with, and now and then a value of the wrong
//! type, an invalid enum value, a missing key or an extra one. A small
//! fixed-seed PRNG keeps every run the same; errors (invalid arguments, a
//! failing policy) are expected answers, and only a panic fails the test.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{Map, Value, json};

use crate::analysis::{exercise, proof};
use crate::caller::Caller;
use crate::catalog::{BuildOptions, Catalog, ResolveError, Tool, build, schema};
use crate::policy::engine::compared;
use crate::source::Source;

/// Generated arguments per native tool.
const PER_TOOL: usize = 2_000;

/// Generated callers per tool with a `visible` rule.
const VISIBLE_CALLERS: usize = 500;

/// The pieces hostile strings are made of.
const PIECES: &[&str] = &[
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
pub(super) struct Seeds {
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
    pub(super) fn empty() -> Seeds {
        Seeds {
            literals: BTreeMap::new(),
            all: Vec::new(),
            patterns: RefCell::default(),
        }
    }

    /// The string constants `tool`'s rules compare its arguments with.
    pub(super) fn of(tool: &Tool) -> Seeds {
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
pub(super) fn arguments(
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
pub(super) fn caller(rng: &mut Rng, seeds: &Seeds) -> Option<Caller> {
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
    })
}

/// Every directory under `examples/` and `tests/cases/`.
pub(super) fn shipped_catalogs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = Vec::new();
    for parent in ["examples", "tests/cases"] {
        let Ok(entries) = std::fs::read_dir(root.join(parent)) else {
            continue;
        };
        for e in entries.flatten() {
            if e.path().is_dir() {
                dirs.push(e.path());
            }
        }
    }
    dirs.sort();
    dirs
}

/// The catalog in `dir`, with its upstreams' pinned tool lists imported as
/// `check` and `test` do; `None` when it does not load or build.
pub(super) fn load(dir: &Path) -> Option<Catalog> {
    let mut source = Source::load(&[dir.to_path_buf()]).ok()?;
    if source.import_pinned().has_errors() {
        return None;
    }
    build(&source, &BuildOptions::default()).ok()
}

#[test]
fn native_answers_equal_regorus_on_hostile_arguments() {
    let started = Instant::now();
    let mut rng = Rng(0x5eed_0f7e_57ab_u64);
    let (mut catalogs, mut skipped, mut tools) = (0, 0, 0);
    let (mut inputs, mut reached, mut answered, mut visible) = (0, 0, 0, 0);
    let mut native_tools = Vec::new();
    for dir in shipped_catalogs() {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let Some(catalog) = load(&dir) else {
            skipped += 1;
            eprintln!("skipped {name}: does not load or build");
            continue;
        };
        catalogs += 1;
        for t in catalog.tools() {
            if t.is_resolvable() && !t.is_native() {
                eprintln!("{name}/{}: not native, not compared", t.name);
            }
        }
        // A `visible` rule is evaluated per caller, for listing, through the
        // same pool: compare it on hostile callers too.
        for tool in catalog.tools().iter().filter(|t| t.has_visible_rule()) {
            let before = compared();
            let seeds = Seeds::empty();
            for _ in 0..VISIBLE_CALLERS {
                let who = caller(&mut rng, &seeds);
                let _ = tool.visibility(who.as_ref());
            }
            let native = compared() - before;
            eprintln!(
                "{name}/{} visible: {native} of {VISIBLE_CALLERS} callers answered natively",
                tool.name
            );
            visible += native;
        }
        for tool in catalog.tools().iter().filter(|t| t.is_native()) {
            tools += 1;
            native_tools.push(format!("{name}/{}", tool.name));
            let seeds = Seeds::of(tool);
            let samples = exercise::samples(tool);
            let mut valid = 0;
            let compared_before = compared();
            for i in 0..PER_TOOL {
                let args = arguments(&mut rng, &seeds, tool, &samples, i);
                let who = caller(&mut rng, &seeds);
                inputs += 1;
                // Any answer will do, errors included: the comparison with
                // regorus happens inside, and panics on a difference.
                match catalog.resolve_as(&tool.name, &args, who.as_ref()) {
                    Err(ResolveError::InvalidArguments { .. }) => {}
                    _ => valid += 1,
                }
            }
            reached += valid;
            let native = compared() - compared_before;
            eprintln!(
                "{name}/{}: {valid} of {PER_TOOL} arguments passed validation, \
                 {native} answered natively and compared",
                tool.name
            );
            assert!(native > 0, "{name}/{}: nothing was compared", tool.name);
            answered += native;
        }
    }
    eprintln!(
        "{catalogs} catalogs ({skipped} skipped), {tools} native tools, {inputs} arguments, \
         {reached} passed validation, {answered} answered natively and compared, \
         {visible} visible verdicts compared, in {:?}",
        started.elapsed()
    );
    // The last three import a library package and call its functions
    // (`import data.root`, `root.inside(p)`) or read its rules.
    for t in [
        "manage_files/manage_files",
        "github_api/github_api",
        "filesystem/read_text_file",
        "filesystem/read_media_file",
        "filesystem/read_multiple_files",
        "filesystem/list_directory",
        "filesystem/directory_tree",
        "filesystem/search_files",
        "filesystem/get_file_info",
        "filesystem/write_file",
        "filesystem/create_directory",
        "filesystem/edit_file",
        "filesystem/move_file",
        "git_server/git_status",
        "git_server/git_diff_unstaged",
        "git_server/git_diff_staged",
        "git_server/git_diff",
        "git_server/git_log",
        "git_server/git_show",
        "git_server/git_branch",
        "git_server/git_add",
        "git_server/git_commit",
        "git_server/git_reset",
        "git_server/git_create_branch",
        "git_server/git_checkout",
        "team_ops/deploy",
        "team_ops/rollback",
    ] {
        assert!(
            native_tools.iter().any(|n| n == t),
            "{t} was not exercised natively: {native_tools:?}"
        );
    }
    assert!(
        answered * 2 > inputs,
        "most arguments should be answered natively: {answered} of {inputs}"
    );
}

/// Two disagreements this file's generator found, run over a policy written
/// for it (the shipped catalogs validate their arguments' types, so a
/// number never reaches their `sprintf`), both in `sprintf("%d", [x])` for
/// a float `x` that regorus' `Number::as_u64` takes for an integer:
///
/// - negative zero, sent as the JSON number `-0` or `-0.0` (an `integer`
///   schema accepts it): native answered `"0"`, regorus `"-0"`;
/// - 2^64, sent as `18446744073709551616`: `as_u64` saturates to
///   `u64::MAX`, so native answered `"18446744073709551615"`, regorus
///   `"18446744073709552000"`.
///
/// `builtins::verb_of` now answers `%d` only where regorus' digits are the
/// integer's, and leaves these to regorus.
fn sprintf_d_agrees(json: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tools.yaml"),
        "tools:\n  - name: t\n    inputSchema: {type: object, properties: {d: {type: integer}}}\n    \
         policy: tools.t\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("t.rego"),
        "package tools.t\n\nimport rego.v1\n\nconfirm := sprintf(\"%d\", [input.arguments.d])\n",
    )
    .unwrap();
    let catalog = load(dir.path()).expect("the catalog builds");
    assert!(catalog.tool("t").unwrap().is_native());
    let args: Value = serde_json::from_str(&format!(r#"{{"d": {json}}}"#)).unwrap();
    // Panics in a debug build where native and regorus differ.
    catalog.resolve("t", &args).unwrap();
}

#[test]
fn sprintf_d_of_negative_zero_agrees() {
    sprintf_d_agrees("-0");
}

#[test]
fn sprintf_d_of_two_to_the_64_agrees() {
    sprintf_d_agrees("18446744073709551616");
}

/// Policies that hand their arguments, untyped, to every builtin and form
/// `native` answers itself: one tool per group, so that a call regorus
/// raises an error on (which sends the whole plan back to regorus) leaves
/// the other groups compared.
const UNTYPED_POLICIES: &[(&str, &str)] = &[
    (
        "fmt",
        r#"deny contains sprintf("%s", [input.arguments.a])
deny contains sprintf("%v", [input.arguments.a])
deny contains sprintf("%s/%v", [input.arguments.a, input.arguments.b])
deny contains sprintf("%v:%s%%", [input.arguments.b, input.arguments.a])
deny contains sprintf("[%v]", [input.arguments.o])
confirm := sprintf("%v and %v", [input.arguments.a, input.arguments.b])
"#,
    ),
    (
        "fmt_q",
        "confirm := sprintf(\"q=%q\", [input.arguments.a])\n",
    ),
    ("fmt_d", "confirm := sprintf(\"%d\", [input.arguments.a])\n"),
    (
        "fmt_mixed",
        "confirm := sprintf(\"%s %d %q %v\", [input.arguments.b, input.arguments.a, \
         input.arguments.b, input.arguments.a])\n",
    ),
    (
        "split",
        "confirm := sprintf(\"%v\", [split(input.arguments.a, input.arguments.b)])\n",
    ),
    (
        "split_const",
        r#"deny contains sprintf("%v", [split(input.arguments.a, "/")])
deny contains sprintf("%v", [split(input.arguments.a, "::")])
deny contains sprintf("%v", [split(input.arguments.a, "é")])
confirm := split(input.arguments.a, "/")[0]
"#,
    ),
    (
        "match",
        r#"pat := "^[a-z.]+/"
deny contains "regex" if regex.match("^a.*%s$", input.arguments.a)
deny contains "regex_rule" if regex.match(pat, input.arguments.a)
deny contains "not_regex" if not regex.match("é|😀", input.arguments.a)
deny contains "glob_null" if glob.match("*.a", null, input.arguments.a)
deny contains "glob_slash" if glob.match("a/**", ["/"], input.arguments.a)
deny contains "glob_colon" if glob.match("*:*", [":"], input.arguments.a)
deny contains "glob_none" if glob.match("?*", [], input.arguments.a)
"#,
    ),
    (
        "match_regex_input",
        "deny contains \"regex\" if regex.match(input.arguments.b, input.arguments.a)\n",
    ),
    (
        "match_glob_input",
        "deny contains \"glob\" if glob.match(input.arguments.b, [\"/\"], input.arguments.a)\n",
    ),
    (
        "keys",
        r#"deny contains "key" if input.arguments.k in object.keys(input.arguments.o)
deny contains "no_key" if not input.arguments.k in object.keys(input.arguments.o)
deny contains "index" if input.arguments.o[input.arguments.k]
"#,
    ),
    (
        "fns",
        r#"import data.lib

wrap(x) := sprintf("<%v>", [x])

same(x, y) if x == y

deny contains wrap(input.arguments.a)
deny contains lib.twice(input.arguments.a, input.arguments.b)
deny contains "same" if same(input.arguments.a, input.arguments.b)
deny contains "small" if lib.small(input.arguments.a)
confirm := lib.head(input.arguments.a)
"#,
    ),
    (
        "cmp",
        r#"deny contains "lt" if input.arguments.a < input.arguments.b
deny contains "eq" if input.arguments.a == input.arguments.b
deny contains "ne" if input.arguments.a != input.arguments.b
deny contains "in_b" if input.arguments.a in input.arguments.b
deny contains "some_b" if { some x in input.arguments.b; x == input.arguments.a }
deny contains "in_lit" if input.arguments.a in ["x", 1, null, true, 1.5, {"a": 1}]
deny contains "zero" if input.arguments.a == 0
deny contains "neg_zero" if input.arguments.a == -0
deny contains "two_64" if input.arguments.a == 18446744073709551616
deny contains "ge_2_53" if input.arguments.a >= 9007199254740992
deny contains "true" if input.arguments.a == true
deny contains "null" if input.arguments.a == null
deny contains "string" if input.arguments.a == "content"
meta := {"a": input.arguments.a, "lt": input.arguments.a < 1}
"#,
    ),
];

const UNTYPED_LIB: &str = r#"package lib

import rego.v1

twice(x, y) := sprintf("%v%v%s", [x, y, x])

small(x) if x < 10

head(x) := split(x, "/")[0]
"#;

/// Numbers as a client writes them: `-0.0` and 2^64 parse to floats.
const UNTYPED_NUMBERS: &[&str] = &[
    "0",
    "-0.0",
    "1",
    "-1",
    "1.5",
    "1e300",
    "9007199254740992",
    "9223372036854775808",
    "18446744073709551616",
    "-9223372036854775808",
];

/// A value as JSON text: a number, a boolean, null, a hostile string, or a
/// small array or object of such.
fn untyped_value(rng: &mut Rng, depth: usize) -> String {
    match rng.below(if depth > 0 { 4 } else { 6 }) {
        0 => rng.pick(UNTYPED_NUMBERS).to_string(),
        1 => rng.pick(&["true", "false", "null"]).to_string(),
        2 | 3 => {
            let mut s = String::new();
            for _ in 0..rng.below(5) {
                s.push_str(rng.pick::<&str>(PIECES));
            }
            serde_json::to_string(&s).unwrap()
        }
        4 => {
            let items: Vec<String> = (0..rng.below(4))
                .map(|_| untyped_value(rng, depth + 1))
                .collect();
            format!("[{}]", items.join(","))
        }
        _ => {
            let items: Vec<String> = (0..rng.below(4))
                .map(|_| {
                    let k = serde_json::to_string(rng.pick(PIECES)).unwrap();
                    format!("{k}:{}", untyped_value(rng, depth + 1))
                })
                .collect();
            format!("{{{}}}", items.join(","))
        }
    }
}

/// Arguments `a`, `b`, `k`, `o`, each missing now and then; `k` often one
/// of `o`'s keys.
fn untyped_arguments(rng: &mut Rng) -> String {
    let mut fields = Vec::new();
    for key in ["a", "b"] {
        if !rng.one_in(6) {
            fields.push(format!("\"{key}\":{}", untyped_value(rng, 0)));
        }
    }
    let keys: Vec<&str> = (0..rng.below(4)).map(|_| *rng.pick(PIECES)).collect();
    if !rng.one_in(6) {
        let entries: Vec<String> = keys
            .iter()
            .map(|k| {
                let k = serde_json::to_string(k).unwrap();
                format!("{k}:{}", untyped_value(rng, 1))
            })
            .collect();
        fields.push(format!("\"o\":{{{}}}", entries.join(",")));
    } else if rng.one_in(2) {
        fields.push(format!("\"o\":{}", untyped_value(rng, 0)));
    }
    if !rng.one_in(6) {
        let k = if !keys.is_empty() && rng.one_in(2) {
            serde_json::to_string(rng.pick(&keys)).unwrap()
        } else {
            untyped_value(rng, 1)
        };
        fields.push(format!("\"k\":{k}"));
    }
    format!("{{{}}}", fields.join(","))
}

/// The shipped catalogs validate their arguments' types, so numbers,
/// booleans and nulls seldom reach their builtins. Here a schema that says
/// nothing of its properties lets anything through to policies that hand
/// each argument to every builtin `native` answers itself (`sprintf`,
/// `split`, `regex.match`, `glob.match`), to `k in object.keys(o)`, to
/// functions in the same package and an imported one, and to comparisons
/// across types.
#[test]
fn native_answers_equal_regorus_on_untyped_arguments() {
    const INPUTS: usize = 3_000;
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let mut yaml = String::from("tools:\n");
    for (name, body) in UNTYPED_POLICIES {
        yaml.push_str(&format!(
            "  - name: {name}\n    inputSchema: {{type: object}}\n    policy: tools.{name}\n"
        ));
        std::fs::write(
            dir.path().join(format!("{name}.rego")),
            format!("package tools.{name}\n\nimport rego.v1\n\n{body}"),
        )
        .unwrap();
    }
    std::fs::write(dir.path().join("tools.yaml"), yaml).unwrap();
    std::fs::write(dir.path().join("lib.rego"), UNTYPED_LIB).unwrap();
    let catalog = load(dir.path()).expect("the catalog builds");
    for (name, _) in UNTYPED_POLICIES {
        assert!(
            catalog.tool(name).unwrap().is_native(),
            "{name} is not native"
        );
    }
    let mut rng = Rng(0x00b7_ec7e_d0dd_ba11);
    let inputs: Vec<Value> = (0..INPUTS)
        .map(|_| serde_json::from_str(&untyped_arguments(&mut rng)).unwrap())
        .collect();
    // Each argument object goes to a third of the tools, to keep a debug
    // run short: every tool still sees 1,000 of them.
    let n = UNTYPED_POLICIES.len();
    let mut total = 0;
    for (t, (name, _)) in UNTYPED_POLICIES.iter().enumerate() {
        let before = compared();
        let mut sent = 0;
        for (i, args) in inputs.iter().enumerate() {
            if !((i + t) % n).is_multiple_of(3) {
                continue;
            }
            sent += 1;
            // Panics in a debug build where native and regorus differ.
            let _ = catalog.resolve(name, args);
        }
        let native = compared() - before;
        eprintln!("{name}: {native} of {sent} arguments answered natively and compared");
        assert!(native > 0, "{name}: nothing was compared");
        total += native;
    }
    eprintln!(
        "{n} tools, {INPUTS} arguments, {total} answered natively and compared, in {:?}",
        started.elapsed()
    );
}
