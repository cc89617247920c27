//! Where a stdio session's policy evaluations run: in place, on the thread
//! that reads the session's requests, or on a thread of its own while that
//! thread goes on serving the session.
//!
//! Which evaluations: every one a stdio session makes. A resolve's (its
//! `visible` check, its policy resolvers' preflight, its policy and shadow
//! policy: `Regent::custom`, timed inside `resolve_logged`); and through
//! [`Pace::evaluate`], a call's policy resolvers, its decision, its decision
//! made again after a reload, and an upstream's request during a forwarded
//! call (its `upstream_request` rule: the upstream's connection is a task
//! of the same single-threaded runtime, so it too runs on the session's
//! thread). `tools/list`'s `visible` rules, and a call's check that its
//! caller sees the tool, go through [`visible_set`]: a set the catalog
//! keeps for the caller is read in place, one it must evaluate is
//! evaluated off the thread. All of a tool's evaluations share its record.
//!
//! Why: stdio serves one session on one thread (a single-threaded runtime,
//! and `direct` answers resolves as the line is read), which is what makes it
//! fast, and an evaluation there holds up everything behind it: a policy that
//! takes 200 ms delays the session's ping, its other resolves, and the
//! progress and results of its calls by 200 ms. Handing every evaluation to
//! another thread costs two thread wake-ups per request, more than a whole
//! resolve takes (a few µs). So a tool earns in-place evaluation: it starts
//! off the I/O thread, and is evaluated in place once [`EARN`] evaluations
//! in a row took under [`FAST`]. Two slow evaluations in a row, or one of
//! [`SURELY_SLOW`] or more, send it back off the thread, and it must earn
//! its place again, four times as long each time (up to [`MAX_EARN`]).
//! Not one slow evaluation of any length: what is timed is wall-clock time
//! (the thread's CPU time costs a system call, half a µs, twice per request),
//! and a thread the scheduler preempts in the middle of an evaluation sees it
//! take milliseconds; under load that happened often enough that one slow
//! evaluation sent tools off the thread for good and cut pipelined resolves
//! by more than half (BENCHMARKS.md, "Issue 28 item 6"): each move makes the
//! tool earn four times longer, so a few preemptions make the earning longer
//! than the run between two of them. Two preemptions in a row are rare, and
//! a preemption does not last [`SURELY_SLOW`] (50 ms, a fifth of the default
//! policy timeout); a slow policy is slow every time. Only evaluations are
//! timed, not the answer's encoding nor a wait for room in the decision
//! log's queue. Requests over [`MAX_IN_PLACE_BYTES`] never run in place:
//! their size alone can make an evaluation slow.
//!
//! What it guarantees: a tool whose evaluations have been slow never holds up
//! the session again while it stays slow; a tool that turns slow on some
//! arguments (say a policy whose cost depends on the input) holds it up once
//! for at most the policy timeout when that is 50 ms or more (twice when
//! each slow evaluation is shorter), and then runs off the thread. What it
//! leaves to others: evaluating (`Regent::custom`, `call`, the catalog),
//! timing out an evaluation (the catalog's budget), and ordering the answers
//! (JSON-RPC answers may arrive in any order; the transports write each when
//! it is ready). HTTP does not pace: a request is a task of its own on a
//! multi-threaded runtime there (`Regent::pace` is `None`).
//!
//! The pace of each tool is kept per catalog revision: a reload may make a
//! slow tool fast or the reverse, so every tool earns its place anew.
//! The table is bounded by the catalog's tool count: only names of tools the
//! catalog has are kept.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use crate::caller::Caller;
use crate::catalog::Catalog;
use crate::catalog::visibility::Visible;

/// An evaluation under this is fast enough to run in place.
pub const FAST: Duration = Duration::from_micros(500);

/// An evaluation this long moves its tool off the thread at once: no
/// preemption lasts that long on a machine that still answers (a busy
/// 2-core one preempts for a few ms), so it is the policy that is slow.
pub const SURELY_SLOW: Duration = Duration::from_millis(50);

/// How many fast evaluations in a row a tool needs before it runs in place.
pub const EARN: u32 = 8;

/// The most a tool that keeps turning slow must earn.
pub const MAX_EARN: u32 = 1 << 16;

/// Requests larger than this are evaluated off the I/O thread.
pub const MAX_IN_PLACE_BYTES: usize = 64 * 1024;

/// The pace of every tool of the current catalog, shared by every session
/// of a server, and the bound on evaluations running off the I/O thread.
pub struct Pace {
    table: Mutex<Table>,
    /// Evaluations running on threads of their own at once; more wait for a
    /// permit (off the I/O thread). Without it, a flood of slow resolves
    /// would start one thread each.
    permits: Arc<Semaphore>,
}

#[derive(Default)]
struct Table {
    revision: String,
    tools: HashMap<String, Arc<Tool>>,
}

/// One tool's record: whether it runs in place, fast evaluations in a row
/// and how many it needs, slow ones in a row. Updated without a lock: two
/// sessions racing may lose a count, which only shifts when a tool moves.
pub struct Tool {
    earned: AtomicBool,
    streak: AtomicU32,
    needed: AtomicU32,
    slow: AtomicU32,
}

impl Tool {
    fn new() -> Tool {
        Tool {
            earned: AtomicBool::new(false),
            streak: AtomicU32::new(0),
            needed: AtomicU32::new(EARN),
            slow: AtomicU32::new(0),
        }
    }
}

impl Default for Pace {
    fn default() -> Pace {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Pace {
            table: Mutex::new(Table::default()),
            permits: Arc::new(Semaphore::new(2 * cores)),
        }
    }
}

impl Pace {
    /// The record of tool `name` of `catalog`, `None` for a name the catalog
    /// does not have (answered at once with an error, in place).
    pub fn tool(&self, catalog: &Catalog, name: &str) -> Option<Arc<Tool>> {
        catalog.tool(name)?;
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        if table.revision != catalog.revision {
            table.revision.clone_from(&catalog.revision);
            table.tools.clear();
        }
        if let Some(t) = table.tools.get(name) {
            return Some(t.clone());
        }
        let t = Arc::new(Tool::new());
        table.tools.insert(name.to_string(), t.clone());
        Some(t)
    }

    /// Whether a request of `method` with `params` is evaluated in place,
    /// and its tool's record (see [`Pace::in_place`]); `bytes` gives its size
    /// when it names a tool. Methods other than [`paced`] ones, and requests
    /// naming no tool, are answered in place.
    pub fn request(
        &self,
        catalog: &Catalog,
        method: &str,
        params: Option<&serde_json::Value>,
        bytes: impl FnOnce() -> usize,
    ) -> (bool, Option<Arc<Tool>>) {
        match tool_name(params) {
            Some(name) if paced(method) => self.in_place(catalog, name, bytes()),
            _ => (true, None),
        }
    }

    /// Runs `evaluate` on a blocking thread once a permit is free (waiting
    /// for one off the I/O thread). `Err` only if it panicked or was
    /// cancelled: the caller answers that as a failed evaluation.
    pub async fn off_thread<T: Send + 'static>(
        &self,
        evaluate: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, tokio::task::JoinError> {
        // The semaphore is never closed.
        let permit = self.permits.clone().acquire_owned().await;
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            evaluate()
        })
        .await
    }

    /// Runs `evaluate`, one evaluation of tool `name`'s policies on
    /// `catalog` for a request `bytes` long, in place or on a thread of its
    /// own as the tool's pace says, and tells the tool's record how long it
    /// took. The way every evaluation of a stdio session other than a
    /// resolve's answer is paced: a call's decision, its policy resolvers,
    /// its decision made again after a reload, an upstream's request during
    /// a forwarded call. (A resolve's answer times only its evaluation,
    /// inside `Regent::custom`, not the answer's encoding.) `Err` only if it
    /// panicked or was cancelled: the caller answers that as a failed
    /// evaluation.
    pub async fn evaluate<T: Send + 'static>(
        &self,
        catalog: &Arc<Catalog>,
        name: &str,
        bytes: usize,
        evaluate: impl FnOnce(&Catalog) -> T + Send + 'static,
    ) -> Result<T, tokio::task::JoinError> {
        let (here, record) = self.in_place(catalog, name, bytes);
        if here {
            return Ok(timed(record, || evaluate(catalog)));
        }
        let catalog = catalog.clone();
        self.off_thread(move || timed(record, || evaluate(&catalog)))
            .await
    }

    /// Whether a request for `name`, `bytes` long, is evaluated in place.
    /// Returns the tool's record to pass to [`Tool::took`] either way.
    pub fn in_place(
        &self,
        catalog: &Catalog,
        name: &str,
        bytes: usize,
    ) -> (bool, Option<Arc<Tool>>) {
        let Some(tool) = self.tool(catalog, name) else {
            return (true, None);
        };
        (bytes <= MAX_IN_PLACE_BYTES && tool.earned(), Some(tool))
    }
}

impl Tool {
    fn earned(&self) -> bool {
        self.earned.load(Ordering::Relaxed)
    }

    /// Records how long one evaluation of this tool took.
    pub fn took(&self, elapsed: Duration) {
        if elapsed < FAST {
            self.slow.store(0, Ordering::Relaxed);
            // Saturating: a long run of fast ones must not wrap to 0.
            let streak = self
                .streak
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| s.checked_add(1))
                .map_or(u32::MAX, |s| s + 1);
            if streak >= self.needed.load(Ordering::Relaxed) {
                self.earned.store(true, Ordering::Relaxed);
            }
        } else {
            self.streak.store(0, Ordering::Relaxed);
            let slow = self.slow.fetch_add(1, Ordering::Relaxed) + 1;
            let moves = slow >= 2 || elapsed >= SURELY_SLOW;
            if moves && self.earned.swap(false, Ordering::Relaxed) {
                let needed = self.needed.load(Ordering::Relaxed);
                self.needed
                    .store(needed.saturating_mul(4).min(MAX_EARN), Ordering::Relaxed);
            }
        }
    }
}

/// [`Pace::evaluate`] with `pace`, else (HTTP, where a request is a task of
/// its own) in place and untimed. `bytes` is asked only with a pace.
pub async fn evaluate<T: Send + 'static>(
    pace: Option<&Pace>,
    catalog: &Arc<Catalog>,
    name: &str,
    bytes: impl FnOnce() -> usize,
    evaluate: impl FnOnce(&Catalog) -> T + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    match pace {
        Some(pace) => pace.evaluate(catalog, name, bytes(), evaluate).await,
        None => Ok(evaluate(catalog)),
    }
}

/// Runs `evaluate` and tells `record` (a tool's, from [`Pace::in_place`])
/// how long it took: the one place an evaluation is timed for the pace.
pub fn timed<T>(record: Option<Arc<Tool>>, evaluate: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let out = evaluate();
    if let Some(record) = record {
        record.took(started.elapsed());
    }
    out
}

/// `caller`'s visibility set on `catalog` (`Catalog::visible_set`): in
/// place when it evaluates nothing (no `visible` rule, or the set is kept:
/// over stdio, whose caller is fixed, every request after the first of a
/// catalog), else on a thread of its own, so that a slow `visible` rule
/// holds up nothing else of the session. No tool's record: the set
/// evaluates every tool's rule. In place without a pace (HTTP).
pub async fn visible_set(
    pace: Option<&Pace>,
    catalog: &Arc<Catalog>,
    caller: Option<&Arc<Caller>>,
) -> Result<Option<Visible>, tokio::task::JoinError> {
    match pace {
        Some(pace) if !catalog.visibility_known(caller.map(|c| &**c)) => {
            let (catalog, caller) = (catalog.clone(), caller.cloned());
            pace.off_thread(move || catalog.visible_set(caller.as_deref()))
                .await
        }
        _ => Ok(catalog.visible_set(caller.map(|c| &**c))),
    }
}

/// Whether requests of `method` are paced: the two that evaluate a policy
/// (everything else `Regent::custom` answers is answered in place).
fn paced(method: &str) -> bool {
    matches!(method, "tools/resolve" | "tools/annotations")
}

/// The `name` of a `tools/resolve`-shaped request's params, if it has one.
fn tool_name(params: Option<&serde_json::Value>) -> Option<&str> {
    params?.get("name")?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUICK: Duration = Duration::from_micros(5);
    const SLOW: Duration = Duration::from_millis(20);

    #[test]
    fn a_tool_earns_its_place_and_loses_it_for_longer() {
        let t = Tool::new();
        for _ in 0..EARN {
            assert!(!t.earned());
            t.took(QUICK);
        }
        assert!(t.earned());
        // One slow evaluation (a preemption, say) keeps it in place...
        t.took(SLOW);
        assert!(t.earned());
        t.took(QUICK);
        assert!(t.earned());
        // ...two in a row send it off the thread.
        t.took(SLOW);
        t.took(SLOW);
        assert!(!t.earned());
        for _ in 0..4 * EARN {
            t.took(QUICK);
        }
        assert!(t.earned());
        // One far longer than a preemption moves it at once.
        t.took(SURELY_SLOW);
        assert!(!t.earned());
        for _ in 0..4 * EARN {
            t.took(QUICK);
        }
        assert!(!t.earned(), "a tool that turned slow must earn 4× longer");
        for _ in 0..12 * EARN {
            t.took(QUICK);
        }
        assert!(t.earned());
    }

    /// `Pace::evaluate` runs a tool's evaluations off the calling thread
    /// until it has earned its place, then on it, and moves it off again
    /// on one evaluation of `SURELY_SLOW`.
    #[test]
    fn evaluate_runs_off_the_thread_until_the_tool_earned_its_place() {
        let catalog = Arc::new(crate::catalog::two_tool_catalog("{type: object}", None));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let pace = Pace::default();
        let here = std::thread::current().id();
        let on_this_thread = |wait: Duration| {
            runtime.block_on(pace.evaluate(&catalog, "a", 2, move |_| {
                std::thread::sleep(wait);
                std::thread::current().id() == here
            }))
        };
        // At least EARN off the thread (more when this busy machine preempts
        // one), then in place.
        let mut off = 0;
        while !on_this_thread(Duration::ZERO).unwrap() {
            off += 1;
            assert!(off < 10 * MAX_EARN, "never in place");
        }
        assert!(off >= EARN, "{off}");
        assert!(on_this_thread(SURELY_SLOW).unwrap());
        assert!(!on_this_thread(Duration::ZERO).unwrap());
        // A tool the catalog does not have is answered in place.
        let unknown = runtime.block_on(pace.evaluate(&catalog, "nope", 2, move |_| {
            std::thread::current().id() == here
        }));
        assert!(unknown.unwrap());
    }

    #[test]
    fn what_a_tool_must_earn_is_bounded() {
        let t = Tool::new();
        for _ in 0..40 {
            for _ in 0..MAX_EARN {
                t.took(QUICK);
            }
            t.took(SLOW);
            t.took(SLOW);
        }
        assert_eq!(t.needed.load(Ordering::Relaxed), MAX_EARN);
    }
}
