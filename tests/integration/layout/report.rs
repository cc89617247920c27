//! Judging the graph `read` built against the table of allowed arrows and
//! the known lists (`layout.rs`' `ALLOWED`, `LEAVES`, `KNOWN_*`): every
//! problem as a line of the test's message, a forbidden arrow with an
//! example path, a cycle with the arrows that close it, a known entry that
//! no longer occurs. It holds no table of its own; the tables are passed in.

use std::collections::{BTreeMap, BTreeSet};

use super::graph::cycles;
use super::read::{Graph, module_of, top_of};

/// Whether `child`'s module lies inside the module whose root file is
/// `parent` (`http/mod.rs` encloses `http/jwt.rs`; `lib.rs` encloses all).
fn encloses(parent: &str, child: &str) -> bool {
    let (p, c) = (module_of(parent), module_of(child));
    p.len() < c.len() && c.starts_with(&p)
}

/// Every problem the graph has against the table and the known lists, as
/// lines of a message; empty when the layout is as allowed.
pub fn problems(
    graph: &Graph,
    allowed: &[(&str, &[&str])],
    leaves: &[&str],
    known_arrows: &[(&str, &str, &str)],
    known_module_cycles: &[(&[&str], &str)],
    known_file_cycles: &[(&[&str], &str)],
) -> Vec<String> {
    let mut out = Vec::new();
    let table: BTreeMap<&str, BTreeSet<&str>> = allowed
        .iter()
        .map(|(m, to)| (*m, to.iter().copied().collect()))
        .collect();

    // The table itself runs down.
    let table_edges: BTreeMap<String, BTreeSet<String>> = allowed
        .iter()
        .map(|(m, to)| (m.to_string(), to.iter().map(|t| t.to_string()).collect()))
        .collect();
    for (m, to) in allowed {
        if leaves.contains(m) {
            for t in to.iter().filter(|t| !leaves.contains(t)) {
                out.push(format!(
                    "leaf `{m}` may use `{t}` in the table: a leaf uses only leaves (LEAVES)"
                ));
            }
        }
    }
    for cycle in cycles(&table_edges) {
        out.push(format!(
            "the table of allowed arrows has a cycle: {}",
            cycle.join(", ")
        ));
    }

    // Arrows between top-level modules, with an example of each.
    let mut modules: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut example: BTreeMap<(String, String), String> = BTreeMap::new();
    for (from, to) in &graph.edges {
        let top = top_of(from);
        modules.entry(top.clone()).or_default();
        for (target, path) in to {
            let target_top = top_of(target);
            if target_top != top {
                modules
                    .entry(top.clone())
                    .or_default()
                    .insert(target_top.clone());
                example
                    .entry((top.clone(), target_top))
                    .or_insert_with(|| format!("src/{from} uses {path}"));
            }
        }
    }
    for (from, to) in &modules {
        let Some(may) = table.get(from.as_str()) else {
            out.push(format!(
                "module `{from}` has no row in the table of allowed arrows (tests/integration/layout.rs, ALLOWED): add one saying what it may use"
            ));
            continue;
        };
        for target in to {
            let known = known_arrows
                .iter()
                .any(|(f, t, _)| f == from && t == target);
            let leaf = leaves.contains(&target.as_str()) && !leaves.contains(&from.as_str());
            if !may.contains(target.as_str()) && !leaf && !known {
                out.push(format!(
                    "forbidden arrow {from} -> {target} ({}): dependencies run down (ARCHITECTURE.md); move the code below both, or add the arrow to ALLOWED if the table is wrong",
                    example[&(from.clone(), target.clone())]
                ));
            }
        }
    }
    for (from, to, _) in known_arrows {
        if !modules.get(*from).is_some_and(|t| t.contains(*to)) {
            out.push(format!(
                "known arrow {from} -> {to} no longer occurs: remove it from KNOWN_ARROWS"
            ));
        }
    }

    // `LAYOUT_DUMP=1 cargo test --test integration layout` prints the arrows
    // found, for updating the table.
    if std::env::var_os("LAYOUT_DUMP").is_some() {
        for (m, t) in &modules {
            eprintln!(
                "DUMP {m}: {}",
                t.iter().cloned().collect::<Vec<_>>().join(", ")
            );
        }
    }
    let module_cycles = cycles(&modules);
    check_cycles(
        &mut out,
        "modules",
        &module_cycles,
        known_module_cycles,
        |m| m.to_owned(),
    );

    // Cycles between files, leaving out arrows between a file and the root
    // file of a module enclosing it.
    let mut files: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, to) in &graph.edges {
        let next = files.entry(from.clone()).or_default();
        for target in to.keys() {
            if !encloses(target, from) && !encloses(from, target) {
                next.insert(target.clone());
            }
        }
    }
    let file_cycles = cycles(&files);
    check_cycles(&mut out, "files", &file_cycles, known_file_cycles, |f| {
        let uses: Vec<String> = files[f]
            .iter()
            .filter(|t| {
                file_cycles
                    .iter()
                    .any(|c| c.iter().any(|x| x == f) && c.contains(t))
            })
            .map(|t| format!("{f} -> {t} ({})", graph.edges[f][t]))
            .collect();
        uses.join("; ")
    });
    out
}

fn check_cycles(
    out: &mut Vec<String>,
    what: &str,
    found: &[Vec<String>],
    known: &[(&[&str], &str)],
    describe: impl Fn(&str) -> String,
) {
    let within = |k: &[&str], cycle: &[String]| cycle.iter().all(|n| k.contains(&n.as_str()));
    for cycle in found {
        if !known.iter().any(|(k, _)| within(k, cycle)) {
            let arrows: Vec<String> = cycle.iter().map(|n| describe(n)).collect();
            out.push(format!(
                "cycle between {what}: {}\n    arrows: {}",
                cycle.join(", "),
                arrows.join("\n            ")
            ));
        }
    }
    for (k, _) in known {
        if !found.iter().any(|c| within(k, c)) {
            out.push(format!(
                "known cycle between {what} [{}] no longer occurs: remove it from the known list",
                k.join(", ")
            ));
        }
    }
}
