//! Reading regorus' error texts: the message, the `file:line:column`, which
//! limit stopped an evaluation, whether complete rules conflicted.
//!
//! Failure messages are all that crosses from an evaluation to the wire and
//! the reports, so this is the one place that parses them. It sits apart from
//! `engine` so that `budget`'s guards (below the engine: the engine installs
//! them) can word a builtin's error without a file cycle.

use crate::diag::{Diagnostic, Location};

/// A limit on one evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Time,
    Memory,
}

/// Which limit, if any, a policy failure's message says stopped it. Failure
/// messages are all that crosses to the wire and the reports, so this is the
/// one place that reads them: regorus' own timer ("execution exceeded time
/// limit"), `engine`'s timer check and the guards of [`budget`](super::budget)
/// ("memory budget").
pub fn limit_hit(message: &str) -> Option<Limit> {
    let lower = message.to_lowercase();
    if lower.contains("memory budget") {
        Some(Limit::Memory)
    } else if lower.contains("time limit") || lower.contains("timed out") {
        Some(Limit::Time)
    } else {
        None
    }
}

/// Builds a diagnostic from a regorus error, which reads like
/// `--> file:line:col` followed by the source line and a message.
pub fn rego_diagnostic(code: &'static str, path: &str, text: &str) -> Diagnostic {
    let location = find_location(text).unwrap_or_else(|| Location::file(path));
    Diagnostic::error(code, location, first_message(text))
}

/// The message of an error a builtin raised, without its location (the
/// guard's caller adds the call's own).
pub(super) fn builtin_message(text: &str) -> String {
    first_message(text)
}

/// The `file:line:col` after regorus' `-->` marker.
pub fn find_location(text: &str) -> Option<Location> {
    let rest = text.split("--> ").nth(1)?;
    let spot = rest.lines().next()?.trim();
    let mut parts = spot.rsplitn(3, ':');
    let col: usize = parts.next()?.trim().parse().ok()?;
    let line: usize = parts.next()?.trim().parse().ok()?;
    let file = parts.next()?;
    // regorus quotes the source line as `N | text`; use it to turn its
    // column into ours.
    let prefix = format!("{line} | ");
    let col = rest
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(&prefix))
        .map_or(col, |src| crate::rego::char_column(src, col));
    Some(Location::new(file, line, col))
}

/// regorus errors span several lines (location, source, caret, message); keep
/// the message itself, as one lowercase line.
pub(super) fn first_message(text: &str) -> String {
    let candidates: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty()
                && !l.starts_with("-->")
                && !l.starts_with('|')
                && !l.chars().next().is_some_and(|c| c.is_ascii_digit())
                && !l.chars().all(|c| c == '^' || c == '-' || c == ' ')
        })
        .collect();
    let msg = candidates
        .iter()
        .find_map(|l| l.strip_prefix("error:").map(str::trim))
        .or_else(|| candidates.last().copied())
        .unwrap_or(text)
        .trim_end_matches('.')
        .to_string();
    let mut chars = msg.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().collect::<String>() + chars.as_str(),
        None => msg,
    }
}

/// Whether an evaluation failed because two definitions of a complete rule
/// (or function) produced different values (`annotations := {...} if A` and
/// `annotations := {...} if B`, both holding).
pub fn is_conflict(message: &str) -> bool {
    message.contains("rule conflicts with rule")
        || message.contains("should not produce multiple outputs")
        || message.contains("must not produce multiple outputs")
        || message.contains("function produced multiple outputs")
}

/// What to do about a conflict between complete rules.
pub const CONFLICT_HELP: &str = "a complete rule may have one value per request: make the conditions exclusive (`else`, or `not` the other condition), or build the value in one rule";
