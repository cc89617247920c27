//! The checker's own test, on a crate written to a temporary directory:
//! what `read` finds of each kind of path, and what `report` says of an
//! allowed arrow, a cycle, a forbidden arrow, a stale known cycle and a
//! table that is not acyclic. The project's own layout is checked in
//! `layout.rs`, beside its tables.

use super::read::read_crate;
use super::report::problems;

/// The checker on a crate written here: every kind of path is read, an
/// allowed arrow passes, a cycle and a forbidden arrow are reported, and a
/// known cycle that is gone is reported as stale.
#[test]
fn layout_checker_reads_paths_and_finds_cycles() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path();
    let write = |rel: &str, text: &str| {
        let path = src.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write(
        "lib.rs",
        "pub mod low;\npub mod high;\npub(crate) mod leaf;\n",
    );
    write("leaf.rs", "pub fn f() {}\n");
    write("low/mod.rs", "pub mod a;\npub mod b;\n");
    // a <-> b through a nested group with `self`, and through a macro.
    write(
        "low/a.rs",
        "use crate::{leaf, low::{self, b::{self as bee}}};\npub fn g() { bee::h(); leaf::f(); }\n",
    );
    write(
        "low/b.rs",
        "pub fn h() { println!(\"{}\", super::a::g()); }\n",
    );
    // high -> low by a path in an expression, through a child module.
    write("high/mod.rs", "mod inner;\npub fn k() { inner::m() }\n");
    write("high/inner.rs", "pub fn m() { crate::low::a::g() }\n");
    let graph = read_crate(src).expect("parses");
    let uses = |from: &str| -> Vec<&str> { graph.edges[from].keys().map(String::as_str).collect() };
    assert_eq!(uses("low/a.rs"), ["leaf.rs", "low/b.rs", "low/mod.rs"]);
    assert_eq!(uses("low/b.rs"), ["low/a.rs"]);
    assert_eq!(uses("high/mod.rs"), ["high/inner.rs"]);
    assert_eq!(uses("high/inner.rs"), ["low/a.rs"]);

    let allowed: &[(&str, &[&str])] = &[
        ("leaf", &[]),
        ("low", &[]),
        ("high", &["low"]),
        ("crate", &[]),
    ];
    let found = problems(&graph, allowed, &["leaf"], &[], &[], &[]);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with("cycle between files: low/a.rs, low/b.rs"),
        "{found:#?}"
    );
    // Known, it passes; a known entry no longer found is stale.
    let known: &[(&[&str], &str)] = &[
        (&["low/a.rs", "low/b.rs"], "test"),
        (&["high/inner.rs", "high/x.rs"], "gone"),
    ];
    let found = problems(&graph, allowed, &["leaf"], &[], &[], known);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].contains("[high/inner.rs, high/x.rs] no longer occurs"),
        "{found:#?}"
    );

    // low -> high is not in the table: a forbidden arrow, and a cycle between modules.
    write("low/b.rs", "pub fn h() { crate::high::k() }\n");
    let graph = read_crate(src).expect("parses");
    let found = problems(&graph, allowed, &["leaf"], &[], &[], &[]);
    assert!(
        found.iter().any(
            |p| p.starts_with("forbidden arrow low -> high (src/low/b.rs uses crate::high::k)")
        ),
        "{found:#?}"
    );
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("cycle between modules: high, low")),
        "{found:#?}"
    );
    // The table must run down itself.
    let circular: &[(&str, &[&str])] = &[
        ("leaf", &[]),
        ("low", &["high"]),
        ("high", &["low"]),
        ("crate", &[]),
    ];
    let found = problems(&graph, circular, &["leaf"], &[], &[], &[]);
    assert!(
        found
            .iter()
            .any(|p| p == "the table of allowed arrows has a cycle: high, low"),
        "{found:#?}"
    );
}
