//! Hot reload: rebuild the catalog when its files change (or on `SIGHUP`)
//! and swap it in whole, without disturbing requests in flight.
//!
//! One background thread owns reloading. It waits for a trigger (debounced
//! file events from [`watch`], a signal, a request), reads and compiles the
//! complete catalog off the request path, and either swaps it into
//! [`CatalogState`] in one step or, when anything is wrong, keeps the last
//! good catalog serving and records every error with its `file:line:column`.
//! When what `tools/list` shows changed, it announces that after the swap so
//! sessions can tell their clients; a policy-only change announces nothing.
//! Telling clients is `protocol`'s job, and so is what a listing is: the
//! digest that tells a changed listing from a policy-only change is a
//! function `serve` hands in ([`Settings::listing`]), so this module never
//! knows MCP wire types. Building is `source` and `catalog`'s.

pub mod bundle;
pub mod settle;
pub mod status;
pub mod watch;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify_debouncer_full::DebounceEventResult;

use crate::catalog::{self, BuildOptions, Catalog};
use crate::diag::{Diagnostic, Diagnostics, Location};
use crate::source::Source;
use crate::state::{CatalogState, UpstreamSnapshots};
use watch::{WatchPlan, Watcher};

/// How long file events must settle before a reload.
pub const DEBOUNCE: Duration = Duration::from_millis(250);

/// How long a catalog file must keep its size and modification time to be
/// read as settled, when it changed just before a reload (see [`settle`]).
pub const SETTLE: Duration = Duration::from_millis(50);

/// How reloading is set up for one server.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The catalog paths, as given on the command line; with `--bundle-url`,
    /// the bundle's directory last (see [`Settings::bundle`]).
    pub paths: Vec<PathBuf>,
    /// The last path is a bundle's unpacked directory (`serve --bundle-url`):
    /// never watched (it changes only through the poller), and replaced by
    /// the next bundle's ([`Requester::bundle`]) while the paths before it,
    /// the tools given beside a bundle of policies, stay and are watched.
    pub bundle: bool,
    pub options: BuildOptions,
    /// Watch the paths for changes (off with `--no-watch`).
    pub watch: bool,
    /// Where to keep a JSON copy of the reload status, rewritten at each attempt.
    pub status_file: Option<PathBuf>,
    pub debounce: Duration,
    /// How long a file that just changed must stay unchanged before it is read.
    pub settle: Duration,
    /// What each upstream MCP server listed last, imported into every
    /// rebuilt catalog (see `source::upstream`). `upstream` replaces an
    /// entry when an upstream's tools change (after a restart, or on its
    /// `notifications/tools/list_changed`) and then asks for a reload.
    pub upstreams: UpstreamSnapshots,
    /// A digest of what `tools/list` shows for a catalog (`serve` gives
    /// `protocol::wire::listing_digest`): a swap that changes it tells
    /// sessions, one that keeps it (a policy-only change) does not.
    pub listing: fn(&Catalog) -> String,
    /// Where the upstream declarations of every catalog read are sent, by
    /// name: `upstream`'s supervisors start what was added, restart what
    /// is reached differently and stop what was removed (see
    /// `Upstreams::supervise`). The reload thread only hands them over.
    pub declared: Option<DeclaredSender>,
    /// What `check::on_load` ran on the catalog serving when reloading
    /// starts (every tool, at start-up): a reload runs only what changed.
    pub checked: crate::check::on_load::Checked,
    /// The serving catalog's listing digest when the caller has it already
    /// (`serve` computes it beside `check::on_load`, on the core that check
    /// leaves idle); `None` computes it here with [`Settings::listing`].
    pub listing_now: Option<String>,
    /// `serve --skip-load-check`: `check`'s errors are logged as warnings
    /// and the catalog serves anyway.
    pub skip_load_check: bool,
}

impl Settings {
    /// The paths the watcher follows: all but a bundle's directory.
    fn watched(&self) -> &[PathBuf] {
        match self.bundle {
            true => &self.paths[..self.paths.len().saturating_sub(1)],
            false => &self.paths,
        }
    }
}

/// The channel [`Settings::declared`] sends on.
pub type DeclaredSender = tokio::sync::mpsc::UnboundedSender<
    std::collections::BTreeMap<String, crate::source::upstream::Declared>,
>;

/// What one reload attempt did.
#[derive(Debug)]
pub enum Outcome {
    /// A new catalog serves.
    Swapped {
        revision: String,
        listing_changed: bool,
        took: Duration,
    },
    /// The files are byte-for-byte what already serves.
    Unchanged { took: Duration },
    /// The catalog has errors; the previous one keeps serving.
    Failed(Diagnostics),
}

/// Builds and swaps catalogs for one [`CatalogState`].
pub struct Reloader {
    state: Arc<CatalogState>,
    settings: Settings,
    /// The listing digest of the serving catalog. Only this reloader swaps,
    /// so it always matches `state.current()`.
    listing: String,
    /// Replaced catalogs that a request may still hold. Freeing a large
    /// catalog takes tens of milliseconds; holding on to them until nobody
    /// else does keeps that work on this thread, never on a request's.
    retired: Vec<Arc<Catalog>>,
    /// The bundle the files being read came from, recorded in `state` with
    /// the catalog they build (see [`Requester::bundle`]).
    pending_bundle: Option<crate::state::BundleInfo>,
}

impl Reloader {
    pub fn new(state: Arc<CatalogState>, mut settings: Settings) -> Reloader {
        let listing = match settings.listing_now.take() {
            Some(listing) => listing,
            None => (settings.listing)(&state.current()),
        };
        state.record_listing(listing.clone());
        state.set_watching(settings.watch);
        let r = Reloader {
            state,
            settings,
            listing,
            retired: Vec::new(),
            pending_bundle: None,
        };
        r.write_status();
        r
    }

    /// One attempt: read, parse, validate, compile and warm the whole catalog,
    /// then swap it in, or keep the current one and record why not.
    pub fn reload(&mut self, why: &str) -> Outcome {
        let started = Instant::now();
        let outcome = self.attempt(started);
        match &outcome {
            Outcome::Swapped {
                revision,
                listing_changed,
                took,
            } => tracing::info!(
                revision = %revision,
                tools = self.state.status().tools,
                listing_changed = *listing_changed,
                took_ms = format!("{:.1}", took.as_secs_f64() * 1000.0),
                "catalog reloaded ({why})"
            ),
            Outcome::Unchanged { took } => tracing::info!(
                revision = %self.state.current().revision,
                took_ms = format!("{:.1}", took.as_secs_f64() * 1000.0),
                "catalog unchanged ({why})"
            ),
            Outcome::Failed(diags) => {
                for d in diags.errors() {
                    match &d.help {
                        Some(help) => tracing::error!("reload failed: {d} (help: {help})"),
                        None => tracing::error!("reload failed: {d}"),
                    }
                }
                let n = diags.errors().count();
                tracing::error!(
                    revision = %self.state.current().revision,
                    "reload failed with {n} error{} ({why}); the previous catalog keeps serving",
                    if n == 1 { "" } else { "s" }
                );
            }
        }
        self.write_status();
        outcome
    }

    fn attempt(&mut self, started: Instant) -> Outcome {
        // A reload makes and drops what the start-up load does (each changed
        // tool's engine made, warmed and lowered): its freed pages go back
        // as the start-up's do, and all at once when the attempt ends,
        // whatever its outcome (`heap`).
        let _loading = crate::heap::loading();
        let mut source = match self.read_consistently() {
            Ok(s) => s,
            Err(diags) => return self.failed(diags),
        };
        // The files that declare the upstreams loaded: the upstreams run
        // what they say from now on, even if this build fails, so that the
        // snapshots a build needs (of a new or changed declaration) come.
        if let Some(declared) = &self.settings.declared {
            let _ = declared.send(source.declared_upstreams());
        }
        let snapshots = self.settings.upstreams.copy();
        // Read against the pins again each time: a re-pinned file, or an
        // upstream back to its pin, releases what was quarantined.
        let (imported, drift) = source.import_served(&snapshots);
        for w in drift {
            tracing::warn!("{w}");
        }
        if imported.has_errors() {
            return self.failed(imported);
        }
        // Tools left out (a bad or taken name) leave the rest serving.
        for w in &imported.0 {
            tracing::warn!("{w}");
        }
        // The revision digest covers every file's path and content: equal
        // digests mean the catalog would be rebuilt identical.
        if source.digest == self.state.current().revision {
            if let Some(info) = self.pending_bundle.take() {
                self.state.record_bundle(&source.digest, info);
            }
            let took = started.elapsed();
            self.state.record_unchanged(took);
            return Outcome::Unchanged { took };
        }
        let catalog = match catalog::build(&source, &self.settings.options) {
            Ok(c) => c,
            Err(diags) => return self.failed(diags),
        };
        // Never looser than `regent check`: what it refuses with an error
        // does not serve (the tools that changed are run; see
        // `check::on_load`).
        let checking = Instant::now();
        let mut checked = crate::check::on_load::on_load(&source, &catalog, &self.settings.checked);
        if self.settings.skip_load_check {
            checked.allow_errors();
        }
        if !checked.errors.is_empty() {
            return self.failed(Diagnostics(checked.errors));
        }
        tracing::debug!(
            tools = checked.ran,
            took_ms = checking.elapsed().as_millis() as u64,
            "checked the changed tools as regent check does"
        );
        self.settings.checked = checked.checked;
        drop(source);
        for w in catalog.warnings.iter().chain(&checked.warnings) {
            tracing::warn!("{w}");
        }
        let listing = (self.settings.listing)(&catalog);
        let listing_changed = listing != self.listing;
        let revision = catalog.revision.clone();
        let took = started.elapsed();
        // Named before the swap, so a decision of the new catalog finds it.
        if let Some(info) = self.pending_bundle.take() {
            self.state.record_bundle(&revision, info);
        }
        let old = self
            .state
            .swap_with(catalog, Some(listing.clone()), listing_changed, Some(took));
        self.listing = listing;
        self.retired.push(old);
        self.reap();
        Outcome::Swapped {
            revision,
            listing_changed,
            took,
        }
    }

    /// Reads the catalog files once they have settled, and again if any of
    /// them changed while they were read. Files are read one after another,
    /// so a change in the middle (a ConfigMap's `..data` swap, an editor
    /// saving) could otherwise give a catalog made of old and new files,
    /// which neither version meant; and an in-place save caught between its
    /// truncation and its write would give an empty file. The file events
    /// of that change would trigger another reload, but only after the torn
    /// or empty catalog had served.
    ///
    /// A tool file that had tools in the serving catalog and now declares
    /// none is read again after the settle interval before it is believed.
    /// Files that never settle within the bounds keep the previous catalog
    /// serving, with an error naming them in the status; their next change
    /// triggers another reload.
    fn read_consistently(&self) -> Result<Source, Diagnostics> {
        let paths = &self.settings.paths;
        let interval = self.settings.settle;
        let served = tool_files(&self.state.current());
        let mut emptied_rereads = 0;
        let mut changing = Vec::new();
        for _ in 0..READ_TRIES {
            let before = match settle::settle(paths, interval, SETTLE_TRIES) {
                Ok(fp) => fp,
                Err(files) => {
                    changing = files;
                    continue;
                }
            };
            let loaded = Source::load(paths);
            let after = settle::fingerprint(paths);
            if after != before {
                tracing::debug!("catalog files changed while being read; reading them again");
                changing = settle::recently_changed(&after, interval, std::time::SystemTime::now());
                continue;
            }
            if let Ok(source) = &loaded {
                let emptied: Vec<_> = source
                    .tool_files
                    .iter()
                    .filter(|f| {
                        f.model.tools.is_empty()
                            && f.model.upstreams.is_empty()
                            && served.contains(&f.path)
                    })
                    .map(|f| f.path.clone())
                    .collect();
                if !emptied.is_empty() && emptied_rereads < EMPTIED_REREADS {
                    tracing::debug!(
                        files = ?emptied,
                        "tool files that had tools now declare none; reading them again once settled"
                    );
                    emptied_rereads += 1;
                    std::thread::sleep(interval);
                    continue;
                }
                // A file left blank is a save caught half-way whose writer
                // was descheduled (seen on a loaded machine), far more often
                // than a wish to remove tools, which deleting the file or
                // writing `tools: []` says plainly. Keep what serves; the
                // write that completes the save reloads again.
                if let Some(blank) = emptied.iter().find(|p| is_blank(p)) {
                    return Err(Diagnostics(vec![
                        Diagnostic::error(
                            "file-emptied",
                            Location::file(blank.clone()),
                            format!(
                                "{} is empty but declared tools in the serving catalog",
                                blank.display()
                            ),
                        )
                        .with_help(
                            "the previous catalog keeps serving until the file has content again; \
                             to remove its tools, delete the file or write `tools: []`",
                        ),
                    ]));
                }
            }
            return loaded;
        }
        let names = if changing.is_empty() {
            "the catalog files".to_string()
        } else {
            changing
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let at = changing
            .first()
            .cloned()
            .or_else(|| paths.first().cloned())
            .unwrap_or_default();
        Err(Diagnostics(vec![
            Diagnostic::error(
                "files-unsettled",
                Location::file(at),
                format!("{names} kept changing while being read"),
            )
            .with_help(
                "the previous catalog keeps serving; the next change of the files reloads again \
                 (save atomically: write a temporary file and rename it)",
            ),
        ]))
    }

    /// Frees the retired catalogs that no request holds any more. With the
    /// count at one, this reloader holds the only reference, and nobody can
    /// take a new one: the catalog is no longer in the state.
    fn reap(&mut self) {
        self.retired.retain(|c| Arc::strong_count(c) > 1);
    }

    fn failed(&self, diags: Diagnostics) -> Outcome {
        let text = diags
            .errors()
            .map(|d| match &d.help {
                Some(h) => format!("{d} (help: {h})"),
                None => d.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        self.state.record_failure(text);
        Outcome::Failed(diags)
    }

    fn write_status(&self) {
        if let Some(path) = &self.settings.status_file
            && let Err(e) = status::write_file(path, &self.state.status())
        {
            tracing::warn!("cannot write the status file {}: {}", path.display(), e);
        }
    }
}

/// The tool files the tools of `catalog` were declared in.
fn tool_files(catalog: &Catalog) -> HashSet<PathBuf> {
    catalog
        .tools()
        .iter()
        .map(|t| t.location.file.clone())
        .collect()
}

/// Whether the file at `path` holds nothing but blanks and YAML comments.
fn is_blank(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|text| {
        text.lines()
            .map(str::trim)
            .all(|l| l.is_empty() || l.starts_with('#'))
    })
}

/// How many times to read the files before giving up on their settling.
const READ_TRIES: usize = 5;
/// How many settle intervals one wait for the files to settle may take.
const SETTLE_TRIES: usize = 8;
/// How many times to read again because a tool file lost all its tools.
const EMPTIED_REREADS: usize = 2;

/// Why the reload thread wakes up.
enum Trigger {
    Files(DebounceEventResult),
    Signal,
    /// An upstream's tools changed; the reason names it.
    Upstream(String),
    /// Something in the status changed outside a reload (an upstream went
    /// up or down): write the status file again.
    Status,
    /// A verified bundle written out under a directory: serve it in place
    /// of the current paths, or keep them and say why not.
    Bundle {
        dir: PathBuf,
        info: crate::state::BundleInfo,
        reply: Sender<Result<(), String>>,
    },
    Stop,
}

/// The running reload thread. Dropping it leaves the thread running; call
/// [`Handle::stop`] to end it.
pub struct Handle {
    tx: Sender<Trigger>,
    thread: JoinHandle<()>,
}

impl Handle {
    /// Something that asks for a reload, as `SIGHUP` does; for signal tasks.
    pub fn requester(&self) -> Requester {
        Requester(self.tx.clone())
    }

    /// Ends the thread after any reload in progress.
    pub fn stop(self) {
        let _ = self.tx.send(Trigger::Stop);
        let _ = self.thread.join();
    }
}

/// Asks the reload thread for a reload. `serve` also hands it to the
/// upstream supervisors, as the `Reload` trait `upstream` defines.
#[derive(Clone)]
pub struct Requester(Sender<Trigger>);

impl Requester {
    pub fn request(&self) {
        let _ = self.0.send(Trigger::Signal);
    }

    /// Asks for a reload because an upstream's tools changed (`why` says
    /// which and how, for the log).
    pub fn upstream_changed(&self, why: String) {
        let _ = self.0.send(Trigger::Upstream(why));
    }

    /// Asks for the catalog under `dir` (a bundle's files, written out by
    /// `reload::bundle`) to be built and swapped in; the answer says
    /// whether it serves. When it does not, the previous paths stay.
    pub fn bundle(&self, dir: PathBuf, info: crate::state::BundleInfo) -> Result<(), String> {
        let (reply, answer) = mpsc::channel();
        self.0
            .send(Trigger::Bundle { dir, info, reply })
            .map_err(|_| "the reload thread has stopped".to_string())?;
        answer
            .recv()
            .map_err(|_| "the reload thread has stopped".to_string())?
    }

    /// Asks for the status file to be written again, without a reload.
    pub fn status_changed(&self) {
        let _ = self.0.send(Trigger::Status);
    }
}

/// Starts the reload thread, and the watcher when `settings.watch` is set.
/// Fails when the paths cannot be watched, so that a server that was asked
/// to follow its files never silently does not.
pub fn start(state: Arc<CatalogState>, settings: Settings) -> Result<Handle, String> {
    let (tx, rx) = mpsc::channel();
    let watcher = if settings.watch {
        let events = tx.clone();
        let mut w = Watcher::new(settings.debounce, move |r: DebounceEventResult| {
            let _ = events.send(Trigger::Files(r));
        })
        .map_err(|e| {
            format!(
                "cannot start watching files: {}",
                e.to_string().to_lowercase()
            )
        })?;
        let plan = WatchPlan::new(settings.watched());
        let errors = w.apply(&plan);
        if !errors.is_empty() {
            return Err(errors.join("\n"));
        }
        Some((w, plan))
    } else {
        None
    };
    let reloader = Reloader::new(state, settings);
    let thread = std::thread::Builder::new()
        .name("regent-reload".into())
        // Building a catalog evaluates every tool's policy once; regorus
        // recurses on the native stack (see main.rs).
        .stack_size(crate::par::STACK_SIZE)
        .spawn(move || run(reloader, watcher, rx))
        .map_err(|e| format!("cannot start the reload thread: {e}"))?;
    Ok(Handle { tx, thread })
}

fn run(mut reloader: Reloader, mut watcher: Option<(Watcher, WatchPlan)>, rx: Receiver<Trigger>) {
    lower_priority();
    loop {
        let first = if reloader.retired.is_empty() {
            match rx.recv() {
                Ok(t) => t,
                Err(_) => break,
            }
        } else {
            // Requests hold a catalog for microseconds; look again soon.
            match rx.recv_timeout(RETIRED_POLL) {
                Ok(t) => t,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    reloader.reap();
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        };
        // Take everything already queued, so a burst of triggers makes one reload.
        let mut batch = vec![first];
        batch.extend(rx.try_iter());
        let mut reasons: Vec<String> = Vec::new();
        let mut stop = false;
        let mut status = false;
        for t in batch {
            match t {
                Trigger::Stop => stop = true,
                Trigger::Signal => reasons.push("reload requested".into()),
                Trigger::Upstream(why) => reasons.push(why),
                Trigger::Status => status = true,
                // Handled at once and alone: its answer is this reload's.
                Trigger::Bundle { dir, info, reply } => {
                    let why = format!("bundle revision {}", info.revision);
                    // The bundle's directory is the last path; the tool
                    // paths given beside it stay.
                    let mut next = reloader.settings.watched().to_vec();
                    next.push(dir);
                    let before = std::mem::replace(&mut reloader.settings.paths, next);
                    reloader.pending_bundle = Some(info);
                    let answer = match reloader.reload(&why) {
                        Outcome::Failed(_) => {
                            reloader.settings.paths = before;
                            reloader.pending_bundle = None;
                            Err(reloader
                                .state
                                .status()
                                .last_error
                                .unwrap_or_else(|| "the catalog did not build".into()))
                        }
                        _ => Ok(()),
                    };
                    let _ = reply.send(answer);
                }
                Trigger::Files(Ok(events)) => {
                    let Some((_, plan)) = &watcher else { continue };
                    for e in events.iter().filter(|e| plan.is_relevant_event(e)) {
                        tracing::debug!(kind = ?e.kind, paths = ?e.paths, "file event");
                        for p in &e.paths {
                            let name = p.display().to_string();
                            if !reasons.contains(&name) {
                                reasons.push(name);
                            }
                        }
                        if e.need_rescan() {
                            reasons.push("watcher asked for a rescan".into());
                        }
                    }
                }
                Trigger::Files(Err(errors)) => {
                    for e in errors {
                        tracing::warn!("file watcher: {}", e.to_string().to_lowercase());
                    }
                    // Events may have been lost: look at the files again.
                    reasons.push("file watcher error".into());
                }
            }
        }
        if stop {
            break;
        }
        if reasons.is_empty() {
            if status {
                reloader.write_status();
            }
            continue;
        }
        // Watch first, then read: a change made after the watches are in
        // place triggers another reload; one made before is read now.
        if let Some((w, plan)) = &mut watcher {
            *plan = WatchPlan::new(reloader.settings.watched());
            for e in w.apply(plan) {
                tracing::warn!("{e}");
            }
        }
        let why = summarize(&reasons);
        reloader.reload(&why);
    }
}

/// How often to look for retired catalogs that can be freed.
const RETIRED_POLL: Duration = Duration::from_millis(50);

/// Runs this thread (and the threads it starts, which inherit it) at a lower
/// CPU priority than the threads answering requests: on a machine with few
/// cores, a rebuild then takes the cycles requests leave, instead of making
/// requests wait for a time slice.
fn lower_priority() {
    // On Linux, PRIO_PROCESS with id 0 applies to the calling thread only.
    // SAFETY: setpriority takes no pointers; failure only leaves the
    // priority unchanged, which is harmless.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 10) };
    if rc != 0 {
        tracing::debug!(
            "cannot lower the reload thread's priority: {}",
            std::io::Error::last_os_error()
        );
    }
}

fn summarize(reasons: &[String]) -> String {
    const SHOWN: usize = 3;
    let mut s = reasons
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if reasons.len() > SHOWN {
        s.push_str(&format!(" and {} more", reasons.len() - SHOWN));
    }
    s
}
