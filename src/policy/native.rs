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
