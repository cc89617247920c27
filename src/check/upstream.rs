//! What `regent check` says about tools imported from upstream MCP servers,
//! beyond what it says of every tool: which upstreams it could not look at
//! (no pinned `snapshot:`, and not started with `--start-upstreams`), which imported tools the team has said nothing
//! about, and which listings are safer than the upstream's own claim.
//!
//! The tools come from pinned snapshots (`Source::import_pinned_or`), or
//! from upstreams `commands/check` started for the occasion; once
//! imported they are ordinary tool declarations, so policy rules and
//! `resolve: when:` keys naming arguments the upstream's inputSchema lacks
//! are found by the build's own checks (`rego/refs`, the mapping
//! rules), as for own tools.

use crate::catalog::hints::Hint;
use crate::diag::Diagnostic;
use crate::source::Source;
use crate::source::upstream::Imported;

/// Every upstream-specific finding of the catalog in `source`, whose pinned
/// snapshots have been imported.
/// `started`: upstreams without a pin were started for the check (each
/// was then imported, or its failure reported).
pub fn findings(source: &Source, started: bool) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (f, at, u) in source.upstreams() {
        if u.snapshot.is_some() || started {
            continue;
        }
        out.push(
            Diagnostic::warning(
                "upstream-not-checked",
                source.tool_files[f].locate(&at.key("name")),
                format!(
                    "the tools of upstream `{}` are not checked: it names no pinned `snapshot:`",
                    u.name
                ),
            )
            .with_help({
                let file = crate::diag::display_path(&source.tool_files[f].path);
                let pin = file
                    .parent()
                    .unwrap_or_else(|| std::path::Path::new(""))
                    .join(format!("{}.snapshot.json", u.name));
                format!(
                    "pin its tool list: `regent upstream snapshot {} -o {}`, then add `snapshot: {}.snapshot.json` to the upstream; or run `regent check --start-upstreams` where it can be started (or reached, for a `url:` upstream)",
                    file.display(),
                    pin.display(),
                    u.name
                )
            }),
        );
    }
    for i in &source.imported {
        out.extend(ungoverned(source, i));
        out.extend(understated(source, i));
    }
    out
}

/// An imported tool with neither listed annotations of the team's, nor
/// `resolve:` rules, nor a policy: its listing is only the upstream's word.
fn ungoverned(source: &Source, i: &Imported) -> Option<Diagnostic> {
    let said = i
        .entry
        .as_ref()
        .is_some_and(|e| e.annotations.is_some() || !e.resolve.is_empty() || e.policy.is_some());
    if said {
        return None;
    }
    let upstream = i.decl.upstream.as_ref().map_or("", |r| r.upstream.as_str());
    Some(
        Diagnostic::warning(
            "upstream-ungoverned",
            source.tool_files[i.file].locate(&i.at),
            format!(
                "`{}` is imported from upstream `{upstream}` with neither annotations, `resolve:` rules nor a policy of the team's: it is listed and allowed as the upstream claims",
                i.decl.name
            ),
        )
        .with_help(if i.entry.is_some() {
            "give its entry the team's worst case (`annotations:`), `resolve:` rules or a `policy:`, or remove the entry so it is not served".to_string()
        } else {
            format!(
                "list the tools to serve under the upstream's `tools:` (`- name: {}`), each with the team's worst case (`annotations:`), `resolve:` rules or a `policy:`",
                i.decl.upstream.as_ref().map_or("", |r| r.tool.as_str())
            )
        }),
    )
}

/// Hints the team lists safer than the upstream explicitly claims, unless
/// acknowledged in `safer_than_upstream` with a reason; and acknowledgements
/// that no longer acknowledge anything. A hint the upstream leaves unsaid is
/// not compared: the team's word is then the only one.
fn understated(source: &Source, i: &Imported) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let Some(entry) = &i.entry else {
        return out;
    };
    let file = &source.tool_files[i.file];
    let team = entry.annotations.clone().unwrap_or_default();
    let acknowledged = entry.safer_than_upstream.clone().unwrap_or_default();
    let upstream = i.decl.upstream.as_ref().map_or("", |r| r.upstream.as_str());
    let tool = i.decl.upstream.as_ref().map_or("", |r| r.tool.as_str());
    for h in Hint::ALL {
        let key = h.key();
        let get = |a: &crate::source::StaticAnnotations| match h {
            Hint::ReadOnly => a.read_only,
            Hint::Destructive => a.destructive,
            Hint::Idempotent => a.idempotent,
            Hint::OpenWorld => a.open_world,
        };
        let safer = get(&team) == Some(h.safe_value()) && get(&i.claim) == Some(!h.safe_value());
        let reason = acknowledged.reason(key).map(str::trim);
        match (safer, reason) {
            (true, Some(r)) if !r.is_empty() => {}
            (true, _) => out.push(
                Diagnostic::error(
                    "understates-upstream",
                    file.locate(&i.at.key("annotations").key(key)),
                    format!(
                        "`{}` lists {key}: {} but upstream `{upstream}` claims {} for `{tool}`: the listing is safer than the upstream's own word",
                        i.decl.name,
                        h.safe_value(),
                        !h.safe_value()
                    ),
                )
                .with_help(format!(
                    "list {key}: {} (the upstream's claim, or riskier), or if the team knows better, say why under the tool's `safer_than_upstream: {{{key}: \"...\"}}`",
                    !h.safe_value()
                )),
            ),
            (false, Some(_)) => out.push(
                Diagnostic::warning(
                    "safer-than-upstream-unused",
                    file.locate(&i.at.key("safer_than_upstream").key(key)),
                    format!(
                        "`{}` acknowledges a {key} safer than upstream `{upstream}` claims, but its listing is not safer than the claim ({})",
                        i.decl.name,
                        match get(&i.claim) {
                            Some(v) => format!("the upstream claims {v}"),
                            None => "the upstream says nothing".to_string(),
                        }
                    ),
                )
                .with_help(format!("remove `{key}` from `safer_than_upstream`")),
            ),
            (false, None) => {}
        }
    }
    out
}
