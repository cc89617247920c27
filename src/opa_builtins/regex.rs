//! OPA's regex builtins: Go's RE2 syntax (`regexp/syntax`), translated into
//! the Rust `regex` crate's, which regorus matches with.
//!
//! The two syntaxes share most of their text but not all of its meaning:
//! - Go's `\d`, `\s`, `\w` and `\b` are ASCII, Rust's Unicode: translated
//!   into ASCII classes (`[0-9]`, `[\t\n\f\r ]`, `[0-9A-Za-z_]`) and
//!   `(?-u:\b)`.
//! - Go reads a `{` that does not open a repetition (`a{`, `{1`, `x{,2}`)
//!   as a literal, Rust refuses it; Go has `\Q…\E` and octal escapes
//!   (`\012`), Rust has neither: written as literals here.
//! - Rust accepts what Go refuses: `\u0041`, `\<`, `(?x)`, `(?u)`, a
//!   repetition of a repetition (`a**`, `a?*`), a count over 1000, nested
//!   classes and class operators (`[a[b]]`, `[a&&b]`, where Go's `[` and
//!   `&` are literal): Go's errors are given as Go gives them.
//! - A `\p{…}` other than a general category's short name (`L`, `Lu`) or
//!   `Any` is refused (an error, "not supported by regent"): which names
//!   Go accepts (scripts, long and loose names such as `Letter`) and the
//!   Unicode version of its tables change with Go's release.
//!
//! `translate` is also what `rego/portability` runs on a constant pattern
//! at load (`opa-regex-syntax`), and what `policy/builtins` compiles a
//! constant `regex.match` pattern with.

use std::fmt::Write as _;

use regex::{Regex, RegexBuilder};
use regorus::Value;

/// Why a Go pattern has no Rust translation here.
#[derive(Debug, PartialEq)]
pub enum Refused {
    /// Go's own error: the pattern does not compile in OPA.
    Go(String),
    /// A pattern whose meaning regent does not reproduce for certain.
    Unsure(String),
    /// A pattern past the compiled-size bound (regorus' own).
    Limit(String),
}

/// regorus' bound on a compiled pattern (`builtins/regex.rs`).
const SIZE_LIMIT: usize = 100 * 1024;

/// Go's bound on a repetition count.
const MAX_REPEAT: u32 = 1000;

/// Go's general categories (`unicode.Categories`).
const CATEGORIES: &[&str] = &[
    "C", "Cc", "Cf", "Co", "Cs", "L", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me", "Mn", "N",
    "Nd", "Nl", "No", "P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc", "Sk", "Sm", "So",
    "Z", "Zl", "Zp", "Zs",
];

/// The Rust pattern with Go's meaning for Go pattern `p`.
pub fn translate(p: &str) -> Result<String, Refused> {
    let mut t = Translator {
        chars: p.chars().collect(),
        pos: 0,
        out: String::with_capacity(p.len() + 16),
        depth: 0,
    };
    t.run()?;
    Ok(t.out)
}

fn go(msg: impl std::fmt::Display) -> Refused {
    Refused::Go(format!("error parsing regexp: {msg}"))
}

struct Translator {
    chars: Vec<char>,
    pos: usize,
    out: String,
    depth: usize,
}

/// What the last piece written was, for Go's repetition rules.
#[derive(Clone, Copy, PartialEq)]
enum Last {
    /// Nothing to repeat: the start, after `(` or `|`.
    None,
    /// An operand: a literal, class, group, anchor.
    Operand,
    /// A repetition (`*`, `+`, `?`, `{n,m}`, maybe lazy).
    Repeat,
    /// A repetition, then a flag group (`a*(?i)`): Go repeats the
    /// repetition, which has no Rust spelling here.
    RepeatThenFlags,
}

impl Translator {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn rest(&self) -> String {
        self.chars[self.pos..].iter().collect()
    }

    fn literal(&mut self, c: char) {
        if c.is_alphanumeric() && c.is_ascii() || c == ' ' || c == '_' {
            self.out.push(c);
        } else {
            let _ = write!(self.out, "\\x{{{:x}}}", c as u32);
        }
    }

    /// A repetition operator `op` read from `start` (`*`, `+`, `?` or a
    /// count): its lazy `?` if one follows, Go's checks, then the output.
    fn repetition(
        &mut self,
        mut op: String,
        last: Last,
        last_op_start: usize,
        start: usize,
    ) -> Result<(), Refused> {
        if self.peek() == Some('?') {
            self.pos += 1;
            op.push('?');
        }
        self.repeat(last, &op, last_op_start, start)?;
        self.out.push_str(&op);
        Ok(())
    }

    fn run(&mut self) -> Result<(), Refused> {
        let mut last = Last::None;
        // The text of the last repetition operator, for Go's message.
        let mut last_op_start = 0;
        while let Some(c) = self.peek() {
            let start = self.pos;
            self.pos += 1;
            match c {
                '*' | '+' | '?' => {
                    self.repetition(String::from(c), last, last_op_start, start)?;
                    last = Last::Repeat;
                    last_op_start = start;
                }
                '{' => match self.counts() {
                    Some((lo, hi)) => {
                        if lo > MAX_REPEAT || hi.is_some_and(|h| h > MAX_REPEAT || h < lo) {
                            let text: String = self.chars[start..self.pos].iter().collect();
                            return Err(go(format!("invalid repeat count: `{text}`")));
                        }
                        let op: String = self.chars[start..self.pos].iter().collect();
                        self.repetition(op, last, last_op_start, start)?;
                        last = Last::Repeat;
                        last_op_start = start;
                    }
                    None => {
                        self.literal('{');
                        last = Last::Operand;
                    }
                },
                '(' => {
                    if self.group()? {
                        // `(?i)`: Go's stack is as it was.
                        if last == Last::Repeat {
                            last = Last::RepeatThenFlags;
                        }
                    } else {
                        last = Last::None;
                    }
                    continue;
                }
                ')' => {
                    if self.depth == 0 {
                        return Err(go(format!(
                            "unexpected ): `{}`",
                            self.chars.iter().collect::<String>()
                        )));
                    }
                    self.depth -= 1;
                    self.out.push(')');
                    last = Last::Operand;
                }
                '|' => {
                    self.out.push('|');
                    last = Last::None;
                }
                '^' | '$' | '.' => {
                    self.out.push(c);
                    last = Last::Operand;
                }
                '[' => {
                    self.class()?;
                    last = Last::Operand;
                }
                '\\' => {
                    self.escape(false)?;
                    last = Last::Operand;
                }
                c => {
                    self.literal(c);
                    last = Last::Operand;
                }
            }
        }
        if self.depth > 0 {
            return Err(go(format!(
                "missing closing ): `{}`",
                self.chars.iter().collect::<String>()
            )));
        }
        Ok(())
    }

    /// Go's checks of a repetition operator `op` written at `at`.
    fn repeat(&self, last: Last, op: &str, prev: usize, at: usize) -> Result<(), Refused> {
        match last {
            Last::None => Err(go(format!(
                "missing argument to repetition operator: `{op}`"
            ))),
            Last::Repeat => {
                let text: String = self.chars[prev..at].iter().collect();
                Err(go(format!(
                    "invalid nested repetition operator: `{text}{op}`"
                )))
            }
            Last::RepeatThenFlags => Err(Refused::Unsure(format!(
                "a repetition `{op}` of a repetition across a flag group"
            ))),
            Last::Operand => Ok(()),
        }
    }

    /// `{n}`, `{n,}`, `{n,m}` at the position after `{`: consumed when it
    /// is one, else `None` with nothing consumed (Go's literal `{`).
    fn counts(&mut self) -> Option<(u32, Option<u32>)> {
        let save = self.pos;
        let number = |t: &mut Self| -> Option<u32> {
            let s = t.pos;
            while t.peek().is_some_and(|c| c.is_ascii_digit()) {
                t.pos += 1;
            }
            if t.pos == s {
                return None;
            }
            let digits: String = t.chars[s..t.pos].iter().collect();
            // Go: a count past 1000 is an error, any length of digits.
            Some(digits.parse::<u32>().unwrap_or(u32::MAX))
        };
        let parsed = (|| {
            let lo = number(self)?;
            let hi = if self.peek() == Some(',') {
                self.pos += 1;
                if self.peek() == Some('}') {
                    None
                } else {
                    Some(number(self)?)
                }
            } else {
                Some(lo)
            };
            (self.peek() == Some('}')).then(|| {
                self.pos += 1;
                (lo, hi)
            })
        })();
        if parsed.is_none() {
            self.pos = save;
        }
        parsed
    }

    /// A group, the `(` read; `true` for a flag group `(?i)`, which
    /// opens nothing.
    fn group(&mut self) -> Result<bool, Refused> {
        if self.peek() != Some('?') {
            self.depth += 1;
            self.out.push('(');
            return Ok(false);
        }
        let rest = self.rest();
        let named = rest.strip_prefix("?P<").or_else(|| rest.strip_prefix("?<"));
        if let Some(after) = named {
            let Some(end) = after.find('>') else {
                return Err(go(format!("invalid named capture: `({rest}`")));
            };
            let name = &after[..end];
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(go(format!(
                    "invalid named capture: `({}>`",
                    &rest[..rest.len() - after.len() + end]
                )));
            }
            self.pos += rest.len() - after.len() + end + 1;
            self.depth += 1;
            let _ = write!(self.out, "(?P<{name}>");
            return Ok(false);
        }
        // Flags: `(?flags)` or `(?flags:`.
        self.pos += 1;
        let mut flags = String::new();
        let mut negated = false;
        loop {
            let Some(c) = self.peek() else {
                return Err(go(format!("missing closing ): `({rest}`")));
            };
            self.pos += 1;
            match c {
                'i' | 'm' | 's' | 'U' => flags.push(c),
                '-' if !negated => {
                    negated = true;
                    flags.push('-');
                }
                ':' | ')' => {
                    if flags.ends_with('-') || (flags.is_empty() && c == ')') {
                        return Err(go(format!(
                            "invalid or unsupported Perl syntax: `(?{flags}{c}`"
                        )));
                    }
                    self.out.push_str("(?");
                    self.out.push_str(&flags);
                    self.out.push(c);
                    if c == ':' {
                        self.depth += 1;
                    }
                    return Ok(c == ')');
                }
                _ => {
                    return Err(go(format!(
                        "invalid or unsupported Perl syntax: `(?{flags}{c}`"
                    )));
                }
            }
        }
    }

    /// A class `[…]`, the `[` read.
    fn class(&mut self) -> Result<(), Refused> {
        let start = self.pos - 1;
        let unclosed = |t: &Self| {
            go(format!(
                "missing closing ]: `{}`",
                t.chars[start..].iter().collect::<String>()
            ))
        };
        let mut out = String::from("[");
        if self.peek() == Some('^') {
            self.pos += 1;
            out.push('^');
        }
        let mut first = true;
        loop {
            let Some(c) = self.peek() else {
                return Err(unclosed(self));
            };
            if c == ']' && !first {
                self.pos += 1;
                break;
            }
            first = false;
            // `[:alpha:]` and `[:^alpha:]`.
            if c == '[' && self.chars.get(self.pos + 1) == Some(&':') {
                let rest = self.rest();
                if let Some(end) = rest[2..].find(":]") {
                    let name = &rest[2..2 + end];
                    let bare = name.strip_prefix('^').unwrap_or(name);
                    const POSIX: &[&str] = &[
                        "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower",
                        "print", "punct", "space", "upper", "word", "xdigit",
                    ];
                    if !POSIX.contains(&bare) {
                        return Err(go(format!("invalid character class range: `[:{name}:]`")));
                    }
                    let _ = write!(out, "[:{name}:]");
                    self.pos += 2 + end + 2;
                    continue;
                }
            }
            // One member: a character (maybe a range) or an escaped class.
            let lo = match self.class_char(&mut out)? {
                Some(lo) => lo,
                None => continue,
            };
            if self.peek() == Some('-') && self.chars.get(self.pos + 1).is_some_and(|&c| c != ']') {
                self.pos += 1;
                let mut ignored = String::new();
                let Some(hi) = self.class_char(&mut ignored)? else {
                    return Err(go("invalid character class range"));
                };
                if hi < lo {
                    return Err(go(format!("invalid character class range: `{lo}-{hi}`")));
                }
                let _ = write!(out, "\\x{{{:x}}}-\\x{{{:x}}}", lo as u32, hi as u32);
            } else {
                let _ = write!(out, "\\x{{{:x}}}", lo as u32);
            }
        }
        out.push(']');
        self.out.push_str(&out);
        Ok(())
    }

    /// One character of a class; `None` when it was an escaped class
    /// (`\d`, `\pL`), written to `out`.
    fn class_char(&mut self, out: &mut String) -> Result<Option<char>, Refused> {
        let Some(c) = self.peek() else {
            return Err(go("missing closing ]"));
        };
        self.pos += 1;
        if c != '\\' {
            return Ok(Some(c));
        }
        let before = std::mem::take(&mut self.out);
        let r = self.escape(true);
        let written = std::mem::replace(&mut self.out, before);
        match r? {
            Some(ch) => Ok(Some(ch)),
            None => {
                out.push_str(&written);
                Ok(None)
            }
        }
    }

    /// An escape, the `\` read. A single character is returned (and, out
    /// of a class, written); a class or assertion is written.
    fn escape(&mut self, in_class: bool) -> Result<Option<char>, Refused> {
        let Some(c) = self.peek() else {
            return Err(go("trailing backslash at end of expression: ``"));
        };
        self.pos += 1;
        let ch = match c {
            '1'..='7' if !self.peek().is_some_and(|d| ('0'..='7').contains(&d)) => {
                return Err(go(format!("invalid escape sequence: `\\{c}`")));
            }
            '0'..='7' => {
                let mut v = c.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match self.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            self.pos += 1;
                        }
                        None => break,
                    }
                }
                char::from_u32(v).unwrap_or('\0')
            }
            'x' => {
                let bad = |t: &Self| go(format!("invalid escape sequence: `\\x{}`", t.rest()));
                if self.peek() == Some('{') {
                    let rest = self.rest();
                    let Some(end) = rest.find('}') else {
                        return Err(bad(self));
                    };
                    let hex = &rest[1..end];
                    let v = (!hex.is_empty() && hex.chars().all(|h| h.is_ascii_hexdigit()))
                        .then(|| u32::from_str_radix(hex, 16).ok())
                        .flatten()
                        .and_then(char::from_u32);
                    let Some(v) = v else { return Err(bad(self)) };
                    self.pos += end + 1;
                    v
                } else {
                    let h: Vec<u32> = self.chars[self.pos..]
                        .iter()
                        .take(2)
                        .filter_map(|h| h.to_digit(16))
                        .collect();
                    if h.len() < 2 {
                        return Err(bad(self));
                    }
                    self.pos += 2;
                    char::from_u32(h[0] * 16 + h[1]).unwrap_or('\0')
                }
            }
            'a' => '\u{7}',
            'f' => '\u{c}',
            't' => '\t',
            'n' => '\n',
            'r' => '\r',
            'v' => '\u{b}',
            'd' | 'D' | 's' | 'S' | 'w' | 'W' => {
                let set = match c.to_ascii_lowercase() {
                    'd' => r"0-9",
                    's' => r"\t\n\x0C\r ",
                    _ => r"0-9A-Za-z_",
                };
                let neg = if c.is_ascii_uppercase() { "^" } else { "" };
                let _ = write!(self.out, "[{neg}{set}]");
                return Ok(None);
            }
            'p' | 'P' => {
                let name = if self.peek() == Some('{') {
                    let rest = self.rest();
                    let Some(end) = rest.find('}') else {
                        return Err(go(format!("invalid character class range: `\\{c}{rest}`")));
                    };
                    self.pos += end + 1;
                    rest[1..end].to_string()
                } else {
                    let Some(n) = self.peek() else {
                        return Err(go(format!("invalid character class range: `\\{c}`")));
                    };
                    self.pos += 1;
                    n.to_string()
                };
                let (neg, bare) = match name.strip_prefix('^') {
                    Some(b) => (c == 'p', b),
                    None => (c == 'P', name.as_str()),
                };
                let p = if neg { 'P' } else { 'p' };
                if bare == "Any" {
                    let _ = write!(self.out, "\\{p}{{Any}}");
                } else if CATEGORIES.contains(&bare) {
                    let _ = write!(self.out, "\\{p}{{gc={bare}}}");
                } else {
                    // A script, a long or loosely spelled category: which
                    // names Go's tables hold (and their Unicode version)
                    // changes with Go's release, so regent does not guess.
                    return Err(Refused::Unsure(format!(
                        "the Unicode class `\\{c}{{{name}}}`"
                    )));
                }
                return Ok(None);
            }
            'b' | 'B' | 'A' | 'z' if !in_class => {
                let text = match c {
                    'b' => r"(?-u:\b)",
                    'B' => r"(?-u:\B)",
                    'A' => r"\A",
                    _ => r"\z",
                };
                self.out.push_str(text);
                return Ok(None);
            }
            'Q' if !in_class => {
                let rest = self.rest();
                let (lit, quoted) = match rest.find("\\E") {
                    Some(end) => (&rest[..end], true),
                    None => (&rest[..], false),
                };
                let lit: Vec<char> = lit.chars().collect();
                self.pos += lit.len() + if quoted { 2 } else { 0 };
                for l in lit {
                    self.literal(l);
                }
                return Ok(None);
            }
            c if c.is_ascii() && !c.is_ascii_alphanumeric() => c,
            c => return Err(go(format!("invalid escape sequence: `\\{c}`"))),
        };
        if !in_class {
            self.literal(ch);
        }
        Ok(Some(ch))
    }
}

/// The compiled Rust regex of Go pattern `p`, or OPA's error (an
/// `Unsure` one says regent's limit).
pub fn compile(p: &str) -> Result<Regex, Refused> {
    let rust = translate(p)?;
    RegexBuilder::new(&rust)
        .size_limit(SIZE_LIMIT)
        .build()
        .map_err(|e| Refused::Limit(e.to_string()))
}

/// The builtin's answer for a refused pattern: Go's error, or regent's.
fn refusal(name: &str, r: Refused) -> Option<anyhow::Result<Value>> {
    match r {
        Refused::Go(e) => super::error(name, e),
        Refused::Unsure(what) => super::error(
            name,
            format!("{what} is not supported by regent (Go's RE2 and Rust's regex may differ)"),
        ),
        Refused::Limit(why) => super::error(name, format!("pattern past regent's limit: {why}")),
    }
}

/// `regex.match(pattern, s)`.
pub(crate) fn regex_match(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let (Value::String(p), Value::String(s)) = (&a[0], &a[1]) else {
        return None;
    };
    match compile(p) {
        Ok(re) => Some(Ok(Value::Bool(re.is_match(s)))),
        Err(r) => refusal("regex.match", r),
    }
}

/// `regex.is_valid(pattern)`: whether Go compiles it.
pub(super) fn is_valid(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let Value::String(p) = &a[0] else {
        return Some(Ok(Value::Bool(false)));
    };
    match compile(p) {
        Ok(_) => Some(Ok(Value::Bool(true))),
        Err(Refused::Go(_)) => Some(Ok(Value::Bool(false))),
        Err(r) => refusal("regex.is_valid", r),
    }
}

/// Go's `FindAllStringIndex(s, n)` (`n < 0`: all): an empty match right
/// after the previous match is skipped, and the search moves on by one
/// character after an empty match.
fn find_all(re: &Regex, s: &str, n: i64) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let (mut pos, mut prev_end) = (0, None);
    while (n < 0 || (out.len() as i64) < n) && pos <= s.len() {
        let Some(m) = re.find_at(s, pos) else { break };
        let mut accept = true;
        if m.end() == pos {
            if Some(m.start()) == prev_end {
                accept = false;
            }
            pos += s[pos..].chars().next().map_or(1, char::len_utf8);
        } else {
            pos = m.end();
        }
        prev_end = Some(m.end());
        if accept {
            out.push((m.start(), m.end()));
        }
    }
    out
}

/// The pattern at `a[at]` compiled, or the builtin's refusal; `None` when
/// it is not a string (regorus' type error).
fn pattern_at(
    name: &str,
    a: &[Value],
    at: usize,
) -> Option<Result<Regex, Option<anyhow::Result<Value>>>> {
    let Value::String(p) = &a[at] else {
        return None;
    };
    Some(compile(p).map_err(|r| refusal(name, r)))
}

/// `regex.split(pattern, s)`: Go's `Split(s, -1)`.
pub(crate) fn split(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let Value::String(s) = &a[1] else { return None };
    let re = match pattern_at("regex.split", a, 0)? {
        Ok(re) => re,
        Err(e) => return e,
    };
    let text = |t: &str| Value::from(t);
    if !re.as_str().is_empty() && s.is_empty() {
        return Some(Ok(Value::from(vec![text("")])));
    }
    let mut parts = Vec::new();
    let (mut beg, mut end) = (0, 0);
    for (start, stop) in find_all(&re, s, -1) {
        end = start;
        if stop != 0 {
            parts.push(text(&s[beg..end]));
        }
        beg = stop;
    }
    if end != s.len() {
        parts.push(text(&s[beg..]));
    }
    Some(Ok(Value::from(parts)))
}

/// `regex.find_n(pattern, s, n)`: Go's `FindAllString(s, n)`.
pub(super) fn find_n(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let (Value::String(s), Value::Number(n)) = (&a[1], &a[2]) else {
        return None;
    };
    // Go's `int`: a fraction, or an integer past 64 bits, is a type error.
    let Some(n) = n.as_i64() else {
        return super::error(
            "regex.find_n",
            "operand 3 must be integer number but got floating-point number",
        );
    };
    let re = match pattern_at("regex.find_n", a, 0)? {
        Ok(re) => re,
        Err(e) => return e,
    };
    let found: Vec<Value> = find_all(&re, s, n)
        .into_iter()
        .map(|(b, e)| Value::from(&s[b..e]))
        .collect();
    Some(Ok(Value::from(found)))
}

/// `regex.replace(s, pattern, value)`: Go's `ReplaceAllString`, `$1`,
/// `${name}` and `$$` expanded as Go expands them (as `regex` does).
pub(crate) fn replace(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let (Value::String(s), Value::String(value)) = (&a[0], &a[2]) else {
        return None;
    };
    let re = match pattern_at("regex.replace", a, 1)? {
        Ok(re) => re,
        Err(e) => return e,
    };
    let mut out = String::with_capacity(s.len());
    let (mut search, mut last_end) = (0, 0);
    while search <= s.len() {
        let Some(c) = re.captures_at(s, search) else {
            break;
        };
        let m = c.get(0)?;
        out.push_str(&s[last_end..m.start()]);
        // No second replacement for an empty match right after a match.
        if m.end() > last_end || m.start() == 0 {
            c.expand(value, &mut out);
        }
        last_end = m.end();
        let width = s[search..].chars().next().map_or(1, char::len_utf8);
        search = if search + width > m.end() {
            search + width
        } else if search + 1 > m.end() {
            search + 1
        } else {
            m.end()
        };
    }
    out.push_str(&s[last_end..]);
    Some(Ok(Value::from(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, s: &str) -> Result<bool, Refused> {
        compile(p).map(|re| re.is_match(s))
    }

    #[test]
    fn go_syntax_with_go_meaning() {
        // OPA's answers, from its own engine.
        assert_eq!(m(r"^\d+$", "١٢"), Ok(false));
        assert_eq!(m(r"^\w+$", "é"), Ok(false));
        assert_eq!(m(r"^\s$", "\u{a0}"), Ok(false));
        assert_eq!(m(r"a{", "a{"), Ok(true));
        assert_eq!(m(r"x{,2}", "x{,2}"), Ok(true));
        assert_eq!(m(r"\Qa.b\E", "a.b"), Ok(true));
        assert_eq!(m(r"\Qa.b\E", "axb"), Ok(false));
        assert_eq!(m(r"\101", "A"), Ok(true));
        assert_eq!(m(r"[a[]", "["), Ok(true));
        assert_eq!(m(r"[a&&b]", "&"), Ok(true));
        assert_eq!(m(r"\pL", "é"), Ok(true));
        assert_eq!(m(r"\bé", "é"), Ok(false));
        assert!(matches!(m(r"\u0041", "A"), Err(Refused::Go(_))));
        assert!(matches!(m(r"a**", "a"), Err(Refused::Go(_))));
        assert!(matches!(m(r"a?*", "a"), Err(Refused::Go(_))));
        assert!(matches!(m(r"a{1001}", "a"), Err(Refused::Go(_))));
        assert!(matches!(m(r"(?x)a", "a"), Err(Refused::Go(_))));
        assert!(matches!(m(r"\<", "<"), Ok(true)));
        assert!(matches!(m(r"\p{Letter}", "a"), Err(Refused::Unsure(_))));
        assert!(matches!(m(r"\p{Greek}", "α"), Err(Refused::Unsure(_))));
        assert_eq!(m(r"^*a", "a"), Ok(true));
        assert_eq!(m(r"[[:alpha:]]", "a"), Ok(true));
        assert!(matches!(m(r"\1", "a"), Err(Refused::Go(_))));
        assert_eq!(m(r"a*?b", "aab"), Ok(true));
        assert_eq!(m(r"(?i)A", "a"), Ok(true));
        assert_eq!(m(r"(?P<x>a)(?<y>b)", "ab"), Ok(true));
    }
}
