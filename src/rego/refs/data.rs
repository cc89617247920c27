//! References into `data`: the tree of what exists under it ([`Node`]: the
//! merged data documents, the packages and the rules defined), a path that
//! leaves it, and a reference from one tool's package into another tool's
//! (each tool's engine holds only its own). How a miss is worded is
//! `report`'s.

use std::collections::BTreeMap;

use serde_json::Value;

use super::report::{Miss, diagnostic, location, show};
use super::{Part, Scope};
use crate::diag::Diagnostic;
use crate::rego::RuleDef;

/// What is known to exist under a `data` path.
pub(super) enum Node {
    /// Anything: a rule's value, a data value that is not an object.
    Open,
    Tree(BTreeMap<String, Node>),
}

impl Node {
    pub(super) fn insert_json(&mut self, v: &Value) {
        match (self, v) {
            (Node::Open, _) => {}
            (Node::Tree(m), Value::Object(o)) => {
                for (k, v) in o {
                    m.entry(k.clone())
                        .or_insert_with(|| Node::Tree(BTreeMap::new()))
                        .insert_json(v);
                }
            }
            (node, _) => *node = Node::Open,
        }
    }

    /// Adds the path; `open` makes its end hold anything.
    pub(super) fn insert_path<'s>(&mut self, path: impl Iterator<Item = &'s str>, open: bool) {
        let mut node = self;
        for c in path {
            if c == "[_]" {
                break;
            }
            match node {
                Node::Open => return,
                Node::Tree(m) => {
                    node = m
                        .entry(c.to_string())
                        .or_insert_with(|| Node::Tree(BTreeMap::new()));
                }
            }
        }
        if open {
            *node = Node::Open;
        }
    }
}

pub(super) fn insert_rule(data: &mut Node, def: &RuleDef) {
    let path = def
        .package
        .split('.')
        .chain(def.path.iter().map(String::as_str));
    data.insert_path(path, true);
}

/// A reference from one tool's package into another tool's: each tool's
/// engine holds only its own package and the library packages, so it is
/// never defined there. (A library package may read any tool's package: it
/// runs in every tool's engine.)
pub(super) fn other_tools_package(scope: &Scope<'_, '_>, parts: &[Part]) -> Option<Diagnostic> {
    let own = scope.owner.as_deref()?;
    let mut package = String::new();
    let mut found = None;
    for (i, p) in parts.iter().enumerate().skip(1) {
        let Some(name) = p.name.as_deref() else { break };
        if i > 1 {
            package.push('.');
        }
        package.push_str(name);
        if let Some(owner) = scope.ctx.package_owner.get(&package) {
            found = Some((i, package.clone(), owner.as_str()));
        }
    }
    let (at, package, owner) = found?;
    if owner == own {
        return None;
    }
    Some(
        Diagnostic::error(
            "rego-undefined-data",
            location(&parts[at].span),
            format!(
                "`{}` is never defined here: package `{package}` belongs to the tool whose policy is `{owner}`, and each tool's engine holds only its own policy package and the library packages",
                show(parts, parts.len() - 1)
            ),
        )
        .with_help(
            "move what both tools need to a library package (one that no tool names as its `policy`)",
        ),
    )
}

pub(super) fn check_data(root: &Node, parts: &[Part]) -> Option<Diagnostic> {
    let mut node = root;
    for (i, p) in parts.iter().enumerate().skip(1) {
        let Node::Tree(m) = node else { return None };
        let name = p.name.as_deref()?;
        if i == 1 && name == "regent" {
            // regent's generated packages.
            return None;
        }
        match m.get(name) {
            Some(child) => node = child,
            None => {
                let what = if i == 1 {
                    "no data document, package or rule is under `data`".to_string()
                } else {
                    format!(
                        "no data document, package or rule defines it under `{}`",
                        show(parts, i - 1)
                    )
                };
                let miss = Miss {
                    at: i,
                    why: what,
                    candidates: m.keys().cloned().collect(),
                };
                return Some(diagnostic(
                    "rego-undefined-data",
                    parts,
                    &miss,
                    "add it to a data file or define the rule, or fix the reference",
                ));
            }
        }
    }
    None
}
