//! What a derivation of an argument is (`Chain`: the argument and the
//! steps it went through) and reading one off an expression (`chain`),
//! given how the rule's variables (`local_of`) and the package's body-less
//! rules (`Alias`, `alias_of`) are bound.
//!
//! Which derivations are compared, and what any other use blocks, is
//! `walk`'s; what a step does is `steps`'.

use std::collections::BTreeMap;

use regorus::unstable::Expr;

use super::Step;
use crate::rego::{const_string, path_of};

/// A derivation: the argument, its steps, and a pending `split` whose
/// index is not read yet.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Chain {
    pub(super) argument: String,
    pub(super) steps: Vec<Step>,
    pub(super) split: Option<String>,
}

/// A rule of a package bound to a derivation, without a body.
pub(super) struct Alias {
    pub(super) package: String,
    pub(super) name: String,
    pub(super) chain: Chain,
    pub(super) data_path: Vec<String>,
}

fn exact_argument(e: &Expr) -> Option<String> {
    match path_of(e).as_slice() {
        [i, a, n] if i == "input" && a == "arguments" && n != "[_]" => Some(n.clone()),
        _ => None,
    }
}

pub(super) fn number(e: &Expr) -> Option<i64> {
    match e {
        Expr::Number { value, .. } => value.as_i64().ok(),
        _ => None,
    }
}

/// The derivation `e` is, given how variables and package rules are bound.
pub(super) fn chain(e: &Expr, lookup: &dyn Fn(&Expr) -> Option<Chain>) -> Option<Chain> {
    if let Some(argument) = exact_argument(e) {
        return Some(Chain {
            argument,
            steps: Vec::new(),
            split: None,
        });
    }
    if let Some(c) = lookup(e) {
        return Some(c);
    }
    let string = |e: &Expr| chain(e, lookup).filter(|c| c.split.is_none());
    match e {
        Expr::RefBrack { refr, index, .. } => {
            let mut c = chain(refr, lookup)?;
            let sep = c.split.take()?;
            let i = usize::try_from(number(index)?).ok()?;
            c.steps.push(Step::Split(sep, i));
            Some(c)
        }
        Expr::Call { fcn, params, .. } => {
            let f = path_of(fcn).join(".");
            let mut c;
            let step = match (f.as_str(), params.as_slice()) {
                ("lower" | "upper" | "trim_space", [p]) => {
                    c = string(p)?;
                    match f.as_str() {
                        "lower" => Step::Lower,
                        "upper" => Step::Upper,
                        _ => Step::TrimSpace,
                    }
                }
                ("trim" | "trim_left" | "trim_right" | "trim_prefix" | "trim_suffix", [p, k]) => {
                    c = string(p)?;
                    let k = const_string(k)?;
                    match f.as_str() {
                        "trim" => Step::Trim(k),
                        "trim_left" => Step::TrimLeft(k),
                        "trim_right" => Step::TrimRight(k),
                        "trim_prefix" => Step::TrimPrefix(k),
                        _ => Step::TrimSuffix(k),
                    }
                }
                ("substring", [p, s, l]) => {
                    c = string(p)?;
                    Step::Substring(usize::try_from(number(s)?).ok()?, number(l)?)
                }
                ("split", [p, sep]) => {
                    c = string(p)?;
                    let sep = const_string(sep)?;
                    if sep.is_empty() {
                        return None;
                    }
                    c.split = Some(sep);
                    return Some(c);
                }
                ("concat", [delim, arr]) => {
                    let Expr::Array { items, .. } = arr.as_ref() else {
                        return None;
                    };
                    let delim = const_string(delim)?;
                    let at = items.iter().position(|i| const_string(i).is_none())?;
                    c = string(&items[at])?;
                    let parts: Option<Vec<String>> = items
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| *i != at)
                        .map(|(_, i)| const_string(i))
                        .collect();
                    let parts = parts?;
                    let (before, after) = parts.split_at(at);
                    let mut pre = before.join(&delim);
                    if !before.is_empty() {
                        pre.push_str(&delim);
                    }
                    let mut post = String::new();
                    if !after.is_empty() {
                        post.push_str(&delim);
                        post.push_str(&after.join(&delim));
                    }
                    Step::Wrap(pre, post, "concat")
                }
                ("sprintf", [format, arr]) => {
                    let Expr::Array { items, .. } = arr.as_ref() else {
                        return None;
                    };
                    let format = const_string(format)?;
                    let [item] = items.as_slice() else {
                        return None;
                    };
                    c = string(item)?;
                    let (pre, post) = format.split_once("%s")?;
                    if pre.contains('%') || post.contains('%') {
                        return None;
                    }
                    Step::Wrap(pre.to_string(), post.to_string(), "sprintf")
                }
                _ => return None,
            };
            c.steps.push(step);
            Some(c)
        }
        _ => None,
    }
}

pub(super) fn alias_of(aliases: &[Alias], package: &str, e: &Expr) -> Option<Chain> {
    let p = path_of(e);
    match p.as_slice() {
        [v] => aliases
            .iter()
            .find(|a| a.package == package && &a.name == v)
            .map(|a| a.chain.clone()),
        p => aliases
            .iter()
            .find(|a| a.data_path == p)
            .map(|a| a.chain.clone()),
    }
}

pub(super) fn local_of(
    locals: &BTreeMap<String, Chain>,
    aliases: &[Alias],
    package: &str,
    e: &Expr,
) -> Option<Chain> {
    if let Expr::Var { value, .. } = e
        && let Ok(v) = value.as_string()
        && let Some(c) = locals.get(v.as_ref())
    {
        return Some(c.clone());
    }
    alias_of(aliases, package, e)
}
