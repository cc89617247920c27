//! The tests of `source::upstream`: importing snapshots, selections, differences,
//! pinned snapshots and the drift check, on tool files written in place.

use super::*;
use serde_json::json;
use std::path::Path;

fn source(yaml: &str) -> Source {
    let file = super::super::parse_tool_file(Path::new("t.yaml"), yaml).unwrap();
    Source {
        tool_files: vec![file],
        digest: "d".into(),
        ..Source::default()
    }
}

fn snapshot() -> BTreeMap<String, Snapshot> {
    let tools = serde_json::from_value(json!({"tools": [
        {"name": "read", "inputSchema": {"type": "object"},
         "annotations": {"readOnlyHint": true}},
        {"name": "wipe", "inputSchema": {"type": "object"},
         "annotations": {"destructiveHint": true, "readOnlyHint": "yes"}},
    ]}))
    .unwrap();
    BTreeMap::from([("notes".to_string(), tools)])
}

#[test]
fn every_tool_is_imported_with_the_upstreams_claim_and_a_prefix() {
    let mut s = source("upstreams:\n  - name: notes\n    command: x\n    prefix: n_\n");
    let d = s.import_upstreams(&snapshot());
    assert!(!d.has_errors(), "{d:?}");
    let tools: Vec<_> = s.tools().map(|(_, _, t)| t.clone()).collect();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0].name, "n_read");
    assert_eq!(tools[0].annotations.as_ref().unwrap().read_only, Some(true));
    // A hint of the wrong type is unsaid, so the catalog lists the risky default.
    assert_eq!(tools[1].annotations.as_ref().unwrap().read_only, None);
    assert_eq!(
        tools[1].upstream,
        Some(UpstreamRef {
            upstream: "notes".into(),
            tool: "wipe".into()
        })
    );
    assert_ne!(s.digest, "d");
}

#[test]
fn a_selection_renames_overrides_and_names_unknown_tools() {
    let yaml = "upstreams:\n  - name: notes\n    command: x\n    tools:\n      - name: read\n        as: look\n        annotations: {openWorldHint: false, readOnlyHint: false}\n      - name: gone\n";
    let mut s = source(yaml);
    let d = s.import_upstreams(&snapshot());
    let errors: Vec<_> = d.errors().collect();
    assert_eq!(errors.len(), 1, "{d:?}");
    assert!(errors[0].message.contains("lists no tool `gone`"));
    assert_eq!(errors[0].location.line, 8);
    let (_, _, t) = s.tools().next().unwrap();
    assert_eq!(t.name, "look");
    let a = t.annotations.as_ref().unwrap();
    assert_eq!((a.read_only, a.open_world), (Some(false), Some(false)));
}

#[test]
fn differences_name_added_removed_and_changed_tools() {
    let pinned = snapshot().remove("notes").unwrap();
    let mut live = pinned.clone();
    assert!(differences(&pinned, &live).is_empty());
    live.tools.remove(1);
    live.tools[0].annotations = Some(json!({"readOnlyHint": false}));
    live.tools.push(SnapshotTool {
        name: "new".into(),
        title: None,
        description: None,
        input_schema: json!({"type": "object"}),
        output_schema: None,
        annotations: None,
    });
    assert_eq!(
        differences(&pinned, &live),
        [
            "added `new`",
            "removed `wipe`",
            "`read` changed its annotations"
        ]
    );
}

#[test]
fn pinned_snapshots_are_read_beside_the_tool_file_and_unpinned_upstreams_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let pinned = Pinned {
        upstreams: snapshot(),
    };
    std::fs::write(
        dir.path().join("n.snapshot.json"),
        serde_json::to_string(&pinned).unwrap(),
    )
    .unwrap();
    let yaml = "upstreams:\n  - name: notes\n    command: x\n    snapshot: n.snapshot.json\n  - name: other\n    command: y\n  - name: lost\n    command: z\n    snapshot: gone.snapshot.json\n";
    let file = super::super::parse_tool_file(&dir.path().join("t.yaml"), yaml).unwrap();
    let mut s = Source {
        tool_files: vec![file],
        digest: "d".into(),
        ..Source::default()
    };
    let d = s.import_pinned();
    let errors: Vec<_> = d.errors().collect();
    assert_eq!(errors.len(), 1, "{d:?}");
    assert_eq!(errors[0].code, "upstream-snapshot");
    assert_eq!((errors[0].location.line, errors[0].location.column), (9, 5));
    assert!(
        errors[0]
            .message
            .contains("cannot read the snapshot of upstream `lost`")
    );
    let names: Vec<_> = s.tools().map(|(_, _, t)| t.name.clone()).collect();
    assert_eq!(names, ["read", "wipe"]);
}

/// `serve`'s import against a pin: a changed tool and one the pin lacks
/// are held back (a selected one without an error), with why, and the
/// digest moves with what is held; `on_drift: warn` imports them; a pin
/// that cannot be read holds every tool.
#[test]
fn serving_quarantines_what_drifted_from_the_pin_unless_told_to_warn() {
    let dir = tempfile::tempdir().unwrap();
    let pinned = Pinned {
        upstreams: BTreeMap::from([
            ("notes".to_string(), snapshot().remove("notes").unwrap()),
            ("lax".to_string(), snapshot().remove("notes").unwrap()),
        ]),
    };
    std::fs::write(
        dir.path().join("n.snapshot.json"),
        serde_json::to_string(&pinned).unwrap(),
    )
    .unwrap();
    let mut live = snapshot().remove("notes").unwrap();
    live.tools[1].description = Some("now it also mails your notes".into());
    live.tools.push(SnapshotTool {
        name: "new".into(),
        title: None,
        description: None,
        input_schema: json!({"type": "object"}),
        output_schema: None,
        annotations: None,
    });
    let live = BTreeMap::from([
        ("notes".to_string(), live.clone()),
        ("lax".to_string(), live.clone()),
        ("lost".to_string(), live),
    ]);
    let yaml = "upstreams:\n  - name: notes\n    command: x\n    snapshot: n.snapshot.json\n    tools:\n      - name: read\n      - name: wipe\n        as: erase\n  - name: lax\n    command: x\n    prefix: l_\n    snapshot: n.snapshot.json\n    on_drift: warn\n  - name: lost\n    command: x\n    prefix: o_\n    snapshot: gone.snapshot.json\n";
    let file = super::super::parse_tool_file(&dir.path().join("t.yaml"), yaml).unwrap();
    let mut s = Source {
        tool_files: vec![file],
        digest: "d".into(),
        ..Source::default()
    };
    let (d, notes) = s.import_served(&live);
    assert!(!d.has_errors(), "{d:?}");
    let names: Vec<_> = s.tools().map(|(_, _, t)| t.name.clone()).collect();
    assert_eq!(names, ["read", "l_read", "l_wipe", "l_new"]);
    let held: Vec<_> = s
        .quarantined
        .iter()
        .map(|q| (q.upstream.as_str(), q.listed.as_str(), q.reason.as_str()))
        .collect();
    assert_eq!(
        held,
        [
            ("notes", "erase", "its description changed since the pin"),
            (
                "lost",
                "o_read",
                "its pinned snapshot gone.snapshot.json cannot be read"
            ),
            (
                "lost",
                "o_wipe",
                "its pinned snapshot gone.snapshot.json cannot be read"
            ),
            (
                "lost",
                "o_new",
                "its pinned snapshot gone.snapshot.json cannot be read"
            ),
        ]
    );
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert!(notes[0].contains("cannot read the snapshot of upstream `lost`"));
    assert!(
        notes[1].ends_with("t.yaml:4:5: upstream `notes` lists tools that differ from its pinned snapshot n.snapshot.json: added `new`; `wipe` changed its description; the tools it serves that differ are quarantined (not listed, calls refused) until the pin matches; review the change and re-pin with `regent upstream snapshot`, or set `on_drift: warn` to serve them"),
        "{notes:?}"
    );
    assert!(notes[2].contains("serving what it lists now (`on_drift: warn`"));
    // The pin matching again releases them, and changes the revision.
    let digest = s.digest.clone();
    let mut t = Source {
        tool_files: s.tool_files.clone(),
        digest: "d".into(),
        ..Source::default()
    };
    let matching = BTreeMap::from([("notes".to_string(), snapshot().remove("notes").unwrap())]);
    let (d, _) = t.import_served(&matching);
    assert!(!d.has_errors(), "{d:?}");
    assert!(t.quarantined.is_empty());
    assert_ne!(t.digest, digest);
}

#[test]
fn an_unknown_on_drift_is_an_error_at_its_key() {
    let s = source("upstreams:\n  - name: notes\n    command: x\n    on_drift: shrug\n");
    let mut d = Diagnostics::default();
    check_endpoints(&s, &mut d);
    let errors: Vec<_> = d.errors().collect();
    assert_eq!(errors.len(), 1, "{d:?}");
    assert_eq!(errors[0].code, "upstream-on-drift");
    assert_eq!((errors[0].location.line, errors[0].location.column), (4, 5));
    assert_eq!(
        errors[0].help.as_deref(),
        Some("write `quarantine` (the default) or `warn`")
    );
}

/// While serving, an upstream declared since the start has no snapshot
/// until it lists its tools: it imports nothing (none of its tools can
/// be called), and the rest of the catalog builds.
#[test]
fn an_upstream_without_a_snapshot_imports_nothing() {
    let mut s = source("upstreams:\n  - name: other\n    command: x\n");
    let d = s.import_upstreams(&snapshot());
    assert!(!d.has_errors(), "{d:?}");
    assert_eq!(s.tools().count(), 0);
}
