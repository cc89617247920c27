//! Upstream MCP servers as a tool source: the `upstreams:` section of a tool
//! file, the snapshot of an upstream's tools, and importing a snapshot's
//! tools as tool declarations.
//!
//! Everything here is data. Starting an upstream and listing its tools is
//! `crate::upstream`'s job (a side effect, outside the catalog build); what
//! it learns travels as a [`Snapshot`], or is read from a pinned file that
//! `regent upstream snapshot` wrote (`snapshot:`, [`Source::import_pinned`],
//! what `check`, `test` and `resolve` use instead of starting upstreams).
//! [`Source::import_upstreams`] turns the snapshots into
//! [`ToolDecl`]s beside the declared tools, so the catalog build compiles an
//! imported tool exactly as an own one: listed annotations, `resolve:` rules
//! and a `policy:` package (and a log-only `shadow_policy:`), with
//! `tools/call` forwarded to the upstream instead of running a `run:`
//! section.
//!
//! The listed annotations of an imported tool are, hint by hint, the team's
//! (`annotations:` on the tool's entry), else the upstream's own claim; a
//! hint neither gives stays unsaid, so the catalog lists MCP's risky default
//! for it. Without the team's word, the listing is therefore never safer than
//! the upstream says.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::model::{MappingRule, StaticAnnotations, ToolDecl};
// Defined beside `ToolDecl`, which carries it; named here too, where the
// rest of what an upstream is lives.
pub use super::model::UpstreamRef;
use super::run::{AuthDecl, EnvDecl};
use super::{Source, YamlPath};
use crate::diag::{Diagnostic, Diagnostics};

/// One upstream MCP server: started by regent as a child over stdio
/// (`command:`), or reached over Streamable HTTP (`url:`). Exactly one of
/// the two ([`check_endpoints`] says so when a file gives neither or both).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamDecl {
    /// Unique in the catalog; names the upstream in errors and the decision log.
    pub name: String,
    /// An absolute path, a path relative to the tool file, or a name looked
    /// up in regent's `PATH`.
    #[serde(default)]
    pub command: Option<String>,
    /// The upstream's MCP endpoint (`http://` or `https://`), reached with
    /// MCP's Streamable HTTP transport.
    #[serde(default)]
    pub url: Option<String>,
    /// How regent authenticates to a `url:` upstream: as `run.http.auth`,
    /// exactly one of `bearer`, `basic` or `header`, each secret kept
    /// outside the catalog and read at each connection (so a rotated token
    /// is picked up at the next reconnect).
    #[serde(default)]
    pub auth: Option<AuthDecl>,
    #[serde(default)]
    pub args: Vec<String>,
    /// The child's environment, as for `run.cli.env`: nothing is inherited
    /// beyond the allow-list.
    #[serde(default)]
    pub env: Option<EnvDecl>,
    /// Put before every imported tool's name (`notes_` + `read_note`).
    #[serde(default)]
    pub prefix: Option<String>,
    /// How long one forwarded call may take (`60s` when absent): `500ms`,
    /// `30s`, `2m`.
    #[serde(default)]
    pub timeout: Option<super::run::Text>,
    /// How long the upstream has to start and list its tools, at start-up
    /// and at each restart (`30s` when absent).
    #[serde(default)]
    pub start_timeout: Option<super::run::Text>,
    /// The most of one result regent passes on (`1MiB` when absent, as
    /// `run.cli.maxOutput`): `64KiB`, `1MiB`, or bytes. A bigger result is
    /// cut to its first text and is an error.
    #[serde(default)]
    pub max_output: Option<super::run::Text>,
    /// The upstream's tools to import, with regent's side of each. Absent:
    /// every tool the upstream lists, as it lists it.
    #[serde(default)]
    pub tools: Option<Vec<UpstreamToolDecl>>,
    /// A pinned snapshot of the upstream's tools (a [`Pinned`] document, as
    /// `regent upstream snapshot` writes it), relative to the tool file.
    /// `check`, `test` and `resolve` import it instead of starting the
    /// upstream; `serve` starts the upstream and quarantines (or, with
    /// `on_drift: warn`, only warns about) each tool whose live definition
    /// differs from the pin.
    #[serde(default)]
    pub snapshot: Option<String>,
    /// What `serve` does with a tool whose live definition differs from the
    /// pin (or that the pin lacks): `quarantine` (when absent: neither
    /// listed nor callable until the pin matches) or `warn` (log it and
    /// serve it). Read by [`UpstreamDecl::on_drift`].
    #[serde(default)]
    pub on_drift: Option<super::run::Text>,
}

/// What `serve` does with an upstream tool that drifted from its pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDrift {
    /// Not listed, its calls refused, until the pin matches again.
    Quarantine,
    /// Logged at each load and served as the upstream lists it.
    Warn,
}

/// The values `on_drift` takes, as errors name them.
pub const ON_DRIFT_VALUES: &str = "`quarantine` (the default) or `warn`";

/// How regent reaches an upstream, as its declaration says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint<'a> {
    /// A child over stdio: the `command` to run.
    Command(&'a str),
    /// Streamable HTTP: the `url`.
    Url(&'a str),
}

impl UpstreamDecl {
    /// How to reach the upstream; `None` when the declaration gives neither
    /// or both of `command` and `url` (the catalog then does not load).
    pub fn endpoint(&self) -> Option<Endpoint<'_>> {
        match (&self.command, &self.url) {
            (Some(c), None) => Some(Endpoint::Command(c)),
            (None, Some(u)) => Some(Endpoint::Url(u)),
            _ => None,
        }
    }

    /// Whether `other` is reached the same way: the same `command`, `args`,
    /// `env`, `url`, `auth`, `timeout` and `start_timeout`. What is imported
    /// (`prefix`, `tools`, `snapshot`) does not count: the catalog's build
    /// applies it, with no restart.
    pub fn same_connection(&self, other: &UpstreamDecl) -> bool {
        self.name == other.name
            && self.command == other.command
            && self.args == other.args
            && self.env == other.env
            && self.url == other.url
            && self.auth == other.auth
            && self.timeout == other.timeout
            && self.start_timeout == other.start_timeout
    }

    /// `start_timeout`, `timeout` and `max_output` as given (`None`: not
    /// given, the default applies), and each one that cannot be read. The
    /// one reading of them: [`check_endpoints`] reports what cannot be read
    /// when the catalog loads (so a reload that adds one fails, located, as
    /// any catalog error does), and `upstream` takes the limits.
    pub fn limits(&self) -> (Limits, Vec<Unreadable>) {
        let mut bad = Vec::new();
        let mut duration = |key: &'static str, given: &Option<super::run::Text>| {
            let text = given.as_ref()?;
            let d = super::run::parse_duration(&text.0);
            if d.is_none() {
                bad.push(Unreadable::duration(key, &text.0));
            }
            d
        };
        let start_timeout = duration("start_timeout", &self.start_timeout);
        let timeout = duration("timeout", &self.timeout);
        let max_output =
            self.max_output
                .as_ref()
                .and_then(|text| match super::run::parse_size(&text.0) {
                    Some(n) if n > 0 => Some(n),
                    _ => {
                        bad.push(Unreadable::size("max_output", &text.0));
                        None
                    }
                });
        let limits = Limits {
            start_timeout,
            timeout,
            max_output,
        };
        (limits, bad)
    }

    /// `on_drift` as given (`quarantine` when absent); `None` for a value
    /// that is neither, which [`check_endpoints`] reports.
    pub fn on_drift(&self) -> Option<OnDrift> {
        match self.on_drift.as_ref().map(|t| t.0.as_str()) {
            None | Some("quarantine") => Some(OnDrift::Quarantine),
            Some("warn") => Some(OnDrift::Warn),
            Some(_) => None,
        }
    }

    /// The key errors about reaching the upstream point at.
    pub fn endpoint_key(&self) -> &'static str {
        if self.url.is_some() && self.command.is_none() {
            "url"
        } else if self.command.is_some() {
            "command"
        } else {
            "name"
        }
    }
}

/// An upstream's own limits, as [`UpstreamDecl::limits`] reads them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub start_timeout: Option<std::time::Duration>,
    pub timeout: Option<std::time::Duration>,
    pub max_output: Option<usize>,
}

/// A limit of an upstream's declaration that cannot be read.
#[derive(Debug, Clone)]
pub struct Unreadable {
    pub key: &'static str,
    pub code: &'static str,
    /// "a duration", "a size"
    pub kind: &'static str,
    pub text: String,
    pub help: &'static str,
}

impl Unreadable {
    fn duration(key: &'static str, text: &str) -> Unreadable {
        Unreadable {
            key,
            code: "upstream-duration",
            kind: "a duration",
            text: text.to_string(),
            help: "write a duration such as `500ms`, `30s` or `2m`",
        }
    }

    fn size(key: &'static str, text: &str) -> Unreadable {
        Unreadable {
            key,
            code: "bad-size",
            kind: "a size",
            text: text.to_string(),
            help: "write bytes or a number with a unit: `65536`, `64KiB`, `1MiB`",
        }
    }

    /// The error, at its key in the upstream's declaration (`at`) in `file`.
    pub fn diagnostic(
        &self,
        file: &super::ToolSource,
        at: &YamlPath,
        upstream: &str,
    ) -> Diagnostic {
        Diagnostic::error(
            self.code,
            file.locate(&at.key(self.key)),
            format!(
                "`{}` of upstream `{upstream}` is not {}: `{}`",
                self.key, self.kind, self.text
            ),
        )
        .with_help(self.help)
    }
}

/// Every problem with how an upstream is to be reached: neither or both of
/// `command` and `url`, a `url` that is not http(s), keys that only apply to
/// the other kind, and an `auth` that `run.http.auth` would refuse
/// ([`AuthDecl::compile`], the one check of both), and a `timeout`,
/// `start_timeout` or `max_output` that cannot be read
/// ([`UpstreamDecl::limits`]), and an `on_drift` that is neither
/// `quarantine` nor `warn`. Found when the catalog loads, so `check`
/// reports them, `serve` refuses to start with them and a reload with them
/// fails, located, keeping the catalog and upstreams that serve.
pub fn check_endpoints(source: &Source, diags: &mut Diagnostics) {
    for (f, at, u) in source.upstreams() {
        let file = &source.tool_files[f];
        for bad in u.limits().1 {
            diags.push(bad.diagnostic(file, &at, &u.name));
        }
        if u.on_drift().is_none() {
            let given = u
                .on_drift
                .as_ref()
                .map(|t| t.0.as_str())
                .unwrap_or_default();
            diags.push(
                Diagnostic::error(
                    "upstream-on-drift",
                    file.locate(&at.key("on_drift")),
                    format!(
                        "`on_drift` of upstream `{}` is `{given}`, which regent does not know",
                        u.name
                    ),
                )
                .with_help(format!("write {ON_DRIFT_VALUES}")),
            );
        }
        let err = |key: YamlPath, message: String, help: &str| {
            Diagnostic::error("upstream-endpoint", file.locate(&key), message).with_help(help)
        };
        match (&u.command, &u.url) {
            (None, None) => diags.push(err(
                at.key("name"),
                format!("upstream `{}` gives neither `command` nor `url`", u.name),
                "add `command:` to start it as a child over stdio, or `url:` to reach it over streamable http",
            )),
            (Some(_), Some(_)) => diags.push(err(
                at.key("url"),
                format!("upstream `{}` gives both `command` and `url`", u.name),
                "keep one: `command:` starts it as a child over stdio, `url:` reaches a running server over streamable http",
            )),
            (Some(_), None) => {
                if u.auth.is_some() {
                    diags.push(err(
                        at.key("auth"),
                        format!("`auth` of upstream `{}` applies only to a `url:` upstream", u.name),
                        "remove it; give a child its credentials through `env.set`",
                    ));
                }
            }
            (None, Some(url)) => {
                let parsed = reqwest::Url::parse(url);
                match parsed {
                    Ok(p) if matches!(p.scheme(), "http" | "https") && p.host().is_some() => {}
                    Ok(_) => diags.push(err(
                        at.key("url"),
                        format!("`url` of upstream `{}` is not an http or https url: `{url}`", u.name),
                        "write the upstream's mcp endpoint, such as `https://mcp.example.com/mcp`",
                    )),
                    Err(e) => diags.push(err(
                        at.key("url"),
                        format!("`url` of upstream `{}` is not a url: `{url}` ({e})", u.name),
                        "write the upstream's mcp endpoint, such as `https://mcp.example.com/mcp`",
                    )),
                }
                for (key, given) in [("args", !u.args.is_empty()), ("env", u.env.is_some())] {
                    if given {
                        diags.push(err(
                            at.key(key),
                            format!("`{key}` of upstream `{}` applies only to a `command:` upstream", u.name),
                            "remove it; a `url:` upstream is a server that is already running",
                        ));
                    }
                }
                if let Some(Err(problems)) = u
                    .auth
                    .as_ref()
                    .map(|a| a.compile(&at.key("auth"), &base_dir(&file.path)))
                {
                    for p in problems {
                        diags.push(
                            Diagnostic::error(
                                p.code,
                                file.locate(&p.at),
                                format!("`auth` of upstream `{}`: {}", u.name, p.message),
                            )
                            .with_help(p.help),
                        );
                    }
                }
            }
        }
    }
}

/// One imported tool: which upstream tool, under what name, and regent's
/// own fields for it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamToolDecl {
    /// The tool's name on the upstream.
    pub name: String,
    /// The name regent lists it under (instead of `prefix` + `name`).
    #[serde(rename = "as", default)]
    pub rename: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// The team's worst case; hints left out come from the upstream's claim.
    #[serde(default)]
    pub annotations: Option<StaticAnnotations>,
    #[serde(default)]
    pub meta: Option<Map<String, Value>>,
    #[serde(default)]
    pub resolve: Vec<MappingRule>,
    #[serde(default)]
    pub policy: Option<String>,
    /// A package decided alongside `policy` and only logged (`shadow` in the
    /// decision log), as an own tool's `shadow_policy`.
    #[serde(default)]
    pub shadow_policy: Option<String>,
    /// Listed hints the team knows to be safer than the upstream's own claim,
    /// each with the reason; without it, `check` refuses such a listing.
    #[serde(default)]
    pub safer_than_upstream: Option<SaferThanUpstream>,
    /// Path arguments fenced under a root, as an own tool's `paths`.
    #[serde(default)]
    pub paths: BTreeMap<String, super::model::PathDecl>,
}

/// Why the team lists a hint safer than the upstream claims, hint by hint.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaferThanUpstream {
    #[serde(rename = "readOnlyHint", default)]
    pub read_only: Option<String>,
    #[serde(rename = "destructiveHint", default)]
    pub destructive: Option<String>,
    #[serde(rename = "idempotentHint", default)]
    pub idempotent: Option<String>,
    #[serde(rename = "openWorldHint", default)]
    pub open_world: Option<String>,
}

impl SaferThanUpstream {
    /// The reason given for the hint called `key` (`readOnlyHint`, ...).
    pub fn reason(&self, key: &str) -> Option<&str> {
        match key {
            "readOnlyHint" => self.read_only.as_deref(),
            "destructiveHint" => self.destructive.as_deref(),
            "idempotentHint" => self.idempotent.as_deref(),
            "openWorldHint" => self.open_world.as_deref(),
            _ => None,
        }
    }
}

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
fn shorten(name: &str) -> String {
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
fn drifted(pinned: &Snapshot, live: &Snapshot) -> BTreeMap<String, String> {
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

/// Tools held back from import, by upstream name, then by the upstream's
/// name for the tool, with why.
type Held = BTreeMap<String, BTreeMap<String, String>>;

/// An upstream as a catalog declares it, with the directory its relative
/// paths (`command`, `env` and `auth` files) are resolved against: what
/// `upstream` needs to start it, handed over by the reload thread when the
/// files change.
#[derive(Debug, Clone)]
pub struct Declared {
    pub decl: UpstreamDecl,
    pub base_dir: std::path::PathBuf,
}

impl Declared {
    /// Whether `other` is reached the same way (see
    /// [`UpstreamDecl::same_connection`]), from the same directory.
    pub fn same_connection(&self, other: &Declared) -> bool {
        self.base_dir == other.base_dir && self.decl.same_connection(&other.decl)
    }
}

/// The directory the relative paths of a declaration in the tool file at
/// `path` are resolved against.
pub fn base_dir(path: &std::path::Path) -> std::path::PathBuf {
    std::path::absolute(path)
        .ok()
        .and_then(|p| p.parent().map(std::path::Path::to_path_buf))
        .unwrap_or_else(|| std::path::PathBuf::from("/"))
}

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
                            super::files::lower_io(&e)
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
                if let Some(problem) = super::tool_name::check(&name) {
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
                            super::tool_name::HELP
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

#[cfg(test)]
mod tests {
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
}
