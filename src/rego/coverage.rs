//! The lines of a module that regorus' coverage counts, so that `regent
//! test --coverage` can report the ones no case reached.
//!
//! regorus' coverage walker is private; [`super::visit::Walk::COVERAGE`]
//! walks what it walks. Which lines were reached is `rego_test`'s question.

use std::collections::BTreeSet;

use regorus::unstable::{Expr, Rule, RuleHead};

use super::PolicyModule;
use super::visit::Walk;

/// The lines of `m` that regorus' coverage counts: the line of every
/// expression in rule values and bodies, walked as regorus walks them
/// (a call's function name is not an expression; a comprehension counts
/// through its query).
pub fn coverable_lines(m: &PolicyModule) -> BTreeSet<u32> {
    let mut lines = BTreeSet::new();
    let mut line = |e: &Expr| {
        if !matches!(
            e,
            Expr::ArrayCompr { .. } | Expr::SetCompr { .. } | Expr::ObjectCompr { .. }
        ) {
            lines.insert(e.span().line);
        }
        true
    };
    let walk = Walk::COVERAGE;
    for rule in &m.module.policy {
        match rule.as_ref() {
            Rule::Spec { head, bodies, .. } => {
                match head {
                    RuleHead::Compr { assign, .. } | RuleHead::Func { assign, .. } => {
                        if let Some(a) = assign {
                            walk.expr(&a.value, &mut line);
                        }
                    }
                    RuleHead::Set { key, .. } => {
                        if let Some(k) = key {
                            walk.expr(k, &mut line);
                        }
                    }
                }
                for b in bodies {
                    walk.query(&b.query, &mut line);
                }
            }
            Rule::Default { value, .. } => walk.expr(value, &mut line),
        }
    }
    lines
}
