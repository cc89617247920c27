//! How the rules that can change a tool's annotations use each string
//! argument or caller claim (`rego_uses`): the Rego walk that records every
//! `==`, `!=`, `in`, `startswith`, `endswith` and `contains` with a string
//! constant, through variables and rules bound to exactly the argument
//! (`Alias`, folded by `lower`/`upper` or not) and plain `import data.PKG`s
//! for claims, and blocks the argument, located, at any other use.
//!
//! What a use is ([`Uses`], [`Fold`], `Root`) is the parent's; what the
//! uses partition into, and which strings represent the classes, is
//! `classes`'.

use std::collections::{BTreeMap, BTreeSet};

use regorus::unstable::{AssignOp, BoolOp, Expr, Rule};

use super::{Fold, Root, Uses, add};
use crate::rego::reads::hint_rules;
use crate::rego::visit::{ref_indexes, walk_expr, walk_rule};
use crate::rego::{PolicyModule, const_string, constant_rules, path_of, span_location};

/// A rule of a package bound to exactly an argument.
struct Alias {
    package: String,
    name: String,
    argument: String,
    fold: Fold,
    data_path: Vec<String>,
}

fn exact_argument(e: &Expr, root: Root) -> Option<String> {
    let p = path_of(e);
    let (n, len) = root.named(&p)?;
    (p.len() == len).then_some(n)
}

/// `input.arguments.x`, `lower(input.arguments.x)` or
/// `upper(input.arguments.x)` (a claim likewise).
fn folded_argument(e: &Expr, root: Root) -> Option<(String, Fold)> {
    if let Some((inner, fold)) = fold_call(e) {
        return exact_argument(inner, root).map(|a| (a, fold));
    }
    exact_argument(e, root).map(|a| (a, Fold::None))
}

/// `lower(e)` or `upper(e)`: `e` and the fold.
fn fold_call(e: &Expr) -> Option<(&Expr, Fold)> {
    if let Expr::Call { fcn, params, .. } = e
        && let [p] = params.as_slice()
    {
        let fold = match path_of(fcn).as_slice() {
            [f] if f == "lower" => Fold::Lower,
            [f] if f == "upper" => Fold::Upper,
            _ => return None,
        };
        return Some((p, fold));
    }
    None
}

/// The uses of `arg`, for a predicate on it folded by `fold`; `None`, and
/// the argument blocked, when another use compares it folded otherwise.
fn record<'a>(
    out: &'a mut BTreeMap<String, Uses>,
    arg: &str,
    fold: Fold,
    e: &Expr,
) -> Option<&'a mut Uses> {
    let u = out.entry(arg.to_string()).or_default();
    match u.fold {
        Some(f) if f != fold => {
            let as_is = |f: Fold| {
                f.name()
                    .map_or("as it is".to_string(), |n| format!("by {n}()"))
            };
            u.blocked.get_or_insert_with(|| {
                (
                    span_location(e.span()),
                    format!(
                        "`{}` compares it {}, another use {}",
                        e.span().text(),
                        as_is(fold),
                        as_is(f)
                    ),
                )
            });
            None
        }
        _ => {
            u.fold = Some(fold);
            Some(u)
        }
    }
}

fn block(out: &mut BTreeMap<String, Uses>, arg: &str, e: &Expr, why: String) {
    let u = out.entry(arg.to_string()).or_default();
    u.blocked
        .get_or_insert_with(|| (span_location(e.span()), why));
}

pub(super) fn rego_uses(
    modules: &[PolicyModule],
    package: Option<&str>,
    root: Root,
    out: &mut BTreeMap<String, Uses>,
) {
    // The rules that can change the annotations.
    let counts = hint_rules(modules, package);

    // Rules bound to exactly an argument.
    let mut aliases: Vec<Alias> = Vec::new();
    let mut alias_rules: BTreeSet<*const Rule> = BTreeSet::new();
    for c in constant_rules(modules) {
        if let Some((argument, fold)) = folded_argument(c.value, root) {
            aliases.push(Alias {
                package: c.module.package.clone(),
                name: c.name.clone(),
                argument,
                fold,
                data_path: c.data_path(),
            });
            alias_rules.insert(c.rule as *const Rule);
        }
    }
    // An alias read as part of a larger document (`data.tools`, an import,
    // a computed key) escapes: its argument is not partitioned. For claims,
    // a plain import (`import data.team`) is followed instead: references
    // through it are read as the paths it names (`team.tenant` is
    // `data.team.tenant`), so only a read of the larger document escapes.
    for m in modules {
        let imports = if root == Root::Claims {
            imports_of(m)
        } else {
            BTreeMap::new()
        };
        for imp in &m.module.imports {
            let p = path_of(&imp.refr);
            if root == Root::Claims && !p.iter().any(|c| c == "[_]") {
                continue;
            }
            for a in &aliases {
                if p.first().map(String::as_str) == Some("data")
                    && (reaches(&p, a) || p.starts_with(&a.data_path))
                {
                    block(
                        out,
                        &a.argument,
                        &imp.refr,
                        format!(
                            "`{}` imports the rule `{}` bound to it",
                            imp.span.text(),
                            a.name
                        ),
                    );
                }
            }
        }
        for rule in &m.module.policy {
            walk_rule(rule, &mut |e| escapes(e, &aliases, &imports, out));
        }
    }

    for m in modules {
        let imports = if root == Root::Claims {
            imports_of(m)
        } else {
            BTreeMap::new()
        };
        for rule in &m.module.policy {
            if !counts(m, rule) || alias_rules.contains(&(rule.as_ref() as *const Rule)) {
                continue;
            }
            // Variables of this rule bound to exactly an argument.
            let mut locals: BTreeMap<String, (String, Fold)> = BTreeMap::new();
            let mut clash: Vec<String> = Vec::new();
            let pkg_alias = |name: &str| {
                aliases
                    .iter()
                    .find(|a| a.package == m.package && a.name == name)
                    .map(|a| (a.argument.clone(), a.fold))
            };
            // The argument, an alias of it, or either folded once.
            let unfolded = |e: &Expr| {
                folded_argument(e, root).or_else(|| match expand(path_of(e), &imports).as_slice() {
                    [v] => pkg_alias(v),
                    p => aliases
                        .iter()
                        .find(|a| a.data_path == p)
                        .map(|a| (a.argument.clone(), a.fold)),
                })
            };
            let direct = |e: &Expr| {
                unfolded(e).or_else(|| {
                    let (inner, fold) = fold_call(e)?;
                    match unfolded(inner)? {
                        (a, Fold::None) => Some((a, fold)),
                        _ => None,
                    }
                })
            };
            walk_rule(rule, &mut |e| {
                if let Expr::AssignExpr { lhs, rhs, .. } = e
                    && let Expr::Var { value, .. } = lhs.as_ref()
                    && let Ok(v) = value.as_string()
                    && let Some(arg) = direct(rhs)
                {
                    match locals.get(v.as_ref()) {
                        Some(a) if *a != arg => clash.push(v.to_string()),
                        _ => {
                            locals.insert(v.to_string(), arg);
                        }
                    }
                }
                true
            });
            // `x` exactly, by any of its names.
            let local = |e: &Expr| -> Option<(String, Fold)> {
                if let Expr::Var { value, .. } = e
                    && let Ok(v) = value.as_string()
                    && let Some(a) = locals.get(v.as_ref())
                {
                    return Some(a.clone());
                }
                direct(e)
            };
            // `x` exactly or folded once: `lower(p)` with `p` bound to it.
            let is_x = |e: &Expr| -> Option<(String, Fold)> {
                local(e).or_else(|| {
                    let (inner, fold) = fold_call(e)?;
                    match local(inner)? {
                        (a, Fold::None) => Some((a, fold)),
                        _ => None,
                    }
                })
            };
            // A reference that starts with `x` (and may go further into it).
            let mentions = |e: &Expr| -> Option<String> {
                if !matches!(
                    e,
                    Expr::RefDot { .. } | Expr::RefBrack { .. } | Expr::Var { .. }
                ) {
                    return None;
                }
                let p = path_of(e);
                if let Some((n, _)) = root.named(&p) {
                    return Some(n);
                }
                if let Some(first) = p.first() {
                    if let Some((a, _)) = locals.get(first) {
                        return Some(a.clone());
                    }
                    if let Some((a, _)) = pkg_alias(first) {
                        return Some(a);
                    }
                }
                let p = expand(p, &imports);
                aliases
                    .iter()
                    .find(|a| p.starts_with(&a.data_path))
                    .map(|a| a.argument.clone())
            };
            for v in &clash {
                if let Some((a, _)) = locals.get(v) {
                    let a = a.clone();
                    let u = out.entry(a).or_default();
                    u.blocked.get_or_insert_with(|| {
                        (
                            span_location(rule.span()),
                            format!("variable `{v}` is bound to two arguments"),
                        )
                    });
                }
            }
            walk_rule(rule, &mut |e| {
                match e {
                    Expr::BoolExpr {
                        op: BoolOp::Eq | BoolOp::Ne,
                        lhs,
                        rhs,
                        ..
                    }
                    | Expr::AssignExpr {
                        op: AssignOp::Eq,
                        lhs,
                        rhs,
                        ..
                    } => {
                        for (a, b) in [(lhs, rhs), (rhs, lhs)] {
                            if let (Some((arg, fold)), Some(lit)) = (is_x(a), const_string(b)) {
                                if let Some(u) = record(out, &arg, fold, e) {
                                    add(&mut u.equals, lit);
                                }
                                return false;
                            }
                        }
                    }
                    Expr::Call { fcn, params, .. } if params.len() == 2 => {
                        let f = path_of(fcn);
                        if let [f] = f.as_slice()
                            && ["startswith", "endswith", "contains"].contains(&f.as_str())
                            && let (Some((arg, fold)), Some(lit)) =
                                (is_x(&params[0]), const_string(&params[1]))
                        {
                            if let Some(u) = record(out, &arg, fold, e) {
                                match f.as_str() {
                                    "startswith" => add(&mut u.prefixes, lit),
                                    "endswith" => add(&mut u.suffixes, lit),
                                    _ => add(&mut u.contains, lit),
                                }
                            }
                            return false;
                        }
                    }
                    Expr::Membership {
                        key: None,
                        value,
                        collection,
                        ..
                    } => {
                        if let (
                            Some((arg, fold)),
                            Expr::Set { items, .. } | Expr::Array { items, .. },
                        ) = (is_x(value), collection.as_ref())
                        {
                            let lits: Option<Vec<String>> =
                                items.iter().map(|i| const_string(i)).collect();
                            if let Some(lits) = lits {
                                if let Some(u) = record(out, &arg, fold, e) {
                                    for l in lits {
                                        add(&mut u.equals, l);
                                    }
                                }
                                return false;
                            }
                        }
                        // `"ops" in groups`: a claim's members (an
                        // argument's are not followed).
                        if root == Root::Claims
                            && let (Some(lit), Some((arg, Fold::None))) =
                                (const_string(value), is_x(collection))
                        {
                            let u = out.entry(arg).or_default();
                            u.members_at.get_or_insert_with(|| span_location(e.span()));
                            add(&mut u.members, lit);
                            return false;
                        }
                    }
                    _ => {}
                }
                // `object.get(input.arguments, "x", default)`: a read with a
                // default, not followed.
                if let Expr::Call { fcn, params, .. } = e
                    && path_of(fcn) == ["object", "get"]
                    && params.len() >= 2
                    && path_of(&params[0]) == ["input", "arguments"]
                    && let Some(arg) = const_string(&params[1])
                {
                    block(
                        out,
                        &arg,
                        e,
                        format!(
                            "`{}` reads it with a default, which the partition does not follow",
                            e.span().text()
                        ),
                    );
                }
                // `v := x`: the binding itself.
                if let Expr::AssignExpr { lhs, rhs, .. } = e
                    && let Expr::Var { value, .. } = lhs.as_ref()
                    && value
                        .as_string()
                        .is_ok_and(|v| locals.contains_key(v.as_ref()))
                    && direct(rhs).is_some()
                {
                    return false;
                }
                if let Some(arg) = mentions(e) {
                    block(
                        out,
                        &arg,
                        e,
                        format!(
                            "`{}` uses it other than by ==, !=, in, startswith, endswith or contains with a string constant (of it or of lower() or upper() of it)",
                            enclosing_text(rule, e)
                        ),
                    );
                    return false;
                }
                true
            });
        }
    }
}

/// Whether `path` may read the rule `alias` as part of a larger document
/// (`data.t`, `data.t[k]`), not by its own path.
fn reaches(path: &[String], alias: &Alias) -> bool {
    let n = path.len().min(alias.data_path.len());
    path[..n]
        .iter()
        .zip(&alias.data_path[..n])
        .all(|(a, b)| a == "[_]" || a == b)
        && (path.len() < alias.data_path.len() || path[..n].iter().any(|c| c == "[_]"))
}

/// The plain `data` imports of `m`, by the name they bind (`import
/// data.team` binds `team`, `import data.x as y` binds `y`).
fn imports_of(m: &PolicyModule) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for imp in &m.module.imports {
        let p = path_of(&imp.refr);
        if p.first().map(String::as_str) != Some("data") || p.iter().any(|c| c == "[_]") {
            continue;
        }
        let name = match &imp.r#as {
            Some(a) => a.text().to_string(),
            None => p.last().cloned().unwrap_or_default(),
        };
        out.insert(name, p);
    }
    out
}

/// `p` with its first name read through `imports`.
fn expand(p: Vec<String>, imports: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    match p.first().and_then(|f| imports.get(f)) {
        Some(full) => full.iter().cloned().chain(p.into_iter().skip(1)).collect(),
        None => p,
    }
}

/// Blocks the arguments of aliases `e` reads as part of a document; walks a
/// reference's indexes but not its prefixes (`data.t` in `data.t.path`).
fn escapes(
    e: &Expr,
    aliases: &[Alias],
    imports: &BTreeMap<String, Vec<String>>,
    out: &mut BTreeMap<String, Uses>,
) -> bool {
    if !matches!(
        e,
        Expr::RefDot { .. } | Expr::RefBrack { .. } | Expr::Var { .. }
    ) {
        return true;
    }
    let p = expand(path_of(e), imports);
    if p.first().map(String::as_str) == Some("data") {
        for a in aliases {
            if reaches(&p, a) {
                block(
                    out,
                    &a.argument,
                    e,
                    format!(
                        "`{}` reads the rule `{}` bound to it as part of a document",
                        e.span().text(),
                        a.name
                    ),
                );
            }
        }
    }
    for index in ref_indexes(e) {
        walk_expr(index, &mut |x| escapes(x, aliases, imports, out));
    }
    false
}

/// The text of the smallest expression of `rule` that holds `e` as a
/// direct child, or `e`'s own text: `lower(path)` rather than `path`, and
/// past a case fold, `trim_space(lower(path))`.
fn enclosing_text(rule: &Rule, e: &Expr) -> String {
    let mut target = e as *const Expr;
    let mut text = e.span().text().to_string();
    loop {
        let mut found: Option<(*const Expr, String, bool)> = None;
        walk_rule(rule, &mut |parent| {
            if found.is_some() {
                return false;
            }
            let mut direct = false;
            let mut depth = 0;
            walk_expr(parent, &mut |c| {
                depth += 1;
                if depth > 1 && std::ptr::eq(c, target) {
                    direct = true;
                }
                depth == 1
            });
            if direct {
                found = Some((
                    parent as *const Expr,
                    parent.span().text().to_string(),
                    fold_call(parent).is_some(),
                ));
            }
            true
        });
        match found {
            Some((p, t, fold)) => {
                text = t;
                if !fold {
                    return text;
                }
                target = p;
            }
            None => return text,
        }
    }
}
