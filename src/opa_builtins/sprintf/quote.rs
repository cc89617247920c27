//! The text OPA hands Go for an argument that is neither a number nor a
//! string: its Rego text (`Term.String()`: `null`, `[1, "a"]`, `{1, 2}`,
//! `set()`), strings inside quoted as Go's `strconv.Quote` does; and that
//! quoting itself, which `%q` and `%#U` use too (`printer`). What a number
//! looks like inside it is the parent's (`number_text`); the verbs are
//! `verbs`' and `printer`'s.

use std::fmt::Write as _;

use regorus::Value;
use unicode_general_category::{GeneralCategory as G, get_general_category};

use super::{Out, TEXT_UNKNOWN, Unsure, number_text, text_unknown};
use crate::opa_builtins::order::sorted;

/// The Rego text of a value, as OPA's `Term.String()` writes it.
pub(super) fn rego_text(out: &mut String, v: &Value) -> Out<()> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(_) if text_unknown(v) => return Err(Unsure(TEXT_UNKNOWN)),
        Value::Number(_) => out.push_str(&number_text(v)),
        Value::String(s) => quote(out, s, false)?,
        Value::Array(a) => {
            out.push('[');
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                rego_text(out, e)?;
            }
            out.push(']');
        }
        Value::Set(s) => {
            if s.is_empty() {
                out.push_str("set()");
                return Ok(());
            }
            // OPA writes a set's members, and an object's keys, in its
            // order (`opa_builtins::order`: objects before sets).
            out.push('{');
            for (i, e) in sorted(s.iter()).into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                rego_text(out, e)?;
            }
            out.push('}');
        }
        Value::Object(o) => {
            out.push('{');
            for (i, k) in sorted(o.keys()).into_iter().enumerate() {
                let e = o.get(k).unwrap_or(&Value::Undefined);
                if i > 0 {
                    out.push_str(", ");
                }
                rego_text(out, k)?;
                out.push_str(": ");
                rego_text(out, e)?;
            }
            out.push('}');
        }
        Value::Undefined => return Err(Unsure("an undefined value")),
    }
    Ok(())
}

/// Go's `strconv.IsPrint`: letters, marks, numbers, punctuation, symbols
/// and the ASCII space.
pub(super) fn is_print(c: char) -> bool {
    if c.is_ascii() {
        return (' '..='~').contains(&c);
    }
    !matches!(
        get_general_category(c),
        G::Control
            | G::Format
            | G::Surrogate
            | G::PrivateUse
            | G::Unassigned
            | G::SpaceSeparator
            | G::LineSeparator
            | G::ParagraphSeparator
    )
}

/// Go's `strconv.Quote` (`ascii`: `QuoteToASCII`).
pub(super) fn quote(out: &mut String, s: &str, ascii: bool) -> Out<()> {
    out.push('"');
    for c in s.chars() {
        quote_char(out, c, '"', ascii);
    }
    out.push('"');
    Ok(())
}

pub(super) fn quote_char(out: &mut String, c: char, q: char, ascii: bool) {
    if c == q || c == '\\' {
        out.push('\\');
        out.push(c);
        return;
    }
    if c.is_ascii() {
        if is_print(c) {
            out.push(c);
            return;
        }
    } else if !ascii && is_print(c) {
        out.push(c);
        return;
    }
    match c {
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        c if (c as u32) < 0x20 || c == '\u{7f}' => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if (c as u32) < 0x10000 => {
            let _ = write!(out, "\\u{:04x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\U{:08x}", c as u32);
        }
    }
}
