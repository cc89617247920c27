//! The live catalog: the current immutable snapshot behind an atomic pointer,
//! and what is known about how it got there.
//!
//! Requests call [`CatalogState::current`] once and keep that `Arc` until they
//! answer, so a swap never mixes two revisions in one request. Only a whole,
//! successfully built catalog is ever swapped in; a failed build leaves the
//! previous one serving (the reload logic that decides this lives in
//! `reload`, not here). Sessions that must tell clients about a changed tool
//! list wait on [`CatalogState::listing_changes`]; whoever swaps decides when
//! to announce one.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use tokio::sync::watch;

use serde_json::{Value, json};

use crate::catalog::Catalog;
use crate::source::upstream::Snapshot;
use crate::timestamp::rfc3339;

/// What an operator can ask about reloads without reading logs.
#[derive(Debug, Clone)]
pub struct ReloadStatus {
    /// The serving catalog's revision digest (sha256 of every file).
    pub revision: String,
    /// Digest of what `tools/list` shows for the serving catalog, once known.
    pub listing: Option<String>,
    /// How many tools the serving catalog has.
    pub tools: usize,
    /// When the serving catalog was swapped in (or loaded at start-up).
    pub loaded_at: SystemTime,
    /// When the latest reload attempt finished, successful or not.
    pub attempted_at: SystemTime,
    /// How long the latest attempt took, from reading files to swapping.
    pub last_duration: Option<Duration>,
    /// The error of the latest attempt, when it failed; `None` after a success.
    pub last_error: Option<String>,
    pub successes: u64,
    pub failures: u64,
    /// How many swaps changed what `tools/list` shows (and were announced).
    pub listing_changes: u64,
    /// Whether the files are being watched (false with `--no-watch`).
    pub watching: bool,
    /// Each upstream MCP server's liveness, by name (empty without upstreams).
    pub upstreams: std::collections::BTreeMap<String, UpstreamStatus>,
    /// The serving catalog's upstream tools quarantined for drifting from
    /// their pins (`Catalog::quarantined`), shown under their upstream.
    pub quarantined: Vec<crate::source::upstream::Quarantined>,
    /// The bundle the serving catalog came from (`serve --bundle-url`).
    pub bundle: Option<Arc<BundleInfo>>,
}

/// Which bundle a catalog came from (`serve --bundle-url`): what the
/// status document, `/healthz`, `/metrics` and the decision log name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleInfo {
    /// The bundle's name: the URL's file name without `.tar.gz`, as OPA
    /// names a bundle by its service path.
    pub name: String,
    /// The manifest's `revision`.
    pub revision: String,
    /// The key id of the verified signature (`None` unsigned or unverified).
    pub key_id: Option<String>,
    /// Whether the signature was verified with `--bundle-public-key`.
    pub verified: bool,
    pub url: String,
    /// The ETag the server gave it, if any.
    pub etag: Option<String>,
}

impl BundleInfo {
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "revision": self.revision,
            "keyId": self.key_id,
            "verified": self.verified,
            "url": self.url,
            "etag": self.etag,
        })
    }
}

/// The bundles of the catalogs that may still be deciding, by catalog
/// revision digest: a decision names the bundle of the catalog that made
/// it, even one a swap just retired. Filled before each swap.
#[derive(Debug, Default)]
pub struct Bundles(Mutex<Vec<(String, Arc<BundleInfo>)>>);

impl Bundles {
    /// How many catalogs back a decision can still find its bundle.
    const KEPT: usize = 8;

    pub fn record(&self, catalog_revision: &str, info: Arc<BundleInfo>) {
        let mut v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        v.retain(|(r, _)| r != catalog_revision);
        v.push((catalog_revision.to_string(), info));
        if v.len() > Self::KEPT {
            v.remove(0);
        }
    }

    pub fn of(&self, catalog_revision: &str) -> Option<Arc<BundleInfo>> {
        let v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        v.iter()
            .rev()
            .find(|(r, _)| r == catalog_revision)
            .map(|(_, b)| b.clone())
    }
}

impl ReloadStatus {
    /// The status as JSON: what `--status-file` holds (written by `reload`)
    /// and what the `regent/status` request returns (`protocol`). Times are
    /// RFC 3339 in UTC.
    pub fn to_json(&self) -> Value {
        json!({
            "revision": self.revision,
            "listing": self.listing,
            "tools": self.tools,
            "loadedAt": rfc3339(self.loaded_at),
            "attemptedAt": rfc3339(self.attempted_at),
            "lastDurationMs": self.last_duration.map(|d| d.as_secs_f64() * 1000.0),
            "ok": self.last_error.is_none(),
            "lastError": self.last_error,
            "reloads": {"succeeded": self.successes, "failed": self.failures},
            "listingChanges": self.listing_changes,
            "watching": self.watching,
            "upstreams": self.upstreams_json(),
            "bundle": self.bundle.as_ref().map(|b| b.to_json()),
        })
    }

    /// Each upstream's liveness, by name: `{"up", "restarts", "since", "pid",
    /// "lastError", "tools", "quarantined"}`, the last a list of `{"tool",
    /// "upstreamTool", "reason"}` for its tools held back for drifting from
    /// the pin. Also what `/healthz` shows.
    pub fn upstreams_json(&self) -> Value {
        self.upstreams
            .iter()
            .map(|(name, u)| {
                let quarantined: Vec<Value> = self
                    .quarantined
                    .iter()
                    .filter(|q| &q.upstream == name)
                    .map(|q| json!({"tool": q.listed, "upstreamTool": q.tool, "reason": q.reason}))
                    .collect();
                (
                    name.clone(),
                    json!({
                        "up": u.up,
                        "restarts": u.restarts,
                        "since": rfc3339(u.since),
                        "pid": u.pid,
                        "lastError": u.last_error,
                        "tools": u.tools,
                        "quarantined": quarantined,
                    }),
                )
            })
            .collect::<serde_json::Map<_, _>>()
            .into()
    }

    /// Whether an upstream is down or has a tool quarantined: what makes
    /// `/healthz` say `degraded`.
    pub fn degraded(&self) -> bool {
        self.upstreams.values().any(|u| !u.up) || !self.quarantined.is_empty()
    }
}

/// One upstream MCP server's liveness, as its supervisor last saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamStatus {
    /// Connected and its process running: calls to its tools are sent.
    pub up: bool,
    /// How many times it was started again after it went down.
    pub restarts: u64,
    /// When it last came up or went down.
    pub since: SystemTime,
    /// Its process id while up.
    pub pid: Option<u32>,
    /// Why it is down, or why the latest restart failed.
    pub last_error: Option<String>,
    /// How many tools it listed last.
    pub tools: usize,
}

/// What each upstream MCP server listed last, by name, while serving: the
/// data every rebuilt catalog imports (`Source::import_served`). Here, below
/// both, because two threads share it: `upstream`'s supervisors write an
/// entry when an upstream's tools change (and then ask for a reload), the
/// reload thread reads one copy per attempt. Neither knows the other.
#[derive(Debug, Clone, Default)]
pub struct UpstreamSnapshots(Arc<Mutex<BTreeMap<String, Snapshot>>>);

impl UpstreamSnapshots {
    pub fn new(snapshots: BTreeMap<String, Snapshot>) -> UpstreamSnapshots {
        UpstreamSnapshots(Arc::new(Mutex::new(snapshots)))
    }

    /// Every snapshot as it is now, for one build.
    pub fn copy(&self) -> BTreeMap<String, Snapshot> {
        self.lock().clone()
    }

    /// Puts `snapshot` in `name`'s place; whether that changed anything.
    pub fn replace(&self, name: &str, snapshot: Snapshot) -> bool {
        let mut all = self.lock();
        if all.get(name) == Some(&snapshot) {
            return false;
        }
        all.insert(name.to_string(), snapshot);
        true
    }

    /// Forgets an upstream that is no longer declared.
    pub fn remove(&self, name: &str) {
        self.lock().remove(name);
    }

    /// How many tools `name` listed last (0 when it never listed).
    pub fn tools(&self, name: &str) -> usize {
        self.lock().get(name).map_or(0, |s| s.tools.len())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Snapshot>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub struct CatalogState {
    current: ArcSwap<Catalog>,
    status: Mutex<ReloadStatus>,
    /// A generation counter bumped each time the tool listing changes.
    listing: watch::Sender<u64>,
    /// The bundles catalogs came from, for the decision log.
    bundles: Arc<Bundles>,
}

impl CatalogState {
    pub fn new(catalog: Catalog) -> CatalogState {
        let now = SystemTime::now();
        let status = ReloadStatus {
            revision: catalog.revision.clone(),
            listing: None,
            tools: catalog.tools().len(),
            loaded_at: now,
            attempted_at: now,
            last_duration: None,
            last_error: None,
            successes: 1,
            failures: 0,
            listing_changes: 0,
            watching: false,
            upstreams: Default::default(),
            quarantined: catalog.quarantined.clone(),
            bundle: None,
        };
        CatalogState {
            current: ArcSwap::from_pointee(catalog),
            status: Mutex::new(status),
            listing: watch::Sender::new(0),
            bundles: Arc::default(),
        }
    }

    /// The snapshot to use for one request, from start to end.
    pub fn current(&self) -> Arc<Catalog> {
        self.current.load_full()
    }

    /// Replaces the snapshot; returns the one it replaced.
    pub fn swap(&self, catalog: Catalog) -> Arc<Catalog> {
        self.swap_with(catalog, None, false, None)
    }

    /// Replaces the snapshot and records, in the same status update, the
    /// digest of its tool listing and how long the reload took. When
    /// `listing_changed`, sessions waiting on [`Self::listing_changes`] are
    /// woken after the pointer moved, so a client that lists tools on
    /// hearing it sees the new catalog.
    pub fn swap_with(
        &self,
        catalog: Catalog,
        listing: Option<String>,
        listing_changed: bool,
        took: Option<Duration>,
    ) -> Arc<Catalog> {
        let revision = catalog.revision.clone();
        let tools = catalog.tools().len();
        let quarantined = catalog.quarantined.clone();
        let mut s = self.lock();
        let old = self.current.swap(Arc::new(catalog));
        let now = SystemTime::now();
        s.revision = revision;
        s.listing = listing;
        s.tools = tools;
        s.quarantined = quarantined;
        s.loaded_at = now;
        s.attempted_at = now;
        s.last_duration = took;
        s.last_error = None;
        s.successes += 1;
        if listing_changed {
            s.listing_changes += 1;
            self.listing.send_modify(|g| *g += 1);
        }
        old
    }

    /// Records a failed reload; the current snapshot keeps serving.
    pub fn record_failure(&self, error: String) {
        let mut s = self.lock();
        s.attempted_at = SystemTime::now();
        s.last_duration = None;
        s.last_error = Some(error);
        s.failures += 1;
    }

    /// Records an attempt that found the files identical to the serving
    /// revision: nothing to swap, and any earlier error no longer applies.
    pub fn record_unchanged(&self, took: Duration) {
        let mut s = self.lock();
        s.attempted_at = SystemTime::now();
        s.last_duration = Some(took);
        s.last_error = None;
    }

    /// Records that the catalog of revision digest `catalog_revision` came
    /// from `info`: called before that catalog is swapped in (or, when it
    /// already serves, at once).
    pub fn record_bundle(&self, catalog_revision: &str, info: BundleInfo) {
        let info = Arc::new(info);
        self.bundles.record(catalog_revision, info.clone());
        self.lock().bundle = Some(info);
    }

    /// The bundles catalogs came from, shared with the decision log.
    pub fn bundles(&self) -> Arc<Bundles> {
        self.bundles.clone()
    }

    /// Sets the listing digest of the serving catalog (at start-up).
    pub fn record_listing(&self, listing: String) {
        self.lock().listing = Some(listing);
    }

    /// Records an upstream's liveness (its supervisor calls this when it
    /// comes up, goes down or fails to restart).
    pub fn set_upstream(&self, name: &str, status: UpstreamStatus) {
        self.lock().upstreams.insert(name.to_string(), status);
    }

    /// Forgets an upstream that is no longer declared.
    pub fn remove_upstream(&self, name: &str) {
        self.lock().upstreams.remove(name);
    }

    pub fn set_watching(&self, watching: bool) {
        self.lock().watching = watching;
    }

    pub fn status(&self) -> ReloadStatus {
        self.lock().clone()
    }

    /// A receiver that wakes when the tool listing changes.
    pub fn listing_changes(&self) -> watch::Receiver<u64> {
        self.listing.subscribe()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ReloadStatus> {
        self.status.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(tools: &[&str]) -> Snapshot {
        let tools: Vec<Value> = tools
            .iter()
            .map(|n| json!({"name": n, "inputSchema": {"type": "object"}}))
            .collect();
        serde_json::from_value(json!({ "tools": tools })).expect("a snapshot")
    }

    /// A supervisor asks for a reload only when `replace` says the list
    /// changed; the reload thread's copy sees what any clone wrote.
    #[test]
    fn upstream_snapshots_report_a_change_only_when_the_list_differs() {
        let shared = UpstreamSnapshots::new(BTreeMap::from([("a".into(), snapshot(&["x"]))]));
        let writer = shared.clone();
        assert!(!writer.replace("a", snapshot(&["x"])));
        assert!(writer.replace("a", snapshot(&["x", "y"])));
        assert!(writer.replace("b", snapshot(&[])));
        assert_eq!(shared.tools("a"), 2);
        assert_eq!(shared.tools("c"), 0);
        writer.remove("a");
        assert_eq!(shared.copy().keys().collect::<Vec<_>>(), [&"b".to_string()]);
    }
}
