//! Importing upstream tools into a [`Source`]: the declared upstreams
//! (`Source::declared_upstreams`, `Source::upstreams`), snapshots taken live
//! (`Source::import_upstreams`, and `Source::import_served`, which holds
//! them against their pin), pinned snapshots read beside the tool file
//! (`Source::import_pinned`, `Source::read_pinned`), each tool turned into a
//! [`ToolDecl`] as an own tool is declared.
//!
//! What a declaration and a snapshot are is `super`'s and `snapshot`'s;
//! starting an upstream to take a snapshot is `crate::upstream`'s.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

use super::snapshot::{drifted, shorten};
use super::{
    Declared, Imported, OnDrift, Pinned, Quarantined, Snapshot, SnapshotTool, UpstreamDecl,
    UpstreamRef, UpstreamToolDecl, base_dir, differences, listed_annotations,
};
use crate::diag::{Diagnostic, Diagnostics};
use crate::source::model::{StaticAnnotations, ToolDecl};
use crate::source::{Source, YamlPath};

/// Tools held back from import, by upstream name, then by the upstream's
/// name for the tool, with why.
type Held = BTreeMap<String, BTreeMap<String, String>>;

impl Source {
    /// Every declared upstream, by name (the first of a name declared twice,
    /// which does not import), as `upstream` starts it.
    pub fn declared_upstreams(&self) -> BTreeMap<String, Declared> {
        let mut out = BTreeMap::new();
        for (f, _, u) in self.upstreams() {
            out.entry(u.name.clone()).or_insert_with(|| Declared {
                decl: u.clone(),
                base_dir: base_dir(&self.tool_files[f].path),
            });
        }
        out
    }

    /// Every declared upstream with the file it came from and its path there.
    pub fn upstreams(&self) -> impl Iterator<Item = (usize, YamlPath, &UpstreamDecl)> {
        self.tool_files.iter().enumerate().flat_map(|(f, file)| {
            file.model
                .upstreams
                .iter()
                .enumerate()
                .map(move |(i, u)| (f, YamlPath::root().key("upstreams").index(i), u))
        })
    }

    /// Imports the tools of each declared upstream from its snapshot (by
    /// upstream name) as tool declarations, and folds the snapshots into the
    /// revision digest. Pure: reads only its arguments. Every problem is
    /// returned, and nothing is imported for an upstream that has one. An
    /// upstream without a snapshot imports nothing: while serving, one
    /// declared since the start that has not listed its tools yet.
    pub fn import_upstreams(&mut self, snapshots: &BTreeMap<String, Snapshot>) -> Diagnostics {
        self.import(snapshots, &Held::new())
    }

    /// What `serve` imports at start-up and at each reload: what the
    /// upstreams list now (`live`, by upstream name), held against their
    /// pins. A tool of a pinned upstream whose live definition differs from
    /// the pin, or that the pin lacks, is quarantined (left out of the
    /// catalog, in [`Source::quarantined`], so that a call to it is refused
    /// saying why) unless the upstream says `on_drift: warn`; a pin that
    /// cannot be read quarantines every tool of its upstream (fail closed).
    /// A tool the pin has and the upstream no longer lists is simply not
    /// imported (a selected one is an `unknown-upstream-tool` error, as
    /// without a pin). Returns the import's problems and, apart, what to
    /// log about pins: each drift and each pin that cannot be read.
    pub fn import_served(
        &mut self,
        live: &BTreeMap<String, Snapshot>,
    ) -> (Diagnostics, Vec<String>) {
        let (pinned, problems) = self.read_pinned();
        let mut notes: Vec<String> = problems.0.iter().map(|d| d.to_string()).collect();
        let mut held = Held::new();
        for (f, at, u) in self.upstreams() {
            let (Some(pin), Some(l)) = (&u.snapshot, live.get(&u.name)) else {
                continue;
            };
            let quarantine = u.on_drift() != Some(OnDrift::Warn);
            let Some(p) = pinned.get(&u.name) else {
                // The pin is declared and cannot be read (said above): with
                // nothing reviewed to compare with, nothing serves.
                if quarantine {
                    let why = format!("its pinned snapshot {pin} cannot be read");
                    held.insert(
                        u.name.clone(),
                        l.tools
                            .iter()
                            .map(|t| (t.name.clone(), why.clone()))
                            .collect(),
                    );
                }
                continue;
            };
            let diff = differences(p, l);
            if diff.is_empty() {
                continue;
            }
            let what = if quarantine {
                held.insert(u.name.clone(), drifted(p, l));
                "the tools it serves that differ are quarantined (not listed, calls refused) until the pin matches; review the change and re-pin with `regent upstream snapshot`, or set `on_drift: warn` to serve them".to_string()
            } else {
                "serving what it lists now (`on_drift: warn`; update the pin with `regent upstream snapshot`, and check again)".to_string()
            };
            notes.push(format!(
                "{}: upstream `{}` lists tools that differ from its pinned snapshot {pin}: {}; {what}",
                self.tool_files[f].locate(&at.key("snapshot")),
                u.name,
                diff.join("; "),
            ));
        }
        (self.import(live, &held), notes)
    }

    /// Imports the upstreams that name a pinned snapshot (`snapshot:`), read
    /// from their files, as [`Source::import_upstreams`] does; an upstream
    /// without one is left out (its tools are unknown without starting it).
    /// What `check`, `test` and `resolve` do instead of starting upstreams.
    pub fn import_pinned(&mut self) -> Diagnostics {
        self.import_pinned_or(&BTreeMap::new())
    }

    /// [`Source::import_pinned`], with `live` (by upstream name: what
    /// upstreams started for the occasion listed) for those without a pin.
    pub fn import_pinned_or(&mut self, live: &BTreeMap<String, Snapshot>) -> Diagnostics {
        let (mut pinned, mut diags) = self.read_pinned();
        for (_, _, u) in self.upstreams() {
            if u.snapshot.is_none()
                && let Some(s) = live.get(&u.name)
            {
                pinned.insert(u.name.clone(), s.clone());
            }
        }
        for d in self.import(&pinned, &Held::new()).0 {
            diags.push(d);
        }
        diags.sort();
        diags
    }

    /// The pinned snapshot of every upstream that names one, by upstream
    /// name, and the problems reading them (each at the `snapshot` key).
    pub fn read_pinned(&self) -> (BTreeMap<String, Snapshot>, Diagnostics) {
        let mut out = BTreeMap::new();
        let mut diags = Diagnostics::default();
        for (f, at, u) in self.upstreams() {
            let Some(name) = &u.snapshot else { continue };
            let file = &self.tool_files[f];
            let location = file.locate(&at.key("snapshot"));
            let path = file
                .path
                .parent()
                .unwrap_or_else(|| std::path::Path::new(""))
                .join(name);
            let fail = |message: String, help: &str| {
                Diagnostic::error("upstream-snapshot", location.clone(), message).with_help(help)
            };
            let regenerate = format!(
                "write it with `regent upstream snapshot {} -o {}`",
                crate::diag::display_path(&file.path).display(),
                path.display()
            );
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) => {
                    diags.push(fail(
                        format!(
                            "cannot read the snapshot of upstream `{}` at {}: {}",
                            u.name,
                            path.display(),
                            crate::source::files::lower_io(&e)
                        ),
                        &regenerate,
                    ));
                    continue;
                }
            };
            let pinned: Pinned = match serde_json::from_str(&text) {
                Ok(p) => p,
                Err(e) => {
                    diags.push(fail(
                        format!(
                            "the snapshot {} is not a snapshot document: {e}",
                            path.display()
                        ),
                        &format!("it must be `{{\"upstreams\": {{NAME: {{\"tools\": [...]}}}}}}`; {regenerate}"),
                    ));
                    continue;
                }
            };
            match pinned.upstreams.get(&u.name) {
                Some(s) => {
                    out.insert(u.name.clone(), s.clone());
                }
                None => {
                    let known: Vec<String> =
                        pinned.upstreams.keys().map(|k| format!("`{k}`")).collect();
                    diags.push(fail(
                        format!(
                            "the snapshot {} holds no upstream `{}`{}",
                            path.display(),
                            u.name,
                            if known.is_empty() {
                                String::new()
                            } else {
                                format!(" (it holds {})", known.join(", "))
                            }
                        ),
                        &regenerate,
                    ));
                }
            }
        }
        (out, diags)
    }

    fn import(&mut self, snapshots: &BTreeMap<String, Snapshot>, held: &Held) -> Diagnostics {
        let mut diags = Diagnostics::default();
        let mut imported = Vec::new();
        let mut quarantined = Vec::new();
        let mut names: BTreeMap<String, crate::diag::Location> = BTreeMap::new();
        for (file, path, tool) in self.tools() {
            names.insert(tool.name.clone(), file.locate(&path.key("name")));
        }
        let mut seen_upstreams = BTreeSet::new();
        let mut hasher = Sha256::new();
        hasher.update(self.digest.as_bytes());
        for (f, at, u) in self.upstreams() {
            let file = &self.tool_files[f];
            if !seen_upstreams.insert(u.name.clone()) {
                diags.push(
                    Diagnostic::error(
                        "duplicate-upstream",
                        file.locate(&at.key("name")),
                        format!("upstream `{}` is declared twice", u.name),
                    )
                    .with_help("give each upstream its own name"),
                );
                continue;
            }
            // While serving: one that is starting (newly declared) imports
            // nothing until it lists its tools, which reloads again.
            let Some(snapshot) = snapshots.get(&u.name) else {
                continue;
            };
            hasher.update(u.name.as_bytes());
            hasher.update([0]);
            hasher.update(serde_json::to_vec(snapshot).unwrap_or_default());
            // What is held back changes the catalog as the files do (a
            // re-pin is no catalog file, yet it releases tools).
            let held_here = held.get(&u.name);
            if let Some(h) = held_here {
                hasher.update([0]);
                hasher.update(serde_json::to_vec(h).unwrap_or_default());
            }
            let by_name: BTreeMap<&str, &SnapshotTool> = snapshot
                .tools
                .iter()
                .map(|t| (t.name.as_str(), t))
                .collect();
            let prefix = u.prefix.as_deref().unwrap_or("");
            let mut add = |diags: &mut Diagnostics,
                           at: YamlPath,
                           upstream_tool: &SnapshotTool,
                           entry: Option<&UpstreamToolDecl>| {
                let name = entry
                    .and_then(|e| e.rename.clone())
                    .unwrap_or_else(|| format!("{prefix}{}", upstream_tool.name));
                if let Some(reason) = held_here.and_then(|h| h.get(&upstream_tool.name)) {
                    quarantined.push(Quarantined {
                        upstream: u.name.clone(),
                        tool: upstream_tool.name.clone(),
                        listed: name,
                        reason: reason.clone(),
                        pin: u.snapshot.clone().unwrap_or_default(),
                    });
                    return;
                }
                let here = file.locate(&at);
                // One upstream's tool never stops the rest of the catalog:
                // a name MCP's guidance refuses, or one already taken, leaves
                // that tool out, with a warning.
                if let Some(problem) = crate::source::tool_name::check(&name) {
                    diags.push(
                        Diagnostic::warning(
                            "upstream-tool-name",
                            here,
                            format!(
                                "upstream `{}` lists tool {:?}, left out: {problem}",
                                u.name,
                                shorten(&name)
                            ),
                        )
                        .with_help(format!(
                            "{}; give the tool an `as` name under `tools:` of the upstream to list it",
                            crate::source::tool_name::HELP
                        )),
                    );
                    return;
                }
                if let Some(prev) = names.get(&name) {
                    diags.push(
                        Diagnostic::warning(
                            "duplicate-tool",
                            here,
                            format!("upstream `{}` lists tool `{name}`, which is already declared; left out", u.name),
                        )
                        .with_help(format!(
                            "the other declaration is at {prev}; give the upstream a `prefix` or the tool an `as` name"
                        )),
                    );
                    return;
                }
                names.insert(name.clone(), here);
                let claim = upstream_tool.claim();
                let annotations =
                    listed_annotations(entry.and_then(|e| e.annotations.as_ref()), &claim);
                let decl = ToolDecl {
                    name,
                    title: entry
                        .and_then(|e| e.title.clone())
                        .or_else(|| upstream_tool.title.clone()),
                    description: entry
                        .and_then(|e| e.description.clone())
                        .or_else(|| upstream_tool.description.clone()),
                    input_schema: upstream_tool.input_schema.clone(),
                    // The upstream's result is passed through unchanged, so
                    // regent does not validate it against the upstream's
                    // output schema (the upstream does).
                    output_schema: upstream_tool.output_schema.clone(),
                    annotations: (annotations != StaticAnnotations::default())
                        .then_some(annotations),
                    meta: entry.and_then(|e| e.meta.clone()),
                    security_schemes: None,
                    resolve: entry.map(|e| e.resolve.clone()).unwrap_or_default(),
                    policy: entry.and_then(|e| e.policy.clone()),
                    shadow_policy: entry.and_then(|e| e.shadow_policy.clone()),
                    run: None,
                    resolvers: Default::default(),
                    paths: entry.map(|e| e.paths.clone()).unwrap_or_default(),
                    upstream: Some(UpstreamRef {
                        upstream: u.name.clone(),
                        tool: upstream_tool.name.clone(),
                    }),
                };
                imported.push(Imported {
                    file: f,
                    at,
                    decl,
                    entry: entry.cloned(),
                    claim,
                });
            };
            match &u.tools {
                None => {
                    for t in &snapshot.tools {
                        add(&mut diags, at.clone(), t, None);
                    }
                }
                Some(entries) => {
                    for (i, entry) in entries.iter().enumerate() {
                        let entry_at = at.key("tools").index(i);
                        match by_name.get(entry.name.as_str()) {
                            Some(t) => add(&mut diags, entry_at, t, Some(entry)),
                            None => {
                                let known: Vec<String> =
                                    by_name.keys().map(|k| format!("`{k}`")).collect();
                                diags.push(
                                    Diagnostic::error(
                                        "unknown-upstream-tool",
                                        file.locate(&entry_at.key("name")),
                                        format!(
                                            "upstream `{}` lists no tool `{}`",
                                            u.name, entry.name
                                        ),
                                    )
                                    .with_help(
                                        if known.is_empty() {
                                            "the upstream lists no tools".to_string()
                                        } else {
                                            format!("the upstream lists {}", known.join(", "))
                                        },
                                    ),
                                );
                            }
                        }
                    }
                }
            }
        }
        if !seen_upstreams.is_empty() {
            self.digest = base16ct::lower::encode_string(&hasher.finalize());
        }
        self.imported = imported;
        self.quarantined = quarantined;
        diags.sort();
        diags
    }
}
