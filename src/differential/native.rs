//! The differential tests of `policy::native`: native answers against
//! regorus' (and OPA's, when the `opa` binary is there) on pools, the shipped
//! examples and generated inputs. They sit in `catalog` because they use its
//! test oracles (`catalog::opa`, `catalog::differential`), which `policy`
//! must not know; `policy::native` itself has no test that needs them.

use std::path::Path;

use serde_json::{Value as Json, json};

use crate::differential::harness;
use crate::policy::budget::Limits;
use crate::policy::engine::{self as policy, EnginePool, Step, compared};

/// A pool for package `p` holding `rego`, planning `rules`.
fn pool(rego: &str, rules: &[&str]) -> (EnginePool, Vec<Step>) {
    let paths: Vec<String> = rules.iter().map(|r| format!("data.p.{r}")).collect();
    let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    pool_of(
        &[("p.rego", &format!("package p\nimport rego.v1\n{rego}"))],
        &paths,
    )
}

/// Evaluates on the pool; in a debug build (tests) the pool checks the
/// native answer against regorus' and panics when they differ.
fn eval(pool: &EnginePool, steps: &[Step], args: Json) -> Result<Vec<Option<Json>>, String> {
    pool.eval(steps, policy::input("t", &args))
        .map_err(|e| e.message)
}

/// A pool holding `modules` (file name, text), planning `paths`.
fn pool_of(modules: &[(&str, &str)], paths: &[&str]) -> (EnginePool, Vec<Step>) {
    let limits = Limits::default();
    let mut e = policy::new_engine(limits);
    for (name, text) in modules {
        policy::add_policy(&mut e, name, text).unwrap();
    }
    let steps: Vec<Step> = paths
        .iter()
        .map(|p| Step {
            path: p.to_string(),
            by_query: false,
        })
        .collect();
    (EnginePool::new(e, limits).with_native(&steps), steps)
}

/// User-defined functions: several definitions, `else`, undefined
/// arguments, calls from a `some` loop, a body reading `input`; each
/// answer is compared with regorus' (debug builds).
#[test]
fn functions_answer_as_regorus() {
    let rego = r#"
kind(x) := "num" if is_number(x)
kind(x) := "str" if is_string(x)
kind(x) := "big" if { is_number(x); x > 100 }
grade(x) := "a" if x > 10
else := "b" if x > 5
else := "c"
safe(p) if { not startswith(p, "/"); not climbs(p) }
climbs(p) if {
some s in split(p, "/")
s == ".."
}
mode(_) := input.arguments.mode
both(a, b) := [a, b] if a != b
first(l) := v if { some v in l; v == l[0] }
k := kind(input.arguments.v)
g := grade(input.arguments.n)
sa := safe(input.arguments.path)
unsafe if not safe(input.arguments.path)
bad contains p if {
some p in input.arguments.paths
not safe(p)
}
m := mode(input.arguments.path)
bo := both(input.arguments.path, input.arguments.mode)
f := first(input.arguments.paths)
"#;
    let rules = ["k", "g", "sa", "unsafe", "bad", "m", "bo", "f"];
    let (pool, steps) = pool(rego, &rules);
    assert!(pool.is_native(&steps));
    for args in [
        json!({}),
        json!({"v": 5, "n": 11, "path": "a/b", "mode": "r"}),
        json!({"v": "x", "n": 6, "path": "/a", "paths": ["a", "/b", "c/../d"]}),
        json!({"v": 500, "n": 1, "path": "../x", "paths": ["a", "a"], "mode": "../x"}),
        json!({"v": true, "n": "z", "path": 3, "paths": "a"}),
        json!({"v": null, "path": "a/..", "paths": [1, "x/.."], "mode": 2}),
        json!({"n": [1], "paths": {"a": "..", "b": "ok"}}),
    ] {
        // Each call compares with regorus itself (debug builds).
        let _ = eval(&pool, &steps, args);
    }
    let before = compared();
    let out = eval(
        &pool,
        &steps,
        json!({"v": 7, "n": 7, "path": "a/../b", "mode": "w", "paths": ["x", "/y", "z/.."]}),
    )
    .unwrap();
    assert_eq!(compared(), before + 1, "answered natively");
    let want = [
        Some(json!("num")),
        Some(json!("b")),
        None,
        Some(json!(true)),
        Some(json!(["/y", "z/.."])),
        Some(json!("w")),
        Some(json!(["a/../b", "w"])),
        Some(json!("x")),
    ];
    assert_eq!(out, want);
    // An undefined argument: the call is undefined, whatever the body
    // (`mode(_)` does not read it).
    let out = eval(&pool, &steps, json!({"mode": "w"})).unwrap();
    assert_eq!(out[0], None);
    assert_eq!(out[5], None);
    let out = eval(&pool, &steps, json!({"mode": "w", "path": "a"})).unwrap();
    assert_eq!(out[5], Some(json!("w")));
}

/// More shapes of functions: an implicit `true` head with a valued
/// `else`, `false` as a value, calls in comprehensions and in `else`
/// bodies, a body holding twice with one value.
#[test]
fn function_shapes_answer_as_regorus() {
    let rego = r#"
size(x) if count(x) > 2 else := "small"
no(x) := false if x == 1
dup(l) := true if { some v in l; v == "a" }
pick(x) := 1 if x == "one" else := 2 if x == "two" else := x
sizes := [size(x) | some x in input.arguments.l]
nos if not no(input.arguments.n)
d := dup(input.arguments.l)
p := {k: pick(v) | some k, v in input.arguments.o}
"#;
    let rules = ["sizes", "nos", "d", "p"];
    let (pool, steps) = pool(rego, &rules);
    assert!(pool.is_native(&steps));
    for args in [
        json!({}),
        json!({"l": ["abc", "a", "a", [1, 2, 3]], "n": 1, "o": {"x": "one", "y": "two", "z": 3}}),
        json!({"l": "abc", "n": 2, "o": [1, "two"]}),
        json!({"l": [1, {"a": 1, "b": 2, "c": 3}], "n": "1", "o": {"a": null}}),
    ] {
        let _ = eval(&pool, &steps, args);
    }
    let args = json!({"l": ["abc", "a", "a"], "n": 1, "o": {"x": "one", "y": "two", "z": 3}});
    let before = compared();
    let out = eval(&pool, &steps, args).unwrap();
    assert_eq!(compared(), before + 1, "answered natively");
    assert_eq!(
        out,
        [
            Some(json!([true, "small", "small"])),
            Some(json!(true)),
            Some(json!(true)),
            Some(json!({"x": 1, "y": 2, "z": 3})),
        ]
    );
}

/// A function defined in two modules of one package is left to regorus
/// (which runs all of its definitions with one module's loop plans).
#[test]
fn a_function_across_modules_stays_on_regorus() {
    let (pool, steps) = pool_of(
        &[
            ("a.rego", "package p\nimport rego.v1\nf(x) := 1 if x > 1"),
            (
                "b.rego",
                "package p\nimport rego.v1\nf(x) := 1 if x < 0\ny := f(input.arguments.n)",
            ),
        ],
        &["data.p.y"],
    );
    assert!(!pool.is_native(&steps));
}

/// Functions and rules of another package, through `import data.x`
/// and `import data.x.y as z`.
#[test]
fn imported_packages_answer_as_regorus() {
    let lib = r#"package lib.paths
import rego.v1
dir := "/srv"
inside(p) if p == dir
inside(p) if {
startswith(p, concat("", [dir, "/"]))
not climbs(p)
}
climbs(p) if {
some s in split(p, "/")
s == ".."
}
outside(p) := sprintf("%q is outside %s", [p, dir])
"#;
    let team = r#"package team
import rego.v1
oncall if "oncall" in input.caller.claims.groups
tenant := input.caller.claims.tenant
"#;
    let tool = r#"package tools.t
import rego.v1
import data.lib.paths as root
import data.team
deny contains root.outside(input.arguments.path) if not root.inside(input.arguments.path)
deny contains root.outside(p) if {
some p in input.arguments.paths
not root.inside(p)
}
deny contains "not on call" if not team.oncall
who := team.tenant
"#;
    let (pool, steps) = pool_of(
        &[("lib.rego", lib), ("team.rego", team), ("t.rego", tool)],
        &["data.tools.t.deny", "data.tools.t.who"],
    );
    assert!(pool.is_native(&steps));
    for args in [
        json!({}),
        json!({"path": "/srv/a"}),
        json!({"path": "/srv/../etc", "paths": ["/srv", "/srvx", 3]}),
        json!({"path": 7, "paths": "x"}),
    ] {
        let _ = eval(&pool, &steps, args);
    }
    let before = compared();
    let out = eval(
        &pool,
        &steps,
        json!({"path": "/srv/a", "paths": ["/srv/b", "/etc"]}),
    )
    .unwrap();
    assert_eq!(compared(), before + 1, "answered natively");
    assert_eq!(
        out[0],
        Some(json!(["\"/etc\" is outside /srv", "not on call"]))
    );
    assert_eq!(out[1], None);
}

/// Conflicting outputs of a function: native falls back and regorus
/// gives its error, never an answer.
#[test]
fn conflicting_function_outputs_are_regorus_errors() {
    for (rego, args) in [
        // Two definitions, two values.
        (
            "f(x) := 1 if x > 0\nf(x) := 2 if x > 1\ny := f(input.arguments.n)",
            json!({"n": 2}),
        ),
        // One body, two values.
        (
            "f(l) := v if { some v in l }\ny := f(input.arguments.l)",
            json!({"l": [1, 2]}),
        ),
        // The `else` of the second definition disagrees.
        (
            "f(x) := 1 if x > 0\nf(x) := 3 if x < 0 else := 2\ny := f(input.arguments.n)",
            json!({"n": 5}),
        ),
        // A builtin error in a function's body.
        (
            "f(x) := startswith(x, \"/\")\ny := f(input.arguments.n)",
            json!({"n": 5}),
        ),
    ] {
        let (pool, steps) = pool(rego, &["y"]);
        assert!(pool.is_native(&steps), "{rego}");
        assert!(eval(&pool, &steps, args).is_err(), "{rego}");
    }
    // The same definitions agree elsewhere.
    let (pool, steps) = pool(
        "f(x) := 1 if x > 0\nf(x) := 2 if x > 1\ny := f(input.arguments.n)",
        &["y"],
    );
    assert_eq!(
        eval(&pool, &steps, json!({"n": 1})).unwrap(),
        [Some(json!(1))]
    );
}

/// Imports outside the subset keep the plan on regorus.
#[test]
fn imports_outside_the_subset_stay_on_regorus() {
    let lib = "package lib\nimport rego.v1\nf(x) := x\nr := 1\nreverse(a, b) := [b, a]";
    let sub = "package lib.sub\nimport rego.v1\ng(x) := x";
    for (modules, rego) in [
        // A rule, not a package.
        (vec![lib], "import data.lib.r\nx := r"),
        // A package with one under it.
        (vec![lib, sub], "import data.lib\nx := lib.f(1)"),
        // Nothing there.
        (vec![lib], "import data.nope\nx := nope.f(1)"),
        // `input`.
        (vec![lib], "import input.arguments as a\nx := a.n"),
        // The alias is also a rule of the package.
        (vec![lib], "import data.lib\nlib := 2\nx := lib.f(1)"),
        // The whole package.
        (vec![lib], "import data.lib\nx := lib"),
        // A function of the alias that does not exist.
        (vec![lib], "import data.lib\nx := lib.g(1)"),
        // An alias call spelled as a builtin (`strings.reverse`, one
        // parameter), which regorus reads as a call with a result
        // argument.
        (
            vec![lib],
            "import data.lib as strings\nx := strings.reverse(1, 2)",
        ),
    ] {
        let mut all: Vec<(String, String)> = modules
            .iter()
            .enumerate()
            .map(|(i, m)| (format!("m{i}.rego"), m.to_string()))
            .collect();
        all.push((
            "t.rego".into(),
            format!("package t\nimport rego.v1\n{rego}"),
        ));
        let all: Vec<(&str, &str)> = all.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let (pool, steps) = pool_of(&all, &["data.t.x"]);
        assert!(!pool.is_native(&steps), "{rego}");
    }
}

#[test]
fn some_declarations_answer_as_opa() {
    let rego = r#"
s1 contains i if { some i; input.arguments.a[i] == "x" }
s2 := [[i, j] | some i, j; input.arguments.a[i][j] == 1]
s3 contains i if { some i; x := input.arguments.a[i]; is_string(x) }
s4 contains i if { some i; input.arguments.a[i] == input.arguments.b[i] }
s5 if { some i; input.arguments.a[i] }
s6 := {k | some k; {s | some s in input.arguments.a}[k]}
"#;
    let rules = ["s1", "s2", "s3", "s4", "s5", "s6"];
    let inputs = [
        json!({}),
        json!({"a": null}),
        json!({"a": "xyz"}),
        json!({"a": 1}),
        json!({"a": []}),
        json!({"a": {}}),
        json!({"a": ["x", "y", "x"], "b": ["x", "x"]}),
        json!({"a": {"k": "x", "j": false}, "b": {"k": "x"}}),
        json!({"a": [[1, 2], {"x": 1}, "s"], "b": "s"}),
        json!({"a": [true, 1, [1]], "b": [true]}),
    ];
    answers_as_opa(rego, &rules, &inputs, |_, p| p, |_, _| false);
}

/// `some x` declarations outside the simple form stay on regorus.
#[test]
fn some_declarations_outside_the_subset_stay_on_regorus() {
    stays_on_regorus(&[
        "x if { some i; count(input.a[i]) > 1 }",
        "x if { some i; not input.a[i] }",
        "x if { some i; i := 1 }",
        "x := [v | some i; v := [w | w := input.a[i]]]",
        "x if { some i; [input.a[i], base64.encode(input.b)] }",
        "x if { some i; input.a[i] == input.b[_] }",
    ]);
}

/// `walk` outside what native lowers keeps the plan on regorus: negated,
/// a pattern of another length or holding a variable inside a
/// composite, a `walk` of the package, one value.
#[test]
fn walk_outside_the_subset_stays_on_regorus() {
    stays_on_regorus(&[
        "x if not walk(input.a, [[\"k\"], 1])",
        "x := [p | walk(input.a, [p, v, w])]",
        "x := [i | walk(input.a, [[\"k\", i], _])]",
        "walk(a, b) := [a, b]\nx := [p | walk(input.a, [p, _])]",
        "x := walk(input.a)",
    ]);
}

/// The constructs where regorus answers differently from OPA (issue
/// 27): native answers as OPA, checked against OPA's own engine.
#[test]
fn constructs_answer_as_opa() {
    let rego = r#"
f(x) if is_null(x)
n1 if not is_null(input.arguments.a)
n2 if not f(input.arguments.a)
n3 if not startswith(input.arguments.a, "x")
n4 if not count(input.arguments.a) > 2
n5 if not upper(input.arguments.a)
n6 if not is_null(input.arguments.a) == true
n7 if not [input.arguments.a] == [1]
n8 if not {"k": input.arguments.a}
n9 if not startswith(lower(input.arguments.a), "x")
t1 if not input.arguments.a == 1
t2 if not input.arguments.a
t3 if not input.arguments.a.b == 1
t4 if not input.arguments.a in [1]
t5 if not input.arguments.a != 1
s1 := [x | some x in input.arguments.a]
s2 if { some x in input.arguments.a; x == 1 }
i1 := 1 in input.arguments.a
i2 := "a" in input.arguments.a
o1 if { some x in input.arguments.a; {} < x }
o2 := [x | some x in input.arguments.a; x < set()]
t6 if not input.arguments.a == input.arguments.b
t7 if not [x | x := input.arguments.a] == [1]
n10 if not {input.arguments.a} == {1}
n11 if not "k" in object.keys(input.arguments.a)
i3 := "b" in object.keys(input.arguments.a)
"#;
    let rules = [
        "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "t1", "t2", "t3", "t4", "t5", "s1",
        "s2", "i1", "i2", "o1", "o2", "t6", "t7", "n10", "n11", "i3",
    ];
    let inputs = [
        json!({}),
        json!({"a": null}),
        json!({"a": "xyz"}),
        json!({"a": 7}),
        json!({"a": [1, "x", null]}),
        json!({"a": {"b": 1}}),
    ];
    answers_as_opa(rego, &rules, &inputs, |_, p| p, |_, _| false);
}

/// `walk` with each pattern native lowers (a fresh pair, a value, a path
/// or value given, a whole pair, the same variable twice, inside `every`
/// and comprehensions) over scalars, arrays, objects and sets: native
/// answers as OPA.
#[test]
fn walk_answers_as_opa() {
    let rego = r#"
w1 := [p | walk(input.arguments.a, [p, _])]
w2 := [[p, v] | walk(input.arguments.a, [p, v])]
w3 := [x | walk(input.arguments.a, x)]
w4 := [v | walk(input.arguments.a, [["k"], v])]
w5 := [p | walk(input.arguments.a, [p, 1])]
w6 := [p | walk({s | some s in input.arguments.a}, [p, _])]
w7 contains p if { walk(input.arguments.a, [p, v]); is_string(v) }
w8 := [p | t := input.arguments.b; walk(input.arguments.a, [p, t])]
w9 := count([p | walk(input.arguments.a, [p, _])])
w10 if { every x in input.arguments.a { walk(x, [_, v]); v == 1 } }
w11 := [p | walk(input.arguments.a, [p, p])]
w12 := {p | walk(input.arguments.a, [p, v]); v == 1.0}
w13 := [y | y := [[], input.arguments.a]; walk(input.arguments.a, y)]
"#;
    let rules = [
        "w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8", "w9", "w10", "w11", "w12", "w13",
    ];
    let inputs = [
        json!({}),
        json!({"a": null}),
        json!({"a": "xyz"}),
        json!({"a": 1}),
        json!({"a": []}),
        json!({"a": {}}),
        json!({"a": {"k": [1, {"z": 2}], "b": 3}, "b": 3}),
        json!({"a": {"k": 1, "j": [1, "x"]}, "b": [1, "x"]}),
        json!({"a": [[1, 2], {"x": [1]}, "s"], "b": "s"}),
        json!({"a": [[1], {"k": 1}, "x", 1, null], "b": {"k": 1}}),
        json!({"a": [{"b": {"c": [true, 1.5]}}], "b": 1.5}),
    ];
    answers_as_opa(rego, &rules, &inputs, |_, p| p, |_, _| false);
}

/// `every` on the domains OPA distinguishes (undefined, scalars, empty and
/// full arrays, objects, sets), key and value forms, bodies that fail, are
/// undefined or raise an error, nested, negated through a rule, in a
/// comprehension and a function, reading outer locals and binding their
/// own: native answers as OPA (and, debug builds, as regorus wherever
/// regorus agrees).
#[test]
fn every_answers_as_opa() {
    let rego = r#"
e1 if { every x in input.arguments.a { is_string(x) } }
e2 if { every k, v in input.arguments.a { k != v } }
e3 if { every x in input.arguments.a { count(x) > 0 } }
e4 if { every x in input.arguments.a { every y in x { y == 1 } } }
e5 if not e1
e6 := [y | some y in input.arguments.b; every z in input.arguments.a { z != y }]
f(xs) if { every x in xs { x == 1 } }
e7 := f(input.arguments.a)
e8 if { t := "x"; every x in input.arguments.a { x == t } }
e9 := y if { y := 5; every x in input.arguments.a { z := x; z } }
e10 if { every x in input.arguments.a { some y in x; count(y) > 0 } }
e11 if { every x in {s | some s in input.arguments.a} { is_string(x) } }
e12 if { every x in input.arguments.a { not input.arguments.b[x] } }
e13 if { every x in input.arguments.a { x.k } }
e14 if { every _, v in input.arguments.a { v } }
e15 if { every i, x in input.arguments.a { i < 2; x } }
"#;
    let rules = [
        "e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9", "e10", "e11", "e12", "e13", "e14",
        "e15",
    ];
    let inputs = [
        json!({}),
        json!({"a": null}),
        json!({"a": "xyz"}),
        json!({"a": 7}),
        json!({"a": true}),
        json!({"a": []}),
        json!({"a": {}}),
        json!({"a": ["x"], "b": ["x", "y"]}),
        json!({"a": ["x", 1], "b": {"x": false}}),
        json!({"a": [[1], [1, 1]]}),
        json!({"a": [[1], [2]], "b": "s"}),
        json!({"a": [[], "s"]}),
        json!({"a": [["s", 1]]}),
        json!({"a": [[1, "s"]]}),
        json!({"a": ["", 1]}),
        json!({"a": [1, ""]}),
        json!({"a": [true, true]}),
        json!({"a": [true, true, true]}),
        json!({"a": [{"k": 1}, {"k": true}]}),
        json!({"a": {"k": "", "j": 1}}),
        json!({"a": {"x": "x"}}),
        json!({"a": {"x": "y", "y": true}}),
        json!({"a": [1], "b": [1, 2, 3]}),
    ];
    // `e12` is flagged (`opa-every-not-index`), as a catalog's build flags
    // it: where native hands a request to regorus (`"s"[x]`), regorus'
    // answer is refused.
    answers_as_opa(
        rego,
        &rules,
        &inputs,
        |r, p| p.with_flagged((r == "e12").then(|| "p.rego:14:1: not b[x]".to_string())),
        |r, e| e.starts_with("regent cannot evaluate this input as OPA does") && r == "e12",
    );
}

/// OPA's rule index looks at a body's references into `input` (those of
/// its head too, and those inside calls' arguments) before it runs the
/// body, so an undefined one makes the rule undefined before a call of it
/// can fail (`policy/lower/index`): native answers as OPA, on the shapes
/// probed there (and, debug builds, as regorus wherever regorus agrees).
#[test]
fn rule_index_answers_as_opa() {
    let rego = r#"
h1 := {"e": base64.encode(input.arguments.a), "d": base64.decode(input.arguments.b)}
h2 := [input.arguments.b, base64.encode(input.arguments.a)]
h3 := [upper(base64.encode(input.arguments.a)), input.arguments.b]
h4 := concat(",", [base64.encode(input.arguments.a), input.arguments.b])
h5 := [base64.encode(input.arguments.a), 1]
h6 := [base64.encode(input.arguments.a), und]
und := input.arguments.b
b1 if { x := base64.encode(input.arguments.a); y := input.arguments.b }
b2 if { base64.encode(input.arguments.a); input.arguments.b }
b3 if { base64.encode(input.arguments.a); input.arguments.c == 2 }
b4 if { base64.encode(input.arguments.a); input.arguments.c == 2; x := input.arguments.c }
b5 if { base64.encode(input.arguments.a); input.arguments.b == input.arguments.c }
b6 if { base64.encode(input.arguments.a); not startswith(input.arguments.b, "x") }
b7 if { base64.encode(input.arguments.a); not input.arguments.b }
b8 if { base64.encode(input.arguments.a); some x in input.arguments.b }
b9 if { base64.encode(input.arguments.a); every x in input.arguments.b { x } }
b10 if { base64.encode(input.arguments.a); input.arguments.c == upper("x") }
b11 if { base64.encode(input.arguments.a); input.arguments.b in ["z", input.arguments.c] }
b12 if { base64.encode(input.arguments.a); y := input.arguments.c == 2 }
b13 if { base64.encode(input.arguments.a); count([x | x := input.arguments.b]) > 0 }
e1 := base64.encode(input.arguments.a) if { input.arguments.c == 2 } else := [base64.encode(input.arguments.a), input.arguments.b]
e2 := 1 if { input.arguments.b } else := [base64.encode(input.arguments.a), input.arguments.b] if { true } else := 3
c1 contains [base64.encode(input.arguments.a), input.arguments.b]
k1 := [base64.encode(input.arguments.a), [y | y := input.arguments.b]]
f(x) := [base64.encode(input.arguments.a), x]
m1 := f(input.arguments.b)
g(x) := base64.encode(input.arguments.a) if x == 2
m2 := g(input.arguments.c)
m3 := [base64.encode(input.arguments.a), input.arguments.c == 2]
"#;
    let rules = [
        "h1", "h2", "h3", "h4", "h5", "h6", "b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9",
        "b10", "b11", "b12", "b13", "e1", "e2", "c1", "k1", "m1", "m2", "m3",
    ];
    let inputs = [
        json!({}),
        json!({"a": 2.5}),
        json!({"a": 2.5, "c": 1}),
        json!({"a": 2.5, "c": 2}),
        json!({"a": 2.5, "c": "X"}),
        json!({"a": 2.5, "b": "y", "c": 1}),
        json!({"a": 2.5, "b": false, "c": 2}),
        json!({"a": 2.5, "b": [1], "c": 1}),
        json!({"a": "x", "c": 1}),
        json!({"a": "x", "b": "aGk=", "c": 2}),
        json!({"a": "x", "b": "y", "c": "X"}),
    ];
    answers_as_opa(rego, &rules, &inputs, |_, p| p, |_, _| false);
}

/// `every`'s body holds at its first way for a member: OPA looks no
/// further, where regorus goes on to an error (`count(1)`).
#[test]
fn every_stops_where_its_body_first_holds() {
    let rego = "x if { every v in input.arguments.l { some y in v; count(y) > 0 } }";
    let (pool, steps) = pool(rego, &["x"]);
    assert!(pool.is_native(&steps));
    assert_eq!(
        eval(&pool, &steps, json!({"l": [["s", 1]]})).unwrap(),
        [Some(json!(true))]
    );
    // The error comes first in OPA too: regorus' error.
    let err = eval(&pool, &steps, json!({"l": [[1, "s"]]})).unwrap_err();
    assert!(err.contains("count"), "{err}");
    // Over a scalar or nothing, `every` fails in OPA and regorus alike.
    for l in [json!("s"), json!(3), json!(null)] {
        assert_eq!(eval(&pool, &steps, json!({"l": l})).unwrap(), [None]);
    }
    assert_eq!(eval(&pool, &steps, json!({})).unwrap(), [None]);
}

/// A tool whose rules hold a construct regorus answers differently
/// from OPA: where native hands the request to regorus, regorus' answer
/// is refused (fail closed); its error still comes back.
#[test]
fn a_flagged_plan_never_returns_regorus_answer() {
    let rego = "x := v if { some v in input.arguments.l; v == 1 }\ny := startswith(input.arguments.p, \"/\")";
    let (pool, steps) = pool(rego, &["x", "y"]);
    assert!(pool.is_native(&steps));
    // Unflagged: the body holding twice falls back, regorus answers.
    let args = json!({"l": [1, 1], "p": "/a"});
    assert_eq!(
        eval(&pool, &steps, args.clone()).unwrap(),
        [Some(json!(1)), Some(json!(true))]
    );
    let pool = pool.with_flagged(Some("p.rego:2:1: something".into()));
    let err = eval(&pool, &steps, args).unwrap_err();
    assert!(
        err.starts_with("regent cannot evaluate this input as OPA does: p.rego:2:1"),
        "{err}"
    );
    // regorus' own error is still its error.
    let err = eval(&pool, &steps, json!({"l": [1, 1], "p": 3})).unwrap_err();
    assert!(err.contains("startswith"), "{err}");
    // What native decides is answered.
    assert_eq!(
        eval(&pool, &steps, json!({"l": [1], "p": "a"})).unwrap(),
        [Some(json!(1)), Some(json!(false))]
    );
}

#[test]
fn the_shipped_examples_run_natively() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    for (example, tool) in [
        ("manage_files", "manage_files"),
        ("github_api", "github_api"),
        ("filesystem", "read_multiple_files"),
        ("filesystem", "move_file"),
        ("git_server", "git_add"),
        ("team_ops", "deploy"),
    ] {
        let catalog = harness::load(&root.join(example)).expect("the example builds");
        let Some(t) = catalog.tool(tool) else {
            let names: Vec<_> = catalog.tools().iter().map(|t| t.name.clone()).collect();
            panic!("no tool {tool} in {example}: {names:?}");
        };
        assert!(t.is_native(), "{example}/{tool} does not run natively");
    }
}

#[test]
fn answers_equal_regorus_on_the_subset() {
    let rego = r#"
path := input.arguments.path
default level := "low"
level := "high" if startswith(path, "/")
else := "mid" if contains(path, "..")
deny contains sprintf("bad segment %q", [s]) if {
some s in split(path, "/")
s in {"..", "~"}
}
deny contains "no action" if not input.arguments.action
confirm := sprintf("%s %s?", [input.arguments.action, path]) if input.arguments.action != "read"
keys := object.keys(input.arguments)
n := count(keys)
flags contains k if {
some k, v in input.arguments
v == true
}
args := input.arguments
deep := args.nested.k if input.arguments.nested.k != input["arguments"].path
same if input.arguments.nested == args["nested"]
"#;
    let rules = ["level", "deny", "confirm", "n", "flags", "deep", "same"];
    let (pool, steps) = pool(rego, &rules);
    assert!(pool.is_native(&steps));
    for args in [
        json!({"path": "a/b", "action": "read"}),
        json!({"path": "/etc/../x", "action": "delete", "force": true}),
        json!({"path": "~/x"}),
        json!({"path": "a", "action": "read", "x": true, "y": false}),
        json!({}),
        json!({"path": 7, "action": "read"}),
        json!({"path": "a", "nested": {"k": "b"}}),
        json!({"path": "a", "nested": {"k": "a"}}),
        json!({"path": "a", "nested": "k"}),
        json!({"path": "a", "nested": [1]}),
    ] {
        // Each call compares with regorus itself (debug builds).
        let _ = eval(&pool, &steps, args);
    }
    let out = eval(&pool, &steps, json!({"path": "../~", "action": "delete"})).unwrap();
    assert_eq!(out[0], Some(json!("mid")));
    assert_eq!(
        out[1],
        Some(json!(["bad segment \"..\"", "bad segment \"~\""]))
    );
    assert_eq!(out[2], Some(json!("delete ../~?")));
}

/// A rule that is one constant is inlined where it is read, so a
/// pattern, format or prefix held in a rule takes the same paths as a
/// literal one; conditional and defaulted rules stay rules.
#[test]
fn constant_rules_answer_as_regorus() {
    let rego = r#"
pattern := `^[a-z/]+$`
format := "%s at %q"
root := "/srv"
maybe := "m" if input.arguments.flag
default fallback := "d"
fallback := "f" if input.arguments.flag
ok if regex.match(pattern, input.arguments.path)
msg := sprintf(format, [maybe, input.arguments.path])
under if startswith(input.arguments.path, concat("", [root, "/"]))
pair := [maybe, fallback]
"#;
    let rules = ["ok", "msg", "under", "pair"];
    let (pool, steps) = pool(rego, &rules);
    assert!(pool.is_native(&steps));
    let cases = [
        (
            json!({"path": "/srv/a", "flag": true}),
            json!([true, "m at \"/srv/a\"", true, ["m", "f"]]),
        ),
        (json!({"path": "/etc/A"}), json!([null, null, null, null])),
    ];
    for (args, want) in cases {
        let got = eval(&pool, &steps, args.clone())
            .map(|v| Json::Array(v.into_iter().map(|x| x.unwrap_or(Json::Null)).collect()));
        assert_eq!(got, Ok(want), "{args}");
    }
    // A number where the pattern wants a string: regorus' error.
    let err = eval(&pool, &steps, json!({"path": 3})).unwrap_err();
    assert!(err.contains("regex.match"), "{err}");
}

/// `k in object.keys(x)` is answered without the set of keys; on an
/// undefined `x`, a missing or undefined key and a non-object it must
/// still be regorus' answer (the pool compares in debug builds).
#[test]
fn key_membership_equals_regorus() {
    let rego = r#"
has if "content" in object.keys(input.arguments)
lacks if not "content" in object.keys(input.arguments)
named := true if input.arguments.path in object.keys(input.arguments.nested) else := false
missing if not input.arguments.nope in object.keys(input.arguments)
"#;
    let rules = ["has", "lacks", "named", "missing"];
    let (pool, steps) = pool(rego, &rules);
    assert!(pool.is_native(&steps));
    let cases = [
        // `not nope in …` with `nope` undefined fails the body, as in
        // OPA (regorus would make it hold).
        (json!({"content": 1}), Ok(json!([true, null, false, null]))),
        (json!({"path": "a"}), Ok(json!([null, true, false, null]))),
        (
            json!({"path": "a", "nested": {"a": 1}}),
            Ok(json!([null, true, true, null])),
        ),
        (
            json!({"path": "b", "nested": {"a": 1}}),
            Ok(json!([null, true, false, null])),
        ),
        (json!({"path": "a", "nested": "a"}), Err(())),
        (json!({"path": "a", "nested": ["a"]}), Err(())),
    ];
    for (args, want) in cases {
        let got = eval(&pool, &steps, args.clone())
            .map(|v| Json::Array(v.into_iter().map(|x| x.unwrap_or(Json::Null)).collect()))
            .map_err(|_| ());
        assert_eq!(got, want, "{args}");
    }
}

#[test]
fn comprehensions_and_data_documents() {
    let rego = r#"
names := {lower(n) | some n in data.lists.names}
picked := [x | some x in input.arguments.l; x in names]
by_len := {n: count(n) | some n in names}
known if lower(input.arguments.who) in names
"#;
    let limits = Limits::default();
    let mut e = policy::new_engine(limits);
    e.add_data(
        regorus::Value::from_json_str(r#"{"lists": {"names": ["Ann", "bob", "ANN"]}}"#).unwrap(),
    )
    .unwrap();
    policy::add_policy(
        &mut e,
        "p.rego",
        &format!("package p\nimport rego.v1\n{rego}"),
    )
    .unwrap();
    let steps: Vec<Step> = ["names", "picked", "by_len", "known"]
        .iter()
        .map(|r| Step {
            path: format!("data.p.{r}"),
            by_query: false,
        })
        .collect();
    let pool = EnginePool::new(e, limits).with_native(&steps);
    assert!(pool.is_native(&steps));
    for args in [
        json!({"l": ["ann", "x", "bob"], "who": "BOB"}),
        json!({"l": "not a list", "who": 3}),
        json!({}),
    ] {
        let _ = eval(&pool, &steps, args);
    }
    let out = eval(
        &pool,
        &steps,
        json!({"l": ["bob", "ann", "zed"], "who": "Ann"}),
    )
    .unwrap();
    assert_eq!(out[0], Some(json!(["ann", "bob"])));
    assert_eq!(out[1], Some(json!(["bob", "ann"])));
    assert_eq!(out[2], Some(json!({"ann": 3, "bob": 3})));
    assert_eq!(out[3], Some(json!(true)));
}

#[test]
fn what_native_cannot_decide_regorus_does() {
    // A builtin error (strict), a conflict, and a complete rule holding
    // twice: native falls back and regorus gives its error.
    for (rego, args) in [
        (
            r#"x := startswith(input.arguments.p, "/")"#,
            json!({"p": 1}),
        ),
        // The first argument is undefined, the second fails (values
        // that are not an array): an error. Through a rule: OPA's rule
        // index would skip the body for an undefined `input` reference
        // written there (`rule_index_answers_as_opa`).
        (
            "m := input.arguments.missing\nx := startswith(m, sprintf(\"%s %s\", \"x\"))",
            json!({}),
        ),
        (
            "x := 1 if input.arguments.a\nx := 2 if input.arguments.b",
            json!({"a": true, "b": true}),
        ),
        (
            "x := v if { some v in input.arguments.l }",
            json!({"l": [1, 2]}),
        ),
    ] {
        let (pool, steps) = pool(rego, &["x"]);
        assert!(pool.is_native(&steps), "{rego}");
        assert!(eval(&pool, &steps, args).is_err(), "{rego}");
    }
}

#[test]
fn arithmetic_is_opas_or_refused() {
    // OPA's answers, from its own engine (v1.20.2).
    for (rego, args, want) in [
        (
            "x := input.arguments.n + 0.2",
            json!({"n": 0.1}),
            json!(0.3),
        ),
        (
            "x := input.arguments.n + 0.2 == 0.3",
            json!({"n": 0.1}),
            json!(true),
        ),
        (
            "x := input.arguments.n * 3 > 0.3",
            json!({"n": 0.1}),
            json!(false),
        ),
        ("x := input.arguments.n / 4", json!({"n": 10}), json!(2.5)),
        ("x := input.arguments.n / 7.0", json!({"n": 7}), json!(1)),
        (
            "x := json.marshal(input.arguments.n - 0.1)",
            json!({"n": 0.4}),
            json!("0.3"),
        ),
        (
            "x := {1, 2} - {k | some k in input.arguments.l}",
            json!({"l": [2]}),
            json!([1]),
        ),
    ] {
        let (pool, steps) = pool(rego, &["x"]);
        assert!(pool.is_native(&steps), "{rego}");
        assert_eq!(
            eval(&pool, &steps, args).unwrap(),
            vec![Some(want)],
            "{rego}"
        );
    }
    for (rego, args, why) in [
        (
            "x := input.arguments.n / 3",
            json!({"n": 1}),
            "`input.arguments.n / 3`: OPA computes this to 64 bits as 0.33333333333333333334",
        ),
        (
            "x := input.arguments.n * 1",
            json!({"n": 1234567.5}),
            "as 1.2345675e+06",
        ),
        ("x := input.arguments.n / -5", json!({"n": 0}), "as -0,"),
        (
            "x := input.arguments.n / 0",
            json!({"n": 5}),
            "divide by zero",
        ),
    ] {
        let (pool, steps) = pool(rego, &["x"]);
        let err = eval(&pool, &steps, args).unwrap_err();
        assert!(err.contains(why), "{rego}: {err}");
    }
}

#[test]
fn rules_outside_the_subset_stay_on_regorus() {
    stays_on_regorus(&[
        // Functions: a pattern, a constant or a repeated name as a
        // parameter, a default, recursion, a legacy `=` head, an
        // `else` without a value after a head with one, no parameter.
        "f([a]) := a\nx := f(input.arguments.l)",
        "f(1) := 2\nx := f(input.arguments.n)",
        "f(a, a) := a\nx := f(input.arguments.n, 1)",
        "default f(_) := 0\nf(a) := a if a > 1\nx := f(input.arguments.n)",
        "f(a) := f(a)\nx := f(input.arguments.n)",
        "f(a) := g(a)\ng(a) := f(a)\nx := f(input.arguments.n)",
        "f(a) = a\nx := f(input.arguments.n)",
        "f(a) := 1 if a == 1 else if a\nx := f(input.arguments.n)",
        // A local named as a rule of the package: regorus fails ("var
        // used before definition").
        "f(p) if { some s in p; s }\ns := 1\nx := f(input.arguments.l)",
        // A call with the result as an extra argument.
        "f(a) := a\nx if f(input.arguments.n, 1)",
        "x := data.p.y",
        "x := time.now_ns()",
        // `every` whose key, value or body binds a name the enclosing
        // body holds: OPA declares a new local, refused here.
        "x if { v := 1; every v in input.arguments.l { v } }",
        "x if { y := 1; every v in input.arguments.l { y := v; y } }",
        "x := 1 if { input.arguments.a = 1 }",
    ]);
}

/// Each rule of `rules` in `rego` (`package p`; one pool each, native,
/// as `mark` leaves it) on each of `inputs` (the arguments) answers as
/// OPA: its value, undefined, or an error where OPA errs; an error OPA
/// does not raise only where `refused(rule, error)`. Skipped, with a note,
/// where OPA's engine is not installed.
fn answers_as_opa(
    rego: &str,
    rules: &[&str],
    inputs: &[serde_json::Value],
    mark: impl Fn(&str, crate::policy::engine::EnginePool) -> crate::policy::engine::EnginePool,
    refused: impl Fn(&str, &str) -> bool,
) {
    use crate::differential::opa::{self, Answer, Oracle};
    let Some(mut oracle) = Oracle::start() else {
        eprintln!("{}", opa::SKIPPED);
        return;
    };
    // One plan per rule: an error in one fails only its own.
    let pools: Vec<_> = rules
        .iter()
        .map(|r| {
            let (p, steps) = pool(rego, &[*r]);
            (mark(r, p), steps)
        })
        .collect();
    oracle.load_engine(&pools[0].0.engine().unwrap()).unwrap();
    for args in inputs {
        let input = json!({"arguments": args});
        for (r, (pool, steps)) in rules.iter().zip(&pools) {
            assert!(pool.is_native(steps), "{r}");
            let want = oracle.eval(&[&format!("data.p.{r}")], &input).remove(0);
            let got = eval(pool, steps, args.clone());
            match (&want, &got) {
                (Answer::Value(v), Ok(g)) => {
                    assert_eq!(g[0].as_ref(), Some(v), "{r} on {args}")
                }
                (Answer::Undefined, Ok(g)) => assert_eq!(g[0], None, "{r} on {args}"),
                (Answer::Error(_), Err(_)) => {}
                (_, Err(e)) if refused(r, e) => {}
                _ => panic!("{r} on {args}: OPA {want:?}, regent {got:?}"),
            }
        }
    }
}

/// Each of `rules`, a module's rules whose rule `x` is planned, keeps the
/// plan on regorus: native lowers none of it.
fn stays_on_regorus(rules: &[&str]) {
    for rego in rules {
        let (pool, steps) = pool(rego, &["x"]);
        assert!(!pool.is_native(&steps), "{rego}");
    }
}
