//! The numbers of a data file as the file spells them, and where.
//!
//! OPA keeps a data number's text as written (`1.50`, `1e2`, `-0`) and
//! writes it back in `json.marshal` and `sprintf`; `serde_json` keeps only
//! the number. This module finds, in a JSON text that already parsed, each
//! number that is not a plain integer, with its line and column, so that
//! the load can say where one is spelled otherwise than regent writes it.
//! Whether a spelling matters, and what regent writes, is
//! `rego::data_numbers`' (it knows OPA's builtins and the policies); this
//! module knows JSON text only.

/// One number of a JSON text, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumberText {
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
    pub text: String,
}

/// Every number of `text` but plain integers (`0`, `42`, `-7`, at most 18
/// digits: every JSON reader holds those exactly and writes them so).
/// `text` is valid JSON: only strings need skipping.
pub fn unplain_numbers(text: &str) -> Vec<NumberText> {
    let mut out = Vec::new();
    let (mut line, mut column) = (1, 1);
    let mut chars = text.char_indices().peekable();
    let mut in_string = false;
    while let Some((i, c)) = chars.next() {
        if in_string {
            match c {
                '\\' => {
                    // The escaped character is one column (or a `u` and
                    // four hex digits, one column each), never a newline.
                    chars.next();
                    column += 1;
                }
                '"' => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if c == '-' || c.is_ascii_digit() {
            let mut end = i + c.len_utf8();
            while let Some(&(j, d)) = chars.peek() {
                if !matches!(d, '-' | '+' | '.' | 'e' | 'E' | '0'..='9') {
                    break;
                }
                end = j + d.len_utf8();
                chars.next();
            }
            let token = &text[i..end];
            if !plain_integer(token) {
                out.push(NumberText {
                    line,
                    column,
                    text: token.to_string(),
                });
            }
            column += token.chars().count();
            continue;
        }
        if c == '\n' {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
    }
    out
}

fn plain_integer(token: &str) -> bool {
    let digits = token.strip_prefix('-').unwrap_or(token);
    !digits.is_empty()
        && digits.len() <= 18
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && token != "-0"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_other_than_plain_integers_where_they_are() {
        let text = "{\"a\": 1, \"b\": [1.50, -0],\n \"c\\\"1e2\": {\"d\": 1e2},\n\"é\": 0.1, \"n\": 12345678901234567890}";
        let found: Vec<(usize, usize, String)> = unplain_numbers(text)
            .into_iter()
            .map(|n| (n.line, n.column, n.text))
            .collect();
        let want = [
            (1, 16, "1.50"),
            (1, 22, "-0"),
            (2, 18, "1e2"),
            (3, 6, "0.1"),
            (3, 16, "12345678901234567890"),
        ]
        .map(|(l, c, t)| (l, c, t.to_string()));
        assert_eq!(found, want);
    }
}
