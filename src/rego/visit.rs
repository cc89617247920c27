//! The one walk over regorus' syntax tree that every analysis uses.
//!
//! [`Walk`] visits expressions outermost first and calls a callback on each;
//! when the callback returns false the expression's children are skipped (an
//! analysis that reads a whole reference, say, walks its indexes itself with
//! [`ref_indexes`]). What the walk enters is set by its fields: [`Walk::ALL`]
//! enters everything (heads, values, bodies, `with` modifiers, a call's
//! function name); [`Walk::COVERAGE`] enters what regorus' coverage counts.
//! Which expressions matter, and what they mean, is left to the analyses.

use regorus::unstable::{Expr, Literal, Query, Rule, RuleHead};

/// What a walk enters besides every expression's operands.
#[derive(Debug, Clone, Copy)]
pub struct Walk {
    /// A call's function name (`f` in `f(x)`, a reference).
    pub call_names: bool,
    /// A comprehension's term (`x` in `[x | ...]`); its query is always entered.
    pub comprehension_terms: bool,
    /// The key of `some k, v in xs`.
    pub some_in_keys: bool,
    /// `with` modifiers of a statement.
    pub with_mods: bool,
}

impl Walk {
    /// Every expression.
    pub const ALL: Walk = Walk {
        call_names: true,
        comprehension_terms: true,
        some_in_keys: true,
        with_mods: true,
    };

    /// The expressions regorus' coverage walks (a port of its private
    /// walker): a call's function name is not an expression, a
    /// comprehension counts through its query only, and neither the key of
    /// `some k, v in` nor a `with` modifier is entered.
    pub const COVERAGE: Walk = Walk {
        call_names: false,
        comprehension_terms: false,
        some_in_keys: false,
        with_mods: false,
    };

    /// Calls `f` on `e` and the expressions under it.
    pub fn expr(self, e: &Expr, f: &mut dyn FnMut(&Expr) -> bool) {
        if !f(e) {
            return;
        }
        match e {
            Expr::String { .. }
            | Expr::RawString { .. }
            | Expr::Number { .. }
            | Expr::Bool { .. }
            | Expr::Null { .. }
            | Expr::Var { .. } => {}
            Expr::Array { items, .. } | Expr::Set { items, .. } => {
                for i in items {
                    self.expr(i, f);
                }
            }
            Expr::Object { fields, .. } => {
                for (_, k, v) in fields {
                    self.expr(k, f);
                    self.expr(v, f);
                }
            }
            Expr::ArrayCompr { term, query, .. } | Expr::SetCompr { term, query, .. } => {
                if self.comprehension_terms {
                    self.expr(term, f);
                }
                self.query(query, f);
            }
            Expr::ObjectCompr {
                key, value, query, ..
            } => {
                if self.comprehension_terms {
                    self.expr(key, f);
                    self.expr(value, f);
                }
                self.query(query, f);
            }
            Expr::Call { fcn, params, .. } => {
                if self.call_names {
                    self.expr(fcn, f);
                }
                for p in params {
                    self.expr(p, f);
                }
            }
            Expr::UnaryExpr { expr, .. } => self.expr(expr, f),
            Expr::RefDot { refr, .. } => self.expr(refr, f),
            Expr::RefBrack { refr, index, .. } => {
                self.expr(refr, f);
                self.expr(index, f);
            }
            Expr::BinExpr { lhs, rhs, .. }
            | Expr::BoolExpr { lhs, rhs, .. }
            | Expr::ArithExpr { lhs, rhs, .. }
            | Expr::AssignExpr { lhs, rhs, .. } => {
                self.expr(lhs, f);
                self.expr(rhs, f);
            }
            Expr::Membership {
                key,
                value,
                collection,
                ..
            } => {
                if let Some(k) = key {
                    self.expr(k, f);
                }
                self.expr(value, f);
                self.expr(collection, f);
            }
        }
    }

    /// Calls `f` on every expression of the statements of `q`.
    pub fn query(self, q: &Query, f: &mut dyn FnMut(&Expr) -> bool) {
        for stmt in &q.stmts {
            match &stmt.literal {
                Literal::SomeVars { .. } => {}
                Literal::SomeIn {
                    key,
                    value,
                    collection,
                    ..
                } => {
                    if let Some(k) = key
                        && self.some_in_keys
                    {
                        self.expr(k, f);
                    }
                    self.expr(value, f);
                    self.expr(collection, f);
                }
                Literal::Expr { expr, .. } | Literal::NotExpr { expr, .. } => self.expr(expr, f),
                Literal::Every { domain, query, .. } => {
                    self.expr(domain, f);
                    self.query(query, f);
                }
            }
            if self.with_mods {
                for w in &stmt.with_mods {
                    self.expr(&w.refr, f);
                    self.expr(&w.r#as, f);
                }
            }
        }
    }

    /// Calls `f` on every expression of a rule: head, values and bodies.
    pub fn rule(self, rule: &Rule, f: &mut dyn FnMut(&Expr) -> bool) {
        match rule {
            Rule::Default {
                refr, args, value, ..
            } => {
                self.expr(refr, f);
                for a in args {
                    self.expr(a, f);
                }
                self.expr(value, f);
            }
            Rule::Spec { head, bodies, .. } => {
                match head {
                    RuleHead::Compr { refr, assign, .. } => {
                        self.expr(refr, f);
                        if let Some(a) = assign {
                            self.expr(&a.value, f);
                        }
                    }
                    RuleHead::Set { refr, key, .. } => {
                        self.expr(refr, f);
                        if let Some(k) = key {
                            self.expr(k, f);
                        }
                    }
                    RuleHead::Func {
                        refr, args, assign, ..
                    } => {
                        self.expr(refr, f);
                        for a in args {
                            self.expr(a, f);
                        }
                        if let Some(a) = assign {
                            self.expr(&a.value, f);
                        }
                    }
                }
                for b in bodies {
                    if let Some(a) = &b.assign {
                        self.expr(&a.value, f);
                    }
                    self.query(&b.query, f);
                }
            }
        }
    }
}

/// [`Walk::ALL`] over an expression.
pub fn walk_expr(e: &Expr, f: &mut dyn FnMut(&Expr) -> bool) {
    Walk::ALL.expr(e, f);
}

/// [`Walk::ALL`] over a rule.
pub fn walk_rule(rule: &Rule, f: &mut dyn FnMut(&Expr) -> bool) {
    Walk::ALL.rule(rule, f);
}

/// The variable names under `e`, in walk order (repeats kept).
pub fn vars(e: &Expr) -> Vec<String> {
    let mut out = Vec::new();
    walk_expr(e, &mut |x| {
        if let Expr::Var { value, .. } = x
            && let Ok(s) = value.as_string()
        {
            out.push(s.to_string());
        }
        true
    });
    out
}

/// The index expressions of a reference (`i` and `j` in `a[i].b[j]`),
/// outermost first; nothing for an expression that is not a reference.
pub fn ref_indexes(e: &Expr) -> impl Iterator<Item = &Expr> {
    let mut cur = Some(e);
    std::iter::from_fn(move || {
        while let Some(c) = cur {
            match c {
                Expr::RefDot { refr, .. } => cur = Some(refr),
                Expr::RefBrack { refr, index, .. } => {
                    cur = Some(refr);
                    return Some(index.as_ref());
                }
                _ => cur = None,
            }
        }
        None
    })
}
