//! Which library packages a tool's policy reaches (issue 31): its own and
//! shadow packages are the roots; a package is reached when a reached
//! module imports it or refers into it through `data.`, transitively.
//!
//! A reference is read as its static prefix (`data.lib[input.arguments.k]`
//! reaches everything under `data.lib`; `data[x]` and `data` as a whole
//! reach every package), and a package is reached when either of it and the
//! prefix lies under the other (`package lib` can define `data.lib.x.y`
//! through a rule path, `package lib.x` lies under `data.lib`): on any
//! doubt, more is reached, not less. A module this cannot read (no syntax
//! tree) reaches everything.
//!
//! Only which modules are reached is decided here. The build records it on
//! each tool (`Tool::modules`, its fingerprint); what the proof, the
//! exercise and the lints make of the reached modules is theirs. Engines
//! still hold every library package: what a request evaluates is unchanged.

use std::collections::BTreeSet;

use regorus::unstable::Expr;

use super::visit::{ref_indexes, walk_expr, walk_rule};
use super::{PolicyModule, path_of};

/// A static prefix of a reference into `data`, without `data`: `["lib"]`
/// for `data.lib[x].y`; empty for `data[x]` or `data` itself.
type Prefix = Vec<String>;

/// The library modules of one build, read once: each one's package path
/// and the prefixes of the `data` references it makes.
pub struct Library {
    modules: Vec<LibraryModule>,
}

struct LibraryModule {
    package: Vec<String>,
    refs: Vec<Prefix>,
}

impl Library {
    /// Reads `modules` (the library packages, those no tool claims); `None`
    /// for a module whose syntax tree is unknown, which then reaches every
    /// package and is reached by every tool.
    pub fn new(modules: &[Option<&PolicyModule>]) -> Library {
        Library {
            modules: modules
                .iter()
                .map(|m| match m {
                    Some(m) => LibraryModule {
                        package: package_path(m),
                        refs: data_refs(m),
                    },
                    None => LibraryModule {
                        package: Vec::new(),
                        refs: vec![Vec::new()],
                    },
                })
                .collect(),
        }
    }

    /// The indexes of the library modules reached from `roots` (a tool's
    /// own and shadow modules; `None` for one whose syntax tree is
    /// unknown, which reaches everything) and from `rules`, references the
    /// tool evaluates by name (`data.lib.root`, a `policy` resolver's rule).
    pub fn reached_from(&self, roots: &[Option<&PolicyModule>], rules: &[&str]) -> BTreeSet<usize> {
        let mut pending: Vec<Prefix> = Vec::new();
        for r in roots {
            match r {
                Some(m) => pending.extend(data_refs(m)),
                None => pending.push(Vec::new()),
            }
        }
        for rule in rules {
            pending.push(rule_prefix(rule));
        }
        let mut reached = BTreeSet::new();
        // Each module is added once and its references pushed then, so this
        // ends after at most one pass over every module's references.
        while let Some(prefix) = pending.pop() {
            for (i, m) in self.modules.iter().enumerate() {
                if !reached.contains(&i) && overlaps(&m.package, &prefix) {
                    reached.insert(i);
                    pending.extend(m.refs.iter().cloned());
                }
            }
        }
        reached
    }
}

/// The prefix of a reference written as text (`data.lib.root`): its
/// dotted components after `data`, up to anything quoted or indexed (a
/// reference that is not under `data` reaches everything).
fn rule_prefix(rule: &str) -> Prefix {
    let Some(rest) = rule.strip_prefix("data.") else {
        return Vec::new();
    };
    // What comes before a bracket or a quote is whole dotted components.
    let plain = rest.split(['[', '"']).next().unwrap_or("");
    plain
        .split('.')
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether one of `package` and `prefix` lies under the other, component
/// by component (an empty package, unknown, overlaps everything).
fn overlaps(package: &[String], prefix: &[String]) -> bool {
    package.iter().zip(prefix).all(|(a, b)| a == b)
}

/// The package of `m` as components, read from the syntax tree (a quoted
/// component may hold a dot).
fn package_path(m: &PolicyModule) -> Vec<String> {
    let mut path = path_of(&m.module.package.refr);
    if path.first().map(String::as_str) == Some("data") {
        path.remove(0);
    }
    // A component that is not a constant: the package could be anything.
    if let Some(i) = path.iter().position(|c| c == "[_]") {
        path.truncate(i);
    }
    path
}

/// The static prefixes of every reference into `data` that `m` makes:
/// its imports and the references in its rules (heads, bodies, `with`).
pub fn data_refs(m: &PolicyModule) -> Vec<Vec<String>> {
    let mut out: Vec<Prefix> = Vec::new();
    for imp in &m.module.imports {
        let path = path_of(&imp.refr);
        if path.first().map(String::as_str) == Some("data") {
            out.push(static_prefix(&path[1..]));
        }
    }
    for rule in &m.module.policy {
        walk_rule(rule, &mut |e| refs_in(e, &mut out));
    }
    out.sort();
    out.dedup();
    out
}

/// The components up to the first that is not a constant.
fn static_prefix(path: &[String]) -> Prefix {
    path.iter().take_while(|c| *c != "[_]").cloned().collect()
}

fn refs_in(e: &Expr, out: &mut Vec<Prefix>) -> bool {
    match e {
        Expr::RefDot { .. } | Expr::RefBrack { .. } => {
            let path = path_of(e);
            if path.first().map(String::as_str) != Some("data") {
                return true;
            }
            out.push(static_prefix(&path[1..]));
            // An index may refer into `data` too (`data.a[data.b.k]`).
            for index in ref_indexes(e) {
                walk_expr(index, &mut |x| refs_in(x, out));
            }
            false
        }
        // `data` as a whole (`x := data`, `data[k]` read by a walk).
        Expr::Var { value, .. } if value.as_string().is_ok_and(|s| s.as_ref() == "data") => {
            out.push(Vec::new());
            false
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(path: &str, text: &str) -> PolicyModule {
        let mut engine = regorus::Engine::new();
        engine.add_policy(path.into(), text.into()).unwrap();
        super::super::modules(&mut engine).pop().unwrap()
    }

    fn reached(root: &str, library: &[&str]) -> Vec<String> {
        let lib: Vec<PolicyModule> = library
            .iter()
            .enumerate()
            .map(|(i, t)| module(&format!("lib{i}.rego"), t))
            .collect();
        let root = module("root.rego", root);
        let l = Library::new(&lib.iter().map(Some).collect::<Vec<_>>());
        l.reached_from(&[Some(&root)], &[])
            .into_iter()
            .map(|i| lib[i].package.clone())
            .collect()
    }

    const TEAM: &str = "package team\nimport rego.v1\noncall if input.caller.claims.x\n";
    const UNRELATED: &str = "package other\nimport rego.v1\nx := 1\n";

    #[test]
    fn imports_and_references_reach_packages_transitively() {
        let root = "package tools.a\nimport rego.v1\nimport data.mid\ndeny contains 1 if mid.y\n";
        let mid = "package mid\nimport rego.v1\ny if data.team.oncall\n";
        assert_eq!(
            reached(root, &[mid, TEAM, UNRELATED]),
            vec!["mid".to_string(), "team".to_string()]
        );
        let direct = "package tools.a\nimport rego.v1\ndeny contains 1 if data.team.oncall\n";
        assert_eq!(
            reached(direct, &[TEAM, UNRELATED]),
            vec!["team".to_string()]
        );
        let none = "package tools.a\nimport rego.v1\ndeny contains 1 if input.arguments.x\n";
        assert!(reached(none, &[TEAM, UNRELATED]).is_empty());
    }

    #[test]
    fn a_dynamic_reference_reaches_everything_under_its_static_prefix() {
        let lib_a = "package lib.a\nimport rego.v1\nx := 1\n";
        let lib = "package lib\nimport rego.v1\nb.c := 2\n";
        let root =
            "package tools.a\nimport rego.v1\ndeny contains 1 if data.lib[input.arguments.k]\n";
        assert_eq!(
            reached(root, &[lib_a, lib, TEAM]),
            vec!["lib.a".to_string(), "lib".to_string()]
        );
        let all = "package tools.a\nimport rego.v1\ndeny contains 1 if data[input.arguments.k]\n";
        assert_eq!(reached(all, &[lib_a, TEAM]).len(), 2);
        let whole = "package tools.a\nimport rego.v1\ndeny contains 1 if { d := data; d.x }\n";
        assert_eq!(reached(whole, &[lib_a, TEAM]).len(), 2);
        // A rule path of a parent package can define what is referred to.
        let deep = "package tools.a\nimport rego.v1\ndeny contains 1 if data.lib.b.c\n";
        assert_eq!(reached(deep, &[lib_a, lib]), vec!["lib".to_string()]);
        // A reference inside an index.
        let index = "package tools.a\nimport rego.v1\ndeny contains 1 if input.arguments[data.team.oncall]\n";
        assert_eq!(reached(index, &[TEAM]), vec!["team".to_string()]);
    }

    #[test]
    fn a_rule_named_by_reference_reaches_its_package() {
        assert_eq!(rule_prefix("data.lib.root"), vec!["lib", "root"]);
        assert_eq!(rule_prefix("data.lib[\"a.b\"]"), vec!["lib"]);
        assert_eq!(rule_prefix("data.lib.x[\"a.b\"]"), vec!["lib", "x"]);
        assert!(rule_prefix("data[\"lib\"]").is_empty());
        assert!(rule_prefix("input.x").is_empty());
        let lib = module(
            "lib.rego",
            "package lib\nimport rego.v1\nroot := \"/srv\"\n",
        );
        let other = module("other.rego", UNRELATED);
        let l = Library::new(&[Some(&lib), Some(&other)]);
        assert_eq!(l.reached_from(&[], &["data.lib.root"]), BTreeSet::from([0]));
    }
}
