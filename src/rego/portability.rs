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
//! - inside `every`, `not` over a reference indexed by its key or value
//!   (`every x in c { not b[x] }`): regorus iterates `b`, failing the body
//!   where `b[x]` is undefined; OPA's `not` holds there.
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
//!   (`integers::integer_locals`).
//! - an array built by iterating a set literal of non-constant members
//!   (`[x | some x in {input.a, input.b}]`, or a local or rule bound to
//!   one): OPA iterates such a set in an order of its own, neither sorted
//!   nor as written; an error in both evaluators.
//! - a constant pattern of a regex builtin whose Go meaning regent does not
//!   reproduce (`opa_builtins::regex`: a Unicode class by a script or long
//!   name): every
//!   evaluation of it fails closed, in both evaluators; a pattern from the
//!   request (`regex`) fails closed on such a request.
//! - `json.verify_schema` or `json.match_schema` given a schema or a
//!   document from the request (`schema`): regent fails closed on an
//!   invalid schema, a keyword it does not check and a mismatch, in both
//!   evaluators, where OPA answers.
//!
//! - a reference into `input` that may be a number past a double's
//!   digits (`18446744073709551617`) where its exact value decides the
//!   answer (`lost`): both evaluators fail closed on such a request, so
//!   it is a warning only.
//!
//! Each finding is a located diagnostic; whether it is a warning (the rule
//! runs natively, which answers as OPA) or a load error (it runs on
//! regorus) is the build's call.
//!
//! This file walks each rule ([`check`]) and words the findings; what it
//! asks is one family per file: `guards` (what OPA evaluates before a
//! `not`), `defined` (may an expression be undefined, is it a collection:
//! `not`, `in`, `some … in`), `sets` (`<`, `>` over sets), `integers`
//! (`+ - * /` on integers), `lost` (numbers past a double), over `facts`
//! (the schemas and data) and `locals` (what a rule binds).

use regorus::unstable::{ArithOp, BoolOp, Expr, Literal, Query, Ref, Rule, Span};

use std::collections::HashMap;

use super::lint::{aliases, user_functions};
use super::visit::Walk;
use super::{PolicyModule, const_string, head, path_of, span_location};
use crate::diag::Diagnostic;
use crate::opa_builtins::regex::{Refused, translate};

mod defined;
mod facts;
mod guards;
mod integers;
mod locals;
mod lost;
mod parse;
mod regex;
mod schema;
mod sets;

use defined::{Cx, is_collection, may_be_undefined};
pub use facts::Facts;
pub use guards::not_guards;
use integers::{integer_locals, may_be_fraction};
use locals::{assignments, var_name};
pub(super) use locals::{bound_names, walk_queries};
pub use lost::number_references;
use sets::may_hold_set;

/// One construct regent flags, in a rule of a package.
#[derive(Debug, Clone)]
pub struct Finding {
    pub package: String,
    /// The rule or function it is in.
    pub rule: String,
    /// A warning: a load error is made of it by the build.
    pub diagnostic: Diagnostic,
}

impl Finding {
    /// Whether regorus answers the construct otherwise than OPA, so that a
    /// tool running it on regorus is refused and its pool flagged; false
    /// for one both evaluators fail closed on (`opa-number-text`), which
    /// stays a warning.
    pub fn regorus(&self) -> bool {
        ![
            TEXT_CODE,
            INDEX_CODE,
            INTEGER_CODE,
            PATCH_CODE,
            lost::CODE,
            parse::PARSE_CODE,
            regex::CODE,
            schema::CODE,
        ]
        .contains(&self.diagnostic.code)
            && !self.diagnostic.is_error()
    }
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
            walk_queries(rule, &mut |q| every_nots(q, &[], &mut push));
            // A number the request may spell past a double: once per
            // rule and reference.
            let mut lost_seen = std::collections::HashSet::new();
            if let Some((n, d)) = lost::answer(rule, mi, facts)
                && lost_seen.insert(n)
            {
                push(d);
            }
            Walk::ALL.rule(rule, &mut |e| {
                let on_integers = |x: &Expr| match x {
                    Expr::ArithExpr { lhs, rhs, .. } => {
                        !may_be_fraction(lhs, mi, facts, &ints)
                            && !may_be_fraction(rhs, mi, facts, &ints)
                    }
                    _ => false,
                };
                if let Some((n, d)) = lost::site(e, mi, facts, on_integers)
                    && lost_seen.insert(n)
                {
                    push(d);
                }
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
                    Expr::Call {
                        fcn, params, span, ..
                    } => {
                        let name = path_of(fcn).join(".");
                        if super::data_numbers::TEXT_BUILTINS.contains(&name.as_str())
                            && params.iter().any(|p| writes_input_number(p, mi, facts))
                        {
                            push(text_finding(span));
                        }
                        if let Some(p) = super::data_numbers::integer_operands(&name)
                            .iter()
                            .filter_map(|&i| params.get(i))
                            .find(|p| writes_input_number(p, mi, facts))
                        {
                            push(integer_finding(p, &name));
                        }
                        if let Some(d) = parse::parse_finding(&name, params, mi, facts) {
                            push(d);
                        }
                        if let Some(d) = schema::input_operand(&name, params) {
                            push(d);
                        }
                        if name == "json.patch"
                            && let Some(p) = params.get(1).and_then(|p| patch_path_input(p))
                        {
                            push(patch_finding(p));
                        }
                        let Some(p) = regex::pattern_operand(&name).and_then(|i| params.get(i))
                        else {
                            return true;
                        };
                        if let Some(pattern) = const_string(p)
                            && let Err(Refused::Unsure(what)) = translate(&pattern)
                        {
                            push(regex_finding(p, &what));
                        }
                        if let Some(d) = regex::input_pattern(p, &name) {
                            push(d);
                        }
                    }
                    // `[x | some x in {input.a, input.b}]`: OPA iterates a
                    // set literal of non-constant members where it is
                    // written in an order of its own (neither sorted nor
                    // as written), which neither evaluator reproduces.
                    Expr::ArrayCompr { query, .. } => {
                        let mut in_place = None;
                        for s in &query.stmts {
                            if let Literal::SomeIn { collection, .. } = &s.literal
                                && iterated_set_literal(collection, cx)
                            {
                                in_place.get_or_insert(collection.clone());
                            }
                            if let Literal::Expr { expr, .. } = &s.literal {
                                Walk::ALL.expr(expr, &mut |x| {
                                    if let Expr::RefBrack { refr, .. } = x
                                        && iterated_set_literal(refr, cx)
                                    {
                                        in_place.get_or_insert(refr.clone());
                                    }
                                    in_place.is_none()
                                });
                            }
                        }
                        if let Some(set) = in_place {
                            push(set_literal_finding(&set));
                        }
                    }
                    // `x[input.n]`: an array indexed by a number the
                    // request may spell with an exponent (`2E0`).
                    Expr::RefBrack { index, .. } if writes_input_number(index, mi, facts) => {
                        push(index_finding(index))
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

/// Whether `e` is a set literal with a member that is not a constant, or
/// a local of the rule or a rule of the package whose value is one (OPA
/// keeps its own order for such a set wherever it goes; one built through
/// a function or a set operation is not followed).
fn iterated_set_literal(e: &Expr, cx: &Cx) -> bool {
    if let Expr::Var { value, .. } = e
        && let Ok(name) = value.as_string()
    {
        if let Some(bound) = cx.assigned.borrow().get(name.as_ref()).cloned() {
            return literal_of_non_constants(&bound);
        }
        return cx.rules.iter().any(|r| {
            matches!(r.as_ref(), Rule::Spec {
                head: regorus::unstable::RuleHead::Compr { refr, assign: Some(a), .. },
                ..
            } if path_of(refr).first().map(String::as_str) == Some(name.as_ref())
                && literal_of_non_constants(&a.value))
        });
    }
    literal_of_non_constants(e)
}

/// Whether `e` is a set literal with a member that is not a constant.
fn literal_of_non_constants(e: &Expr) -> bool {
    fn constant(e: &Expr) -> bool {
        match e {
            Expr::String { .. }
            | Expr::RawString { .. }
            | Expr::Number { .. }
            | Expr::Bool { .. }
            | Expr::Null { .. } => true,
            Expr::Array { items, .. } | Expr::Set { items, .. } => {
                items.iter().all(|i| constant(i))
            }
            Expr::Object { fields, .. } => {
                fields.iter().all(|(_, k, v)| constant(k) && constant(v))
            }
            _ => false,
        }
    }
    // One member has one order.
    matches!(e, Expr::Set { items, .. } if items.len() > 1 && items.iter().any(|i| !constant(i)))
}

/// An error in both evaluators: OPA's order for such a set is its own.
fn set_literal_finding(set: &Expr) -> Diagnostic {
    let s = set.span().text();
    Diagnostic::error(
        "opa-set-literal-order",
        span_location(set.span()),
        format!(
            "`{s}`: an array built by iterating a set literal of non-constant members (`{{input.a, input.b}}`, here or where it is bound); OPA iterates such a set in an order of its own (neither sorted nor as written: `[x | some x in {{input.a, input.b, \"m\"}}]` is `[\"m\", …]`), which regent cannot reproduce"
        ),
    )
    .with_help(
        "build the set with a comprehension (`{y | some y in [input.a, input.b]}`), which OPA iterates in sorted order as regent does, or iterate the array itself (`[input.a, input.b]`)",
    )
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

/// In the body of an `every` (and of one nested in it), a `not` over a
/// reference indexed by the key or value of one of them (`not b[x]`):
/// regorus reads `b[x]` as a loop over `b`, so where it is undefined the
/// body fails; OPA's `not` holds (`vars`: the enclosing `every`s' names).
fn every_nots(q: &Query, vars: &[&str], push: &mut dyn FnMut(Diagnostic)) {
    for s in &q.stmts {
        match &s.literal {
            Literal::NotExpr { expr, span } if !vars.is_empty() => {
                let mut hit: Option<String> = None;
                Walk::ALL.expr(expr, &mut |e| {
                    if let Expr::RefBrack { index, .. } = e
                        && var_name(index).is_some_and(|v| vars.contains(&v.as_str()))
                    {
                        hit.get_or_insert_with(|| e.span().text().to_string());
                    }
                    hit.is_none()
                });
                if let Some(r) = hit {
                    push(every_not_finding(span, &r));
                }
            }
            Literal::Every {
                key, value, query, ..
            } => {
                let mut inner = vars.to_vec();
                inner.extend(
                    key.iter()
                        .chain([value])
                        .map(|v| v.text())
                        .filter(|v| *v != "_"),
                );
                every_nots(query, &inner, push);
            }
            _ => {}
        }
    }
}

fn every_not_finding(span: &Span, r: &str) -> Diagnostic {
    Diagnostic::warning(
        "opa-every-not-index",
        span_location(span),
        format!(
            "`{}`: inside `every`, when `{r}` is undefined OPA makes the `not` hold, regorus fails the body (it iterates the reference)",
            span.text()
        ),
    )
    .with_help(format!(
        "bind the variable to a local of the body first (`k := …`) and index by that local in `{r}`, so both engines agree"
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

/// The code of [`text_finding`].
const TEXT_CODE: &str = "opa-number-text";

/// Whether `e` is, or is a literal holding, a reference into `input` that
/// may be a number the client spelled: any but an argument every schema
/// declares a string or boolean, and the strings regent puts in `input`. Locals and other rules' values are not
/// followed (a finding must not be noise; evaluation fails closed anyway).
fn writes_input_number(e: &Expr, module: usize, facts: &Facts) -> bool {
    let may = |x: &Expr| writes_input_number(x, module, facts);
    match e {
        Expr::Array { items, .. } | Expr::Set { items, .. } => items.iter().any(|x| may(x)),
        Expr::Object { fields, .. } => fields.iter().any(|(_, k, v)| may(k) || may(v)),
        Expr::RefDot { .. } | Expr::RefBrack { .. } | Expr::Var { .. } => {
            let path = path_of(e);
            let p: Vec<&str> = path.iter().map(String::as_str).collect();
            // regent's own strings: the tool's name, the caller's
            // subject and issuer.
            let strings = matches!(
                p[..],
                ["input", "tool"] | ["input", "caller", "subject" | "issuer"]
            );
            p.first() == Some(&"input")
                && !strings
                && !(p.len() > 2
                    && p[1] == "arguments"
                    && facts.argument_not_number(module, &path[2..]))
        }
        _ => false,
    }
}

/// A builtin that writes a number's text, given a request's value that may
/// be a number: OPA writes it back as the client spelled it, regent
/// answers only where its own text is the same (`policy::spelled`,
/// `opa_builtins::sprintf::text_unknown`) and fails closed otherwise, in
/// both evaluators: a warning, never a refusal of the tool
/// ([`Finding::regorus`]).
fn text_finding(span: &Span) -> Diagnostic {
    Diagnostic::warning(
        TEXT_CODE,
        span_location(span),
        format!(
            "`{}`: writes the text of a number the request may hold; OPA writes it back as the client spelled it (`1.50`, `1E2`) and some floats (from 1e16, below 1e-4) in Go's form; regent answers where its own text is OPA's and fails closed otherwise",
            span.text()
        ),
    )
    .with_help(
        "declare the argument `type: string` (or `boolean`) in inputSchema if it is one, or compare the number instead of writing it",
    )
}

/// The code of [`index_finding`].
const INDEX_CODE: &str = "opa-number-index";

/// An index by a request's value that may be a number: OPA never reads an
/// integer spelled with an exponent (`2E0`) as one, so an array indexed by
/// it is undefined, where regent would read the integer; both evaluators
/// fail closed on such a request (`policy::spelled::index_refusal`, the
/// pool's guard before regorus): a warning, never a refusal of the tool
/// ([`Finding::regorus`]).
fn index_finding(index: &Expr) -> Diagnostic {
    let n = path_of(index).join(".");
    Diagnostic::warning(
        INDEX_CODE,
        span_location(super::root_span(index)),
        format!(
            "`[{n}]`: indexes with a number the request may hold; when the request spells it with an exponent (`2E0`, `1e1`), or with more digits than a double holds (`1.0000000000000000001`), OPA's index into an array is undefined (it reads no integer from that text), where regent would read the integer; regent fails closed on such a request"
        ),
    )
    .with_help(format!(
        "find the member by iterating (`some i, x in arr; i == {n}`), which OPA and regent answer alike whatever the spelling, or declare the argument `type: string` in inputSchema if it is a key"
    ))
}

/// The code of [`integer_finding`].
const INTEGER_CODE: &str = "opa-number-integer";

/// A builtin that reads an operand as an integer (`name`, one of
/// `data_numbers::INTEGER_BUILTINS`) given there a request's value that may
/// be a number: OPA answers a type error for an integer spelled with an
/// exponent (`2E0`), where regent would read the integer; both evaluators
/// fail closed on such a request (`policy::spelled::check`): a warning,
/// never a refusal of the tool ([`Finding::regorus`]).
fn integer_finding(operand: &Expr, name: &str) -> Diagnostic {
    let n = path_of(operand).join(".");
    Diagnostic::warning(
        INTEGER_CODE,
        span_location(super::root_span(operand)),
        format!(
            "`{n}`: `{name}` reads it as an integer; when the request spells the number with an exponent (`2E0`, `1e+16`) OPA answers `must be integer number` (it never reads that text as an integer), where regent would read the integer; regent fails closed on such a request"
        ),
    )
    .with_help(
        "nothing in the policy makes it portable (regent matches the number by value); have clients send integers without an exponent (`2`, not `2E0`), which both answer alike",
    )
}

/// The code of [`patch_finding`].
const PATCH_CODE: &str = "opa-json-patch-path";

/// Where `json.patch`'s patches (`patches`) may take a `path` or `from`
/// from the request: a reference into `input` in a patch's `path` or
/// `from` field, in a patch that is not an object literal, or as the
/// patches themselves.
fn patch_path_input(patches: &Expr) -> Option<&Expr> {
    match patches {
        Expr::Array { items, .. } | Expr::Set { items, .. } => {
            items.iter().find_map(|p| match p.as_ref() {
                Expr::Object { fields, .. } => fields
                    .iter()
                    .filter(|(_, k, _)| {
                        const_string(k).is_some_and(|k| matches!(k.as_str(), "path" | "from"))
                    })
                    .find_map(|(_, _, v)| refers_input(v)),
                other => refers_input(other),
            })
        }
        other => refers_input(other),
    }
}

/// The first reference into `input` in `e` or the literals it holds.
fn refers_input(e: &Expr) -> Option<&Expr> {
    match e {
        Expr::Array { items, .. } | Expr::Set { items, .. } => {
            items.iter().find_map(|x| refers_input(x))
        }
        Expr::Object { fields, .. } => fields
            .iter()
            .find_map(|(_, k, v)| refers_input(k).or_else(|| refers_input(v))),
        Expr::RefDot { .. } | Expr::RefBrack { .. } | Expr::Var { .. } => {
            (path_of(e).first().map(String::as_str) == Some("input")).then_some(e)
        }
        _ => None,
    }
}

/// `json.patch` given a path from the request: OPA reads an array index
/// from a number's or a string's text (`2.0`, `"1.0"` and `"/a/1.0"` are
/// index 1 or 2, `2E0` an error, a number key as spelled), regent from the
/// number it holds, and fails closed on those (`opa_builtins::json_patch`,
/// `policy::spelled`): a warning, never a refusal of the tool.
fn patch_finding(at: &Expr) -> Diagnostic {
    let n = path_of(at).join(".");
    Diagnostic::warning(
        PATCH_CODE,
        span_location(super::root_span(at)),
        format!(
            "`{n}`: `json.patch` takes a patch's path from the request; OPA reads an array index written with a decimal point (`2.0`, `\"1.0\"`, `\"/a/1.0\"`) as the integer and a number key as spelled, where regent fails closed on such a request"
        ),
    )
    .with_help(
        "have clients send array indexes as integers without a decimal point or exponent (`2`, `\"/a/2\"`), which both answer alike",
    )
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
