//! `glob.match` as OPA answers it: the pattern read by `gobwas/glob` (v0.2.3,
//! which OPA uses) with the given delimiters as separators.
//!
//! regorus hands the pattern to `globset` after rewriting delimiters into
//! `/` around a NUL placeholder, so its syntax and its answers differ from
//! OPA's: an unclosed `{` is an error there and an alternation that is
//! never closed here; a text holding a NUL is an error there; `[""]` as
//! delimiters is accepted there and a type error here. This module reads
//! the pattern as gobwas' lexer and parser do (their quirks included: a
//! NUL ends the token being read, a U+FFFD is "could not read rune", `}`
//! and `,` outside an alternation are text) and compiles the tree into an
//! anchored `regex` of the same meaning, which matches in linear time:
//! `*` any run of characters but the separators, `**` any run, `?` one
//! character but a separator, `[…]` `[!…]` `[a-z]` one character of (or
//! not of) the list or range, `{a,b}` either.
//!
//! gobwas' compiler answers an alternation whose every branch is empty
//! (`{}`, `{,}`) next to anything else in its own way (`{}x` never
//! matches, `x{}` panics): such a pattern is refused, an error, rather than
//! guessed. Everything else is gobwas' meaning, checked against OPA's own
//! engine by the differential test in `opa_builtins`.

use regex::{Regex, RegexBuilder};
use regorus::Value;

/// A compiled `glob.match` pattern with its separators.
#[derive(Debug)]
pub struct Glob {
    re: Regex,
}

/// The bound on a compiled pattern, as for regexes.
const SIZE_LIMIT: usize = 100 * 1024;

impl Glob {
    /// The pattern with the delimiters argument (`null`: no separator; an
    /// array of one-character strings, `.` when empty), or OPA's error.
    pub fn new(pattern: &str, delimiters: &Value) -> anyhow::Result<Glob> {
        let separators = separators(delimiters)?;
        let tree = parse(pattern).map_err(|e| anyhow::anyhow!("glob.match: {e}"))?;
        let mut re = String::from(r"\A(?:");
        regex_of(&tree, &separators, Place::Whole, &mut re)?;
        re.push_str(r")\z");
        let re = RegexBuilder::new(&re)
            .size_limit(SIZE_LIMIT)
            .build()
            .map_err(|_| anyhow::anyhow!("glob.match: pattern too large (regent's limit)"))?;
        Ok(Glob { re })
    }

    pub fn is_match(&self, s: &str) -> bool {
        self.re.is_match(s)
    }
}

/// `glob.match(pattern, delimiters, match)`; `None` (regorus' type error,
/// as OPA raises one) when the pattern or the text is not a string.
pub(super) fn glob_match(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let (Value::String(pattern), Value::String(s)) = (&a[0], &a[2]) else {
        return None;
    };
    Some(Glob::new(pattern, &a[1]).map(|g| Value::Bool(g.is_match(s))))
}

fn separators(delimiters: &Value) -> anyhow::Result<Vec<char>> {
    let items = match delimiters {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        _ => anyhow::bail!("glob.match: operand 2 must be one of {{array, null}}"),
    };
    let mut out = Vec::with_capacity(items.len());
    for d in items.iter() {
        let mut chars = match d {
            Value::String(d) => d.chars(),
            _ => anyhow::bail!("glob.match: operand 2 must be array of runes"),
        };
        match (chars.next(), chars.next()) {
            (Some(c), None) => out.push(c),
            _ => anyhow::bail!(
                "glob.match: operand 2 must be array of runes but got array containing string"
            ),
        }
    }
    if out.is_empty() {
        out.push('.');
    }
    Ok(out)
}

/// A node of gobwas' syntax tree.
#[derive(Debug, PartialEq)]
enum Node {
    Text(String),
    /// `*`
    Any,
    /// `**`
    Super,
    /// `?`
    Single,
    /// `[abc]`, `[!abc]`
    List(Vec<char>, bool),
    /// `[a-z]`, `[!a-z]`
    Range(char, char, bool),
    /// `{a,b}`: each branch a sequence.
    AnyOf(Vec<Vec<Node>>),
}

#[derive(Debug, PartialEq)]
enum Token {
    Eof,
    Text(String),
    Any,
    Super,
    Single,
    RangeOpen,
    RangeClose,
    Not,
    RangeLo(char),
    RangeHi(char),
    TermsOpen,
    TermsClose,
    Separator,
}

/// gobwas' lexer: runes read one by one, where the end of the pattern and
/// a NUL both read as the end (`eof` is rune 0 there).
struct Lexer {
    chars: Vec<char>,
    pos: usize,
    /// The width of the last rune read (0 at the end), to unread it.
    last: usize,
    terms: usize,
    error: Option<&'static str>,
    tokens: std::collections::VecDeque<Token>,
}

impl Lexer {
    /// The next rune; `'\0'` at the end.
    fn read(&mut self) -> char {
        let (c, w) = self.peek();
        self.pos += w;
        self.last = w;
        c
    }

    fn peek(&mut self) -> (char, usize) {
        match self.chars.get(self.pos) {
            None => ('\0', 0),
            // Go decodes U+FFFD as `utf8.RuneError`, which gobwas takes
            // for a broken rune.
            Some('\u{fffd}') => {
                self.error = Some("could not read rune");
                ('\0', 0)
            }
            Some(&c) => (c, 1),
        }
    }

    fn unread(&mut self) {
        self.pos -= self.last;
        self.last = 0;
    }

    fn next(&mut self) -> Result<Token, &'static str> {
        loop {
            if let Some(e) = self.error {
                return Err(e);
            }
            if let Some(t) = self.tokens.pop_front() {
                return Ok(t);
            }
            self.fetch();
        }
    }

    fn fetch(&mut self) {
        let c = self.read();
        match c {
            '\0' => self.tokens.push_back(Token::Eof),
            '{' => {
                self.terms += 1;
                self.tokens.push_back(Token::TermsOpen);
            }
            ',' if self.terms > 0 => self.tokens.push_back(Token::Separator),
            '}' if self.terms > 0 => {
                self.tokens.push_back(Token::TermsClose);
                self.terms -= 1;
            }
            '[' => {
                self.tokens.push_back(Token::RangeOpen);
                self.fetch_range();
            }
            '?' => self.tokens.push_back(Token::Single),
            '*' => {
                if self.read() == '*' {
                    self.tokens.push_back(Token::Super);
                } else {
                    self.unread();
                    self.tokens.push_back(Token::Any);
                }
            }
            _ => {
                self.unread();
                let breakers: &[char] = if self.terms > 0 {
                    &['?', '*', '[', '{', '}', ',']
                } else {
                    &['?', '*', '[', '{']
                };
                self.fetch_text(breakers);
            }
        }
    }

    fn fetch_range(&mut self) {
        let (mut want_hi, mut want_close, mut seen_not) = (false, false, false);
        loop {
            let c = self.read();
            if c == '\0' {
                self.error = Some("unexpected end of input");
                return;
            }
            if want_close {
                if c == ']' {
                    self.tokens.push_back(Token::RangeClose);
                } else {
                    self.error = Some("expected close range character");
                }
                return;
            }
            if want_hi {
                self.tokens.push_back(Token::RangeHi(c));
                want_close = true;
                continue;
            }
            if !seen_not && c == '!' {
                self.tokens.push_back(Token::Not);
                seen_not = true;
                continue;
            }
            let (n, w) = self.peek();
            if n == '-' {
                self.pos += w;
                self.tokens.push_back(Token::RangeLo(c));
                want_hi = true;
                continue;
            }
            self.unread();
            self.fetch_text(&[']']);
            want_close = true;
        }
    }

    fn fetch_text(&mut self, breakers: &[char]) {
        let mut text = String::new();
        let mut escaped = false;
        loop {
            let c = self.read();
            if c == '\0' {
                break;
            }
            if !escaped {
                if c == '\\' {
                    escaped = true;
                    continue;
                }
                if breakers.contains(&c) {
                    self.unread();
                    break;
                }
            }
            escaped = false;
            text.push(c);
        }
        if !text.is_empty() {
            self.tokens.push_back(Token::Text(text));
        }
    }
}

/// gobwas' parser: the tree of a pattern, or its error. An alternation
/// left open at the end is closed there.
fn parse(pattern: &str) -> Result<Vec<Node>, &'static str> {
    let mut lex = Lexer {
        chars: pattern.chars().collect(),
        pos: 0,
        last: 0,
        terms: 0,
        error: None,
        tokens: Default::default(),
    };
    // The open sequences: the root, then per open alternation its branches
    // so far and the branch being read.
    let mut root: Vec<Node> = Vec::new();
    let mut open: Vec<(Vec<Vec<Node>>, Vec<Node>)> = Vec::new();
    fn current<'a>(
        root: &'a mut Vec<Node>,
        open: &'a mut [(Vec<Vec<Node>>, Vec<Node>)],
    ) -> &'a mut Vec<Node> {
        match open.last_mut() {
            Some((_, branch)) => branch,
            None => root,
        }
    }
    loop {
        let node = match lex.next()? {
            Token::Eof => break,
            Token::Text(t) => Node::Text(t),
            Token::Any => Node::Any,
            Token::Super => Node::Super,
            Token::Single => Node::Single,
            Token::RangeOpen => range(&mut lex)?,
            Token::TermsOpen => {
                open.push((Vec::new(), Vec::new()));
                continue;
            }
            Token::Separator => {
                if let Some((branches, branch)) = open.last_mut() {
                    branches.push(std::mem::take(branch));
                }
                continue;
            }
            Token::TermsClose => match open.pop() {
                Some((mut branches, branch)) => {
                    branches.push(branch);
                    Node::AnyOf(branches)
                }
                None => continue,
            },
            _ => return Err("unexpected token"),
        };
        current(&mut root, &mut open).push(node);
    }
    while let Some((mut branches, branch)) = open.pop() {
        branches.push(branch);
        current(&mut root, &mut open).push(Node::AnyOf(branches));
    }
    Ok(root)
}

fn range(lex: &mut Lexer) -> Result<Node, &'static str> {
    let (mut not, mut lo, mut hi, mut chars) = (false, None, None, Vec::new());
    loop {
        match lex.next()? {
            Token::Eof => return Err("unexpected end"),
            Token::Not => not = true,
            Token::RangeLo(c) => lo = Some(c),
            Token::RangeHi(c) => {
                if lo.is_some_and(|lo| c < lo) {
                    return Err("hi character should be greater than lo");
                }
                hi = Some(c);
            }
            Token::Text(t) => chars = t.chars().collect(),
            Token::RangeClose => {
                return match (lo.zip(hi), chars.is_empty()) {
                    (Some((lo, hi)), true) => Ok(Node::Range(lo, hi, not)),
                    (None, false) => Ok(Node::List(chars, not)),
                    _ => Err("could not parse range"),
                };
            }
            _ => return Err("unexpected token"),
        }
    }
}

/// Where a sequence of nodes stands: gobwas matches the whole pattern, and
/// each branch of an alternation that is the whole pattern, with the
/// matcher of that sequence itself; anything deeper is matched through its
/// compiler's trees.
#[derive(Clone, Copy, PartialEq)]
enum Place {
    Whole,
    Branch,
    Inner,
}

/// Whether gobwas' one-character matcher `node` matches the empty string
/// when it is the whole matcher: it decodes the first rune of `""` as
/// U+FFFD (of width 0) and tests that.
fn matches_empty(node: &Node, seps: &[char]) -> Option<bool> {
    const ERR: char = '\u{fffd}';
    Some(match node {
        Node::Single => !seps.contains(&ERR),
        Node::List(chars, not) => chars.contains(&ERR) != *not,
        Node::Range(lo, hi, not) => (*lo..=*hi).contains(&ERR) != *not,
        _ => return None,
    })
}

fn one_char(node: &Node) -> bool {
    matches!(node, Node::Single | Node::List(..) | Node::Range(..))
}

/// Appends the regex of `nodes` to `re`.
fn regex_of(nodes: &[Node], seps: &[char], place: Place, re: &mut String) -> anyhow::Result<()> {
    use std::fmt::Write as _;
    // A one-character matcher that is the whole matcher also answers `""`.
    if place != Place::Inner
        && let [node] = nodes
        && matches_empty(node, seps) == Some(true)
    {
        re.push_str("(?:");
        regex_of(nodes, seps, Place::Inner, re)?;
        re.push_str("|)");
        return Ok(());
    }
    let class = |re: &mut String, chars: &mut dyn Iterator<Item = char>| {
        for c in chars {
            let _ = write!(re, "\\x{{{:x}}}", c as u32);
        }
    };
    for node in nodes {
        match node {
            Node::Text(t) => re.push_str(&regex::escape(t)),
            Node::Super => re.push_str("(?s:.*)"),
            Node::Any | Node::Single if seps.is_empty() => {
                re.push_str(if matches!(node, Node::Any) {
                    "(?s:.*)"
                } else {
                    "(?s:.)"
                })
            }
            Node::Any | Node::Single => {
                re.push_str("[^");
                class(re, &mut seps.iter().copied());
                re.push(']');
                if matches!(node, Node::Any) {
                    re.push('*');
                }
            }
            Node::List(chars, not) => {
                re.push_str(if *not { "[^" } else { "[" });
                class(re, &mut chars.iter().copied());
                re.push(']');
            }
            Node::Range(lo, hi, not) => {
                re.push_str(if *not { "[^" } else { "[" });
                let _ = write!(re, "\\x{{{:x}}}-\\x{{{:x}}}", *lo as u32, *hi as u32);
                re.push(']');
            }
            Node::AnyOf(branches) => {
                let whole = place == Place::Whole && nodes.len() == 1;
                if unsure(branches, whole) {
                    anyhow::bail!(
                        "glob.match: this alternation (an empty one, `{{}}`, beside other \
                         pieces, or one-character pieces `?` `[…]` in an alternation that is \
                         not the whole pattern) is not supported by regent: write the \
                         alternatives as separate patterns"
                    );
                }
                re.push_str("(?:");
                for (i, b) in branches.iter().enumerate() {
                    if i > 0 {
                        re.push('|');
                    }
                    let place = if whole { Place::Branch } else { Place::Inner };
                    regex_of(b, seps, place, re)?;
                }
                re.push(')');
            }
        }
    }
    Ok(())
}

/// Whether gobwas' compiler may answer an alternation otherwise than its
/// meaning: one of empty branches beside other pieces (its empty matcher in
/// a sequence), or one with a `?`, `[…]` in a branch where a branch's
/// one-character matcher may be asked about an empty string (an
/// alternation inside a sequence, or branches it shortens by a first or
/// last piece they share).
fn unsure(branches: &[Vec<Node>], whole: bool) -> bool {
    if !whole && branches.iter().all(Vec::is_empty) {
        return true;
    }
    let any_one_char = branches.iter().flatten().any(one_char);
    if !any_one_char {
        return false;
    }
    if !whole {
        return true;
    }
    let shared = |end: fn(&Vec<Node>) -> Option<&Node>| {
        branches.iter().enumerate().any(|(i, a)| {
            branches[i + 1..]
                .iter()
                .any(|b| end(a).is_some() && end(a) == end(b))
        })
    };
    shared(|b| b.first()) || shared(|b| b.last())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, delimiters: serde_json::Value, s: &str) -> Result<bool, String> {
        Glob::new(pattern, &Value::from(delimiters))
            .map(|g| g.is_match(s))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn as_gobwas_reads_it() {
        use serde_json::json;
        // OPA's answers, from its own engine.
        assert_eq!(m("a*", json!(null), "a/b.c"), Ok(true));
        assert_eq!(m("a*", json!([]), "a/b.c"), Ok(false));
        assert_eq!(m("a*", json!([]), "a/b"), Ok(true));
        assert_eq!(m("a\0b", json!(null), "ab"), Ok(true));
        assert_eq!(m("*\0b", json!(null), "xyz"), Ok(true));
        assert_eq!(m("\0b", json!(null), ""), Ok(true));
        assert!(m("a\u{fffd}", json!(null), "a").is_err());
        assert_eq!(m("{a,b", json!(null), "a"), Ok(true));
        assert_eq!(m("{a,b}}", json!(null), "a}"), Ok(true));
        assert!(m("[]", json!(null), "a").is_err());
        assert!(m("[a-", json!(null), "a").is_err());
        assert!(m("[b-a]", json!(null), "a").is_err());
        assert_eq!(m("a\\", json!(null), "a"), Ok(true));
        assert_eq!(m("{a,ab}c", json!(null), "abc"), Ok(true));
        assert_eq!(m("{*,a}b", json!(["/"]), "x/b"), Ok(false));
        assert_eq!(m("**", json!(["/"]), "x/b\n"), Ok(true));
        assert_eq!(m("?", json!(["."]), "\n"), Ok(true));
        assert_eq!(m("{}", json!(null), ""), Ok(true));
        assert_eq!(m("{a,}x", json!(null), "x"), Ok(true));
        assert_eq!(m("*.txt", json!(["/"]), "a\0.txt"), Ok(true));
        assert!(m("a*", json!([""]), "a").is_err());
        assert!(m("a*", json!(["ab"]), "a").is_err());
        assert_eq!(m("a*", json!(["ß"]), "aßb"), Ok(false));
        // A one-character matcher that is the whole matcher matches "".
        assert_eq!(m("[!a]", json!(null), ""), Ok(true));
        assert_eq!(m("?", json!([]), ""), Ok(true));
        assert_eq!(m("[a]", json!(null), ""), Ok(false));
        assert_eq!(m("x?", json!(null), "x"), Ok(false));
        assert_eq!(m("{?,ab}", json!(null), ""), Ok(true));
        // Refused: gobwas' own answer is not a glob's meaning.
        assert!(m("{}x", json!(null), "x").is_err());
        assert!(m("x{?,ab}", json!(null), "x").is_err());
    }
}
