//! Numbers a request spelled by hand: otherwise than regent writes them.
//!
//! OPA keeps an input number's text as the request spelled it (`1.50`,
//! `1E2`, `-0`) and writes that text back in `json.marshal`,
//! `json.marshal_with_options`, `strings.render_template`, the Rego text of
//! a composite in `sprintf`, and `sprintf` of a number spelled with an
//! exponent and no decimal point (passed to Go as text). regent receives
//! the request parsed (rmcp, `serde_json`): the spelling is gone by the time
//! a policy runs, and regent would write its own text (`1.5`, `100.0`).
//!
//! The transports see the request's text before it is parsed (stdio every
//! line, `protocol/transport`; HTTP the body of every POST to `/mcp`,
//! `http/shortcut`), and [`scan`] it there: a byte walk over the text that
//! parses only a number token with a fraction, an exponent or 19 digits
//! and more, and keeps each one regent would write otherwise
//! (`opa_builtins::numbers::spelling`). The request carries what it found
//! to where it is answered, which evaluates its policies inside [`with`];
//! there a builtin that writes a number's text ([`check`], from
//! `budget::call`, in both evaluators) given a value holding one of those
//! numbers refuses (fail closed), naming the spelling and what regent
//! would write. Everything else (comparisons, arithmetic, other builtins,
//! other numbers) is answered as before.
//!
//! A caller's claims are JSON text too (a token's payload): `http` scans
//! them when the token verifies ([`claim_numbers`], kept in
//! `Caller::spelled`), and [`Spelled::joined`] adds them to the request's
//! for its evaluations. The request's text is kept with its numbers
//! ([`Spelled::text`]): with `--log-arguments` the decision log writes the
//! arguments' numbers from it as the client spelled them
//! (`decisions::sent`).
//!
//! An integer spelled with an exponent (`2E0`, Python's `1e+16`) is no
//! integer to OPA: the builtins that read an operand as one answer a type
//! error (`substring`, `time.add_date`, `format_int`'s base: the list and
//! the operands are `rego::data_numbers::INTEGER_BUILTINS`, asked of OPA),
//! so [`check`] refuses such a number at those operands; `budget` shadows
//! every one of them, so regorus' calls are refused as native's are, and
//! every other builtin reads the value alike in OPA and is answered. An
//! array indexed by it is undefined there, the member in regent. Matched
//! by value, regent cannot tell that key from the same number reached
//! otherwise (`count(x)`, another argument spelled `2`), where OPA answers
//! the member, so answering undefined would be as wrong as answering the
//! member; the index is refused instead, which is exact (never OPA's
//! other answer) and simple. Natively only where it happens
//! ([`index_refusal`]: a computed key of that value, a member there);
//! regorus indexes where regent cannot watch, so before it evaluates a
//! request holding such a number, a tool whose modules index with a
//! computed key (found once at load, `rego::data_numbers::computed_index`)
//! refuses it ([`regorus_index_refusal`], `policy::EnginePool`).
//!
//! Matched by value, not provenance: the same number computed, or spelled
//! canonically elsewhere in the request, is refused too.
//!
//! A number regent cannot hold (`0.1000000000000000000001`, a 22-digit
//! integer) is kept as well: regent holds the nearest double, OPA compares
//! the exact decimal. Rounding keeps order, so only a comparison whose
//! operands are the same double may answer otherwise (OPA: `n > 0.1` true,
//! `n == 0.1` undefined); natively that comparison (`== != < <= > >=`, a
//! composite compared whole, `in` where a member is found) refuses
//! ([`compare_refusal`], `native::terms`). regorus compares where regent
//! cannot watch, so a plan that runs there refuses any request holding
//! such a number before it evaluates ([`regorus_lost_refusal`]; coarse:
//! which comparisons reach the request is not known at load). OPA's
//! arithmetic rounds such an operand as regent does (`n + 0` is `0.1`)
//! and is answered. Two numbers of one double also meet where a value is
//! picked, ordered, merged or looked up (OPA: `max([n, 0.1])` is `n`,
//! `count({n, 0.1})` 2, `{0.1: "x"}[n]` undefined): [`check`] refuses a
//! builtin that picks, orders, finds or merges (`max`, `object.get`:
//! `rego::data_numbers::MEETS`) whose arguments hold two numbers of such
//! a number's double ([`meeting`]), and natively a set or object being built that meets
//! one again, or a key lookup that finds one, refuses ([`member_refusal`],
//! `native::terms`, `native::rules`); on regorus the coarse refusal above
//! covers them. A native answer whose value holds such a number (the
//! double, where OPA's holds the exact decimal) refuses
//! ([`answer_refusal`], `policy::EnginePool`). [`check`]'s
//! refusals are a [`Refusal`], which native stops with instead of falling
//! back to regorus. What
//! the transports pass and where they install it is `protocol`'s and
//! `http`'s; this module knows regorus' values, not the wire.
//!
//! Two kinds of numbers come from elsewhere than a request's text. A
//! `regent test` case's arguments are YAML, read again for each number's
//! text by `testing` and handed in as texts ([`Spelled::from_texts`], the
//! same rules as [`scan`]'s; [`Spelled::with_texts`] adds an earlier
//! 2026-07-28 round's, whose texts its sealed `requestState` kept). An
//! elicitation reply on a 2025-11-25 session (parsed by rmcp) has no text
//! at all: [`Spelled::with_unseen`] keeps each
//! of their numbers but plain integers as spelled by hand in the ways
//! that refuse most (with an exponent and no decimal point, and with more
//! digits than a double holds), so every refusal above holds where it
//! would for any spelling of the value (`protocol::input::unseen_numbers`).

use std::cell::RefCell;
use std::sync::Arc;

use regorus::Value;

use crate::opa_builtins::numbers::{Spelling, spelling};

/// The numbers one request spelled otherwise than regent writes them, and
/// the request's text (the decision log writes its arguments from it).
#[derive(Debug, Clone, PartialEq)]
pub struct Spelled {
    numbers: Vec<Hand>,
    /// The request's text [`scan`] read, kept only when it found a number:
    /// with `--log-arguments`, the decision line writes the arguments'
    /// numbers from it as sent (`decisions::sent`). `None` when only a
    /// caller's claims spelled some ([`Spelled::joined`]).
    text: Option<Arc<[u8]>>,
}

/// One number spelled by hand.
#[derive(Debug, Clone, PartialEq)]
struct Hand {
    /// The number regent holds for it.
    held: Value,
    /// The request's text (`1.50`).
    text: Box<str>,
    /// What regent writes for `held` (`1.5`), or the nearest it holds.
    ours: Box<str>,
    /// Whether regent's numbers cannot hold it (more digits than a double).
    lost: bool,
    /// Whether `sprintf` of the bare number is the same in OPA and regent:
    /// OPA hands Go a number whose text has a decimal point as a number of
    /// its value (`1.50` is `float64 1.5`, `100.00` is `int64 100`), and
    /// `-0` as `int64 0`, as regent does; one with an exponent and no
    /// decimal point (`1E2`, `1e-7`) as its text, and an integral one with
    /// both (`2.0e0`) as a `float64` where regent has an integer.
    sprintf_same: bool,
    /// Whether it is an integer spelled with an exponent (`2E0`, `1e3`,
    /// `2.0e0`): OPA never reads such a text as an integer (a builtin that
    /// wants one, `substring`, `array.slice`, answers `must be integer
    /// number`), where regent holds the integral value and reads it as one.
    not_integer: bool,
    /// Whether only its reading as an integer differs ([`Hand::not_integer`]):
    /// regent writes no text of it whatever the spelling (`1e+16`), so the
    /// builtins that write numbers refuse it on their own, or write the
    /// same text as OPA.
    integer_only: bool,
    /// Whether a caller's claims spelled it, not the request
    /// ([`Spelled::joined`]): the refusal says which, and whom to ask.
    claim: bool,
    /// Where a number whose text regent never saw came from (`"an
    /// elicitation reply"`, [`Spelled::with_unseen`]): the refusal names
    /// it, and asks for an integer or a string rather than a spelling.
    unseen: Option<Box<str>>,
}

impl Spelled {
    /// The texts of the numbers, for logs and tests (`["1.50", "1E2"]`).
    pub fn texts(&self) -> Vec<&str> {
        self.numbers.iter().map(|h| &*h.text).collect()
    }

    /// The request's text this was scanned from, as its transport read it
    /// (`None` when only its caller's claims spelled numbers).
    pub fn text(&self) -> Option<&Arc<[u8]>> {
        self.text.as_ref()
    }

    /// The numbers a request's evaluations must see: its own (`request`,
    /// whose text is kept) and its caller's claims' (`claims`, the texts
    /// [`claim_numbers`] found in them). A claims' text that no longer
    /// reads as a number spelled by hand adds nothing.
    pub fn joined(request: Option<&Arc<Spelled>>, claims: &[Box<str>]) -> Option<Arc<Spelled>> {
        if claims.is_empty() {
            return request.cloned();
        }
        let claimed = claims
            .iter()
            .filter_map(|t| hand(t.as_bytes()))
            .map(|mut h| {
                h.claim = true;
                h
            });
        Spelled::extended(request, claimed, |x, h| x.text == h.text)
    }

    /// `base` (or no numbers) with each of `hands` it does not hold yet
    /// (`same` tells), in order; `None` when that holds no number. One way
    /// for every source of numbers to join a request's.
    fn extended(
        base: Option<&Arc<Spelled>>,
        hands: impl IntoIterator<Item = Hand>,
        same: impl Fn(&Hand, &Hand) -> bool,
    ) -> Option<Arc<Spelled>> {
        let mut joined = match base {
            Some(b) => Spelled::clone(b),
            None => Spelled {
                numbers: Vec::new(),
                text: None,
            },
        };
        for h in hands {
            if !joined.numbers.iter().any(|x| same(x, &h)) {
                joined.numbers.push(h);
            }
        }
        (!joined.numbers.is_empty()).then(|| Arc::new(joined))
    }

    /// The first number of `v` (any depth, keys too) spelled by hand, and
    /// whether only its bare `sprintf` would be the same.
    fn find(&self, v: &Value) -> Option<&Hand> {
        self.find_where(v, &|h| !h.integer_only)
    }

    /// The number spelled by hand, kept by `keep`, that regent holds as
    /// `v` (a number).
    fn held(&self, v: &Value, keep: impl Fn(&Hand) -> bool) -> Option<&Hand> {
        self.numbers.iter().find(|h| keep(h) && h.held == *v)
    }

    /// The first number spelled by hand kept by `keep`, wherever it is.
    fn any(&self, keep: impl Fn(&Hand) -> bool) -> Option<&Hand> {
        self.numbers.iter().find(|h| keep(h))
    }

    /// The first number of `values` (any depth, keys too) that regent
    /// cannot hold; at once `None` when the request spelled none.
    fn lost_in<'v>(&self, values: impl IntoIterator<Item = &'v Value>) -> Option<&Hand> {
        self.any(|h| h.lost)?;
        values
            .into_iter()
            .find_map(|v| self.find_where(v, &|h| h.lost))
    }

    /// The first number of `v` (any depth, keys too) spelled by hand and
    /// kept by `keep`.
    fn find_where(&self, v: &Value, keep: &dyn Fn(&Hand) -> bool) -> Option<&Hand> {
        match v {
            Value::Number(_) => self.held(v, keep),
            Value::Array(a) => a.iter().find_map(|x| self.find_where(x, keep)),
            Value::Set(s) => s.iter().find_map(|x| self.find_where(x, keep)),
            Value::Object(o) => o.iter().find_map(|(k, x)| {
                self.find_where(k, keep)
                    .or_else(|| self.find_where(x, keep))
            }),
            _ => None,
        }
    }
}

/// The numbers of `text`, a JSON request, spelled otherwise than regent
/// writes them; `None` when there is none (or `text` is not JSON: the
/// parser refuses it later). Integers of at most 18 digits, by far the
/// most numbers, are written as spelled (`-0` aside) and never parsed here.
pub fn scan(text: &[u8]) -> Option<Arc<Spelled>> {
    let numbers = numbers(text);
    (!numbers.is_empty()).then(|| {
        Arc::new(Spelled {
            numbers,
            text: Some(text.into()),
        })
    })
}

/// The numbers of `text`, a caller's claims as JSON (a token's decoded
/// payload), spelled otherwise than regent writes them, as their text
/// spelled them: what `Caller::spelled` keeps for [`Spelled::joined`]
/// (the claims' text itself is not kept: a decision line never holds it).
pub fn claim_numbers(text: &[u8]) -> Vec<Box<str>> {
    numbers(text).into_iter().map(|h| h.text).collect()
}

/// The numbers of `text` spelled by hand ([`scan`]'s walk).
fn numbers(text: &[u8]) -> Vec<Hand> {
    let mut numbers = Vec::new();
    let n = text.len();
    let mut i = 0;
    while i < n {
        match text[i] {
            b'"' => i = string_end(text, i + 1),
            b'-' | b'0'..=b'9' => {
                let start = i;
                i += 1;
                let mut plain = true;
                while i < n {
                    match text[i] {
                        b'0'..=b'9' => {}
                        b'.' | b'e' | b'E' | b'+' | b'-' => plain = false,
                        _ => break,
                    }
                    i += 1;
                }
                let token = &text[start..i];
                let digits = token.len() - usize::from(token[0] == b'-');
                if (plain && digits <= 18 && token != b"-0") || (!plain && written_so(token)) {
                    continue;
                }
                if let Some(hand) = hand(token)
                    && !numbers.contains(&hand)
                {
                    numbers.push(hand);
                }
            }
            _ => i += 1,
        }
    }
    numbers
}

/// Whether `token`, a number with a fraction or an exponent, is plainly
/// one regent writes so, without parsing it: `-?I.F` with no exponent, at
/// most 15 digits (any such decimal reads back from a double as itself,
/// so its shortest text is its own), `F` not ending in `0` unless it is
/// `0` alone (`100.0`, `-0.0` are regent's text of an integral float), at
/// least 1e-4 (regent writes smaller ones with an exponent). Anything else
/// is parsed ([`hand`]).
fn written_so(token: &[u8]) -> bool {
    let t = token.strip_prefix(b"-").unwrap_or(token);
    let Some(dot) = t.iter().position(|&b| b == b'.') else {
        return false;
    };
    let (int, frac) = (&t[..dot], &t[dot + 1..]);
    if int.is_empty()
        || frac.is_empty()
        || int.len() + frac.len() > 15
        || !frac.iter().all(u8::is_ascii_digit)
    {
        return false;
    }
    let zeros = frac.iter().take_while(|&&b| b == b'0').count();
    if frac.len() == 1 && frac[0] == b'0' {
        return true;
    }
    frac.last() != Some(&b'0') && (int != b"0" || zeros <= 3)
}

/// Where the string whose text starts at `from` ends (past its quote).
fn string_end(text: &[u8], mut from: usize) -> usize {
    // Most strings of a request are short (keys, names): a plain loop over
    // their first bytes costs less than setting up the vector search.
    let near = text.len().min(from + 24);
    while from < near {
        match text[from] {
            b'"' => return from + 1,
            b'\\' => from += 2,
            _ => from += 1,
        }
    }
    if from >= text.len() {
        return text.len();
    }
    while let Some(at) = memchr::memchr2(b'"', b'\\', &text[from..]) {
        let at = from + at;
        if text[at] == b'"' {
            return at + 1;
        }
        from = at + 2;
        if from >= text.len() {
            break;
        }
    }
    text.len()
}

/// `token` as one number spelled by hand, `None` when regent writes it so
/// (or it is not a JSON number).
fn hand(token: &[u8]) -> Option<Hand> {
    use serde::Deserialize;
    let text = std::str::from_utf8(token).ok()?;
    if !crate::opa_builtins::numbers::is_json_number(text) {
        return None;
    }
    // As the request's arguments reach a policy: `serde_json`, then
    // regorus' value (`policy::engine::input_as`).
    let parsed: serde_json::Value = serde_json::from_str(text).ok()?;
    let held = Value::deserialize(&parsed).ok()?;
    let exponent = text.contains(['e', 'E']);
    let integral =
        matches!(&held, Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0));
    let (ours, lost, integer_only) = match spelling(text, &held) {
        // An integer spelled with an exponent whose text regent never
        // writes (from 1e16: `sprintf::text_unknown`), as Python writes
        // `1e+16`: no text to refuse, but OPA reads no integer from it.
        // From 2^63 regent reads none either (`opa_builtins::int_operands`).
        Spelling::Kept if exponent && integral => {
            let int = match &held {
                Value::Number(n) => n.as_i64(),
                _ => None,
            };
            match int {
                Some(i) => (i.to_string(), false, true),
                None => return None,
            }
        }
        Spelling::Kept => return None,
        Spelling::Respelled(ours) => (ours, false, false),
        Spelling::Lost(ours) => (ours, true, false),
    };
    Some(Hand {
        held,
        text: text.into(),
        ours: ours.into(),
        lost,
        sprintf_same: integer_only || (!lost && !(exponent && (integral || !text.contains('.')))),
        not_integer: !lost && exponent && integral,
        integer_only,
        claim: false,
        unseen: None,
    })
}

thread_local! {
    /// The numbers of the request whose policies this thread evaluates.
    static CURRENT: RefCell<Option<Arc<Spelled>>> = const { RefCell::new(None) };
}

/// The numbers of the request whose policies this thread evaluates now
/// (inside [`with`]), for what records the request (its decision line).
pub fn current() -> Option<Arc<Spelled>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// `f` of the numbers of the request this thread evaluates now; `None`
/// outside [`with`].
fn in_current<R>(f: impl FnOnce(&Spelled) -> Option<R>) -> Option<R> {
    CURRENT.with(|c| c.borrow().as_deref().and_then(f))
}

/// Runs `f`, the evaluations of one request, with `spelled` its numbers
/// spelled by hand ([`check`] reads them). `None` runs `f` as it is.
pub fn with<R>(spelled: Option<&Arc<Spelled>>, f: impl FnOnce() -> R) -> R {
    let Some(spelled) = spelled else {
        return f();
    };
    struct Restore(Option<Arc<Spelled>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = before);
        }
    }
    let before = CURRENT.with(|c| c.borrow_mut().replace(spelled.clone()));
    let _restore = Restore(before);
    f()
}

/// Runs `f` without the numbers of the request this thread evaluates: for
/// rules that never refer to a request's value that may be a number
/// (`policy::EnginePool::with_request_numbers`), which no number of the
/// request can meet.
pub fn without<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<Spelled>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = before);
        }
    }
    let before = CURRENT.with(|c| c.borrow_mut().take());
    if before.is_none() {
        return f();
    }
    let _restore = Restore(before);
    f()
}

/// The builtins that write a number's text (the same list `rego/data_numbers`
/// reports data numbers for).
fn writes_text(name: &str) -> bool {
    crate::rego::data_numbers::TEXT_BUILTINS.contains(&name)
}

/// A refusal of [`check`]: the native evaluator stops with it
/// (`native::terms`), where a builtin's other errors go to regorus, which
/// raises them again; regorus' interpreter reaches [`check`] only for the
/// builtins `budget::install` shadows.
#[derive(Debug)]
pub(crate) struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

/// Refuses `name` given a number the request being evaluated spelled by
/// hand, when it writes that number's text: `json.marshal`, `yaml.marshal`
/// and the others write OPA's text of the spelling; `sprintf` of a bare
/// number spelled with a decimal point is answered (OPA and regent hand Go
/// the same value), of one without or inside a composite refused.
pub(crate) fn check(name: &str, args: &[Value]) -> anyhow::Result<()> {
    CURRENT.with(|c| {
        let current = c.borrow();
        let Some(spelled) = current.as_ref() else {
            return Ok(());
        };
        if !writes_text(name) {
            // Two numbers of the arguments that are one double to regent,
            // one of them a number it cannot hold: OPA, holding both
            // exactly, may pick, order, find or merge them otherwise
            // (`count` of an array counts both alike).
            if crate::rego::data_numbers::MEETS.contains(&name)
                && let Some(h) = meeting(spelled, args)
            {
                return Err(Refusal(lost_words(
                    h,
                    &format!("{name}, given two numbers regent holds as one double"),
                ))
                .into());
            }
            // One such number is enough for a builtin that reads its value
            // (`format_int`, `bits.and`, `round`, `time.add_date`): OPA
            // reads the exact decimal.
            if !passes_on(name)
                && let Some(h) = spelled.lost_in(args)
            {
                return Err(Refusal(lost_words(h, name)).into());
            }
            // A builtin that reads an integer as OPA does, given an integer
            // spelled with an exponent as such an operand: OPA refuses it
            // as not an integer (`IntOperand`), regent would answer. Every
            // other operand and builtin reads the number's value alike in
            // both (asked of OPA: `rego::data_numbers::INTEGER_BUILTINS`).
            let found = crate::rego::data_numbers::integer_operands(name)
                .iter()
                .find_map(|&i| match args.get(i) {
                    Some(x @ Value::Number(_)) => spelled.held(x, |h| h.not_integer),
                    _ => None,
                });
            return match found {
                None => Ok(()),
                Some(h) => Err(Refusal(not_integer(name, h)).into()),
            };
        }
        let found = if name == "sprintf" {
            match args.get(1) {
                Some(Value::Array(items)) => items.iter().find_map(|x| match x {
                    // Any of the spellings of this value (`1.00` and `1E0`
                    // are one number to regent).
                    Value::Number(_) => spelled.held(x, |h| !h.sprintf_same),
                    _ => spelled.find(x),
                }),
                _ => None,
            }
        } else {
            args.iter().find_map(|x| spelled.find(x))
        };
        match found {
            None => Ok(()),
            Some(h) => Err(Refusal(refusal(name, h)).into()),
        }
    })
}

/// Why an array indexed by `key` (a computed key, not a literal of the
/// policy) refuses: `key` is the value of an integer the request being
/// evaluated spelled with an exponent (`2E0`). OPA never reads such a text
/// as an integer, so its index into an array is undefined where regent's
/// is the member; matched by value, regent cannot tell whether this key is
/// that text or the same number from elsewhere (`2`, `count(x)`, a
/// literal), where OPA answers the member too: `None` when nothing was
/// spelled so. The native evaluator asks it only where the member exists
/// (out of range, both answer undefined).
///
/// A number regent cannot hold whose nearest double is an integer
/// (`1.0000000000000000001`) is refused too: OPA indexes by the exact
/// decimal, which is no integer, so its member is undefined (asked:
/// `["low", "mid"][n]` is undefined for that `n`), where regent would read
/// index 1.
pub(crate) fn index_refusal(key: &Value) -> Option<String> {
    in_current(|spelled| {
        if let Some(h) = spelled.held(key, |h| h.not_integer) {
            return Some(index_words(h, "indexes an array with a key of that value"));
        }
        let h = spelled.held(key, |h| h.lost)?;
        Some(lost_words(h, "array index"))
    })
}

/// Why a plan evaluated on regorus refuses a request holding an integer
/// spelled with an exponent, when the tool's policy indexes with a
/// computed key (`at`, `file:line:column`): regorus indexes inside its
/// interpreter, where regent cannot tell the array and the key apart, so
/// the whole evaluation fails closed. `None` when nothing was spelled so.
pub(crate) fn regorus_index_refusal(at: &str) -> Option<String> {
    in_current(|spelled| {
        // No array has 2^32 members (the request's size and the memory
        // budget bound them): a greater number indexes none, in OPA too.
        let h = spelled.any(|h| {
            h.not_integer && matches!(&h.held, Value::Number(n) if n.as_f64().is_some_and(|f| f.abs() < 4_294_967_296.0))
        })?;
        Some(index_words(
            h,
            &format!(
                "runs on regorus, where the tool's policy indexes with a computed key ({at}) that \
                 may be that number"
            ),
        ))
    })
}

/// Why comparing `a` with `b` (`op`, `>`) refuses: one of them is the
/// value of a number the request being evaluated spelled with more digits
/// than regent's numbers hold (`0.1000000000000000000001`), which OPA
/// compares exactly where regent compares the nearest double. Rounding
/// keeps order, so two numbers whose doubles differ compare alike in both;
/// only equal doubles may not (OPA, asked: `n > 0.1` is true, `n == 0.1`
/// false, for that `n`), and composites of one kind (arrays, sets, objects
/// compared whole) holding such a number are refused whole. `None` when
/// nothing was spelled so, or the answer cannot differ.
pub(crate) fn compare_refusal(op: &str, a: &Value, b: &Value) -> Option<String> {
    equal_refusal(a, b, || format!("comparison `{op}`"))
}

/// [`compare_refusal`]'s test, the refusal of `what()`.
fn equal_refusal(a: &Value, b: &Value, what: impl FnOnce() -> String) -> Option<String> {
    // Most comparisons are of strings, or of unequal numbers: decided
    // before the thread's numbers are looked at.
    match (a, b) {
        (Value::Number(_), Value::Number(_)) if same_double(a, b) => {}
        (Value::Array(_), Value::Array(_))
        | (Value::Set(_), Value::Set(_))
        | (Value::Object(_), Value::Object(_)) => {}
        _ => return None,
    }
    in_current(|spelled| {
        spelled.any(|h| h.lost)?;
        let h = match (a, b) {
            (Value::Number(_), Value::Number(_)) => {
                spelled.any(|h| h.lost && (same_double(&h.held, a) || same_double(&h.held, b)))?
            }
            (Value::Array(_), Value::Array(_))
            | (Value::Set(_), Value::Set(_))
            | (Value::Object(_), Value::Object(_)) => spelled
                .find_where(a, &|h| h.lost)
                .or_else(|| spelled.find_where(b, &|h| h.lost))?,
            _ => return None,
        };
        Some(lost_words(h, &what()))
    })
}

/// The number regent cannot hold of which `values` (any depth, keys too)
/// hold two numbers of its double (`[n, 0.1]` for
/// `n = 0.1000000000000000000001`): a builtin given them may pick, order,
/// find or merge them where OPA, holding them exactly, tells them apart.
/// `None` when there is none (at once when nothing was spelled so).
fn meeting<'s>(spelled: &'s Spelled, values: &[Value]) -> Option<&'s Hand> {
    /// Whether `v` holds the second number of `held`'s double, counting
    /// those seen in `n`.
    fn second(v: &Value, held: &Value, n: &mut u8) -> bool {
        match v {
            Value::Number(_) => {
                *n += u8::from(same_double(v, held));
                *n >= 2
            }
            Value::Array(a) => a.iter().any(|x| second(x, held, n)),
            Value::Set(s) => s.iter().any(|x| second(x, held, n)),
            Value::Object(o) => o
                .iter()
                .any(|(k, x)| second(k, held, n) || second(x, held, n)),
            _ => false,
        }
    }
    spelled.numbers.iter().filter(|h| h.lost).find(|h| {
        let mut n = 0;
        values.iter().any(|v| second(v, &h.held, &mut n))
    })
}

/// Why a member or key `v` found again in a set or object being built,
/// or found by a lookup (`what`: `"set member"`), refuses: `v` is, or
/// holds, a number of the same double as one the request spelled with
/// more digits than regent holds. OPA, holding both exactly, may keep
/// two members where regent keeps one, or find none (asked:
/// `count({n, 0.1})` is 2, `{0.1: "x"}[n]` undefined). `None` when
/// nothing was spelled so, or the answer cannot differ.
pub(crate) fn member_refusal(what: &str, v: &Value) -> Option<String> {
    equal_refusal(v, v, || what.to_string())
}

/// Why a native answer holding a number regent cannot hold refuses: the
/// rule's value (`meta := {"v": input.arguments.n}`) would hold the
/// nearest double where OPA's holds the exact decimal the request spelled
/// (`0.1` against `0.1000000000000000000001`). Matched by value: a `0.1`
/// the policy wrote itself is refused too when the request holds such a
/// number. A plan on regorus refused the request before it evaluated
/// ([`regorus_lost_refusal`]). `None` when nothing was spelled so, or the
/// values hold none.
pub(crate) fn answer_refusal(values: &[Value]) -> Option<String> {
    lost_refusal("the rule's value", values)
}

/// Why `what` (an operator, a builtin) refuses its operands `values`: one
/// is, or holds, a number the request spelled with more digits than
/// regent holds. OPA computes on its exact decimal
/// (`4.999999999999999999 * 3` is 14.999999999999999997, `% 2` of
/// 2^64 + 1 is 1, `format_int` of it in base 16 ends in `1`), regent would
/// on the nearest double (`5`, 2^64). Matched by value, so the same double from elsewhere refuses too
/// while the request holds such a number. `None` when nothing was spelled
/// so, or no operand holds one.
pub(crate) fn lost_refusal<'v>(
    what: &str,
    values: impl IntoIterator<Item = &'v Value>,
) -> Option<String> {
    in_current(|spelled| Some(lost_words(spelled.lost_in(values)?, what)))
}

/// The texts of the numbers the request spelled with more digits than
/// regent holds that regent holds as `v` (matched by value: `v` may as well
/// be the same double from elsewhere, `5` for `4.999999999999999999`, which
/// the caller must allow for); none when `v` is no such number.
pub(crate) fn lost_texts(v: &Value) -> Vec<Box<str>> {
    in_current(|spelled| match v {
        Value::Number(_) => Some(
            spelled
                .numbers
                .iter()
                .filter(|h| h.lost && h.held == *v)
                .map(|h| h.text.clone())
                .collect(),
        ),
        _ => None,
    })
    .unwrap_or_default()
}

/// Builtins that only pick, order, count, test or pass values on: given a
/// number regent cannot hold, they answer as OPA does unless two numbers
/// of its double meet ([`meeting`]), and what they pass on is judged
/// where it is compared or answered. Every other builtin reads the
/// number's value (`format_int`, `bits.and`, `round`, `time.add_date`,
/// `array.slice`'s offsets) and refuses it ([`check`]): OPA reads the
/// exact decimal.
fn passes_on(name: &str) -> bool {
    matches!(
        name,
        "max"
            | "min"
            | "sort"
            | "count"
            | "type_name"
            | "is_number"
            | "is_string"
            | "is_boolean"
            | "is_array"
            | "is_set"
            | "is_object"
            | "is_null"
            | "array.concat"
            | "array.reverse"
            | "object.get"
            | "object.keys"
            | "object.union"
            | "object.union_n"
            | "object.remove"
            | "object.filter"
            | "object.subset"
            | "json.filter"
            | "json.remove"
            | "union"
            | "intersection"
            | "walk"
    )
}

/// Whether the request this thread evaluates holds a number regent cannot
/// hold: read once before a set or object is built, so that its members
/// are looked at ([`member_refusal`]) only then.
pub(crate) fn holds_lost() -> bool {
    in_current(|spelled| spelled.any(|h| h.lost).map(|_| ())).is_some()
}

/// Whether numbers `a` and `b` are equal, or the same double (a policy's
/// integer literal is held exactly, `12345678901234567890122`, where the
/// request's number is held as its nearest double).
fn same_double(a: &Value, b: &Value) -> bool {
    // regorus' `as_f64` is exact or nothing; past 2^53 the nearest double
    // is read from the number's decimal text (rare: big numbers only).
    let nearest = |v: &Value| match v {
        Value::Number(n) => n
            .as_f64()
            .or_else(|| n.format_decimal().parse::<f64>().ok()),
        _ => None,
    };
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => {
            a == b || matches!((nearest(a), nearest(b)), (Some(x), Some(y)) if x == y)
        }
        _ => false,
    }
}

/// Why a plan evaluated on regorus refuses a request holding a number
/// regent's numbers cannot hold: regorus compares inside its interpreter,
/// where regent cannot tell which comparison meets it, so the whole
/// evaluation fails closed. `None` when nothing was spelled so.
pub(crate) fn regorus_lost_refusal() -> Option<String> {
    in_current(|spelled| {
        let h = spelled.any(|h| h.lost)?;
        Some(lost_words(
            h,
            "this evaluation (it runs on regorus, where regent cannot see the comparisons)",
        ))
    })
}

/// The refusal of `what` given `h`, a number regent's numbers cannot hold,
/// which OPA compares exactly: who spelled it, the nearest double, the fix.
fn lost_words(h: &Hand, what: &str) -> String {
    let Hand { text, ours, .. } = h;
    let (who, send) = who_and_fix(h, " with at most 17 significant digits, or as a string");
    format!(
        "{what}: {who} spelled the number {text}, which regent's numbers cannot hold (the \
         nearest is {ours}) and OPA compares exactly: not supported by regent, which refuses \
         rather than answer otherwise; {send}"
    )
}

/// The refusal of an index by `h`'s value: who spelled it, what OPA does,
/// what the policy did (`did`), the fix.
fn index_words(h: &Hand, did: &str) -> String {
    let Hand { text, ours, .. } = h;
    let (who, fix) = who_and_fix(h, " without an exponent");
    let int = ours.trim_end_matches(".0");
    format!(
        "array index: {who} spelled the number {text} with an exponent, which OPA never reads as \
         an integer (an array indexed by it is undefined) where regent reads {int}; this \
         evaluation {did}: not supported by regent, which refuses rather than answer otherwise; \
         {fix}, or have the policy find the member by iterating (`some i, x in arr; i == n`), \
         which OPA answers alike whatever the spelling"
    )
}

/// Why `name`, which does not write text, refuses `h`, an integer spelled
/// with an exponent.
fn not_integer(name: &str, h: &Hand) -> String {
    let Hand { text, ours, .. } = h;
    let (who, fix) = who_and_fix(h, " without an exponent");
    format!(
        "{name}: {who} spelled the number {text} with an exponent, which OPA never reads as \
         an integer (a builtin that wants one answers `must be integer number`) where regent \
         reads {ours} as one: not supported by regent, which refuses rather than answer otherwise; \
         {fix}, or compare it instead"
    )
}

/// Who spelled `h` (the request, the caller's claims, or where a number
/// whose text regent never saw came from) and how to spell it otherwise,
/// ending in `how` (`" without an exponent"`): one wording for every
/// refusal. A number regent never saw the text of cannot be respelled:
/// the fix is to have it given as an integer or a string.
fn who_and_fix(h: &Hand, how: &str) -> (String, String) {
    if let Some(whose) = &h.unseen {
        (
            whose.to_string(),
            "have it given as an integer or a string (in the schema it is asked with)".into(),
        )
    } else if h.claim {
        (
            "the caller's claims".into(),
            format!("have the token's issuer (or the caller document) spell the claim{how}"),
        )
    } else {
        ("the request".into(), format!("send the number{how}"))
    }
}

/// Why `name` refuses `h`: what OPA writes, what regent would, the fix.
fn refusal(name: &str, h: &Hand) -> String {
    let Hand { text, ours, .. } = h;
    if h.lost {
        let (who, send) = who_and_fix(h, " with at most 17 significant digits");
        format!(
            "{name}: {who} spelled the number {text}, which OPA writes back as spelled and \
             regent's numbers cannot hold (the nearest is {ours}): not supported by regent, which \
             refuses rather than write another text; {send}, or compare it instead of writing it"
        )
    } else {
        let (who, send) = who_and_fix(h, &format!(" as JSON writers spell it ({ours})"));
        format!(
            "{name}: {who} spelled the number {text}, which OPA writes back as spelled where \
             regent would write {ours}: not supported by regent, which refuses rather than write \
             another text; {send}, or compare it instead of writing it"
        )
    }
}

#[cfg(test)]
mod tests;

/// Numbers written down outside a request's text, as their file spells
/// them: a `regent test` case's arguments (`testing::cases`), whose YAML
/// parser keeps the value and drops the spelling. Each text is read as a
/// request's number is ([`hand`]: `serde_json`, then the same
/// `opa_builtins::numbers::spelling` decides whether regent writes it
/// otherwise), so a case answers as `serve` would answer the JSON text the
/// case spells; whoever passes the texts gives the case those numbers as
/// `serde_json` reads them. No request text is kept (`text()` is `None`).
/// `None` when none is spelled by hand.
impl Spelled {
    pub fn from_texts<'a>(texts: impl IntoIterator<Item = &'a str>) -> Option<Arc<Spelled>> {
        Spelled::with_texts(None, texts)
    }

    /// `base` with the numbers of `texts` ([`Spelled::from_texts`]) that
    /// it does not hold yet: an earlier round's, sealed in a 2026-07-28
    /// `requestState` as their requests spelled them.
    pub fn with_texts<'a>(
        base: Option<&Arc<Spelled>>,
        texts: impl IntoIterator<Item = &'a str>,
    ) -> Option<Arc<Spelled>> {
        let hands = texts.into_iter().filter_map(|t| hand(t.as_bytes()));
        Spelled::extended(base, hands, |x, h| x.text == h.text)
    }
}

/// Whether `text` is a number as JSON spells it (the grammar only: `1e400`
/// is one, out of every reader's range), for readers of other formats that
/// must tell a JSON number from one only their format spells (`0x10`).
pub fn is_json_number(text: &str) -> bool {
    crate::opa_builtins::numbers::is_json_number(text)
}

/// The numbers of values whose text regent never saw, joined to `base`:
/// an elicitation reply on a 2025-11-25 session, which rmcp parses before
/// regent sees it, or one carried from an earlier round in a sealed
/// `requestState` that kept no texts of its numbers (sealed by an older
/// regent), which holds regent's own text of it. `serde_json`
/// reads an integer without fraction or exponent (`2`) as one, so its text
/// is known; any other number (`2.0`, `1.50`, `2E0`, `1E2`, a 20-digit
/// integer past `u64`) arrives as a double whose text may have been any of
/// those. Such a number is kept twice, exactly failing closed: as spelled
/// otherwise than regent writes it, with an exponent and no decimal point
/// (what writes its text and, integral, what reads it as an integer or
/// indexes by it refuses, as for `2E0` or `15E-1`), and as one regent may
/// not hold (what compares it with an equal double refuses, and a plan on
/// regorus refuses the request, as for `1.50000000000000000001`): each
/// refuses where it would for any spelling of that value. `whose` names
/// where the numbers came from, in the refusal (`an elicitation reply`).
impl Spelled {
    pub fn with_unseen<'a>(
        base: Option<&Arc<Spelled>>,
        values: impl IntoIterator<Item = &'a serde_json::Value>,
        whose: &str,
    ) -> Option<Arc<Spelled>> {
        use serde::Deserialize;
        fn numbers<'v>(v: &'v serde_json::Value, out: &mut Vec<&'v serde_json::Number>) {
            match v {
                serde_json::Value::Number(n) => out.push(n),
                serde_json::Value::Array(a) => a.iter().for_each(|x| numbers(x, out)),
                serde_json::Value::Object(o) => o.values().for_each(|x| numbers(x, out)),
                _ => {}
            }
        }
        let mut found = Vec::new();
        values.into_iter().for_each(|v| numbers(v, &mut found));
        let mut hands = Vec::new();
        for n in found {
            if n.is_u64() || n.is_i64() {
                // Its text is its digits (JSON has no other).
                hands.extend(hand(n.to_string().as_bytes()));
                continue;
            }
            let Some(f) = n.as_f64() else { continue };
            let Ok(held) = Value::deserialize(&serde_json::Value::Number(n.clone())) else {
                continue;
            };
            // The shortest text of the double, which reads back as it.
            let sci = format!("{f:e}");
            let ours = match spelling(&sci, &held) {
                Spelling::Respelled(o) | Spelling::Lost(o) => o,
                Spelling::Kept => sci,
            };
            let text: Box<str> = format!(
                "{ours} (regent cannot see its text: it may have been spelled otherwise or held more digits)"
            )
            .into();
            let integral = f.fract() == 0.0;
            let unseen = Hand {
                held,
                text,
                ours: ours.into(),
                lost: false,
                sprintf_same: false,
                not_integer: integral,
                // Its text is unknown: the builtins that write numbers
                // refuse it too.
                integer_only: false,
                claim: false,
                unseen: Some(whose.into()),
            };
            let lost = Hand {
                lost: true,
                not_integer: false,
                ..unseen.clone()
            };
            hands.push(unseen);
            hands.push(lost);
        }
        Spelled::extended(base, hands, Hand::eq)
    }
}
