//! The partition's tests: which uses the walk records or blocks, and that
//! the representatives cover every truth vector, fit the schema, follow
//! case folds and stay within the bounds.

use std::collections::{BTreeMap, BTreeSet};

use super::classes::{Shape, representatives, vector};
use super::walk::rego_uses;
use super::*;

/// `path`'s uses are blocked (not partitioned) in a rule whose body is
/// `body`, after the rules of `prelude`.
fn assert_path_blocked(prelude: &str, body: &str) {
    let u = uses_of(
        &format!(
            "package t\nimport rego.v1\n{prelude}annotations := {{\"destructiveHint\": true}} if {{ {body} }}\n"
        ),
        "t",
    );
    assert!(u.get("path").is_some_and(|p| p.blocked.is_some()), "{body}");
}

fn uses_of(text: &str, package: &str) -> BTreeMap<String, Uses> {
    let mut e = regorus::Engine::new();
    e.add_policy("p.rego".into(), text.into()).unwrap();
    let modules = crate::rego::modules(&mut e);
    let mut out = BTreeMap::new();
    rego_uses(&modules, Some(package), Root::Arguments, &mut out);
    out
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn follows_aliases_and_ignores_deny() {
    let u = uses_of(
        r#"package t
import rego.v1
path := input.arguments.path
annotations := {"destructiveHint": true} if {
startswith(path, "/etc")
p := input.arguments.path
not contains(p, "..")
input.arguments.path in {"a", "b"}
endswith(data.t.path, ".conf")
}
deny contains sprintf("%s", [input.arguments.path]) if lower(input.arguments.path) == "x"
"#,
        "t",
    );
    let p = &u["path"];
    assert!(p.blocked.is_none(), "{:?}", p.blocked);
    assert_eq!(p.prefixes, strs(&["/etc"]));
    assert_eq!(p.contains, strs(&[".."]));
    assert_eq!(p.suffixes, strs(&[".conf"]));
    assert_eq!(p.equals, strs(&["a", "b"]));
}

#[test]
fn blocks_other_uses() {
    for body in [
        "startswith(trim_space(input.arguments.path), \"/\")",
        "p := input.arguments.path; count(p) > 3",
        "input.arguments.path < \"m\"",
        "some k; data.t[k] == \"x\"",
        "x := data.t; x.path == \"y\"",
        "startswith(\"/etc\", input.arguments.path)",
        "input.arguments.path == input.arguments.other",
        "startswith(object.get(input.arguments, \"path\", \"\"), \"/\")",
        "input.arguments.path == \"a\" with input.arguments.path as \"a\"",
    ] {
        assert_path_blocked("path := input.arguments.path\n", body);
    }
}

/// Every truth vector a string over a small alphabet reaches is reached
/// by some representative.
#[test]
fn representatives_cover_every_truth_vector() {
    let u = Uses {
        fold: None,
        equals: strs(&["ab", ""]),
        prefixes: strs(&["a", "ab"]),
        suffixes: strs(&["b", "ba"]),
        contains: strs(&["bb", "a"]),
        blocked: None,
        ..Uses::default()
    };
    let reps = representatives(&u, Fold::None, &Shape::default(), |_| Ok(())).unwrap();
    let vector = |w: &str| -> Vec<bool> {
        let mut v: Vec<bool> = u.equals.iter().map(|l| w == l).collect();
        v.extend(u.prefixes.iter().map(|l| w.starts_with(l.as_str())));
        v.extend(u.suffixes.iter().map(|l| w.ends_with(l.as_str())));
        v.extend(u.contains.iter().map(|l| w.contains(l.as_str())));
        v
    };
    let reached: BTreeSet<Vec<bool>> = reps.iter().map(|r| vector(r)).collect();
    let mut words = vec![String::new()];
    for _ in 0..6 {
        let mut next = Vec::new();
        for w in &words {
            for c in ['a', 'b', 'c'] {
                next.push(format!("{w}{c}"));
            }
        }
        words.extend(next.clone());
        words.dedup();
        words = words
            .into_iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
    }
    for w in &words {
        assert!(reached.contains(&vector(w)), "{w:?} has no representative");
    }
}

/// Representatives chosen for a schema that refuses the canonical ones
/// are valid, and still reach every truth vector the canonical ones do.
#[test]
fn representatives_fit_the_schema() {
    let u = Uses {
        fold: None,
        equals: strs(&["/etc/motd"]),
        prefixes: strs(&["/etc"]),
        suffixes: strs(&[".x"]),
        contains: strs(&[".."]),
        blocked: None,
        ..Uses::default()
    };
    let accepts = |r: &str| r.starts_with('/') && r.chars().count() >= 6;
    let shape = Shape {
        min_len: 6,
        samples: Vec::new(),
    };
    let reps = representatives(&u, Fold::None, &shape, |r| {
        if accepts(r) { Ok(()) } else { Err("no".into()) }
    })
    .unwrap();
    assert!(reps.iter().all(|r| accepts(r)), "{reps:?}");
    let canonical = representatives(&u, Fold::None, &Shape::default(), |_| Ok(())).unwrap();
    let want: BTreeSet<Vec<bool>> = canonical.iter().map(|r| vector(&u, r)).collect();
    let got: BTreeSet<Vec<bool>> = reps.iter().map(|r| vector(&u, r)).collect();
    assert_eq!(want, got);
    // A schema no candidate of some class fits: no partition, naming one.
    let err = representatives(&u, Fold::None, &Shape::default(), |r| {
        if r.contains("..") {
            Err("no dots".into())
        } else {
            Ok(())
        }
    })
    .unwrap_err();
    assert!(err.contains("rejected by inputSchema: no dots"), "{err}");
}

#[test]
fn follows_case_folds() {
    let u = uses_of(
        r#"package t
import rego.v1
owner := lower(input.arguments.owner)
annotations := {"destructiveHint": true} if {
lower(input.arguments.owner) == "microsoft"
o := lower(input.arguments.owner)
startswith(o, "ms-")
owner in {"github", "Octo"}
p := input.arguments.repo
endswith(upper(p), ".GIT")
}
"#,
        "t",
    );
    let o = &u["owner"];
    assert!(o.blocked.is_none(), "{:?}", o.blocked);
    assert_eq!(o.fold, Some(Fold::Lower));
    assert_eq!(o.equals, strs(&["microsoft", "github", "Octo"]));
    assert_eq!(o.prefixes, strs(&["ms-"]));
    let r = &u["repo"];
    assert!(r.blocked.is_none(), "{:?}", r.blocked);
    assert_eq!(r.fold, Some(Fold::Upper));
    assert_eq!(r.suffixes, strs(&[".GIT"]));
    for body in [
        "lower(input.arguments.path) == \"a\"; input.arguments.path == \"b\"",
        "lower(input.arguments.path) == \"a\"; startswith(upper(input.arguments.path), \"B\")",
        "upper(lower(input.arguments.path)) == \"A\"",
        "count(lower(input.arguments.path)) > 2",
    ] {
        assert_path_blocked("", body);
    }
}

/// Folded, every truth vector `lower(w)` reaches is reached by
/// `lower(r)` for some representative `r`.
#[test]
fn folded_representatives_cover_every_truth_vector() {
    let u = Uses {
        fold: Some(Fold::Lower),
        equals: strs(&["ab"]),
        prefixes: strs(&["a"]),
        suffixes: strs(&["b"]),
        contains: strs(&["ba"]),
        blocked: None,
        ..Uses::default()
    };
    let reps = representatives(&u, Fold::Lower, &Shape::default(), |_| Ok(())).unwrap();
    let reached: BTreeSet<Vec<bool>> = reps.iter().map(|r| vector(&u, &r.to_lowercase())).collect();
    let mut words = vec![String::new()];
    for _ in 0..5 {
        let next: Vec<String> = words
            .iter()
            .flat_map(|w| ['a', 'b', 'A', 'B', 'c'].map(|c| format!("{w}{c}")))
            .collect();
        words.extend(next);
        words = words
            .into_iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
    }
    for w in &words {
        let v = vector(&u, &w.to_lowercase());
        assert!(reached.contains(&v), "{w:?} has no representative");
    }
}

#[test]
fn bounds_the_classes() {
    let u = Uses {
        contains: (0..7).map(|i| format!("c{i}")).collect(),
        ..Uses::default()
    };
    assert!(representatives(&u, Fold::None, &Shape::default(), |_| Ok(())).is_err());
}
