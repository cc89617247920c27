//! A second evaluator for the plain part of Rego, with regorus as its
//! reference: it answers a plan only when every rule of it is in the subset
//! below, and hands the request to regorus whenever it meets anything else.
//!
//! Why it exists (issue 17): regorus' interpreter spends ~170k instructions
//! on the three rules of the shipped `manage_files` policy, most of them on
//! bookkeeping (reference paths built as strings, per-rule resets, scopes),
//! and its compiled RVM swallows errors raised in rule bodies, which would
//! fail open. This evaluator runs the same rules as a tree of [`Term`]s and
//! [`Stmt`]s lowered once at load (`rego/lower`), on regorus' own values
//! (so equality and ordering are regorus'), calling regorus' own builtins
//! (through `budget::call`, so size-driving ones are charged exactly as the
//! installed guards charge them; `split` and constant-format `sprintf` are
//! answered by `builtins` where their answer is plainly regorus').
//!
//! What it runs: complete rules (`x := v if …`, `else` chains, `default`),
//! partial sets (`x contains v if …`), rules of the same package referenced
//! by name, `input` references, locals (`:=`, `some … in`), literals,
//! comparisons, membership (`k in object.keys(x)` as a key lookup), `not`,
//! calls of deterministic builtins, comprehensions, constant references
//! into the data documents, user-defined functions (`f(x, _) := v if …`,
//! several definitions, `else` chains; parameters plain variables) of the
//! same package or of one brought in by `import data.x [as y]` (`y.f(a)`),
//! and rules of such a package (`y.r`, which evaluates every rule of it,
//! as regorus evaluates `data.x` whole). A function call is evaluated as
//! regorus' `eval_call_impl`: arguments first, undefined when one is, no
//! cache (the bodies are pure).
//! Everything else (`default` functions, patterns as parameters, `every`,
//! `with`, `data.x.r` references to other packages' rules, unification,
//! arithmetic, recursion) makes the lowering refuse the plan, which then
//! always runs on regorus.
//!
//! Failing closed: whenever evaluation meets a case whose outcome is not
//! plainly regorus' (a builtin error, including a memory guard's refusal; a
//! complete rule with two values; a function giving two values, from two
//! definitions or from one body, or a body of it holding with an undefined
//! value; an index into something that is not a
//! collection), it returns [`Outcome::Fallback`] and the caller evaluates
//! the plan on regorus from scratch, which gives the error with its location.
//! A runaway loop is stopped by the time limit, as on regorus. In debug
//! builds (every test run) each answer is also computed by regorus and the
//! two must agree (`policy::EnginePool::eval`).
//!
//! Where regorus' interpreter and OPA disagree (issue 27), native answers
//! as OPA: a `not` first evaluates the terms OPA's compiler moves out of it
//! (its guards, from `rego/portability`), and an undefined one fails the
//! body; `some … in` over a scalar iterates nothing; `in` with an undefined
//! operand is undefined; `<`, `>` order sets after objects. Such an answer
//! is noted (debug builds) so that the cross-check with regorus skips it,
//! and a plan holding such a construct never returns regorus' answer after
//! a fallback (`policy::EnginePool::with_flagged`).
//!
//! This module knows regorus' values and builtin table; it does not know the
//! syntax tree (that is `rego/lower`'s), tools or the wire.

use smallvec::SmallVec;
use std::borrow::Cow;

use regorus::Value;
use regorus::unstable::BuiltinFcn;

use super::budget::{self, Estimate, Limits, Scope};
use super::builtins::Fast;
use crate::opa_builtins::Compat;
use crate::opa_builtins::arith::{Declined, Op as Arith};

/// The lowered rules of one tool's engine, and which plan steps they answer.
pub struct Program {
    pub(super) rules: Vec<Rule>,
    /// Step path (`data.tools.manage_files.deny`) and its rule. A plan has
    /// a handful of steps: comparing a few short strings costs less per
    /// request than hashing them.
    pub(super) entries: Vec<(String, usize)>,
    /// The references with constant keys into `input` or a rule
    /// (`input.arguments.path`) that the rules read: each is looked up once
    /// per evaluation, however often the rules name it.
    pub(super) paths: Vec<Path>,
}

/// One step of a memoized reference: `base[key]`, where `base` is
/// [`Term::Input`], a [`Term::Rule`] or another [`Term::Path`] (all fixed
/// for the whole evaluation).
pub(super) struct Path {
    pub base: Term,
    pub key: Value,
}

/// One rule: all its definitions, across the package's modules.
pub(super) struct Rule {
    pub kind: Kind,
    pub defs: Vec<Def>,
    /// `default x := v`, for a complete rule.
    pub default: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Complete,
    PartialSet,
    /// A function of this many parameters (`f(x, y) := v if …`): its
    /// parameters are the first locals of each body; never memoized.
    Function(usize),
}

/// One definition: a body and the `else` bodies after it, the first to hold
/// giving the value.
pub(super) struct Def {
    pub bodies: Vec<Body>,
}

pub(super) struct Body {
    pub stmts: Vec<Stmt>,
    /// The rule's value (complete) or member (partial set) when the body holds.
    pub value: Term,
    /// How many local variables the body binds.
    pub locals: usize,
}

pub(super) enum Stmt {
    /// Holds unless the term is `false` or undefined.
    Expr(Term),
    /// Holds when the term is `false` or undefined; but first each guard
    /// must be defined, else the body fails. The guards are the terms OPA's
    /// compiler moves out of a negated expression before it (`rewriteDynamics`,
    /// `rewriteExprTerms`): a call's arguments that are references or
    /// composites, nested calls, a reference's dynamic indexes. regorus
    /// keeps them inside the `not`, where an undefined one makes it hold.
    Not(Term, Vec<Term>),
    /// `x := term`: binds a fresh local; fails when the term is undefined.
    Assign(usize, Term),
    /// `some k, v in coll`: the rest of the body once per member.
    SomeIn {
        key: Option<usize>,
        value: usize,
        collection: Term,
    },
}

pub(super) enum Term {
    Const(Value),
    Input,
    Local(usize),
    Rule(usize),
    /// `x.r` through `import data.x`: regorus evaluates the whole package
    /// `x` (every rule of it, listed here) and then reads its rule `r`.
    Imported {
        package: Vec<usize>,
        rule: usize,
    },
    /// A call of a user-defined function (`Kind::Function`).
    Func(usize, Vec<Term>),
    /// `Program::paths[i]`, memoized per evaluation.
    Path(usize),
    /// `a.b`, `a[i]`: regorus' indexing (undefined when absent).
    Index(Box<Term>, Box<Term>),
    Call(Builtin, Vec<Term>),
    Array(Vec<Term>),
    Set(Vec<Term>),
    Object(Vec<(Term, Term)>),
    Compare(Cmp, Box<Term>, Box<Term>),
    /// `a % b`, as OPA computes it (`opa_builtins::numbers::rem`).
    Rem(Box<Term>, Box<Term>),
    /// `a + b`, `a - b`, `a * b`, `a / b`, as OPA computes them
    /// (`opa_builtins::arith`), with the expression and where it stands
    /// (`file:line:column: `a / b``) for a refusal.
    Arith(Arith, Box<Term>, Box<Term>, Box<str>),
    /// `v in coll`.
    In(Box<Term>, Box<Term>),
    /// `k in object.keys(x)`: whether object `x` has key `k`.
    KeyIn(Box<Term>, Box<Term>),
    /// `[v | …]`, `{v | …}`, `{k: v | …}` (whose value is `[k, v]`).
    Compr {
        kind: Collect,
        stmts: Vec<Stmt>,
        value: Box<Term>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Collect {
    Array,
    Set,
    Object,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A regorus builtin, with its guard's estimate when it is size-driving.
pub(super) struct Builtin {
    pub name: &'static str,
    pub fcn: BuiltinFcn,
    pub estimate: Option<Estimate>,
    /// OPA's answer where regorus' differs (`opa_builtins`), resolved at load.
    pub compat: Option<Compat>,
    /// Its native answer for the common cases, when it has one. Boxed: a
    /// compiled pattern is large, and every `Term` is as large as its
    /// largest variant (inline, it made the 10,000-tool catalog 15 MB
    /// larger).
    pub fast: Option<Box<Fast>>,
}

/// What evaluating a plan natively gave.
#[derive(Debug)]
pub enum Outcome {
    /// Each step's value (`Undefined` when undefined), in plan order.
    Values(Vec<Value>),
    /// A case regorus must decide; nothing of this attempt is used.
    Fallback,
    /// The time limit passed.
    TimedOut,
    /// OPA's answer is one regent cannot give (the message says why and
    /// how to write the policy portably): an error, never regorus' answer.
    Refused(String),
}

/// Why evaluation stopped early.
enum Stop {
    Fallback,
    TimedOut,
    Refused(String),
}

/// Slots kept on the stack: a body's locals, and the memo of a program
/// of up to `MEMO` rules and paths.
const SMALL: usize = 8;
const MEMO: usize = 16;

/// Loop iterations between two looks at the clock.
const CLOCK_EVERY: u32 = 256;

impl Program {
    /// The rule answering the step `path`, when it was lowered.
    pub fn entry(&self, path: &str) -> Option<usize> {
        self.entries
            .iter()
            .find(|(p, _)| p == path)
            .map(|&(_, i)| i)
    }

    /// Evaluates the rules `entries` for `input`, within `limits` (charged to
    /// the current [`Scope`]).
    pub fn eval(
        &self,
        entries: &[usize],
        input: &Value,
        limits: &Limits,
        scope: &Scope,
    ) -> Outcome {
        // The memo on the stack unless the program is large.
        let n = self.rules.len() + self.paths.len();
        let mut memo = SmallVec::<[Option<Value>; MEMO]>::from_elem(None, n);
        let mut ev = Eval {
            program: self,
            input,
            limits,
            scope,
            memo: &mut memo,
            ticks: 0,
        };
        let mut out = Vec::with_capacity(entries.len());
        for &rule in entries {
            match ev.rule(rule) {
                Ok(v) => out.push(v),
                Err(Stop::Fallback) => return Outcome::Fallback,
                Err(Stop::TimedOut) => return Outcome::TimedOut,
                Err(Stop::Refused(why)) => return Outcome::Refused(why),
            }
        }
        Outcome::Values(out)
    }
}

/// The value of `term`, which reads neither `input` nor a rule nor a local
/// bound outside it (a constant, a comprehension over the data documents):
/// computed once at load instead of per request. `None` when evaluating it
/// would fall back or time out; it is then left to each request, which
/// gives regorus the same chance to raise the error.
pub(super) fn fold(term: &Term, locals: usize, limits: &Limits) -> Option<Value> {
    let program = Program {
        rules: Vec::new(),
        entries: Vec::new(),
        paths: Vec::new(),
    };
    let scope = Scope::begin();
    let input = Value::Undefined;
    let mut ev = Eval {
        program: &program,
        input: &input,
        limits,
        scope: &scope,
        memo: &mut [],
        ticks: 0,
    };
    // A value only OPA gives (regorus would answer another) is left to
    // each request too, where the debug cross-check learns of it.
    let noted = opa_only_noted();
    clear_opa_only();
    let v = ev.term(term, &mut vec![Value::Undefined; locals]).ok();
    let opa = opa_only_noted();
    if noted {
        opa_only();
    } else {
        clear_opa_only();
    }
    v.filter(|_| !opa)
}

/// Whether `term` reads nothing a request supplies: no `input`, no rule,
/// no local below `bound` (those are bound outside it).
pub(super) fn is_static(term: &Term, bound: usize) -> bool {
    let all = |ts: &[Term]| ts.iter().all(|t| is_static(t, bound));
    match term {
        Term::Const(_) => true,
        Term::Input | Term::Rule(_) | Term::Path(_) | Term::Imported { .. } | Term::Func(..) => {
            false
        }
        Term::Local(i) => *i >= bound,
        Term::Index(a, b)
        | Term::Compare(_, a, b)
        | Term::Rem(a, b)
        | Term::Arith(_, a, b, _)
        | Term::In(a, b)
        | Term::KeyIn(a, b) => is_static(a, bound) && is_static(b, bound),
        Term::Call(_, args) => all(args),
        Term::Array(items) | Term::Set(items) => all(items),
        Term::Object(fields) => fields
            .iter()
            .all(|(k, v)| is_static(k, bound) && is_static(v, bound)),
        Term::Compr { stmts, value, .. } => {
            is_static(value, bound)
                && stmts.iter().all(|s| match s {
                    Stmt::Expr(t) | Stmt::Assign(_, t) => is_static(t, bound),
                    Stmt::Not(t, guards) => {
                        is_static(t, bound) && guards.iter().all(|g| is_static(g, bound))
                    }
                    Stmt::SomeIn { collection, .. } => is_static(collection, bound),
                })
        }
    }
}

struct Eval<'a> {
    program: &'a Program,
    input: &'a Value,
    limits: &'a Limits,
    scope: &'a Scope,
    /// Each rule's value once computed (regorus also evaluates a rule once
    /// per evaluation), then each path's (`Program::paths`).
    memo: &'a mut [Option<Value>],
    ticks: u32,
}

impl Eval<'_> {
    fn tick(&mut self) -> Result<(), Stop> {
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks.is_multiple_of(CLOCK_EVERY) && self.scope.elapsed() > self.limits.time {
            return Err(Stop::TimedOut);
        }
        Ok(())
    }

    fn rule(&mut self, i: usize) -> Result<Value, Stop> {
        if let Some(v) = &self.memo[i] {
            return Ok(v.clone());
        }
        let program = self.program;
        let rule = &program.rules[i];
        let v = match rule.kind {
            Kind::PartialSet => {
                let mut set = Value::new_set();
                for def in &rule.defs {
                    for body in &def.bodies {
                        self.body(body, &[], &mut |v| {
                            if !undefined(&v) {
                                set.as_set_mut().map_err(|_| Stop::Fallback)?.insert(v);
                            }
                            Ok(())
                        })?;
                    }
                }
                set
            }
            // Only called through `Eval::call`.
            Kind::Function(_) => return Err(Stop::Fallback),
            Kind::Complete => {
                let mut value = Value::Undefined;
                for def in &rule.defs {
                    for body in &def.bodies {
                        let mut held = false;
                        self.body(body, &[], &mut |v| {
                            if undefined(&v) {
                                return Ok(());
                            }
                            if held {
                                // One body holding twice (`some`): regorus
                                // decides whether that is a conflict.
                                return Err(Stop::Fallback);
                            }
                            held = true;
                            // Two definitions, two values: regorus'
                            // conflict error.
                            settle(&mut value, v)
                        })?;
                        // An `else` body counts only when the ones before failed.
                        if held {
                            break;
                        }
                    }
                }
                match (&value, &rule.default) {
                    (Value::Undefined, Some(d)) => d.clone(),
                    _ => value,
                }
            }
        };
        self.memo[i] = Some(v.clone());
        Ok(v)
    }

    /// Runs `body` with its first locals bound to `args` (a function's
    /// parameters), calling `emit` with its value (possibly undefined) for
    /// every way it holds.
    fn body(
        &mut self,
        body: &Body,
        args: &[Value],
        emit: &mut dyn FnMut(Value) -> Result<(), Stop>,
    ) -> Result<(), Stop> {
        // Locals on the stack unless there are many; most bodies have none.
        if body.locals == 0 {
            self.stmts(&body.stmts, &body.value, &mut [], emit)
        } else {
            let mut locals = SmallVec::<[Value; SMALL]>::from_elem(Value::Undefined, body.locals);
            locals[..args.len()].clone_from_slice(args);
            self.stmts(&body.stmts, &body.value, &mut locals, emit)
        }
    }

    /// A call of the function `i`, as regorus' `eval_call_impl`: every
    /// argument evaluated first (an error in any is an error), undefined
    /// when one is (the bodies are not run); each definition's value is
    /// that of the first of its `else` chain to hold; the definitions that
    /// give a value must all give the same one. Whatever is not plainly
    /// regorus' falls back: a body holding with an undefined value, one body
    /// giving two values, two definitions giving two values.
    fn call(&mut self, i: usize, args: &[Term], locals: &mut [Value]) -> Result<Value, Stop> {
        self.tick()?;
        let mut values = SmallVec::<[Value; 4]>::new();
        for a in args {
            values.push(self.term(a, locals)?);
        }
        if values.iter().any(undefined) {
            return Ok(Value::Undefined);
        }
        let program = self.program;
        let rule = &program.rules[i];
        if rule.kind != Kind::Function(values.len()) {
            return Err(Stop::Fallback);
        }
        let mut result = Value::Undefined;
        for def in &rule.defs {
            let mut out = Value::Undefined;
            for body in &def.bodies {
                let mut held = false;
                self.body(body, &values, &mut |v| {
                    if undefined(&v) {
                        // regorus: the body holds, the definition is
                        // undefined and its `else` is not tried.
                        return Err(Stop::Fallback);
                    }
                    held = true;
                    // Two values: "function produced multiple outputs".
                    settle(&mut out, v)
                })?;
                if held {
                    break;
                }
            }
            if undefined(&out) {
                continue;
            }
            // Two definitions, two values: "functions must not produce
            // multiple outputs for same inputs".
            settle(&mut result, out)?;
        }
        Ok(result)
    }

    fn stmts(
        &mut self,
        mut stmts: &[Stmt],
        value: &Term,
        locals: &mut [Value],
        emit: &mut dyn FnMut(Value) -> Result<(), Stop>,
    ) -> Result<(), Stop> {
        // Statements that hold at most once go on in this loop; only `some`
        // recurses, once per member.
        let (key, slot, collection, rest) = loop {
            let Some((first, rest)) = stmts.split_first() else {
                let v = self.term(value, locals)?;
                emit(v)?;
                return Ok(());
            };
            match first {
                Stmt::Expr(t) => {
                    // An `in` that is undefined (OPA) or false (regorus)
                    // fails the body alike: nothing to note.
                    let noted = opa_only_noted();
                    if !truthy(&self.term(t, locals)?) {
                        if matches!(t, Term::In(..) | Term::KeyIn(..)) && !noted {
                            clear_opa_only();
                        }
                        return Ok(());
                    }
                }
                Stmt::Not(t, guards) => {
                    for g in guards {
                        if undefined(&self.term(g, locals)?) {
                            // OPA: the body fails; regorus: the `not` holds.
                            opa_only();
                            return Ok(());
                        }
                    }
                    if truthy(&self.term(t, locals)?) {
                        return Ok(());
                    }
                }
                Stmt::Assign(slot, t) => {
                    let v = self.term(t, locals)?;
                    if undefined(&v) {
                        return Ok(());
                    }
                    locals[*slot] = v;
                }
                Stmt::SomeIn {
                    key,
                    value: slot,
                    collection,
                } => break (key, slot, collection, rest),
            }
            stmts = rest;
        };
        let coll = self.term(collection, locals)?;
        match &coll {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.tick()?;
                    if let Some(k) = key {
                        locals[*k] = Value::from(i as u64);
                    }
                    locals[*slot] = item.clone();
                    self.stmts(rest, value, locals, emit)?;
                }
            }
            Value::Set(items) => {
                for item in items.iter() {
                    self.tick()?;
                    if let Some(k) = key {
                        locals[*k] = item.clone();
                    }
                    locals[*slot] = item.clone();
                    self.stmts(rest, value, locals, emit)?;
                }
            }
            Value::Object(fields) => {
                for (k, v) in fields.iter() {
                    self.tick()?;
                    if let Some(kslot) = key {
                        locals[*kslot] = k.clone();
                    }
                    locals[*slot] = v.clone();
                    self.stmts(rest, value, locals, emit)?;
                }
            }
            Value::Undefined => {}
            // Iterating a scalar: OPA iterates nothing; regorus fails.
            _ => opa_only(),
        }
        Ok(())
    }

    /// The value of `t`. Leaves and memoized values are answered here,
    /// inlined into the caller; the rest in [`Eval::compound`].
    #[inline(always)]
    fn term(&mut self, t: &Term, locals: &mut [Value]) -> Result<Value, Stop> {
        match t {
            Term::Const(v) => Ok(v.clone()),
            Term::Input => Ok(self.input.clone()),
            Term::Local(i) => Ok(locals[*i].clone()),
            Term::Rule(i) | Term::Path(i) => {
                let slot = match t {
                    Term::Path(_) => self.program.rules.len() + i,
                    _ => *i,
                };
                match &self.memo[slot] {
                    Some(v) => Ok(v.clone()),
                    None => self.compound(t, locals),
                }
            }
            _ => self.compound(t, locals),
        }
    }

    /// The value of `t` where a borrow does: a constant is not cloned.
    #[inline(always)]
    fn operand<'t>(&mut self, t: &'t Term, locals: &mut [Value]) -> Result<Cow<'t, Value>, Stop> {
        match t {
            Term::Const(v) => Ok(Cow::Borrowed(v)),
            _ => self.term(t, locals).map(Cow::Owned),
        }
    }

    #[inline(never)]
    fn compound(&mut self, t: &Term, locals: &mut [Value]) -> Result<Value, Stop> {
        Ok(match t {
            Term::Const(v) => v.clone(),
            Term::Input => self.input.clone(),
            Term::Local(i) => locals[*i].clone(),
            Term::Rule(i) => self.rule(*i)?,
            Term::Imported { package, rule } => {
                for &r in package {
                    self.rule(r)?;
                }
                self.rule(*rule)?
            }
            Term::Func(i, args) => self.call(*i, args, locals)?,
            Term::Path(i) => {
                let program = self.program;
                let path = &program.paths[*i];
                let v = match &path.base {
                    Term::Input => index(self.input, &path.key)?,
                    base => index(&self.term(base, locals)?, &path.key)?,
                };
                self.memo[program.rules.len() + i] = Some(v.clone());
                v
            }
            Term::Index(base, key) => {
                let base = self.operand(base, locals)?;
                let key = self.operand(key, locals)?;
                index(&base, &key)?
            }
            Term::Call(b, args) => {
                // Every argument is evaluated before any is found undefined,
                // as regorus does: an error in a later argument is still an
                // error (a fallback here), never an undefined call. At most
                // four arguments (the lowering's limit), kept on the stack.
                let mut values = SmallVec::<[Value; 4]>::new();
                for a in args {
                    values.push(self.term(a, locals)?);
                }
                if values.iter().any(undefined) {
                    return Ok(Value::Undefined);
                }
                let fast = |args: &[Value]| b.fast.as_ref().and_then(|f| f.answer(args));
                match budget::call(
                    b.name,
                    b.fcn,
                    b.estimate,
                    b.compat,
                    &values,
                    self.limits,
                    fast,
                ) {
                    Ok(v) => v,
                    // regorus raises it again, with the call's location.
                    Err(_) => return Err(Stop::Fallback),
                }
            }
            Term::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    let v = self.term(item, locals)?;
                    if undefined(&v) {
                        return Ok(Value::Undefined);
                    }
                    out.push(v);
                }
                Value::from(out)
            }
            Term::Set(items) => {
                let mut set = Value::new_set();
                for item in items {
                    let v = self.term(item, locals)?;
                    if undefined(&v) {
                        return Ok(Value::Undefined);
                    }
                    set.as_set_mut().map_err(|_| Stop::Fallback)?.insert(v);
                }
                set
            }
            Term::Object(fields) => {
                let mut obj = Value::new_object();
                for (k, v) in fields {
                    let k = self.term(k, locals)?;
                    let v = self.term(v, locals)?;
                    if undefined(&k) || undefined(&v) {
                        return Ok(Value::Undefined);
                    }
                    obj.as_object_mut()
                        .map_err(|_| Stop::Fallback)?
                        .insert(k, v);
                }
                obj
            }
            Term::Rem(a, b) => {
                let a = self.operand(a, locals)?;
                let b = self.operand(b, locals)?;
                let (a, b) = (a.as_ref(), b.as_ref());
                if undefined(a) || undefined(b) {
                    return Ok(Value::Undefined);
                }
                match crate::opa_builtins::numbers::rem(a, b) {
                    Some(Ok((v, regorus_agrees))) => {
                        if !regorus_agrees {
                            opa_only();
                        }
                        v
                    }
                    // An error in both engines (OPA's operand errors,
                    // modulo by zero): regorus raises its own.
                    _ => return Err(Stop::Fallback),
                }
            }
            Term::Arith(op, a, b, what) => {
                let a = self.operand(a, locals)?;
                let b = self.operand(b, locals)?;
                let (a, b) = (a.as_ref(), b.as_ref());
                if undefined(a) || undefined(b) {
                    return Ok(Value::Undefined);
                }
                if let (Arith::Sub, Value::Set(x), Value::Set(y)) = (op, a, b) {
                    // Set difference, the same in OPA and regorus.
                    let mut out = Value::new_set();
                    let set = out.as_set_mut().map_err(|_| Stop::Fallback)?;
                    for v in x.iter().filter(|v| !y.contains(v)) {
                        set.insert(v.clone());
                    }
                    return Ok(out);
                }
                match crate::opa_builtins::arith::eval(*op, a, b) {
                    Ok((v, regorus_agrees)) => {
                        if !regorus_agrees {
                            opa_only();
                        }
                        v
                    }
                    // A set difference, a type error, division by zero:
                    // regorus' answer or error is OPA's.
                    Err(Declined::Regorus) => return Err(Stop::Fallback),
                    Err(Declined::Unrepresentable(text)) => {
                        return Err(Stop::Refused(crate::opa_builtins::arith::refusal(
                            what, &text,
                        )));
                    }
                    Err(Declined::TextUnknown(text)) => {
                        return Err(Stop::Refused(crate::opa_builtins::arith::unknown_text(
                            what, &text,
                        )));
                    }
                }
            }
            Term::Compare(op, a, b) => {
                let a = self.operand(a, locals)?;
                let b = self.operand(b, locals)?;
                let (a, b) = (a.as_ref(), b.as_ref());
                if undefined(a) || undefined(b) {
                    return Ok(Value::Undefined);
                }
                let order = || {
                    // regorus orders a set before an object, OPA after: when
                    // either side holds a set, OPA's order decides.
                    let theirs = a.cmp(b);
                    if !has_set(a) && !has_set(b) {
                        return theirs;
                    }
                    let ours = opa_cmp(a, b);
                    if ours != theirs {
                        opa_only();
                    }
                    ours
                };
                Value::Bool(match op {
                    Cmp::Eq => a == b,
                    Cmp::Ne => a != b,
                    Cmp::Lt => order().is_lt(),
                    Cmp::Le => order().is_le(),
                    Cmp::Gt => order().is_gt(),
                    Cmp::Ge => order().is_ge(),
                })
            }
            Term::Compr { kind, stmts, value } => {
                let mut out = match kind {
                    Collect::Array => Value::new_array(),
                    Collect::Set => Value::new_set(),
                    Collect::Object => Value::new_object(),
                };
                self.stmts(stmts, value, locals, &mut |v| {
                    if undefined(&v) {
                        return Ok(());
                    }
                    match kind {
                        Collect::Array => out.as_array_mut().map_err(|_| Stop::Fallback)?.push(v),
                        Collect::Set => {
                            out.as_set_mut().map_err(|_| Stop::Fallback)?.insert(v);
                        }
                        Collect::Object => {
                            let (Value::Array(kv), Ok(obj)) = (&v, out.as_object_mut()) else {
                                return Err(Stop::Fallback);
                            };
                            let (Some(k), Some(x)) = (kv.get(0), kv.get(1)) else {
                                return Err(Stop::Fallback);
                            };
                            // A key given two values: regorus' error.
                            if obj.get(k).is_some_and(|old| old != x) {
                                return Err(Stop::Fallback);
                            }
                            obj.insert(k.clone(), x.clone());
                        }
                    }
                    Ok(())
                })?;
                out
            }
            Term::In(v, coll) => {
                // Anything that is not a collection holds nothing (OPA and
                // regorus). An undefined operand: undefined in OPA, false in
                // regorus.
                let v = self.operand(v, locals)?;
                let coll = self.operand(coll, locals)?;
                let v = v.as_ref();
                if undefined(v) || undefined(coll.as_ref()) {
                    opa_only();
                    return Ok(Value::Undefined);
                }
                Value::Bool(match coll.as_ref() {
                    Value::Array(items) => items.contains(v),
                    Value::Set(items) => items.contains(v),
                    Value::Object(fields) => fields.values().any(|x| x == v),
                    _ => false,
                })
            }
            Term::KeyIn(k, obj) => {
                // As `k in object.keys(obj)`: undefined when `obj` or `k` is
                // (OPA; regorus says false), and regorus' type error when
                // `obj` is not an object.
                let k = self.operand(k, locals)?;
                let obj = self.operand(obj, locals)?;
                match obj.as_ref() {
                    Value::Undefined => {
                        opa_only();
                        Value::Undefined
                    }
                    Value::Object(_) if undefined(k.as_ref()) => {
                        opa_only();
                        Value::Undefined
                    }
                    Value::Object(fields) => Value::Bool(fields.contains_key(k.as_ref())),
                    _ => return Err(Stop::Fallback),
                }
            }
        })
    }
}

#[cfg(debug_assertions)]
thread_local! {
    /// Whether this thread's last native evaluation took a path where OPA
    /// and regorus answer differently (and native answered as OPA): the
    /// debug cross-check with regorus skips that evaluation.
    static OPA_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Notes that the evaluation answered as OPA where regorus would not.
#[inline]
fn opa_only() {
    #[cfg(debug_assertions)]
    OPA_ONLY.with(|c| c.set(true));
}

/// Whether a note of [`opa_only`] is pending.
#[inline]
fn opa_only_noted() -> bool {
    #[cfg(debug_assertions)]
    return OPA_ONLY.with(std::cell::Cell::get);
    #[cfg(not(debug_assertions))]
    false
}

#[inline]
fn clear_opa_only() {
    #[cfg(debug_assertions)]
    OPA_ONLY.with(|c| c.set(false));
}

/// Whether the evaluations since the last call answered as OPA where
/// regorus would not; clears the note.
#[cfg(debug_assertions)]
pub(super) fn took_opa_only_path() -> bool {
    OPA_ONLY.with(|c| c.replace(false))
}

/// Whether `v` holds a set anywhere.
fn has_set(v: &Value) -> bool {
    match v {
        Value::Set(_) => true,
        Value::Array(items) => items.iter().any(has_set),
        Value::Object(fields) => fields.iter().any(|(k, v)| has_set(k) || has_set(v)),
        _ => false,
    }
}

/// OPA's order of values: null, booleans, numbers, strings, arrays,
/// objects, sets (regorus puts sets before objects); within a kind as
/// regorus, objects and sets compared by their sorted members.
fn opa_cmp(a: &Value, b: &Value) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Number(_) => 2,
            Value::String(_) => 3,
            Value::Array(_) => 4,
            Value::Object(_) => 5,
            Value::Set(_) => 6,
            Value::Undefined => 7,
        }
    }
    fn sorted<'v>(it: impl Iterator<Item = &'v Value>) -> Vec<&'v Value> {
        let mut v: Vec<&Value> = it.collect();
        v.sort_by(|x, y| opa_cmp(x, y));
        v
    }
    fn seq(a: &[&Value], b: &[&Value]) -> Ordering {
        for (x, y) in a.iter().zip(b) {
            let o = opa_cmp(x, y);
            if o != Ordering::Equal {
                return o;
            }
        }
        a.len().cmp(&b.len())
    }
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            seq(&x.iter().collect::<Vec<_>>(), &y.iter().collect::<Vec<_>>())
        }
        (Value::Set(x), Value::Set(y)) => seq(&sorted(x.iter()), &sorted(y.iter())),
        (Value::Object(x), Value::Object(y)) => {
            let (kx, ky) = (sorted(x.keys()), sorted(y.keys()));
            for (&k1, &k2) in kx.iter().zip(&ky) {
                let o = opa_cmp(k1, k2).then_with(|| {
                    opa_cmp(
                        x.get(k1).unwrap_or(&Value::Undefined),
                        y.get(k2).unwrap_or(&Value::Undefined),
                    )
                });
                if o != Ordering::Equal {
                    return o;
                }
            }
            kx.len().cmp(&ky.len())
        }
        _ if rank(a) != rank(b) => rank(a).cmp(&rank(b)),
        _ => a.cmp(b),
    }
}

/// `base[key]` as regorus indexes: undefined when either is, or the key is
/// absent.
fn index(base: &Value, key: &Value) -> Result<Value, Stop> {
    match (base, key) {
        (Value::Undefined, _) | (_, Value::Undefined) => Ok(Value::Undefined),
        (Value::Object(_) | Value::Array(_) | Value::Set(_), _) => Ok(base[key].clone()),
        // Indexing a scalar: whatever regorus says.
        _ => Err(Stop::Fallback),
    }
}

/// Gives the undefined `slot` the value `v`, or checks that it already has
/// it: a rule or function that gives two values is regorus' error to raise.
fn settle(slot: &mut Value, v: Value) -> Result<(), Stop> {
    if undefined(slot) {
        *slot = v;
        Ok(())
    } else if *slot == v {
        Ok(())
    } else {
        Err(Stop::Fallback)
    }
}

/// Whether `v` is undefined: a look at the tag, where `==` would call
/// regorus' comparison.
fn undefined(v: &Value) -> bool {
    matches!(v, Value::Undefined)
}

/// Whether a statement's value lets the body go on: anything but `false` and
/// undefined (regorus, like OPA).
fn truthy(v: &Value) -> bool {
    !matches!(v, Value::Bool(false) | Value::Undefined)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::{Value as Json, json};

    use crate::catalog::budget::Limits;
    use crate::catalog::differential;
    use crate::catalog::policy::{self, EnginePool, Step, compared};

    /// A pool for package `p` holding `rego`, planning `rules`.
    fn pool(rego: &str, rules: &[&str]) -> (EnginePool, Vec<Step>) {
        let paths: Vec<String> = rules.iter().map(|r| format!("data.p.{r}")).collect();
        let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
        pool_of(
            &[("p.rego", &format!("package p\nimport rego.v1\n{rego}"))],
            &paths,
        )
    }

    /// Evaluates on the pool; in a debug build (tests) the pool checks the
    /// native answer against regorus' and panics when they differ.
    fn eval(pool: &EnginePool, steps: &[Step], args: Json) -> Result<Vec<Option<Json>>, String> {
        pool.eval(steps, policy::input("t", &args))
            .map_err(|e| e.message)
    }

    /// A pool holding `modules` (file name, text), planning `paths`.
    fn pool_of(modules: &[(&str, &str)], paths: &[&str]) -> (EnginePool, Vec<Step>) {
        let limits = Limits::default();
        let mut e = policy::new_engine(limits);
        for (name, text) in modules {
            policy::add_policy(&mut e, name, text).unwrap();
        }
        let steps: Vec<Step> = paths
            .iter()
            .map(|p| Step {
                path: p.to_string(),
                by_query: false,
            })
            .collect();
        (EnginePool::new(e, limits).with_native(&steps), steps)
    }

    /// User-defined functions: several definitions, `else`, undefined
    /// arguments, calls from a `some` loop, a body reading `input`; each
    /// answer is compared with regorus' (debug builds).
    #[test]
    fn functions_answer_as_regorus() {
        let rego = r#"
kind(x) := "num" if is_number(x)
kind(x) := "str" if is_string(x)
kind(x) := "big" if { is_number(x); x > 100 }
grade(x) := "a" if x > 10
else := "b" if x > 5
else := "c"
safe(p) if { not startswith(p, "/"); not climbs(p) }
climbs(p) if {
    some s in split(p, "/")
    s == ".."
}
mode(_) := input.arguments.mode
both(a, b) := [a, b] if a != b
first(l) := v if { some v in l; v == l[0] }
k := kind(input.arguments.v)
g := grade(input.arguments.n)
sa := safe(input.arguments.path)
unsafe if not safe(input.arguments.path)
bad contains p if {
    some p in input.arguments.paths
    not safe(p)
}
m := mode(input.arguments.path)
bo := both(input.arguments.path, input.arguments.mode)
f := first(input.arguments.paths)
"#;
        let rules = ["k", "g", "sa", "unsafe", "bad", "m", "bo", "f"];
        let (pool, steps) = pool(rego, &rules);
        assert!(pool.is_native(&steps));
        for args in [
            json!({}),
            json!({"v": 5, "n": 11, "path": "a/b", "mode": "r"}),
            json!({"v": "x", "n": 6, "path": "/a", "paths": ["a", "/b", "c/../d"]}),
            json!({"v": 500, "n": 1, "path": "../x", "paths": ["a", "a"], "mode": "../x"}),
            json!({"v": true, "n": "z", "path": 3, "paths": "a"}),
            json!({"v": null, "path": "a/..", "paths": [1, "x/.."], "mode": 2}),
            json!({"n": [1], "paths": {"a": "..", "b": "ok"}}),
        ] {
            // Each call compares with regorus itself (debug builds).
            let _ = eval(&pool, &steps, args);
        }
        let before = compared();
        let out = eval(
            &pool,
            &steps,
            json!({"v": 7, "n": 7, "path": "a/../b", "mode": "w", "paths": ["x", "/y", "z/.."]}),
        )
        .unwrap();
        assert_eq!(compared(), before + 1, "answered natively");
        let want = [
            Some(json!("num")),
            Some(json!("b")),
            None,
            Some(json!(true)),
            Some(json!(["/y", "z/.."])),
            Some(json!("w")),
            Some(json!(["a/../b", "w"])),
            Some(json!("x")),
        ];
        assert_eq!(out, want);
        // An undefined argument: the call is undefined, whatever the body
        // (`mode(_)` does not read it).
        let out = eval(&pool, &steps, json!({"mode": "w"})).unwrap();
        assert_eq!(out[0], None);
        assert_eq!(out[5], None);
        let out = eval(&pool, &steps, json!({"mode": "w", "path": "a"})).unwrap();
        assert_eq!(out[5], Some(json!("w")));
    }

    /// More shapes of functions: an implicit `true` head with a valued
    /// `else`, `false` as a value, calls in comprehensions and in `else`
    /// bodies, a body holding twice with one value.
    #[test]
    fn function_shapes_answer_as_regorus() {
        let rego = r#"
size(x) if count(x) > 2 else := "small"
no(x) := false if x == 1
dup(l) := true if { some v in l; v == "a" }
pick(x) := 1 if x == "one" else := 2 if x == "two" else := x
sizes := [size(x) | some x in input.arguments.l]
nos if not no(input.arguments.n)
d := dup(input.arguments.l)
p := {k: pick(v) | some k, v in input.arguments.o}
"#;
        let rules = ["sizes", "nos", "d", "p"];
        let (pool, steps) = pool(rego, &rules);
        assert!(pool.is_native(&steps));
        for args in [
            json!({}),
            json!({"l": ["abc", "a", "a", [1, 2, 3]], "n": 1, "o": {"x": "one", "y": "two", "z": 3}}),
            json!({"l": "abc", "n": 2, "o": [1, "two"]}),
            json!({"l": [1, {"a": 1, "b": 2, "c": 3}], "n": "1", "o": {"a": null}}),
        ] {
            let _ = eval(&pool, &steps, args);
        }
        let args = json!({"l": ["abc", "a", "a"], "n": 1, "o": {"x": "one", "y": "two", "z": 3}});
        let before = compared();
        let out = eval(&pool, &steps, args).unwrap();
        assert_eq!(compared(), before + 1, "answered natively");
        assert_eq!(
            out,
            [
                Some(json!([true, "small", "small"])),
                Some(json!(true)),
                Some(json!(true)),
                Some(json!({"x": 1, "y": 2, "z": 3})),
            ]
        );
    }

    /// A function defined in two modules of one package is left to regorus
    /// (which runs all of its definitions with one module's loop plans).
    #[test]
    fn a_function_across_modules_stays_on_regorus() {
        let (pool, steps) = pool_of(
            &[
                ("a.rego", "package p\nimport rego.v1\nf(x) := 1 if x > 1"),
                (
                    "b.rego",
                    "package p\nimport rego.v1\nf(x) := 1 if x < 0\ny := f(input.arguments.n)",
                ),
            ],
            &["data.p.y"],
        );
        assert!(!pool.is_native(&steps));
    }

    /// Functions and rules of another package, through `import data.x`
    /// and `import data.x.y as z`.
    #[test]
    fn imported_packages_answer_as_regorus() {
        let lib = r#"package lib.paths
import rego.v1
dir := "/srv"
inside(p) if p == dir
inside(p) if {
    startswith(p, concat("", [dir, "/"]))
    not climbs(p)
}
climbs(p) if {
    some s in split(p, "/")
    s == ".."
}
outside(p) := sprintf("%q is outside %s", [p, dir])
"#;
        let team = r#"package team
import rego.v1
oncall if "oncall" in input.caller.claims.groups
tenant := input.caller.claims.tenant
"#;
        let tool = r#"package tools.t
import rego.v1
import data.lib.paths as root
import data.team
deny contains root.outside(input.arguments.path) if not root.inside(input.arguments.path)
deny contains root.outside(p) if {
    some p in input.arguments.paths
    not root.inside(p)
}
deny contains "not on call" if not team.oncall
who := team.tenant
"#;
        let (pool, steps) = pool_of(
            &[("lib.rego", lib), ("team.rego", team), ("t.rego", tool)],
            &["data.tools.t.deny", "data.tools.t.who"],
        );
        assert!(pool.is_native(&steps));
        for args in [
            json!({}),
            json!({"path": "/srv/a"}),
            json!({"path": "/srv/../etc", "paths": ["/srv", "/srvx", 3]}),
            json!({"path": 7, "paths": "x"}),
        ] {
            let _ = eval(&pool, &steps, args);
        }
        let before = compared();
        let out = eval(
            &pool,
            &steps,
            json!({"path": "/srv/a", "paths": ["/srv/b", "/etc"]}),
        )
        .unwrap();
        assert_eq!(compared(), before + 1, "answered natively");
        assert_eq!(
            out[0],
            Some(json!(["\"/etc\" is outside /srv", "not on call"]))
        );
        assert_eq!(out[1], None);
    }

    /// Conflicting outputs of a function: native falls back and regorus
    /// gives its error, never an answer.
    #[test]
    fn conflicting_function_outputs_are_regorus_errors() {
        for (rego, args) in [
            // Two definitions, two values.
            (
                "f(x) := 1 if x > 0\nf(x) := 2 if x > 1\ny := f(input.arguments.n)",
                json!({"n": 2}),
            ),
            // One body, two values.
            (
                "f(l) := v if { some v in l }\ny := f(input.arguments.l)",
                json!({"l": [1, 2]}),
            ),
            // The `else` of the second definition disagrees.
            (
                "f(x) := 1 if x > 0\nf(x) := 3 if x < 0 else := 2\ny := f(input.arguments.n)",
                json!({"n": 5}),
            ),
            // A builtin error in a function's body.
            (
                "f(x) := startswith(x, \"/\")\ny := f(input.arguments.n)",
                json!({"n": 5}),
            ),
        ] {
            let (pool, steps) = pool(rego, &["y"]);
            assert!(pool.is_native(&steps), "{rego}");
            assert!(eval(&pool, &steps, args).is_err(), "{rego}");
        }
        // The same definitions agree elsewhere.
        let (pool, steps) = pool(
            "f(x) := 1 if x > 0\nf(x) := 2 if x > 1\ny := f(input.arguments.n)",
            &["y"],
        );
        assert_eq!(
            eval(&pool, &steps, json!({"n": 1})).unwrap(),
            [Some(json!(1))]
        );
    }

    /// Imports outside the subset keep the plan on regorus.
    #[test]
    fn imports_outside_the_subset_stay_on_regorus() {
        let lib = "package lib\nimport rego.v1\nf(x) := x\nr := 1\nreverse(a, b) := [b, a]";
        let sub = "package lib.sub\nimport rego.v1\ng(x) := x";
        for (modules, rego) in [
            // A rule, not a package.
            (vec![lib], "import data.lib.r\nx := r"),
            // A package with one under it.
            (vec![lib, sub], "import data.lib\nx := lib.f(1)"),
            // Nothing there.
            (vec![lib], "import data.nope\nx := nope.f(1)"),
            // `input`.
            (vec![lib], "import input.arguments as a\nx := a.n"),
            // The alias is also a rule of the package.
            (vec![lib], "import data.lib\nlib := 2\nx := lib.f(1)"),
            // The whole package.
            (vec![lib], "import data.lib\nx := lib"),
            // A function of the alias that does not exist.
            (vec![lib], "import data.lib\nx := lib.g(1)"),
            // An alias call spelled as a builtin (`strings.reverse`, one
            // parameter), which regorus reads as a call with a result
            // argument.
            (
                vec![lib],
                "import data.lib as strings\nx := strings.reverse(1, 2)",
            ),
        ] {
            let mut all: Vec<(String, String)> = modules
                .iter()
                .enumerate()
                .map(|(i, m)| (format!("m{i}.rego"), m.to_string()))
                .collect();
            all.push((
                "t.rego".into(),
                format!("package t\nimport rego.v1\n{rego}"),
            ));
            let all: Vec<(&str, &str)> =
                all.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
            let (pool, steps) = pool_of(&all, &["data.t.x"]);
            assert!(!pool.is_native(&steps), "{rego}");
        }
    }

    /// The constructs where regorus answers differently from OPA (issue
    /// 27): native answers as OPA, checked against OPA's own engine.
    #[test]
    fn constructs_answer_as_opa() {
        use crate::catalog::opa::{self, Answer, Oracle};
        let Some(mut oracle) = Oracle::start() else {
            eprintln!("{}", opa::SKIPPED);
            return;
        };
        let rego = r#"
f(x) if is_null(x)
n1 if not is_null(input.arguments.a)
n2 if not f(input.arguments.a)
n3 if not startswith(input.arguments.a, "x")
n4 if not count(input.arguments.a) > 2
n5 if not upper(input.arguments.a)
n6 if not is_null(input.arguments.a) == true
n7 if not [input.arguments.a] == [1]
n8 if not {"k": input.arguments.a}
n9 if not startswith(lower(input.arguments.a), "x")
t1 if not input.arguments.a == 1
t2 if not input.arguments.a
t3 if not input.arguments.a.b == 1
t4 if not input.arguments.a in [1]
t5 if not input.arguments.a != 1
s1 := [x | some x in input.arguments.a]
s2 if { some x in input.arguments.a; x == 1 }
i1 := 1 in input.arguments.a
i2 := "a" in input.arguments.a
o1 if { some x in input.arguments.a; {} < x }
o2 := [x | some x in input.arguments.a; x < set()]
t6 if not input.arguments.a == input.arguments.b
t7 if not [x | x := input.arguments.a] == [1]
n10 if not {input.arguments.a} == {1}
n11 if not "k" in object.keys(input.arguments.a)
i3 := "b" in object.keys(input.arguments.a)
"#;
        let rules = [
            "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "t1", "t2", "t3", "t4", "t5",
            "s1", "s2", "i1", "i2", "o1", "o2", "t6", "t7", "n10", "n11", "i3",
        ];
        // One plan per rule: an error in one fails only its own.
        let pools: Vec<_> = rules.iter().map(|r| pool(rego, &[*r])).collect();
        oracle.load_engine(&pools[0].0.engine().unwrap()).unwrap();
        for args in [
            json!({}),
            json!({"a": null}),
            json!({"a": "xyz"}),
            json!({"a": 7}),
            json!({"a": [1, "x", null]}),
            json!({"a": {"b": 1}}),
        ] {
            let input = json!({"arguments": args});
            for (r, (pool, steps)) in rules.iter().zip(&pools) {
                assert!(pool.is_native(steps), "{r}");
                let want = oracle.eval(&[&format!("data.p.{r}")], &input).remove(0);
                let got = eval(pool, steps, args.clone());
                match (&want, &got) {
                    (Answer::Value(v), Ok(g)) => {
                        assert_eq!(g[0].as_ref(), Some(v), "{r} on {args}")
                    }
                    (Answer::Undefined, Ok(g)) => assert_eq!(g[0], None, "{r} on {args}"),
                    (Answer::Error(_), Err(_)) => {}
                    _ => panic!("{r} on {args}: OPA {want:?}, regent {got:?}"),
                }
            }
        }
    }

    /// A tool whose rules hold a construct regorus answers differently
    /// from OPA: where native hands the request to regorus, regorus' answer
    /// is refused (fail closed); its error still comes back.
    #[test]
    fn a_flagged_plan_never_returns_regorus_answer() {
        let rego = "x := v if { some v in input.arguments.l; v == 1 }\ny := startswith(input.arguments.p, \"/\")";
        let (pool, steps) = pool(rego, &["x", "y"]);
        assert!(pool.is_native(&steps));
        // Unflagged: the body holding twice falls back, regorus answers.
        let args = json!({"l": [1, 1], "p": "/a"});
        assert_eq!(
            eval(&pool, &steps, args.clone()).unwrap(),
            [Some(json!(1)), Some(json!(true))]
        );
        let pool = pool.with_flagged(Some("p.rego:2:1: something".into()));
        let err = eval(&pool, &steps, args).unwrap_err();
        assert!(
            err.starts_with("regent cannot evaluate this input as OPA does: p.rego:2:1"),
            "{err}"
        );
        // regorus' own error is still its error.
        let err = eval(&pool, &steps, json!({"l": [1, 1], "p": 3})).unwrap_err();
        assert!(err.contains("startswith"), "{err}");
        // What native decides is answered.
        assert_eq!(
            eval(&pool, &steps, json!({"l": [1], "p": "a"})).unwrap(),
            [Some(json!(1)), Some(json!(false))]
        );
    }

    #[test]
    fn the_shipped_examples_run_natively() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        for (example, tool) in [
            ("manage_files", "manage_files"),
            ("github_api", "github_api"),
            ("filesystem", "read_multiple_files"),
            ("filesystem", "move_file"),
            ("git_server", "git_add"),
            ("team_ops", "deploy"),
        ] {
            let catalog = differential::load(&root.join(example)).expect("the example builds");
            let Some(t) = catalog.tool(tool) else {
                let names: Vec<_> = catalog.tools().iter().map(|t| t.name.clone()).collect();
                panic!("no tool {tool} in {example}: {names:?}");
            };
            assert!(t.is_native(), "{example}/{tool} does not run natively");
        }
    }

    #[test]
    fn answers_equal_regorus_on_the_subset() {
        let rego = r#"
path := input.arguments.path
default level := "low"
level := "high" if startswith(path, "/")
else := "mid" if contains(path, "..")
deny contains sprintf("bad segment %q", [s]) if {
    some s in split(path, "/")
    s in {"..", "~"}
}
deny contains "no action" if not input.arguments.action
confirm := sprintf("%s %s?", [input.arguments.action, path]) if input.arguments.action != "read"
keys := object.keys(input.arguments)
n := count(keys)
flags contains k if {
    some k, v in input.arguments
    v == true
}
args := input.arguments
deep := args.nested.k if input.arguments.nested.k != input["arguments"].path
same if input.arguments.nested == args["nested"]
"#;
        let rules = ["level", "deny", "confirm", "n", "flags", "deep", "same"];
        let (pool, steps) = pool(rego, &rules);
        assert!(pool.is_native(&steps));
        for args in [
            json!({"path": "a/b", "action": "read"}),
            json!({"path": "/etc/../x", "action": "delete", "force": true}),
            json!({"path": "~/x"}),
            json!({"path": "a", "action": "read", "x": true, "y": false}),
            json!({}),
            json!({"path": 7, "action": "read"}),
            json!({"path": "a", "nested": {"k": "b"}}),
            json!({"path": "a", "nested": {"k": "a"}}),
            json!({"path": "a", "nested": "k"}),
            json!({"path": "a", "nested": [1]}),
        ] {
            // Each call compares with regorus itself (debug builds).
            let _ = eval(&pool, &steps, args);
        }
        let out = eval(&pool, &steps, json!({"path": "../~", "action": "delete"})).unwrap();
        assert_eq!(out[0], Some(json!("mid")));
        assert_eq!(
            out[1],
            Some(json!(["bad segment \"..\"", "bad segment \"~\""]))
        );
        assert_eq!(out[2], Some(json!("delete ../~?")));
    }

    /// A rule that is one constant is inlined where it is read, so a
    /// pattern, format or prefix held in a rule takes the same paths as a
    /// literal one; conditional and defaulted rules stay rules.
    #[test]
    fn constant_rules_answer_as_regorus() {
        let rego = r#"
pattern := `^[a-z/]+$`
format := "%s at %q"
root := "/srv"
maybe := "m" if input.arguments.flag
default fallback := "d"
fallback := "f" if input.arguments.flag
ok if regex.match(pattern, input.arguments.path)
msg := sprintf(format, [maybe, input.arguments.path])
under if startswith(input.arguments.path, concat("", [root, "/"]))
pair := [maybe, fallback]
"#;
        let rules = ["ok", "msg", "under", "pair"];
        let (pool, steps) = pool(rego, &rules);
        assert!(pool.is_native(&steps));
        let cases = [
            (
                json!({"path": "/srv/a", "flag": true}),
                json!([true, "m at \"/srv/a\"", true, ["m", "f"]]),
            ),
            (json!({"path": "/etc/A"}), json!([null, null, null, null])),
        ];
        for (args, want) in cases {
            let got = eval(&pool, &steps, args.clone())
                .map(|v| Json::Array(v.into_iter().map(|x| x.unwrap_or(Json::Null)).collect()));
            assert_eq!(got, Ok(want), "{args}");
        }
        // A number where the pattern wants a string: regorus' error.
        let err = eval(&pool, &steps, json!({"path": 3})).unwrap_err();
        assert!(err.contains("regex.match"), "{err}");
    }

    /// `k in object.keys(x)` is answered without the set of keys; on an
    /// undefined `x`, a missing or undefined key and a non-object it must
    /// still be regorus' answer (the pool compares in debug builds).
    #[test]
    fn key_membership_equals_regorus() {
        let rego = r#"
has if "content" in object.keys(input.arguments)
lacks if not "content" in object.keys(input.arguments)
named := true if input.arguments.path in object.keys(input.arguments.nested) else := false
missing if not input.arguments.nope in object.keys(input.arguments)
"#;
        let rules = ["has", "lacks", "named", "missing"];
        let (pool, steps) = pool(rego, &rules);
        assert!(pool.is_native(&steps));
        let cases = [
            // `not nope in …` with `nope` undefined fails the body, as in
            // OPA (regorus would make it hold).
            (json!({"content": 1}), Ok(json!([true, null, false, null]))),
            (json!({"path": "a"}), Ok(json!([null, true, false, null]))),
            (
                json!({"path": "a", "nested": {"a": 1}}),
                Ok(json!([null, true, true, null])),
            ),
            (
                json!({"path": "b", "nested": {"a": 1}}),
                Ok(json!([null, true, false, null])),
            ),
            (json!({"path": "a", "nested": "a"}), Err(())),
            (json!({"path": "a", "nested": ["a"]}), Err(())),
        ];
        for (args, want) in cases {
            let got = eval(&pool, &steps, args.clone())
                .map(|v| Json::Array(v.into_iter().map(|x| x.unwrap_or(Json::Null)).collect()))
                .map_err(|_| ());
            assert_eq!(got, want, "{args}");
        }
    }

    #[test]
    fn comprehensions_and_data_documents() {
        let rego = r#"
names := {lower(n) | some n in data.lists.names}
picked := [x | some x in input.arguments.l; x in names]
by_len := {n: count(n) | some n in names}
known if lower(input.arguments.who) in names
"#;
        let limits = Limits::default();
        let mut e = policy::new_engine(limits);
        e.add_data(
            regorus::Value::from_json_str(r#"{"lists": {"names": ["Ann", "bob", "ANN"]}}"#)
                .unwrap(),
        )
        .unwrap();
        policy::add_policy(
            &mut e,
            "p.rego",
            &format!("package p\nimport rego.v1\n{rego}"),
        )
        .unwrap();
        let steps: Vec<Step> = ["names", "picked", "by_len", "known"]
            .iter()
            .map(|r| Step {
                path: format!("data.p.{r}"),
                by_query: false,
            })
            .collect();
        let pool = EnginePool::new(e, limits).with_native(&steps);
        assert!(pool.is_native(&steps));
        for args in [
            json!({"l": ["ann", "x", "bob"], "who": "BOB"}),
            json!({"l": "not a list", "who": 3}),
            json!({}),
        ] {
            let _ = eval(&pool, &steps, args);
        }
        let out = eval(
            &pool,
            &steps,
            json!({"l": ["bob", "ann", "zed"], "who": "Ann"}),
        )
        .unwrap();
        assert_eq!(out[0], Some(json!(["ann", "bob"])));
        assert_eq!(out[1], Some(json!(["bob", "ann"])));
        assert_eq!(out[2], Some(json!({"ann": 3, "bob": 3})));
        assert_eq!(out[3], Some(json!(true)));
    }

    #[test]
    fn what_reads_only_data_is_computed_once_at_load() {
        let limits = Limits::default();
        let mut e = policy::new_engine(limits);
        e.add_data(regorus::Value::from_json_str(r#"{"names": ["Ann", "bob"]}"#).unwrap())
            .unwrap();
        let rego = "names := {lower(n) | some n in data.names}\nmine := {n | some n in names; n == input.arguments.who}";
        policy::add_policy(
            &mut e,
            "p.rego",
            &format!("package p\nimport rego.v1\n{rego}"),
        )
        .unwrap();
        let program =
            crate::catalog::lower::program(&mut e, ["data.p.names", "data.p.mine"], limits)
                .unwrap();
        let value =
            |path: &str| &program.rules[program.entry(path).unwrap()].defs[0].bodies[0].value;
        match value("data.p.names") {
            super::Term::Const(v) => {
                assert_eq!(serde_json::to_value(v).unwrap(), json!(["ann", "bob"]))
            }
            _ => panic!("the data-only comprehension was not folded"),
        }
        // One that reads the input stays a comprehension.
        assert!(matches!(value("data.p.mine"), super::Term::Compr { .. }));
    }

    #[test]
    fn a_reference_named_twice_is_looked_up_once() {
        let limits = Limits::default();
        let mut e = policy::new_engine(limits);
        let rego = "r := input.a.b\ns := [input.a.b, input.a[\"b\"], input.a.c, r.d, r.d]";
        policy::add_policy(
            &mut e,
            "p.rego",
            &format!("package p\nimport rego.v1\n{rego}"),
        )
        .unwrap();
        let program =
            crate::catalog::lower::program(&mut e, ["data.p.r", "data.p.s"], limits).unwrap();
        // `input.a`, `input.a.b`, `input.a.c`, `r.d`.
        assert_eq!(program.paths.len(), 4);
    }

    #[test]
    fn what_native_cannot_decide_regorus_does() {
        // A builtin error (strict), a conflict, and a complete rule holding
        // twice: native falls back and regorus gives its error.
        for (rego, args) in [
            (
                r#"x := startswith(input.arguments.p, "/")"#,
                json!({"p": 1}),
            ),
            // The first argument is undefined, the second fails (values
            // that are not an array): an error.
            (
                r#"x := startswith(input.arguments.missing, sprintf("%s %s", "x"))"#,
                json!({}),
            ),
            (
                "x := 1 if input.arguments.a\nx := 2 if input.arguments.b",
                json!({"a": true, "b": true}),
            ),
            (
                "x := v if { some v in input.arguments.l }",
                json!({"l": [1, 2]}),
            ),
        ] {
            let (pool, steps) = pool(rego, &["x"]);
            assert!(pool.is_native(&steps), "{rego}");
            assert!(eval(&pool, &steps, args).is_err(), "{rego}");
        }
    }

    #[test]
    fn arithmetic_is_opas_or_refused() {
        // OPA's answers, from its own engine (v1.20.2).
        for (rego, args, want) in [
            (
                "x := input.arguments.n + 0.2",
                json!({"n": 0.1}),
                json!(0.3),
            ),
            (
                "x := input.arguments.n + 0.2 == 0.3",
                json!({"n": 0.1}),
                json!(true),
            ),
            (
                "x := input.arguments.n * 3 > 0.3",
                json!({"n": 0.1}),
                json!(false),
            ),
            ("x := input.arguments.n / 4", json!({"n": 10}), json!(2.5)),
            ("x := input.arguments.n / 7.0", json!({"n": 7}), json!(1)),
            (
                "x := json.marshal(input.arguments.n - 0.1)",
                json!({"n": 0.4}),
                json!("0.3"),
            ),
            (
                "x := {1, 2} - {k | some k in input.arguments.l}",
                json!({"l": [2]}),
                json!([1]),
            ),
        ] {
            let (pool, steps) = pool(rego, &["x"]);
            assert!(pool.is_native(&steps), "{rego}");
            assert_eq!(
                eval(&pool, &steps, args).unwrap(),
                vec![Some(want)],
                "{rego}"
            );
        }
        for (rego, args, why) in [
            (
                "x := input.arguments.n / 3",
                json!({"n": 1}),
                "`input.arguments.n / 3`: OPA computes this to 64 bits as 0.33333333333333333334",
            ),
            (
                "x := input.arguments.n * 1",
                json!({"n": 1234567.5}),
                "as 1.2345675e+06",
            ),
            ("x := input.arguments.n / -5", json!({"n": 0}), "as -0,"),
            (
                "x := input.arguments.n / 0",
                json!({"n": 5}),
                "divide by zero",
            ),
        ] {
            let (pool, steps) = pool(rego, &["x"]);
            let err = eval(&pool, &steps, args).unwrap_err();
            assert!(err.contains(why), "{rego}: {err}");
        }
    }

    #[test]
    fn rules_outside_the_subset_stay_on_regorus() {
        for rego in [
            // Functions: a pattern, a constant or a repeated name as a
            // parameter, a default, recursion, a legacy `=` head, an
            // `else` without a value after a head with one, no parameter.
            "f([a]) := a\nx := f(input.arguments.l)",
            "f(1) := 2\nx := f(input.arguments.n)",
            "f(a, a) := a\nx := f(input.arguments.n, 1)",
            "default f(_) := 0\nf(a) := a if a > 1\nx := f(input.arguments.n)",
            "f(a) := f(a)\nx := f(input.arguments.n)",
            "f(a) := g(a)\ng(a) := f(a)\nx := f(input.arguments.n)",
            "f(a) = a\nx := f(input.arguments.n)",
            "f(a) := 1 if a == 1 else if a\nx := f(input.arguments.n)",
            // A local named as a rule of the package: regorus fails ("var
            // used before definition").
            "f(p) if { some s in p; s }\ns := 1\nx := f(input.arguments.l)",
            // A call with the result as an extra argument.
            "f(a) := a\nx if f(input.arguments.n, 1)",
            "x := data.p.y",
            "x := time.now_ns()",
            "x if { every v in input.arguments.l { v } }",
            "x := 1 if { input.arguments.a = 1 }",
        ] {
            let (pool, steps) = pool(rego, &["x"]);
            assert!(!pool.is_native(&steps), "{rego}");
        }
    }
}
