//! What OPA's rule index checks before it evaluates a body (issue 27).
//!
//! OPA's compiler moves a rule head's calls and references into the body
//! (after the body's own statements) and binds every reference that is an
//! operand of a call or a member of a composite to a fresh variable
//! (`__local0__ = input.b`). Its rule index then reads, for each body,
//! every statement `ref = value` whose `ref` is ground and rooted at
//! `input` (or a base document of `data`) and whose `value` is a scalar
//! literal, a variable or an array of those, and a naked `ref`; a body
//! whose reference is undefined, or whose scalar differs, is never
//! evaluated. So `x := [base64.encode(input.a), input.b]` is undefined,
//! not the call's type error, when `input.b` is absent: the index looks
//! at `input.b` before anything runs. The same holds for a function's
//! parameter compared with a scalar (`f(x) if x == 1`, called `f(2)`).
//!
//! Established with OPA's engine (`tests/opa/oracle.py`, strict builtin
//! errors), `input = {"a": 2.5, "c": 1}`, each body after
//! `base64.encode(input.a)` (type error) unless a head:
//!
//! | body or head | OPA | why |
//! | --- | --- | --- |
//! | `y := [<call>, input.b]`, `{"k": <call>, "j": input.b}` (head or body) | undefined | `__l = input.b` |
//! | `<call>` head alone, `[<call>, 1]`, `[<call>, data.d.k]` (defined) | error | nothing undefined |
//! | `[<call>, und]`, `und := input.b` another rule | error | a rule is not indexed |
//! | `[upper(<call>), input.b]`, `concat(",", [<call>, input.b])` | undefined | nested calls |
//! | `input.b`; `input.b == 1`; `x := input.b`; `count(input.b) > 0` | undefined | |
//! | `input.c == 2` | undefined | scalar differs |
//! | `input.c == 2; x := input.c` | error | a later entry of a reference replaces an earlier one |
//! | `x := input.c; input.c == 2` | undefined | |
//! | `input.c == "1"`, `input.arr == [1, 3]` | undefined | |
//! | `input.s == upper("x")` (`s` is `"x"`) | error | a call is a variable: any value |
//! | `input.c == 1.0` | error | equal |
//! | `input.b == input.c`, `input.b == {"k": 1}` | error | neither side indexable |
//! | `not input.b`, `not input.b == 1` | error | negated: not indexed |
//! | `not startswith(input.b, "x")` | undefined | the argument is moved out of the `not` |
//! | `some x in input.b` | error | not indexed |
//! | `every x in input.b { x }` | undefined | its domain is |
//! | `input.o[input.b]` | undefined | the inner reference; the outer is not ground |
//! | `x := "k"; input.b[x]`, `x := input.c; x.y` | error | not ground / not `input` |
//! | `y := input.c == 2`, head `[<call>, input.c == 2]` | error | a call with an output: any value |
//! | `[x \| x := input.b]`, head `[<call>, [y \| y := input.b]]` | error | a comprehension's body is its own |
//! | `e := <call> if { input.c == 2 } else := [<call>, input.b]` | undefined | each `else` body alone |
//! | `e := 1 if { input.b } else := [<call>, input.b] if { true } else := 3` | 3 | |
//! | `c contains [<call>, input.b]` | `[]` | |
//! | `f(x) := [<call>, x]` called `f(input.b)` | undefined | the caller's `__l = input.b` |
//! | `g(x) := <call> if x == 2` called `g(1)`; `h(x) := [<call>, input.b]` | undefined | |
//! | `f(x) := <call> if { x == 1; y := x }` called `f(2)` | undefined | a parameter keeps its scalar |
//! | `false`, `1 in {2}`, `startswith(input.b, "z")`, `input.c > 5` (`b` is `"y"`) | error | evaluated in order |
//! | `input.b in ["z", input.c]` (`b` is `"y"`) | error | the index reads `b`, `c`: defined |
//! | `input.c in {2}`, `"z" in input.s`, `x := {1}; input.b in x` (all false) | undefined | OPA 1.20.2 skips these too (not followed here) |
//! | head `[<call>, data.nope]` | undefined | a base document of `data` (not followed here) |
//!
//! Only what is certain is guarded: an array on the other side is taken as
//! "defined" (OPA also matches its scalars); memberships, `data`
//! references and `glob.match` (which OPA also indexes) are not guarded;
//! there native evaluates in order, and a call's error before them stays
//! an error (fail closed, never fail open).

use std::collections::HashMap;

use regorus::unstable::{BoolOp, Expr, Literal, Query, Ref};

use crate::rego::path_of;

/// What the index asks of one reference or parameter.
pub(super) enum Want<'e> {
    /// Defined.
    Any,
    /// Equal to this scalar literal.
    Scalar(&'e Ref<Expr>),
}

/// The index's entries for a body and its head's value, in OPA's order,
/// a later entry of a reference replacing an earlier one: each reference
/// (`input.x.y`, or a parameter `x` of `params`) with what it must be.
/// `local` tells whether a name is a variable of the body.
pub(super) fn entries<'e>(
    query: Option<&'e Query>,
    value: Option<&'e Ref<Expr>>,
    local: &dyn Fn(&str) -> bool,
    params: &[String],
) -> Vec<(&'e Ref<Expr>, Want<'e>)> {
    let mut w = Walk {
        local,
        params,
        out: Vec::new(),
        at: HashMap::new(),
    };
    for stmt in query.map_or(&[][..], |q| &q.stmts[..]) {
        if !stmt.with_mods.is_empty() {
            continue;
        }
        match &stmt.literal {
            Literal::Expr { expr, .. } => w.statement(expr),
            Literal::NotExpr { expr, .. } => {
                for g in crate::rego::portability::not_guards(expr) {
                    w.one(g);
                }
            }
            Literal::Every { domain, .. } => w.eq(None, domain),
            Literal::SomeIn { .. } | Literal::SomeVars { .. } => {}
        }
    }
    if let Some(v) = value {
        w.eq(None, v);
    }
    w.out
}

struct Walk<'e, 'a> {
    local: &'a dyn Fn(&str) -> bool,
    params: &'a [String],
    out: Vec<(&'e Ref<Expr>, Want<'e>)>,
    /// Each entry's reference (its path, or `$name` for a parameter) and
    /// position in `out`.
    at: HashMap<String, usize>,
}

/// A reference's root and the dynamic indexes along it.
fn ref_parts(e: &Ref<Expr>) -> (&Ref<Expr>, Vec<&Ref<Expr>>) {
    let mut keys = Vec::new();
    let mut cur = e;
    loop {
        match cur.as_ref() {
            Expr::RefDot { refr, .. } => cur = refr,
            Expr::RefBrack { refr, index, .. } => {
                keys.push(index);
                cur = refr;
            }
            _ => return (cur, keys),
        }
    }
}

fn is_ref(e: &Expr) -> bool {
    matches!(e, Expr::RefDot { .. } | Expr::RefBrack { .. })
}

fn scalar(e: &Expr) -> bool {
    matches!(
        e,
        Expr::String { .. }
            | Expr::RawString { .. }
            | Expr::Number { .. }
            | Expr::Bool { .. }
            | Expr::Null { .. }
    )
}

fn var(e: &Expr) -> Option<String> {
    match e {
        Expr::Var { value, .. } => value.as_string().ok().map(|s| s.to_string()),
        _ => None,
    }
}

/// A call of OPA's (its result a fresh variable once the compiler moves it
/// out of where it stands).
fn is_call(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Call { .. }
            | Expr::BoolExpr { .. }
            | Expr::ArithExpr { .. }
            | Expr::BinExpr { .. }
            | Expr::Membership { .. }
            | Expr::UnaryExpr { .. }
    )
}

impl<'e> Walk<'e, '_> {
    fn push(&mut self, key: String, r: &'e Ref<Expr>, want: Want<'e>) {
        // A parameter is always defined; OPA keeps its scalar past a later
        // `y := x` (probed).
        if key.starts_with('$') && matches!(want, Want::Any) {
            return;
        }
        match self.at.get(&key) {
            Some(&i) => self.out[i] = (r, want),
            None => {
                self.at.insert(key, self.out.len());
                self.out.push((r, want));
            }
        }
    }

    /// The key of an indexable reference: ground (every index a scalar
    /// literal), rooted at `input`; or a parameter.
    fn indexable(&self, e: &'e Ref<Expr>) -> Option<String> {
        if let Some(name) = var(e) {
            return self.params.contains(&name).then(|| format!("${name}"));
        }
        if !is_ref(e) {
            return None;
        }
        let (root, keys) = ref_parts(e);
        if var(root).as_deref() != Some("input") || !keys.iter().all(|k| scalar(k)) {
            return None;
        }
        Some(path_of(e).join("\u{0}"))
    }

    /// Whether `e` is a value the index reads: a scalar literal (`Some`),
    /// or a variable, a call's result or an array of those and scalars
    /// (`None`: any value).
    fn value(&self, e: &'e Ref<Expr>) -> Option<Want<'e>> {
        if scalar(e) {
            return Some(Want::Scalar(e));
        }
        if is_call(e) || var(e).is_some_and(|n| n == "_" || (self.local)(&n)) {
            return Some(Want::Any);
        }
        match e.as_ref() {
            Expr::Array { items, .. } => items
                .iter()
                .all(|i| {
                    scalar(i)
                        || is_call(i)
                        || is_ref(i)
                        || matches!(
                            i.as_ref(),
                            Expr::ArrayCompr { .. } | Expr::SetCompr { .. } | Expr::ObjectCompr { .. }
                        )
                        // A rule's name is a reference, bound to a
                        // fresh variable like the others.
                        || var(i).is_some()
                })
                .then_some(Want::Any),
            _ => None,
        }
    }

    /// A body statement.
    fn statement(&mut self, e: &'e Ref<Expr>) {
        match e.as_ref() {
            Expr::AssignExpr { lhs, rhs, .. } => self.eq(Some(lhs), rhs),
            Expr::BoolExpr {
                op: BoolOp::Eq,
                lhs,
                rhs,
                ..
            } => self.eq(Some(lhs), rhs),
            Expr::Call { fcn, params, .. } if path_of(fcn) == ["equal"] && params.len() == 2 => {
                self.eq(Some(&params[0]), &params[1])
            }
            _ if is_call(e) => self.one(e),
            _ if is_ref(e) => {
                self.in_term(e);
                if let Some(k) = self.indexable(e) {
                    self.push(k, e, Want::Any);
                }
            }
            _ => self.in_term(e),
        }
    }

    /// `a = b` (also `:=`, `==`, and the compiler's `__local0__ = b`,
    /// `a` `None`): each side's dynamic parts, then the entry.
    fn eq(&mut self, a: Option<&'e Ref<Expr>>, b: &'e Ref<Expr>) {
        if let Some(a) = a {
            self.in_term(a);
        }
        self.in_term(b);
        let Some(a) = a else {
            // A fresh variable: any value.
            if let Some(k) = self.indexable(b) {
                self.push(k, b, Want::Any);
            }
            return;
        };
        if let (Some(k), Some(w)) = (self.indexable(a), self.value(b)) {
            self.push(k, a, w);
        } else if let (Some(k), Some(w)) = (self.indexable(b), self.value(a)) {
            self.push(k, b, w);
        }
    }

    /// A side of an equality: a reference's dynamic indexes (not the
    /// reference), nothing of a comprehension, else as an operand.
    fn in_term(&mut self, e: &'e Ref<Expr>) {
        if is_ref(e) {
            for k in ref_parts(e).1.into_iter().rev() {
                self.one(k);
            }
            return;
        }
        if !matches!(
            e.as_ref(),
            Expr::ArrayCompr { .. } | Expr::SetCompr { .. } | Expr::ObjectCompr { .. }
        ) {
            self.one(e);
        }
    }

    /// An operand of a call or a member of a composite: a reference is
    /// bound to a fresh variable (an entry when indexable), a call's and a
    /// composite's operands likewise; a comprehension is its own body.
    fn one(&mut self, e: &'e Ref<Expr>) {
        match e.as_ref() {
            Expr::RefDot { .. } | Expr::RefBrack { .. } => {
                self.in_term(e);
                if let Some(k) = self.indexable(e) {
                    self.push(k, e, Want::Any);
                }
            }
            Expr::Call { params, .. } => {
                for p in params {
                    self.one(p);
                }
            }
            Expr::BoolExpr { lhs, rhs, .. }
            | Expr::ArithExpr { lhs, rhs, .. }
            | Expr::BinExpr { lhs, rhs, .. }
            | Expr::AssignExpr { lhs, rhs, .. } => {
                self.one(lhs);
                self.one(rhs);
            }
            Expr::Membership {
                key,
                value,
                collection,
                ..
            } => {
                if let Some(k) = key {
                    self.one(k);
                }
                self.one(value);
                self.one(collection);
            }
            Expr::UnaryExpr { expr, .. } => self.one(expr),
            Expr::Array { items, .. } | Expr::Set { items, .. } => {
                for i in items {
                    self.one(i);
                }
            }
            Expr::Object { fields, .. } => {
                for (_, k, v) in fields {
                    self.one(k);
                    self.one(v);
                }
            }
            _ => {}
        }
    }
}
