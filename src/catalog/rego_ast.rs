//! Reading policies as syntax: which rules a module defines and where, which
//! tool arguments a policy reads, and the mistakes that regorus only reports
//! when a faulty expression happens to run (unknown functions, wrong arity,
//! recursion between rules).
//!
//! regorus keeps its syntax tree behind `regorus::unstable` and a hidden
//! `Engine::get_modules`; both are pinned with the crate (=0.14.1), and this
//! module is the only place that touches them. Evaluation stays in `policy`;
//! deciding what a finding means for a catalog is `regent check`'s job.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use regorus::unstable::{
    AssignOp, BUILTINS, Expr, Literal, Module, Query, Ref, Rule, RuleHead, Span,
};

use crate::diag::{Diagnostic, Location};

/// Files whose name starts with this are regent's generated decision modules.
pub const GENERATED_PREFIX: &str = "regent-generated/";

/// One policy module in an engine, with its package.
#[derive(Clone)]
pub struct PolicyModule {
    pub path: String,
    pub text: String,
    /// Without the leading `data.`: `tools.manage_files`.
    pub package: String,
    pub(super) module: Ref<Module>,
}

impl PolicyModule {
    /// The module's `package` line, as written.
    pub fn package_decl(&self) -> String {
        let text = self.module.package.span.text();
        if text.starts_with("package") {
            text.to_string()
        } else {
            format!("package {text}")
        }
    }

    /// The source text of the module's imports, one per line, for copying
    /// into a probe module of the same package.
    pub fn imports_text(&self) -> String {
        self.module
            .imports
            .iter()
            .map(|i| format!("{}\n", i.span.text()))
            .collect()
    }
}

/// The modules of `engine` a person wrote (not regent's generated ones).
pub fn modules(engine: &mut regorus::Engine) -> Vec<PolicyModule> {
    engine
        .get_modules()
        .iter()
        .filter_map(|m| {
            let source = &m.package.span.source;
            let path = source.file().to_string();
            if path.starts_with(GENERATED_PREFIX) {
                return None;
            }
            let package = path_of(&m.package.refr)
                .into_iter()
                .skip_while(|c| c == "data")
                .collect::<Vec<_>>()
                .join(".");
            Some(PolicyModule {
                path,
                text: source.contents().to_string(),
                package,
                module: m.clone(),
            })
        })
        .collect()
}

/// What a rule definition is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleKind {
    /// `default x := v`
    Default,
    /// `x := v if ...`, `x.y := v if ...`
    Complete,
    /// `x contains v if ...`
    PartialSet,
    /// `f(a) := v if ...`
    Function,
}

/// One definition of a rule, where it is and what it looks like.
#[derive(Debug, Clone)]
pub struct RuleDef {
    pub package: String,
    /// The head's path: `["annotations", "destructiveHint"]`; a non-constant
    /// key is `"[_]"`.
    pub path: Vec<String>,
    pub kind: RuleKind,
    pub location: Location,
    /// Byte range of the whole definition in its file. regorus' spans can
    /// stop short of a rule's last character, so the range runs to the
    /// start of the next definition (comments between them included).
    pub start: usize,
    pub end: usize,
    /// Byte range of the head's first name, which a probe renames.
    pub name_start: usize,
    pub name_end: usize,
    /// The module the definition is in (index into [`modules`]' result).
    pub module: usize,
}

impl RuleDef {
    pub fn name(&self) -> &str {
        self.path.first().map_or("", String::as_str)
    }
}

pub(super) fn span_location(span: &Span) -> Location {
    let line = span.line as usize;
    let text = span.source.contents();
    let col = text
        .lines()
        .nth(line.saturating_sub(1))
        .map_or(span.col as usize, |l| {
            super::policy::char_column(l, span.col as usize)
        });
    Location::new(span.source.file().to_string(), line, col)
}

/// The components of a reference (`input.arguments["action"]` gives
/// `input`, `arguments`, `action`); a component that is not a constant is `[_]`.
pub(super) fn path_of(e: &Expr) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = e;
    loop {
        match cur {
            Expr::RefDot { refr, field, .. } => {
                out.push(
                    field
                        .1
                        .as_string()
                        .map_or("[_]".to_string(), |s| s.to_string()),
                );
                cur = refr;
            }
            Expr::RefBrack { refr, index, .. } => {
                out.push(const_string(index).unwrap_or_else(|| "[_]".to_string()));
                cur = refr;
            }
            Expr::Var { value, .. } => {
                out.push(
                    value
                        .as_string()
                        .map_or("[_]".to_string(), |s| s.to_string()),
                );
                break;
            }
            _ => {
                out.push("[_]".to_string());
                break;
            }
        }
    }
    out.reverse();
    out
}

pub(super) fn const_string(e: &Expr) -> Option<String> {
    match e {
        Expr::String { value, .. } | Expr::RawString { value, .. } => {
            value.as_string().ok().map(|s| s.to_string())
        }
        _ => None,
    }
}

/// The span of the first component of a reference.
fn root_span(e: &Expr) -> &Span {
    match e {
        Expr::RefDot { refr, .. } | Expr::RefBrack { refr, .. } => root_span(refr),
        other => other.span(),
    }
}

/// Every rule definition in `modules`.
pub fn rule_defs(modules: &[PolicyModule]) -> Vec<RuleDef> {
    let mut out = Vec::new();
    for (mi, m) in modules.iter().enumerate() {
        let mut starts: Vec<usize> = m
            .module
            .policy
            .iter()
            .map(|r| r.span().start as usize)
            .collect();
        starts.sort_unstable();
        for rule in &m.module.policy {
            let (refr, kind) = match rule.as_ref() {
                Rule::Default { refr, .. } => (refr, RuleKind::Default),
                Rule::Spec { head, .. } => match head {
                    RuleHead::Compr { refr, .. } => (refr, RuleKind::Complete),
                    RuleHead::Set { refr, .. } => (refr, RuleKind::PartialSet),
                    RuleHead::Func { refr, .. } => (refr, RuleKind::Function),
                },
            };
            let span = rule.span();
            let name = root_span(refr);
            let end = starts
                .iter()
                .copied()
                .find(|s| *s > span.start as usize)
                .unwrap_or(m.text.len());
            out.push(RuleDef {
                package: m.package.clone(),
                path: path_of(refr),
                kind,
                location: span_location(span),
                start: span.start as usize,
                end,
                name_start: name.start as usize,
                name_end: name.end as usize,
                module: mi,
            });
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Walking expressions

/// Calls `f` on every expression under `e`, outermost first; when `f`
/// returns false the children of that expression are skipped.
pub(super) fn walk_expr(e: &Expr, f: &mut dyn FnMut(&Expr) -> bool) {
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
                walk_expr(i, f);
            }
        }
        Expr::Object { fields, .. } => {
            for (_, k, v) in fields {
                walk_expr(k, f);
                walk_expr(v, f);
            }
        }
        Expr::ArrayCompr { term, query, .. } | Expr::SetCompr { term, query, .. } => {
            walk_expr(term, f);
            walk_query(query, f);
        }
        Expr::ObjectCompr {
            key, value, query, ..
        } => {
            walk_expr(key, f);
            walk_expr(value, f);
            walk_query(query, f);
        }
        Expr::Call { fcn, params, .. } => {
            walk_expr(fcn, f);
            for p in params {
                walk_expr(p, f);
            }
        }
        Expr::UnaryExpr { expr, .. } => walk_expr(expr, f),
        Expr::RefDot { refr, .. } => walk_expr(refr, f),
        Expr::RefBrack { refr, index, .. } => {
            walk_expr(refr, f);
            walk_expr(index, f);
        }
        Expr::BinExpr { lhs, rhs, .. }
        | Expr::BoolExpr { lhs, rhs, .. }
        | Expr::ArithExpr { lhs, rhs, .. }
        | Expr::AssignExpr { lhs, rhs, .. } => {
            walk_expr(lhs, f);
            walk_expr(rhs, f);
        }
        Expr::Membership {
            key,
            value,
            collection,
            ..
        } => {
            if let Some(k) = key {
                walk_expr(k, f);
            }
            walk_expr(value, f);
            walk_expr(collection, f);
        }
    }
}

fn walk_query(q: &Query, f: &mut dyn FnMut(&Expr) -> bool) {
    for stmt in &q.stmts {
        match &stmt.literal {
            Literal::SomeVars { .. } => {}
            Literal::SomeIn {
                key,
                value,
                collection,
                ..
            } => {
                if let Some(k) = key {
                    walk_expr(k, f);
                }
                walk_expr(value, f);
                walk_expr(collection, f);
            }
            Literal::Expr { expr, .. } | Literal::NotExpr { expr, .. } => walk_expr(expr, f),
            Literal::Every { domain, query, .. } => {
                walk_expr(domain, f);
                walk_query(query, f);
            }
        }
        for w in &stmt.with_mods {
            walk_expr(&w.refr, f);
            walk_expr(&w.r#as, f);
        }
    }
}

/// Every expression of a rule: head, values and bodies.
pub(super) fn walk_rule(rule: &Rule, f: &mut dyn FnMut(&Expr) -> bool) {
    match rule {
        Rule::Default {
            refr, args, value, ..
        } => {
            walk_expr(refr, f);
            for a in args {
                walk_expr(a, f);
            }
            walk_expr(value, f);
        }
        Rule::Spec { head, bodies, .. } => {
            match head {
                RuleHead::Compr { refr, assign, .. } => {
                    walk_expr(refr, f);
                    if let Some(a) = assign {
                        walk_expr(&a.value, f);
                    }
                }
                RuleHead::Set { refr, key, .. } => {
                    walk_expr(refr, f);
                    if let Some(k) = key {
                        walk_expr(k, f);
                    }
                }
                RuleHead::Func {
                    refr, args, assign, ..
                } => {
                    walk_expr(refr, f);
                    for a in args {
                        walk_expr(a, f);
                    }
                    if let Some(a) = assign {
                        walk_expr(&a.value, f);
                    }
                }
            }
            for b in bodies {
                if let Some(a) = &b.assign {
                    walk_expr(&a.value, f);
                }
                walk_query(&b.query, f);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Which arguments a policy reads

/// The tool arguments that policies read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgumentReads {
    /// Exactly these top-level argument names, each read by a constant path
    /// (`input.arguments.action`, `input.arguments["action"]`,
    /// `object.get(input.arguments, "action", d)`).
    Known(BTreeMap<String, Location>),
    /// Some expression reads the arguments in a way that cannot be traced
    /// to names (`input.arguments[k]`, `x := input`); every argument may matter.
    Any { location: Location, why: String },
}

/// Which tool arguments the policies in `modules` read.
pub fn argument_reads(modules: &[PolicyModule]) -> ArgumentReads {
    reads_of(modules, |_, _| false, |_| {})
}

/// The arguments read by the rules of `modules` that `skip` does not leave
/// out; `observe` sees every expression of the rules read.
fn reads_of(
    modules: &[PolicyModule],
    skip: impl Fn(&PolicyModule, &Rule) -> bool,
    mut observe: impl FnMut(&Expr),
) -> ArgumentReads {
    let mut names = BTreeMap::new();
    let mut unknown: Option<(Location, String)> = None;
    for m in modules {
        for imp in &m.module.imports {
            if path_of(&imp.refr).first().map(String::as_str) == Some("input") {
                unknown.get_or_insert((
                    span_location(&imp.span),
                    format!("`{}` imports input under another name", imp.span.text()),
                ));
            }
        }
        for rule in &m.module.policy {
            if skip(m, rule) {
                continue;
            }
            walk_rule(rule, &mut |e| {
                observe(e);
                reads_in(e, &mut names, &mut unknown)
            });
        }
    }
    match unknown {
        Some((location, why)) => ArgumentReads::Any { location, why },
        None => ArgumentReads::Known(names),
    }
}

/// The contract rules whose value is not a hint: arguments only they read
/// cannot change the annotations.
const NOT_HINTS: &[&str] = &["deny", "confirm", "meta", "security_schemes"];

/// Which tool arguments can change the annotations of the tool whose policy
/// is `package`: [`argument_reads`] without the rules of `package` named in
/// [`NOT_HINTS`], as long as no other rule refers to those by name (then
/// every rule counts, as in [`argument_reads`]).
pub fn hint_argument_reads(modules: &[PolicyModule], package: &str) -> ArgumentReads {
    let mut refers = false;
    let reads = reads_of(
        modules,
        |m, rule| not_hint_rule(m, rule, package),
        |e| refers |= refers_to_not_hints(e),
    );
    if refers {
        return argument_reads(modules);
    }
    reads
}

/// Whether `rule` of `m` is one of `package`'s rules named in [`NOT_HINTS`].
pub(super) fn not_hint_rule(m: &PolicyModule, rule: &Rule, package: &str) -> bool {
    let head = match rule {
        Rule::Default { refr, .. } => path_of(refr),
        Rule::Spec { head, .. } => match head {
            RuleHead::Compr { refr, .. }
            | RuleHead::Set { refr, .. }
            | RuleHead::Func { refr, .. } => path_of(refr),
        },
    };
    m.package == package
        && head
            .first()
            .is_some_and(|n| NOT_HINTS.contains(&n.as_str()))
}

/// Whether `e` refers to a rule named in [`NOT_HINTS`] (then those rules
/// can change the annotations too).
pub(super) fn refers_to_not_hints(e: &Expr) -> bool {
    match e {
        Expr::Var { value, .. } => value
            .as_string()
            .is_ok_and(|v| NOT_HINTS.contains(&v.as_ref())),
        Expr::RefDot { .. } | Expr::RefBrack { .. } => {
            path_of(e).iter().any(|c| NOT_HINTS.contains(&c.as_str()))
        }
        _ => false,
    }
}

fn reads_in(
    e: &Expr,
    names: &mut BTreeMap<String, Location>,
    unknown: &mut Option<(Location, String)>,
) -> bool {
    match e {
        Expr::Call { fcn, params, .. }
            if path_of(fcn) == ["object", "get"]
                && params.len() >= 2
                && path_of(&params[0]) == ["input", "arguments"] =>
        {
            match const_string(&params[1]) {
                Some(k) => {
                    names.entry(k).or_insert_with(|| span_location(e.span()));
                }
                None => {
                    unknown.get_or_insert((
                        span_location(e.span()),
                        format!("`{}` reads an argument chosen at run time", e.span().text()),
                    ));
                }
            }
            for p in &params[1..] {
                walk_expr(p, &mut |x| reads_in(x, names, unknown));
            }
            false
        }
        Expr::RefDot { .. } | Expr::RefBrack { .. } => {
            let path = path_of(e);
            if path.first().map(String::as_str) != Some("input") {
                return true;
            }
            match path.get(1).map(String::as_str) {
                Some("arguments") => match path.get(2) {
                    Some(k) if k != "[_]" => {
                        names
                            .entry(k.clone())
                            .or_insert_with(|| span_location(e.span()));
                    }
                    _ => {
                        unknown.get_or_insert((
                            span_location(e.span()),
                            format!(
                                "`{}` reads the arguments as a whole or by a computed key",
                                e.span().text()
                            ),
                        ));
                    }
                },
                Some("tool") => {}
                // The caller (a verified JWT over HTTP) is not an argument
                // the proof can enumerate: its claims are anything.
                Some("caller") => {
                    unknown.get_or_insert((
                        span_location(e.span()),
                        format!(
                            "`{}` reads the caller, whose claims the proof cannot enumerate",
                            e.span().text()
                        ),
                    ));
                }
                _ => {
                    unknown.get_or_insert((
                        span_location(e.span()),
                        format!("`{}` reads input by a computed key", e.span().text()),
                    ));
                }
            }
            // Indexes inside the reference may read arguments too.
            let mut cur = e;
            while let Expr::RefDot { refr, .. } | Expr::RefBrack { refr, .. } = cur {
                if let Expr::RefBrack { index, .. } = cur {
                    walk_expr(index, &mut |x| reads_in(x, names, unknown));
                }
                cur = refr;
            }
            false
        }
        Expr::Var { value, span, .. } if value.as_string().is_ok_and(|s| s.as_ref() == "input") => {
            unknown.get_or_insert((
                span_location(span),
                "the input document is used as a whole".to_string(),
            ));
            false
        }
        _ => true,
    }
}

/// String constants the policies compare a top-level argument with:
/// `input.arguments.x == "lit"` (or `!=`, `=`, `:=`), `startswith`,
/// `endswith` or `contains` of the argument and a constant, and
/// `input.arguments.x in {"a", "b"}`. The proof's sampling tries them, so a
/// branch taken only for such a value is reached.
pub fn argument_literals(modules: &[PolicyModule]) -> BTreeMap<String, Vec<String>> {
    fn argument(e: &Expr) -> Option<String> {
        match path_of(e).as_slice() {
            [i, a, name] if i == "input" && a == "arguments" && name != "[_]" => Some(name.clone()),
            _ => None,
        }
    }
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut add = |name: String, lit: String| {
        let v = out.entry(name).or_default();
        if !v.contains(&lit) {
            v.push(lit);
        }
    };
    for m in modules {
        for rule in &m.module.policy {
            walk_rule(rule, &mut |e| {
                match e {
                    Expr::BoolExpr { lhs, rhs, .. } | Expr::AssignExpr { lhs, rhs, .. } => {
                        for (a, b) in [(lhs, rhs), (rhs, lhs)] {
                            if let (Some(name), Some(lit)) = (argument(a), const_string(b)) {
                                add(name, lit);
                            }
                        }
                    }
                    Expr::Call { fcn, params, .. }
                        if matches!(
                            path_of(fcn).as_slice(),
                            [f] if ["startswith", "endswith", "contains"].contains(&f.as_str())
                        ) && params.len() == 2 =>
                    {
                        if let (Some(name), Some(lit)) =
                            (argument(&params[0]), const_string(&params[1]))
                        {
                            add(name, lit);
                        }
                    }
                    Expr::Membership {
                        key: None,
                        value,
                        collection,
                        ..
                    } => {
                        if let (Some(name), Expr::Set { items, .. } | Expr::Array { items, .. }) =
                            (argument(value), collection.as_ref())
                        {
                            for i in items {
                                if let Some(lit) = const_string(i) {
                                    add(name.clone(), lit);
                                }
                            }
                        }
                    }
                    _ => {}
                }
                true
            });
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Lint: unknown functions, arity, recursion, nondeterminism

/// Builtins whose answer changes from call to call; a resolution must not
/// depend on them (it must be deterministic).
const NONDETERMINISTIC: &[&str] = &[
    "time.now_ns",
    "rand.intn",
    "uuid.rfc4122",
    "uuid.parse",
    "http.send",
    "opa.runtime",
];

/// Builtins whose result grows with an argument, and which arguments choose
/// the size: (name, argument indexes, only inside a comprehension).
/// `sprintf` is listed by its format string; its values count only when the
/// format is not a constant or takes a width from them (`*`).
const SIZE_DRIVING: &[(&str, &[usize], bool)] = &[
    ("numbers.range", &[0, 1], false),
    ("numbers.range_step", &[0, 1, 2], false),
    ("sprintf", &[0], false),
    ("replace", &[1, 2], false),
    ("strings.replace_n", &[0], false),
    ("concat", &[0, 1], true),
    ("array.concat", &[0, 1], true),
];

/// Problems visible without running the policies (unknown functions,
/// arity, nondeterministic builtins, allocations sized by the client).
/// `modules` are all the modules one engine holds, so that calls into
/// library packages resolve. Recursion is a load error: see [`recursion`].
pub fn lint(modules: &[PolicyModule]) -> Vec<Diagnostic> {
    analyze(modules).diagnostics
}

/// A cycle of rules that depend on each other, found in the syntax tree.
#[derive(Debug, Clone)]
pub struct Recursion {
    /// The members, by path without `data.`, starting with the one defined
    /// first in the files (the cycle closes back to it).
    pub cycle: Vec<String>,
    pub diagnostic: Diagnostic,
}

/// The cycles between rules and functions of `modules`: one per strongly
/// connected group of the dependency graph (a rule that refers to itself
/// is one), so a hostile policy cannot make the search explode. Rego
/// forbids recursion and OPA rejects it when compiling; regorus only
/// notices an unconditional one when it runs, and a conditional one
/// (`f(x) := f(x - 1) if x > 0`) may exhaust the stack first, so a catalog
/// with one is refused at load.
pub fn recursion(modules: &[PolicyModule]) -> Vec<Recursion> {
    let Analysis { graph, def_at, .. } = analyze(modules);
    let mut out: Vec<Recursion> = cycles(&graph, &def_at)
        .into_iter()
        .map(|cycle| {
            let at = def_at.get(&cycle[0]).cloned().unwrap_or_default();
            let named: Vec<String> = cycle
                .iter()
                .chain(std::iter::once(&cycle[0]))
                .map(|n| format!("data.{n}"))
                .collect();
            let diagnostic = Diagnostic::error(
                "rego-recursion",
                at,
                format!("rule {} is recursive: {}", named[0], named.join(" -> ")),
            )
            .with_help(
                "Rego forbids recursion; rewrite it with a comprehension, `walk` or `graph.reachable`",
            );
            Recursion { cycle, diagnostic }
        })
        .collect();
    out.sort_by(|a, b| {
        let l = |r: &Recursion| {
            let at = &r.diagnostic.location;
            (at.file.clone(), at.line, at.column)
        };
        l(a).cmp(&l(b))
    });
    out
}

/// What one pass over the modules finds: the call diagnostics and the
/// dependency graph between rules (by path without `data.`), with where
/// each rule is first defined.
struct Analysis {
    diagnostics: Vec<Diagnostic>,
    graph: BTreeMap<String, BTreeSet<String>>,
    def_at: HashMap<String, Location>,
}

fn analyze(modules: &[PolicyModule]) -> Analysis {
    let defs = rule_defs(modules);
    let mut out = Vec::new();

    // User functions by full path, with their arities.
    let mut functions: HashMap<String, BTreeSet<usize>> = HashMap::new();
    for m in modules {
        for rule in &m.module.policy {
            if let Rule::Spec {
                head: RuleHead::Func { refr, args, .. },
                ..
            } = rule.as_ref()
            {
                let name = format!("{}.{}", m.package, path_of(refr).join("."));
                functions.entry(name).or_default().insert(args.len());
            }
        }
    }
    // Rules by the constant part of their head (`p.annotations.readOnlyHint`
    // for `annotations.readOnlyHint := ...`, `p.x` for `x[k] := ...`), so
    // that rules defining parts of one document may read each other.
    let rule_paths: BTreeSet<String> = defs
        .iter()
        .map(|d| node_name(&d.package, &d.path))
        .collect();

    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut def_at: HashMap<String, Location> = HashMap::new();
    let mut default_at: HashMap<String, Location> = HashMap::new();

    for m in modules {
        let aliases: HashMap<String, String> = m
            .module
            .imports
            .iter()
            .filter_map(|i| {
                let target = path_of(&i.refr);
                let alias = match &i.r#as {
                    Some(s) => s.text().to_string(),
                    None => target.last()?.clone(),
                };
                Some((alias, target.join(".")))
            })
            .collect();
        for rule in &m.module.policy {
            let (head_refr, locals) = rule_locals(rule);
            let me = node_name(&m.package, &path_of(head_refr));
            // A cycle is shown at its first definition that can recurse
            // (a `default` cannot), or its `default` if that is all there is.
            if let Rule::Default { .. } = rule.as_ref() {
                default_at
                    .entry(me.clone())
                    .or_insert_with(|| span_location(rule.span()));
            } else {
                def_at
                    .entry(me.clone())
                    .or_insert_with(|| span_location(rule.span()));
            }
            let mut edges = BTreeSet::new();
            let tainted = tainted_vars(rule);
            // Calls inside a comprehension (by address), where a growing
            // builtin runs once per element.
            let mut in_compr: BTreeSet<*const Expr> = BTreeSet::new();
            let mut callees: BTreeSet<*const Expr> = BTreeSet::new();
            let scope = Scope {
                package: &m.package,
                locals: &locals,
                aliases: &aliases,
                rule_paths: &rule_paths,
            };
            walk_rule(rule, &mut |e| {
                // A rule's own head is not a reference to itself.
                if std::ptr::eq(e, head_refr.as_ref()) || callees.contains(&(e as *const Expr)) {
                    return false;
                }
                if let Expr::ArrayCompr { .. } | Expr::SetCompr { .. } | Expr::ObjectCompr { .. } =
                    e
                {
                    walk_expr(e, &mut |x| {
                        if let Expr::Call { .. } = x {
                            in_compr.insert(x as *const Expr);
                        }
                        true
                    });
                }
                match e {
                    Expr::Call {
                        fcn, params, span, ..
                    } => {
                        let written = path_of(fcn);
                        let resolved = resolve_call(&written, &m.package, &aliases, &functions);
                        match resolved {
                            Callee::User(full, arities) => {
                                edges.insert(full.clone());
                                if !arities.contains(&params.len()) {
                                    out.push(
                                        Diagnostic::error(
                                            "rego-arity",
                                            span_location(span),
                                            format!(
                                                "`{}` takes {} argument{}, given {}",
                                                written.join("."),
                                                list_arities(&arities),
                                                if arities.iter().all(|a| *a == 1) {
                                                    ""
                                                } else {
                                                    "s"
                                                },
                                                params.len()
                                            ),
                                        )
                                        .with_help("pass the arguments the function declares"),
                                    );
                                }
                            }
                            Callee::Builtin(name, arity) => {
                                // Rego allows one extra argument: the output (`count(x, n)`).
                                if params.len() != arity && params.len() != arity + 1 {
                                    out.push(
                                        Diagnostic::error(
                                            "rego-arity",
                                            span_location(span),
                                            format!(
                                                "builtin `{name}` takes {arity} argument{}, given {}",
                                                if arity == 1 { "" } else { "s" },
                                                params.len()
                                            ),
                                        )
                                        .with_help("see the builtin's signature in the OPA policy reference"),
                                    );
                                }
                                if let Some(d) = input_sized(
                                    &name,
                                    params,
                                    root_span(fcn),
                                    &tainted,
                                    in_compr.contains(&(e as *const Expr)),
                                ) {
                                    out.push(d);
                                }
                                if NONDETERMINISTIC.contains(&name.as_str()) {
                                    out.push(
                                        Diagnostic::warning(
                                            "nondeterministic-builtin",
                                            span_location(span),
                                            format!("`{name}` answers differently from call to call"),
                                        )
                                        .with_help("a resolution must depend only on the arguments and the catalog; pass the value in data or arguments instead"),
                                    );
                                }
                            }
                            Callee::Print => {}
                            Callee::Unknown(name) => out.push(
                                Diagnostic::error(
                                    "rego-unknown-function",
                                    span_location(span),
                                    format!("unknown function `{name}`"),
                                )
                                .with_help(near_function(&name, &functions)),
                            ),
                        }
                        // The callee is not a reference to a rule's value;
                        // the arguments are walked as any expression.
                        callees.insert(fcn.as_ref() as *const Expr);
                        true
                    }
                    _ => refs_in(e, &scope, &mut edges),
                }
            });
            graph.entry(me).or_default().extend(edges);
        }
    }

    for (name, at) in default_at {
        def_at.entry(name).or_insert(at);
    }
    Analysis {
        diagnostics: out,
        graph,
        def_at,
    }
}

fn list_arities(a: &BTreeSet<usize>) -> String {
    a.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(" or ")
}

enum Callee {
    User(String, BTreeSet<usize>),
    Builtin(String, usize),
    Print,
    Unknown(String),
}

fn resolve_call(
    written: &[String],
    package: &str,
    aliases: &HashMap<String, String>,
    functions: &HashMap<String, BTreeSet<usize>>,
) -> Callee {
    let dotted = written.join(".");
    let candidates: Vec<String> = if written.first().map(String::as_str) == Some("data") {
        vec![written[1..].join(".")]
    } else if let Some(target) = written.first().and_then(|a| aliases.get(a)) {
        let rest = written[1..].join(".");
        let target = target.strip_prefix("data.").unwrap_or(target);
        vec![if rest.is_empty() {
            target.to_string()
        } else {
            format!("{target}.{rest}")
        }]
    } else {
        vec![format!("{package}.{dotted}")]
    };
    for c in &candidates {
        if let Some(a) = functions.get(c) {
            return Callee::User(c.clone(), a.clone());
        }
    }
    if dotted == "print" {
        return Callee::Print;
    }
    if let Some(b) = BUILTINS.get(dotted.as_str()) {
        return Callee::Builtin(dotted, b.1 as usize);
    }
    Callee::Unknown(dotted)
}

fn near_function(name: &str, functions: &HashMap<String, BTreeSet<usize>>) -> String {
    let short: Vec<String> = functions
        .keys()
        .map(|k| k.rsplit('.').next().unwrap_or(k).to_string())
        .chain(BUILTINS.keys().map(|k| k.to_string()))
        .collect();
    let best = short
        .iter()
        .map(|k| (strsim::levenshtein(k, name), k))
        .min();
    match best {
        Some((d, k)) if d <= 2.max(name.len() / 4) => format!("did you mean `{k}`?"),
        _ => "define the function in a policy file, or use a builtin from the OPA policy reference"
            .to_string(),
    }
}

/// The head reference of a rule and the names bound locally in it, which
/// shadow rule names of the package.
fn rule_locals(rule: &Rule) -> (&Ref<Expr>, BTreeSet<String>) {
    let mut locals = BTreeSet::new();
    let head = match rule {
        Rule::Default { refr, .. } => refr,
        Rule::Spec { head, .. } => match head {
            RuleHead::Compr { refr, .. } | RuleHead::Set { refr, .. } => refr,
            RuleHead::Func { refr, args, .. } => {
                for a in args {
                    walk_expr(a, &mut |e| {
                        if let Expr::Var { value, .. } = e
                            && let Ok(s) = value.as_string()
                        {
                            locals.insert(s.to_string());
                        }
                        true
                    });
                }
                refr
            }
        },
    };
    if let Rule::Spec { bodies, .. } = rule {
        for b in bodies {
            bound_in_query(&b.query, &mut locals);
        }
    }
    (head, locals)
}

fn bound_in_query(q: &Query, locals: &mut BTreeSet<String>) {
    let add_vars = |e: &Expr, locals: &mut BTreeSet<String>| {
        walk_expr(e, &mut |x| {
            if let Expr::Var { value, .. } = x
                && let Ok(s) = value.as_string()
            {
                locals.insert(s.to_string());
            }
            true
        });
    };
    for stmt in &q.stmts {
        match &stmt.literal {
            Literal::SomeVars { vars, .. } => {
                for v in vars {
                    locals.insert(v.text().to_string());
                }
            }
            Literal::SomeIn { key, value, .. } => {
                if let Some(k) = key {
                    add_vars(k, locals);
                }
                add_vars(value, locals);
            }
            Literal::Every {
                key, value, query, ..
            } => {
                if let Some(k) = key {
                    locals.insert(k.text().to_string());
                }
                locals.insert(value.text().to_string());
                bound_in_query(query, locals);
            }
            Literal::Expr { expr, .. } | Literal::NotExpr { expr, .. } => {
                walk_expr(expr, &mut |x| {
                    match x {
                        Expr::AssignExpr {
                            op: AssignOp::ColEq,
                            lhs,
                            ..
                        } => add_vars(lhs, locals),
                        Expr::ArrayCompr { query, .. }
                        | Expr::SetCompr { query, .. }
                        | Expr::ObjectCompr { query, .. } => bound_in_query(query, locals),
                        _ => {}
                    }
                    true
                });
            }
        }
    }
}

/// A rule's node in the dependency graph: its package and the constant
/// part of its head.
fn node_name(package: &str, head: &[String]) -> String {
    let mut name = package.to_string();
    for c in head.iter().take_while(|c| *c != "[_]") {
        name.push('.');
        name.push_str(c);
    }
    name
}

/// What names mean inside one rule.
struct Scope<'a> {
    package: &'a str,
    /// Names bound in the rule, which shadow rules of the package.
    locals: &'a BTreeSet<String>,
    /// Import aliases: `lib` for `import data.lib`, to `data.lib`.
    aliases: &'a HashMap<String, String>,
    /// Every rule and function, by path without `data.`.
    rule_paths: &'a BTreeSet<String>,
}

/// Records references to rules of this package (by bare name), of any
/// package (by `data.` path or an imported name) as dependency edges. A
/// reference to a package or a prefix of one (`data.lib`) depends on every
/// rule under it.
fn refs_in(e: &Expr, scope: &Scope, edges: &mut BTreeSet<String>) -> bool {
    let path = match e {
        Expr::RefDot { .. } | Expr::RefBrack { .. } | Expr::Var { .. } => path_of(e),
        _ => return true,
    };
    let Some(first) = path.first() else {
        return true;
    };
    // The reference as a path from `data`, and how many of its first
    // components must match (a bare name never means a shorter path than
    // its own package's rule).
    let absolute: Option<(Vec<String>, usize)> = if first == "data" {
        Some((path[1..].to_vec(), 1))
    } else if scope.locals.contains(first) || first == "input" {
        None
    } else if let Some(target) = scope.aliases.get(first) {
        target.strip_prefix("data.").map(|t| {
            let abs: Vec<String> = t
                .split('.')
                .map(str::to_string)
                .chain(path[1..].iter().cloned())
                .collect();
            (abs, 1)
        })
    } else {
        let abs: Vec<String> = scope
            .package
            .split('.')
            .map(str::to_string)
            .chain(path.iter().cloned())
            .collect();
        let min = abs.len() - path.len() + 1;
        Some((abs, min))
    };
    if let Some((abs, min)) = absolute {
        let constant: Vec<&str> = abs
            .iter()
            .map(String::as_str)
            .take_while(|c| *c != "[_]")
            .collect();
        // The rule the path reaches into (the longest prefix that names
        // one) ...
        if let Some(c) = (min.max(1)..=constant.len())
            .rev()
            .map(|n| constant[..n].join("."))
            .find(|c| scope.rule_paths.contains(c))
        {
            edges.insert(c);
        }
        // ... and every rule under the path (`data.lib` reads all of lib).
        if constant.len() >= min.max(1) {
            let prefix = format!("{}.", constant.join("."));
            edges.extend(
                scope
                    .rule_paths
                    .range(prefix.clone()..)
                    .take_while(|r| r.starts_with(&prefix))
                    .cloned(),
            );
        }
    }
    // Indexes of a reference may refer to rules too.
    if let Expr::RefDot { .. } | Expr::RefBrack { .. } = e {
        let mut cur = e;
        while let Expr::RefDot { refr, .. } | Expr::RefBrack { refr, .. } = cur {
            if let Expr::RefBrack { index, .. } = cur {
                walk_expr(index, &mut |x| refs_in(x, scope, edges));
            }
            cur = refr;
        }
    }
    false
}

/// The variables of `rule` whose value comes from `input`: bound by `:=`
/// or `=` (either side a variable) or `some ... in` from an expression that
/// mentions `input` or another such variable, in the rule's bodies and its
/// comprehensions. Function arguments and other rules are not followed.
fn tainted_vars(rule: &Rule) -> BTreeSet<String> {
    // (variables bound, the expression they are bound from)
    let mut bindings: Vec<(Vec<String>, Ref<Expr>)> = Vec::new();
    fn vars_of(e: &Expr) -> Vec<String> {
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
    fn some_in(q: &Query, bindings: &mut Vec<(Vec<String>, Ref<Expr>)>) {
        for stmt in &q.stmts {
            if let Literal::SomeIn {
                key,
                value,
                collection,
                ..
            } = &stmt.literal
            {
                let mut vars = vars_of(value);
                if let Some(k) = key {
                    vars.extend(vars_of(k));
                }
                bindings.push((vars, collection.clone()));
            }
        }
    }
    if let Rule::Spec { bodies, .. } = rule {
        for b in bodies {
            some_in(&b.query, &mut bindings);
        }
    }
    walk_rule(rule, &mut |e| {
        match e {
            Expr::AssignExpr { op, lhs, rhs, .. } => {
                if let Expr::Var { .. } = lhs.as_ref() {
                    bindings.push((vars_of(lhs), rhs.clone()));
                } else if *op == AssignOp::ColEq {
                    // Destructuring: `[a, b] := input.arguments.pair`.
                    bindings.push((vars_of(lhs), rhs.clone()));
                }
                if *op == AssignOp::Eq
                    && let Expr::Var { .. } = rhs.as_ref()
                {
                    bindings.push((vars_of(rhs), lhs.clone()));
                }
            }
            Expr::ArrayCompr { query, .. }
            | Expr::SetCompr { query, .. }
            | Expr::ObjectCompr { query, .. } => some_in(query, &mut bindings),
            _ => {}
        }
        true
    });
    let mut tainted = BTreeSet::new();
    loop {
        let before = tainted.len();
        for (vars, from) in &bindings {
            if mentions_input(from, &tainted) {
                tainted.extend(vars.iter().cloned());
            }
        }
        if tainted.len() == before {
            return tainted;
        }
    }
}

/// `e` reads `input` or one of the `tainted` variables.
fn mentions_input(e: &Expr, tainted: &BTreeSet<String>) -> bool {
    let mut found = false;
    walk_expr(e, &mut |x| {
        if let Expr::Var { value, .. } = x
            && let Ok(s) = value.as_string()
            && (s.as_ref() == "input" || tainted.contains(s.as_ref()))
        {
            found = true;
        }
        !found
    });
    found
}

/// A warning when the builtin `name` grows its result by an argument that
/// comes from `input`.
fn input_sized(
    name: &str,
    params: &[Ref<Expr>],
    span: &Span,
    tainted: &BTreeSet<String>,
    in_comprehension: bool,
) -> Option<Diagnostic> {
    let (_, sized, only_in_compr) = SIZE_DRIVING.iter().find(|(n, _, _)| *n == name)?;
    if *only_in_compr && !in_comprehension {
        return None;
    }
    let from_input = |i: usize| params.get(i).is_some_and(|p| mentions_input(p, tainted));
    let mut chosen = sized.iter().any(|i| from_input(*i));
    if name == "sprintf" && from_input(1) {
        // The values choose the size only through a width or a format that
        // is not written in the policy.
        chosen |= params
            .first()
            .is_none_or(|f| const_string(f).is_none_or(|f| f.contains('*')));
    }
    if !chosen {
        return None;
    }
    Some(
        Diagnostic::warning(
            "input-sized-allocation",
            span_location(span),
            format!("the size of this allocation is chosen by the client: `{name}` takes its size from input"),
        )
        .with_help("bound the argument in the tool's inputSchema (`maximum`, `maxLength`, `maxItems`) or check it before the call; past the evaluation's memory budget every call fails (`policy-memory`)"),
    )
}

/// One cycle per strongly connected group of `graph` (Tarjan's algorithm,
/// without recursion: the graph comes from the policies). Each cycle starts
/// at the member defined first in the files and is a shortest way back to
/// it.
fn cycles(
    graph: &BTreeMap<String, BTreeSet<String>>,
    def_at: &HashMap<String, Location>,
) -> Vec<Vec<String>> {
    let names: Vec<&String> = graph
        .keys()
        .chain(graph.values().flatten())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let index_of: HashMap<&String, usize> =
        names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let adj: Vec<Vec<usize>> = names
        .iter()
        .map(|n| {
            graph
                .get(*n)
                .into_iter()
                .flatten()
                .map(|m| index_of[m])
                .collect()
        })
        .collect();

    const UNSEEN: usize = usize::MAX;
    let n = adj.len();
    let (mut index, mut low, mut on_stack) = (vec![UNSEEN; n], vec![0; n], vec![false; n]);
    let (mut stack, mut next, mut groups) = (Vec::new(), 0, Vec::new());
    for root in 0..n {
        if index[root] != UNSEEN {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&(v, i)) = work.last() {
            if let Some(&w) = adj[v].get(i) {
                work.last_mut().expect("not empty").1 += 1;
                if index[w] == UNSEEN {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
            } else {
                work.pop();
                if let Some(&(p, _)) = work.last() {
                    low[p] = low[p].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut group = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        group.push(w);
                        if w == v {
                            break;
                        }
                    }
                    groups.push(group);
                }
            }
        }
    }

    let place = |i: usize| {
        def_at
            .get(names[i])
            .map(|l| (l.file.clone(), l.line, l.column))
    };
    let mut out = Vec::new();
    for group in groups {
        let start = *group
            .iter()
            .min_by_key(|i| (place(**i).is_none(), place(**i), names[**i]))
            .expect("a group has a member");
        if group.len() == 1 && !adj[start].contains(&start) {
            continue;
        }
        // Breadth-first from `start`, inside the group, back to it.
        let members: BTreeSet<usize> = group.iter().copied().collect();
        let mut came_from: HashMap<usize, usize> = HashMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut last = start;
        'search: while let Some(v) = queue.pop_front() {
            for &w in &adj[v] {
                if w == start {
                    last = v;
                    break 'search;
                }
                if members.contains(&w) && !came_from.contains_key(&w) {
                    came_from.insert(w, v);
                    queue.push_back(w);
                }
            }
        }
        let mut cycle = vec![last];
        while let Some(&p) = came_from.get(cycle.last().expect("not empty")) {
            cycle.push(p);
        }
        cycle.reverse();
        out.push(cycle.into_iter().map(|i| names[i].clone()).collect());
    }
    out
}

// ---------------------------------------------------------------------------
// Rules that would change what resolution never changes

/// Names of rules in a tool's package that look like an attempt to change
/// the tool's identity, with what they would change.
const IDENTITY_RULES: &[(&str, &str)] = &[
    ("name", "name"),
    ("title", "title"),
    ("description", "description"),
    ("input_schema", "inputSchema"),
    ("inputSchema", "inputSchema"),
    ("output_schema", "outputSchema"),
    ("outputSchema", "outputSchema"),
];

/// Rules in `package` that try to change a tool's name, title,
/// description or schemas, which resolution never does.
pub fn identity_rules(modules: &[PolicyModule], package: &str) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for def in rule_defs(modules).iter().filter(|d| d.package == package) {
        if let Some((_, field)) = IDENTITY_RULES.iter().find(|(n, _)| *n == def.name()) {
            out.push(
                Diagnostic::error(
                    "changes-identity",
                    def.location.clone(),
                    format!("rule `{}` in package {package} would change the tool's {field}, which resolution never changes", def.name()),
                )
                .with_help(format!("regent does not read this rule; set the {field} in the tool's YAML, or rename the rule if it is a helper")),
            );
        }
        if def.name() == "annotations" && def.path.get(1).map(String::as_str) == Some("title") {
            out.push(title_diagnostic(def.location.clone(), package));
        }
    }
    // `annotations := {"title": ...}`: a literal title key in an annotations value.
    for m in modules.iter().filter(|m| m.package == package) {
        for rule in &m.module.policy {
            let head = match rule.as_ref() {
                Rule::Default { refr, .. } => refr,
                Rule::Spec { head, .. } => match head {
                    RuleHead::Compr { refr, .. }
                    | RuleHead::Set { refr, .. }
                    | RuleHead::Func { refr, .. } => refr,
                },
            };
            if path_of(head) != ["annotations"] {
                continue;
            }
            let mut values: Vec<&Ref<Expr>> = Vec::new();
            match rule.as_ref() {
                Rule::Default { value, .. } => values.push(value),
                Rule::Spec { head, bodies, .. } => {
                    if let RuleHead::Compr {
                        assign: Some(a), ..
                    } = head
                    {
                        values.push(&a.value);
                    }
                    values.extend(
                        bodies
                            .iter()
                            .filter_map(|b| b.assign.as_ref().map(|a| &a.value)),
                    );
                }
            }
            for v in values {
                if let Expr::Object { fields, .. } = v.as_ref() {
                    for (span, k, _) in fields {
                        if const_string(k).as_deref() == Some("title") {
                            out.push(title_diagnostic(span_location(span), package));
                        }
                    }
                }
            }
        }
    }
    out
}

fn title_diagnostic(at: Location, package: &str) -> Diagnostic {
    Diagnostic::error(
        "changes-identity",
        at,
        format!("package {package} sets annotations.title, which resolution never changes"),
    )
    .with_help("set the display title in the tool's YAML (annotations.title) and remove it from the policy")
}

// ---------------------------------------------------------------------------
// Coverage

/// The lines of `m` that regorus' coverage counts: the line of every
/// expression in rule values and bodies, walked as regorus walks them
/// (a call's function name is not an expression; a comprehension counts
/// through its query).
pub fn coverable_lines(m: &PolicyModule) -> BTreeSet<u32> {
    let mut lines = BTreeSet::new();
    for rule in &m.module.policy {
        match rule.as_ref() {
            Rule::Spec { head, bodies, .. } => {
                match head {
                    RuleHead::Compr { assign, .. } | RuleHead::Func { assign, .. } => {
                        if let Some(a) = assign {
                            cover_expr(&a.value, &mut lines);
                        }
                    }
                    RuleHead::Set { key, .. } => {
                        if let Some(k) = key {
                            cover_expr(k, &mut lines);
                        }
                    }
                }
                for b in bodies {
                    cover_query(&b.query, &mut lines);
                }
            }
            Rule::Default { value, .. } => cover_expr(value, &mut lines),
        }
    }
    lines
}

fn cover_query(q: &Query, lines: &mut BTreeSet<u32>) {
    for stmt in &q.stmts {
        match &stmt.literal {
            Literal::SomeVars { .. } => {}
            Literal::SomeIn {
                value, collection, ..
            } => {
                cover_expr(value, lines);
                cover_expr(collection, lines);
            }
            Literal::Expr { expr, .. } | Literal::NotExpr { expr, .. } => cover_expr(expr, lines),
            Literal::Every { domain, query, .. } => {
                cover_expr(domain, lines);
                cover_query(query, lines);
            }
        }
    }
}

fn cover_expr(e: &Expr, lines: &mut BTreeSet<u32>) {
    match e {
        Expr::ArrayCompr { query, .. }
        | Expr::SetCompr { query, .. }
        | Expr::ObjectCompr { query, .. } => {
            cover_query(query, lines);
            return;
        }
        _ => {
            lines.insert(e.span().line);
        }
    }
    match e {
        Expr::Array { items, .. } | Expr::Set { items, .. } => {
            for i in items {
                cover_expr(i, lines);
            }
        }
        Expr::Object { fields, .. } => {
            for (_, k, v) in fields {
                cover_expr(k, lines);
                cover_expr(v, lines);
            }
        }
        Expr::Call { params, .. } => {
            for p in params {
                cover_expr(p, lines);
            }
        }
        Expr::UnaryExpr { expr, .. } => cover_expr(expr, lines),
        Expr::RefDot { refr, .. } => cover_expr(refr, lines),
        Expr::RefBrack { refr, index, .. } => {
            cover_expr(refr, lines);
            cover_expr(index, lines);
        }
        Expr::BinExpr { lhs, rhs, .. }
        | Expr::BoolExpr { lhs, rhs, .. }
        | Expr::ArithExpr { lhs, rhs, .. }
        | Expr::AssignExpr { lhs, rhs, .. } => {
            cover_expr(lhs, lines);
            cover_expr(rhs, lines);
        }
        Expr::Membership {
            key,
            value,
            collection,
            ..
        } => {
            if let Some(k) = key {
                cover_expr(k, lines);
            }
            cover_expr(value, lines);
            cover_expr(collection, lines);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Vec<PolicyModule> {
        let mut e = regorus::Engine::new();
        e.add_policy("p.rego".into(), text.into()).unwrap();
        modules(&mut e)
    }

    #[test]
    fn finds_constant_argument_reads() {
        let m = load(
            "package t\nimport rego.v1\na := 1 if { input.arguments.action == \"x\" }\nb := 2 if { input.arguments[\"force\"] }\nc := object.get(input.arguments, \"mode\", \"r\")\nd := input.tool\n",
        );
        let ArgumentReads::Known(names) = argument_reads(&m) else {
            panic!()
        };
        let found: Vec<(&str, usize)> = names.iter().map(|(k, l)| (k.as_str(), l.line)).collect();
        assert_eq!(found, vec![("action", 3), ("force", 4), ("mode", 5)]);
    }

    #[test]
    fn finds_literals_compared_with_arguments() {
        let m = load(
            r#"package tools.t
import rego.v1
a if input.arguments.method == "DELETE"
b if startswith(input.arguments.path, "/etc/")
c if input.arguments.mode in {"x", "y"}
d if "z" != input.arguments.mode
"#,
        );
        let lits = argument_literals(&m);
        assert_eq!(lits["method"], ["DELETE"]);
        assert_eq!(lits["path"], ["/etc/"]);
        assert_eq!(lits["mode"], ["x", "y", "z"]);
    }

    #[test]
    fn hint_reads_leave_out_deny_and_confirm() {
        let text = r#"package tools.t
import rego.v1
annotations := {"destructiveHint": true} if input.arguments.mode == "purge"
deny contains "no" if startswith(input.arguments.path, "/etc/")
confirm := "sure?" if input.arguments.note != ""
"#;
        let m = load(text);
        let ArgumentReads::Known(names) = hint_argument_reads(&m, "tools.t") else {
            panic!("reads should be known")
        };
        assert_eq!(names.keys().collect::<Vec<_>>(), ["mode"]);
        // A hint that depends on deny makes every read count.
        let m = load(&format!("{text}\nstrict if count(deny) > 0\n"));
        let ArgumentReads::Known(names) = hint_argument_reads(&m, "tools.t") else {
            panic!("reads should be known")
        };
        assert_eq!(names.len(), 3);
    }

    #[test]
    fn gives_up_on_computed_reads() {
        let m =
            load("package t\nimport rego.v1\na contains k if { some k, _ in input.arguments }\n");
        assert!(matches!(argument_reads(&m), ArgumentReads::Any { .. }));
        let m = load("package t\nimport rego.v1\na := x if { x := input }\n");
        assert!(matches!(argument_reads(&m), ArgumentReads::Any { .. }));
    }

    #[test]
    fn finds_unknown_functions_arity_and_cycles() {
        let m = load(
            "package t\nimport rego.v1\nf(x) := x\na := 1 if { nope(1) }\nb := f(1, 2)\nc := count([1], n)\nd := e\ne := d\n",
        );
        let codes: Vec<(&str, usize)> =
            lint(&m).iter().map(|d| (d.code, d.location.line)).collect();
        assert_eq!(codes, vec![("rego-unknown-function", 4), ("rego-arity", 5)]);
        let found: Vec<(String, usize)> = recursion(&m)
            .iter()
            .map(|r| (r.diagnostic.message.clone(), r.diagnostic.location.line))
            .collect();
        assert_eq!(
            found,
            vec![(
                "rule data.t.d is recursive: data.t.d -> data.t.e -> data.t.d".to_string(),
                7
            )]
        );
    }

    fn load_all(files: &[(&str, &str)]) -> Vec<PolicyModule> {
        let mut e = regorus::Engine::new();
        for (path, text) in files {
            e.add_policy(path.to_string(), text.to_string()).unwrap();
        }
        modules(&mut e)
    }

    fn cycles_of(files: &[(&str, &str)]) -> Vec<Vec<String>> {
        recursion(&load_all(files))
            .into_iter()
            .map(|r| r.cycle)
            .collect()
    }

    #[test]
    fn finds_conditional_and_cross_package_recursion() {
        let conditional =
            "package t\nimport rego.v1\nf(x) := f(x - 1) if x > 0\nf(0) := 0\ng := f(3)\n";
        assert_eq!(cycles_of(&[("a.rego", conditional)]), vec![vec!["t.f"]]);
        // Through an import one way and a data. path the other.
        let a = "package a\nimport rego.v1\nimport data.b\nx if b.y\n";
        let b = "package b\nimport rego.v1\ny if data.a.x\n";
        assert_eq!(
            cycles_of(&[("a.rego", a), ("b.rego", b)]),
            vec![vec!["a.x", "b.y"]]
        );
        // A whole package read depends on every rule in it.
        let whole = "package c\nimport rego.v1\nall := data.c\n";
        assert_eq!(cycles_of(&[("c.rego", whole)]), vec![vec!["c.all"]]);
    }

    #[test]
    fn locals_and_acyclic_chains_are_not_recursion() {
        let text = "package t\nimport rego.v1\na := 1\nb := a + 1\nc(a) := a\nd := x if { x := c(b) }\ne := [a | some a in [1]]\n";
        assert!(cycles_of(&[("a.rego", text)]).is_empty());
        // Rules that define parts of one document may read each other.
        let parts = "package t\nimport rego.v1\nannotations.readOnlyHint := true if input.x\nannotations.destructiveHint := false if annotations.readOnlyHint\nmeta := {\"a\": annotations}\n";
        assert!(cycles_of(&[("a.rego", parts)]).is_empty());
        let parts = format!("{parts}annotations.idempotentHint := true if meta.a\n");
        assert_eq!(
            cycles_of(&[("a.rego", &parts)]),
            vec![vec!["t.meta", "t.annotations.idempotentHint"]]
        );
    }

    #[test]
    fn a_dense_cycle_is_reported_once_and_quickly() {
        // 60 rules that all refer to each other: one report, not every
        // elementary cycle.
        let mut text = String::from("package t\nimport rego.v1\n");
        for i in 0..60 {
            let body: Vec<String> = (0..60).map(|j| format!("r{j}")).collect();
            text.push_str(&format!("r{i} if {{ {} }}\n", body.join("; ")));
        }
        let found = cycles_of(&[("a.rego", &text)]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0], vec!["t.r0"]);
    }

    #[test]
    fn warns_when_the_client_chooses_a_size() {
        let m = load(
            "package t\nimport rego.v1\n\
             a if count(numbers.range(1, input.arguments.n)) > 1\n\
             b if { k := input.arguments.k; m := k * 2; count(numbers.range_step(0, m, 1)) > 1 }\n\
             c if { count(numbers.range(1, 10)) > 1 }\n\
             d := sprintf(\"%s\", [input.arguments.s])\n\
             e := sprintf(input.arguments.f, [1])\n\
             f := [concat(\",\", [x, x]) | some x in input.arguments.xs]\n\
             g := concat(\",\", input.arguments.xs)\n\
             h := replace(\"abc\", \"b\", input.arguments.r)\n",
        );
        let lines: Vec<usize> = lint(&m)
            .iter()
            .filter(|d| d.code == "input-sized-allocation")
            .map(|d| d.location.line)
            .collect();
        assert_eq!(lines, vec![3, 4, 7, 8, 10]);
    }

    #[test]
    fn rule_defs_have_paths_and_lines() {
        let m = load(
            "package t\nimport rego.v1\ndefault annotations := {}\nannotations.destructiveHint := true if {\n  input.arguments.x\n}\n",
        );
        let defs = rule_defs(&m);
        assert_eq!(defs[1].path, ["annotations", "destructiveHint"]);
        assert_eq!(defs[1].location.line, 4);
        assert_eq!(
            &m[0].text[defs[1].name_start..defs[1].name_end],
            "annotations"
        );
        assert!(
            m[0].text[defs[1].start..defs[1].end]
                .trim_end()
                .ends_with('}')
        );
    }

    #[test]
    fn flags_identity_rules_and_titles() {
        let m = load(
            "package t\nimport rego.v1\ndescription := \"x\"\nannotations := {\"title\": \"y\"}\n",
        );
        let lines: Vec<usize> = identity_rules(&m, "t")
            .iter()
            .map(|d| d.location.line)
            .collect();
        assert_eq!(lines, vec![3, 4]);
    }
}
