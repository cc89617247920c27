//! `native` against regorus on policies written here rather than shipped:
//! the shipped catalogs validate their arguments' types, so numbers,
//! booleans and nulls seldom reach their builtins; these policies take
//! untyped arguments and hand each to every builtin and form `native`
//! answers itself. The generator and the shipped catalogs' run are the
//! parent's.

use std::time::Instant;

use serde_json::Value;

use super::generate::PIECES;
use super::{Rng, load};
use crate::policy::engine::compared;

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
