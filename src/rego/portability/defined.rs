//! Whether an expression may be undefined, and whether it is provably a
//! collection, for the findings on `not` (a guard that may be undefined),
//! `in` and `some … in` (over something not provably a collection): read
//! against the [`Facts`], the package's rules (a `default`, an
//! unconditional constant, a partial set) and the rule's `:=` locals
//! ([`Cx`]). Which expressions are guards is `guards`'.

use std::collections::{BTreeSet, HashMap};

use regorus::unstable::{Expr, Ref, Rule, RuleHead};

use super::Facts;
use crate::rego::lint::{Callee, resolve_call};
use crate::rego::{head, path_of};

/// Whether the value of `e` may be undefined: a reference into `input`,
/// `data` or a rule, a call (a function may be undefined; a builtin is when
/// an argument is). A constant, a composite of constants, a comprehension
/// and a variable bound in the body are defined.
pub(super) fn may_be_undefined(e: &Expr, bound: &[String], cx: &Cx) -> bool {
    let may = |x: &Expr| may_be_undefined(x, bound, cx);
    match e {
        Expr::String { .. }
        | Expr::RawString { .. }
        | Expr::Number { .. }
        | Expr::Bool { .. }
        | Expr::Null { .. }
        | Expr::ArrayCompr { .. }
        | Expr::SetCompr { .. }
        | Expr::ObjectCompr { .. } => false,
        Expr::Var { value, .. } => match value.as_string() {
            Ok(n) if bound.iter().any(|b| b == n.as_ref()) => false,
            Ok(n) if !matches!(n.as_ref(), "input" | "data" | "_") => !cx.rule_defined(n.as_ref()),
            _ => !cx.facts.reference(cx.module, e, bound).0,
        },
        Expr::RefDot { .. } | Expr::RefBrack { .. } => !cx.facts.reference(cx.module, e, bound).0,
        Expr::Array { items, .. } | Expr::Set { items, .. } => items.iter().any(|i| may(i)),
        Expr::Object { fields, .. } => fields.iter().any(|(_, k, v)| may(k) || may(v)),
        // A builtin is undefined only when an argument is; a function of
        // the policies may be undefined whatever its arguments.
        Expr::Call { fcn, params, .. } => {
            let written = path_of(fcn);
            match resolve_call(&written, &cx.package, &cx.aliases, cx.functions) {
                Callee::Builtin(..) => params.iter().any(|p| may(p)),
                _ => true,
            }
        }
        Expr::BoolExpr { lhs, rhs, .. } | Expr::ArithExpr { lhs, rhs, .. } => may(lhs) || may(rhs),
        Expr::UnaryExpr { expr, .. } => may(expr),
        _ => true,
    }
}

/// What a module's expressions are read against.
pub(super) struct Cx<'a> {
    pub(super) facts: &'a Facts<'a>,
    pub(super) module: usize,
    pub(super) package: String,
    pub(super) aliases: HashMap<String, String>,
    pub(super) functions: &'a HashMap<String, BTreeSet<usize>>,
    /// The rules of the package, across its modules.
    pub(super) rules: Vec<Ref<Rule>>,
    /// The rules of every package, by package (without `data.`).
    pub(super) all_rules: &'a HashMap<String, Vec<Ref<Rule>>>,
    /// The rule being read: its locals bound by `:=`, to their values.
    pub(super) assigned: std::cell::RefCell<HashMap<String, Ref<Expr>>>,
    pub(super) depth: std::cell::Cell<u32>,
}

impl Cx<'_> {
    /// `f()` one level deeper into rules and locals; false past a few
    /// levels (a cycle is refused elsewhere; here it is only unknown).
    fn deeper(&self, f: impl FnOnce() -> bool) -> bool {
        let d = self.depth.get();
        if d > 8 {
            return false;
        }
        self.depth.set(d + 1);
        let r = f();
        self.depth.set(d);
        r
    }

    fn defs(&self, name: &str) -> Vec<Ref<Rule>> {
        self.rules
            .iter()
            .filter(|r| path_of(head(r)) == [name])
            .cloned()
            .collect()
    }

    /// Whether the rule `name` of the package is always defined: it has a
    /// `default`, or a definition without conditions whose value is.
    fn rule_defined(&self, name: &str) -> bool {
        self.defs(name).iter().any(|r| match r.as_ref() {
            Rule::Default { .. } => true,
            Rule::Spec {
                head: RuleHead::Compr {
                    assign: Some(a), ..
                },
                bodies,
                ..
            } => {
                bodies.iter().all(|b| b.query.stmts.is_empty())
                    && self.deeper(|| !may_be_undefined(&a.value, &[], self))
            }
            // A partial set is the empty set at worst.
            Rule::Spec {
                head: RuleHead::Set { .. },
                ..
            } => true,
            _ => false,
        })
    }

    /// Whether `e` names a partial set rule of a package, through `data.` or
    /// an import (`repo_root.option_like` after `import data.repo_root`):
    /// a set, the empty one at worst.
    fn other_partial_set(&self, e: &Expr) -> bool {
        let path = path_of(e);
        let Some(first) = path.first() else {
            return false;
        };
        let full: Vec<String> = if first == "data" {
            path[1..].to_vec()
        } else if let Some(target) = self.aliases.get(first) {
            let Some(rest) = target.strip_prefix("data.") else {
                return false;
            };
            rest.split('.')
                .map(str::to_string)
                .chain(path[1..].iter().cloned())
                .collect()
        } else {
            return false;
        };
        // The package is all but the last segment; the rule, the last.
        let Some((rule, package)) = full.split_last() else {
            return false;
        };
        if rule.starts_with('[') {
            return false;
        }
        let defs: Vec<&Ref<Rule>> = self
            .all_rules
            .get(&package.join("."))
            .into_iter()
            .flatten()
            .filter(|r| path_of(head(r)) == [rule.as_str()])
            .collect();
        !defs.is_empty()
            && defs.iter().all(|r| {
                matches!(
                    r.as_ref(),
                    Rule::Spec {
                        head: RuleHead::Set { .. },
                        ..
                    }
                )
            })
    }

    /// Whether every value the rule `name` can have is a collection.
    fn rule_collection(&self, name: &str) -> bool {
        let defs = self.defs(name);
        !defs.is_empty()
            && defs.iter().all(|r| match r.as_ref() {
                Rule::Default { value, .. } => self.deeper(|| is_collection(value, &[], self)),
                Rule::Spec {
                    head: RuleHead::Set { .. },
                    ..
                } => true,
                Rule::Spec {
                    head:
                        RuleHead::Compr {
                            assign: Some(a), ..
                        },
                    bodies,
                    ..
                } => {
                    bodies.iter().all(|b| b.assign.is_none())
                        && self.deeper(|| is_collection(&a.value, &[], self))
                }
                _ => false,
            })
    }
}

/// Whether `e` is provably an array, set or object (a literal or
/// comprehension of one, or a builtin that only returns one).
pub(super) fn is_collection(e: &Expr, bound: &[String], cx: &Cx) -> bool {
    match e {
        Expr::Var { value, .. } => match value.as_string() {
            Ok(n) if bound.iter().any(|b| b == n.as_ref()) => cx
                .assigned
                .borrow()
                .get(n.as_ref())
                .cloned()
                .is_some_and(|rhs| cx.deeper(|| is_collection(&rhs, bound, cx))),
            Ok(n) if !matches!(n.as_ref(), "input" | "data" | "_") => {
                cx.rule_collection(n.as_ref())
            }
            _ => cx.facts.reference(cx.module, e, bound).1,
        },
        Expr::RefDot { .. } | Expr::RefBrack { .. } => {
            cx.facts.reference(cx.module, e, bound).1 || cx.other_partial_set(e)
        }
        Expr::Array { .. }
        | Expr::Set { .. }
        | Expr::Object { .. }
        | Expr::ArrayCompr { .. }
        | Expr::SetCompr { .. }
        | Expr::ObjectCompr { .. } => true,
        Expr::Call { fcn, .. } => matches!(
            path_of(fcn).join(".").as_str(),
            "split"
                | "numbers.range"
                | "numbers.range_step"
                | "indexof_n"
                | "walk"
                | "object.keys"
                | "array.concat"
                | "array.slice"
                | "array.reverse"
                | "sort"
                | "union"
                | "intersection"
                | "regex.split"
                | "regex.find_n"
                | "strings.split"
                | "object.union"
                | "object.filter"
                | "object.remove"
        ),
        _ => false,
    }
}
