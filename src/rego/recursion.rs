//! Cycles between rules and functions, found in the syntax tree.
//!
//! Rego forbids recursion and OPA rejects it when compiling; regorus only
//! notices an unconditional one when it runs, and a conditional one may
//! exhaust the stack first, so a catalog with one is refused at load
//! (`catalog/build`). This module builds the dependency graph between rules
//! (references by bare name, `data.` path or import, and calls to user
//! functions, resolved as [`super::lint`] resolves them) and reports one
//! cycle per strongly connected group; whether a call is well formed is
//! [`super::lint`]'s question.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use regorus::unstable::{AssignOp, Expr, Literal, Query, Ref, Rule, RuleHead};

use super::lint::{Callee, aliases, resolve_call, user_functions};
use super::visit::{ref_indexes, vars, walk_expr, walk_rule};
use super::{PolicyModule, path_of, rule_defs, span_location};
use crate::diag::{Diagnostic, Location};

/// A cycle of rules that depend on each other, found in the syntax tree.
#[derive(Debug, Clone)]
pub struct Recursion {
    /// The members, by path without `data.`, starting with the one defined
    /// first in the files (the cycle closes back to it).
    pub cycle: Vec<String>,
    pub diagnostic: Diagnostic,
}

/// The cycles between rules and functions of `modules`: one per strongly
/// connected group of the dependency graph (a rule that refers to itself
/// is one), so a hostile policy cannot make the search explode. Rego
/// forbids recursion and OPA rejects it when compiling; regorus only
/// notices an unconditional one when it runs, and a conditional one
/// (`f(x) := f(x - 1) if x > 0`) may exhaust the stack first, so a catalog
/// with one is refused at load.
pub fn recursion(modules: &[PolicyModule]) -> Vec<Recursion> {
    let (graph, def_at) = graph(modules);
    let mut out: Vec<Recursion> = cycles(&graph, &def_at)
        .into_iter()
        .map(|cycle| {
            let at = def_at.get(&cycle[0]).cloned().unwrap_or_default();
            let named: Vec<String> = cycle
                .iter()
                .chain(std::iter::once(&cycle[0]))
                .map(|n| format!("data.{n}"))
                .collect();
            let diagnostic = Diagnostic::error(
                "rego-recursion",
                at,
                format!("rule {} is recursive: {}", named[0], named.join(" -> ")),
            )
            .with_help(
                "Rego forbids recursion; rewrite it with a comprehension, `walk` or `graph.reachable`",
            );
            Recursion { cycle, diagnostic }
        })
        .collect();
    out.sort_by(|a, b| {
        let l = |r: &Recursion| {
            let at = &r.diagnostic.location;
            (at.file.clone(), at.line, at.column)
        };
        l(a).cmp(&l(b))
    });
    out
}

/// The dependency graph between rules (by path without `data.`), with
/// where each rule is first defined.
fn graph(
    modules: &[PolicyModule],
) -> (
    BTreeMap<String, BTreeSet<String>>,
    HashMap<String, Location>,
) {
    let defs = rule_defs(modules);
    let functions = user_functions(modules);
    // Rules by the constant part of their head (`p.annotations.readOnlyHint`
    // for `annotations.readOnlyHint := ...`, `p.x` for `x[k] := ...`), so
    // that rules defining parts of one document may read each other.
    let rule_paths: BTreeSet<String> = defs
        .iter()
        .map(|d| node_name(&d.package, &d.path))
        .collect();

    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut def_at: HashMap<String, Location> = HashMap::new();
    let mut default_at: HashMap<String, Location> = HashMap::new();

    for m in modules {
        let aliases = aliases(m);
        for rule in &m.module.policy {
            let (head_refr, locals) = rule_locals(rule);
            let me = node_name(&m.package, &path_of(head_refr));
            // A cycle is shown at its first definition that can recurse
            // (a `default` cannot), or its `default` if that is all there is.
            if let Rule::Default { .. } = rule.as_ref() {
                default_at
                    .entry(me.clone())
                    .or_insert_with(|| span_location(rule.span()));
            } else {
                def_at
                    .entry(me.clone())
                    .or_insert_with(|| span_location(rule.span()));
            }
            let mut edges = BTreeSet::new();
            let mut callees: BTreeSet<*const Expr> = BTreeSet::new();
            let scope = Scope {
                package: &m.package,
                locals: &locals,
                aliases: &aliases,
                rule_paths: &rule_paths,
            };
            walk_rule(rule, &mut |e| {
                // A rule's own head is not a reference to itself.
                if std::ptr::eq(e, head_refr.as_ref()) || callees.contains(&(e as *const Expr)) {
                    return false;
                }
                match e {
                    Expr::Call { fcn, .. } => {
                        let written = path_of(fcn);
                        if let Callee::User(full, _) =
                            resolve_call(&written, &m.package, &aliases, &functions)
                        {
                            edges.insert(full);
                        }
                        // The callee is not a reference to a rule's value;
                        // the arguments are walked as any expression.
                        callees.insert(fcn.as_ref() as *const Expr);
                        true
                    }
                    _ => refs_in(e, &scope, &mut edges),
                }
            });
            graph.entry(me).or_default().extend(edges);
        }
    }

    for (name, at) in default_at {
        def_at.entry(name).or_insert(at);
    }
    (graph, def_at)
}

/// The head reference of a rule and the names bound locally in it, which
/// shadow rule names of the package.
fn rule_locals(rule: &Rule) -> (&Ref<Expr>, BTreeSet<String>) {
    let mut locals = BTreeSet::new();
    let head = match rule {
        Rule::Default { refr, .. } => refr,
        Rule::Spec { head, .. } => match head {
            RuleHead::Compr { refr, .. } | RuleHead::Set { refr, .. } => refr,
            RuleHead::Func { refr, args, .. } => {
                for a in args {
                    locals.extend(vars(a));
                }
                refr
            }
        },
    };
    if let Rule::Spec { bodies, .. } = rule {
        for b in bodies {
            bound_in_query(&b.query, &mut locals);
        }
    }
    (head, locals)
}

fn bound_in_query(q: &Query, locals: &mut BTreeSet<String>) {
    for stmt in &q.stmts {
        match &stmt.literal {
            Literal::SomeVars { vars, .. } => {
                for v in vars {
                    locals.insert(v.text().to_string());
                }
            }
            Literal::SomeIn { key, value, .. } => {
                if let Some(k) = key {
                    locals.extend(vars(k));
                }
                locals.extend(vars(value));
            }
            Literal::Every {
                key, value, query, ..
            } => {
                if let Some(k) = key {
                    locals.insert(k.text().to_string());
                }
                locals.insert(value.text().to_string());
                bound_in_query(query, locals);
            }
            Literal::Expr { expr, .. } | Literal::NotExpr { expr, .. } => {
                walk_expr(expr, &mut |x| {
                    match x {
                        Expr::AssignExpr {
                            op: AssignOp::ColEq,
                            lhs,
                            ..
                        } => locals.extend(vars(lhs)),
                        Expr::ArrayCompr { query, .. }
                        | Expr::SetCompr { query, .. }
                        | Expr::ObjectCompr { query, .. } => bound_in_query(query, locals),
                        _ => {}
                    }
                    true
                });
            }
        }
    }
}

/// A rule's node in the dependency graph: its package and the constant
/// part of its head.
fn node_name(package: &str, head: &[String]) -> String {
    let mut name = package.to_string();
    for c in head.iter().take_while(|c| *c != "[_]") {
        name.push('.');
        name.push_str(c);
    }
    name
}

/// What names mean inside one rule.
struct Scope<'a> {
    package: &'a str,
    /// Names bound in the rule, which shadow rules of the package.
    locals: &'a BTreeSet<String>,
    /// Import aliases: `lib` for `import data.lib`, to `data.lib`.
    aliases: &'a HashMap<String, String>,
    /// Every rule and function, by path without `data.`.
    rule_paths: &'a BTreeSet<String>,
}

/// Records references to rules of this package (by bare name), of any
/// package (by `data.` path or an imported name) as dependency edges. A
/// reference to a package or a prefix of one (`data.lib`) depends on every
/// rule under it.
fn refs_in(e: &Expr, scope: &Scope, edges: &mut BTreeSet<String>) -> bool {
    let path = match e {
        Expr::RefDot { .. } | Expr::RefBrack { .. } | Expr::Var { .. } => path_of(e),
        _ => return true,
    };
    let Some(first) = path.first() else {
        return true;
    };
    // The reference as a path from `data`, and how many of its first
    // components must match (a bare name never means a shorter path than
    // its own package's rule).
    let absolute: Option<(Vec<String>, usize)> = if first == "data" {
        Some((path[1..].to_vec(), 1))
    } else if scope.locals.contains(first) || first == "input" {
        None
    } else if let Some(target) = scope.aliases.get(first) {
        target.strip_prefix("data.").map(|t| {
            let abs: Vec<String> = t
                .split('.')
                .map(str::to_string)
                .chain(path[1..].iter().cloned())
                .collect();
            (abs, 1)
        })
    } else {
        let abs: Vec<String> = scope
            .package
            .split('.')
            .map(str::to_string)
            .chain(path.iter().cloned())
            .collect();
        let min = abs.len() - path.len() + 1;
        Some((abs, min))
    };
    if let Some((abs, min)) = absolute {
        let constant: Vec<&str> = abs
            .iter()
            .map(String::as_str)
            .take_while(|c| *c != "[_]")
            .collect();
        // The rule the path reaches into (the longest prefix that names
        // one) ...
        if let Some(c) = (min.max(1)..=constant.len())
            .rev()
            .map(|n| constant[..n].join("."))
            .find(|c| scope.rule_paths.contains(c))
        {
            edges.insert(c);
        }
        // ... and every rule under the path (`data.lib` reads all of lib).
        if constant.len() >= min.max(1) {
            let prefix = format!("{}.", constant.join("."));
            edges.extend(
                scope
                    .rule_paths
                    .range(prefix.clone()..)
                    .take_while(|r| r.starts_with(&prefix))
                    .cloned(),
            );
        }
    }
    // Indexes of a reference may refer to rules too.
    for index in ref_indexes(e) {
        walk_expr(index, &mut |x| refs_in(x, scope, edges));
    }
    false
}

/// One cycle per strongly connected group of `graph` (Tarjan's algorithm,
/// without recursion: the graph comes from the policies). Each cycle starts
/// at the member defined first in the files and is a shortest way back to
/// it.
fn cycles(
    graph: &BTreeMap<String, BTreeSet<String>>,
    def_at: &HashMap<String, Location>,
) -> Vec<Vec<String>> {
    let names: Vec<&String> = graph
        .keys()
        .chain(graph.values().flatten())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let index_of: HashMap<&String, usize> =
        names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let adj: Vec<Vec<usize>> = names
        .iter()
        .map(|n| {
            graph
                .get(*n)
                .into_iter()
                .flatten()
                .map(|m| index_of[m])
                .collect()
        })
        .collect();

    const UNSEEN: usize = usize::MAX;
    let n = adj.len();
    let (mut index, mut low, mut on_stack) = (vec![UNSEEN; n], vec![0; n], vec![false; n]);
    let (mut stack, mut next, mut groups) = (Vec::new(), 0, Vec::new());
    for root in 0..n {
        if index[root] != UNSEEN {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&(v, i)) = work.last() {
            if let Some(&w) = adj[v].get(i) {
                work.last_mut().expect("not empty").1 += 1;
                if index[w] == UNSEEN {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
            } else {
                work.pop();
                if let Some(&(p, _)) = work.last() {
                    low[p] = low[p].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut group = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        group.push(w);
                        if w == v {
                            break;
                        }
                    }
                    groups.push(group);
                }
            }
        }
    }

    let place = |i: usize| {
        def_at
            .get(names[i])
            .map(|l| (l.file.clone(), l.line, l.column))
    };
    let mut out = Vec::new();
    for group in groups {
        let start = *group
            .iter()
            .min_by_key(|i| (place(**i).is_none(), place(**i), names[**i]))
            .expect("a group has a member");
        if group.len() == 1 && !adj[start].contains(&start) {
            continue;
        }
        // Breadth-first from `start`, inside the group, back to it.
        let members: BTreeSet<usize> = group.iter().copied().collect();
        let mut came_from: HashMap<usize, usize> = HashMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut last = start;
        'search: while let Some(v) = queue.pop_front() {
            for &w in &adj[v] {
                if w == start {
                    last = v;
                    break 'search;
                }
                if members.contains(&w) && !came_from.contains_key(&w) {
                    came_from.insert(w, v);
                    queue.push_back(w);
                }
            }
        }
        let mut cycle = vec![last];
        while let Some(&p) = came_from.get(cycle.last().expect("not empty")) {
            cycle.push(p);
        }
        cycle.reverse();
        out.push(cycle.into_iter().map(|i| names[i].clone()).collect());
    }
    out
}
