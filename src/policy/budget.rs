//! What one policy evaluation may spend, enforced before the spending.
//!
//! regorus interrupts its interpreter loop when the time limit passes, but not
//! a builtin: `numbers.range(1, 1e10)` asks for 240 GB in one
//! `Vec::with_capacity`, the allocation fails and Rust aborts the process
//! (every client with it); `sprintf("%01000000000d", [1])` runs for seconds and
//! its answer used to be taken. No allocator limit can turn a failed
//! allocation into an error on stable Rust, so the check has to come first.
//!
//! Two guards, both failing closed:
//! - **Memory**: every builtin whose output size the caller chooses is
//!   shadowed by an extension of the same name (regorus looks extensions up
//!   before builtins). The extension computes an upper bound of the output
//!   from the arguments, charges it to the evaluation's budget, refuses when
//!   the budget would be exceeded, and only then calls regorus' own builtin.
//!   Values are shared (`Rc`), so a few lines of Rego can build a value whose
//!   serialized size is exponential; builtins that serialize or walk a value
//!   measure it first with a walk that stops at the budget ([`logical_size`]).
//! - **Time**: [`Scope`] records when an evaluation started; guarded builtins
//!   refuse to start once the limit has passed, and the evaluation's callers
//!   ([`super::engine`]) discard any answer that arrives after it. Which
//!   clock the limit counts is [`super::clock`]'s.
//!
//! What is guarded, and what is not, is listed in docs/policy-tooling.md.
//! This module knows regorus' builtin table and values; it does not know
//! tools, catalogs or the wire.

use std::cell::Cell;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use regorus::Value;
use regorus::unstable::{BUILTINS, Expr, Ref, Source, Span};

use crate::opa_builtins::{Compat, TABLE};

/// The default memory budget of one evaluation, in MiB.
pub const DEFAULT_POLICY_MEMORY_MB: u64 = 64;

/// What one evaluation may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Time from the start of an evaluation, on the clock `super::clock`
    /// counts (wall-clock serving, the thread's CPU in check and test).
    pub time: Duration,
    /// Bytes that size-driving builtins may produce in one evaluation.
    pub memory: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            time: Duration::from_millis(super::DEFAULT_POLICY_TIMEOUT_MS),
            memory: DEFAULT_POLICY_MEMORY_MB * 1024 * 1024,
        }
    }
}

/// What an evaluation in progress on this thread has spent.
#[derive(Clone, Copy)]
struct Spent {
    start: Instant,
    bytes: u64,
}

thread_local! {
    static SPENT: Cell<Option<Spent>> = const { Cell::new(None) };
}

/// One evaluation's accounting, active on this thread while it lives.
/// Scopes nest: an inner one (a rule evaluated inside a plan) joins the outer
/// one, so the budget is per request, not per rule.
pub struct Scope {
    outer: bool,
    start: Instant,
}

impl Scope {
    pub fn begin() -> Scope {
        SPENT.with(|s| match s.get() {
            Some(spent) => Scope {
                outer: false,
                start: spent.start,
            },
            None => {
                let start = Instant::now();
                super::clock::started();
                s.set(Some(Spent { start, bytes: 0 }));
                Scope { outer: true, start }
            }
        })
    }

    /// Time since the outermost scope began, on the clock this process
    /// counts (`super::clock`: wall-clock serving, the thread's CPU checking).
    pub fn elapsed(&self) -> Duration {
        super::clock::spent(self.start)
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        if self.outer {
            SPENT.with(|s| s.set(None));
        }
    }
}

/// The error a guard raises. regorus wraps it with the call's location.
fn refuse(message: String) -> anyhow::Error {
    anyhow::anyhow!(message)
}

/// Charges `bytes` for `builtin` against `limits`, before it allocates.
/// Outside a scope (an engine used directly), each call is held to the
/// budget on its own.
fn charge(builtin: &str, bytes: u64, limits: &Limits) -> anyhow::Result<()> {
    SPENT.with(|s| {
        let mut spent = s.get();
        if let Some(sp) = &spent
            && super::clock::spent(sp.start) > limits.time
        {
            return Err(refuse(format!(
                "policy evaluation exceeded its time limit of {} before `{builtin}`",
                super::clock::limit_text(limits.time)
            )));
        }
        let before = spent.map_or(0, |sp| sp.bytes);
        let total = before.saturating_add(bytes);
        if total > limits.memory {
            return Err(refuse(format!(
                "policy evaluation exceeded its memory budget: `{builtin}` would allocate {} \
                 (budget {} per evaluation, {} already used)",
                human(bytes),
                human(limits.memory),
                human(before)
            )));
        }
        if let Some(sp) = &mut spent {
            sp.bytes = total;
            s.set(spent);
        }
        Ok(())
    })
}

/// A size in bytes for people: `2.4 GiB`, `64.0 MiB`.
fn human(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= 1024 * 1024 * MIB {
        "more than 1 TiB".to_string()
    } else if bytes >= 1024 * MIB {
        format!("{:.1} GiB", bytes as f64 / (1024 * MIB) as f64)
    } else if bytes >= MIB {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    } else {
        format!("{bytes} bytes")
    }
}

/// Bytes charged per value in an array or set: the `Value` itself plus its
/// share of the container (regorus values are 16 bytes; numbers and strings
/// live behind pointers). An upper bound is what matters, not precision.
const PER_VALUE: u64 = 32;

/// The size of `v` as if every shared part were written out, as a
/// serializer or a walk would; stops counting (returning `None`) once it
/// passes `limit`, so measuring costs at most the budget, never the value.
pub fn logical_size(v: &Value, limit: u64) -> Option<u64> {
    // A scalar needs no walk (and no stack to allocate): most guarded
    // arguments are one string (issue 17).
    let scalar = match v {
        Value::Array(_) | Value::Set(_) | Value::Object(_) => None,
        Value::String(s) => Some(s.len() as u64 + 2),
        _ => Some(PER_VALUE),
    };
    if let Some(n) = scalar {
        return (n <= limit).then_some(n);
    }
    let mut total: u64 = 0;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        total = total.saturating_add(match v {
            Value::String(s) => s.len() as u64 + 2,
            Value::Array(a) => {
                stack.extend(a.iter());
                PER_VALUE + a.len() as u64
            }
            Value::Set(s) => {
                stack.extend(s.iter());
                PER_VALUE + s.len() as u64
            }
            Value::Object(o) => {
                for (k, v) in o.iter() {
                    stack.push(k);
                    stack.push(v);
                }
                PER_VALUE + o.len() as u64
            }
            _ => PER_VALUE,
        });
        if total > limit {
            return None;
        }
    }
    Some(total)
}

/// What serializing `v` may produce: its written-out size times `factor`
/// (larger than any budget when the walk stopped at it).
fn written(v: &Value, factor: u64, limits: &Limits) -> u64 {
    logical_size(v, limits.memory).map_or(u64::MAX, |n| n.saturating_mul(factor))
}

/// What `layout` adds to `v`'s compact text: the prefix before the first
/// line, and for each element of a non-empty array or object and for its
/// closing bracket a line (a newline, the prefix, the indent once per
/// depth) and a space after a key. Stops counting (returning `None`) once
/// it passes `limit`: every element adds at least its newline, so the walk
/// costs at most the budget.
fn laid_out(v: &Value, layout: &crate::opa_builtins::Layout, limit: u64) -> Option<u64> {
    let (prefix, indent) = (layout.prefix.len() as u64, layout.indent.len() as u64);
    let line = |depth: u64| {
        indent
            .saturating_mul(depth)
            .saturating_add(prefix)
            .saturating_add(2)
    };
    let mut total = prefix;
    let mut stack = vec![(v, 0u64)];
    while let Some((v, depth)) = stack.pop() {
        let n = match v {
            Value::Array(a) => {
                stack.extend(a.iter().map(|e| (e, depth + 1)));
                a.len()
            }
            Value::Set(s) => {
                stack.extend(s.iter().map(|e| (e, depth + 1)));
                s.len()
            }
            Value::Object(o) => {
                stack.extend(o.values().map(|e| (e, depth + 1)));
                o.len()
            }
            _ => 0,
        } as u64;
        if n > 0 {
            total = total
                .saturating_add(n.saturating_mul(line(depth + 1)))
                .saturating_add(line(depth));
        }
        if total > limit {
            return None;
        }
    }
    Some(total)
}

/// The result size, in bytes, of a size-driving builtin for these arguments;
/// `None` when the arguments are not of the builtin's types, in which case
/// the builtin itself reports the type error.
pub(super) type Estimate = fn(&[Value], &Limits) -> Option<u64>;

/// Builtins whose output size the arguments choose, with their estimates.
const GUARDED: &[(&str, Estimate)] = &[
    ("numbers.range", |a, _| range_len(&a[0], &a[1], None)),
    ("numbers.range_step", |a, _| {
        range_len(&a[0], &a[1], Some(&a[2]))
    }),
    ("concat", |a, _| {
        let (Value::String(sep), Some(items)) = (&a[0], strings(&a[1])) else {
            return None;
        };
        let n = items.len() as u64;
        let sum: u64 = items.iter().map(|s| s.len() as u64).sum();
        Some(sum.saturating_add(n.saturating_mul(sep.len() as u64)))
    }),
    ("array.concat", |a, _| {
        let (Value::Array(x), Value::Array(y)) = (&a[0], &a[1]) else {
            return None;
        };
        Some((x.len() + y.len()) as u64 * PER_VALUE)
    }),
    ("replace", |a, _| {
        let (Value::String(s), Value::String(old), Value::String(new)) = (&a[0], &a[1], &a[2])
        else {
            return None;
        };
        Some(replaced_len(s.len() as u64, s, old, new.len() as u64))
    }),
    ("strings.replace_n", |a, _| {
        let (Value::Object(patterns), Value::String(s)) = (&a[0], &a[1]) else {
            return None;
        };
        // Bounded as if the replacements applied one after another (each
        // growing what the next one sees), as regorus did: more than Go's
        // one pass (`opa_builtins::strings`) can write.
        let mut len = s.len() as u64;
        for (k, v) in patterns.iter() {
            let (Value::String(k), Value::String(v)) = (k, v) else {
                return None;
            };
            let matches = if k.is_empty() {
                len.saturating_add(1)
            } else {
                len / k.len() as u64
            };
            len = len.saturating_add(matches.saturating_mul(v.len() as u64));
        }
        Some(len)
    }),
    ("regex.replace", |a, _| {
        let (Value::String(s), Value::String(_), Value::String(new)) = (&a[0], &a[1], &a[2]) else {
            return None;
        };
        // A pattern can match at every position, also the empty one.
        let n = s.len() as u64;
        Some(n.saturating_add((n + 1).saturating_mul(new.len() as u64)))
    }),
    ("sprintf", |a, limits| {
        let (Value::String(format), Value::Array(args)) = (&a[0], &a[1]) else {
            return None;
        };
        // OPA's sprintf (`opa_builtins::sprintf`, Go's `fmt`): widths and
        // precisions pad without limit (`%01000000000d`), and one taken
        // from an argument (`*`) up to 10^6; each verb may write any
        // argument (`%[1]v` again and again), a string at up to 5 bytes a
        // byte (`% #x`, `%q` of control characters) and a value as its
        // quoted Rego text; a verb without an argument writes
        // `%!d(MISSING)`; extra arguments are written once more. A number
        // writes up to 330 bytes (`%f` of 1e308), a big integer 4 bytes a
        // digit (`%b`).
        let verbs = format.bytes().filter(|&b| b == b'%').count() as u64;
        let stars = format.bytes().filter(|&b| b == b'*').count() as u64;
        let mut bytes = (format.len() as u64)
            .saturating_add(format_widths(format))
            .saturating_add(stars.saturating_mul(1_000_000))
            .saturating_add(verbs.saturating_mul(32 + 330));
        let (mut largest, mut all) = (0u64, 0u64);
        for arg in args.iter() {
            let mut n = logical_size(arg, limits.memory)
                .unwrap_or(u64::MAX)
                .saturating_mul(5);
            if let Value::Number(x) = arg
                && x.as_f64().is_none()
            {
                n = n.saturating_add(4 * x.format_decimal().len() as u64);
            }
            largest = largest.max(n);
            all = all.saturating_add(n);
        }
        bytes = bytes
            .saturating_add(verbs.saturating_mul(largest))
            .saturating_add(all);
        Some(bytes)
    }),
    ("split", |a, _| {
        let (Value::String(s), Value::String(sep)) = (&a[0], &a[1]) else {
            return None;
        };
        let parts = match sep.as_bytes() {
            [] => s.chars().count() as u64,
            // One byte (always ASCII): its occurrences are the matches, and
            // counting bytes skips the substring searcher's set-up, which
            // cost more than the split itself (issue 17).
            &[b] => s.bytes().filter(|&c| c == b).count() as u64 + 1,
            _ => s.matches(sep.as_ref()).count() as u64 + 1,
        };
        Some(
            parts
                .saturating_mul(PER_VALUE)
                .saturating_add(s.len() as u64),
        )
    }),
    ("walk", |a, limits| {
        // One [path, value] pair per node, each path as long as the node is deep.
        Some(walk_size(&a[0], limits.memory))
    }),
    ("json.marshal", |a, limits| Some(written(&a[0], 2, limits))),
    ("json.marshal_with_options", |a, limits| {
        // Go writes a character as up to six bytes (`\u003c`); a layout
        // the options ask for (`opa_builtins::marshal_layout`) puts each
        // element on a line of its own, after the prefix and the indent
        // once per depth, which the indent multiplies.
        let compact = written(&a[0], 6, limits);
        let lines = match crate::opa_builtins::marshal_layout(&a[1]) {
            Ok(Some(layout)) if compact < u64::MAX => {
                laid_out(&a[0], &layout, limits.memory).unwrap_or(u64::MAX)
            }
            _ => 0,
        };
        Some(compact.saturating_add(lines))
    }),
    ("yaml.marshal", |a, limits| Some(written(&a[0], 4, limits))),
    ("json.unmarshal", |a, _| {
        let Value::String(s) = &a[0] else {
            return None;
        };
        Some((s.len() as u64).saturating_mul(PER_VALUE))
    }),
    ("yaml.unmarshal", |a, _| {
        let Value::String(s) = &a[0] else {
            return None;
        };
        // Aliases can expand a short document exponentially; yaml_serde
        // refuses past its repetition limit, and the rest is bounded here.
        Some((s.len() as u64).saturating_mul(PER_VALUE))
    }),
];

/// The number of elements of `numbers.range(from, to)` or
/// `numbers.range_step(from, to, step)`, times the size of one. Numbers too
/// large for an exact count count as too large: the guard fails closed.
fn range_len(from: &Value, to: &Value, step: Option<&Value>) -> Option<u64> {
    let (Value::Number(a), Value::Number(b)) = (from, to) else {
        return None;
    };
    let step = match step {
        Some(Value::Number(s)) => match s.as_i64() {
            Some(s) if s >= 1 => s as u128,
            // Not a positive integer: regorus reports it.
            _ => return None,
        },
        Some(_) => return None,
        None => 1,
    };
    if !a.is_integer() || !b.is_integer() {
        return None;
    }
    let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) else {
        return Some(u64::MAX);
    };
    let n = (i128::from(b) - i128::from(a)).unsigned_abs() / step + 1;
    Some(u64::try_from(n).map_or(u64::MAX, |n| n.saturating_mul(PER_VALUE)))
}

/// The length of `s` with every `old` replaced by `new`.
fn replaced_len(len: u64, s: &str, old: &str, new: u64) -> u64 {
    if old.is_empty() {
        // Go (and `opa_builtins`, which answers as OPA) inserts `new` before
        // every byte and at the end.
        let _ = s;
        return len.saturating_add((len + 1).saturating_mul(new));
    }
    let matches = s.matches(old).count() as u64;
    len.saturating_add(matches.saturating_mul(new))
}

/// The strings of an array or set, or `None` when any element is not one.
fn strings(v: &Value) -> Option<Vec<&str>> {
    let items: Box<dyn Iterator<Item = &Value>> = match v {
        Value::Array(a) => Box::new(a.iter()),
        Value::Set(s) => Box::new(s.iter()),
        _ => return None,
    };
    items
        .map(|i| match i {
            Value::String(s) => Some(s.as_ref()),
            _ => None,
        })
        .collect()
}

/// The sum of every width and precision written in a format string.
fn format_widths(format: &str) -> u64 {
    let mut total: u64 = 0;
    let mut in_verb = false;
    let mut number: u64 = 0;
    let mut rest = format;
    loop {
        if !in_verb {
            // Text between verbs adds no width: jump to the next `%`
            // instead of decoding every character (issue 17).
            let Some(at) = rest.find('%') else { break };
            rest = &rest[at + 1..];
            in_verb = true;
            number = 0;
            continue;
        }
        let mut chars = rest.chars();
        let Some(c) = chars.next() else { break };
        rest = chars.as_str();
        if let Some(d) = c.to_digit(10) {
            number = number.saturating_mul(10).saturating_add(u64::from(d));
        } else {
            total = total.saturating_add(number);
            number = 0;
            // Flags and the precision dot keep the verb open; a letter ends it.
            if c.is_alphabetic() || c == '%' {
                in_verb = false;
            }
        }
    }
    total.saturating_add(number)
}

/// What `walk(v)` produces: for each node a path as long as its depth.
fn walk_size(v: &Value, limit: u64) -> u64 {
    let mut total: u64 = 0;
    let mut stack: Vec<(&Value, u64)> = vec![(v, 0)];
    while let Some((v, depth)) = stack.pop() {
        total = total.saturating_add((depth + 2).saturating_mul(PER_VALUE));
        if total > limit {
            return u64::MAX;
        }
        match v {
            Value::Array(a) => stack.extend(a.iter().map(|c| (c, depth + 1))),
            Value::Set(s) => stack.extend(s.iter().map(|c| (c, depth + 1))),
            Value::Object(o) => stack.extend(o.values().map(|c| (c, depth + 1))),
            _ => {}
        }
    }
    total
}

/// What regorus' builtins are called with in place of the call's own
/// expressions: they only use them to point at an argument in an error
/// message, which the extension's caller replaces with the call's location.
static PLACEHOLDER: LazyLock<(Span, Vec<Ref<Expr>>)> = LazyLock::new(|| {
    let source =
        Source::from_contents("<builtin>".to_string(), " ".to_string()).expect("placeholder");
    let span = Span {
        source,
        line: 1,
        col: 1,
        start: 0,
        end: 1,
    };
    let params = (0..4)
        .map(|_| {
            Ref::new(Expr::Null {
                span: span.clone(),
                value: Value::Null,
                eidx: 0,
            })
        })
        .collect();
    (span, params)
});

/// regorus' own builtin `fcn`, as an evaluation calls it: when `name` is
/// size-driving (its `estimate`, from [`estimate_of`]), its output is charged
/// to the evaluation's budget first, exactly as the installed guard does.
/// One path for the guards regorus calls and the calls of `super::native`,
/// which may pass a `fast` answer (`super::builtins`): it runs after the
/// charge, so both paths spend the same budget. Then OPA's answer where
/// regorus' differs (`compat`, from [`crate::opa_builtins::of`]), and
/// regorus' builtin whenever both decline.
pub(crate) fn call(
    name: &str,
    fcn: regorus::unstable::BuiltinFcn,
    estimate: Option<Estimate>,
    compat: Option<Compat>,
    args: &[Value],
    limits: &Limits,
    fast: impl FnOnce(&[Value]) -> Option<Value>,
) -> anyhow::Result<Value> {
    if let Some(estimate) = estimate {
        charge(name, estimate(args, limits).unwrap_or(0), limits)?;
    }
    // A number the request spelled by hand, which OPA would write back as
    // spelled (`super::spelled`); after the charge, which bounds its walk.
    super::spelled::check(name, args)?;
    if let Some(v) = fast(args) {
        return Ok(v);
    }
    if let Some(answer) = compat.and_then(|c| c(args)) {
        return answer;
    }
    let (span, params) = &*PLACEHOLDER;
    let v = (fcn.0)(span, &params[..args.len()], args, true)
        .map_err(|e| refuse(super::errors::builtin_message(&e.to_string())))?;
    // regorus' answer where OPA's is an error (`json.patch`'s undefined
    // where the patches do not apply): OPA's error, never a silent
    // undefined.
    match crate::opa_builtins::after(name, args, &v) {
        Some(e) => Err(e),
        None => Ok(v),
    }
}

/// The estimate of a size-driving builtin; `None` for one that is not guarded.
pub(crate) fn estimate_of(name: &str) -> Option<Estimate> {
    GUARDED.iter().find(|(n, _)| *n == name).map(|(_, e)| *e)
}

/// Installs the guards on `engine`: each size-driving builtin becomes an
/// extension that charges its output's size before calling regorus' own,
/// each builtin whose regorus answer differs from OPA's one that
/// answers as OPA ([`crate::opa_builtins`]), and each that reads an
/// integer as OPA does one that refuses a number the request spelled so
/// that OPA reads none (`rego::data_numbers::INTEGER_BUILTINS`).
pub fn install(engine: &mut regorus::Engine, limits: Limits) -> anyhow::Result<()> {
    let guarded = GUARDED.iter().map(|&(n, _)| n);
    let compat = TABLE.iter().map(|&(n, _)| n);
    // Builtins OPA refuses an integer spelled with an exponent (`2E0`):
    // through `call`, `spelled::check` refuses it on regorus too.
    let integers = crate::rego::data_numbers::INTEGER_BUILTINS
        .iter()
        .map(|&(n, _)| n);
    let mut names: Vec<&'static str> = guarded.chain(compat).chain(integers).collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let Some(&(builtin, nargs)) = BUILTINS.get(name) else {
            // A builtin this build of regorus lacks needs no guard.
            continue;
        };
        let estimate = estimate_of(name);
        let compat = crate::opa_builtins::of(name);
        // Arguments of the wrong types are charged nothing, but the time
        // limit is still checked.
        let guard = move |args: Vec<Value>| -> anyhow::Result<Value> {
            call(
                name,
                (builtin, nargs),
                estimate,
                compat,
                &args,
                &limits,
                |_| None,
            )
        };
        engine.add_extension(name.to_string(), nargs, Box::new(guard))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(memory: u64) -> Limits {
        // The memory budget, never the clock, decides these tests, also on a
        // debug build sharing two cores with a dozen compilers.
        Limits {
            time: Duration::from_secs(600),
            memory,
        }
    }

    fn eval(rego: &str, memory: u64) -> Result<String, String> {
        let mut engine = regorus::Engine::new();
        engine.set_strict_builtin_errors(true);
        install(&mut engine, limits(memory)).unwrap();
        engine
            .add_policy("p.rego".into(), format!("package p\n{rego}"))
            .unwrap();
        let _scope = Scope::begin();
        engine
            .eval_rule("data.p.x".into())
            .map(|v| serde_json::to_string(&v).unwrap())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn small_results_are_the_builtins_own() {
        assert_eq!(
            eval("x := numbers.range(1, 3)", 1 << 20).unwrap(),
            "[1,2,3]"
        );
        assert_eq!(
            eval("x := numbers.range_step(10, 1, 4)", 1 << 20).unwrap(),
            "[10,6,2]"
        );
        assert_eq!(
            eval(r#"x := concat("-", ["a", "b"])"#, 1 << 20).unwrap(),
            r#""a-b""#
        );
        assert_eq!(
            eval(r#"x := replace("aXa", "X", "yy")"#, 1 << 20).unwrap(),
            r#""ayya""#
        );
        assert_eq!(
            eval(r#"x := sprintf("%03d", [7])"#, 1 << 20).unwrap(),
            r#""007""#
        );
        assert_eq!(
            eval(r#"x := strings.replace_n({"a": "b"}, "aa")"#, 1 << 20).unwrap(),
            r#""bb""#
        );
        assert_eq!(
            eval(r#"x := split("a,b", ",")"#, 1 << 20).unwrap(),
            r#"["a","b"]"#
        );
    }

    /// regorus' interpreter reaches OPA's order through the installed
    /// `sort`, `max`, `min` and `json.marshal` (`opa_builtins::order`).
    #[test]
    fn regorus_orders_objects_before_sets() {
        for (rego, opa) in [
            ("x := sort([set(), {}])", "[{},[]]"),
            ("x := max([{}, set()])", "[]"),
            ("x := min({set(), {}})", "{}"),
            ("x := json.marshal({set(), {}, [1]})", r#""[[1],{},[]]""#),
            (r#"x := sprintf("%v", [{set(), {}}])"#, r#""{{}, set()}""#),
        ] {
            assert_eq!(eval(rego, 1 << 20).unwrap(), opa, "{rego}");
        }
    }

    #[test]
    fn huge_results_are_refused_before_they_are_built() {
        for rego in [
            "x := count(numbers.range(1, 10000000000))",
            "x := count(numbers.range(0, 9000000000000000000))",
            "x := count(numbers.range_step(1, 10000000000, 1))",
            r#"x := sprintf("%01000000000d", [1])"#,
            r#"x := replace(concat("", [format_int(y, 10) | some y in numbers.range(1, 1000)]), "1", concat("", [format_int(z, 10) | some z in numbers.range(1, 10000)]))"#,
            r#"x := strings.replace_n({"": "0123456789012345678901234567890123456789"}, concat("", [format_int(y, 10) | some y in numbers.range(1, 20000)]))"#,
        ] {
            let err = match eval(rego, 1 << 20) {
                Ok(v) => panic!("{rego}: answered {} bytes", v.len()),
                Err(e) => e,
            };
            assert!(err.contains("memory budget"), "{rego}: {err}");
        }
    }

    #[test]
    fn the_budget_is_per_evaluation_not_per_call() {
        // 40 doublings of a string: each step alone is small until the last
        // few, but together they pass the budget.
        let mut rego = String::from("s0 := \"xxxxxxxxxxxxxxxx\"\n");
        for i in 1..=24 {
            rego.push_str(&format!("s{i} := concat(\"\", [s{}, s{}])\n", i - 1, i - 1));
        }
        rego.push_str("x := count(s24)\n");
        let err = eval(&rego, 64 << 20).unwrap_err();
        assert!(err.contains("memory budget"), "{err}");
    }

    #[test]
    fn shared_values_are_measured_as_written_out() {
        // [y, y] shares y, so 40 levels take no memory but serialize to 2^40.
        let mut rego = String::from("v0 := [\"x\"]\n");
        for i in 1..=40 {
            rego.push_str(&format!("v{i} := [v{}, v{}]\n", i - 1, i - 1));
        }
        rego.push_str("x := count(json.marshal(v40))\n");
        let err = eval(&rego, 64 << 20).unwrap_err();
        assert!(err.contains("memory budget"), "{err}");
        assert_eq!(logical_size(&Value::from("ab"), 100), Some(4));
    }

    #[test]
    fn a_layout_is_charged_as_the_indent_multiplies_it() {
        // 1,000 numbers: compact they are small; each on a line after an
        // indent of 2,000 bytes, 2 MB, past a budget of 1 MiB.
        let indent = r#"s := concat("", [" " | some _ in numbers.range(1, 2000)])"#;
        let v = "v := numbers.range(1, 1000)";
        let ok = eval(
            &format!(
                "{indent}\n{v}\nx := count(json.marshal_with_options(v, {{\"indent\": s, \"pretty\": false}}))"
            ),
            1 << 20,
        );
        assert_eq!(ok.as_deref(), Ok("3894"));
        let err = eval(
            &format!("{indent}\n{v}\nx := count(json.marshal_with_options(v, {{\"indent\": s}}))"),
            1 << 20,
        )
        .unwrap_err();
        assert!(err.contains("memory budget"), "{err}");
        let layout = crate::opa_builtins::Layout {
            prefix: "P".into(),
            indent: "--".into(),
        };
        // `P[\nP--1,\nP--[\nP----2\nP--]\nP]` is 27 bytes, 20 more than
        // `[1,[2]]`: bounded by 26.
        let v = Value::from_json_str("[1, [2]]").unwrap();
        assert_eq!(laid_out(&v, &layout, 100), Some(26));
        assert_eq!(laid_out(&v, &layout, 10), None);
    }

    #[test]
    fn format_widths_sum_widths_and_precisions() {
        assert_eq!(format_widths("%d %s"), 0);
        assert_eq!(format_widths("%05d|%.3f|%10.2f%%"), 5 + 3 + 12);
        assert_eq!(format_widths("%01000000000d"), 1_000_000_000);
        assert_eq!(format_widths("résumé 12 %s, %-7.2fé%5"), 7 + 2 + 5);
        assert_eq!(format_widths("no verbs 123"), 0);
        assert_eq!(format_widths("%é12d"), 0);
    }
}
