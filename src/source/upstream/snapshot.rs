//! What an upstream listed, as data: its [`Snapshot`] (live, or pinned in
//! a file as [`Pinned`]), each tool's own annotation claim, the annotations
//! an imported tool is listed with ([`listed_annotations`]), how a live list
//! differs from its pin ([`differences`], and per tool for `serve`'s drift
//! check) and what `serve` holds back ([`Quarantined`]).
//!
//! Reading declarations is `super`'s; turning snapshots into tool
//! declarations is `import`'s.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::UpstreamToolDecl;
use crate::source::YamlPath;
use crate::source::model::{StaticAnnotations, ToolDecl};

/// What an upstream listed: its tools as MCP's `tools/list` shows them.
/// Written and read as JSON (`{"tools": [...]}`), so that it can be pinned
/// in a file as well as taken from a live upstream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub tools: Vec<SnapshotTool>,
}

/// Every upstream's snapshot, by upstream name: what `regent upstream
/// snapshot` writes, for a later step to read instead of starting them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pinned {
    pub upstreams: BTreeMap<String, Snapshot>,
}

/// One upstream tool, as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotTool {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
    #[serde(
        rename = "outputSchema",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub output_schema: Option<Value>,
    /// The upstream's claim, as it sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
}

impl SnapshotTool {
    /// The upstream's claim as hints; a hint of the wrong type counts as unsaid.
    pub fn claim(&self) -> StaticAnnotations {
        let a = self.annotations.as_ref();
        let hint = |k: &str| a.and_then(|a| a.get(k)).and_then(Value::as_bool);
        StaticAnnotations {
            title: a
                .and_then(|a| a.get("title"))
                .and_then(Value::as_str)
                .map(str::to_string),
            read_only: hint("readOnlyHint"),
            destructive: hint("destructiveHint"),
            idempotent: hint("idempotentHint"),
            open_world: hint("openWorldHint"),
        }
    }
}

/// An upstream tool imported as a declaration, with the file and place that
/// declared it (the upstream's entry, or the tool's entry under it).
#[derive(Debug, Clone)]
pub struct Imported {
    /// Index into `Source::tool_files`.
    pub file: usize,
    pub at: YamlPath,
    pub decl: ToolDecl,
    /// The team's entry for the tool, when the upstream's `tools:` names it.
    pub entry: Option<UpstreamToolDecl>,
    /// What the upstream itself claims of the tool.
    pub claim: StaticAnnotations,
}

/// The team's hints where given, else the upstream's claim, hint by hint.
pub fn listed_annotations(
    team: Option<&StaticAnnotations>,
    claim: &StaticAnnotations,
) -> StaticAnnotations {
    let team = team.cloned().unwrap_or_default();
    StaticAnnotations {
        title: team.title.or_else(|| claim.title.clone()),
        read_only: team.read_only.or(claim.read_only),
        destructive: team.destructive.or(claim.destructive),
        idempotent: team.idempotent.or(claim.idempotent),
        open_world: team.open_world.or(claim.open_world),
    }
}

/// A name as a message quotes it: at most 64 characters.
pub(super) fn shorten(name: &str) -> String {
    if name.chars().count() <= 64 {
        return name.to_string();
    }
    let head: String = name.chars().take(64).collect();
    format!("{head}… ({} characters)", name.chars().count())
}

/// The fields of one tool that differ between two listings of it, in the
/// order `differences` names them.
fn changed_fields(old: &SnapshotTool, new: &SnapshotTool) -> Vec<&'static str> {
    let mut fields = Vec::new();
    if old.title != new.title {
        fields.push("title");
    }
    if old.description != new.description {
        fields.push("description");
    }
    if old.input_schema != new.input_schema {
        fields.push("inputSchema");
    }
    if old.output_schema != new.output_schema {
        fields.push("outputSchema");
    }
    if old.annotations != new.annotations {
        fields.push("annotations");
    }
    fields
}

/// How a live tool list differs from a pinned one, in words: tools added,
/// removed, and changed (naming the fields that changed). Empty when equal.
pub fn differences(pinned: &Snapshot, live: &Snapshot) -> Vec<String> {
    let by_name = |s: &Snapshot| -> BTreeMap<String, SnapshotTool> {
        s.tools
            .iter()
            .map(|t| (t.name.clone(), t.clone()))
            .collect()
    };
    let (old, new) = (by_name(pinned), by_name(live));
    let names = |it: Vec<&String>| {
        it.iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = Vec::new();
    let added: Vec<&String> = new.keys().filter(|n| !old.contains_key(*n)).collect();
    if !added.is_empty() {
        out.push(format!("added {}", names(added)));
    }
    let removed: Vec<&String> = old.keys().filter(|n| !new.contains_key(*n)).collect();
    if !removed.is_empty() {
        out.push(format!("removed {}", names(removed)));
    }
    for (name, o) in &old {
        let Some(n) = new.get(name) else { continue };
        let fields = changed_fields(o, n);
        if !fields.is_empty() {
            out.push(format!("`{name}` changed its {}", fields.join(", ")));
        }
    }
    out
}

/// The live tools that may not serve under a pin, by the upstream's name
/// for them, each with why: listed differently than pinned (the fields that
/// changed), or not pinned at all. A pin is what was reviewed, so a tool it
/// does not hold is no more trusted than one that changed.
pub(super) fn drifted(pinned: &Snapshot, live: &Snapshot) -> BTreeMap<String, String> {
    let old: BTreeMap<&str, &SnapshotTool> =
        pinned.tools.iter().map(|t| (t.name.as_str(), t)).collect();
    live.tools
        .iter()
        .filter_map(|t| {
            let why = match old.get(t.name.as_str()) {
                None => "it is not in the pinned snapshot".to_string(),
                Some(o) => {
                    let fields = changed_fields(o, t);
                    if fields.is_empty() {
                        return None;
                    }
                    format!("its {} changed since the pin", fields.join(", "))
                }
            };
            Some((t.name.clone(), why))
        })
        .collect()
}

/// An upstream tool `serve` holds back because it drifted from the pin
/// (`on_drift: quarantine`): not listed, and a call to it is refused with
/// what this says. Data, as the catalog carries it; `state` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quarantined {
    pub upstream: String,
    /// The tool's name on the upstream.
    pub tool: String,
    /// The name regent would list it under.
    pub listed: String,
    /// What differs from the pin, in words ("its description changed since
    /// the pin", "it is not in the pinned snapshot").
    pub reason: String,
    /// The pin, as the declaration's `snapshot:` names it.
    pub pin: String,
}
