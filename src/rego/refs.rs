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
//!
//! This file reads references out of each rule (imports, a local's path
//! into the arguments) and hands each to its checker, one file per root:
//! `input` (the schemas) and `data` (the data documents, packages and
//! rules); `report` words what they find.

use std::collections::BTreeMap;

use regorus::unstable::{AssignOp, Expr, Literal, Rule, Span};
use serde_json::Value;

use super::PolicyModule;
use super::visit::{ref_indexes, walk_expr, walk_rule};
use crate::diag::Diagnostic;
use crate::rego;

mod data;
mod input;
mod report;

use data::{Node, check_data, insert_rule, other_tools_package};
use input::check_input;
use report::show;

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
