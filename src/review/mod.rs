//! `regent review`'s model: each tool's decision table, computed from the
//! catalog `check` built, and the catalog-wide findings of `check`.
//!
//! For every tool: its listing (the worst case), then one row per argument
//! class the worst-case proof enumerates (`analysis/proof`: enums, booleans,
//! partitioned strings; for a tool it does not cover, the combinations
//! `check` sampled, marked with the proof's warning) and, for a tool whose
//! policy reads the caller, per caller class (no caller, then each caller
//! given, such as those of the catalog's test cases). Each row holds the
//! decision a call with those arguments gets, with the rule (file:line)
//! behind each field that differs from the listing (`analysis/explain`).
//!
//! Rows are keyed by tool, argument class and caller class ([`RowKey`]), so
//! that two reviews (a catalog and its base) can be compared row by row.
//! [`diff`] compares them (`regent review --base`). This module computes;
//! it knows no Markdown or HTML ([`markdown`] and [`html`] render it), no
//! git (the command reads a base revision) and runs nothing `check` does
//! not (it takes check's [`Checked`](crate::check::Checked)).
//!
//! Building the tables is `rows`'s (it calls the proof and explain); naming
//! the files of a catalog read from a temporary directory as the user knows
//! them is `relabel`'s.

pub mod diff;
pub mod html;
pub mod markdown;

mod relabel;
mod rows;

pub use rows::{build, label};

use serde_json::{Map, Value};

use crate::catalog::hints::{Hint, Hints};
use crate::diag::Severity;

/// The most rows one tool's table holds; the rest are counted
/// ([`ToolTable::omitted`]). The proof may enumerate up to
/// [`proof::LIMIT`](crate::analysis::proof::LIMIT) combinations, more than anyone reads.
pub const MAX_ROWS: usize = 256;

/// A whole review.
pub struct Review {
    /// The catalog paths as given.
    pub paths: Vec<String>,
    /// Tools declared, whether or not they compiled.
    pub declared: usize,
    pub tools: Vec<ToolTable>,
    /// `check`'s findings, in its order.
    pub findings: Vec<Finding>,
}

/// One diagnostic of `check`.
pub struct Finding {
    pub severity: Severity,
    pub code: &'static str,
    pub location: String,
    pub message: String,
    pub help: Option<String>,
}

/// What the proof says about a tool's table.
pub enum Coverage {
    /// No rules and no policy: every call gets the listing.
    ListedOnly,
    /// Every combination was resolved and none is riskier than listed.
    Proved { combinations: usize },
    /// Some combinations are riskier than listed or fail.
    Refuted { combinations: usize },
    /// Some combinations were refused by inputSchema with sample values.
    Partial {
        combinations: usize,
        rejected: usize,
    },
    /// Not covered: the rows are samples; `warning` is check's text.
    NotCovered { warning: String },
}

/// One tool: its listing and its rows.
pub struct ToolTable {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub location: String,
    pub listed: Hints,
    pub listed_meta: Map<String, Value>,
    pub listed_security_schemes: Option<Vec<Value>>,
    pub coverage: Coverage,
    /// The arguments a row's class is made of (those the proof varies).
    pub arguments: Vec<String>,
    /// How free string arguments were partitioned (`path: 3 classes from …`).
    pub partitions: Vec<String>,
    /// The declared arguments outside the class, held at sample values.
    pub held: Vec<String>,
    /// Whether rows are per caller class (the policy reads the caller).
    pub per_caller: bool,
    pub rows: Vec<Row>,
    /// Rows beyond [`MAX_ROWS`], left out.
    pub omitted: usize,
}

/// What tells a row apart across two reviews of one catalog.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RowKey {
    pub tool: String,
    /// The class's arguments as canonical JSON (keys sorted; absent ones left out).
    pub arguments: String,
    /// The caller as canonical JSON, `""` for no caller.
    pub caller: String,
}

/// A class's arguments, in [`ToolTable::arguments`] order; `None` is absent.
pub type Class = Vec<(String, Option<Value>)>;

/// One argument class, for one caller class.
pub struct Row {
    pub key: RowKey,
    pub class: Class,
    /// Every argument the row was resolved with (the others at sample values).
    pub arguments: Value,
    /// Who calls, as a short label; `None` without a caller.
    pub caller: Option<String>,
    pub outcome: RowOutcome,
    /// Other values of the class (the catalog's test cases' arguments)
    /// whose `deny` reasons, or whether a `confirm` is asked, differ from
    /// the representative's.
    pub others: Vec<Other>,
}

/// Another value of a row's class and what it is denied or asked.
pub struct Other {
    /// The arguments that differ from the row's, `path="../x"`.
    pub arguments: String,
    /// Its deny reasons, when they differ (else empty).
    pub deny: Vec<String>,
    /// Its question, or `(asks nothing)`, when one of the two asks and
    /// the other does not.
    pub confirm: Option<String>,
}

/// What a call of the row gets.
pub enum RowOutcome {
    /// The caller does not see the tool (`visible`); `why` when the rule failed.
    Hidden {
        why: Option<String>,
    },
    /// inputSchema refuses these arguments.
    Invalid(String),
    /// The policy fails: a client gets an internal error.
    Failed(String),
    /// The caller's claims do not match the catalog's caller schema: it
    /// gets no decision (`ResolveError::CallerClaimsInvalid`), the reason.
    CallerRefused(String),
    Decided(Box<Decision>),
}

/// The decision for a row, each field with what produced it.
pub struct Decision {
    /// The four hints, in [`Hint::ALL`] order.
    pub hints: Vec<HintCell>,
    /// Annotations beyond the four, `_meta` keys and `securitySchemes`
    /// that differ from the listing.
    pub fields: Vec<Field>,
    /// Each reason a call is refused for.
    pub deny: Vec<Field>,
    /// The question asked before a call runs.
    pub confirm: Option<Field>,
}

/// One hint of a decision.
pub struct HintCell {
    pub hint: Hint,
    pub value: bool,
    pub listed: bool,
    /// What set it, when it differs from the listing.
    pub by: Vec<String>,
}

impl HintCell {
    /// Safer than listed (what a resolution is for).
    pub fn safer(&self) -> bool {
        self.value != self.listed && self.value == self.hint.safe_value()
    }

    /// Riskier than listed: a client gets an error for this call.
    pub fn riskier(&self) -> bool {
        self.value != self.listed && self.value != self.hint.safe_value()
    }
}

/// A field of a decision and what produced it.
pub struct Field {
    /// `annotations.privateHint`, `_meta.region`, `securitySchemes`, `deny`, `confirm`.
    pub name: String,
    pub value: Value,
    pub listed: Option<Value>,
    pub by: Vec<String>,
}

impl Decision {
    pub fn denied(&self) -> bool {
        !self.deny.is_empty()
    }

    /// Any hint riskier than listed.
    pub fn riskier(&self) -> bool {
        self.hints.iter().any(HintCell::riskier)
    }

    /// What set each field that differs from the listing, fields set by the
    /// same rules together, in field order: `(["readOnlyHint",
    /// "destructiveHint"], "yaml rule 1 (file:30:9)")`.
    pub fn set_by(&self) -> Vec<(Vec<String>, String)> {
        let mut out: Vec<(Vec<String>, String)> = Vec::new();
        let hints = self
            .hints
            .iter()
            .filter(|h| !h.by.is_empty())
            .map(|h| (h.hint.key().to_string(), h.by.join("; ")));
        let fields = self
            .fields
            .iter()
            .chain(&self.deny)
            .chain(&self.confirm)
            .map(|f| {
                let who = if f.by.is_empty() {
                    "(no rule)".to_string()
                } else {
                    f.by.join("; ")
                };
                (f.name.clone(), who)
            });
        for (field, who) in hints.chain(fields) {
            match out.iter_mut().find(|(_, w)| *w == who) {
                Some((fs, _)) => {
                    if !fs.contains(&field) {
                        fs.push(field);
                    }
                }
                None => out.push((vec![field], who)),
            }
        }
        out
    }

    /// Any hint safer than listed.
    pub fn safer(&self) -> bool {
        self.hints.iter().any(HintCell::safer)
    }
}

/// Counts of a table's rows, for summaries.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    pub rows: usize,
    pub denied: usize,
    pub confirmed: usize,
    pub safer: usize,
    pub riskier: usize,
    pub hidden: usize,
    pub failed: usize,
    pub invalid: usize,
    /// Rows whose caller the caller schema refuses.
    pub refused: usize,
}

impl ToolTable {
    pub fn counts(&self) -> Counts {
        let mut c = Counts {
            rows: self.rows.len() + self.omitted,
            ..Counts::default()
        };
        for r in &self.rows {
            match &r.outcome {
                RowOutcome::Hidden { .. } => c.hidden += 1,
                RowOutcome::Invalid(_) => c.invalid += 1,
                RowOutcome::Failed(_) => c.failed += 1,
                RowOutcome::CallerRefused(_) => c.refused += 1,
                RowOutcome::Decided(d) => {
                    c.denied += usize::from(d.denied());
                    c.confirmed += usize::from(d.confirm.is_some());
                    c.safer += usize::from(d.safer());
                    c.riskier += usize::from(d.riskier());
                }
            }
        }
        c
    }

    /// Whether the rows are samples (the proof does not cover the tool).
    pub fn sampled(&self) -> bool {
        matches!(self.coverage, Coverage::NotCovered { .. })
    }
}

impl Review {
    pub fn errors(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count()
    }

    pub fn warnings(&self) -> usize {
        self.findings.len() - self.errors()
    }

    pub fn tool(&self, name: &str) -> Option<&ToolTable> {
        self.tools.iter().find(|t| t.name == name)
    }
}

/// A base review, what to call it and what changed since: what the
/// renderers need for `regent review --base`.
pub struct Compared<'a> {
    pub review: &'a Review,
    /// `HEAD~1 (git revision 1a2b3c4d5e6f)`, or the path as given.
    pub label: &'a str,
    pub diff: &'a diff::Diff,
}

/// What a row that is not decided shows, and why (the reason's text).
pub fn undecided(o: &RowOutcome) -> Option<(&'static str, Option<&str>)> {
    Some(match o {
        RowOutcome::Decided(_) => return None,
        RowOutcome::Hidden { why: None } => ("hidden from this caller", None),
        RowOutcome::Hidden { why: Some(w) } => ("hidden: its visible rule fails", Some(w)),
        RowOutcome::Invalid(w) => ("refused by inputSchema", Some(w)),
        RowOutcome::Failed(w) => ("the policy fails (internal error)", Some(w)),
        RowOutcome::CallerRefused(w) => (
            "refused: the caller's claims do not match the declared caller schema",
            Some(w),
        ),
    })
}

/// A JSON value as a table cell shows it: strings bare, the rest as JSON.
pub fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// A row's class as `action=read, path="x"` (`(absent)` for absent ones),
/// `(any)` for a tool whose rules read no argument.
pub fn class_text(row: &Row) -> String {
    if row.class.is_empty() {
        return "(any)".to_string();
    }
    row.class
        .iter()
        .map(|(k, v)| match v {
            Some(v) => format!("{k}={v}"),
            None => format!("{k} absent"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The plural ending of a count in the renderers' text (`1 row`, `2 rows`).
fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
