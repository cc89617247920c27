//! Lowering a body: its statements (`:=`, `not` with the guards OPA's
//! compiler evaluates first, `some … in`, `every`, `walk(x, [p, v])` whose
//! pattern binds fresh variables or is compared where it is a value), comprehensions, constant
//! references into the data documents, and every expression `native` runs
//! (literals, locals, `input`, comparisons, `%` and `+ - * /`, membership,
//! calls of deterministic builtins, with their memory estimates and fast
//! answers); anything else is refused. Rules and functions by name are
//! `rules`'.

use regorus::Value;
use regorus::unstable::{
    ArithOp, AssignOp, BUILTINS, BoolOp, Expr, Literal, Query, Ref, Span, must_cache,
};

use super::{IMPURE, Lower, Scope, consts, dotted, guard, root_is_data, var_name};
use crate::opa_builtins;
use crate::opa_builtins::arith::Op as Arith;
use crate::policy::budget;
use crate::policy::builtins::Fast;
use crate::policy::native::{self, Builtin, Cmp, Collect, Kind, Stmt, Term, WalkOut};
use crate::rego::path_of;

impl Lower {
    /// A new local `name`, refused when it is also the name of a rule,
    /// function or import alias of `pkg` (regorus may then fail with "var
    /// used before definition", or read the rule).
    pub(super) fn local(&mut self, scope: &mut Scope, name: &str, pkg: &[String]) -> Option<usize> {
        if name != "_"
            && (self.defines(pkg, name)
                || self.aliases(pkg)?.contains_key(name)
                || scope.declared.iter().any(|d| d == name))
        {
            return None;
        }
        scope.bind(name)
    }

    pub(super) fn stmts(
        &mut self,
        query: &Query,
        pkg: &[String],
        scope: &mut Scope,
    ) -> Option<Vec<Stmt>> {
        let mut stmts = Vec::with_capacity(query.stmts.len());
        for stmt in &query.stmts {
            if !stmt.with_mods.is_empty() {
                return None;
            }
            if let Literal::Expr { expr, .. } = &stmt.literal
                && let Some(call) = self.walk_call(expr, pkg, scope)
            {
                let (of, out) = call?;
                let (walk, checks) = self.walk(of, out, pkg, scope)?;
                stmts.push(walk);
                stmts.extend(checks);
                continue;
            }
            if let Literal::SomeVars { vars, .. } = &stmt.literal {
                for v in vars {
                    let name = v.text();
                    if matches!(name, "_" | "input" | "data")
                        || scope.names.contains_key(name)
                        || scope.declared.iter().any(|d| d == name)
                        || self.defines(pkg, name)
                        || self.aliases(pkg)?.contains_key(name)
                    {
                        return None;
                    }
                    scope.declared.push(name.to_string());
                }
                continue;
            }
            // Only a plain statement binds a declared variable; anywhere
            // else one is refused (read as an unknown rule).
            let declared = match &stmt.literal {
                Literal::Expr { .. } => {
                    scope.hoisted = Some(Vec::new());
                    Vec::new()
                }
                _ => std::mem::take(&mut scope.declared),
            };
            let lowered = self.stmt(stmt, pkg, scope);
            scope.declared.extend(declared);
            let hoisted = scope.hoisted.take().unwrap_or_default();
            let lowered = lowered?;
            if !hoisted.is_empty() {
                // Iterations moved before the statement: only where
                // nothing in it can fail before them (OPA evaluates a
                // call's arguments before the iteration).
                let (Stmt::Expr(t) | Stmt::Assign(_, t)) = &lowered else {
                    return None;
                };
                if !plain(t) {
                    return None;
                }
                stmts.extend(hoisted);
            }
            stmts.push(lowered);
        }
        Some(stmts)
    }

    /// One statement (not `walk`, not `some x`).
    fn stmt(
        &mut self,
        stmt: &regorus::unstable::LiteralStmt,
        pkg: &[String],
        scope: &mut Scope,
    ) -> Option<Stmt> {
        {
            Some(match &stmt.literal {
                Literal::Expr { expr, .. } => match expr.as_ref() {
                    Expr::AssignExpr { op, lhs, rhs, .. } => {
                        let Expr::Var { value: name, .. } = lhs.as_ref() else {
                            return None;
                        };
                        if *op != AssignOp::ColEq {
                            return None;
                        }
                        let t = self.expr(rhs, pkg, scope)?;
                        let name = name.as_string().ok()?;
                        if name.as_ref() == "_" {
                            return None;
                        }
                        Stmt::Assign(self.local(scope, name, pkg)?, t)
                    }
                    _ => Stmt::Expr(self.expr(expr, pkg, scope)?),
                },
                Literal::NotExpr { expr, .. } => {
                    // What OPA evaluates before the negation, as guards
                    // (`portability`); a local or constant is always defined.
                    let mut guards = Vec::new();
                    for g in crate::rego::portability::not_guards(expr) {
                        guard(self.expr(g, pkg, scope)?, &mut guards);
                    }
                    let t = self.expr(expr, pkg, scope)?;
                    let every_index = super::indexes_by(&t, &scope.every);
                    Stmt::Not(t, guards, every_index)
                }
                Literal::SomeIn {
                    key,
                    value,
                    collection,
                    ..
                } => {
                    let collection = self.expr(collection, pkg, scope)?;
                    let key = match key {
                        Some(k) => Some(self.local(scope, &var_name(k)?, pkg)?),
                        None => None,
                    };
                    let value = self.local(scope, &var_name(value)?, pkg)?;
                    Stmt::SomeIn {
                        key,
                        value,
                        collection,
                    }
                }
                Literal::Every {
                    key,
                    value,
                    domain,
                    query,
                    ..
                } => self.every(key.as_ref(), value, domain, query, pkg, scope)?,
                Literal::SomeVars { .. } => return None,
            })
        }
    }

    /// `walk(x, out)` spelled as the builtin (no local, rule, function
    /// or import alias of that name): its two arguments; `Some(None)`
    /// when it is not lowered (`out` is refused later).
    fn walk_call<'e>(
        &mut self,
        e: &'e Ref<Expr>,
        pkg: &[String],
        scope: &Scope,
    ) -> Option<Option<(&'e Ref<Expr>, &'e Ref<Expr>)>> {
        let Expr::Call { fcn, params, .. } = e.as_ref() else {
            return None;
        };
        if var_name(fcn).as_deref() != Some("walk") {
            return None;
        }
        let [of, out] = &params[..] else {
            return Some(None);
        };
        let shadowed = scope.names.contains_key("walk")
            || self.defines(pkg, "walk")
            || self.aliases(pkg).is_none_or(|a| a.contains_key("walk"));
        Some((!shadowed).then_some((of, out)))
    }

    /// `walk(of, out)` as a statement (`Stmt::Walk`), and the comparisons
    /// that unify the parts of `out` that are values (a constant, a bound
    /// local, a reference) with what each pair binds there. `out` is a
    /// pattern (`[p, v]`, `[["k"], _]`) or one variable taking the pair;
    /// anything else (an array of another length, a composite holding a
    /// variable to bind) is refused.
    fn walk(
        &mut self,
        of: &Ref<Expr>,
        out: &Ref<Expr>,
        pkg: &[String],
        scope: &mut Scope,
    ) -> Option<(Stmt, Vec<Stmt>)> {
        let of = self.expr(of, pkg, scope)?;
        let (&name, &fcn) = BUILTINS.get_key_value("walk")?;
        let call = Builtin {
            name,
            fcn,
            estimate: budget::estimate_of(name),
            compat: opa_builtins::of(name),
            fast: None,
        };
        let mut checks = Vec::new();
        let out = match out.as_ref() {
            Expr::Array { items, .. } => {
                let [path, member] = &items[..] else {
                    return None;
                };
                let path = self.walk_part(path, pkg, scope, &mut checks)?;
                let member = self.walk_part(member, pkg, scope, &mut checks)?;
                WalkOut::Pair(path, member)
            }
            _ => WalkOut::Whole(self.walk_part(out, pkg, scope, &mut checks)?),
        };
        Some((Stmt::Walk { of, call, out }, checks))
    }

    /// One part of `walk`'s pattern: a slot for a fresh variable or `_`;
    /// else (a value) an anonymous slot and its comparison with the value.
    fn walk_part(
        &mut self,
        part: &Ref<Expr>,
        pkg: &[String],
        scope: &mut Scope,
        checks: &mut Vec<Stmt>,
    ) -> Option<usize> {
        if let Some(name) = var_name(part)
            && !scope.names.contains_key(&name)
        {
            if matches!(name.as_str(), "input" | "data") {
                return None;
            }
            return self.local(scope, &name, pkg);
        }
        let value = self.expr(part, pkg, scope)?;
        let slot = scope.bind("_")?;
        checks.push(Stmt::Expr(Term::Compare(
            Cmp::Eq,
            Box::new(Term::Local(slot)),
            Box::new(value),
        )));
        Some(slot)
    }

    /// `every k, v in domain { body }`: the domain in the enclosing scope;
    /// the key, value and the body's locals its own names (slots of the
    /// enclosing body, like a comprehension's), none visible after it. A
    /// name the enclosing body already binds is refused (OPA declares a
    /// new local there; refusing is safe), as are `input` and `data`.
    fn every(
        &mut self,
        key: Option<&Span>,
        value: &Span,
        domain: &Ref<Expr>,
        query: &Ref<Query>,
        pkg: &[String],
        scope: &mut Scope,
    ) -> Option<Stmt> {
        let domain = self.expr(domain, pkg, scope)?;
        let outer = scope.names.clone();
        let bind = |lower: &mut Self, scope: &mut Scope, name: &Span| {
            let name = name.text();
            if matches!(name, "input" | "data") {
                return None;
            }
            lower.local(scope, name, pkg)
        };
        let key = match key {
            Some(k) => Some(bind(self, scope, k)?),
            None => None,
        };
        let value = bind(self, scope, value)?;
        let mark = scope.every.len();
        scope.every.extend(key.iter().copied().chain([value]));
        let hoisted = scope.hoisted.take();
        let body = self.stmts(query, pkg, scope);
        scope.hoisted = hoisted;
        scope.every.truncate(mark);
        let body = body?;
        scope.names = outer;
        Some(Stmt::Every {
            key,
            value,
            domain,
            body,
        })
    }

    /// A comprehension: its own names (its locals take slots of the
    /// enclosing body, which outlive it), the enclosing ones visible.
    pub(super) fn comprehension(
        &mut self,
        kind: Collect,
        value: &Ref<Expr>,
        key: Option<&Ref<Expr>>,
        query: &Query,
        pkg: &[String],
        scope: &mut Scope,
    ) -> Option<Term> {
        let outer = scope.names.clone();
        let declared = std::mem::take(&mut scope.declared);
        let hoisted = scope.hoisted.take();
        let stmts = self.stmts(query, pkg, scope);
        scope.declared = declared;
        scope.hoisted = hoisted;
        let stmts = stmts?;
        let value = self.expr(value, pkg, scope)?;
        let value = match key {
            Some(k) => Term::Array(vec![self.expr(k, pkg, scope)?, value]),
            None => value,
        };
        scope.names = outer;
        Some(Term::Compr {
            kind,
            stmts,
            value: Box::new(value),
        })
    }

    /// The value of rule `i` when it is one unconditional constant
    /// (`pattern := "^[a-z]+$"`, `dir := data.root`): a reference to it is
    /// then that constant, so it folds into what uses it, and a pattern or
    /// format held in a rule is compiled once like a literal one
    /// (`policy/builtins`). regorus evaluates such a rule to that value
    /// every time.
    pub(super) fn constant_rule(&self, i: usize) -> Option<Term> {
        let rule = self.rules.get(i)?.as_ref()?;
        if rule.kind != Kind::Complete || rule.default.is_some() {
            return None;
        }
        let [def] = &rule.defs[..] else {
            return None;
        };
        let [body] = &def.bodies[..] else {
            return None;
        };
        match (&body.stmts[..], &body.value) {
            ([], Term::Const(v)) => Some(Term::Const(v.clone())),
            _ => None,
        }
    }

    /// A constant reference into the data documents (`data.github.repos`),
    /// as its value. Refused when any part of it could be a rule's.
    pub(super) fn data(&self, e: &Expr) -> Option<Term> {
        let path = path_of(e);
        if path.first().map(String::as_str) != Some("data") || path.iter().any(|s| s == "[_]") {
            return None;
        }
        let path = &path[1..];
        if self.modules.iter().any(|(pkg, _)| {
            let n = pkg.len().min(path.len());
            pkg[..n] == path[..n]
        }) {
            return None;
        }
        let mut v = &self.data;
        for seg in path {
            v = &v[seg.as_str()];
        }
        Some(Term::Const(v.clone()))
    }

    /// An expression; one that reads nothing a request supplies is
    /// evaluated here, once (`native::fold`).
    pub(super) fn expr(
        &mut self,
        e: &Ref<Expr>,
        pkg: &[String],
        scope: &mut Scope,
    ) -> Option<Term> {
        let bound = scope.next;
        let hoisted = scope.hoisted.as_ref().map_or(0, Vec::len);
        let term = self.expr_inner(e, pkg, scope)?;
        // A local bound by an iteration moved before the statement is
        // not static.
        let moved = scope.hoisted.as_ref().map_or(0, Vec::len) != hoisted;
        if moved || matches!(term, Term::Const(_)) || !native::is_static(&term, bound) {
            return Some(term);
        }
        Some(match native::fold(&term, scope.next, &self.limits) {
            Some(v) => Term::Const(v),
            None => term,
        })
    }

    pub(super) fn expr_inner(
        &mut self,
        e: &Ref<Expr>,
        pkg: &[String],
        scope: &mut Scope,
    ) -> Option<Term> {
        if root_is_data(e) {
            return self.data(e);
        }
        Some(match e.as_ref() {
            Expr::String { value, .. }
            | Expr::RawString { value, .. }
            | Expr::Number { value, .. }
            | Expr::Bool { value, .. }
            | Expr::Null { value, .. } => Term::Const(value.clone()),
            Expr::Var { value, .. } => {
                let name = value.as_string().ok()?;
                match name.as_ref() {
                    "_" | "data" => return None,
                    n if scope.names.contains_key(n) => Term::Local(scope.names[n]),
                    "input" => Term::Input,
                    n => {
                        let i = self.rule(pkg, n)?;
                        self.constant_rule(i).unwrap_or(Term::Rule(i))
                    }
                }
            }
            Expr::RefDot { refr, field, .. } => {
                if let Expr::Var { value, .. } = refr.as_ref() {
                    let name = value.as_string().ok()?;
                    let target = self.aliases(pkg)?.get(name.as_ref()).cloned();
                    if let (Some(target), false) = (target, scope.names.contains_key(name.as_ref()))
                    {
                        return self.imported(&target, field.1.as_string().ok()?.as_ref());
                    }
                }
                let base = self.expr(refr, pkg, scope)?;
                self.index(base, Term::Const(field.1.clone()))
            }
            Expr::RefBrack { refr, index, .. } => {
                if let Some(name) = var_name(index)
                    && scope.hoisted.is_some()
                    && !scope.names.contains_key(&name)
                    && scope.declared.contains(&name)
                {
                    // `xs[x]`, `x` declared by `some x`: iterate `xs`.
                    let collection = self.expr(refr, pkg, scope)?;
                    scope.declared.retain(|d| *d != name);
                    let key = Some(scope.bind(&name)?);
                    let value = scope.bind("_")?;
                    scope.hoisted.as_mut()?.push(Stmt::SomeIn {
                        key,
                        value,
                        collection,
                    });
                    return Some(Term::Local(value));
                }
                let base = self.expr(refr, pkg, scope)?;
                let key = self.expr(index, pkg, scope)?;
                self.index(base, key)
            }
            Expr::Array { items, .. } => {
                let items = self.exprs(items, pkg, scope)?;
                match consts(&items) {
                    Some(vs) => Term::Const(Value::from(vs)),
                    None => Term::Array(items),
                }
            }
            Expr::Set { items, .. } => {
                let items = self.exprs(items, pkg, scope)?;
                match consts(&items) {
                    Some(vs) => {
                        let mut set = Value::new_set();
                        for v in vs {
                            set.as_set_mut().ok()?.insert(v);
                        }
                        Term::Const(set)
                    }
                    None => Term::Set(items),
                }
            }
            Expr::Object { fields, .. } => {
                let mut out = Vec::with_capacity(fields.len());
                for (_, k, v) in fields {
                    out.push((self.expr(k, pkg, scope)?, self.expr(v, pkg, scope)?));
                }
                Term::Object(out)
            }
            Expr::Call { fcn, params, .. } => {
                let path = path_of(fcn);
                if path.iter().any(|s| s == "[_]")
                    || !dotted(fcn)
                    || matches!(path[0].as_str(), "data" | "input")
                    || scope.names.contains_key(&path[0])
                {
                    return None;
                }
                // A function: through an import alias (regorus resolves
                // those first), or of this package.
                let target = match self.aliases(pkg)?.get(&path[0]) {
                    // regorus takes the last argument of a call spelled as a
                    // builtin of one parameter fewer for its result, even
                    // through an alias: refused.
                    Some(_) if BUILTINS.contains_key(path.join(".").as_str()) => return None,
                    Some(t) if path.len() == 2 => Some((t.clone(), path[1].clone())),
                    Some(_) => return None,
                    None if path.len() == 1 && self.defines(pkg, &path[0]) => {
                        Some((pkg.to_vec(), path[0].clone()))
                    }
                    None => None,
                };
                if let Some((target, name)) = target {
                    let f = self.function(&target, &name, params.len())?;
                    return Some(Term::Func(f, self.exprs(params, pkg, scope)?));
                }
                // A builtin, unless a rule of this package or a function
                // of a package under it has its name.
                let (last, prefix) = path.split_last()?;
                let mut under = pkg.to_vec();
                under.extend(prefix.iter().cloned());
                if self.defines(pkg, &path[0]) || (!prefix.is_empty() && self.defines(&under, last))
                {
                    return None;
                }
                let name = path.join(".");
                let (&key, &fcn) = BUILTINS.get_key_value(name.as_str())?;
                if usize::from(fcn.1) != params.len()
                    || params.len() > 4
                    || must_cache(key).is_some()
                    || IMPURE.contains(&key)
                    || key.starts_with("rand.")
                    || key.starts_with("uuid.")
                    || key.starts_with("time.now")
                {
                    return None;
                }
                let args = self.exprs(params, pkg, scope)?;
                let consts: Vec<Option<&Value>> = args
                    .iter()
                    .map(|a| match a {
                        Term::Const(v) => Some(v),
                        _ => None,
                    })
                    .collect();
                Term::Call(
                    Builtin {
                        name: key,
                        fcn,
                        estimate: budget::estimate_of(key),
                        compat: opa_builtins::of(key),
                        fast: Fast::of(key, &consts).map(Box::new),
                    },
                    args,
                )
            }
            // `%`: OPA's remainder (regorus refuses an integral float past
            // 2^53, which OPA reads as a 64-bit `big.Float`).
            Expr::ArithExpr {
                op: ArithOp::Mod,
                lhs,
                rhs,
                ..
            } => Term::Rem(
                Box::new(self.expr(lhs, pkg, scope)?),
                Box::new(self.expr(rhs, pkg, scope)?),
            ),
            // `+ - * /`: OPA's arithmetic on the numbers' texts, or a
            // refusal naming this expression where regent cannot hold
            // OPA's result (`opa_builtins::arith`).
            Expr::ArithExpr {
                span,
                op: op @ (ArithOp::Add | ArithOp::Sub | ArithOp::Mul | ArithOp::Div),
                lhs,
                rhs,
                ..
            } => Term::Arith(
                match op {
                    ArithOp::Add => Arith::Add,
                    ArithOp::Sub => Arith::Sub,
                    ArithOp::Mul => Arith::Mul,
                    _ => Arith::Div,
                },
                Box::new(self.expr(lhs, pkg, scope)?),
                Box::new(self.expr(rhs, pkg, scope)?),
                format!(
                    "{}:{}:{}: `{}`",
                    span.source.file(),
                    span.line,
                    span.col,
                    span.text()
                )
                .into(),
            ),
            Expr::BoolExpr { op, lhs, rhs, .. } => Term::Compare(
                match op {
                    BoolOp::Eq => Cmp::Eq,
                    BoolOp::Ne => Cmp::Ne,
                    BoolOp::Lt => Cmp::Lt,
                    BoolOp::Le => Cmp::Le,
                    BoolOp::Gt => Cmp::Gt,
                    BoolOp::Ge => Cmp::Ge,
                },
                Box::new(self.expr(lhs, pkg, scope)?),
                Box::new(self.expr(rhs, pkg, scope)?),
            ),
            Expr::Membership {
                key: None,
                value,
                collection,
                ..
            } => {
                let value = Box::new(self.expr(value, pkg, scope)?);
                match self.expr(collection, pkg, scope)? {
                    // `k in object.keys(x)` asks whether `x` has the key,
                    // without building the set of its keys (issue 17).
                    Term::Call(b, mut args) if b.name == "object.keys" && args.len() == 1 => {
                        Term::KeyIn(value, Box::new(args.remove(0)))
                    }
                    collection => Term::In(value, Box::new(collection)),
                }
            }
            Expr::ArrayCompr { term, query, .. } => {
                self.comprehension(Collect::Array, term, None, query, pkg, scope)?
            }
            Expr::SetCompr { term, query, .. } => {
                self.comprehension(Collect::Set, term, None, query, pkg, scope)?
            }
            Expr::ObjectCompr {
                key, value, query, ..
            } => self.comprehension(Collect::Object, value, Some(key), query, pkg, scope)?,
            _ => return None,
        })
    }

    /// `base[key]`: a memoized path when `base` is fixed for the whole
    /// evaluation (`input`, a rule, or such a path) and `key` a constant,
    /// the same path each time it is written.
    pub(super) fn index(&mut self, base: Term, key: Term) -> Term {
        let fixed = matches!(base, Term::Input | Term::Rule(_) | Term::Path(_));
        let (true, Term::Const(key)) = (fixed, &key) else {
            return Term::Index(Box::new(base), Box::new(key));
        };
        let same = |p: &native::Path| {
            p.key == *key
                && match (&p.base, &base) {
                    (Term::Input, Term::Input) => true,
                    (Term::Rule(a), Term::Rule(b)) | (Term::Path(a), Term::Path(b)) => a == b,
                    _ => false,
                }
        };
        if let Some(i) = self.paths.iter().position(same) {
            return Term::Path(i);
        }
        self.paths.push(native::Path {
            base,
            key: key.clone(),
        });
        Term::Path(self.paths.len() - 1)
    }

    pub(super) fn exprs(
        &mut self,
        es: &[Ref<Expr>],
        pkg: &[String],
        scope: &mut Scope,
    ) -> Option<Vec<Term>> {
        es.iter().map(|e| self.expr(e, pkg, scope)).collect()
    }
}

/// Whether `t` can neither fail nor be skipped before an iteration moved
/// ahead of it: references, locals, constants, comparisons, membership
/// and composites of those.
fn plain(t: &Term) -> bool {
    match t {
        Term::Const(_) | Term::Input | Term::Local(_) | Term::Rule(_) | Term::Path(_) => true,
        Term::Index(a, b) | Term::Compare(_, a, b) | Term::In(a, b) | Term::KeyIn(a, b) => {
            plain(a) && plain(b)
        }
        Term::Array(items) | Term::Set(items) => items.iter().all(plain),
        Term::Object(fields) => fields.iter().all(|(k, v)| plain(k) && plain(v)),
        _ => false,
    }
}
