//! Native answers for the regorus builtins that policies call on every
//! request: `split` by a non-empty separator, `sprintf` with a constant
//! format of plain verbs, `regex.match` and `glob.match` with constant
//! patterns.
//!
//! Why (issue 17): regorus' own versions are general, so they pay for what a
//! typical call never needs. Its `sprintf` walks the format char by char and
//! checks a memory limit after every char it quotes; its `split` sets up a
//! substring searcher even for `"/"`. On the shipped `manage_files` policy
//! those two were 6.2k of the 13.8k instructions the policy added to a
//! resolve. Its `regex.match` and `glob.match` compile the pattern on every
//! call (180k and 300k instructions for short ones); a constant pattern is
//! compiled here once, at load, as `opa_builtins` compiles it for every
//! call: a regex in Go's syntax translated into the `regex` crate's
//! (`opa_builtins::regex`), a glob as gobwas reads it (`opa_builtins::glob`).
//!
//! Each answer here covers only argument shapes whose answer is plainly
//! the builtin's (regorus', or OPA's where `opa_builtins` gives it) and
//! returns `None` for everything else, so the caller (`budget::call`) runs
//! the builtin, which then also raises its errors. The memory guard charges before either runs, so the budget is the
//! same on both paths. In debug builds every native evaluation is compared
//! with regorus' (`policy::EnginePool::eval`), which makes the test suite a
//! differential test of this module; `tests` below adds the edge cases.
//!
//! This module knows regorus' values; it knows nothing of the syntax tree
//! (the lowering picks a [`Fast`] when it builds a call) or of budgets.

use regex::Regex;
use regorus::Value;

use crate::opa_builtins::glob::Glob;

/// A builtin call answered here when its arguments allow.
#[derive(Debug)]
pub enum Fast {
    /// `split(s, sep)`.
    Split,
    /// `sprintf(format, args)` with this constant `format`.
    Sprintf(Format),
    /// `regex.match(pattern, s)` with this constant pattern, compiled once.
    RegexMatch(Regex),
    /// `glob.match(pattern, delimiters, s)` with both constant, compiled
    /// once as OPA reads it (`opa_builtins::glob`).
    GlobMatch(Glob),
}

/// A `sprintf` format split at its verbs, once, at load.
#[derive(Debug)]
pub struct Format {
    pieces: Vec<Piece>,
    verbs: usize,
    /// The longest output the literal pieces make, to size the buffer.
    literal: usize,
}

#[derive(Debug)]
enum Piece {
    Text(String),
    /// One of `s`, `v`, `q`, `d`, without width or precision.
    Verb(char),
}

impl Fast {
    /// The fast version of builtin `name`; `consts` holds each argument
    /// that is a constant (a format, a pattern), `None` for the others.
    pub fn of(name: &str, consts: &[Option<&Value>]) -> Option<Fast> {
        let constant = || match consts.first()?.as_ref()? {
            Value::String(s) => Some(s.as_ref()),
            _ => None,
        };
        match name {
            "split" => Some(Fast::Split),
            "sprintf" => Format::parse(constant()?).map(Fast::Sprintf),
            // regorus compiles the pattern on every call (its pattern cache
            // is a feature we leave off): ~180k instructions for a short
            // one, four times a whole resolve.
            // Go's syntax, translated (`opa_builtins::regex`); a pattern
            // refused there is not compiled here, and each call raises the
            // refusal.
            "regex.match" => crate::opa_builtins::regex::compile(constant()?)
                .ok()
                .map(Fast::RegexMatch),
            // A pattern OPA refuses is not compiled here: each call raises
            // the error through `opa_builtins`.
            "glob.match" => Glob::new(constant()?, (*consts.get(1)?)?)
                .ok()
                .map(Fast::GlobMatch),
            _ => None,
        }
    }

    /// The builtin's value for `args`, when this module can give exactly
    /// regorus' answer; `None` to leave the call to regorus.
    pub fn answer(&self, args: &[Value]) -> Option<Value> {
        match self {
            Fast::Split => split(args),
            Fast::Sprintf(format) => format.apply(args),
            Fast::RegexMatch(re) => match args {
                [_, Value::String(s)] => Some(Value::Bool(re.is_match(s))),
                _ => None,
            },
            Fast::GlobMatch(glob) => match args {
                [_, _, Value::String(s)] => Some(Value::Bool(glob.is_match(s))),
                _ => None,
            },
        }
    }
}

/// regorus splits with `str::split` unless the separator is empty (then by
/// chars, Go's way); with a separator of one byte `str::split` by char finds
/// it with memchr instead of a two-way searcher.
fn split(args: &[Value]) -> Option<Value> {
    let [Value::String(s), Value::String(sep)] = args else {
        return None;
    };
    let part = |p: &str| Value::String(p.into());
    let parts: Vec<Value> = match sep.as_bytes() {
        [] => return None,
        &[b] if b.is_ascii() => s.split(char::from(b)).map(part).collect(),
        _ => s.split(sep.as_ref()).map(part).collect(),
    };
    Some(Value::from(parts))
}

impl Format {
    /// The format's pieces when every verb is one this module answers
    /// (`%s`, `%v`, `%q`, `%d`, `%%`) with no width, precision or flag;
    /// `None` otherwise, leaving every call of it to regorus.
    fn parse(format: &str) -> Option<Format> {
        let mut pieces = Vec::new();
        let mut text = String::new();
        let mut verbs = 0;
        let mut chars = format.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                text.push(c);
                continue;
            }
            match chars.next()? {
                '%' => text.push('%'),
                v @ ('s' | 'v' | 'q' | 'd') => {
                    if !text.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut text)));
                    }
                    pieces.push(Piece::Verb(v));
                    verbs += 1;
                }
                _ => return None,
            }
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        let literal = pieces
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.len(),
                Piece::Verb(_) => 0,
            })
            .sum();
        Some(Format {
            pieces,
            verbs,
            literal,
        })
    }

    /// `sprintf(format, args)` when `args` is an array of one value per
    /// verb, each of a kind whose text regorus writes the way it is written
    /// here.
    fn apply(&self, args: &[Value]) -> Option<Value> {
        let [_, Value::Array(values)] = args else {
            return None;
        };
        if values.len() != self.verbs {
            // Too few or too many: regorus' error.
            return None;
        }
        let mut out = String::with_capacity(
            self.literal + values.iter().map(text_len).sum::<usize>() + 2 * self.verbs,
        );
        let mut values = values.iter();
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Verb(verb) => verb_of(&mut out, *verb, values.next()?)?,
            }
        }
        Some(Value::String(out.into()))
    }
}

/// A string argument's length, for the buffer's size.
fn text_len(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        _ => 0,
    }
}

/// Writes `value` as OPA's `sprintf` (`opa_builtins::sprintf`) writes it
/// for `verb`; `None` for a pairing left to it.
fn verb_of(out: &mut String, verb: char, value: &Value) -> Option<()> {
    match (verb, value) {
        // `%s` and `%v` write a string as it is, and `null` and booleans as
        // their Rego text.
        ('s' | 'v', Value::String(s)) => out.push_str(s),
        ('s' | 'v', Value::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
        ('s' | 'v', Value::Null) => out.push_str("null"),
        // `%v` and `%d` of an integer: Go's decimal digits, which are
        // regorus' `format_decimal` where that is plainly the integer's
        // digits. A float can be integral and still print otherwise (`-0.0`
        // as "-0", 2^64 as "18446744073709552000", found by `differential`),
        // and `%s` of a number is Go's `%!s(int64=1)`: both left to
        // `opa_builtins`.
        ('v' | 'd', Value::Number(n)) => {
            let digits = n.format_decimal();
            let exact = n.as_i64().map(|i| i.to_string()) == Some(digits.clone())
                || n.as_u64().map(|u| u.to_string()) == Some(digits.clone());
            // An integral float from 1e16 was spelled `1e+16` or
            // `1.2e+17` by the client, text or a float64 to OPA (below,
            // `4.0` is an int64 to OPA): `opa_builtins` refuses it.
            let float = n.format_decimal_with_width(1).contains('.');
            if !exact || (float && n.as_f64().is_some_and(|f| f.abs() >= 1e16)) {
                return None;
            }
            out.push_str(&digits);
        }
        // `%q` of printable ASCII: Go's quoting escapes only `"` and `\`
        // there. Control and non-ASCII chars take Go's escape rules, which
        // stay regorus'.
        ('q', Value::String(s)) => {
            if !s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
                return None;
            }
            out.push('"');
            for c in s.chars() {
                if matches!(c, '"' | '\\') {
                    out.push('\\');
                }
                out.push(c);
            }
            out.push('"');
        }
        _ => return None,
    }
    Some(())
}
