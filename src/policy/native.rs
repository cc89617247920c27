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
//! `every k, v in domain { … }` (key and value forms, nested, in
//! functions and comprehensions). `walk(x, [path, value])` and
//! `walk(x, out)` as a statement (`Stmt::Walk`): the pairs in OPA's order,
//! a part of the pattern that is a value compared with what it binds.
//! `some i; xs[i] == v`: the first index by a declared variable, in a
//! statement of references, comparisons and membership only, is lowered
//! as `some i, x in xs` before the statement (`lower/exprs`).
//! Everything else (`default` functions, patterns as parameters,
//! `some x` declarations other than bound by an index, `with`, `data.x.r` references to other packages' rules, unification,
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
//! operand is undefined; `<`, `>` order sets after objects; `every` stops
//! at the first way its body holds for a member (regorus goes on, and may
//! meet an error OPA never evaluates). Such an answer
//! is noted (debug builds) so that the cross-check with regorus skips it,
//! and a plan holding such a construct never returns regorus' answer after
//! a fallback (`policy::EnginePool::with_flagged`).
//!
//! This module knows regorus' values and builtin table; it does not know the
//! syntax tree (that is `rego/lower`'s), tools or the wire.
//!
//! This file holds the plan's terms and an evaluation's entry points;
//! evaluating is `rules` (rules, functions, bodies, statements), `walk`
//! (`walk`'s pairs bound to its pattern) and `terms`
//! (a term's value), over `values` (OPA's order, indexing, one value per
//! rule, the OPA-only note).

use smallvec::SmallVec;

use regorus::Value;
use regorus::unstable::BuiltinFcn;

use super::budget::{Estimate, Limits, Scope};
use super::builtins::Fast;
use crate::opa_builtins::Compat;
use crate::opa_builtins::arith::Op as Arith;

mod rules;
mod terms;
mod values;
mod walk;

#[cfg(debug_assertions)]
pub(super) use values::took_opa_only_path;
use values::{clear_opa_only, opa_only, opa_only_noted};

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
    /// What OPA's rule index checks before it runs the body
    /// (`lower/index`): one failing fails the body before any statement
    /// or the value is evaluated, so that an undefined `input.b` makes
    /// `[base64.encode(input.a), input.b]` undefined rather than the
    /// call's error. regorus evaluates in order and may fail instead.
    pub index: Vec<Guard>,
}

/// One check of OPA's rule index.
pub(super) enum Guard {
    /// A reference into `input` that must be defined.
    Defined(Term),
    /// A reference (or a function's parameter) compared with a scalar: the
    /// comparison must hold.
    Holds(Term),
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
    /// The flag: the negated term indexes a reference by a variable of an
    /// enclosing `every` (`not b[x]`), which regorus reads as a loop over
    /// `b` and fails where `b[x]` is undefined (OPA's `not` holds): when
    /// it holds, the answer is noted as OPA's alone.
    Not(Term, Vec<Term>, bool),
    /// `x := term`: binds a fresh local; fails when the term is undefined.
    Assign(usize, Term),
    /// `some k, v in coll`: the rest of the body once per member.
    SomeIn {
        key: Option<usize>,
        value: usize,
        collection: Term,
    },
    /// `every k, v in domain { body }`: holds when the body holds at least
    /// once for each member of the domain (its first way to hold is enough:
    /// OPA looks no further), the members taken in OPA's order; fails when
    /// the domain is not a collection (undefined, a scalar), in OPA as in
    /// regorus. Binds nothing for what follows: its key, value and the
    /// body's own locals take slots of the enclosing body that only the
    /// body reads.
    Every {
        key: Option<usize>,
        value: usize,
        domain: Term,
        body: Vec<Stmt>,
    },
    /// `walk(x, out)`: the rest of the body once per `[path, value]` pair
    /// of `x`, in OPA's order (the node itself first, then its members: an
    /// array's by index, an object's by key, a set's in OPA's order, each
    /// member's path its key or the member itself); nothing when `x` is
    /// undefined. The pairs are built by `call` (regorus' `walk`, charged
    /// as its guard charges it) with OPA's order of set members. The
    /// pattern binds fresh slots only; a part of it that is a value
    /// (`[["k"], v]`, a bound local) is a slot compared after it
    /// (`Stmt::Expr`), as OPA unifies.
    Walk {
        of: Term,
        call: Builtin,
        out: WalkOut,
    },
}

/// What `walk` binds for each pair: the pair whole, or its path and value.
pub(super) enum WalkOut {
    Whole(usize),
    Pair(usize, usize),
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

impl Cmp {
    /// The operator as Rego spells it, for a refusal.
    pub(super) fn text(self) -> &'static str {
        match self {
            Cmp::Eq => "==",
            Cmp::Ne => "!=",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }
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
            is_static(value, bound) && stmts.iter().all(|s| stmt_is_static(s, bound))
        }
    }
}

/// Whether `stmt` reads nothing a request supplies ([`is_static`]).
fn stmt_is_static(stmt: &Stmt, bound: usize) -> bool {
    match stmt {
        Stmt::Expr(t) | Stmt::Assign(_, t) => is_static(t, bound),
        Stmt::Not(t, guards, _) => {
            is_static(t, bound) && guards.iter().all(|g| is_static(g, bound))
        }
        Stmt::SomeIn { collection, .. } | Stmt::Walk { of: collection, .. } => {
            is_static(collection, bound)
        }
        Stmt::Every { domain, body, .. } => {
            is_static(domain, bound) && body.iter().all(|s| stmt_is_static(s, bound))
        }
    }
}

/// One evaluation's state: the program, the input, the limits and the
/// memo. Its methods are `rules`' (rules, functions, statements) and
/// `terms`' (a term's value).
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
