//! The decision log: one JSON line for every resolve and every call decision.
//!
//! Each line says which tool, a digest of the arguments (the arguments
//! themselves only when the operator asks), the resolved annotations, whether
//! the call was allowed and why not, the catalog revision that decided, and a
//! decision id that the call result also carries. Call lines add how the
//! execution ended and how long it took. Secrets are never in a line: they
//! are read by `exec` at the moment of use and never pass through here.
//!
//! Every line also carries the fields of OPA's decision-log event
//! (`decision_id`, `timestamp`, `path`, `input`, `result`, `labels`,
//! `bundles`, `metrics`), after regent's own, so OPA's tooling can ingest
//! the lines while existing readers keep theirs; see [`Entry::line`].
//!
//! A tool with a `shadow_policy` adds the shadow decision to its lines, in a
//! `shadow` object shaped like OPA's `result` (see [`ShadowEntry`]); a
//! shadow decision is logged, never acted on. `--decision-log-mask` erases
//! paths of the input from every line before it is written, as OPA's
//! masking does, and says which in `erased` (see [`Mask`]).
//!
//! This module writes lines, off the request path: a request queues its
//! entry and a writer thread ([`writer`]) digests, formats and writes it,
//! and hands each line to the HTTP sink ([`ship`]) when one is configured.
//! What goes in them is decided by `protocol`, which sees both the decision
//! and the outcome.

pub mod ship;
mod writer;

use std::borrow::Cow;
use std::fs::OpenOptions;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value, json};

use crate::caller::Caller;
use crate::timestamp::rfc3339;
use ship::Shipper;
pub use writer::{CAPACITY, STALL_AFTER, Stalled};
use writer::{Sink, Writer};

/// Where decision lines go. Lines are written by a thread of their own
/// ([`writer`]): recording an entry queues it and returns.
pub struct DecisionLog {
    writer: Writer,
    /// The HTTP sink, closed after the writer has handed it every line.
    shipper: Option<Arc<Shipper>>,
}

/// How lines are made and where else they go, beside the file or stderr.
#[derive(Default)]
pub struct Options {
    pub log_arguments: bool,
    /// `--decision-log-label KEY=VALUE`, added to `labels` after `id` and
    /// `version`.
    pub labels: Vec<(String, String)>,
    /// `--decision-log-url`: every line is also posted there.
    pub shipper: Option<Arc<Shipper>>,
    /// `--decision-log-mask PATH`: erased from every line's input.
    pub mask: Vec<Mask>,
    /// `--decision-log-sync`: a call's intent line is synced to disk before
    /// the call runs anything.
    pub sync: bool,
    /// `--decision-log-line-bytes`: the largest line (default
    /// [`DEFAULT_LINE_BYTES`]).
    pub line_limit: Option<usize>,
    /// `serve --bundle-url`: the bundles catalogs came from, so that a line
    /// names the bundle (and its revision) of the catalog that decided.
    pub bundles: Option<Arc<crate::state::Bundles>>,
}

impl DecisionLog {
    /// Lines to standard error (beside regent's other logs).
    pub fn stderr(log_arguments: bool) -> DecisionLog {
        DecisionLog::to_stderr(Options {
            log_arguments,
            ..Options::default()
        })
    }

    /// Lines to standard error, made and shipped as `options` says.
    pub fn to_stderr(options: Options) -> DecisionLog {
        DecisionLog::with_sink(Sink::Stderr, options)
    }

    /// Lines appended to the file at `path`, created if missing.
    pub fn file(path: &Path, options: Options) -> std::io::Result<DecisionLog> {
        let f = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(DecisionLog::with_sink(Sink::File(f), options))
    }

    fn with_sink(sink: Sink, options: Options) -> DecisionLog {
        let format = Format::new(options.log_arguments, &options.labels)
            .masking(options.mask)
            .limiting(options.line_limit.unwrap_or(DEFAULT_LINE_BYTES))
            .naming_bundles(options.bundles.clone());
        DecisionLog {
            writer: Writer::configured(
                sink,
                format,
                options.shipper.clone(),
                CAPACITY,
                STALL_AFTER,
                options.sync,
            ),
            shipper: options.shipper,
        }
    }

    /// Queues one entry, to be written as one line. Waits while the queue is
    /// full; fails only when the log has stalled (see [`writer`]): the
    /// caller must then not act on the decision. A failed write is reported
    /// in regent's log and does not fail the request: the decision was
    /// already made.
    pub fn record(&self, entry: Entry) -> Result<(), Stalled> {
        self.writer.push(entry)
    }

    /// Records a call's intent line and returns once it is written to the
    /// log's destination (and synced, with `--decision-log-sync`), so that
    /// no side effect lacks its line, even after `kill -9`. Fails when the
    /// log has stalled, or the line was not written within [`STALL_AFTER`]
    /// or its write failed: the caller must then not act on the decision.
    pub async fn record_before_effect(&self, entry: Entry) -> Result<(), Stalled> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.writer.push_acked(entry, tx)?;
        match tokio::time::timeout(STALL_AFTER, rx).await {
            Ok(Ok(())) => Ok(()),
            _ => Err(Stalled::default()),
        }
    }

    /// Whether entries are refused because the log has stalled; a call
    /// checks this before it runs anything, and refuses itself when it is.
    /// A true answer therefore counts one refused decision in the log's
    /// next `gap` line: it must be asked once per decision, and only by a
    /// caller that then refuses it.
    pub fn is_stalled(&self) -> bool {
        self.writer.refuse_if_stalled()
    }

    /// Writes every queued line, flushes and stops the writer thread. Entries
    /// recorded later are written directly. Serving calls this on every way
    /// out (end of input, SIGTERM/SIGINT, HTTP shutdown); dropping the log
    /// does it too.
    pub fn close(&self) {
        self.writer.close();
        if let Some(s) = &self.shipper {
            s.close();
        }
    }
}

/// What every line of one log shares: whether arguments are logged, and the
/// OPA `labels` object, serialized once.
#[derive(Debug, Clone)]
pub struct Format {
    pub log_arguments: bool,
    labels: Vec<u8>,
    /// Paths erased from the input of every line, in the order given.
    mask: Vec<Mask>,
    /// `--decision-log-line-bytes`: the largest line; a larger one is cut
    /// where it is made, and says what it lost (see [`Entry::line`]).
    line_limit: usize,
    /// Which bundle each catalog revision came from (`serve --bundle-url`).
    bundles: Option<Arc<crate::state::Bundles>>,
}

/// The default `--decision-log-line-bytes`: 1 MiB.
pub const DEFAULT_LINE_BYTES: usize = 1 << 20;
/// The smallest `--decision-log-line-bytes`: room for a line whose every
/// client- or policy-sized field was cut.
pub const MIN_LINE_BYTES: usize = 16 << 10;
/// What a field cut from an oversized line keeps: strings are clipped to
/// this many bytes, and a field whose JSON is larger is replaced by a marker.
const CUT_KEEPS: usize = 1024;
/// How many deny reasons an oversized line keeps.
const CUT_REASONS: usize = 4;

/// `--decision-log-line-bytes`, checked: a size such as `1MiB` or `65536`,
/// at least [`MIN_LINE_BYTES`].
pub fn parse_line_bytes(text: &str) -> Result<usize, String> {
    match crate::source::run::parse_size(text) {
        Some(n) if n >= MIN_LINE_BYTES => Ok(n),
        _ => Err(format!(
            "invalid --decision-log-line-bytes {text:?}: give a size of at least 16KiB, for example 1MiB or 262144 (default 1MiB)"
        )),
    }
}

impl Format {
    /// `labels` is `{"id": the instance id, "version": regent's version}`
    /// followed by `extra` (checked by [`parse_label`]: never `id` or
    /// `version`).
    pub fn new(log_arguments: bool, extra: &[(String, String)]) -> Format {
        let mut labels = Map::new();
        labels.insert("id".into(), json!(instance_id()));
        labels.insert("version".into(), json!(env!("CARGO_PKG_VERSION")));
        for (k, v) in extra {
            labels.insert(k.clone(), json!(v));
        }
        Format {
            log_arguments,
            labels: serde_json::to_vec(&labels).expect("labels serialize"),
            mask: Vec::new(),
            line_limit: DEFAULT_LINE_BYTES,
            bundles: None,
        }
    }

    /// The same format, naming in `bundles` the bundle a catalog came from.
    pub fn naming_bundles(mut self, bundles: Option<Arc<crate::state::Bundles>>) -> Format {
        self.bundles = bundles;
        self
    }

    /// The line's `bundles`: OPA's `{name: {revision}}`, the bundle the
    /// deciding catalog came from; `regent` and the catalog's digest when
    /// it came from files.
    fn bundles_member(&self, revision: &str) -> Value {
        match self.bundles.as_ref().and_then(|b| b.of(revision)) {
            Some(b) => json!({ b.name.clone(): {"revision": b.revision} }),
            None => json!({"regent": {"revision": revision}}),
        }
    }

    /// The same format, cutting lines over `bytes` (at least
    /// [`MIN_LINE_BYTES`]).
    pub fn limiting(mut self, bytes: usize) -> Format {
        self.line_limit = bytes.max(MIN_LINE_BYTES);
        self
    }

    /// The same format, erasing `mask` from every line's input.
    pub fn masking(mut self, mask: Vec<Mask>) -> Format {
        self.mask = mask;
        self
    }
}

/// One `--decision-log-mask` path: a JSON pointer into the policy input as
/// the line records it (OPA's `/input/...` masks), erased before the line
/// leaves the process.
///
/// - `/input/arguments/<key>[/<key>...]`: an argument, or a member of an
///   object argument, at any depth: removed from `arguments` (with
///   `--log-arguments`) and from `input.arguments`, and the line's
///   `argumentsDigest` is then of the masked arguments, so that the digest
///   cannot be used to test guesses of an erased value;
/// - `/input/caller`, `/input/caller/subject`, `/input/caller/issuer`: the
///   caller, or one of its two logged members, removed from `caller` and
///   `input.caller`. (`/input/caller/claims/...` is accepted, for masks
///   written for OPA, and never erases anything: a line never holds claims.)
///
/// Keys are unescaped as in JSON pointers (`~1` is `/`, `~0` is `~`); a path
/// steps through objects only. A path that is absent from a line erases
/// nothing and is not listed in its `erased`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mask {
    text: String,
    root: MaskRoot,
    /// The keys below the root, unescaped.
    keys: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MaskRoot {
    Arguments,
    Caller,
}

/// Parses one `--decision-log-mask` path.
pub fn parse_mask(text: &str) -> Result<Mask, String> {
    let hint = "mask a path under /input/arguments or /input/caller, for example --decision-log-mask /input/arguments/password";
    let Some(rest) = text.strip_prefix("/input/") else {
        return Err(format!(
            "decision-log mask {text:?} is not a path into the logged input: {hint}"
        ));
    };
    let mut parts = rest.split('/');
    let root = match parts.next() {
        Some("arguments") => MaskRoot::Arguments,
        Some("caller") => MaskRoot::Caller,
        Some("tool") => {
            return Err(format!(
                "decision-log mask {text:?} would erase the tool name, which every line keeps: {hint}"
            ));
        }
        _ => {
            return Err(format!(
                "decision-log mask {text:?} names no part of the logged input: {hint}"
            ));
        }
    };
    let keys: Vec<String> = parts
        .map(|k| k.replace("~1", "/").replace("~0", "~"))
        .collect();
    if keys.iter().any(String::is_empty) {
        return Err(format!(
            "decision-log mask {text:?} has an empty key (a doubled or trailing '/'): {hint}"
        ));
    }
    if root == MaskRoot::Arguments && keys.is_empty() {
        return Err(format!(
            "decision-log mask {text:?} would erase every argument: name one (/input/arguments/KEY), or leave out --log-arguments to log only their digest"
        ));
    }
    Ok(Mask {
        text: text.to_string(),
        root,
        keys,
    })
}

/// What a line shows of the input once its masks are applied.
struct Masked<'a> {
    arguments: Cow<'a, Value>,
    subject: bool,
    issuer: bool,
    /// The masks that erased something, in the order configured.
    erased: Vec<&'a str>,
}

impl Masked<'_> {
    fn caller<'c>(&self, c: &'c Caller) -> Option<CallerRef<'c>> {
        (self.subject || self.issuer).then(|| CallerRef {
            subject: self.subject.then_some(c.subject.as_str()),
            issuer: self.issuer.then_some(c.issuer.as_str()),
        })
    }
}

/// Removes the member at `keys` (objects only) from `v`; whether it was there.
fn erase(v: &mut Value, keys: &[String]) -> bool {
    let Some((last, path)) = keys.split_last() else {
        return false;
    };
    let mut at = v;
    for k in path {
        match at.get_mut(k.as_str()) {
            Some(next) => at = next,
            None => return false,
        }
    }
    at.as_object_mut().and_then(|m| m.remove(last)).is_some()
}

fn holds(v: &Value, keys: &[String]) -> bool {
    let mut at = v;
    for k in keys {
        match at.get(k.as_str()) {
            Some(next) => at = next,
            None => return false,
        }
    }
    true
}

/// This process's id in OPA's `labels.id`: a UUID made once per process,
/// so a collector can tell regent instances apart.
pub fn instance_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(new_id)
}

/// One `--decision-log-label` value, `KEY=VALUE`.
pub fn parse_label(text: &str) -> Result<(String, String), String> {
    let Some((k, v)) = text.split_once('=') else {
        return Err(format!(
            "decision-log label {text:?} has no '=': write it as KEY=VALUE, for example --decision-log-label env=prod"
        ));
    };
    let k = k.trim();
    if k.is_empty() {
        return Err(format!(
            "decision-log label {text:?} has an empty key: write it as KEY=VALUE"
        ));
    }
    if k == "id" || k == "version" {
        return Err(format!(
            "decision-log label {k} is set by regent (the instance id and regent's version): choose another key"
        ));
    }
    Ok((k.to_string(), v.to_string()))
}

/// Which request decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Resolve,
    Call,
    /// A request an upstream sent during a forwarded call (its `method`:
    /// `elicitation/create`, `roots/list`, `sampling/createMessage`),
    /// decided by the tool's `upstream_request` rule or its default; the
    /// line carries the call's id, and `allowed` means relayed.
    UpstreamRequest,
}

/// Where a call's line stands relative to what the call does. A call that
/// runs something writes an `intent` line (the decision, before anything
/// runs) and an `outcome` line (the same decision with how it ended), with
/// one id; every other decision is one line without a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Intent,
    Outcome,
}

/// The decision itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    Denied(Vec<String>),
    /// The decision could not be made (invalid arguments, a failing policy);
    /// nothing ran.
    Error(String),
}

/// One decision, and for calls what followed it.
///
/// Built on the request path, so it holds the raw parts: the digest, the id
/// of a resolve line and the JSON are made by the writer thread.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Calls carry their id in the result, so it is made with the entry;
    /// `None` (resolve lines, whose answers carry no id) gets a fresh one
    /// when the line is written.
    pub id: Option<String>,
    pub kind: Kind,
    /// `intent` or `outcome` for a call that runs something (see [`Phase`]).
    pub phase: Option<Phase>,
    /// The JSON-RPC method: `tools/resolve`, `tools/annotations`,
    /// `tools/call`; for [`Kind::UpstreamRequest`], the upstream's method.
    pub method: &'static str,
    pub tool: String,
    /// Who asked, when a transport verified it (HTTP with a JWT): the line
    /// records its subject and issuer, never the token or its other claims.
    pub caller: Option<Arc<Caller>>,
    pub arguments: Value,
    /// The resolved annotations, when resolution succeeded.
    pub annotations: Option<Map<String, Value>>,
    pub verdict: Verdict,
    pub revision: String,
    /// Calls only: why an allowed call did not start (an argument refused by
    /// the command-line rules, a missing secret).
    pub refused: Option<String>,
    /// Calls only, refused for scope (`serve --enforce-scopes`):
    /// `{"scopes": [all the call needs], "missing": [...]}`, the line's
    /// `insufficientScope`.
    pub insufficient_scope: Option<Value>,
    /// Calls only: how execution ended (see `exec::Status::to_json`).
    pub outcome: Option<Value>,
    pub duration: Option<Duration>,
    /// The question the decision asks the user before a call runs.
    pub confirm: Option<String>,
    /// How long the catalog took to decide (`Catalog::resolve_as`: the
    /// tool's plan evaluated and layered), when it decided.
    pub eval: Option<Duration>,
    /// The tool's shadow policy's decision, when it declares one and the
    /// request got as far as a decision.
    pub shadow: Option<ShadowEntry>,
}

/// A shadow policy's decision for the same request: computed, logged,
/// never acted on (see `Catalog::shadow_as`). Its line member is
/// `shadow: {policy, result, agrees, metrics?}`: `result` has the shape
/// of OPA's `result` (`{allowed, deny, annotations, confirm}`, or
/// `{allowed: false, error}` when the shadow policy failed or timed out),
/// `agrees` whether it equals the enforced `result`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShadowEntry {
    /// The shadow package.
    pub policy: String,
    pub verdict: Verdict,
    pub annotations: Option<Map<String, Value>>,
    pub confirm: Option<String>,
    /// How long the shadow decision took.
    pub eval: Option<Duration>,
}

impl ShadowEntry {
    fn result(&self) -> OpaResult<'_> {
        opa_result(
            &self.verdict,
            self.annotations.as_ref(),
            self.confirm.as_deref(),
        )
    }
}

impl Entry {
    /// A call entry has its id from the start; a resolve entry gets one
    /// when written.
    pub fn new(
        kind: Kind,
        method: &'static str,
        tool: &str,
        arguments: Value,
        revision: &str,
    ) -> Entry {
        Entry {
            id: (kind == Kind::Call).then(new_id),
            kind,
            phase: None,
            method,
            tool: tool.to_string(),
            caller: None,
            arguments,
            annotations: None,
            verdict: Verdict::Error("undecided".into()),
            revision: revision.to_string(),
            refused: None,
            insufficient_scope: None,
            outcome: None,
            duration: None,
            confirm: None,
            eval: None,
            shadow: None,
        }
    }

    /// The id the line carries (fresh for a resolve entry).
    pub fn id(&self) -> String {
        self.id.clone().unwrap_or_else(new_id)
    }

    /// The line (without its newline) for an entry recorded at `time`,
    /// written straight to JSON text: this runs for every decision.
    ///
    /// regent's own fields come first, unchanged; OPA's decision-log event
    /// fields follow (see docs/execution.md):
    /// - `decision_id`: the line's `id`; `timestamp`: its `time`;
    /// - `path`: `tools/<tool>`, the decision regent made (the tool's
    ///   contract, layered from listed values, YAML rules and the policy's
    ///   rules, not one Rego rule);
    /// - `input`: `{tool, arguments (with --log-arguments only), caller}`;
    /// - `result`: `{allowed, deny, annotations, confirm}`, or `{allowed:
    ///   false, error}` when no decision could be made;
    /// - `labels`: `{id, version, ...--decision-log-label}`;
    /// - `bundles`: `{"regent": {"revision": the catalog revision}}`, or
    ///   with `serve --bundle-url` `{NAME: {"revision": the manifest's
    ///   revision}}` of the bundle the catalog came from;
    /// - `metrics`: `{timer_regent_eval_ns}` when the catalog decided.
    ///
    /// A line is never longer than the format's limit
    /// (`--decision-log-line-bytes`). One that would be is made again with
    /// the arguments (in `arguments` and `input.arguments`) replaced by a
    /// marker, `{"truncated": true, "bytes": <their JSON size>, "digest":
    /// <argumentsDigest>}`; if that is still too long, every other field a
    /// client or a policy can make large is cut too (strings clipped to 1 KiB
    /// and ending in `…`, at most 4 deny reasons, objects over 1 KiB replaced
    /// by the same kind of marker). The line then lists what it lost in
    /// `truncated` (`arguments`, `tool`, `annotations`, `reasons`, `error`,
    /// `refused`, `insufficientScope`, `confirm`, `outcome`, `shadow`): it stays valid JSON, and
    /// `argumentsDigest` is always of the whole (masked) arguments.
    pub fn line(&self, time: SystemTime, format: &Format, out: &mut Vec<u8>) {
        let masked = self.masked(&format.mask);
        let digest = arguments_digest(&masked.arguments);
        let id = self.id();
        let start = out.len();
        let limit = format.line_limit;
        let args_size = format.log_arguments.then(|| json_size(&masked.arguments));
        let marker = |size: usize| json!({"truncated": true, "bytes": size, "digest": digest});
        let mut truncated: Vec<&str> = Vec::new();
        // The arguments appear twice: over half the limit, they cannot fit.
        let mut shown = match args_size {
            Some(size) if size.saturating_mul(2) > limit => {
                truncated.push("arguments");
                Some(marker(size))
            }
            _ => None,
        };
        // One line of `entry`, with the arguments as `shown` (the marker
        // that stands for them) or whole.
        let write =
            |entry: &Entry, shown: &Option<Value>, truncated: &[&str], out: &mut Vec<u8>| {
                let arguments = format
                    .log_arguments
                    .then(|| shown.as_ref().unwrap_or(&*masked.arguments));
                entry.write(
                    time, &id, format, &masked, &digest, arguments, truncated, out,
                );
            };
        write(self, &shown, &truncated, out);
        if out.len() - start <= limit {
            return;
        }
        if let Some(size) = args_size
            && shown.is_none()
        {
            out.truncate(start);
            truncated.push("arguments");
            shown = Some(marker(size));
            write(self, &shown, &truncated, out);
            if out.len() - start <= limit {
                return;
            }
        }
        out.truncate(start);
        let (small, cut) = self.cut_down();
        truncated.extend(cut);
        write(&small, &shown, &truncated, out);
    }

    /// This entry with every field a client or a policy can make large cut
    /// to a bounded size (not the arguments: [`Entry::line`] shows those),
    /// and the names of the fields that were cut.
    fn cut_down(&self) -> (Entry, Vec<&'static str>) {
        let mut cut = Vec::new();
        let mut small = Entry {
            id: self.id.clone(),
            kind: self.kind,
            phase: self.phase,
            method: self.method,
            tool: clip(&self.tool, "tool", &mut cut),
            caller: self.caller.clone(),
            arguments: Value::Null,
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

    /// The line for [`Entry::line`], with `arguments` shown (when logged)
    /// and `truncated` listed (when any).
    #[allow(clippy::too_many_arguments)]
    fn write(
        &self,
        time: SystemTime,
        id: &str,
        format: &Format,
        masked: &Masked<'_>,
        digest: &str,
        arguments: Option<&Value>,
        truncated: &[&str],
        out: &mut Vec<u8>,
    ) {
        // Writing strings and values into a Vec cannot fail.
        fn member<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, key: &str, value: &T) {
            out.push(b',');
            let _ = serde_json::to_writer(&mut *out, key);
            out.push(b':');
            let _ = serde_json::to_writer(&mut *out, value);
        }
        let timestamp = rfc3339(time);
        out.extend_from_slice(br#"{"time":"#);
        let _ = serde_json::to_writer(&mut *out, &timestamp);
        member(out, "id", id);
        let kind = match self.kind {
            Kind::Resolve => "resolve",
            Kind::Call => "call",
            Kind::UpstreamRequest => "upstream_request",
        };
        member(out, "kind", kind);
        if let Some(phase) = self.phase {
            let phase = match phase {
                Phase::Intent => "intent",
                Phase::Outcome => "outcome",
            };
            member(out, "phase", phase);
        }
        member(out, "method", self.method);
        member(out, "tool", &self.tool);
        if let Some(c) = self.caller.as_deref().and_then(|c| masked.caller(c)) {
            member(out, "caller", &c);
        }
        member(out, "argumentsDigest", digest);
        if let Some(a) = arguments {
            member(out, "arguments", a);
        }
        if let Some(a) = &self.annotations {
            member(out, "annotations", a);
        }
        match &self.verdict {
            Verdict::Allowed => {
                member(out, "decision", "allowed");
                member(out, "reasons", &[] as &[String]);
            }
            Verdict::Denied(reasons) => {
                member(out, "decision", "denied");
                member(out, "reasons", reasons);
            }
            Verdict::Error(why) => {
                member(out, "decision", "error");
                member(out, "error", why);
            }
        }
        member(out, "revision", &self.revision);
        if let Some(r) = &self.refused {
            member(out, "refused", r);
        }
        if let Some(s) = &self.insufficient_scope {
            member(out, "insufficientScope", s);
        }
        if let Some(o) = &self.outcome {
            member(out, "outcome", o);
        }
        if let Some(d) = self.duration {
            member(out, "durationMs", &json!(millis(d)));
        }
        // OPA's decision-log event.
        member(out, "decision_id", id);
        member(out, "timestamp", &timestamp);
        let mut path = String::with_capacity(6 + self.tool.len());
        path.push_str("tools/");
        path.push_str(&self.tool);
        member(out, "path", &path);
        member(out, "input", &self.input(arguments, masked));
        if !masked.erased.is_empty() {
            member(out, "erased", &masked.erased);
        }
        if !truncated.is_empty() {
            member(out, "truncated", truncated);
        }
        let result = self.result();
        member(out, "result", &result);
        out.extend_from_slice(br#","labels":"#);
        out.extend_from_slice(&format.labels);
        member(out, "bundles", &format.bundles_member(&self.revision));
        if let Some(d) = self.eval {
            let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
            member(out, "metrics", &json!({"timer_regent_eval_ns": ns}));
        }
        if let Some(s) = &self.shadow {
            let shadow = s.result();
            let mut obj = json!({
                "policy": s.policy,
                "result": shadow,
                "agrees": shadow == result,
            });
            if let Some(d) = s.eval {
                let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
                obj["metrics"] = json!({"timer_regent_eval_ns": ns});
            }
            member(out, "shadow", &obj);
        }
        out.push(b'}');
    }

    /// The input this line may show, once `mask` is applied.
    fn masked<'a>(&'a self, mask: &'a [Mask]) -> Masked<'a> {
        let mut m = Masked {
            arguments: Cow::Borrowed(&self.arguments),
            subject: true,
            issuer: true,
            erased: Vec::new(),
        };
        for p in mask {
            let hit = match p.root {
                MaskRoot::Arguments => {
                    holds(&m.arguments, &p.keys) && erase(m.arguments.to_mut(), &p.keys)
                }
                MaskRoot::Caller => {
                    let (subject, issuer) = match p.keys.as_slice() {
                        [] => (true, true),
                        [k] if k == "subject" => (true, false),
                        [k] if k == "issuer" => (false, true),
                        _ => (false, false),
                    };
                    let hit =
                        self.caller.is_some() && ((subject && m.subject) || (issuer && m.issuer));
                    m.subject &= !subject;
                    m.issuer &= !issuer;
                    hit
                }
            };
            if hit {
                m.erased.push(&p.text);
            }
        }
        m
    }

    /// OPA's `input`: what the policy was asked about. The caller is its
    /// subject and issuer only, as in regent's own `caller` field.
    ///
    /// Masking (erasing caller claims or argument paths before they leave
    /// the process, OPA's `erased`/`masked`) belongs here: it is the one
    /// place the policy input is put into a line.
    fn input<'a>(&'a self, arguments: Option<&'a Value>, masked: &Masked<'_>) -> OpaInput<'a> {
        OpaInput {
            tool: &self.tool,
            arguments,
            caller: self.caller.as_deref().and_then(|c| masked.caller(c)),
        }
    }

    /// OPA's `result`: the decision.
    fn result(&self) -> OpaResult<'_> {
        opa_result(
            &self.verdict,
            self.annotations.as_ref(),
            self.confirm.as_deref(),
        )
    }

    /// The line, as JSON.
    pub fn to_json(&self, time: SystemTime, log_arguments: bool) -> Value {
        let mut line = Vec::new();
        self.line(time, &Format::new(log_arguments, &[]), &mut line);
        serde_json::from_slice(&line).expect("a decision line is JSON")
    }
}

#[derive(serde::Serialize)]
struct OpaInput<'a> {
    tool: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    caller: Option<CallerRef<'a>>,
}

/// The caller as a line shows it: subject and issuer, either masked away.
#[derive(serde::Serialize)]
struct CallerRef<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    subject: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    issuer: Option<&'a str>,
}

fn opa_result<'a>(
    verdict: &'a Verdict,
    annotations: Option<&'a Map<String, Value>>,
    confirm: Option<&'a str>,
) -> OpaResult<'a> {
    let (allowed, deny, error) = match verdict {
        Verdict::Allowed => (true, Some(&[] as &[String]), None),
        Verdict::Denied(reasons) => (false, Some(reasons.as_slice()), None),
        Verdict::Error(why) => (false, None, Some(why.as_str())),
    };
    OpaResult {
        allowed,
        deny,
        error,
        annotations,
        confirm,
    }
}

#[derive(serde::Serialize, PartialEq)]
struct OpaResult<'a> {
    allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    deny: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<&'a Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    confirm: Option<&'a str>,
}

/// The size of `v` as compact JSON, without making the text.
fn json_size(v: &Value) -> usize {
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

/// Milliseconds with microsecond precision, for durations in logs and `_meta`.
pub fn millis(d: Duration) -> f64 {
    d.as_micros() as f64 / 1000.0
}

/// A fresh decision id.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// `sha256:` and the hex digest of the arguments in canonical form (object
/// keys sorted at every level), so equal arguments give equal digests
/// whatever order a client sent the keys in.
pub fn arguments_digest(args: &Value) -> String {
    let digest = crate::canonical::sha256(args);
    // Hex by table: a `format!` per byte was 32 allocations, most of the cost
    // of a decision-log entry (BENCHMARKS.md).
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(7 + 2 * digest.len());
    out.push_str("sha256:");
    for b in digest.iter() {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn line_of(e: &Entry, format: &Format) -> (usize, Value) {
        let mut out = Vec::new();
        e.line(UNIX_EPOCH, format, &mut out);
        let v = serde_json::from_slice(&out).expect("an oversized line is still JSON");
        (out.len(), v)
    }

    #[test]
    fn an_oversized_line_has_its_arguments_cut_and_says_so() {
        let big = "x".repeat(2 << 20);
        let args = json!({"path": "a.txt", "blob": big});
        let mut e = Entry::new(Kind::Call, "tools/call", "t", args.clone(), "rev");
        e.verdict = Verdict::Allowed;
        let format = Format::new(true, &[]).limiting(64 << 10);
        let (len, v) = line_of(&e, &format);
        assert!(len <= 64 << 10, "{len} bytes");
        let digest = arguments_digest(&args);
        assert_eq!(v["argumentsDigest"], json!(digest));
        let marker = json!({"truncated": true, "bytes": json_size(&args), "digest": digest});
        assert_eq!(v["arguments"], marker);
        assert_eq!(v["input"]["arguments"], marker);
        assert_eq!(v["truncated"], json!(["arguments"]));
        assert_eq!(v["decision"], "allowed");
        assert_eq!(v["result"]["allowed"], json!(true));

        // Arguments that fit alone but not twice (half the limit) are cut
        // up front; ones that fit twice are kept whole, with no `truncated`.
        let fits = json!({"blob": "y".repeat(20 << 10)});
        let e2 = Entry::new(Kind::Resolve, "tools/resolve", "t", fits.clone(), "rev");
        let (len, v) = line_of(&e2, &format);
        assert!(len <= 64 << 10);
        assert_eq!(v["arguments"], fits);
        assert!(v.get("truncated").is_none(), "{v}");
        let half = json!({"blob": "y".repeat(40 << 10)});
        let e3 = Entry::new(Kind::Resolve, "tools/resolve", "t", half, "rev");
        let (len, v) = line_of(&e3, &format);
        assert!(len <= 64 << 10);
        assert_eq!(v["truncated"], json!(["arguments"]));
    }

    #[test]
    fn every_large_field_is_cut_when_the_arguments_are_not_enough() {
        let huge = "r".repeat(300 << 10);
        // Without --log-arguments, a tool name, deny reasons and an outcome
        // made of client input still make a line too long.
        let mut e = Entry::new(
            Kind::Call,
            "tools/call",
            &"n".repeat(100 << 10),
            json!({}),
            "rev",
        );
        e.verdict = Verdict::Denied(vec![huge.clone(); 10]);
        e.outcome = Some(json!({"stderr": huge}));
        e.refused = Some("é".repeat(10_000));
        let mut annotations = Map::new();
        annotations.insert("title".into(), json!("a".repeat(5000)));
        e.annotations = Some(annotations);
        let format = Format::new(false, &[]).limiting(MIN_LINE_BYTES);
        let (len, v) = line_of(&e, &format);
        assert!(len <= MIN_LINE_BYTES, "{len} bytes");
        let cut: Vec<&str> = v["truncated"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        for field in ["tool", "annotations", "reasons", "refused", "outcome"] {
            assert!(cut.contains(&field), "{field} not in {cut:?}");
        }
        assert!(!cut.contains(&"arguments"));
        assert_eq!(v["reasons"].as_array().unwrap().len(), CUT_REASONS);
        assert_eq!(v["result"]["deny"], v["reasons"]);
        assert!(v["reasons"][0].as_str().unwrap().ends_with('…'));
        assert!(
            v["refused"].as_str().unwrap().ends_with('…'),
            "clipped at a char boundary"
        );
        assert_eq!(v["outcome"]["truncated"], json!(true));
        assert_eq!(v["annotations"]["truncated"], json!(true));
        assert_eq!(v["decision"], "denied");
        assert!(v["path"].as_str().unwrap().starts_with("tools/nnn"));
    }

    #[test]
    fn digests_ignore_key_order() {
        let a: Value = serde_json::from_str(r#"{"b":1,"a":{"y":2,"x":[1,"z"]}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":{"x":[1,"z"],"y":2},"b":1}"#).unwrap();
        assert_eq!(arguments_digest(&a), arguments_digest(&b));
        assert_ne!(arguments_digest(&a), arguments_digest(&json!({"b": 2})));
    }

    #[test]
    fn the_digest_is_of_these_bytes() {
        // What a log reader recomputes: sha256 of
        // {"a":1,"b":[true,null,"é\n"],"c":{"x":2.5,"y":""}}
        // (users compare it across versions, so it must not change).
        let v = json!({"c": {"y": "", "x": 2.5}, "b": [true, null, "é\n"], "a": 1});
        assert_eq!(
            arguments_digest(&v),
            "sha256:06843a8cfe78cb22e919838a0e220a4c2679b687b2dde9d22c0bac1f0840a36a"
        );
    }

    #[test]
    fn formats_utc_times() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_709_210_096_789);
        assert_eq!(rfc3339(t), "2024-02-29T12:34:56.789Z");
    }

    #[test]
    fn arguments_appear_only_when_asked() {
        let mut e = Entry::new(
            Kind::Call,
            "tools/call",
            "t",
            json!({"p": "secret-ish"}),
            "r",
        );
        e.verdict = Verdict::Denied(vec!["no".into()]);
        let quiet = e.to_json(UNIX_EPOCH, false).to_string();
        assert!(!quiet.contains("secret-ish"), "{quiet}");
        assert!(
            e.to_json(UNIX_EPOCH, true)
                .to_string()
                .contains("secret-ish")
        );
    }

    #[test]
    fn opa_fields_carry_confirm_timer_caller_and_labels() {
        let mut e = Entry::new(Kind::Resolve, "tools/resolve", "t", json!({}), "r");
        e.verdict = Verdict::Denied(vec!["no".into()]);
        e.confirm = Some("sure?".into());
        e.eval = Some(Duration::from_nanos(1234));
        e.caller = Some(Arc::new(Caller {
            subject: "alice".into(),
            issuer: "https://idp".into(),
            claims: Default::default(),
        }));
        let format = Format::new(false, &[("env".into(), "prod".into())]);
        let mut out = Vec::new();
        e.line(UNIX_EPOCH, &format, &mut out);
        let line: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            line["result"],
            json!({"allowed": false, "deny": ["no"], "confirm": "sure?"})
        );
        assert_eq!(line["metrics"], json!({"timer_regent_eval_ns": 1234}));
        assert_eq!(
            line["input"]["caller"],
            json!({"subject": "alice", "issuer": "https://idp"})
        );
        assert_eq!(line["labels"]["env"], json!("prod"));
        assert!(
            parse_label("id=x")
                .unwrap_err()
                .contains("choose another key")
        );
        assert!(parse_label("novalue").unwrap_err().contains("KEY=VALUE"));
        assert_eq!(parse_label("a=b=c").unwrap(), ("a".into(), "b=c".into()));
    }

    #[test]
    fn masks_erase_what_they_name_and_list_it() {
        let mut e = Entry::new(
            Kind::Resolve,
            "tools/resolve",
            "t",
            json!({"a/b": 1, "c": 2, "d": "x"}),
            "r",
        );
        e.caller = Some(Arc::new(Caller {
            subject: "alice".into(),
            issuer: "https://idp".into(),
            claims: Default::default(),
        }));
        let mask = [
            "/input/arguments/a~1b",
            "/input/caller",
            "/input/caller/claims/email",
        ]
        .map(|m| parse_mask(m).unwrap())
        .to_vec();
        let mut out = Vec::new();
        e.line(UNIX_EPOCH, &Format::new(true, &[]).masking(mask), &mut out);
        let line: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(line["arguments"], json!({"c": 2, "d": "x"}));
        assert_eq!(
            line["input"],
            json!({"tool": "t", "arguments": {"c": 2, "d": "x"}})
        );
        assert!(line.get("caller").is_none(), "{line}");
        assert_eq!(
            line["erased"],
            json!(["/input/arguments/a~1b", "/input/caller"])
        );
        // Without masks nothing changes, `erased` included.
        let plain = e.to_json(UNIX_EPOCH, true);
        assert!(plain.get("erased").is_none());
        assert_eq!(
            plain["argumentsDigest"],
            json!(arguments_digest(&e.arguments))
        );
        assert!(parse_mask("/input/tool").is_err());
        assert!(parse_mask("input/arguments/x").is_err());
    }

    #[test]
    fn a_shadow_decision_is_shaped_like_the_result() {
        let mut e = Entry::new(Kind::Resolve, "tools/resolve", "t", json!({}), "r");
        e.verdict = Verdict::Allowed;
        e.shadow = Some(ShadowEntry {
            policy: "tools.next".into(),
            verdict: Verdict::Error("boom".into()),
            annotations: None,
            confirm: None,
            eval: Some(Duration::from_nanos(7)),
        });
        let line = e.to_json(UNIX_EPOCH, false);
        assert_eq!(
            line["shadow"],
            json!({"policy": "tools.next", "result": {"allowed": false, "error": "boom"},
                "agrees": false, "metrics": {"timer_regent_eval_ns": 7}})
        );
        e.shadow.as_mut().unwrap().verdict = Verdict::Allowed;
        let line = e.to_json(UNIX_EPOCH, false);
        assert_eq!(line["shadow"]["agrees"], json!(true));
        assert_eq!(line["shadow"]["result"], line["result"]);
    }

    #[test]
    fn a_call_line_has_every_field_in_order() {
        let mut e = Entry::new(Kind::Call, "tools/call", "t", json!({"b": 1, "a": 2}), "r");
        e.annotations = Some(Map::from_iter([("readOnlyHint".to_string(), json!(true))]));
        e.verdict = Verdict::Allowed;
        e.refused = Some("why".into());
        e.outcome = Some(json!({"exitCode": 0}));
        e.duration = Some(Duration::from_micros(12_500));
        let line = e.to_json(UNIX_EPOCH, true);
        let keys: Vec<&str> = line
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "time",
                "id",
                "kind",
                "method",
                "tool",
                "argumentsDigest",
                "arguments",
                "annotations",
                "decision",
                "reasons",
                "revision",
                "refused",
                "outcome",
                "durationMs",
                "decision_id",
                "timestamp",
                "path",
                "input",
                "result",
                "labels",
                "bundles"
            ]
        );
        assert_eq!(line["time"], json!("1970-01-01T00:00:00.000Z"));
        assert_eq!(line["id"], json!(e.id.clone().unwrap()));
        assert_eq!(
            line["argumentsDigest"],
            json!(arguments_digest(&json!({"a": 2, "b": 1})))
        );
        assert_eq!(line["reasons"], json!([]));
        assert_eq!(line["durationMs"], json!(12.5));
        // OPA's event: the same id and time, the input with the arguments
        // (logged here), the decision, the instance and the revision.
        assert_eq!(line["decision_id"], line["id"]);
        assert_eq!(line["timestamp"], line["time"]);
        assert_eq!(line["path"], json!("tools/t"));
        assert_eq!(
            line["input"],
            json!({"tool": "t", "arguments": {"b": 1, "a": 2}})
        );
        assert_eq!(
            line["result"],
            json!({"allowed": true, "deny": [], "annotations": {"readOnlyHint": true}})
        );
        assert_eq!(line["labels"]["id"], json!(instance_id()));
        assert_eq!(line["labels"]["version"], json!(env!("CARGO_PKG_VERSION")));
        assert_eq!(line["bundles"], json!({"regent": {"revision": "r"}}));
        assert!(line.get("metrics").is_none(), "no evaluation, no timer");
        let mut denied = Entry::new(Kind::Resolve, "tools/resolve", "t", json!({}), "r");
        denied.verdict = Verdict::Error("boom".into());
        let line = denied.to_json(UNIX_EPOCH, false);
        assert_eq!(line["decision"], json!("error"));
        assert_eq!(line["error"], json!("boom"));
        assert_eq!(line["result"], json!({"allowed": false, "error": "boom"}));
        assert_eq!(
            line["input"],
            json!({"tool": "t"}),
            "no arguments unless asked"
        );
        assert!(
            line["id"].as_str().is_some_and(|id| id.len() == 36),
            "{line}"
        );
    }
}
