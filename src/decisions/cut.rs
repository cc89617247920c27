//! Cutting the fields of an oversized line down to a bounded size
//! (`--decision-log-line-bytes`): strings clipped, deny reasons capped,
//! large values replaced by a marker with their digest, and the names of
//! what was cut. When a line must be cut is `line`'s decision.

use serde_json::{Map, Value, json};

use super::digest::arguments_digest;
use super::entry::{Entry, ShadowEntry, Verdict};

/// What a field cut from an oversized line keeps: strings are clipped to
/// this many bytes, and a field whose JSON is larger is replaced by a marker.
const CUT_KEEPS: usize = 1024;
/// How many deny reasons an oversized line keeps.
pub(super) const CUT_REASONS: usize = 4;

/// The size of `v` as compact JSON, without making the text.
pub(super) fn json_size(v: &Value) -> usize {
    crate::diag::json_size(v, usize::MAX)
}

/// `text`, or its first [`CUT_KEEPS`] bytes (at a character boundary) and
/// `…` when longer, which adds `name` to `cut`.
fn clip(text: &str, name: &'static str, cut: &mut Vec<&'static str>) -> String {
    if text.len() <= CUT_KEEPS {
        return text.to_string();
    }
    cut.push(name);
    let mut end = CUT_KEEPS;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The marker that stands for a value cut from a line.
fn cut_marker(v: &Value, size: usize) -> Value {
    json!({"truncated": true, "bytes": size, "digest": arguments_digest(v)})
}

/// `v`, or its marker when its JSON is over [`CUT_KEEPS`].
fn cut_value(v: &Value, name: &'static str, cut: &mut Vec<&'static str>) -> Value {
    let size = json_size(v);
    if size <= CUT_KEEPS {
        return v.clone();
    }
    cut.push(name);
    cut_marker(v, size)
}

/// `m`, or (over [`CUT_KEEPS`]) an object that is the marker.
fn cut_map(
    m: &Map<String, Value>,
    name: &'static str,
    cut: &mut Vec<&'static str>,
) -> Map<String, Value> {
    let v = Value::Object(m.clone());
    match cut_value(&v, name, cut) {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// The verdict with at most [`CUT_REASONS`] reasons, each clipped, and the
/// error clipped.
fn cut_verdict(v: &Verdict, cut: &mut Vec<&'static str>) -> Verdict {
    match v {
        Verdict::Allowed => Verdict::Allowed,
        Verdict::Denied(reasons) => {
            if reasons.len() > CUT_REASONS {
                cut.push("reasons");
            }
            Verdict::Denied(
                reasons
                    .iter()
                    .take(CUT_REASONS)
                    .map(|r| clip(r, "reasons", cut))
                    .collect(),
            )
        }
        Verdict::Error(e) => Verdict::Error(clip(e, "error", cut)),
    }
}

impl Entry {
    /// This entry with every field a client or a policy can make large cut
    /// to a bounded size (not the arguments: [`Entry::line`] shows those),
    /// and the names of the fields that were cut.
    pub(super) fn cut_down(&self) -> (Entry, Vec<&'static str>) {
        let mut cut = Vec::new();
        let mut small = Entry {
            id: self.id.clone(),
            kind: self.kind,
            phase: self.phase,
            method: self.method,
            tool: clip(&self.tool, "tool", &mut cut),
            caller: self.caller.clone(),
            arguments: Value::Null,
            sent: None,
            annotations: None,
            verdict: cut_verdict(&self.verdict, &mut cut),
            revision: self.revision.clone(),
            refused: self.refused.as_ref().map(|r| clip(r, "refused", &mut cut)),
            insufficient_scope: self
                .insufficient_scope
                .as_ref()
                .map(|o| cut_value(o, "insufficientScope", &mut cut)),
            outcome: self
                .outcome
                .as_ref()
                .map(|o| cut_value(o, "outcome", &mut cut)),
            duration: self.duration,
            confirm: self.confirm.as_ref().map(|c| clip(c, "confirm", &mut cut)),
            eval: self.eval,
            shadow: None,
        };
        small.annotations = self
            .annotations
            .as_ref()
            .map(|a| cut_map(a, "annotations", &mut cut));
        small.shadow = self.shadow.as_ref().map(|s| {
            let mut inner = Vec::new();
            let shadow = ShadowEntry {
                policy: clip(&s.policy, "shadow", &mut inner),
                verdict: cut_verdict(&s.verdict, &mut inner),
                annotations: s
                    .annotations
                    .as_ref()
                    .map(|a| cut_map(a, "shadow", &mut inner)),
                confirm: s.confirm.as_ref().map(|c| clip(c, "shadow", &mut inner)),
                eval: s.eval,
            };
            if !inner.is_empty() {
                cut.push("shadow");
            }
            shadow
        });
        cut.dedup();
        (small, cut)
    }
}
