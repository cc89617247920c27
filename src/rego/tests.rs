//! Tests of the analyses under `rego`, on small policies.

use super::*;

fn load(text: &str) -> Vec<PolicyModule> {
    let mut e = regorus::Engine::new();
    e.add_policy("p.rego".into(), text.into()).unwrap();
    modules(&mut e)
}

#[test]
fn finds_constant_argument_reads() {
    let m = load(
        "package t\nimport rego.v1\na := 1 if { input.arguments.action == \"x\" }\nb := 2 if { input.arguments[\"force\"] }\nc := object.get(input.arguments, \"mode\", \"r\")\nd := input.tool\n",
    );
    let ArgumentReads::Known(names) = argument_reads(&m) else {
        panic!()
    };
    let found: Vec<(&str, usize)> = names.iter().map(|(k, l)| (k.as_str(), l.line)).collect();
    assert_eq!(found, vec![("action", 3), ("force", 4), ("mode", 5)]);
}

#[test]
fn finds_literals_compared_with_arguments() {
    let m = load(
        r#"package tools.t
import rego.v1
a if input.arguments.method == "DELETE"
b if startswith(input.arguments.path, "/etc/")
c if input.arguments.mode in {"x", "y"}
d if "z" != input.arguments.mode
"#,
    );
    let lits = argument_literals(&m);
    assert_eq!(lits["method"], ["DELETE"]);
    assert_eq!(lits["path"], ["/etc/"]);
    assert_eq!(lits["mode"], ["x", "y", "z"]);
}

#[test]
fn hint_reads_leave_out_deny_and_confirm() {
    let text = r#"package tools.t
import rego.v1
annotations := {"destructiveHint": true} if input.arguments.mode == "purge"
deny contains "no" if startswith(input.arguments.path, "/etc/")
confirm := "sure?" if input.arguments.note != ""
"#;
    let m = load(text);
    let ArgumentReads::Known(names) = hint_argument_reads(&m, "tools.t") else {
        panic!("reads should be known")
    };
    assert_eq!(names.keys().collect::<Vec<_>>(), ["mode"]);
    // A hint that depends on deny makes every read count.
    let m = load(&format!("{text}\nstrict if count(deny) > 0\n"));
    let ArgumentReads::Known(names) = hint_argument_reads(&m, "tools.t") else {
        panic!("reads should be known")
    };
    assert_eq!(names.len(), 3);
}

#[test]
fn gives_up_on_computed_reads() {
    let m = load("package t\nimport rego.v1\na contains k if { some k, _ in input.arguments }\n");
    assert!(matches!(argument_reads(&m), ArgumentReads::Any { .. }));
    let m = load("package t\nimport rego.v1\na := x if { x := input }\n");
    assert!(matches!(argument_reads(&m), ArgumentReads::Any { .. }));
}

#[test]
fn finds_unknown_functions_arity_and_cycles() {
    let m = load(
        "package t\nimport rego.v1\nf(x) := x\na := 1 if { nope(1) }\nb := f(1, 2)\nc := count([1], n)\nd := e\ne := d\n",
    );
    let codes: Vec<(&str, usize)> = lint(&m).iter().map(|d| (d.code, d.location.line)).collect();
    assert_eq!(codes, vec![("rego-unknown-function", 4), ("rego-arity", 5)]);
    let found: Vec<(String, usize)> = recursion(&m)
        .iter()
        .map(|r| (r.diagnostic.message.clone(), r.diagnostic.location.line))
        .collect();
    assert_eq!(
        found,
        vec![(
            "rule data.t.d is recursive: data.t.d -> data.t.e -> data.t.d".to_string(),
            7
        )]
    );
}

fn load_all(files: &[(&str, &str)]) -> Vec<PolicyModule> {
    let mut e = regorus::Engine::new();
    for (path, text) in files {
        e.add_policy(path.to_string(), text.to_string()).unwrap();
    }
    modules(&mut e)
}

fn cycles_of(files: &[(&str, &str)]) -> Vec<Vec<String>> {
    recursion(&load_all(files))
        .into_iter()
        .map(|r| r.cycle)
        .collect()
}

#[test]
fn finds_conditional_and_cross_package_recursion() {
    let conditional =
        "package t\nimport rego.v1\nf(x) := f(x - 1) if x > 0\nf(0) := 0\ng := f(3)\n";
    assert_eq!(cycles_of(&[("a.rego", conditional)]), vec![vec!["t.f"]]);
    // Through an import one way and a data. path the other.
    let a = "package a\nimport rego.v1\nimport data.b\nx if b.y\n";
    let b = "package b\nimport rego.v1\ny if data.a.x\n";
    assert_eq!(
        cycles_of(&[("a.rego", a), ("b.rego", b)]),
        vec![vec!["a.x", "b.y"]]
    );
    // A whole package read depends on every rule in it.
    let whole = "package c\nimport rego.v1\nall := data.c\n";
    assert_eq!(cycles_of(&[("c.rego", whole)]), vec![vec!["c.all"]]);
}

#[test]
fn locals_and_acyclic_chains_are_not_recursion() {
    let text = "package t\nimport rego.v1\na := 1\nb := a + 1\nc(a) := a\nd := x if { x := c(b) }\ne := [a | some a in [1]]\n";
    assert!(cycles_of(&[("a.rego", text)]).is_empty());
    // Rules that define parts of one document may read each other.
    let parts = "package t\nimport rego.v1\nannotations.readOnlyHint := true if input.x\nannotations.destructiveHint := false if annotations.readOnlyHint\nmeta := {\"a\": annotations}\n";
    assert!(cycles_of(&[("a.rego", parts)]).is_empty());
    let parts = format!("{parts}annotations.idempotentHint := true if meta.a\n");
    assert_eq!(
        cycles_of(&[("a.rego", &parts)]),
        vec![vec!["t.meta", "t.annotations.idempotentHint"]]
    );
}

#[test]
fn a_dense_cycle_is_reported_once_and_quickly() {
    // 60 rules that all refer to each other: one report, not every
    // elementary cycle.
    let mut text = String::from("package t\nimport rego.v1\n");
    for i in 0..60 {
        let body: Vec<String> = (0..60).map(|j| format!("r{j}")).collect();
        text.push_str(&format!("r{i} if {{ {} }}\n", body.join("; ")));
    }
    let found = cycles_of(&[("a.rego", &text)]);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0], vec!["t.r0"]);
}

#[test]
fn warns_when_the_client_chooses_a_size() {
    let m = load(
        "package t\nimport rego.v1\n\
         a if count(numbers.range(1, input.arguments.n)) > 1\n\
         b if { k := input.arguments.k; m := k * 2; count(numbers.range_step(0, m, 1)) > 1 }\n\
         c if { count(numbers.range(1, 10)) > 1 }\n\
         d := sprintf(\"%s\", [input.arguments.s])\n\
         e := sprintf(input.arguments.f, [1])\n\
         f := [concat(\",\", [x, x]) | some x in input.arguments.xs]\n\
         g := concat(\",\", input.arguments.xs)\n\
         h := replace(\"abc\", \"b\", input.arguments.r)\n",
    );
    let lines: Vec<usize> = lint(&m)
        .iter()
        .filter(|d| d.code == "input-sized-allocation")
        .map(|d| d.location.line)
        .collect();
    assert_eq!(lines, vec![3, 4, 7, 8, 10]);
}

#[test]
fn rule_defs_have_paths_and_lines() {
    let m = load(
        "package t\nimport rego.v1\ndefault annotations := {}\nannotations.destructiveHint := true if {\n  input.arguments.x\n}\n",
    );
    let defs = rule_defs(&m);
    assert_eq!(defs[1].path, ["annotations", "destructiveHint"]);
    assert_eq!(defs[1].location.line, 4);
    assert_eq!(
        &m[0].text[defs[1].name_start..defs[1].name_end],
        "annotations"
    );
    assert!(
        m[0].text[defs[1].start..defs[1].end]
            .trim_end()
            .ends_with('}')
    );
}

#[test]
fn flags_identity_rules_and_titles() {
    let m = load(
        "package t\nimport rego.v1\ndescription := \"x\"\nannotations := {\"title\": \"y\"}\n",
    );
    let lines: Vec<usize> = identity_rules(&m, &std::collections::BTreeSet::from(["t"]))
        .iter()
        .map(|d| d.location.line)
        .collect();
    assert_eq!(lines, vec![3, 4]);
}

/// `rego/portability`: what it flags (the first column) and what it leaves
/// alone, with the arguments' schema requiring `path` (a string) and `l`
/// (an array).
#[test]
fn portability_flags_what_can_diverge() {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"path": {"type": "string"}, "l": {"type": "array"}, "o": {}},
        "required": ["path", "l"],
    });
    let data = serde_json::json!({"names": ["a"], "n": 3});
    for (flagged, body) in [
        (true, "not is_null(input.arguments.o)"),
        (true, "not startswith(lower(input.arguments.o), \"x\")"),
        (true, "not [input.arguments.o] == [1]"),
        (true, "not f(input.arguments.o)"),
        (false, "not f(input.arguments.path)"),
        (true, "not f(input.arguments.path) == true"),
        (true, "not input.arguments.x[input.arguments.o] == 1"),
        (true, "some x in input.arguments.o"),
        (true, "some x in data.n"),
        (true, "some x in input.caller.claims.groups"),
        (true, "s < o"),
        (false, "not input.arguments.o == 1"),
        (false, "not input.arguments.o"),
        (false, "not input.arguments.o.b == 1"),
        (false, "not startswith(input.arguments.path, \"/\")"),
        (false, "not \"k\" in object.keys(input.arguments)"),
        (false, "o := input.arguments.o; not is_null(o)"),
        (
            false,
            "input.arguments.o != null; not is_null(input.arguments.o)",
        ),
        (false, "some x in input.arguments.l"),
        (false, "some x in data.names"),
        (false, "some x in split(input.arguments.path, \"/\")"),
        (
            false,
            "some x in numbers.range(1, count(input.arguments.l))",
        ),
        (
            false,
            "is_array(input.arguments.o); some x in input.arguments.o",
        ),
        (false, "count(input.arguments.l) > 2"),
        (false, "input.arguments.o < 3"),
        (false, "\"a\" in input.arguments.o"),
    ] {
        let text = format!(
            "package tools.t\nimport rego.v1\nf(x) if is_null(x)\ns := {{1}}\no := {{\"a\": 1}}\nr if {{ {body} }}\n"
        );
        let m = load(&text);
        let facts = portability::Facts {
            schemas: vec![vec![&schema]],
            data: vec![&data],
            packages: vec!["tools.t".into()],
        };
        // A number past a double (`opa-number-lost`) has a test of its own.
        let found: Vec<_> = portability::check(&m, &facts)
            .into_iter()
            .filter(|f| f.rule == "r" && f.diagnostic.code != "opa-number-lost")
            .collect();
        assert_eq!(!found.is_empty(), flagged, "{body}: {found:?}");
        for f in &found {
            let d = &f.diagnostic;
            assert_eq!(d.location.line, 6, "{body}");
            assert!(d.help.is_some(), "{body}");
            assert!(
                d.message.chars().next().is_some_and(|c| !c.is_uppercase()),
                "{body}"
            );
        }
    }
}

#[test]
fn finds_whether_a_policy_reads_the_caller() {
    let reads = |body: &str| reads_caller(&load(&format!("package t\nimport rego.v1\n{body}\n")));
    assert!(!reads(
        "a if input.arguments.env == \"prod\"\nb := input.tool"
    ));
    assert!(!reads("a if input.arguments[input.arguments.k]"));
    assert!(reads("a if \"oncall\" in input.caller.claims.groups"));
    assert!(reads("a if not input.caller"));
    assert!(reads("x := input"));
    assert!(reads("a if input[input.arguments.k]"));
}

/// `rego/portability/lost`: where a number the request may spell past a
/// double meets an exact operation (flagged) and where it cannot (a
/// string or boolean by the schema, a comparison with a string literal,
/// a builtin that only counts or tests, a non-contract rule's value).
#[test]
fn portability_flags_numbers_past_a_double() {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"s": {"type": "string"}, "i": {"type": "integer"}, "o": {}},
    });
    for (flagged, rule) in [
        (true, "r if input.arguments.o == 5"),
        (true, "r if 5 < input.arguments.o"),
        (true, "r if input.arguments.o == input.arguments.s"),
        (true, "r if input.arguments.o in [1, 2]"),
        (true, "r if 3 in input.arguments.o"),
        (true, "r if input.arguments.i % 2 == 0"),
        (true, "r if input.arguments.i + 1 > 0"),
        (true, "r if round(input.arguments.o) > 0"),
        (true, "r if format_int(input.arguments.i, 16) == \"a\""),
        (true, "r if max([input.arguments.o, 1]) == \"a\""),
        (true, "r if count({input.arguments.o, 1}) == 2"),
        (true, "meta := {\"n\": input.arguments.o}"),
        (
            true,
            "meta := {\"n\": array.concat([1], input.arguments.o)}",
        ),
        (true, "deny contains input.arguments.o"),
        (
            true,
            "meta := {\"r\": [y | some x in input.arguments.o; y := x]}",
        ),
        (true, "meta := {\"n\": y} if { y := input.arguments.o }"),
        (
            true,
            "meta := {\"n\": x} if { some x in input.arguments.o }",
        ),
        (
            false,
            "meta := {\"n\": y} if { y := count(input.arguments.o) }",
        ),
        (
            false,
            "meta := {\"r\": [y | some x in input.arguments.s; y := x]}",
        ),
        (false, "r if input.arguments.s == \"5\""),
        (false, "r if input.arguments.o == \"prod\""),
        (false, "r if input.arguments.o != null"),
        (false, "r if \"admin\" in input.arguments.o"),
        (false, "r if count(input.arguments.o) > 2"),
        (false, "r if is_number(input.arguments.o)"),
        (false, "r if startswith(input.arguments.s, \"/\")"),
        (false, "helper := input.arguments.o"),
        (false, "meta := {\"n\": input.arguments.s}"),
        (false, "meta := {\"n\": count(input.arguments.o)}"),
    ] {
        let text = format!("package tools.t\nimport rego.v1\n{rule}\n");
        let m = load(&text);
        let facts = portability::Facts {
            schemas: vec![vec![&schema]],
            data: vec![&serde_json::Value::Null],
            packages: vec!["tools.t".into()],
        };
        let found: Vec<_> = portability::check(&m, &facts)
            .into_iter()
            .filter(|f| f.diagnostic.code == "opa-number-lost")
            .collect();
        assert_eq!(!found.is_empty(), flagged, "{rule}: {found:?}");
        for f in &found {
            let d = &f.diagnostic;
            assert_eq!(d.location.line, 3, "{rule}");
            assert!(!d.is_error(), "{rule}");
            assert!(
                !f.regorus(),
                "{rule}: a warning both evaluators fail closed on"
            );
            assert!(d.message.contains("fails closed"), "{rule}");
        }
    }
}
