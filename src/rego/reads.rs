//! Which tool arguments a policy reads, and the string literals it compares
//! them with.
//!
//! [`argument_reads`] finds the top-level argument names read by constant
//! paths (`input.arguments.x`, `object.get(input.arguments, "x", d)`) or
//! gives up with the first read it cannot trace to names;
//! [`hint_argument_reads`] does the same for the rules that can change the
//! annotations. [`argument_literals`] collects the literals the proof's
//! sampling tries. Whether reads are bounded by the schema, and how values
//! are chosen, is the proof's job (`analysis/proof`); how a string argument
//! is partitioned is `analysis::partition`'s.

use std::collections::BTreeMap;

use regorus::unstable::{Expr, Rule};

use super::visit::{ref_indexes, walk_expr, walk_rule};
use super::{PolicyModule, const_string, path_of, span_location};
use crate::diag::Location;

/// The tool arguments that policies read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgumentReads {
    /// Exactly these top-level argument names, each read by a constant path
    /// (`input.arguments.action`, `input.arguments["action"]`,
    /// `object.get(input.arguments, "action", d)`).
    Known(BTreeMap<String, Location>),
    /// Some expression reads the arguments in a way that cannot be traced
    /// to names (`input.arguments[k]`, `x := input`); every argument may matter.
    Any { location: Location, why: String },
}

/// Which tool arguments the policies in `modules` read.
pub fn argument_reads(modules: &[PolicyModule]) -> ArgumentReads {
    reads_of(modules, false, |_, _| false, |_| {})
}

/// The arguments read by the rules of `modules` that `skip` does not leave
/// out; `observe` sees every expression of the rules read.
fn reads_of(
    modules: &[PolicyModule],
    callers: bool,
    skip: impl Fn(&PolicyModule, &Rule) -> bool,
    mut observe: impl FnMut(&Expr),
) -> ArgumentReads {
    let mut names = BTreeMap::new();
    let mut unknown: Option<(Location, String)> = None;
    for m in modules {
        for imp in &m.module.imports {
            if path_of(&imp.refr).first().map(String::as_str) == Some("input") {
                unknown.get_or_insert((
                    span_location(&imp.span),
                    format!("`{}` imports input under another name", imp.span.text()),
                ));
            }
        }
        for rule in &m.module.policy {
            if skip(m, rule) {
                continue;
            }
            walk_rule(rule, &mut |e| {
                observe(e);
                reads_in(e, callers, &mut names, &mut unknown)
            });
        }
    }
    match unknown {
        Some((location, why)) => ArgumentReads::Any { location, why },
        None => ArgumentReads::Known(names),
    }
}

/// Whether the rules of `modules` may read the caller: `input.caller`, or
/// `input` by any path other than `input.arguments`, `input.tool` and
/// `input.request`, or as a whole (on doubt, they do). `review` tabulates a
/// tool per caller only when this holds.
pub fn reads_caller(modules: &[PolicyModule]) -> bool {
    let mut found = false;
    for m in modules {
        found |= m
            .module
            .imports
            .iter()
            .any(|imp| path_of(&imp.refr).first().map(String::as_str) == Some("input"));
        for rule in &m.module.policy {
            walk_rule(rule, &mut |e| caller_read_in(e, &mut found));
        }
    }
    found
}

fn caller_read_in(e: &Expr, found: &mut bool) -> bool {
    match e {
        Expr::RefDot { .. } | Expr::RefBrack { .. } => {
            let path = path_of(e);
            if path.first().map(String::as_str) != Some("input") {
                return !*found;
            }
            *found |= !matches!(
                path.get(1).map(String::as_str),
                Some("arguments" | "tool" | "request")
            );
            for index in ref_indexes(e) {
                walk_expr(index, &mut |x| caller_read_in(x, found));
            }
            false
        }
        Expr::Var { value, .. } => {
            *found |= value.as_string().is_ok_and(|s| s.as_ref() == "input");
            false
        }
        _ => !*found,
    }
}

/// The contract rules whose value is not a hint: arguments only they read
/// cannot change the annotations (`visible` sees no arguments at all;
/// `upstream_request` decides an upstream's request, never a hint).
const NOT_HINTS: &[&str] = &[
    "deny",
    "confirm",
    "meta",
    "security_schemes",
    crate::rego::generate::VISIBLE_RULE,
    crate::rego::generate::UPSTREAM_REQUEST_RULE,
];

/// Which tool arguments can change the annotations of the tool whose policy
/// is `package`: [`argument_reads`] without the rules of `package` named in
/// [`NOT_HINTS`], as long as no other rule refers to those by name (then
/// every rule counts, as in [`argument_reads`]).
pub fn hint_argument_reads(modules: &[PolicyModule], package: &str) -> ArgumentReads {
    hint_argument_reads_with(modules, package, false)
}

/// As [`hint_argument_reads`]; with `callers` (the catalog declares a
/// caller schema, whose classes the proof enumerates, see
/// [`hint_caller_reads`]) a read of `input.caller` is no unknown read.
pub fn hint_argument_reads_with(
    modules: &[PolicyModule],
    package: &str,
    callers: bool,
) -> ArgumentReads {
    let mut refers = false;
    let reads = reads_of(
        modules,
        callers,
        |m, rule| not_hint_rule(m, rule, package),
        |e| refers |= refers_to_not_hints(e),
    );
    if refers {
        return reads_of(modules, callers, |_, _| false, |_| {});
    }
    reads
}

/// What the rules that can change a tool's annotations read of the caller
/// (for the proof's caller classes, `analysis/caller_classes`).
#[derive(Debug, Clone, Default)]
pub struct CallerReads {
    /// Whether any of them reads the caller at all.
    pub any: bool,
    /// The claims read by a constant path (`input.caller.claims.groups`;
    /// `input.caller.subject` and `issuer` count as the claims `sub` and
    /// `iss`), with where each is first read.
    pub claims: BTreeMap<String, Location>,
    /// The first read the classes cannot follow (the claims as a whole or
    /// by a computed key, the caller bound to a variable): where and why.
    pub unknown: Option<(Location, String)>,
}

/// What the rules of `modules` that can change the annotations of the tool
/// whose policy is `package` read of the caller ([`hint_rules`]' rules). A
/// bare `input.caller` is followed only as a whole condition (`input.caller`,
/// `not input.caller`: whether there is a caller).
pub fn hint_caller_reads(modules: &[PolicyModule], package: Option<&str>) -> CallerReads {
    let counts = hint_rules(modules, package);
    let mut out = CallerReads::default();
    for m in modules {
        for rule in &m.module.policy {
            if !counts(m, rule) {
                continue;
            }
            // The expressions that are a whole condition of a body.
            let mut conditions: Vec<*const Expr> = Vec::new();
            if let Rule::Spec { bodies, .. } = rule.as_ref() {
                for b in bodies {
                    for stmt in &b.query.stmts {
                        if let regorus::unstable::Literal::Expr { expr, .. }
                        | regorus::unstable::Literal::NotExpr { expr, .. } = &stmt.literal
                        {
                            conditions.push(expr.as_ref() as *const Expr);
                        }
                    }
                }
            }
            walk_rule(rule, &mut |e| caller_paths(e, &conditions, &mut out));
        }
    }
    out
}

fn caller_paths(e: &Expr, conditions: &[*const Expr], out: &mut CallerReads) -> bool {
    if !matches!(e, Expr::RefDot { .. } | Expr::RefBrack { .. }) {
        return true;
    }
    let path = path_of(e);
    if path.first().map(String::as_str) != Some("input")
        || path.get(1).map(String::as_str) != Some("caller")
    {
        return true;
    }
    out.any = true;
    let unknown = |why: String| (span_location(e.span()), why);
    match path.get(2).map(String::as_str) {
        None if conditions.contains(&(e as *const Expr)) => {}
        Some("subject") => {
            out.claims
                .entry("sub".into())
                .or_insert_with(|| span_location(e.span()));
        }
        Some("issuer") => {
            out.claims
                .entry("iss".into())
                .or_insert_with(|| span_location(e.span()));
        }
        Some("claims") if path.get(3).is_some_and(|k| k != "[_]") => {
            out.claims
                .entry(path[3].clone())
                .or_insert_with(|| span_location(e.span()));
        }
        _ => {
            out.unknown.get_or_insert_with(|| {
                unknown(format!(
                    "`{}` reads the caller as a whole or by a computed key, which the caller classes do not follow",
                    e.span().text()
                ))
            });
        }
    }
    for index in ref_indexes(e) {
        walk_expr(index, &mut |x| caller_paths(x, conditions, out));
    }
    false
}

/// Which rules of `modules` can change the annotations, as
/// [`hint_argument_reads`] counts them: with `package`, every rule but its
/// [`NOT_HINTS`] ones, unless another rule refers to those; without, every
/// rule. For the analyses that follow arguments into the rules (the
/// partition, the literal-directed candidates).
pub(crate) fn hint_rules<'a>(
    modules: &[PolicyModule],
    package: Option<&'a str>,
) -> impl Fn(&PolicyModule, &Rule) -> bool + 'a {
    let mut refers = false;
    for m in modules {
        for rule in &m.module.policy {
            if package.is_some_and(|p| not_hint_rule(m, rule, p)) {
                continue;
            }
            super::visit::walk_rule(rule, &mut |e| {
                refers |= refers_to_not_hints(e);
                true
            });
        }
    }
    move |m: &PolicyModule, rule: &Rule| {
        refers || !package.is_some_and(|p| not_hint_rule(m, rule, p))
    }
}

/// Whether `rule` of `m` is one of `package`'s rules named in [`NOT_HINTS`].
pub(super) fn not_hint_rule(m: &PolicyModule, rule: &Rule, package: &str) -> bool {
    let head = path_of(super::head(rule));
    m.package == package
        && head
            .first()
            .is_some_and(|n| NOT_HINTS.contains(&n.as_str()))
}

/// Whether `e` refers to a rule named in [`NOT_HINTS`] (then those rules
/// can change the annotations too).
pub(super) fn refers_to_not_hints(e: &Expr) -> bool {
    match e {
        Expr::Var { value, .. } => value
            .as_string()
            .is_ok_and(|v| NOT_HINTS.contains(&v.as_ref())),
        Expr::RefDot { .. } | Expr::RefBrack { .. } => {
            path_of(e).iter().any(|c| NOT_HINTS.contains(&c.as_str()))
        }
        _ => false,
    }
}

fn reads_in(
    e: &Expr,
    callers: bool,
    names: &mut BTreeMap<String, Location>,
    unknown: &mut Option<(Location, String)>,
) -> bool {
    match e {
        Expr::Call { fcn, params, .. }
            if path_of(fcn) == ["object", "get"]
                && params.len() >= 2
                && path_of(&params[0]) == ["input", "arguments"] =>
        {
            match const_string(&params[1]) {
                Some(k) => {
                    names.entry(k).or_insert_with(|| span_location(e.span()));
                }
                None => {
                    unknown.get_or_insert((
                        span_location(e.span()),
                        format!("`{}` reads an argument chosen at run time", e.span().text()),
                    ));
                }
            }
            for p in &params[1..] {
                walk_expr(p, &mut |x| reads_in(x, callers, names, unknown));
            }
            false
        }
        Expr::RefDot { .. } | Expr::RefBrack { .. } => {
            let path = path_of(e);
            if path.first().map(String::as_str) != Some("input") {
                return true;
            }
            match path.get(1).map(String::as_str) {
                Some("arguments") => match path.get(2) {
                    Some(k) if k != "[_]" => {
                        names
                            .entry(k.clone())
                            .or_insert_with(|| span_location(e.span()));
                    }
                    _ => {
                        unknown.get_or_insert((
                            span_location(e.span()),
                            format!(
                                "`{}` reads the arguments as a whole or by a computed key",
                                e.span().text()
                            ),
                        ));
                    }
                },
                // The tool's name; an upstream's request (`upstream_request`'s
                // input), which is no argument.
                Some("tool" | "request") => {}
                // The caller, when the catalog declares its claims: the
                // proof's caller classes follow it (`hint_caller_reads`).
                Some("caller") if callers => {}
                // The caller (a verified JWT over HTTP) is not an argument
                // the proof can enumerate: its claims are anything.
                Some("caller") => {
                    unknown.get_or_insert((
                        span_location(e.span()),
                        format!(
                            "`{}` reads the caller, whose claims the proof cannot enumerate without a caller schema",
                            e.span().text()
                        ),
                    ));
                }
                _ => {
                    unknown.get_or_insert((
                        span_location(e.span()),
                        format!("`{}` reads input by a computed key", e.span().text()),
                    ));
                }
            }
            // Indexes inside the reference may read arguments too.
            for index in ref_indexes(e) {
                walk_expr(index, &mut |x| reads_in(x, callers, names, unknown));
            }
            false
        }
        Expr::Var { value, span, .. } if value.as_string().is_ok_and(|s| s.as_ref() == "input") => {
            unknown.get_or_insert((
                span_location(span),
                "the input document is used as a whole".to_string(),
            ));
            false
        }
        _ => true,
    }
}

/// String constants the policies compare a top-level argument with:
/// `input.arguments.x == "lit"` (or `!=`, `=`, `:=`), `startswith`,
/// `endswith` or `contains` of the argument and a constant, and
/// `input.arguments.x in {"a", "b"}`, the argument also through `lower()` or
/// `upper()`; and, for `regex.match("pattern", input.arguments.x)`, a few
/// strings the pattern matches. The proof's sampling tries them, so a branch
/// taken only for such a value is reached.
pub fn argument_literals(modules: &[PolicyModule]) -> BTreeMap<String, Vec<String>> {
    fn argument(e: &Expr) -> Option<String> {
        match path_of(e).as_slice() {
            [i, a, name] if i == "input" && a == "arguments" && name != "[_]" => Some(name.clone()),
            _ => match e {
                // A folded argument compared with a constant: the constant
                // itself is a value whose fold is the constant (when it is
                // already folded, as a comparison that can hold needs).
                Expr::Call { fcn, params, .. }
                    if matches!(path_of(fcn).as_slice(), [f] if f == "lower" || f == "upper")
                        && params.len() == 1 =>
                {
                    match path_of(&params[0]).as_slice() {
                        [i, a, name] if i == "input" && a == "arguments" && name != "[_]" => {
                            Some(name.clone())
                        }
                        _ => None,
                    }
                }
                _ => None,
            },
        }
    }
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut add = |name: String, lit: String| {
        let v = out.entry(name).or_default();
        if !v.contains(&lit) {
            v.push(lit);
        }
    };
    for m in modules {
        for rule in &m.module.policy {
            walk_rule(rule, &mut |e| {
                match e {
                    Expr::BoolExpr { lhs, rhs, .. } | Expr::AssignExpr { lhs, rhs, .. } => {
                        for (a, b) in [(lhs, rhs), (rhs, lhs)] {
                            if let (Some(name), Some(lit)) = (argument(a), const_string(b)) {
                                add(name, lit);
                            }
                        }
                    }
                    Expr::Call { fcn, params, .. }
                        if matches!(
                            path_of(fcn).as_slice(),
                            [f] if ["startswith", "endswith", "contains"].contains(&f.as_str())
                        ) && params.len() == 2 =>
                    {
                        if let (Some(name), Some(lit)) =
                            (argument(&params[0]), const_string(&params[1]))
                        {
                            add(name, lit);
                        }
                    }
                    Expr::Call { fcn, params, .. }
                        if path_of(fcn) == ["regex", "match"] && params.len() == 2 =>
                    {
                        if let (Some(pattern), Some(name)) =
                            (const_string(&params[0]), argument(&params[1]))
                        {
                            for s in crate::regex_samples::pattern_strings(&pattern, 16, 3) {
                                add(name.clone(), s);
                            }
                        }
                    }
                    Expr::Membership {
                        key: None,
                        value,
                        collection,
                        ..
                    } => {
                        if let (Some(name), Expr::Set { items, .. } | Expr::Array { items, .. }) =
                            (argument(value), collection.as_ref())
                        {
                            for i in items {
                                if let Some(lit) = const_string(i) {
                                    add(name.clone(), lit);
                                }
                            }
                        }
                    }
                    _ => {}
                }
                true
            });
        }
    }
    out
}
