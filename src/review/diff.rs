//! What changed between two reviews of a catalog (`regent review --base`):
//! rows whose decision changed, each change told as *less safe*, *safer*
//! or neither; classes new or gone; tools added and removed; listings
//! changed.
//!
//! Rows are matched by [`RowKey`] (tool, argument class, caller class). A
//! tool decided per caller on one side only (its policy reads the caller
//! there, not on the other) is matched against the other side's row
//! without a caller: a policy that does not read the caller decides every
//! caller alike. A row found on one side only is a new class or a class
//! gone. What set a field (file:line) is not compared: lines move in any
//! change. This module compares; the renderers say it.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{Coverage, Decision, Review, Row, RowKey, RowOutcome, ToolTable, class_text, show};
use crate::catalog::hints::Hint;

/// Which way a change goes for a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Direction {
    /// A hint riskier than before, a deny or a confirm gone, a call that
    /// could not run that now runs.
    LessSafe,
    /// The opposite of each of those.
    Safer,
    /// Changed, neither safer nor less safe (a reworded question, `_meta`,
    /// a policy that now fails).
    Other,
}

impl Direction {
    /// The mark a reader sees, in words (never only a colour).
    pub fn mark(self) -> &'static str {
        match self {
            Direction::LessSafe => "less safe",
            Direction::Safer => "safer",
            Direction::Other => "changed",
        }
    }
}

/// One thing that changed, and which way.
pub struct Note {
    pub direction: Direction,
    pub text: String,
}

/// A row whose decision changed.
pub struct RowChange {
    pub tool: String,
    /// The class as [`class_text`] writes it.
    pub class: String,
    pub caller: Option<String>,
    /// The most telling of the notes' directions (less safe first).
    pub direction: Direction,
    pub notes: Vec<Note>,
    /// What set the fields now (the head's row), for finding the rule.
    pub set_by: Vec<(Vec<String>, String)>,
    /// The head's row key, for marking it in the head's table.
    pub key: RowKey,
}

/// A row on one side only.
pub struct OneSided {
    pub tool: String,
    pub class: String,
    pub caller: Option<String>,
    /// The row's decision in short.
    pub decision: String,
}

/// A change of a tool's listing (or of what the proof says of it).
pub struct ListingChange {
    pub tool: String,
    pub note: Note,
}

/// How a head row is marked in its table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Changed(Direction),
    NewClass,
}

impl Mark {
    pub fn text(self) -> &'static str {
        match self {
            Mark::Changed(d) => d.mark(),
            Mark::NewClass => "new class",
        }
    }
}

/// What changed from a base review to the head's.
pub struct Diff {
    /// Rows whose decision changed: less safe first, then safer, then the
    /// others; in the head's tool and row order within each.
    pub changed: Vec<RowChange>,
    pub new_classes: Vec<OneSided>,
    pub gone_classes: Vec<OneSided>,
    /// Tools in the head only, and in the base only.
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Less safe first.
    pub listings: Vec<ListingChange>,
    /// Tools in both with nothing changed.
    pub unchanged: Vec<String>,
    /// Head rows marked, by key.
    pub marks: BTreeMap<RowKey, Mark>,
    /// Tools in both with something changed, in the head's order.
    pub changed_tools: Vec<String>,
}

impl Diff {
    pub fn count(&self, d: Direction) -> usize {
        self.changed.iter().filter(|c| c.direction == d).count()
    }

    /// Whether `tool` (in the head) is shown as changed or added.
    pub fn touches(&self, tool: &str) -> bool {
        self.changed_tools.iter().any(|t| t == tool) || self.added.iter().any(|t| t == tool)
    }

    pub fn is_empty(&self) -> bool {
        self.changed.is_empty()
            && self.new_classes.is_empty()
            && self.gone_classes.is_empty()
            && self.added.is_empty()
            && self.removed.is_empty()
            && self.listings.is_empty()
    }
}

/// Compares `head` with `base`.
pub fn compare(base: &Review, head: &Review) -> Diff {
    let mut d = Diff {
        changed: Vec::new(),
        new_classes: Vec::new(),
        gone_classes: Vec::new(),
        added: Vec::new(),
        removed: Vec::new(),
        listings: Vec::new(),
        unchanged: Vec::new(),
        marks: BTreeMap::new(),
        changed_tools: Vec::new(),
    };
    for h in &head.tools {
        let Some(b) = base.tool(&h.name) else {
            d.added.push(h.name.clone());
            continue;
        };
        let before = (
            d.changed.len(),
            d.new_classes.len(),
            d.gone_classes.len(),
            d.listings.len(),
        );
        listing(b, h, &mut d.listings);
        rows(b, h, &mut d);
        let after = (
            d.changed.len(),
            d.new_classes.len(),
            d.gone_classes.len(),
            d.listings.len(),
        );
        if before == after {
            d.unchanged.push(h.name.clone());
        } else {
            d.changed_tools.push(h.name.clone());
        }
    }
    d.removed = base
        .tools
        .iter()
        .filter(|b| head.tool(&b.name).is_none())
        .map(|b| b.name.clone())
        .collect();
    // Stable: the head's order within each direction.
    d.changed.sort_by_key(|c| c.direction);
    d.listings.sort_by_key(|l| l.note.direction);
    d
}

fn listing(b: &ToolTable, h: &ToolTable, out: &mut Vec<ListingChange>) {
    let mut push = |direction, text: String| {
        out.push(ListingChange {
            tool: h.name.clone(),
            note: Note { direction, text },
        })
    };
    for hint in Hint::ALL {
        let (was, now) = (b.listed.get(hint), h.listed.get(hint));
        if was != now {
            push(hint_direction(hint, now), hint_text(hint, was, now));
        }
    }
    let texts = [
        ("title", &b.title, &h.title),
        ("description", &b.description, &h.description),
    ];
    for (what, was, now) in texts {
        if was != now {
            push(
                Direction::Other,
                format!(
                    "{what}: {} → {}",
                    quoted_opt(was.as_deref()),
                    quoted_opt(now.as_deref())
                ),
            );
        }
    }
    let keys: BTreeSet<&String> = b.listed_meta.keys().chain(h.listed_meta.keys()).collect();
    for k in keys {
        let (was, now) = (b.listed_meta.get(k), h.listed_meta.get(k));
        if was != now {
            push(
                Direction::Other,
                format!("_meta.{k}: {} → {}", value_opt(was), value_opt(now)),
            );
        }
    }
    if b.listed_security_schemes != h.listed_security_schemes {
        let show = |s: &Option<Vec<Value>>| {
            s.as_ref().map_or("(absent)".to_string(), |v| {
                Value::Array(v.clone()).to_string()
            })
        };
        push(
            Direction::Other,
            format!(
                "securitySchemes: {} → {}",
                show(&b.listed_security_schemes),
                show(&h.listed_security_schemes)
            ),
        );
    }
    let (was, now) = (coverage(&b.coverage), coverage(&h.coverage));
    if was != now {
        // Losing the proof's cover is a loss of assurance, not of safety
        // of any one call: the rows say what calls get.
        push(Direction::Other, format!("proof: {was} → {now}"));
    }
}

fn coverage(c: &Coverage) -> &'static str {
    match c {
        Coverage::ListedOnly => "listed only",
        Coverage::Proved { .. } => "covered",
        Coverage::Refuted { .. } => "covered, refuted",
        Coverage::Partial { .. } => "partial",
        Coverage::NotCovered { .. } => "not covered (sampled)",
    }
}

fn rows(b: &ToolTable, h: &ToolTable, d: &mut Diff) {
    let base_rows: BTreeMap<&RowKey, &Row> = b.rows.iter().map(|r| (&r.key, r)).collect();
    let head_rows: BTreeMap<&RowKey, &Row> = h.rows.iter().map(|r| (&r.key, r)).collect();
    let no_caller = |k: &RowKey| RowKey {
        caller: String::new(),
        ..k.clone()
    };
    let mut matched: BTreeSet<RowKey> = BTreeSet::new();
    for hr in &h.rows {
        let br = base_rows.get(&hr.key).copied().or_else(|| {
            (!b.per_caller)
                .then(|| base_rows.get(&no_caller(&hr.key)).copied())
                .flatten()
        });
        let Some(br) = br else {
            d.new_classes.push(one_sided(h, hr));
            d.marks.insert(hr.key.clone(), Mark::NewClass);
            continue;
        };
        matched.insert(br.key.clone());
        push_change(h, br, hr, hr.caller.clone(), d);
    }
    for br in &b.rows {
        if matched.contains(&br.key) {
            continue;
        }
        // A base row per caller against a head that no longer reads the
        // caller: the head's row without one decides it.
        let hr = (!h.per_caller)
            .then(|| head_rows.get(&no_caller(&br.key)).copied())
            .flatten();
        match hr {
            Some(hr) => push_change(h, br, hr, br.caller.clone(), d),
            None => d.gone_classes.push(one_sided(b, br)),
        }
    }
}

fn push_change(h: &ToolTable, br: &Row, hr: &Row, caller: Option<String>, d: &mut Diff) {
    let notes = compare_outcomes(&br.outcome, &hr.outcome);
    let Some(direction) = notes.iter().map(|n| n.direction).min() else {
        return;
    };
    d.marks
        .entry(hr.key.clone())
        .and_modify(|m| {
            if let Mark::Changed(x) = m {
                *x = (*x).min(direction);
            }
        })
        .or_insert(Mark::Changed(direction));
    d.changed.push(RowChange {
        tool: h.name.clone(),
        class: class_text(hr),
        caller,
        direction,
        notes,
        set_by: match &hr.outcome {
            RowOutcome::Decided(x) => x.set_by(),
            _ => Vec::new(),
        },
        key: hr.key.clone(),
    });
}

fn one_sided(t: &ToolTable, r: &Row) -> OneSided {
    OneSided {
        tool: t.name.clone(),
        class: class_text(r),
        caller: r.caller.clone(),
        decision: short(&r.outcome),
    }
}

/// A row's decision in a few words: the hints that are safe, then deny and
/// confirm.
pub fn short(o: &RowOutcome) -> String {
    let d = match o {
        RowOutcome::Decided(d) => d,
        other => {
            return super::undecided(other)
                .map(|(w, _)| w)
                .unwrap_or_default()
                .to_string();
        }
    };
    let mut parts: Vec<String> = d
        .hints
        .iter()
        .map(|h| format!("{} {}", h.hint.key(), h.value))
        .collect();
    if d.denied() {
        parts.push(format!("denied: {}", reasons(d)));
    }
    if let Some(c) = &d.confirm {
        parts.push(format!("asks: {}", quoted(&show(&c.value))));
    }
    parts.join(", ")
}

/// Whether a call of this row runs (decided and not denied).
fn runs(o: &RowOutcome) -> bool {
    matches!(o, RowOutcome::Decided(d) if !d.denied())
}

/// What changed from `b` to `h`, nothing when the decisions are alike.
fn compare_outcomes(b: &RowOutcome, h: &RowOutcome) -> Vec<Note> {
    let mut notes = Vec::new();
    let mut note = |direction, text: String| notes.push(Note { direction, text });
    match (b, h) {
        (RowOutcome::Decided(b), RowOutcome::Decided(h)) => decisions(b, h, &mut note),
        _ => {
            let (was, now) = (short(b), short(h));
            if kind(b) == kind(h) {
                return notes;
            }
            let direction = match (runs(b), runs(h)) {
                (false, true) => Direction::LessSafe,
                // Refused now (hidden, denied, invalid, a caller refused):
                // safer; a policy that now fails is a breakage, not safety.
                (true, false) if !matches!(h, RowOutcome::Failed(_)) => Direction::Safer,
                _ => Direction::Other,
            };
            note(direction, format!("was: {was}; now: {now}"));
        }
    }
    notes
}

fn kind(o: &RowOutcome) -> u8 {
    match o {
        RowOutcome::Hidden { why: None } => 0,
        RowOutcome::Hidden { why: Some(_) } => 1,
        RowOutcome::Invalid(_) => 2,
        RowOutcome::Failed(_) => 3,
        RowOutcome::CallerRefused(_) => 4,
        RowOutcome::Decided(_) => 5,
    }
}

fn decisions(b: &Decision, h: &Decision, note: &mut impl FnMut(Direction, String)) {
    for (bh, hh) in b.hints.iter().zip(&h.hints) {
        if bh.value != hh.value {
            note(
                hint_direction(hh.hint, hh.value),
                hint_text(hh.hint, bh.value, hh.value),
            );
        }
    }
    match (b.denied(), h.denied()) {
        (true, false) => note(
            Direction::LessSafe,
            format!("no longer denied (was: {})", reasons(b)),
        ),
        (false, true) => note(Direction::Safer, format!("now denied: {}", reasons(h))),
        (true, true) if reasons(b) != reasons(h) => note(
            Direction::Other,
            format!("deny reasons: {} → {}", reasons(b), reasons(h)),
        ),
        _ => {}
    }
    let question = |d: &Decision| d.confirm.as_ref().map(|c| quoted(&show(&c.value)));
    match (question(b), question(h)) {
        (Some(was), None) => note(
            Direction::LessSafe,
            format!("no longer asks to confirm (was: {was})"),
        ),
        (None, Some(now)) => note(Direction::Safer, format!("now asks to confirm: {now}")),
        (Some(was), Some(now)) if was != now => {
            note(Direction::Other, format!("confirm: {was} → {now}"))
        }
        _ => {}
    }
    let fields = |d: &Decision| -> BTreeMap<String, Value> {
        d.fields
            .iter()
            .map(|f| (f.name.clone(), f.value.clone()))
            .collect()
    };
    let (bf, hf) = (fields(b), fields(h));
    let names: BTreeSet<&String> = bf.keys().chain(hf.keys()).collect();
    for n in names {
        let (was, now) = (bf.get(n), hf.get(n));
        if was != now {
            note(
                Direction::Other,
                format!("{n}: {} → {}", value_opt(was), value_opt(now)),
            );
        }
    }
}

fn hint_direction(hint: Hint, now: bool) -> Direction {
    if now == hint.safe_value() {
        Direction::Safer
    } else {
        Direction::LessSafe
    }
}

fn hint_text(hint: Hint, was: bool, now: bool) -> String {
    format!("{} {was} → {now}", hint.key())
}

fn reasons(d: &Decision) -> String {
    d.deny
        .iter()
        .map(|f| quoted(&show(&f.value)))
        .collect::<Vec<_>>()
        .join("; ")
}

fn quoted(s: &str) -> String {
    format!("“{s}”")
}

fn quoted_opt(s: Option<&str>) -> String {
    s.map_or("(absent)".to_string(), quoted)
}

fn value_opt(v: Option<&Value>) -> String {
    v.map_or("(absent)".to_string(), Value::to_string)
}
