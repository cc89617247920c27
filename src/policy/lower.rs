//! Lowering a tool's planned rules into `native`'s terms, once, at load.
//!
//! A rule is lowered when everything it is made of is in `native`'s subset
//! (its module doc lists it); anything else (`some x` declarations not
//! bound by an index of a plain statement,
//! `with`, an `every` rebinding a name of its enclosing body, `data.x.r`
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
//!
//! This file holds the entry ([`program`]), the lowering's state and the
//! small syntax helpers; `rules` lowers rules, functions and imports by
//! name, `exprs` a body's statements and expressions.

use std::collections::HashMap;

use regorus::Value;
use regorus::unstable::{Expr, Module, Ref};

use crate::policy::budget::Limits;
use crate::policy::native::{self, Program, Rule as NRule, Term};
use crate::rego::path_of;

mod exprs;
mod index;
mod rules;

/// Builtins whose answer is not a function of their arguments, or that
/// need the interpreter: never lowered as a call (`walk(x, out)` as a
/// statement is `exprs`' `Stmt::Walk`).
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
    /// The slots of the keys and values of the `every`s being lowered.
    every: Vec<usize>,
    /// `some x` declarations not yet bound: the first `xs[x]` of a plain
    /// statement binds `x` by iterating `xs` (`Scope::hoisted`).
    declared: Vec<String>,
    /// The iterations the statement being lowered needs before it
    /// (`some x; xs[x] == 1` is `some x, v in xs; v == 1`); `None` where
    /// a declared variable may not be bound (a `not`, `every`, a
    /// comprehension, a call's statement).
    hoisted: Option<Vec<native::Stmt>>,
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

/// Whether `t` indexes something by one of the locals `slots` (`b[x]`).
fn indexes_by(t: &Term, slots: &[usize]) -> bool {
    let any = |ts: &[Term]| ts.iter().any(|t| indexes_by(t, slots));
    match t {
        Term::Index(base, key) => {
            matches!(key.as_ref(), Term::Local(i) if slots.contains(i))
                || indexes_by(base, slots)
                || indexes_by(key, slots)
        }
        Term::Const(_)
        | Term::Input
        | Term::Local(_)
        | Term::Rule(_)
        | Term::Path(_)
        | Term::Imported { .. } => false,
        Term::Func(_, args) | Term::Call(_, args) | Term::Array(args) | Term::Set(args) => {
            any(args)
        }
        Term::Object(fields) => fields
            .iter()
            .any(|(k, v)| indexes_by(k, slots) || indexes_by(v, slots)),
        Term::Compare(_, a, b)
        | Term::Rem(a, b)
        | Term::Arith(_, a, b, _)
        | Term::In(a, b)
        | Term::KeyIn(a, b) => indexes_by(a, slots) || indexes_by(b, slots),
        // A comprehension's own statements: regorus' loops there are its
        // own.
        Term::Compr { value, .. } => indexes_by(value, slots),
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
