//! Lowering a tool's planned rules into `native`'s terms, once, at load.
//!
//! A rule is lowered when everything it is made of is in `native`'s subset
//! (its module doc lists it); anything else (`every`, `with`, `data.x.r`
//! references to rules of other packages, unification, arithmetic, a
//! builtin that is not deterministic, recursion, a `default` function, a
//! function parameter that is not a plain variable or `_`, a function whose
//! definitions span several modules, an import other than `rego.v1`,
//! `future.keywords` and `import data.x [as y]` of exactly a package)
//! leaves its plan step without an entry, so requests evaluate that plan on
//! regorus. Refusing is always safe; accepting something whose meaning
//! differs from regorus' is not, so when in doubt this module refuses.
//!
//! Variables are resolved as regorus resolves them: locals of the body
//! (and a function's parameters) first, then `input`, then rules of the
//! same package (a rule that is one unconditional constant is read as that
//! constant); `y.r` and `y.f(…)` through an import alias `y` are the
//! rule `r` and function `f` of the imported package. A body must bind a
//! local before it uses it (regorus would reorder such a body; this module
//! refuses it instead), and a local may not share its name with a rule,
//! function or import alias of the package (regorus then fails or reads
//! the rule). Calls resolve as in regorus: an import alias first, then a
//! function of the package, then a builtin; a builtin's name that a rule or
//! a package under this one could also mean is refused. An import alias
//! is refused when a rule of the package or a package under it shares its
//! name (regorus would read those instead), and `data.x` when a package
//! under it or a data document at it exists (regorus merges them into
//! `data.x`).
//!
//! This module reads syntax and knows the builtin table; it does not
//! evaluate anything.

use std::collections::HashMap;

use regorus::Value;
use regorus::unstable::{
    ArithOp, AssignOp, BUILTINS, BoolOp, Expr, Literal, Module, Query, Ref, Rule, RuleHead,
    must_cache,
};

use crate::opa_builtins;
use crate::opa_builtins::arith::Op as Arith;
use crate::policy::budget;
use crate::policy::budget::Limits;
use crate::policy::builtins::Fast;
use crate::policy::native::{
    self, Body, Builtin, Cmp, Collect, Def, Kind, Program, Rule as NRule, Stmt, Term,
};
use crate::rego::{head, path_of};

/// Builtins whose answer is not a function of their arguments, or that
/// need the interpreter: never lowered.
const IMPURE: &[&str] = &["print", "trace", "walk", "http.send", "net.lookup_ip_addr"];

/// Lowers every step of `paths` (`data.tools.x.deny`) that it can; `None`
/// when it can lower none.
pub fn program<'p>(
    engine: &mut regorus::Engine,
    paths: impl IntoIterator<Item = &'p str>,
    limits: Limits,
) -> Option<Program> {
    let modules: Vec<(Vec<String>, Ref<Module>)> = engine
        .get_modules()
        .iter()
        .map(|m| (package_of(m), m.clone()))
        .collect();
    let mut lower = Lower {
        data: engine.get_data(),
        limits,
        modules,
        rules: Vec::new(),
        index: HashMap::new(),
        paths: Vec::new(),
        aliases: HashMap::new(),
    };
    let mut entries: Vec<(String, usize)> = Vec::new();
    for path in paths {
        let Some((pkg, name)) = split_path(path) else {
            continue;
        };
        let (mark, paths) = (lower.rules.len(), lower.paths.len());
        match lower.rule(&pkg, &name) {
            Some(i) => {
                entries.push((path.to_string(), i));
            }
            None => {
                // Undo what this entry lowered; earlier entries keep theirs.
                lower.rules.truncate(mark);
                lower.index.retain(|_, i| *i < mark);
                lower.paths.truncate(paths);
            }
        }
    }
    if entries.is_empty() {
        return None;
    }
    let rules = lower.rules.into_iter().collect::<Option<Vec<_>>>()?;
    Some(Program {
        rules,
        entries,
        paths: lower.paths,
    })
}

/// `data.tools.manage_files.deny` → (`["tools", "manage_files"]`, `deny`);
/// bracketed segments (`data.tools["my-tool"].deny`) are JSON strings.
fn split_path(path: &str) -> Option<(Vec<String>, String)> {
    let mut rest = path.strip_prefix("data")?;
    let mut segs = Vec::new();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            segs.push(r[..end].to_string());
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find("\"]")? + 1;
            segs.push(serde_json::from_str::<String>(&r[..end]).ok()?);
            rest = &r[end + 1..];
        } else {
            return None;
        }
    }
    let name = segs.pop()?;
    Some((segs, name))
}

fn package_of(m: &Ref<Module>) -> Vec<String> {
    let mut p = path_of(&m.package.refr);
    if p.first().is_some_and(|s| s == "data") {
        p.remove(0);
    }
    p
}

struct Lower {
    /// The engine's data documents.
    data: Value,
    /// The tool's limits, for what is evaluated at load.
    limits: Limits,
    modules: Vec<(Vec<String>, Ref<Module>)>,
    /// `None` while a rule is being lowered (a reference back to it is
    /// recursion, refused).
    rules: Vec<Option<NRule>>,
    index: HashMap<(Vec<String>, String), usize>,
    /// The memoized paths (`native::Program::paths`).
    paths: Vec<native::Path>,
    /// Each package's import aliases (`Lower::aliases`).
    aliases: HashMap<Vec<String>, Option<HashMap<String, Vec<String>>>>,
}

/// An alias to a package (`import data.root`: `root` to `["root"]`).
type Aliases = HashMap<String, Vec<String>>;

/// A body's locals: name to slot.
#[derive(Default)]
struct Scope {
    names: HashMap<String, usize>,
    next: usize,
}

impl Scope {
    fn bind(&mut self, name: &str) -> Option<usize> {
        if name != "_" && self.names.contains_key(name) {
            return None;
        }
        let slot = self.next;
        self.next += 1;
        if name != "_" {
            self.names.insert(name.to_string(), slot);
        }
        Some(slot)
    }
}

impl Lower {
    fn modules_of(&self, pkg: &[String]) -> Vec<Ref<Module>> {
        self.modules
            .iter()
            .filter(|(p, _)| p == pkg)
            .map(|(_, m)| m.clone())
            .collect()
    }

    /// Whether some rule or function of `pkg` is called `name`.
    fn defines(&self, pkg: &[String], name: &str) -> bool {
        self.modules_of(pkg).iter().any(|m| {
            m.policy
                .iter()
                .any(|r| path_of(head(r)).first().is_some_and(|n| n == name))
        })
    }

    fn rule(&mut self, pkg: &[String], name: &str) -> Option<usize> {
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

    fn definition(
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
    fn body(
        &mut self,
        query: Option<&Ref<Query>>,
        value: Option<&Ref<Expr>>,
        pkg: &[String],
    ) -> Option<Body> {
        self.body_in(Scope::default(), query, value, pkg)
    }

    /// A body whose first locals are already bound (a function's
    /// parameters).
    fn body_in(
        &mut self,
        mut scope: Scope,
        query: Option<&Ref<Query>>,
        value: Option<&Ref<Expr>>,
        pkg: &[String],
    ) -> Option<Body> {
        let stmts = match query {
            Some(q) => self.stmts(q, pkg, &mut scope)?,
            None => Vec::new(),
        };
        let value = match value {
            Some(v) => self.expr(v, pkg, &mut scope)?,
            None => Term::Const(Value::Bool(true)),
        };
        Some(Body {
            stmts,
            value,
            locals: scope.next,
        })
    }

    /// The function `name` of `pkg` taking `arity` arguments: every
    /// definition of it, all in one module (regorus evaluates all of them
    /// with the loop plans of one module), none `default`.
    fn function(&mut self, pkg: &[String], name: &str, arity: usize) -> Option<usize> {
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
    fn imported(&mut self, target: &[String], name: &str) -> Option<Term> {
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
    fn aliases(&mut self, pkg: &[String]) -> Option<Aliases> {
        if let Some(a) = self.aliases.get(pkg) {
            return a.clone();
        }
        let a = self.compute_aliases(pkg);
        self.aliases.insert(pkg.to_vec(), a.clone());
        a
    }

    fn compute_aliases(&self, pkg: &[String]) -> Option<Aliases> {
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

    /// A new local `name`, refused when it is also the name of a rule,
    /// function or import alias of `pkg` (regorus may then fail with "var
    /// used before definition", or read the rule).
    fn local(&mut self, scope: &mut Scope, name: &str, pkg: &[String]) -> Option<usize> {
        if name != "_" && (self.defines(pkg, name) || self.aliases(pkg)?.contains_key(name)) {
            return None;
        }
        scope.bind(name)
    }

    fn stmts(&mut self, query: &Query, pkg: &[String], scope: &mut Scope) -> Option<Vec<Stmt>> {
        let mut stmts = Vec::with_capacity(query.stmts.len());
        for stmt in &query.stmts {
            if !stmt.with_mods.is_empty() {
                return None;
            }
            stmts.push(match &stmt.literal {
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
                    Stmt::Not(self.expr(expr, pkg, scope)?, guards)
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
                Literal::SomeVars { .. } | Literal::Every { .. } => return None,
            });
        }
        Some(stmts)
    }

    /// A comprehension: its own names (its locals take slots of the
    /// enclosing body, which outlive it), the enclosing ones visible.
    fn comprehension(
        &mut self,
        kind: Collect,
        value: &Ref<Expr>,
        key: Option<&Ref<Expr>>,
        query: &Query,
        pkg: &[String],
        scope: &mut Scope,
    ) -> Option<Term> {
        let outer = scope.names.clone();
        let stmts = self.stmts(query, pkg, scope)?;
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
    fn constant_rule(&self, i: usize) -> Option<Term> {
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
    fn data(&self, e: &Expr) -> Option<Term> {
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
    fn expr(&mut self, e: &Ref<Expr>, pkg: &[String], scope: &mut Scope) -> Option<Term> {
        let bound = scope.next;
        let term = self.expr_inner(e, pkg, scope)?;
        if matches!(term, Term::Const(_)) || !native::is_static(&term, bound) {
            return Some(term);
        }
        Some(match native::fold(&term, scope.next, &self.limits) {
            Some(v) => Term::Const(v),
            None => term,
        })
    }

    fn expr_inner(&mut self, e: &Ref<Expr>, pkg: &[String], scope: &mut Scope) -> Option<Term> {
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
    fn index(&mut self, base: Term, key: Term) -> Term {
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

    fn exprs(&mut self, es: &[Ref<Expr>], pkg: &[String], scope: &mut Scope) -> Option<Vec<Term>> {
        es.iter().map(|e| self.expr(e, pkg, scope)).collect()
    }
}

/// Whether a reference starts at `data`.
fn root_is_data(e: &Expr) -> bool {
    match e {
        Expr::RefDot { refr, .. } | Expr::RefBrack { refr, .. } => root_is_data(refr),
        Expr::Var { value, .. } => value.as_string().is_ok_and(|s| s.as_ref() == "data"),
        _ => false,
    }
}

fn var_name(e: &Ref<Expr>) -> Option<String> {
    match e.as_ref() {
        Expr::Var { value, .. } => value.as_string().ok().map(|s| s.to_string()),
        _ => None,
    }
}

/// The values of `terms` when all are constants.
fn consts(terms: &[Term]) -> Option<Vec<Value>> {
    terms
        .iter()
        .map(|t| match t {
            Term::Const(v) => Some(v.clone()),
            _ => None,
        })
        .collect()
}

/// Adds to `out` what decides whether `t` is defined: nothing for a
/// constant, local or comprehension (always defined); the operands of a
/// builtin call, comparison, membership or composite (undefined exactly
/// when one of them is; an error is raised again when the negated term
/// runs), so that `not "k" in object.keys(x)` checks `x` rather than build
/// its keys; anything else (a reference, a function) whole.
fn guard(t: Term, out: &mut Vec<Term>) {
    match t {
        Term::Const(_) | Term::Local(_) | Term::Compr { .. } => {}
        Term::Call(_, args) | Term::Array(args) | Term::Set(args) => {
            for a in args {
                guard(a, out);
            }
        }
        Term::Object(fields) => {
            for (k, v) in fields {
                guard(k, out);
                guard(v, out);
            }
        }
        Term::Compare(_, a, b)
        | Term::Rem(a, b)
        | Term::Arith(_, a, b, _)
        | Term::In(a, b)
        | Term::KeyIn(a, b) => {
            guard(*a, out);
            guard(*b, out);
        }
        t => out.push(t),
    }
}

/// A function's parameters as the first locals of a body: plain, distinct
/// variables or `_` (anything else is a pattern, refused).
fn params(args: &[Ref<Expr>]) -> Option<Scope> {
    let mut scope = Scope::default();
    for a in args {
        let name = var_name(a)?;
        if matches!(name.as_str(), "input" | "data") {
            return None;
        }
        scope.bind(&name)?;
    }
    Some(scope)
}

/// Whether a reference is a variable followed by `.field`s only.
fn dotted(e: &Expr) -> bool {
    match e {
        Expr::RefDot { refr, .. } => dotted(refr),
        Expr::Var { .. } => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::split_path;

    #[test]
    fn step_paths_split_into_package_and_rule() {
        assert_eq!(
            split_path("data.tools.manage_files.deny"),
            Some((vec!["tools".into(), "manage_files".into()], "deny".into()))
        );
        assert_eq!(
            split_path("data.tools[\"my-tool\"].meta"),
            Some((vec!["tools".into(), "my-tool".into()], "meta".into()))
        );
        assert_eq!(split_path("input.x"), None);
    }
}
