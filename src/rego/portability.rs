//! Constructs where regorus' interpreter answers differently from OPA
//! (issue 27), found before anything runs:
//!
//! - `not` over an expression with a call or composite whose argument may
//!   be undefined (`not is_null(input.a)`, `not [input.a] == [1]`): OPA's
//!   compiler evaluates those arguments before the negation
//!   (`rewriteDynamics`, `rewriteExprTerms`), so an undefined one fails the
//!   body; regorus evaluates them inside it, where it makes the `not` hold.
//!   [`not_guards`] lists what OPA moves out; `lower` gives native the same.
//! - `some x in c` and `x in c` over something not provably a collection:
//!   OPA iterates nothing over a string or number, regorus fails; an
//!   undefined operand of `in` is undefined in OPA, false in regorus.
//! - `<`, `<=`, `>`, `>=` where a side may hold a set: regorus orders sets
//!   before objects, OPA after (every other pair of kinds is ordered alike).
//! - `+ - * /` where an operand may not be an integer: OPA computes on the
//!   numbers' decimal texts with 64-bit floats (`0.1 + 0.2` is `0.3`),
//!   regorus with doubles (`0.30000000000000004`); `native` computes as
//!   OPA or refuses (`opa_builtins::arith`). An operand is an integer when
//!   it is an integer literal, `count(…)`, `indexof(…)`, `round(…)` and
//!   the like, an argument every tool's inputSchema declares `type:
//!   integer`, `+ - * %` of integers, or a local every binding of which is
//!   one of those, a member of `numbers.range(…)` or of a literal of
//!   integers, or an index of an array (`some i, _ in input.a`,
//!   `input.a[i]`); `to_number(s)` is one when every body of the rule
//!   matches `s` against a digits-only pattern (`^[0-9]+$`) first
//!   ([`integer_locals`]).
//! - a constant pattern of a regex builtin whose Go meaning regent does not
//!   reproduce (`opa_builtins::regex`: a Unicode class by a script or long
//!   name): every
//!   evaluation of it fails closed, in both evaluators.
//!
//! Each finding is a located diagnostic; whether it is a warning (the rule
//! runs natively, which answers as OPA) or a load error (it runs on
//! regorus) is the build's call.

use regorus::Value;
use regorus::unstable::{ArithOp, BoolOp, Expr, Literal, Query, Ref, Rule, RuleHead, Span};

use std::collections::{BTreeSet, HashMap};

use super::lint::{Callee, aliases, resolve_call, user_functions};
use super::visit::{Walk, walk_rule};
use super::{PolicyModule, const_string, head, path_of, span_location};
use crate::diag::Diagnostic;
use crate::opa_builtins::regex::{Refused, translate};

/// What is known before anything runs about what a module reads: the
/// inputSchemas of the tools whose engine holds it (the arguments are
/// validated against them first) and the data documents.
pub struct Facts<'a> {
    /// For each module, the inputSchemas of the tools that own it; empty
    /// for a library package (nothing is assumed of its arguments).
    pub schemas: Vec<Vec<&'a serde_json::Value>>,
    pub data: Vec<&'a serde_json::Value>,
    /// Packages of all modules (a `data` path under one is a rule's).
    pub packages: Vec<String>,
}

impl Facts<'_> {
    /// What the arguments' schemas say of `input.arguments.<path>`: whether
    /// every tool requires it (so it is defined), and whether every tool
    /// declares it an array or object.
    fn argument(&self, module: usize, path: &[String]) -> (bool, bool) {
        let schemas = &self.schemas[module];
        if schemas.is_empty() {
            return (false, false);
        }
        let mut defined = true;
        let mut collection = true;
        for schema in schemas {
            let mut at = *schema;
            for seg in path {
                let required = at
                    .get("required")
                    .and_then(serde_json::Value::as_array)
                    .is_some_and(|r| r.iter().any(|x| x.as_str() == Some(seg)));
                defined &= required;
                match at.get("properties").and_then(|p| p.get(seg)) {
                    Some(next) => at = next,
                    None => return (false, false),
                }
            }
            collection &= matches!(
                at.get("type").and_then(serde_json::Value::as_str),
                Some("array" | "object")
            );
        }
        (defined, collection)
    }

    /// Whether every tool's inputSchema declares `input.arguments.<path>`
    /// `type: integer` (the arguments are validated before a policy runs).
    fn argument_integer(&self, module: usize, path: &[String]) -> bool {
        self.every_argument_schema(module, path, |at| {
            at.get("type").and_then(serde_json::Value::as_str) == Some("integer")
        })
    }

    /// Whether the argument at `path` is declared, in every schema of the
    /// module's tools, a string of decimal digits: `type: string` with a
    /// `pattern` of [`digits_only`] (`^[0-9]+$`, `^\d{1,6}$`), so
    /// `to_number` of it is an integer (or an error).
    fn argument_digits(&self, module: usize, path: &[String]) -> bool {
        self.every_argument_schema(module, path, |at| {
            at.get("type").and_then(serde_json::Value::as_str) == Some("string")
                && at
                    .get("pattern")
                    .and_then(serde_json::Value::as_str)
                    .is_some_and(digits_only)
        })
    }

    /// Whether the module has owning tools and, in every one's inputSchema,
    /// `input.arguments.<path>` is declared (through `properties`) with a
    /// schema that `holds`.
    fn every_argument_schema(
        &self,
        module: usize,
        path: &[String],
        holds: impl Fn(&serde_json::Value) -> bool,
    ) -> bool {
        let schemas = &self.schemas[module];
        !schemas.is_empty()
            && schemas.iter().all(|schema| {
                path.iter()
                    .try_fold(*schema, |at, seg| {
                        at.get("properties").and_then(|p| p.get(seg))
                    })
                    .is_some_and(&holds)
            })
    }

    /// The value of the data document at `path` (after `data`), when no
    /// rule can be there.
    fn data_at(&self, path: &[String]) -> Option<&serde_json::Value> {
        if path.iter().any(|p| p == "[_]") {
            return None;
        }
        let dotted = path.join(".");
        if self.packages.iter().any(|p| {
            p == &dotted
                || p.starts_with(&format!("{dotted}."))
                || dotted.starts_with(&format!("{p}."))
        }) {
            return None;
        }
        self.data.iter().find_map(|d| {
            let mut v = *d;
            for seg in path {
                v = v.get(seg)?;
            }
            Some(v)
        })
    }

    /// Whether the reference `e` is surely defined, and surely a collection.
    fn reference(&self, module: usize, e: &Expr, bound: &[String]) -> (bool, bool) {
        let path = path_of(e);
        match path.first().map(String::as_str) {
            Some("input") if path.len() == 1 => (true, true),
            Some("input") if path.get(1).map(String::as_str) == Some("arguments") => {
                if path.len() == 2 {
                    (true, true)
                } else if path.iter().any(|p| p == "[_]") {
                    (false, false)
                } else {
                    self.argument(module, &path[2..])
                }
            }
            Some("data") => match self.data_at(&path[1..]) {
                Some(v) => (true, v.is_array() || v.is_object()),
                None => (false, false),
            },
            // A local with no index: defined; its kind unknown.
            Some(n) if path.len() == 1 && bound.iter().any(|b| b == n) => (true, false),
            _ => (false, false),
        }
    }
}

/// One construct regent flags, in a rule of a package.
#[derive(Debug, Clone)]
pub struct Finding {
    pub package: String,
    /// The rule or function it is in.
    pub rule: String,
    /// A warning: a load error is made of it by the build.
    pub diagnostic: Diagnostic,
}

/// The sub-expressions of the negated expression `e` that OPA evaluates
/// before the negation, in its order: an undefined one fails the body.
/// Constants and variables are left out (a variable bound in the body is
/// defined; a rule's name is a reference and is kept).
pub fn not_guards(e: &Ref<Expr>) -> Vec<&Ref<Expr>> {
    let mut out = Vec::new();
    match e.as_ref() {
        // `==` (OPA rewrites it to `=`) and `=`: each side's composite
        // members and a reference's dynamic indexes, not the sides.
        Expr::BoolExpr {
            op: BoolOp::Eq,
            lhs,
            rhs,
            ..
        }
        | Expr::AssignExpr { lhs, rhs, .. } => {
            in_term(lhs, &mut out);
            in_term(rhs, &mut out);
        }
        Expr::Call { fcn, params, .. } if path_of(fcn) == ["equal"] && params.len() == 2 => {
            in_term(&params[0], &mut out);
            in_term(&params[1], &mut out);
        }
        // Any other call: every argument.
        Expr::BoolExpr { lhs, rhs, .. }
        | Expr::ArithExpr { lhs, rhs, .. }
        | Expr::BinExpr { lhs, rhs, .. } => {
            one(lhs, &mut out);
            one(rhs, &mut out);
        }
        Expr::Call { params, .. } => {
            for p in params {
                one(p, &mut out);
            }
        }
        Expr::Membership {
            key,
            value,
            collection,
            ..
        } => {
            if let Some(k) = key {
                one(k, &mut out);
            }
            one(value, &mut out);
            one(collection, &mut out);
        }
        Expr::UnaryExpr { expr, .. } => one(expr, &mut out),
        _ => in_term(e, &mut out),
    }
    out
}

/// A term of an equality or a negated term: nested calls whole, the members
/// of a composite, a reference's dynamic indexes.
fn in_term<'e>(e: &'e Ref<Expr>, out: &mut Vec<&'e Ref<Expr>>) {
    match e.as_ref() {
        Expr::RefDot { refr, .. } => in_term(refr, out),
        Expr::RefBrack { refr, index, .. } => {
            in_term(refr, out);
            one(index, out);
        }
        Expr::Array { .. } | Expr::Set { .. } | Expr::Object { .. } => one(e, out),
        Expr::Call { .. }
        | Expr::BoolExpr { .. }
        | Expr::ArithExpr { .. }
        | Expr::BinExpr { .. }
        | Expr::Membership { .. }
        | Expr::UnaryExpr { .. } => out.push(e),
        _ => {}
    }
}

/// A call's argument: a reference or nested call whole, a composite by its
/// members.
fn one<'e>(e: &'e Ref<Expr>, out: &mut Vec<&'e Ref<Expr>>) {
    match e.as_ref() {
        Expr::String { .. }
        | Expr::RawString { .. }
        | Expr::Number { .. }
        | Expr::Bool { .. }
        | Expr::Null { .. }
        | Expr::ArrayCompr { .. }
        | Expr::SetCompr { .. }
        | Expr::ObjectCompr { .. } => {}
        Expr::Array { items, .. } | Expr::Set { items, .. } => {
            for i in items {
                one(i, out);
            }
        }
        Expr::Object { fields, .. } => {
            for (_, k, v) in fields {
                one(k, out);
                one(v, out);
            }
        }
        _ => out.push(e),
    }
}

/// Names bound in a rule: locals (`:=`, `some`, comprehension and `every`
/// variables) and a function's parameters. A variable that is not one is a
/// rule of the package (or `input`/`data`).
pub(super) fn bound_names(rule: &Rule) -> Vec<String> {
    let mut out = Vec::new();
    if let Rule::Spec {
        head: RuleHead::Func { args, .. },
        ..
    } = rule
    {
        for a in args {
            out.extend(super::visit::vars(a));
        }
    }
    let mut query = |q: &Query| {
        for s in &q.stmts {
            match &s.literal {
                Literal::SomeVars { vars, .. } => {
                    out.extend(vars.iter().map(|v| v.text().to_string()))
                }
                Literal::SomeIn { key, value, .. } => {
                    if let Some(k) = key {
                        out.extend(super::visit::vars(k));
                    }
                    out.extend(super::visit::vars(value));
                }
                Literal::Every { key, value, .. } => {
                    if let Some(k) = key {
                        out.push(k.text().to_string());
                    }
                    out.push(value.text().to_string());
                }
                Literal::Expr { expr, .. } => {
                    if let Expr::AssignExpr { lhs, .. } = expr.as_ref() {
                        out.extend(super::visit::vars(lhs));
                    }
                }
                Literal::NotExpr { .. } => {}
            }
        }
    };
    walk_queries(rule, &mut query);
    out
}

/// The locals a rule binds with `:=`, to their values (the first binding).
fn assignments(rule: &Rule) -> HashMap<String, Ref<Expr>> {
    let mut out = HashMap::new();
    walk_queries(rule, &mut |q| {
        for s in &q.stmts {
            if let Literal::Expr { expr, .. } = &s.literal
                && let Expr::AssignExpr { lhs, rhs, .. } = expr.as_ref()
                && let Expr::Var { value, .. } = lhs.as_ref()
                && let Ok(n) = value.as_string()
            {
                out.entry(n.to_string()).or_insert_with(|| rhs.clone());
            }
        }
    });
    out
}

/// Calls `f` on every query of a rule: bodies and comprehensions'.
pub(super) fn walk_queries(rule: &Rule, f: &mut dyn FnMut(&Query)) {
    if let Rule::Spec { bodies, .. } = rule {
        for b in bodies {
            f(&b.query);
        }
    }
    walk_rule(rule, &mut |e| {
        match e {
            Expr::ArrayCompr { query, .. }
            | Expr::SetCompr { query, .. }
            | Expr::ObjectCompr { query, .. } => f(query),
            _ => {}
        }
        true
    });
}

/// Whether the value of `e` may be undefined: a reference into `input`,
/// `data` or a rule, a call (a function may be undefined; a builtin is when
/// an argument is). A constant, a composite of constants, a comprehension
/// and a variable bound in the body are defined.
fn may_be_undefined(e: &Expr, bound: &[String], cx: &Cx) -> bool {
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
struct Cx<'a> {
    facts: &'a Facts<'a>,
    module: usize,
    package: String,
    aliases: HashMap<String, String>,
    functions: &'a HashMap<String, BTreeSet<usize>>,
    /// The rules of the package, across its modules.
    rules: Vec<Ref<Rule>>,
    /// The rules of every package, by package (without `data.`).
    all_rules: &'a HashMap<String, Vec<Ref<Rule>>>,
    /// The rule being read: its locals bound by `:=`, to their values.
    assigned: std::cell::RefCell<HashMap<String, Ref<Expr>>>,
    depth: std::cell::Cell<u32>,
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
fn is_collection(e: &Expr, bound: &[String], cx: &Cx) -> bool {
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
                | "json.patch"
                | "object.union"
                | "object.filter"
                | "object.remove"
        ),
        _ => false,
    }
}

/// Whether `e` may hold a set: nothing from `input` or `data` (JSON) does,
/// nor a scalar literal; a set, a call, a rule or a local may.
fn may_hold_set(e: &Expr) -> bool {
    match e {
        Expr::String { .. }
        | Expr::RawString { .. }
        | Expr::Number { .. }
        | Expr::Bool { .. }
        | Expr::Null { .. }
        | Expr::ArithExpr { .. }
        | Expr::BoolExpr { .. }
        | Expr::Membership { .. }
        | Expr::UnaryExpr { .. } => false,
        Expr::Array { items, .. } => items.iter().any(|i| may_hold_set(i)),
        Expr::Object { fields, .. } => fields
            .iter()
            .any(|(_, k, v)| may_hold_set(k) || may_hold_set(v)),
        Expr::RefDot { .. } | Expr::RefBrack { .. } => !matches!(
            path_of(e).first().map(String::as_str),
            Some("input" | "data")
        ),
        Expr::Var { value, .. } => !matches!(
            value.as_string().as_deref().map(|s| s.as_ref()),
            Ok("input" | "data")
        ),
        // A builtin whose value is a number, a string or a boolean (or an
        // error): `n > to_number(code)` compares no set. Not `max`/`min`,
        // whose value is a member of any kind.
        Expr::Call { fcn, .. } => !matches!(
            path_of(fcn).join(".").as_str(),
            "count"
                | "sum"
                | "product"
                | "to_number"
                | "abs"
                | "round"
                | "ceil"
                | "floor"
                | "indexof"
                | "strings.count"
                | "units.parse"
                | "units.parse_bytes"
                | "time.now_ns"
                | "time.parse_ns"
                | "time.parse_rfc3339_ns"
                | "time.parse_duration_ns"
                | "format_int"
                | "lower"
                | "upper"
                | "sprintf"
                | "concat"
                | "substring"
                | "trim"
                | "trim_space"
                | "replace"
                | "type_name"
                | "json.marshal"
        ),
        _ => true,
    }
}

/// Whether `e` may be a number that is not an integer (see the module doc),
/// given the rule's locals known to hold integers (`ints`).
fn may_be_fraction(e: &Expr, module: usize, facts: &Facts, ints: &BTreeSet<String>) -> bool {
    let may = |x: &Expr| may_be_fraction(x, module, facts, ints);
    match e {
        Expr::Number { value, .. } => !matches!(value, Value::Number(n) if n.is_integer()),
        Expr::UnaryExpr { expr, .. } => may(expr),
        Expr::ArithExpr { op, lhs, rhs, .. } => matches!(op, ArithOp::Div) || may(lhs) || may(rhs),
        Expr::Call { fcn, params, .. } => match path_of(fcn).join(".").as_str() {
            // Integers whatever the arguments (or an error); `round`,
            // `ceil` and `floor` give OPA's integer or fail closed
            // (`opa_builtins::numbers`).
            "count"
            | "strings.count"
            | "indexof"
            | "round"
            | "ceil"
            | "floor"
            | "units.parse_bytes"
            | "time.now_ns"
            | "time.parse_ns"
            | "time.parse_rfc3339_ns"
            | "time.parse_duration_ns" => false,
            "abs" => params.first().is_none_or(|p| may(p)),
            "to_number" => !params.first().is_some_and(|p| {
                digits_argument(p, module, facts)
                    || var_name(p).is_some_and(|v| ints.contains(&digits_var(&v)))
            }),
            _ => true,
        },
        Expr::RefDot { .. } | Expr::RefBrack { .. } => {
            let path = path_of(e);
            !(path.len() > 2
                && path[0] == "input"
                && path[1] == "arguments"
                && facts.argument_integer(module, &path[2..]))
        }
        Expr::Var { .. } => !var_name(e).is_some_and(|v| ints.contains(&v)),
        _ => true,
    }
}

/// Whether `e` is an argument whose schema declares it a string of
/// decimal digits ([`Facts::argument_digits`]).
fn digits_argument(e: &Expr, module: usize, facts: &Facts) -> bool {
    let path = path_of(e);
    path.len() > 2
        && path[0] == "input"
        && path[1] == "arguments"
        && facts.argument_digits(module, &path[2..])
}

/// The name of a variable, if `e` is one.
fn var_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Var { value, .. } => value.as_string().ok().map(|s| s.to_string()),
        _ => None,
    }
}

/// The key under which [`integer_locals`] records that a local holds a
/// string of decimal digits (a statement of its body matched it against
/// a digits-only pattern), so `to_number` of it is an integer.
fn digits_var(name: &str) -> String {
    format!("{name} digits")
}

/// Whether the constant regex `p` matches only strings of ASCII digits
/// with an optional leading `-`: anchored (`^…$`), made of `[0-9]`,
/// `[1-9]` or `\d` repeated (`+`, `*`, `?`, `{m,n}`) and an optional `-?` first.
fn digits_only(p: &str) -> bool {
    let Some(body) = p.strip_prefix('^').and_then(|b| b.strip_suffix('$')) else {
        return false;
    };
    let body = body.strip_prefix("-?").unwrap_or(body);
    let mut rest = body;
    let mut pieces = 0;
    while !rest.is_empty() {
        rest = if let Some(r) = rest.strip_prefix("[0-9]") {
            r
        } else if let Some(r) = rest.strip_prefix("[1-9]") {
            r
        } else if let Some(r) = rest.strip_prefix("\\d") {
            r
        } else {
            return false;
        };
        pieces += 1;
        // One quantifier, optionally.
        if let Some(r) = rest.strip_prefix(['+', '*', '?']) {
            rest = r;
        } else if rest.starts_with('{') {
            let Some(end) = rest.find('}') else {
                return false;
            };
            if !rest[1..end]
                .bytes()
                .all(|c| c.is_ascii_digit() || c == b',')
            {
                return false;
            }
            rest = &rest[end + 1..];
        }
    }
    pieces > 0
}

/// The locals every body of `rule` matches, in a statement of its own,
/// against a digits-only pattern (`regex.match("^[0-9]+$", s)`): wherever
/// a body succeeds they hold decimal digits. A name some comprehension or
/// `every` of the rule binds anew (which may hide the checked one) is
/// left out.
fn digit_strings(rule: &Rule) -> BTreeSet<String> {
    let Rule::Spec { bodies, .. } = rule else {
        return BTreeSet::new();
    };
    let checked = |q: &Query| -> BTreeSet<String> {
        q.stmts
            .iter()
            .filter_map(|stmt| match &stmt.literal {
                Literal::Expr { expr, .. } => match expr.as_ref() {
                    Expr::Call { fcn, params, .. }
                        if path_of(fcn).join(".") == "regex.match"
                            && params.len() == 2
                            && const_string(&params[0]).is_some_and(|p| digits_only(&p)) =>
                    {
                        var_name(&params[1])
                    }
                    _ => None,
                },
                _ => None,
            })
            .collect()
    };
    let mut out: Option<BTreeSet<String>> = None;
    for b in bodies {
        let here = checked(&b.query);
        out = Some(match out {
            None => here,
            Some(o) => o.intersection(&here).cloned().collect(),
        });
    }
    let mut out = out.unwrap_or_default();
    if out.is_empty() {
        return out;
    }
    let tops: Vec<*const Query> = bodies.iter().map(|b| &*b.query as *const Query).collect();
    walk_queries(rule, &mut |q| {
        let inner = !tops.contains(&(q as *const Query));
        for stmt in &q.stmts {
            match &stmt.literal {
                Literal::Every { key, value, .. } => {
                    for s in key.iter().chain(std::iter::once(value)) {
                        out.remove(s.text());
                    }
                }
                Literal::SomeVars { vars, .. } if inner => {
                    for s in vars {
                        out.remove(s.text());
                    }
                }
                Literal::SomeIn { key, value, .. } if inner => {
                    for e in key.iter().chain(std::iter::once(value)) {
                        for v in super::visit::vars(e) {
                            out.remove(&v);
                        }
                    }
                }
                Literal::Expr { expr, .. } if inner => {
                    if let Expr::AssignExpr { lhs, .. } = expr.as_ref() {
                        for v in super::visit::vars(lhs) {
                            out.remove(&v);
                        }
                    }
                }
                _ => {}
            }
        }
    });
    out
}

/// How a local of a rule gets its value, for [`integer_locals`].
enum Binding {
    /// `x := e`, `x = e`.
    Value(Ref<Expr>),
    /// `some x in c`: a member of `c`.
    Member(Ref<Expr>),
    /// `some i, _ in c`, `c[i]`: a key or index of `c`.
    Key(Ref<Expr>),
    /// A function's parameter, a pattern, `every`'s: anything.
    Unknown,
}

/// The locals of `rule` that hold integers wherever they are bound: every
/// binding of the name (in any body or comprehension of the rule) is an
/// expression that cannot be a fraction, a member of `numbers.range` /
/// `numbers.range_step` / `indexof_n` or of a literal of integers, or an
/// index of an array from `input`, `data` or those builtins (a JSON
/// object's keys are strings, which arithmetic refuses in both engines).
/// A name with no binding found (a rule, say) is not one. Also, under
/// [`digits_var`], the locals a statement matches against a digits-only
/// pattern (`regex.match("^[0-9]+$", s)`: the body fails otherwise, so
/// wherever it succeeds `to_number(s)` is an integer).
fn integer_locals(rule: &Rule, module: usize, facts: &Facts) -> BTreeSet<String> {
    let mut bindings: HashMap<String, Vec<Binding>> = HashMap::new();
    let digits = digit_strings(rule);
    let mut bind = |name: Option<String>, b: Binding| {
        if let Some(n) = name {
            bindings.entry(n).or_default().push(b);
        }
    };
    if let Rule::Spec {
        head: RuleHead::Func { args, .. },
        ..
    } = rule
    {
        for a in args {
            for v in super::visit::vars(a) {
                bind(Some(v), Binding::Unknown);
            }
        }
    }
    walk_queries(rule, &mut |q| {
        for stmt in &q.stmts {
            match &stmt.literal {
                Literal::SomeIn {
                    key,
                    value,
                    collection,
                    ..
                } => {
                    if let Some(k) = key {
                        bind(var_name(k), Binding::Key(collection.clone()));
                    }
                    match var_name(value) {
                        Some(v) => bind(Some(v), Binding::Member(collection.clone())),
                        None => {
                            for v in super::visit::vars(value) {
                                bind(Some(v), Binding::Unknown);
                            }
                        }
                    }
                }
                Literal::Every { key, value, .. } => {
                    for s in key.iter().chain(std::iter::once(value)) {
                        bind(Some(s.text().to_string()), Binding::Unknown);
                    }
                }
                Literal::Expr { expr, .. } => {
                    if let Expr::AssignExpr { lhs, rhs, .. } = expr.as_ref() {
                        match (var_name(lhs), var_name(rhs)) {
                            (Some(l), _) => bind(Some(l), Binding::Value(rhs.clone())),
                            (None, Some(r)) => bind(Some(r), Binding::Value(lhs.clone())),
                            (None, None) => {
                                for v in super::visit::vars(lhs)
                                    .into_iter()
                                    .chain(super::visit::vars(rhs))
                                {
                                    bind(Some(v), Binding::Unknown);
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    });
    // Every `c[i]` with a variable index binds (or looks up) `i` as a key.
    walk_rule(rule, &mut |e| {
        if let Expr::RefBrack { refr, index, .. } = e
            && let Some(i) = var_name(index)
        {
            bind(Some(i), Binding::Key(refr.clone()));
        }
        true
    });
    let arrays = |c: &Expr| match c {
        Expr::Call { fcn, .. } => matches!(
            path_of(fcn).join(".").as_str(),
            "numbers.range"
                | "numbers.range_step"
                | "indexof_n"
                | "split"
                | "regex.split"
                | "array.concat"
                | "array.slice"
                | "array.reverse"
                | "sort"
        ),
        Expr::Array { .. } => true,
        Expr::RefDot { .. } | Expr::RefBrack { .. } | Expr::Var { .. } => {
            let path = path_of(c);
            match path.first().map(String::as_str) {
                Some("input") => true,
                Some("data") => facts.data_at(&path[1..]).is_some(),
                _ => false,
            }
        }
        _ => false,
    };
    let mut ints: BTreeSet<String> = digits.iter().map(|v| digits_var(v)).collect();
    // A local every binding of which is an argument declared digits.
    for (name, bs) in &bindings {
        if bs
            .iter()
            .all(|b| matches!(b, Binding::Value(e) if digits_argument(e, module, facts)))
        {
            ints.insert(digits_var(name));
        }
    }
    // The least fixed point: a local is an integer once all its bindings
    // are, given the integers found so far.
    loop {
        let mut grew = false;
        for (name, bs) in &bindings {
            if ints.contains(name) {
                continue;
            }
            let all = bs.iter().all(|b| match b {
                Binding::Value(e) => !may_be_fraction(e, module, facts, &ints),
                Binding::Member(c) => match c.as_ref() {
                    Expr::Call { fcn, .. } => matches!(
                        path_of(fcn).join(".").as_str(),
                        "numbers.range" | "numbers.range_step" | "indexof_n"
                    ),
                    Expr::Array { items, .. } | Expr::Set { items, .. } => items
                        .iter()
                        .all(|i| !may_be_fraction(i, module, facts, &ints)),
                    _ => false,
                },
                Binding::Key(c) => arrays(c),
                Binding::Unknown => false,
            });
            if all {
                ints.insert(name.clone());
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    ints
}

/// What regent flags in `modules`, as warnings.
pub fn check(modules: &[PolicyModule], facts: &Facts) -> Vec<Finding> {
    let mut out = Vec::new();
    let functions = user_functions(modules);
    // Gathered once: one scan of every module per module would be
    // quadratic in the number of tools.
    let mut all_rules: HashMap<String, Vec<Ref<Rule>>> = HashMap::new();
    for m in modules {
        all_rules
            .entry(m.package.clone())
            .or_default()
            .extend(m.module.policy.iter().cloned());
    }
    for (mi, m) in modules.iter().enumerate() {
        let cx = Cx {
            facts,
            module: mi,
            package: m.package.clone(),
            aliases: aliases(m),
            functions: &functions,
            rules: all_rules.get(&m.package).cloned().unwrap_or_default(),
            all_rules: &all_rules,
            assigned: Default::default(),
            depth: Default::default(),
        };
        let cx = &cx;
        for rule in &m.module.policy {
            let name = path_of(head(rule)).first().cloned().unwrap_or_default();
            let bound = bound_names(rule);
            let mut ints = integer_locals(rule, mi, facts);
            // A name that is also a rule of the package may mean the rule
            // in a body that does not bind it.
            ints.retain(|v| {
                let name = v.strip_suffix(" digits").unwrap_or(v);
                !cx.rules
                    .iter()
                    .any(|r| path_of(head(r)).first().map(String::as_str) == Some(name))
            });
            *cx.assigned.borrow_mut() = assignments(rule);
            let mut push = |d: Diagnostic| {
                out.push(Finding {
                    package: m.package.clone(),
                    rule: name.clone(),
                    diagnostic: d,
                })
            };
            // `x in c` as a statement of its own fails the body whether it
            // is false (regorus) or undefined (OPA); under `not`, the
            // guards above decide.
            let mut statements: Vec<*const Expr> = Vec::new();
            let mut query = |q: &Query| {
                // What earlier statements of this query establish: an
                // expression used as an operand of a statement that held is
                // defined (`x != null`, `startswith(x, …)`); one given to
                // `is_array`, `is_object` or `is_set` is a collection.
                let mut defined: Vec<&str> = Vec::new();
                let mut collections: Vec<&str> = Vec::new();
                for s in &q.stmts {
                    if let Literal::Expr { expr, .. } | Literal::NotExpr { expr, .. } = &s.literal {
                        statements.push(expr.as_ref() as *const Expr);
                    }
                    match &s.literal {
                        Literal::NotExpr { expr, span } => {
                            if let Some(g) = not_guards(expr).into_iter().find(|g| {
                                !defined.contains(&g.span().text())
                                    && may_be_undefined(g, &bound, cx)
                            }) {
                                push(not_finding(span, g));
                            }
                        }
                        Literal::SomeIn { collection, .. }
                            if !collections.contains(&collection.span().text())
                                && !is_collection(collection, &bound, cx) =>
                        {
                            push(some_in_finding(collection));
                        }
                        Literal::Expr { expr, .. } => match expr.as_ref() {
                            Expr::Call { fcn, params, .. } => {
                                let name = path_of(fcn).join(".");
                                if matches!(name.as_str(), "is_array" | "is_object" | "is_set")
                                    && let [p] = &params[..]
                                {
                                    collections.push(p.span().text());
                                }
                                defined.extend(params.iter().map(|p| p.span().text()));
                            }
                            Expr::BoolExpr { lhs, rhs, .. } => {
                                defined.push(lhs.span().text());
                                defined.push(rhs.span().text());
                            }
                            Expr::RefDot { .. } | Expr::RefBrack { .. } | Expr::Var { .. } => {
                                defined.push(expr.span().text())
                            }
                            _ => {}
                        },
                        _ => {}
                    }
                }
            };
            walk_queries(rule, &mut query);
            Walk::ALL.rule(rule, &mut |e| {
                match e {
                    Expr::BoolExpr {
                        op: BoolOp::Lt | BoolOp::Le | BoolOp::Gt | BoolOp::Ge,
                        lhs,
                        rhs,
                        span,
                        ..
                    } if may_hold_set(lhs)
                        && may_hold_set(rhs)
                        // A local that holds an integer is no set.
                        && ![lhs, rhs]
                            .iter()
                            .any(|x| var_name(x).is_some_and(|v| ints.contains(&v))) =>
                    {
                        push(order_finding(span))
                    }
                    Expr::ArithExpr {
                        op: ArithOp::Add | ArithOp::Sub | ArithOp::Mul | ArithOp::Div,
                        lhs,
                        rhs,
                        span,
                        ..
                    } if (may_be_fraction(lhs, mi, facts, &ints)
                        || may_be_fraction(rhs, mi, facts, &ints))
                        && ![lhs, rhs].iter().any(|x| {
                            matches!(x.as_ref(), Expr::Set { .. } | Expr::SetCompr { .. })
                        }) =>
                    {
                        push(arith_finding(span))
                    }
                    Expr::Call { fcn, params, .. } => {
                        let name = path_of(fcn).join(".");
                        let at = match name.as_str() {
                            "regex.match" | "regex.is_valid" | "regex.split" | "regex.find_n" => 0,
                            "regex.replace" => 1,
                            _ => return true,
                        };
                        if let Some(p) = params.get(at)
                            && let Some(pattern) = const_string(p)
                            && let Err(Refused::Unsure(what)) = translate(&pattern)
                        {
                            push(regex_finding(p, &what));
                        }
                    }
                    Expr::Membership {
                        key,
                        value,
                        collection,
                        ..
                    } if !statements.contains(&(e as *const Expr))
                        && (may_be_undefined(collection, &bound, cx)
                            || may_be_undefined(value, &bound, cx)
                            || key
                                .as_ref()
                                .is_some_and(|k| may_be_undefined(k, &bound, cx))) =>
                    {
                        push(in_finding(e, collection));
                    }
                    _ => {}
                }
                true
            });
        }
    }
    out
}

fn not_finding(span: &Span, guard: &Expr) -> Diagnostic {
    let g = guard.span().text();
    Diagnostic::warning(
        "opa-not-undefined",
        span_location(span),
        format!(
            "`{}`: when `{g}` is undefined OPA fails this body (it evaluates `{g}` before the `not`), regorus makes the `not` hold",
            span.text()
        ),
    )
    .with_help(format!(
        "check that `{g}` is defined first: bind it (`v := {g}`) and negate over `v`, or give it a default (`object.get(…, \"key\", null)`), so both engines agree"
    ))
}

fn some_in_finding(collection: &Expr) -> Diagnostic {
    let c = collection.span().text();
    Diagnostic::warning(
        "opa-iterate-scalar",
        span_location(collection.span()),
        format!(
            "`some … in {c}`: over a string or number OPA iterates nothing, regorus fails the evaluation"
        ),
    )
    .with_help(format!(
        "check the kind first: `is_array({c})` (or `is_object`, `is_set`) before `some … in {c}`"
    ))
}

fn in_finding(e: &Expr, collection: &Expr) -> Diagnostic {
    let c = collection.span().text();
    Diagnostic::warning(
        "opa-in-undefined",
        span_location(e.span()),
        format!(
            "`{}`: when `{c}` (or the member) is undefined OPA's `in` is undefined, regorus' is false",
            e.span().text()
        ),
    )
    .with_help(format!(
        "bind the operands first (`c := {c}`), so that an undefined one fails the body in both engines"
    ))
}

fn order_finding(span: &Span) -> Diagnostic {
    Diagnostic::warning(
        "opa-order",
        span_location(span),
        format!(
            "`{}`: when one side is a set and the other an object OPA orders the set after, regorus before",
            span.text()
        ),
    )
    .with_help(
        "compare values of one kind: check `is_number`/`is_string` on both sides first, or compare with a literal",
    )
}

fn arith_finding(span: &Span) -> Diagnostic {
    Diagnostic::warning(
        "opa-float-arithmetic",
        span_location(span),
        format!(
            "`{}`: on a number that is not an integer OPA computes with 64-bit decimals (`0.1 + 0.2` is 0.3), regorus with doubles (0.30000000000000004); regent's own evaluator answers as OPA or fails where it cannot hold OPA's result (`1 / 3` is 0.33333333333333333334 in OPA)",
            span.text()
        ),
    )
    .with_help(format!(
        "{}; declare the arguments `type: integer` in inputSchema so regent knows they are",
        crate::opa_builtins::arith::PORTABLE
    ))
}

fn regex_finding(pattern: &Expr, what: &str) -> Diagnostic {
    Diagnostic::warning(
        "opa-regex-syntax",
        span_location(pattern.span()),
        format!(
            "`{}`: {what} may not mean in regent's regex engine what it means in OPA's Go RE2; every evaluation of it fails",
            pattern.span().text()
        ),
    )
    .with_help(
        "spell the class out (`[α-ωΑ-Ω]` for `\\p{Greek}`), or use a general category (`\\pL`, `\\p{Lu}`)",
    )
}

#[cfg(test)]
mod tests {
    use super::digits_only;

    #[test]
    fn digits_only_patterns() {
        for p in [
            "^[0-9]+$",
            "^\\d+$",
            "^-?[0-9]{1,6}$",
            "^[0-9][0-9]*$",
            "^\\d{3}$",
        ] {
            assert!(digits_only(p), "{p}");
        }
        for p in [
            "[0-9]+",
            "^[0-9]+",
            "^[0-9.]+$",
            "^\\d+(\\.\\d+)?$",
            "^[0-9]+|x$",
            "^$",
            "^\\d+e\\d+$",
        ] {
            assert!(!digits_only(p), "{p}");
        }
    }
}
