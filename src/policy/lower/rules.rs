//! Lowering by name: a plan step's rule (its definitions, `else` chains,
//! `default`, partial sets; recursion refused), a user-defined function of
//! the package or of an imported one, a rule or function reached through
//! an import alias, and the package's import aliases themselves (refused
//! when a rule or package under it shares the name). What a body's
//! statements and expressions become is `exprs`'.

use std::collections::HashMap;

use regorus::Value;
use regorus::unstable::{AssignOp, Expr, Module, Query, Ref, Rule, RuleHead};

use super::{Aliases, Lower, Scope, dotted, index, params, var_name};
use crate::policy::native::{Body, Cmp, Def, Guard, Kind, Rule as NRule, Term};
use crate::rego::{head, path_of};

impl Lower {
    pub(super) fn modules_of(&self, pkg: &[String]) -> Vec<Ref<Module>> {
        self.modules
            .iter()
            .filter(|(p, _)| p == pkg)
            .map(|(_, m)| m.clone())
            .collect()
    }

    /// Whether some rule or function of `pkg` is called `name`.
    pub(super) fn defines(&self, pkg: &[String], name: &str) -> bool {
        self.modules_of(pkg).iter().any(|m| {
            m.policy
                .iter()
                .any(|r| path_of(head(r)).first().is_some_and(|n| n == name))
        })
    }

    pub(super) fn rule(&mut self, pkg: &[String], name: &str) -> Option<usize> {
        let key = (pkg.to_vec(), name.to_string());
        if let Some(&i) = self.index.get(&key) {
            // Still `None`: the rule refers to itself. A function is not
            // a rule.
            let rule = self.rules[i].as_ref()?;
            return (!matches!(rule.kind, Kind::Function(_))).then_some(i);
        }
        let modules = self.modules_of(pkg);
        if modules.is_empty() {
            return None;
        }
        self.aliases(pkg)?;
        let i = self.rules.len();
        self.rules.push(None);
        self.index.insert(key, i);
        let mut kind = None;
        let mut defs = Vec::new();
        let mut default = None;
        for m in &modules {
            for rule in &m.policy {
                let path = path_of(head(rule));
                if path.first().map(String::as_str) != Some(name) {
                    continue;
                }
                if path.len() != 1 {
                    return None;
                }
                match rule.as_ref() {
                    Rule::Default {
                        args, op, value, ..
                    } => {
                        if !args.is_empty() || *op != AssignOp::ColEq || default.is_some() {
                            return None;
                        }
                        match self.expr(value, pkg, &mut Scope::default())? {
                            Term::Const(v) => default = Some(v),
                            _ => return None,
                        }
                    }
                    Rule::Spec { head, bodies, .. } => {
                        let (k, def) = self.definition(head, bodies, pkg)?;
                        if kind.is_some_and(|x| x != k) {
                            return None;
                        }
                        kind = Some(k);
                        defs.push(def);
                    }
                }
            }
        }
        let kind = match (kind, &default) {
            (Some(k), _) => k,
            (None, Some(_)) => Kind::Complete,
            (None, None) => return None,
        };
        if kind == Kind::PartialSet && default.is_some() {
            return None;
        }
        self.rules[i] = Some(NRule {
            kind,
            defs,
            default,
        });
        Some(i)
    }

    pub(super) fn definition(
        &mut self,
        head: &RuleHead,
        bodies: &[regorus::unstable::RuleBody],
        pkg: &[String],
    ) -> Option<(Kind, Def)> {
        let (kind, value) = match head {
            // Only `:=`: a legacy `x = v` head is left to regorus.
            RuleHead::Compr { assign, .. } => {
                if assign.as_ref().is_some_and(|a| a.op != AssignOp::ColEq) {
                    return None;
                }
                (Kind::Complete, assign.as_ref().map(|a| a.value.clone()))
            }
            RuleHead::Set { key: Some(k), .. } => (Kind::PartialSet, Some(k.clone())),
            _ => return None,
        };
        let mut out = Vec::new();
        if bodies.is_empty() {
            out.push(self.body(None, value.as_ref(), pkg)?);
        }
        for (j, b) in bodies.iter().enumerate() {
            if j > 0 && (!b.is_else || kind == Kind::PartialSet) {
                // Several independent bodies, or `else` on a partial set.
                return None;
            }
            let v = if j == 0 {
                value.clone()
            } else {
                if b.assign.as_ref().is_some_and(|a| a.op != AssignOp::ColEq) {
                    return None;
                }
                b.assign.as_ref().map(|a| a.value.clone())
            };
            out.push(self.body(Some(&b.query), v.as_ref(), pkg)?);
        }
        Some((kind, Def { bodies: out }))
    }

    /// A body; a missing `value` is `true`.
    pub(super) fn body(
        &mut self,
        query: Option<&Ref<Query>>,
        value: Option<&Ref<Expr>>,
        pkg: &[String],
    ) -> Option<Body> {
        self.body_in(Scope::default(), query, value, pkg)
    }

    /// A body whose first locals are already bound (a function's
    /// parameters).
    pub(super) fn body_in(
        &mut self,
        mut scope: Scope,
        query: Option<&Ref<Query>>,
        value: Option<&Ref<Expr>>,
        pkg: &[String],
    ) -> Option<Body> {
        let params: Vec<String> = (scope.names.iter())
            .filter(|&(_, &slot)| slot < scope.next)
            .map(|(n, _)| n.clone())
            .collect();
        let stmts = match query {
            Some(q) => self.stmts(q, pkg, &mut scope)?,
            None => Vec::new(),
        };
        let lowered = match value {
            Some(v) => self.expr(v, pkg, &mut scope)?,
            None => Term::Const(Value::Bool(true)),
        };
        let names = scope.names.clone();
        let entries = index::entries(
            query.map(|q| q.as_ref()),
            value,
            &|n| names.contains_key(n),
            &params,
        );
        let mut guards = Vec::with_capacity(entries.len());
        for (r, want) in entries {
            // An `input` reference or a parameter always lowers; anything
            // else is left unguarded (evaluated in order).
            let Some(t) = self.expr(r, pkg, &mut scope) else {
                continue;
            };
            guards.push(match want {
                index::Want::Any => Guard::Defined(t),
                index::Want::Scalar(lit) => {
                    let Some(lit) = self.expr(lit, pkg, &mut scope) else {
                        continue;
                    };
                    Guard::Holds(Term::Compare(Cmp::Eq, Box::new(t), Box::new(lit)))
                }
            });
        }
        Some(Body {
            stmts,
            value: lowered,
            locals: scope.next,
            index: guards,
        })
    }

    /// The function `name` of `pkg` taking `arity` arguments: every
    /// definition of it, all in one module (regorus evaluates all of them
    /// with the loop plans of one module), none `default`.
    pub(super) fn function(&mut self, pkg: &[String], name: &str, arity: usize) -> Option<usize> {
        let key = (pkg.to_vec(), name.to_string());
        if let Some(&i) = self.index.get(&key) {
            // Still `None`: the function calls itself.
            let rule = self.rules[i].as_ref()?;
            return (rule.kind == Kind::Function(arity)).then_some(i);
        }
        let modules = self.modules_of(pkg);
        if modules.is_empty() || arity == 0 {
            return None;
        }
        self.aliases(pkg)?;
        let i = self.rules.len();
        self.rules.push(None);
        self.index.insert(key, i);
        let mut defs = Vec::new();
        let mut in_modules = 0;
        for m in &modules {
            let mut here = false;
            for rule in &m.policy {
                let path = path_of(head(rule));
                if path.first().map(String::as_str) != Some(name) {
                    continue;
                }
                let Rule::Spec {
                    head: RuleHead::Func { args, assign, .. },
                    bodies,
                    ..
                } = rule.as_ref()
                else {
                    // `default f(x) := v`, or a rule of that name.
                    return None;
                };
                if path.len() != 1 || args.len() != arity {
                    return None;
                }
                let aliases = self.aliases(pkg)?;
                for a in args {
                    let n = var_name(a)?;
                    if n != "_" && (self.defines(pkg, &n) || aliases.contains_key(&n)) {
                        return None;
                    }
                }
                if assign.as_ref().is_some_and(|a| a.op != AssignOp::ColEq) {
                    return None;
                }
                let value = assign.as_ref().map(|a| a.value.clone());
                let mut out = Vec::new();
                if bodies.is_empty() {
                    out.push(self.body_in(params(args)?, None, value.as_ref(), pkg)?);
                }
                for (j, b) in bodies.iter().enumerate() {
                    let v = if j == 0 {
                        value.clone()
                    } else {
                        if !b.is_else {
                            return None;
                        }
                        match &b.assign {
                            Some(a) if a.op == AssignOp::ColEq => Some(a.value.clone()),
                            // An `else` without a value after a head with
                            // one: regorus gives undefined, not `true`.
                            None if value.is_none() => None,
                            _ => return None,
                        }
                    };
                    out.push(self.body_in(params(args)?, Some(&b.query), v.as_ref(), pkg)?);
                }
                defs.push(Def { bodies: out });
                here = true;
            }
            in_modules += usize::from(here);
        }
        if in_modules != 1 {
            return None;
        }
        self.rules[i] = Some(NRule {
            kind: Kind::Function(arity),
            defs,
            default: None,
        });
        Some(i)
    }

    /// `x.r` where `x` is `import data.x`: regorus evaluates the package
    /// `data.x` whole (any rule of it failing fails the reference), then
    /// reads `r`; so every rule of it must lower.
    pub(super) fn imported(&mut self, target: &[String], name: &str) -> Option<Term> {
        let mut names: Vec<String> = Vec::new();
        for m in self.modules_of(target) {
            for rule in &m.policy {
                let function = match rule.as_ref() {
                    Rule::Spec { head, .. } => matches!(head, RuleHead::Func { .. }),
                    Rule::Default { args, .. } => !args.is_empty(),
                };
                let n = path_of(head(rule)).first()?.clone();
                if !function && !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        if !names.iter().any(|n| n == name) {
            return None;
        }
        let mut package = Vec::with_capacity(names.len());
        for n in &names {
            package.push(self.rule(target, n)?);
        }
        let rule = self.rule(target, name)?;
        Some(Term::Imported { package, rule })
    }

    /// The import aliases of `pkg` (all its modules': regorus keys imports
    /// by package), `None` when one of its imports is not `rego.v1`,
    /// `future.keywords…` or `import data.x.y [as z]` of exactly a package
    /// (nothing under it, no data document there) whose alias names nothing
    /// else in `pkg`.
    pub(super) fn aliases(&mut self, pkg: &[String]) -> Option<Aliases> {
        if let Some(a) = self.aliases.get(pkg) {
            return a.clone();
        }
        let a = self.compute_aliases(pkg);
        self.aliases.insert(pkg.to_vec(), a.clone());
        a
    }

    pub(super) fn compute_aliases(&self, pkg: &[String]) -> Option<Aliases> {
        let mut out: Aliases = HashMap::new();
        let mut plain: Vec<String> = Vec::new();
        for m in self.modules_of(pkg) {
            for i in &m.imports {
                let p = path_of(&i.refr);
                if p == ["rego", "v1"] || p.get(..2) == Some(&["future".into(), "keywords".into()])
                {
                    if i.r#as.is_some() {
                        return None;
                    }
                    plain.push(p.last()?.clone());
                    continue;
                }
                if p.len() < 2 || p[0] != "data" || !dotted(&i.refr) {
                    return None;
                }
                let target = p[1..].to_vec();
                let alias = match &i.r#as {
                    Some(s) => s.text().to_string(),
                    None => target.last()?.clone(),
                };
                let mut under = pkg.to_vec();
                under.push(alias.clone());
                let mut doc = &self.data;
                for seg in &target {
                    doc = &doc[seg.as_str()];
                }
                if matches!(alias.as_str(), "_" | "input" | "data")
                    || !self.modules.iter().any(|(q, _)| *q == target)
                    || self
                        .modules
                        .iter()
                        .any(|(q, _)| q.len() > target.len() && q.starts_with(&target))
                    || self.modules.iter().any(|(q, _)| q.starts_with(&under))
                    || !matches!(doc, Value::Undefined)
                    || self.defines(pkg, &alias)
                {
                    return None;
                }
                if out
                    .insert(alias, target.clone())
                    .is_some_and(|t| t != target)
                {
                    return None;
                }
            }
        }
        if plain.iter().any(|p| out.contains_key(p)) {
            return None;
        }
        Some(out)
    }
}
