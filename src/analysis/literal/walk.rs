//! How the rules that can change a tool's annotations compare each
//! argument (`rego_uses`): the Rego walk that binds the package's body-less
//! rules and each rule's variables to derivations, records every
//! comparison of a derivation of `input.arguments.x` with string constants
//! as a [`Comparison`], and blocks the argument at any other use, located
//! and worded with the text of the use.
//!
//! Reading a derivation off an expression is `chain`'s; what a step or
//! test is, and running it, is `steps`'; inverting the comparisons into
//! candidates is the parent's.

use std::collections::BTreeMap;

use regorus::unstable::{AssignOp, BoolOp, Expr, Literal, Rule};
use serde_json::Value;

use super::chain::{Alias, Chain, alias_of, chain, local_of, number};
use super::{Comparison, Test, Uses};
use crate::diag::Location;
use crate::rego::reads::hint_rules;
use crate::rego::visit::walk_rule;
use crate::rego::{PolicyModule, const_string, constant_rules, path_of};

/// The builtins a derivation may go through, as the messages say it.
const FOLLOWED: &str = "lower, upper, trim*, split(…)[i], substring, concat and sprintf";
/// The most comparisons of one argument followed.
const MAX_COMPARISONS: usize = 64;

pub(super) fn rego_uses(
    modules: &[PolicyModule],
    package: Option<&str>,
    out: &mut BTreeMap<String, Uses>,
) {
    // The rules that can change the annotations (as `reads` counts them).
    let counts = hint_rules(modules, package);

    // Package rules bound to a derivation; in file order, so one may build
    // on an earlier one.
    let mut aliases: Vec<Alias> = Vec::new();
    let mut alias_rules: Vec<*const Rule> = Vec::new();
    for c in constant_rules(modules) {
        let lookup = |e: &Expr| alias_of(&aliases, &c.module.package, e);
        if let Some(ch) = chain(c.value, &lookup) {
            aliases.push(Alias {
                package: c.module.package.clone(),
                name: c.name.clone(),
                chain: ch,
                data_path: c.data_path(),
            });
            alias_rules.push(c.rule as *const Rule);
        }
    }
    // An alias imported, or read as part of a larger document, is not
    // followed.
    for m in modules {
        for imp in &m.module.imports {
            let p = path_of(&imp.refr);
            for a in &aliases {
                if p.first().map(String::as_str) == Some("data") && a.data_path.starts_with(&p)
                    || p.starts_with(&a.data_path)
                {
                    block(
                        out,
                        &a.chain.argument,
                        start_location(&imp.span),
                        format!(
                            "`{}` imports the rule `{}` derived from it",
                            imp.span.text(),
                            a.name
                        ),
                    );
                }
            }
        }
    }

    for (ri, (m, rule)) in modules
        .iter()
        .flat_map(|m| m.module.policy.iter().map(move |r| (m, r)))
        .enumerate()
    {
        if !counts(m, rule) || alias_rules.contains(&(rule.as_ref() as *const Rule)) {
            continue;
        }
        // The bodies, and the spans of statements under `not`.
        let mut bodies: Vec<(u32, u32)> = Vec::new();
        let mut negated: Vec<(u32, u32)> = Vec::new();
        if let Rule::Spec { bodies: bs, .. } = rule.as_ref() {
            for b in bs {
                bodies.push((b.query.span.start, b.query.span.end));
                for s in &b.query.stmts {
                    if let Literal::NotExpr { span, .. } = &s.literal {
                        negated.push((span.start, span.end));
                    }
                }
            }
        }
        let within = |e: &Expr, r: &(u32, u32)| e.span().start >= r.0 && e.span().end <= r.1;
        let group = |e: &Expr| {
            (
                ri,
                bodies
                    .iter()
                    .position(|b| within(e, b))
                    .unwrap_or(usize::MAX),
            )
        };
        let is_negated = |e: &Expr| negated.iter().any(|n| within(e, n));

        // Variables of this rule bound to a derivation, in order.
        let mut locals: BTreeMap<String, Chain> = BTreeMap::new();
        let mut clash: Option<(Location, String, String)> = None;
        walk_rule(rule, &mut |e| {
            if let Expr::AssignExpr { lhs, rhs, .. } = e
                && let Expr::Var { value, .. } = lhs.as_ref()
                && let Ok(v) = value.as_string()
            {
                let lookup = |x: &Expr| local_of(&locals, &aliases, &m.package, x);
                if let Some(c) = chain(rhs, &lookup) {
                    match locals.get(v.as_ref()) {
                        Some(old) if *old != c => {
                            clash.get_or_insert((
                                start_location(e.span()),
                                c.argument.clone(),
                                v.to_string(),
                            ));
                        }
                        _ => {
                            locals.insert(v.to_string(), c);
                        }
                    }
                }
            }
            true
        });
        if let Some((at, arg, v)) = clash {
            block(
                out,
                &arg,
                at,
                format!("variable `{v}` is bound to two derivations"),
            );
        }
        let lookup = |x: &Expr| local_of(&locals, &aliases, &m.package, x);
        let derived = |x: &Expr| chain(x, &lookup).filter(|c| c.split.is_none());
        // A reference that starts with a derivation of an argument.
        let mentions = |x: &Expr| -> Option<String> {
            if !matches!(
                x,
                Expr::RefDot { .. } | Expr::RefBrack { .. } | Expr::Var { .. }
            ) {
                return None;
            }
            let p = path_of(x);
            if let [i, a, n, ..] = p.as_slice()
                && i == "input"
                && a == "arguments"
                && n != "[_]"
            {
                return Some(n.clone());
            }
            if let Some(first) = p.first() {
                if let Some(c) = locals.get(first) {
                    return Some(c.argument.clone());
                }
                if let Some(a) = aliases
                    .iter()
                    .find(|a| a.package == m.package && &a.name == first)
                {
                    return Some(a.chain.argument.clone());
                }
            }
            if p.first().map(String::as_str) == Some("data") {
                // The alias itself, deeper into it, or a document holding it.
                return aliases
                    .iter()
                    .find(|a| {
                        p.starts_with(&a.data_path)
                            || a.data_path
                                .iter()
                                .zip(&p)
                                .all(|(x, y)| y == "[_]" || x == y)
                    })
                    .map(|a| a.chain.argument.clone());
            }
            None
        };
        let push = |out: &mut BTreeMap<String, Uses>,
                    c: Chain,
                    test: Test,
                    ne: bool,
                    e: &Expr,
                    text: String| {
            let negated = is_negated(e);
            let u = out.entry(c.argument).or_default();
            if u.comparisons.len() < MAX_COMPARISONS {
                u.comparisons.push(Comparison {
                    steps: c.steps,
                    test,
                    want: !(ne ^ negated),
                    ne,
                    negated,
                    group: group(e),
                    text,
                    location: start_location(e.span()),
                });
            } else {
                u.blocked.get_or_insert_with(|| {
                    (
                        start_location(e.span()),
                        format!("it is compared more than {MAX_COMPARISONS} times"),
                    )
                });
            }
        };
        walk_rule(rule, &mut |e| {
            let compared = match e {
                Expr::BoolExpr {
                    op: op @ (BoolOp::Eq | BoolOp::Ne),
                    lhs,
                    rhs,
                    ..
                } => Some((lhs, rhs, matches!(op, BoolOp::Ne))),
                Expr::AssignExpr {
                    op: AssignOp::Eq,
                    lhs,
                    rhs,
                    ..
                } => Some((lhs, rhs, false)),
                _ => None,
            };
            if let Some((lhs, rhs, ne)) = compared {
                for (a, b) in [(lhs, rhs), (rhs, lhs)] {
                    let op = if ne { "!=" } else { "==" };
                    if let (Some(c), Some(lit)) = (derived(a), const_string(b)) {
                        // Rebuilt: the span of a comparison with a string
                        // constant ends before the closing quote.
                        let text =
                            format!("{} {op} {}", a.span().text(), Value::String(lit.clone()));
                        push(out, c, Test::OneOf(vec![lit]), ne, e, text);
                        return false;
                    }
                    // indexof(d, "lit") == n
                    if let Expr::Call { fcn, params, .. } = a.as_ref()
                        && path_of(fcn) == ["indexof"]
                        && let [p, l] = params.as_slice()
                        && let (Some(c), Some(l), Some(n)) =
                            (derived(p), const_string(l), number(b))
                    {
                        let text = format!("{} {op} {n}", a.span().text());
                        push(out, c, Test::IndexOf(l, n), ne, e, text);
                        return false;
                    }
                }
            }
            match e {
                Expr::Call { fcn, params, .. } if params.len() == 2 => {
                    let f = path_of(fcn);
                    // regex.match("pattern", d), a pattern OPA's reading
                    // of compiles.
                    if f == ["regex", "match"]
                        && let (Some(p), Some(c)) = (const_string(&params[0]), derived(&params[1]))
                        && let Ok(re) = crate::opa_builtins::regex::compile(&p)
                    {
                        let text = full_text(e);
                        push(out, c, Test::Regex(p, re), false, e, text);
                        return false;
                    }
                    if let [f] = f.as_slice()
                        && ["startswith", "endswith", "contains"].contains(&f.as_str())
                        && let (Some(c), Some(lit)) =
                            (derived(&params[0]), const_string(&params[1]))
                    {
                        let test = match f.as_str() {
                            "startswith" => Test::Prefix(lit),
                            "endswith" => Test::Suffix(lit),
                            _ => Test::Contains(lit),
                        };
                        push(out, c, test, false, e, e.span().text().to_string());
                        return false;
                    }
                }
                Expr::Membership {
                    key: None,
                    value,
                    collection,
                    ..
                } => {
                    if let (Some(c), Expr::Set { items, .. } | Expr::Array { items, .. }) =
                        (derived(value), collection.as_ref())
                        && let Some(lits) = items
                            .iter()
                            .map(|i| const_string(i))
                            .collect::<Option<Vec<String>>>()
                    {
                        push(
                            out,
                            c,
                            Test::OneOf(lits),
                            false,
                            e,
                            e.span().text().to_string(),
                        );
                        return false;
                    }
                }
                _ => {}
            }
            // `v := d`: the binding itself.
            if let Expr::AssignExpr { lhs, rhs, .. } = e
                && let Expr::Var { value, .. } = lhs.as_ref()
                && value
                    .as_string()
                    .is_ok_and(|v| locals.contains_key(v.as_ref()))
                && chain(rhs, &lookup).is_some()
            {
                return false;
            }
            if let Some(arg) = mentions(e) {
                let (used, at, compared) = use_text(rule, e, &lookup);
                let why = match compared {
                    Some(cmp) => format!(
                        "`{cmp}` compares `{used}`, which they do not invert (they follow {FOLLOWED})"
                    ),
                    None => format!(
                        "`{used}` is no comparison with string constants of it or of what {FOLLOWED} derive from it"
                    ),
                };
                block(out, &arg, at, why);
                return false;
            }
            true
        });
    }
}

/// The text of the use `e` is part of: past the derivation it starts (the
/// expression of `rule` directly holding the outermost derivation), so
/// `count(split(x, "/"))` rather than `x`.
fn use_text(
    rule: &Rule,
    e: &Expr,
    lookup: &dyn Fn(&Expr) -> Option<Chain>,
) -> (String, Location, Option<String>) {
    let mut target = e as *const Expr;
    let mut text = e.span().text().to_string();
    let mut at = start_location(e.span());
    let mut past_use = false;
    let mut use_text = String::new();
    loop {
        let mut found: Option<(*const Expr, String, bool, Location, bool)> = None;
        walk_rule(rule, &mut |parent| {
            if found.is_some() {
                return false;
            }
            let mut direct = false;
            let mut depth = 0;
            crate::rego::visit::walk_expr(parent, &mut |c| {
                depth += 1;
                if depth > 1 && std::ptr::eq(c, target) {
                    direct = true;
                }
                depth == 1
            });
            if direct {
                found = Some((
                    parent as *const Expr,
                    full_text(parent),
                    chain(parent, lookup).is_some(),
                    start_location(parent.span()),
                    matches!(
                        parent,
                        Expr::BoolExpr { .. } | Expr::AssignExpr { .. } | Expr::Membership { .. }
                    ),
                ));
            }
            true
        });
        match found {
            // The comparison the use is in, one level up.
            Some((_, t, _, l, true)) if past_use => return (use_text, l, Some(t)),
            Some(_) if past_use => return (use_text, at, None),
            Some((p, t, derivation, l, _)) => {
                text = t;
                at = l;
                if !derivation {
                    past_use = true;
                    use_text = text.clone();
                }
                target = p;
            }
            None if past_use => return (use_text, at, None),
            None => return (text, at, None),
        }
    }
}

/// Where `span` starts (regorus' own line and column point elsewhere in
/// some expressions: at the operator of a comparison, the last field of a
/// reference).
fn start_location(span: &regorus::unstable::Span) -> Location {
    let text = span.source.contents();
    let start = (span.start as usize).min(text.len());
    let before = text.get(..start).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    Location::new(span.source.file().to_string(), line, col)
}

/// `e`'s text; a comparison whose right side is a string constant has a
/// span that ends before the closing quote, which is put back.
fn full_text(e: &Expr) -> String {
    let t = e.span().text().to_string();
    match e {
        Expr::BoolExpr { rhs, .. } | Expr::AssignExpr { rhs, .. }
            if matches!(rhs.as_ref(), Expr::String { .. }) && !t.ends_with('"') =>
        {
            format!("{t}\"")
        }
        _ => t,
    }
}
fn block(out: &mut BTreeMap<String, Uses>, arg: &str, at: Location, why: String) {
    out.entry(arg.to_string())
        .or_default()
        .blocked
        .get_or_insert((at, why));
}
