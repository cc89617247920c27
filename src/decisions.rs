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
//!
//! A line's parts have a file each: what a decision is as the request path
//! records it (`entry`), its JSON line (`line`), what every line of a
//! log shares (`format`), the masks (`mask`), the arguments with their
//! numbers as the client spelled them (`sent`), cutting an oversized line
//! (`cut`) and the arguments' digest (`digest`).

pub mod ship;
mod writer;

mod cut;
mod digest;
mod entry;
mod format;
mod line;
mod mask;
mod sent;

use std::fs::OpenOptions;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub use digest::arguments_digest;
pub use entry::{Entry, Kind, Phase, ShadowEntry, Verdict};
pub use format::{DEFAULT_LINE_BYTES, Format, MIN_LINE_BYTES, parse_label, parse_line_bytes};
pub use mask::{Mask, parse_mask};
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

/// This process's id in OPA's `labels.id`: a UUID made once per process,
/// so a collector can tell regent instances apart.
pub fn instance_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(new_id)
}

/// Milliseconds with microsecond precision, for durations in logs and `_meta`.
pub fn millis(d: Duration) -> f64 {
    d.as_micros() as f64 / 1000.0
}

/// A fresh decision id.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests;
