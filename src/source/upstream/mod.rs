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
//! [`ToolDecl`](super::model::ToolDecl)s beside the declared tools, so the catalog build compiles an
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

mod import;
mod snapshot;

pub use snapshot::{
    Imported, Pinned, Quarantined, Snapshot, SnapshotTool, differences, listed_annotations,
};

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::model::{MappingRule, StaticAnnotations};
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

#[cfg(test)]
mod tests;
