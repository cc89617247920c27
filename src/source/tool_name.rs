//! Which names a tool may be listed under.
//!
//! MCP 2025-11-25 ("Tools", "Tool names", from SEP-986) says a tool name
//! SHOULD be 1 to 128 characters of `A-Z a-z 0-9 _ - .`, case-sensitive.
//! regent holds its own tools to that as a warning (a catalog may have
//! older names clients still use), but never lists a name with a control
//! or bidirectional-formatting character: a right-to-left override makes
//! `tool_a` and `a_loot` look alike in a client's confirmation dialog.
//! Tools an upstream lists are held to the whole rule: one outside it is
//! left out, with a warning, so one upstream cannot list `../../etc`,
//! `tools/call` or a 100,000-character name through regent, nor stop the
//! rest of the catalog from serving.

/// What is wrong with a tool name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    Empty,
    /// Longer than [`MAX_LEN`] characters (the count).
    TooLong(usize),
    /// A control or bidirectional-formatting character: never listed.
    Deceptive(char),
    /// Characters outside `A-Za-z0-9_.-` (the first few).
    Characters(Vec<char>),
}

/// The longest name MCP's guidance allows, in characters.
pub const MAX_LEN: usize = 128;

impl Problem {
    /// Whether no tool may be listed under the name, own or imported.
    pub fn is_deceptive(&self) -> bool {
        matches!(self, Problem::Deceptive(_))
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Empty => write!(f, "it is empty"),
            Problem::TooLong(n) => write!(f, "it has {n} characters, over MCP's {MAX_LEN}"),
            Problem::Deceptive(c) => write!(
                f,
                "it holds U+{:04X}, a control or bidirectional-formatting character",
                u32::from(*c)
            ),
            Problem::Characters(cs) => {
                let shown: Vec<String> = cs.iter().map(|c| format!("{c:?}")).collect();
                write!(
                    f,
                    "it holds {}, outside MCP's `A-Za-z0-9_.-`",
                    shown.join(", ")
                )
            }
        }
    }
}

/// The help every name finding shares.
pub const HELP: &str = "MCP 2025-11-25 asks for 1 to 128 characters of `A-Za-z0-9_.-`";

/// What is wrong with `name`, the most serious problem first; `None` when
/// it follows MCP's guidance.
pub fn check(name: &str) -> Option<Problem> {
    if let Some(c) = name.chars().find(|c| deceptive(*c)) {
        return Some(Problem::Deceptive(c));
    }
    if name.is_empty() {
        return Some(Problem::Empty);
    }
    let len = name.chars().count();
    if len > MAX_LEN {
        return Some(Problem::TooLong(len));
    }
    let mut bad: Vec<char> = Vec::new();
    for c in name.chars() {
        let allowed = c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
        if !allowed && !bad.contains(&c) {
            bad.push(c);
            if bad.len() == 3 {
                break;
            }
        }
    }
    (!bad.is_empty()).then_some(Problem::Characters(bad))
}

/// Control characters, and the Unicode bidirectional formatting ones
/// (marks, embeddings, overrides, isolates): what can make a name display
/// as another.
fn deceptive(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_held_to_mcps_guidance() {
        for ok in ["manage_files", "git.status", "a-b_c.D9", &"x".repeat(128)] {
            assert_eq!(check(ok), None, "{ok}");
        }
        assert_eq!(check(""), Some(Problem::Empty));
        assert_eq!(check(&"x".repeat(129)), Some(Problem::TooLong(129)));
        assert_eq!(check("../../etc"), Some(Problem::Characters(vec!['/'])));
        assert_eq!(check("tools/call"), Some(Problem::Characters(vec!['/'])));
        assert_eq!(check("a b"), Some(Problem::Characters(vec![' '])));
        assert!(check("tool\u{202E}a").unwrap().is_deceptive());
        assert!(check("tool\n").unwrap().is_deceptive());
        assert!(check("a\u{2067}b").unwrap().is_deceptive());
        assert!(!check("tést").unwrap().is_deceptive());
    }
}
