//! A finite partition of a free string argument, for the worst-case proof.
//!
//! A string argument `x` whose every use that can change the annotations is
//! one of `x == "lit"`, `x != "lit"`, `x in {"a", "b"}` (or a YAML `when`
//! value), `startswith(x, "lit")`, `endswith(x, "lit")` or
//! `contains(x, "lit")` can only influence the decision through the truth
//! of those predicates. `x` may be the argument itself
//! (`input.arguments.x`), a variable bound to exactly it in the same rule
//! (`p := input.arguments.x`) or a rule of the package bound to exactly it
//! (`path := input.arguments.path`, without a body). Any other use (passed
//! to another builtin or function, used as a key, compared by order, read as
//! part of a larger document…) leaves the argument unpartitioned, and the
//! proof falls back to sampling.
//!
//! Representatives, one per achievable truth vector: every equality literal
//! itself, plus, for every prefix `p` in {none} ∪ startswith-literals, every
//! subset `C` of the contains-literals and every suffix `s` in {none} ∪
//! endswith-literals, the string `p SEP c1 SEP … SEP s`, where `SEP` is a
//! character that occurs in no literal.
//!
//! Why this is complete: take any string `w`. If it equals an equality
//! literal, that literal is a representative. Otherwise let `p` be the
//! longest prefix literal `w` starts with, `s` the longest suffix literal it
//! ends with, and `C` the contains-literals it contains, and `r` the
//! candidate built from them. No literal contains `SEP`, so any literal
//! occurring in, starting or ending `r` lies inside one piece; every piece is
//! a substring (`p` a prefix, `s` a suffix) of `w`, so `r` makes a predicate
//! true only if `w` does. Conversely a prefix literal of `w` is a prefix of
//! the longest one `p` (both are prefixes of `w`), so of `r`; likewise for
//! suffixes, and every contains-literal of `w` is a piece of `r`. `r` holds
//! `SEP`, so it equals no literal, as `w` does not. So `r` and `w` make
//! every predicate agree, and the decision cannot tell them apart.
//!
//! The representatives the proof resolves must be values inputSchema
//! accepts, and a schema's `pattern` or `minLength` often refuses the
//! canonical `r` (`"x"` is no absolute path). So each class is represented
//! by the first candidate the schema accepts among: `r` with each filler
//! character in turn as `SEP` (the first one repeated up to `minLength`),
//! then with one more character before (no prefix) or after (no suffix),
//! then strings generated from the `pattern`, then the pieces with no
//! separator at all. A candidate stands for the
//! class only when its truth vector, computed, is the canonical `r`'s: the
//! completeness argument above is about the canonical representatives, and
//! a candidate with the same vector is, for the decision, the same value.
//! A class no candidate fits fails the partition: it may hold values the
//! schema accepts (a pattern can allow a class without allowing the shapes
//! tried), so it is never dropped.
//!
//! Case folds: when every such use compares `lower(x)` instead of `x`
//! (directly, through a variable `o := lower(input.arguments.x)` or a rule
//! `owner := lower(input.arguments.owner)`; likewise `upper`), the decision
//! depends on `x` only through the predicates on `y = lower(x)`, and the
//! partition is of `y`: every `y` has the vector of some canonical
//! representative, and a candidate `r` stands for a class when the vector
//! of `lower(r)` (computed as regorus computes it) is the class's. A
//! constant `lower(x)` can never hold (one with an ASCII capital: no
//! character lowercases to one; for `upper`, an ASCII small letter) makes
//! its predicate false for every `x` and is left out; an equality constant
//! that is not its own fold has no representative, and the argument is not
//! partitioned. A mix of folded and unfolded uses of one argument (or of
//! `lower` and `upper`) is not followed: the predicates would be on two
//! strings, `x` and `lower(x)`, whose truths are linked in ways the
//! construction above does not track.
//!
//! Caller claims (`input.caller.claims.x`) are partitioned the same way
//! ([`claim_uses`], [`partition_claim`]) for the proof's caller classes
//! (`analysis/caller_classes`), which also need the constants tested for
//! membership in an array claim (`"ops" in input.caller.claims.groups`);
//! for claims a plain `import data.PKG` is followed rather than taken as
//! reading a bound rule as part of a document.
//!
//! Which arguments the annotations depend on, and evaluating the
//! representatives, are the proof's (`analysis/proof`).

use std::collections::{BTreeMap, BTreeSet};

use regorus::unstable::{AssignOp, BoolOp, Expr, Rule, RuleHead};
use serde_json::{Map, Value, json};

use crate::catalog::{Tool, schema};
use crate::diag::Location;
use crate::rego::reads::hint_rules;
use crate::rego::visit::{ref_indexes, walk_expr, walk_rule};
use crate::rego::{PolicyModule, const_string, path_of, span_location};

/// The most contains-literals one argument may have (2^n subsets).
const MAX_CONTAINS: usize = 6;
/// The most classes one argument may have.
const MAX_CLASSES: usize = 256;

/// What the predicates compare: the argument itself, `lower(x)` or
/// `upper(x)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Fold {
    #[default]
    None,
    Lower,
    Upper,
}

impl Fold {
    /// `x` as the rules see it, folded as regorus folds it.
    pub fn apply(self, x: &str) -> String {
        match self {
            Fold::None => x.to_string(),
            Fold::Lower => x.to_lowercase(),
            Fold::Upper => x.to_uppercase(),
        }
    }

    pub fn name(self) -> Option<&'static str> {
        match self {
            Fold::None => None,
            Fold::Lower => Some("lower"),
            Fold::Upper => Some("upper"),
        }
    }

    /// Whether a folded string can hold `lit` at all: `lower(x)` holds no
    /// ASCII capital (no character's lowercase mapping is one), `upper(x)`
    /// no ASCII small letter.
    fn can_hold(self, lit: &str) -> bool {
        match self {
            Fold::None => true,
            Fold::Lower => !lit.chars().any(|c| c.is_ascii_uppercase()),
            Fold::Upper => !lit.chars().any(|c| c.is_ascii_lowercase()),
        }
    }
}

/// How the rules use one string argument.
#[derive(Debug, Clone, Default)]
pub struct Uses {
    /// What the predicates compare, once one is seen.
    pub fold: Option<Fold>,
    pub equals: Vec<String>,
    pub prefixes: Vec<String>,
    pub suffixes: Vec<String>,
    pub contains: Vec<String>,
    /// Constants tested for membership in it (`"ops" in
    /// input.caller.claims.groups`): followed for caller claims only
    /// ([`claim_uses`]), with where the first is.
    pub members: Vec<String>,
    pub members_at: Option<Location>,
    /// A use that is none of the recognized predicates, if any: where and why.
    pub blocked: Option<(Location, String)>,
}

/// What the analysis follows: a tool argument (`input.arguments.x`) or a
/// caller claim (`input.caller.claims.x`; `input.caller.subject` and
/// `input.caller.issuer` are the claims `sub` and `iss`, which a caller
/// always carries alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Root {
    Arguments,
    Claims,
}

impl Root {
    /// The argument or claim `p` starts with, and how many components name it.
    fn named(self, p: &[String]) -> Option<(String, usize)> {
        match (self, p) {
            (Root::Arguments, [i, a, n, ..]) if i == "input" && a == "arguments" && n != "[_]" => {
                Some((n.clone(), 3))
            }
            (Root::Claims, [i, c, k, n, ..])
                if i == "input" && c == "caller" && k == "claims" && n != "[_]" =>
            {
                Some((n.clone(), 4))
            }
            (Root::Claims, [i, c, f, ..])
                if i == "input" && c == "caller" && (f == "subject" || f == "issuer") =>
            {
                Some((if f == "subject" { "sub" } else { "iss" }.to_string(), 3))
            }
            _ => None,
        }
    }
}

/// The classes of one argument and a representative of each.
#[derive(Debug, Clone)]
pub struct Partition {
    pub argument: String,
    pub fold: Fold,
    pub equals: Vec<String>,
    pub prefixes: Vec<String>,
    pub suffixes: Vec<String>,
    pub contains: Vec<String>,
    pub representatives: Vec<String>,
}

impl Partition {
    /// `path: 4 classes from startswith "/etc", == "x"`.
    pub fn describe(&self) -> String {
        let mut from: Vec<String> = Vec::new();
        let q = |s: &String| serde_json::to_string(s).unwrap_or_default();
        from.extend(self.equals.iter().map(|l| format!("== {}", q(l))));
        from.extend(self.prefixes.iter().map(|l| format!("startswith {}", q(l))));
        from.extend(self.suffixes.iter().map(|l| format!("endswith {}", q(l))));
        from.extend(self.contains.iter().map(|l| format!("contains {}", q(l))));
        let n = self.representatives.len();
        format!(
            "{}: {n} class{}{}",
            match self.fold.name() {
                Some(f) => format!("{f}({})", self.argument),
                None => self.argument.clone(),
            },
            if n == 1 { "" } else { "es" },
            if from.is_empty() {
                String::new()
            } else {
                format!(" from {}", from.join(", "))
            }
        )
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "argument": self.argument,
            "classes": self.representatives.len(),
            "equals": self.equals,
            "startswith": self.prefixes,
            "endswith": self.suffixes,
            "contains": self.contains,
            "representatives": self.representatives,
        });
        // `fold` only when the predicates compare `lower(x)` or `upper(x)`.
        if let (Some(f), Value::Object(m)) = (self.fold.name(), &mut v) {
            m.insert("fold".to_string(), json!(f));
        }
        v
    }
}

fn add(v: &mut Vec<String>, s: String) {
    if !v.contains(&s) {
        v.push(s);
    }
}

/// How the rules that can change `tool`'s annotations use each argument
/// (YAML `when` values and Rego).
pub fn uses(tool: &Tool) -> BTreeMap<String, Uses> {
    let mut out: BTreeMap<String, Uses> = BTreeMap::new();
    for rule in &tool.rules {
        for (k, v) in &rule.when {
            let u = out.entry(k.clone()).or_default();
            u.fold = Some(Fold::None);
            // Values that are not strings never equal a string.
            match v {
                Value::Array(vs) => vs
                    .iter()
                    .filter_map(Value::as_str)
                    .for_each(|s| add(&mut u.equals, s.to_string())),
                Value::String(s) => add(&mut u.equals, s.clone()),
                _ => {}
            }
        }
    }
    if tool.is_resolvable() {
        let modules = tool.modules();
        rego_uses(&modules, tool.policy.as_deref(), Root::Arguments, &mut out);
    }
    out
}

/// How the rules that can change `tool`'s annotations use each caller
/// claim, as [`uses`] reads arguments, plus membership tests (`"ops" in
/// input.caller.claims.groups`), which an array claim's classes follow.
pub fn claim_uses(tool: &Tool) -> BTreeMap<String, Uses> {
    let mut out = BTreeMap::new();
    if tool.is_resolvable() {
        let modules = tool.modules();
        rego_uses(&modules, tool.policy.as_deref(), Root::Claims, &mut out);
    }
    out
}

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

fn rego_uses(
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
    for m in modules {
        for rule in &m.module.policy {
            if let Rule::Spec {
                head:
                    RuleHead::Compr {
                        refr,
                        assign: Some(a),
                        ..
                    },
                bodies,
                ..
            } = rule.as_ref()
                && bodies.is_empty()
                && let [name] = path_of(refr).as_slice()
                && let Some((argument, fold)) = folded_argument(&a.value, root)
            {
                let mut data_path = vec!["data".to_string()];
                data_path.extend(m.package.split('.').map(str::to_string));
                data_path.push(name.clone());
                aliases.push(Alias {
                    package: m.package.clone(),
                    name: name.clone(),
                    argument,
                    fold,
                    data_path,
                });
                alias_rules.insert(rule.as_ref() as *const Rule);
            }
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

/// The partition of string argument `name` of `tool`, or why there is none
/// (with the use that prevents it, if one does).
pub fn partition(
    tool: &Tool,
    name: &str,
    uses: Option<&Uses>,
) -> Result<Partition, (String, Option<Location>)> {
    partition_of(tool, name, uses).map_err(|why| {
        let at = uses
            .and_then(|u| u.blocked.as_ref())
            .map(|(at, _)| at.clone());
        (why, at)
    })
}

fn partition_of(tool: &Tool, name: &str, uses: Option<&Uses>) -> Result<Partition, String> {
    let props = schema::properties(&tool.input_schema);
    let s = props.and_then(|p| p.get(name));
    // Every representative must be a value inputSchema accepts.
    partition_in(name, s, uses, validator(tool, name))
}

/// The partition of the string caller claim `name`, whose schema is
/// `claim` (its representatives valid against it), or why there is none.
pub fn partition_claim(
    name: &str,
    claim: &Value,
    uses: Option<&Uses>,
) -> Result<Partition, (String, Option<Location>)> {
    let compiled = jsonschema::validator_for(claim).map_err(|e| (e.to_string(), None))?;
    let valid = |r: &str| -> Result<(), String> {
        match compiled.iter_errors(&Value::String(r.to_string())).next() {
            Some(e) => Err(e.to_string()),
            None => Ok(()),
        }
    };
    let at = uses.and_then(|u| {
        u.blocked
            .as_ref()
            .map(|(at, _)| at.clone())
            .or_else(|| u.members_at.clone())
    });
    if let Some(u) = uses
        && u.blocked.is_none()
        && !u.members.is_empty()
    {
        return Err((
            "a rule tests it for a member (`\"v\" in ...`), as if it were an array".to_string(),
            at,
        ));
    }
    partition_in(name, Some(claim), uses, valid).map_err(|why| (why, at))
}

fn partition_in(
    name: &str,
    s: Option<&Value>,
    uses: Option<&Uses>,
    valid: impl FnMut(&str) -> Result<(), String>,
) -> Result<Partition, String> {
    if s.and_then(|s| s.get("type")) != Some(&Value::String("string".into())) {
        return Err("it is not declared `type: string`".to_string());
    }
    let empty = Uses::default();
    let u = uses.unwrap_or(&empty);
    if let Some((_, why)) = &u.blocked {
        return Err(why.clone());
    }
    let s = s.cloned().unwrap_or(Value::Null);
    let shape = Shape {
        min_len: s.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize,
        samples: s
            .get("pattern")
            .and_then(Value::as_str)
            .map(|p| {
                let max = s
                    .get("maxLength")
                    .and_then(Value::as_u64)
                    .map_or(usize::MAX, |m| m as usize);
                crate::regex_samples::pattern_strings(p, max, PATTERN_SAMPLES)
            })
            .unwrap_or_default(),
    };
    // A constant a folded string cannot hold makes its predicate false
    // for every value: it tells no values apart.
    let fold = u.fold.unwrap_or_default();
    let keep = |v: &Vec<String>| -> Vec<String> {
        v.iter().filter(|l| fold.can_hold(l)).cloned().collect()
    };
    let u = Uses {
        fold: u.fold,
        equals: keep(&u.equals),
        prefixes: keep(&u.prefixes),
        suffixes: keep(&u.suffixes),
        contains: keep(&u.contains),
        ..Uses::default()
    };
    let reps = representatives(&u, fold, &shape, valid)?;
    Ok(Partition {
        argument: name.to_string(),
        fold,
        equals: u.equals,
        prefixes: u.prefixes,
        suffixes: u.suffixes,
        contains: u.contains,
        representatives: reps,
    })
}

/// Whether inputSchema accepts `r` as argument `name`, the others at
/// sample values (errors elsewhere are not this argument's); why not.
pub fn validator<'a>(tool: &'a Tool, name: &'a str) -> impl FnMut(&str) -> Result<(), String> + 'a {
    let mut base = match schema::sample(&tool.input_schema) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let pointer = format!("/{}", name.replace('~', "~0").replace('/', "~1"));
    move |r: &str| -> Result<(), String> {
        base.insert(name.to_string(), Value::String(r.to_string()));
        let errors = tool.validate_complete(&Value::Object(base.clone()));
        match errors.iter().find(|e| {
            e.instance_path == pointer || e.instance_path.starts_with(&format!("{pointer}/"))
        }) {
            Some(e) => Err(e.message.clone()),
            None => Ok(()),
        }
    }
}

/// How many strings generated from a `pattern` are tried as
/// representatives of classes no constructed string fits.
const PATTERN_SAMPLES: usize = 64;

/// What the argument's schema asks of a string, to choose representatives
/// it accepts: its `minLength`, and strings generated from its `pattern`.
#[derive(Debug, Default)]
struct Shape {
    min_len: usize,
    samples: Vec<String>,
}

/// The truth of every predicate of `u` on `w`.
fn vector(u: &Uses, w: &str) -> Vec<bool> {
    let mut v: Vec<bool> = u.equals.iter().map(|l| w == l).collect();
    v.extend(u.prefixes.iter().map(|l| w.starts_with(l.as_str())));
    v.extend(u.suffixes.iter().map(|l| w.ends_with(l.as_str())));
    v.extend(u.contains.iter().map(|l| w.contains(l.as_str())));
    v
}

/// Characters tried as separators and fillers, most readable first.
fn filler_chars() -> Vec<char> {
    let mut out: Vec<char> = Vec::new();
    for c in "xyzq_0-XYZ~.ab"
        .chars()
        .chain('a'..='z')
        .chain('A'..='Z')
        .chain('0'..='9')
        .chain('!'..='~')
    {
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// `lead p F c1 F … F s trail`, where `F` is `f`, the first one repeated
/// to make the whole at least `min_len` characters long.
fn build(
    p: &str,
    cs: &[&String],
    s: &str,
    f: char,
    lead: &str,
    trail: &str,
    min_len: usize,
) -> String {
    let mut r = String::from(lead);
    r.push_str(p);
    let at = r.len();
    for c in cs {
        r.push(f);
        r.push_str(c);
    }
    r.push(f);
    r.push_str(s);
    r.push_str(trail);
    let n = r.chars().count();
    if n < min_len {
        r.insert_str(at, &f.to_string().repeat(min_len - n));
    }
    r
}

/// One string per class of the predicates in `u` (see the module's doc),
/// each accepted by `valid`.
///
/// The classes are those of the canonical representatives, built with a
/// separator in no constant. For each class, the first candidate `valid`
/// accepts whose predicates hold exactly as the canonical one's stands for
/// it: the canonical shape with each filler character in turn (padded to
/// `minLength`), then with one character before or after it, then strings
/// generated from the schema's pattern, then the pieces with no separator
/// (`/etc` under a `maxLength`). Whatever the candidate, its truth
/// vector is computed, not assumed, so the argument of completeness is the
/// canonical one's: every string has the vector of some canonical
/// representative, and every canonical vector has a representative. A
/// class no candidate fits fails the partition, naming its canonical
/// representative and why inputSchema refused it: the class may hold
/// values the schema accepts, so it is never dropped.
fn representatives(
    u: &Uses,
    fold: Fold,
    shape: &Shape,
    mut valid: impl FnMut(&str) -> Result<(), String>,
) -> Result<Vec<String>, String> {
    if u.contains.len() > MAX_CONTAINS {
        return Err(format!(
            "it is tested with contains on {} constants (at most {MAX_CONTAINS})",
            u.contains.len()
        ));
    }
    let combos = (u.prefixes.len() + 1) * (1 << u.contains.len()) * (u.suffixes.len() + 1);
    if combos + u.equals.len() > MAX_CLASSES {
        return Err(format!("it would have more than {MAX_CLASSES} classes"));
    }
    let all: Vec<&String> = u
        .equals
        .iter()
        .chain(&u.prefixes)
        .chain(&u.suffixes)
        .chain(&u.contains)
        .collect();
    let free = |c: &char| all.iter().all(|l| !l.contains(*c));
    let fillers: Vec<char> = filler_chars().into_iter().filter(free).collect();
    // The canonical separator: any character in no constant will do.
    let sep = fillers
        .first()
        .copied()
        .or_else(|| ('\u{e000}'..='\u{f8ff}').find(free))
        .ok_or("its constants hold every character tried as a separator")?;
    let mut reps: Vec<String> = Vec::new();
    // Equality classes: the constant itself is the only member (folded,
    // the constant if it folds to itself).
    for e in &u.equals {
        if fold.apply(e) != *e {
            return Err(format!(
                "it is compared with {} by {}(), which that constant does not survive",
                Value::String(e.clone()),
                fold.name().unwrap_or_default(),
            ));
        }
        if let Err(why) = valid(e) {
            return Err(format!(
                "representative {} rejected by inputSchema: {why}",
                Value::String(e.clone())
            ));
        }
        add(&mut reps, e.clone());
    }
    let none = String::new();
    let edges: Vec<String> = ('!'..='~').map(String::from).collect();
    for p in std::iter::once(&none).chain(&u.prefixes) {
        for mask in 0..(1usize << u.contains.len()) {
            let cs: Vec<&String> = u
                .contains
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, c)| c)
                .collect();
            for s in std::iter::once(&none).chain(&u.suffixes) {
                let canonical = build(p, &cs, s, sep, "", "", 0);
                let want = vector(u, &canonical);
                let fits = |r: &str| vector(u, &fold.apply(r)) == want;
                let mut first_error: Option<(String, String)> = None;
                let mut chosen: Option<String> = None;
                let mut try_one = |r: String, valid: &mut dyn FnMut(&str) -> Result<(), String>| {
                    if !fits(&r) {
                        return false;
                    }
                    match valid(&r) {
                        Ok(()) => {
                            chosen = Some(r);
                            true
                        }
                        Err(why) => {
                            first_error.get_or_insert((r, why));
                            false
                        }
                    }
                };
                let min = shape.min_len;
                let found = fillers
                    .iter()
                    .any(|&f| try_one(build(p, &cs, s, f, "", "", min), &mut valid))
                    || fillers.iter().take(4).any(|&f| {
                        edges.iter().any(|e| {
                            (p.is_empty() && try_one(build(p, &cs, s, f, e, "", min), &mut valid))
                                || (s.is_empty()
                                    && try_one(build(p, &cs, s, f, "", e, min), &mut valid))
                                || (p.is_empty()
                                    && s.is_empty()
                                    && try_one(build(p, &cs, s, f, e, e, min), &mut valid))
                        })
                    })
                    || shape.samples.iter().any(|w| try_one(w.clone(), &mut valid))
                    || try_one(
                        format!(
                            "{p}{}{s}",
                            cs.iter().map(|c| c.as_str()).collect::<String>()
                        ),
                        &mut valid,
                    );
                if !found {
                    let (r, why) = first_error
                        .unwrap_or_else(|| (canonical.clone(), "no candidate fits".to_string()));
                    return Err(format!(
                        "representative {} rejected by inputSchema: {why}",
                        Value::String(r)
                    ));
                }
                if let Some(r) = chosen {
                    add(&mut reps, r);
                }
            }
        }
    }
    Ok(reps)
}

#[cfg(test)]
mod tests {
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
        let reached: BTreeSet<Vec<bool>> =
            reps.iter().map(|r| vector(&u, &r.to_lowercase())).collect();
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
}
