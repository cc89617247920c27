//! References into `input` and `data` that can never be defined.
//!
//! A typo in a reference (`input.arguments.pth`, `data.kv.protected_key`)
//! makes the expression undefined on every request, so a `deny` rule that
//! uses it never fires: the policy fails open. Read from the syntax tree
//! (through [`super::visit`]), before anything runs:
//!
//! - `input.X` must be `input.tool`, `input.arguments` or `input.caller` (see
//!   [`crate::policy::engine::input`]), `input.arguments.a.b[_].c` must be a path
//!   the tool's `inputSchema` can have, and `input.caller` has only `subject`
//!   and `issuer` (strings) and `claims` (anything below); a tool's `visible`
//!   rule has no `input.arguments` at all;
//! - `data.a.b.c` must lead into the merged data documents or to a package
//!   or rule some policy defines.
//!
//! A local bound to a constant path into `input.arguments` by a statement of
//! a rule's body (`args := input.arguments`, `args = input.arguments.opts`,
//! chains of these) is read as that path (`args.qurey` as
//! `input.arguments.qurey`), as long as nothing else in the rule binds the
//! name (`some`, `every`, a function parameter, another assignment); a
//! value bound by `some x in input.arguments.xs` or passed to a function is
//! not followed.
//!
//! A computed component (`data.x[input.arguments.k]`, `input.arguments[k]`)
//! stops the check at that point; so do `$ref`, `patternProperties`,
//! `additionalProperties: true` (or a schema, which is followed), and a schema
//! with no `properties` at all.
//!
//! Unbound variables are [`super::safety`]'s; whether a reference that can
//! be defined has the type its use expects is left to evaluation.

use std::collections::BTreeMap;

use regorus::unstable::{AssignOp, Expr, Literal, Rule, Span};
use serde_json::Value;

use super::visit::{ref_indexes, walk_expr, walk_rule};
use super::{PolicyModule, RuleDef};
use crate::diag::{Diagnostic, Location};
use crate::rego;

/// The tools whose `inputSchema` a package's references are checked against.
pub struct Schemas<'a> {
    /// (tool name, inputSchema); empty means the arguments are not checked.
    pub tools: Vec<(&'a str, &'a Value)>,
    /// True for a library package, checked against the union of every tool.
    pub library: bool,
}

/// What the references are checked against.
pub struct Context {
    /// The merged data documents and the packages and rules defined.
    data: Node,
    /// False when a policy file did not parse: the packages it defines are
    /// unknown, so `data` references are not checked (the parse error is
    /// reported on its own).
    check_data: bool,
    /// The tool package that owns each module (`None`: a library package).
    module_owner: Vec<Option<String>>,
    /// Package -> the tool package that owns it, for packages tools own.
    package_owner: BTreeMap<String, String>,
    /// The catalog's declared claims schema (`caller: {claims: ...}`), which
    /// `input.caller.claims.X` is checked against; `None`: any claim.
    claims: Option<Value>,
}

impl Context {
    /// `data_docs` are the data documents; `owners[i]` is the tool package
    /// that owns `modules[i]` (`None` for a library package).
    pub fn new(
        modules: &[PolicyModule],
        owners: &[Option<&str>],
        data_docs: &[&Value],
        check_data: bool,
    ) -> Self {
        let mut data = Node::Tree(BTreeMap::new());
        for d in data_docs {
            data.insert_json(d);
        }
        for m in modules {
            data.insert_path(m.package.split('.'), false);
        }
        for def in rego::rule_defs(modules) {
            insert_rule(&mut data, &def);
        }
        let module_owner: Vec<Option<String>> = (0..modules.len())
            .map(|i| owners.get(i).copied().flatten().map(str::to_string))
            .collect();
        let package_owner = modules
            .iter()
            .zip(&module_owner)
            .filter_map(|(m, o)| Some((m.package.clone(), o.clone()?)))
            .collect();
        Context {
            data,
            check_data,
            module_owner,
            package_owner,
            claims: None,
        }
    }

    /// Checks `input.caller.claims.X` against `claims`, the catalog's
    /// declared claims schema, when there is one.
    pub fn with_claims(mut self, claims: Option<&Value>) -> Self {
        self.claims = claims.cloned();
        self
    }
}

/// Every reference in `modules` that can never be defined; `schemas` gives,
/// for the index of a module, the tools whose arguments it reads.
pub fn check<'v>(
    modules: &[PolicyModule],
    ctx: &Context,
    schemas: impl Fn(usize) -> Schemas<'v>,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (i, m) in modules.iter().enumerate() {
        let schemas = schemas(i);
        let imports = imports(m);
        let owner = ctx.module_owner.get(i).cloned().flatten();
        // A tool's own package is where its contract rules are read.
        let tool_package = owner.as_deref() == Some(m.package.as_str());
        for rule in &m.module.policy {
            let mut scope = Scope {
                ctx,
                owner: owner.clone(),
                schemas: &schemas,
                imports: &imports,
                locals: BTreeMap::new(),
                visible: tool_package
                    && rego::path_of(rego::head(rule)).first().map(String::as_str)
                        == Some("visible"),
            };
            scope.locals = argument_aliases(&scope, rule);
            walk_rule(rule, &mut |e| visit(&scope, e, &mut out));
        }
    }
    out
}

struct Scope<'a, 'v> {
    ctx: &'a Context,
    /// The tool package that owns the module being read.
    owner: Option<String>,
    schemas: &'a Schemas<'v>,
    imports: &'a BTreeMap<String, Vec<String>>,
    /// The rule's locals that stand for a path into `input.arguments`
    /// ([`argument_aliases`]).
    locals: BTreeMap<String, Vec<String>>,
    /// True in a tool's `visible` rule, whose input has no `arguments`.
    visible: bool,
}

/// `import data.kv` (alias `kv`), `import input.arguments as args`.
fn imports(m: &PolicyModule) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for imp in &m.module.imports {
        let Some(parts) = parts(&imp.refr) else {
            continue;
        };
        let path: Option<Vec<String>> = parts.into_iter().map(|p| p.name).collect();
        let Some(path) = path else { continue };
        if !matches!(path.first().map(String::as_str), Some("data" | "input")) {
            continue;
        }
        let alias = match &imp.r#as {
            Some(span) => span.text().to_string(),
            None => path.last().cloned().unwrap_or_default(),
        };
        out.insert(alias, path);
    }
    out
}

/// One component of a reference and where it is written; `name` is `None`
/// when it is computed (a variable, a number, an expression).
struct Part {
    name: Option<String>,
    span: Span,
}

/// The components of a reference rooted at a variable, outermost last.
fn parts(e: &Expr) -> Option<Vec<Part>> {
    let mut out = Vec::new();
    let mut cur = e;
    loop {
        match cur {
            Expr::RefDot { refr, field, .. } => {
                out.push(Part {
                    name: field.1.as_string().ok().map(|s| s.to_string()),
                    span: field.0.clone(),
                });
                cur = refr;
            }
            Expr::RefBrack { refr, index, .. } => {
                out.push(Part {
                    name: rego::const_string(index),
                    span: index.span().clone(),
                });
                cur = refr;
            }
            Expr::Var { value, span, .. } => {
                out.push(Part {
                    name: Some(value.as_string().ok()?.to_string()),
                    span: span.clone(),
                });
                break;
            }
            _ => return None,
        }
    }
    out.reverse();
    Some(out)
}

fn visit(scope: &Scope<'_, '_>, e: &Expr, out: &mut Vec<Diagnostic>) -> bool {
    if !matches!(e, Expr::RefDot { .. } | Expr::RefBrack { .. }) {
        return true;
    }
    let Some(mut parts) = parts(e) else {
        return true;
    };
    // Indexes may hold references of their own.
    for index in ref_indexes(e) {
        walk_expr(index, &mut |x| visit(scope, x, out));
    }
    let root = parts[0].name.clone().unwrap_or_default();
    if root != "input"
        && root != "data"
        && let Some(prefix) = scope.locals.get(&root).or_else(|| scope.imports.get(&root))
    {
        let span = parts[0].span.clone();
        let expanded = prefix.iter().map(|n| Part {
            name: Some(n.clone()),
            span: span.clone(),
        });
        parts.splice(0..1, expanded);
    }
    match parts[0].name.as_deref() {
        Some("input") => out.extend(check_input(scope, &parts).map(|mut d| {
            // The path the reader sees is the local's: say what it stands for.
            if let Some(path) = scope.locals.get(&root)
                && let Some(help) = &mut d.help
            {
                let whole: Vec<Part> = path
                    .iter()
                    .map(|n| Part {
                        name: Some(n.clone()),
                        span: parts[0].span.clone(),
                    })
                    .collect();
                help.push_str(&format!(
                    " (`{root}` is `{}` here)",
                    show(&whole, whole.len() - 1)
                ));
            }
            d
        })),
        Some("data") if scope.ctx.check_data => out.extend(
            check_data(&scope.ctx.data, &parts).or_else(|| other_tools_package(scope, &parts)),
        ),
        _ => {}
    }
    false
}

/// The locals of `rule` that stand for a constant path into
/// `input.arguments`, to that path: bound by a statement of a body, `x :=
/// path` or `x = path` (`path = x`), where `path` is such a path, through an
/// import or another such local. A name bound anywhere else in the rule
/// (another assignment, `some`, `every`, a comprehension, a function
/// parameter) is left out, and so is a path that is itself never defined
/// (reported where it is written).
fn argument_aliases(scope: &Scope<'_, '_>, rule: &Rule) -> BTreeMap<String, Vec<String>> {
    let Rule::Spec { bodies, .. } = rule else {
        return BTreeMap::new();
    };
    // (name, the expression bound to it, whether the name is the left side)
    let mut bound: Vec<(String, &Expr, bool)> = Vec::new();
    for b in bodies {
        for stmt in &b.query.stmts {
            let Literal::Expr { expr, .. } = &stmt.literal else {
                continue;
            };
            let Expr::AssignExpr { op, lhs, rhs, .. } = expr.as_ref() else {
                continue;
            };
            let var = |e: &Expr| match e {
                Expr::Var { value, .. } => value.as_string().ok().map(|s| s.to_string()),
                _ => None,
            };
            match (op, var(lhs), var(rhs)) {
                (AssignOp::ColEq, Some(n), _) => bound.push((n, rhs, true)),
                (AssignOp::Eq, Some(n), None) => bound.push((n, rhs, true)),
                (AssignOp::Eq, None, Some(n)) => bound.push((n, lhs, false)),
                _ => {}
            }
        }
    }
    if bound.is_empty() {
        return BTreeMap::new();
    }
    // Every binding of the name must be one of these statements
    // (`bound_names` counts the left sides of `:=` and `=`).
    let elsewhere = super::portability::bound_names(rule);
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // A chain (`a := input.arguments; b := a.opts`) resolves one link a round.
    for _ in 0..=bound.len() {
        let before = out.len();
        for (name, e, _) in &bound {
            if out.contains_key(name) {
                continue;
            }
            let statements = bound.iter().filter(|(n, ..)| n == name).count();
            let on_left = bound.iter().filter(|(n, _, l)| n == name && *l).count();
            if statements != 1 || elsewhere.iter().filter(|n| *n == name).count() != on_left {
                continue;
            }
            let Some(parts) = parts(e) else { continue };
            let Some(mut path) = parts
                .into_iter()
                .map(|p| p.name)
                .collect::<Option<Vec<String>>>()
            else {
                continue;
            };
            if let Some(prefix) = out.get(&path[0]).or_else(|| scope.imports.get(&path[0])) {
                path.splice(0..1, prefix.iter().cloned());
            }
            if path.len() < 2 || path[0] != "input" || path[1] != "arguments" {
                continue;
            }
            let span = e.span();
            let whole: Vec<Part> = path
                .iter()
                .map(|n| Part {
                    name: Some(n.clone()),
                    span: span.clone(),
                })
                .collect();
            if check_input(scope, &whole).is_none() {
                out.insert(name.clone(), path);
            }
        }
        if out.len() == before {
            break;
        }
    }
    out
}

/// `input.arguments.a[_].b`, up to and including `parts[upto]`.
fn show(parts: &[Part], upto: usize) -> String {
    let mut s = String::new();
    for (i, p) in parts.iter().take(upto + 1).enumerate() {
        match &p.name {
            Some(n) if i == 0 => s.push_str(n),
            Some(n) if is_ident(n) => {
                s.push('.');
                s.push_str(n);
            }
            Some(n) => s.push_str(&format!("[{n:?}]")),
            None => s.push_str("[_]"),
        }
    }
    s
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The candidate nearest to `name`, if it is near enough to be a typo.
fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let (dist, best) = candidates
        .into_iter()
        .map(|c| {
            (
                strsim::damerau_levenshtein(&name.to_lowercase(), &c.to_lowercase()),
                c,
            )
        })
        .min()?;
    (dist <= 2.max(name.len() / 3)).then_some(best)
}

fn listed(names: &[String]) -> String {
    if names.is_empty() {
        return "none".to_string();
    }
    let mut shown: Vec<String> = names.iter().take(8).map(|n| format!("`{n}`")).collect();
    if names.len() > 8 {
        shown.push(format!("and {} more", names.len() - 8));
    }
    shown.join(", ")
}

/// Where a path left what a schema or document can hold.
struct Miss {
    /// Index of the first component that cannot be defined.
    at: usize,
    /// Why, after "`path` is never defined: ".
    why: String,
    /// The names that are valid at that point.
    candidates: Vec<String>,
}

fn diagnostic(code: &'static str, parts: &[Part], miss: &Miss, fix: &str) -> Diagnostic {
    let shown = show(parts, miss.at);
    let name = parts[miss.at].name.clone().unwrap_or_default();
    let help = match nearest(&name, miss.candidates.iter().map(String::as_str)) {
        Some(best) => {
            let mut fixed = parts[..miss.at]
                .iter()
                .map(|p| Part {
                    name: p.name.clone(),
                    span: p.span.clone(),
                })
                .collect::<Vec<_>>();
            fixed.push(Part {
                name: Some(best.to_string()),
                span: parts[miss.at].span.clone(),
            });
            format!(
                "did you mean `{}`? the expression is undefined on every request, so a rule that tests it never applies",
                show(&fixed, miss.at)
            )
        }
        None if miss.candidates.is_empty() => {
            format!("{fix}; the expression is undefined on every request")
        }
        None => format!(
            "the names defined here are {}; {fix}",
            listed(&miss.candidates)
        ),
    };
    Diagnostic::error(
        code,
        location(&parts[miss.at].span),
        format!("`{shown}` is never defined: {}", miss.why),
    )
    .with_help(help)
}

fn location(span: &Span) -> Location {
    rego::span_location(span)
}

// ---------------------------------------------------------------------------
// input

fn check_input(scope: &Scope<'_, '_>, parts: &[Part]) -> Option<Diagnostic> {
    let second = parts.get(1)?;
    let name = second.name.as_deref()?;
    match name {
        // tools/list decides `visible` once per caller, with no arguments:
        // a `visible` rule that reads them is undefined, so the tool is
        // hidden from everyone.
        "arguments" if scope.visible => Some(diagnostic(
            "rego-undefined-input",
            parts,
            &Miss {
                at: 1,
                why: "a `visible` rule is decided per caller, without arguments (its input is `tool` and `caller`), so a definition that reads them never holds".to_string(),
                candidates: Vec::new(),
            },
            "decide visibility from `input.caller` alone; refuse calls by their arguments with `deny`",
        )),
        "arguments" => check_arguments(scope.schemas, parts),
        // The upstream's request, in the input of `upstream_request` (the
        // request's params are the upstream's: any shape).
        "request" => None,
        "tool" => {
            let third = parts.get(2)?;
            third.name.as_ref()?;
            Some(diagnostic(
                "rego-undefined-input",
                parts,
                &Miss {
                    at: 2,
                    why: "`input.tool` is the tool's name, a string".to_string(),
                    candidates: Vec::new(),
                },
                "compare `input.tool` as a whole",
            ))
        }
        // The verified caller (HTTP with a JWT): `subject`, `issuer` and
        // `claims`, whatever the token holds under `claims`.
        "caller" => {
            let third = parts.get(2)?;
            let name = third.name.as_deref()?;
            match name {
                "claims" => return check_claims(scope.ctx.claims.as_ref()?, parts),
                "subject" | "issuer" => {
                    // Both are strings: a field of either is never defined.
                    parts.get(3)?.name.as_ref()?;
                    return Some(diagnostic(
                        "rego-undefined-input",
                        parts,
                        &Miss {
                            at: 3,
                            why: format!("`input.caller.{name}` is a string"),
                            candidates: Vec::new(),
                        },
                        &format!(
                            "compare `input.caller.{name}` as a whole, or read the token's claims under `input.caller.claims`"
                        ),
                    ));
                }
                _ => {}
            }
            Some(diagnostic(
                "rego-undefined-input",
                parts,
                &Miss {
                    at: 2,
                    why: "`input.caller` has only `subject`, `issuer` and `claims`".to_string(),
                    candidates: vec!["claims".into(), "issuer".into(), "subject".into()],
                },
                "read the token's other claims under `input.caller.claims`",
            ))
        }
        _ => Some(diagnostic(
            "rego-undefined-input",
            parts,
            &Miss {
                at: 1,
                why: "the policy input has only `tool`, `arguments`, `caller` and (in `upstream_request`) `request`".to_string(),
                candidates: vec![
                    "arguments".to_string(),
                    "caller".to_string(),
                    "request".to_string(),
                    "tool".to_string(),
                ],
            },
            "read the tool's arguments under `input.arguments`",
        )),
    }
}

/// `input.caller.claims.a.b` against the catalog's declared claims schema,
/// as arguments are against an inputSchema.
fn check_claims(schema: &Value, parts: &[Part]) -> Option<Diagnostic> {
    let mut miss = walk_schema(schema, parts, 3).err()?;
    miss.why = format!(
        "in the catalog's caller schema (`caller.claims`), {}",
        miss.why
    );
    Some(diagnostic(
        "rego-undefined-input",
        parts,
        &miss,
        "declare the claim in the tool file's `caller: {claims: ...}` schema, or fix the reference",
    ))
}

fn check_arguments(schemas: &Schemas<'_>, parts: &[Part]) -> Option<Diagnostic> {
    if schemas.tools.is_empty() {
        return None;
    }
    let mut first: Option<Miss> = None;
    for (_, schema) in &schemas.tools {
        match walk_schema(schema, parts, 2) {
            Ok(()) => return None,
            Err(m) => {
                first.get_or_insert(m);
            }
        }
    }
    let mut miss = first?;
    let whose = if schemas.library {
        format!(
            "no tool's inputSchema has it ({} tools; this library package may be used by any of them)",
            schemas.tools.len()
        )
    } else if schemas.tools.len() == 1 {
        format!(
            "in the inputSchema of `{}`, {}",
            schemas.tools[0].0, miss.why
        )
    } else {
        let names: Vec<String> = schemas.tools.iter().map(|(n, _)| n.to_string()).collect();
        format!(
            "in the inputSchema of every tool of this package ({}), {}",
            listed(&names),
            miss.why
        )
    };
    miss.why = whose;
    Some(diagnostic(
        "rego-undefined-input",
        parts,
        &miss,
        "declare it in inputSchema, or fix the reference",
    ))
}

fn combinators(schema: &serde_json::Map<String, Value>) -> Vec<&Value> {
    ["anyOf", "oneOf", "allOf"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_array))
        .flatten()
        .collect()
}

/// Whether `parts[i..]` can be defined in a value valid against `schema`.
fn walk_schema(schema: &Value, parts: &[Part], i: usize) -> Result<(), Miss> {
    if i >= parts.len() {
        return Ok(());
    }
    let Some(obj) = schema.as_object() else {
        // `true`, `false` or nonsense: nothing to check against.
        return Ok(());
    };
    if obj.contains_key("$ref") || obj.contains_key("$dynamicRef") {
        return Ok(());
    }
    let branches = combinators(obj);
    if branches.is_empty() {
        return walk_own(obj, parts, i);
    }
    let shaped = ["type", "properties", "items", "additionalProperties"]
        .iter()
        .any(|k| obj.contains_key(*k));
    let mut first = None;
    if shaped {
        match walk_own(obj, parts, i) {
            Ok(()) => return Ok(()),
            Err(m) => first = Some(m),
        }
    }
    for b in branches {
        match walk_schema(b, parts, i) {
            Ok(()) => return Ok(()),
            Err(m) => {
                first.get_or_insert(m);
            }
        }
    }
    first.map_or(Ok(()), Err)
}

fn types(obj: &serde_json::Map<String, Value>) -> Option<Vec<&str>> {
    match obj.get("type")? {
        Value::String(s) => Some(vec![s.as_str()]),
        Value::Array(a) => Some(a.iter().filter_map(Value::as_str).collect()),
        _ => None,
    }
}

fn walk_own(obj: &serde_json::Map<String, Value>, parts: &[Part], i: usize) -> Result<(), Miss> {
    let types = types(obj);
    let has = |t: &str| types.as_ref().is_none_or(|ts| ts.contains(&t));
    let is_array = types.as_ref().is_some_and(|ts| ts.contains(&"array"))
        || (types.is_none() && obj.contains_key("items") && !obj.contains_key("properties"));
    let Some(name) = parts[i].name.as_deref() else {
        // A computed key: follow an array's items; an object's key is unknown.
        if is_array {
            return match obj.get("items") {
                Some(items) => walk_schema(items, parts, i + 1),
                None => Ok(()),
            };
        }
        return Ok(());
    };
    if !has("object") {
        if is_array {
            return Err(Miss {
                at: i,
                why: "its parent is an array, indexed by number (`[_]`, `[0]`)".to_string(),
                candidates: Vec::new(),
            });
        }
        if let Some(ts) = &types
            && !ts.is_empty()
        {
            return Err(Miss {
                at: i,
                why: format!("its parent is a {}, which has no fields", ts.join(" or ")),
                candidates: Vec::new(),
            });
        }
        return Ok(());
    }
    let props = obj.get("properties").and_then(Value::as_object);
    if let Some(sub) = props.and_then(|p| p.get(name)) {
        return walk_schema(sub, parts, i + 1);
    }
    if obj.contains_key("patternProperties") {
        return Ok(());
    }
    let candidates: Vec<String> = props.map_or(Vec::new(), |p| p.keys().cloned().collect());
    match obj.get("additionalProperties") {
        Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => return Ok(()),
        Some(sub @ Value::Object(_)) => return walk_schema(sub, parts, i + 1),
        _ if candidates.is_empty() => return Ok(()),
        _ => {}
    }
    Err(Miss {
        at: i,
        why: format!("there is no property `{name}`"),
        candidates,
    })
}

// ---------------------------------------------------------------------------
// data

/// What is known to exist under a `data` path.
enum Node {
    /// Anything: a rule's value, a data value that is not an object.
    Open,
    Tree(BTreeMap<String, Node>),
}

impl Node {
    fn insert_json(&mut self, v: &Value) {
        match (self, v) {
            (Node::Open, _) => {}
            (Node::Tree(m), Value::Object(o)) => {
                for (k, v) in o {
                    m.entry(k.clone())
                        .or_insert_with(|| Node::Tree(BTreeMap::new()))
                        .insert_json(v);
                }
            }
            (node, _) => *node = Node::Open,
        }
    }

    /// Adds the path; `open` makes its end hold anything.
    fn insert_path<'s>(&mut self, path: impl Iterator<Item = &'s str>, open: bool) {
        let mut node = self;
        for c in path {
            if c == "[_]" {
                break;
            }
            match node {
                Node::Open => return,
                Node::Tree(m) => {
                    node = m
                        .entry(c.to_string())
                        .or_insert_with(|| Node::Tree(BTreeMap::new()));
                }
            }
        }
        if open {
            *node = Node::Open;
        }
    }
}

fn insert_rule(data: &mut Node, def: &RuleDef) {
    let path = def
        .package
        .split('.')
        .chain(def.path.iter().map(String::as_str));
    data.insert_path(path, true);
}

/// A reference from one tool's package into another tool's: each tool's
/// engine holds only its own package and the library packages, so it is
/// never defined there. (A library package may read any tool's package: it
/// runs in every tool's engine.)
fn other_tools_package(scope: &Scope<'_, '_>, parts: &[Part]) -> Option<Diagnostic> {
    let own = scope.owner.as_deref()?;
    let mut package = String::new();
    let mut found = None;
    for (i, p) in parts.iter().enumerate().skip(1) {
        let Some(name) = p.name.as_deref() else { break };
        if i > 1 {
            package.push('.');
        }
        package.push_str(name);
        if let Some(owner) = scope.ctx.package_owner.get(&package) {
            found = Some((i, package.clone(), owner.as_str()));
        }
    }
    let (at, package, owner) = found?;
    if owner == own {
        return None;
    }
    Some(
        Diagnostic::error(
            "rego-undefined-data",
            location(&parts[at].span),
            format!(
                "`{}` is never defined here: package `{package}` belongs to the tool whose policy is `{owner}`, and each tool's engine holds only its own policy package and the library packages",
                show(parts, parts.len() - 1)
            ),
        )
        .with_help(
            "move what both tools need to a library package (one that no tool names as its `policy`)",
        ),
    )
}

fn check_data(root: &Node, parts: &[Part]) -> Option<Diagnostic> {
    let mut node = root;
    for (i, p) in parts.iter().enumerate().skip(1) {
        let Node::Tree(m) = node else { return None };
        let name = p.name.as_deref()?;
        if i == 1 && name == "regent" {
            // regent's generated packages.
            return None;
        }
        match m.get(name) {
            Some(child) => node = child,
            None => {
                let what = if i == 1 {
                    "no data document, package or rule is under `data`".to_string()
                } else {
                    format!(
                        "no data document, package or rule defines it under `{}`",
                        show(parts, i - 1)
                    )
                };
                let miss = Miss {
                    at: i,
                    why: what,
                    candidates: m.keys().cloned().collect(),
                };
                return Some(diagnostic(
                    "rego-undefined-data",
                    parts,
                    &miss,
                    "add it to a data file or define the rule, or fix the reference",
                ));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(policy: &str, schema: Value, data: Value) -> Vec<String> {
        let mut engine = regorus::Engine::new();
        engine
            .add_policy("p.rego".to_string(), policy.to_string())
            .unwrap();
        let modules = rego::modules(&mut engine);
        let schemas = |_: usize| Schemas {
            tools: vec![("t", &schema)],
            library: false,
        };
        let ctx = Context::new(&modules, &[Some("tools.t")], &[&data], true);
        check(&modules, &ctx, schemas)
            .into_iter()
            .map(|d| {
                format!(
                    "{}:{} {} | {}",
                    d.location.line,
                    d.location.column,
                    d.message,
                    d.help.unwrap_or_default()
                )
            })
            .collect()
    }

    #[test]
    fn a_library_package_is_checked_against_every_tool() {
        let a = json!({"type": "object", "properties": {"path": {"type": "string"}}});
        let b = json!({"type": "object", "properties": {"url": {"type": "string"}}});
        let mut engine = regorus::Engine::new();
        engine
            .add_policy(
                "lib.rego".to_string(),
                "package lib\nimport rego.v1\nimport input.arguments as args\nok if args.path\nok if input.arguments.url\nok if args.pth\nok if input.tool.name\n".to_string(),
            )
            .unwrap();
        let modules = rego::modules(&mut engine);
        let ctx = Context::new(&modules, &[None], &[], true);
        let found: Vec<String> = check(&modules, &ctx, |_| Schemas {
            tools: vec![("a", &a), ("b", &b)],
            library: true,
        })
        .into_iter()
        .map(|d| format!("{}:{} {}", d.location.line, d.location.column, d.message))
        .collect();
        assert_eq!(
            found,
            [
                "6:12 `input.arguments.pth` is never defined: no tool's inputSchema has it (2 tools; this library package may be used by any of them)",
                "7:18 `input.tool.name` is never defined: `input.tool` is the tool's name, a string",
            ]
        );
    }

    #[test]
    fn reads_through_local_aliases_of_the_arguments() {
        let schema = json!({"type": "object", "properties": {
            "path": {"type": "string"},
            "opts": {"type": "object", "properties": {"mode": {"type": "string"}}},
        }});
        let found = run(
            r#"package tools.t
import rego.v1
a if { args := input.arguments; args.pth == "x" }
b if { input.arguments = args; o := args.opts; o["mdoe"] == "x" }
c if { args := input.arguments; args.path == "x"; args.opts.mode == "y" }
d if { some args; args = input.arguments; args.whatever }
f(args) if { args.whatever }
g if { args := input.arguments; count([1 | some args in [1]; args.whatever]) > 0 }
h if { o := input.arguments.opst; o.mode }
i if { args := input.arguments } else := false if { args := data.x; args.y }
"#,
            schema,
            json!({}),
        );
        assert_eq!(
            found
                .iter()
                .map(|f| f.split(" | ").next().unwrap())
                .collect::<Vec<_>>(),
            [
                "3:38 `input.arguments.pth` is never defined: in the inputSchema of `t`, there is no property `pth`",
                "4:51 `input.arguments.opts.mdoe` is never defined: in the inputSchema of `t`, there is no property `mdoe`",
                "9:29 `input.arguments.opst` is never defined: in the inputSchema of `t`, there is no property `opst`",
                "10:66 `data.x` is never defined: no data document, package or rule is under `data`",
            ],
            "{found:#?}"
        );
    }

    #[test]
    fn finds_typos_in_arguments_and_data() {
        let schema = json!({"type": "object", "properties": {
            "path": {"type": "string"},
            "opts": {"type": "object", "properties": {"mode": {"type": "string"}}},
            "items": {"type": "array", "items": {"type": "object", "properties": {"name": {}}}},
            "free": {"type": "object"},
        }});
        let data = json!({"kv": {"protected_keys": ["a"]}});
        let found = run(
            r#"package tools.t
import rego.v1
deny contains "a" if startswith(input.arguments.pth, "/")
deny contains "b" if input.arguments.key in data.kv.protected_key
deny contains "c" if input.arguments.opts.mdoe == "x"
deny contains "d" if input.arguments.items[_].nmae == "x"
deny contains "e" if input.argument.path == "x"
ok if input.arguments.free.anything.below
ok if data.kv.protected_keys[input.arguments.path].x
ok if data.tools.t.deny
ok if input.arguments.items[0].name
"#,
            schema,
            data,
        );
        assert_eq!(found.len(), 6, "{found:#?}");
        assert!(
            found[0].starts_with("3:49 `input.arguments.pth` is never defined"),
            "{}",
            found[0]
        );
        assert!(found[0].contains("did you mean `input.arguments.path`?"));
        assert!(
            found[1].starts_with("4:38 `input.arguments.key`"),
            "{}",
            found[1]
        );
        assert!(
            found[2].starts_with("4:53 `data.kv.protected_key` is never defined"),
            "{}",
            found[2]
        );
        assert!(found[2].contains("did you mean `data.kv.protected_keys`?"));
        assert!(
            found[3].contains("did you mean `input.arguments.opts.mode`?"),
            "{}",
            found[3]
        );
        assert!(
            found[4].contains("did you mean `input.arguments.items[_].name`?"),
            "{}",
            found[4]
        );
        assert!(
            found[5].starts_with("7:28 `input.argument` is never defined"),
            "{}",
            found[5]
        );
        assert!(found[5].contains("did you mean `input.arguments`?"));
    }
}
