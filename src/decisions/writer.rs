//! The decision log's writer thread: requests hand it entries, and it turns
//! them into lines and writes them, so no request waits for a write(2).
//!
//! Requests push [`Pending`] entries onto a bounded queue (a
//! `crossbeam-channel` bounded channel) and go on; the thread takes
//! everything queued at once, formats each line into its buffer and writes
//! the buffer when the queue runs dry (or the buffer is large). A client
//! that reads the log right after an answer therefore finds the line within
//! a scheduling delay, and lines never sit in a buffer while the server is
//! idle.
//!
//! Backpressure, deliberately: this is an audit log, so a decision is never
//! dropped to keep up. When [`CAPACITY`] entries are waiting, the request
//! that wants to add one waits for room. If no room appears within
//! [`STALL_AFTER`] (the destination is blocked: a full pipe nobody reads, a
//! hung disk), the log is *stalled*: that entry and every later one are
//! refused at once, not queued, and [`DecisionLog::record`] says so, so the
//! caller fails closed (see `protocol`). The first line the thread writes
//! once it makes progress again is a `gap` line with how many decisions went
//! unlogged: refused pushes, and calls refused at their check before they
//! ran anything ([`Writer::refuse_if_stalled`]). A blocked destination thus
//! costs each request at most [`STALL_AFTER`], once, and never wedges the
//! server.
//!
//! Closing ([`DecisionLog::close`]) takes the queue's sending end from
//! requests: the thread writes everything queued (and what pushes already
//! under way add), flushes and ends, and closing joins it. A line recorded
//! after that is written directly. What goes into a line is `Entry`'s
//! business ([`super::Entry::line`]).
//!
//! With an HTTP sink ([`super::ship`]), each decision line is also handed
//! to it as it is formatted; that never waits (the sink drops rather than
//! block), so the network never holds up this thread or a request. `gap`
//! lines stay local: they are not decisions.
//!
//! [`DecisionLog::record`]: super::DecisionLog::record
//! [`DecisionLog::close`]: super::DecisionLog::close

use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwapOption;
use crossbeam_channel::{
    Receiver, RecvTimeoutError, SendTimeoutError, Sender, TryRecvError, TrySendError,
};
use serde_json::json;

use super::ship::Shipper;
use super::{Entry, Format};
use crate::timestamp::rfc3339;

/// How many entries may wait for the writer before requests wait for room.
/// At a few hundred bytes each, a full queue is about a megabyte.
pub const CAPACITY: usize = 4096;
/// How long a request waits for room in a full queue before the log counts
/// as stalled.
pub const STALL_AFTER: Duration = Duration::from_secs(5);
/// How long closing waits for the writer to finish before giving up on it
/// (its destination is blocked; the process is exiting anyway).
const CLOSE_WAIT: Duration = Duration::from_secs(5);
/// Bytes the waiting entries may hold together. An entry holds its
/// arguments, which a client chooses: 4,096 entries of 1 MiB arguments are
/// 4 GiB, so the queue is bounded in bytes as well as in entries. Past the
/// bound a request waits for room as at [`CAPACITY`] (and the log stalls
/// after [`STALL_AFTER`]); an entry larger than the bound waits until the
/// queue is empty, then goes alone.
pub const QUEUE_BYTES: usize = 64 * 1024 * 1024;
/// The buffer is written out once it holds this much, even while entries
/// keep arriving.
const BUFFER: usize = 64 * 1024;

/// Where lines go.
pub enum Sink {
    /// Standard error, locked for each write so regent's other log lines
    /// (which also go there) never land inside a decision line.
    Stderr,
    File(File),
}

impl Sink {
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Stderr => {
                let mut err = std::io::stderr().lock();
                err.write_all(bytes)?;
                err.flush()
            }
            Sink::File(f) => f.write_all(bytes),
        }
    }
}

/// An entry and the moment it was recorded (the line's `time`).
struct Pending {
    entry: Entry,
    time: SystemTime,
    /// What the entry holds, in bytes (about), reserved in the queue's
    /// byte bound while it waits (0 when it is written directly).
    weight: usize,
    /// Told once the line is written to the destination (and synced, with
    /// `--decision-log-sync`): a call's intent line, which must be on
    /// record before its effect (see [`Writer::push_acked`]).
    ack: Option<tokio::sync::oneshot::Sender<()>>,
}

/// The decision could not be logged: the writer has not made room for
/// [`STALL_AFTER`].
#[derive(Debug, Clone, Copy)]
pub struct Stalled {
    pub waiting: usize,
    pub after: Duration,
}

impl Default for Stalled {
    fn default() -> Stalled {
        Stalled {
            waiting: CAPACITY,
            after: STALL_AFTER,
        }
    }
}

impl std::fmt::Display for Stalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the decision log is not being written: {} decisions have waited more than {} ms for its destination\n  = help: regent refuses decisions it cannot log; check that standard error (or the --decision-log file) is read and writable",
            self.waiting,
            self.after.as_millis()
        )
    }
}

struct Shared {
    /// Set when a request found no room for [`STALL_AFTER`]; cleared when
    /// the writer next takes entries. Read without a lock (every call checks
    /// it); changed only under `missed`'s lock, so the two change together.
    stalled: AtomicBool,
    /// Decisions refused while stalled, not yet reported in a `gap` line.
    missed: Mutex<u64>,
    /// The buffer and the sink; the writer holds this while it writes, and
    /// a line recorded after closing is written through it directly.
    out: Mutex<Output>,
    format: Format,
    capacity: usize,
    stall_after: Duration,
    /// `--decision-log-sync`: an acknowledged line is also synced to disk
    /// (`fdatasync`) before it is acknowledged.
    sync: bool,
    /// Bytes the queued entries hold ([`QUEUE_BYTES`] at most, or one
    /// entry alone), and the signal that some were written.
    queued: Mutex<usize>,
    room: std::sync::Condvar,
    queue_bytes: usize,
}

impl Shared {
    /// Reserves `weight` bytes of the queue's byte bound, waiting for room
    /// as a full queue does ([`Writer::push`]): refused at once while
    /// stalled, the log stalls when no room appears within `stall_after`.
    fn reserve(&self, weight: usize) -> Result<(), Stalled> {
        let fits = |q: usize| q == 0 || q.saturating_add(weight) <= self.queue_bytes;
        let mut queued = lock(&self.queued);
        if fits(*queued) {
            *queued += weight;
            return Ok(());
        }
        drop(queued);
        if self.refuse() {
            return Err(self.stalled());
        }
        let deadline = std::time::Instant::now() + self.stall_after;
        let mut queued = lock(&self.queued);
        while !fits(*queued) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                drop(queued);
                self.stall();
                return Err(self.stalled());
            }
            queued = self
                .room
                .wait_timeout(queued, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        *queued += weight;
        Ok(())
    }

    /// `weight` bytes left the queue.
    fn release(&self, weight: usize) {
        if weight == 0 {
            return;
        }
        let mut queued = lock(&self.queued);
        *queued = queued.saturating_sub(weight);
        self.room.notify_all();
    }

    fn stalled(&self) -> Stalled {
        Stalled {
            waiting: self.capacity,
            after: self.stall_after,
        }
    }

    /// A request waited [`STALL_AFTER`] in vain: the log is stalled, and
    /// its decision is the first one missed.
    fn stall(&self) {
        let mut missed = lock(&self.missed);
        self.stalled.store(true, Ordering::Release);
        *missed += 1;
    }

    /// Counts one refused decision if the log is stalled.
    fn refuse(&self) -> bool {
        if !self.stalled.load(Ordering::Acquire) {
            return false;
        }
        let mut missed = lock(&self.missed);
        let stalled = self.stalled.load(Ordering::Acquire);
        if stalled {
            *missed += 1;
        }
        stalled
    }

    /// The writer took entries: the log flows again. Returns how many
    /// decisions were refused meanwhile (they are only counted while
    /// stalled, so an unset flag means none).
    fn progress(&self) -> u64 {
        if !self.stalled.load(Ordering::Acquire) {
            return 0;
        }
        let mut missed = lock(&self.missed);
        self.stalled.store(false, Ordering::Release);
        std::mem::take(&mut *missed)
    }
}

struct Output {
    sink: Sink,
    buf: Vec<u8>,
    ship: Option<Arc<Shipper>>,
}

impl Output {
    fn line(&mut self, entry: &Entry, time: SystemTime, format: &Format) {
        let start = self.buf.len();
        entry.line(time, format, &mut self.buf);
        if let Some(ship) = &self.ship {
            ship.push(&self.buf[start..]);
        }
        self.buf.push(b'\n');
    }

    fn gap(&mut self, missed: u64, why: Stalled) {
        let v = json!({
            "time": rfc3339(SystemTime::now()),
            "kind": "gap",
            "missed": missed,
            "error": why.to_string(),
        });
        let _ = serde_json::to_writer(&mut self.buf, &v);
        self.buf.push(b'\n');
    }

    /// Writes the buffer out. A failed write is reported in regent's log and
    /// the lines are dropped: the decisions were already made and answered.
    /// Returns whether everything was written.
    fn flush(&mut self) -> bool {
        if self.buf.is_empty() {
            return true;
        }
        let written = self.sink.write_all(&self.buf);
        if let Err(e) = &written {
            tracing::error!("cannot write the decision log: {e}");
        }
        self.buf.clear();
        written.is_ok()
    }

    /// Writes the buffer out for lines that wait for it (intent lines),
    /// syncing a file to disk when `sync`, and tells them. A line whose
    /// write failed is not acknowledged: its call does not run.
    fn flush_acked(&mut self, sync: bool, acks: &mut Vec<tokio::sync::oneshot::Sender<()>>) {
        let mut ok = self.flush();
        if ok
            && sync
            && let Sink::File(f) = &self.sink
            && let Err(e) = f.sync_data()
        {
            tracing::error!("cannot sync the decision log to disk: {e}");
            ok = false;
        }
        for ack in acks.drain(..) {
            if ok {
                let _ = ack.send(());
            }
        }
    }
}

/// About how many bytes `e` holds: its arguments written out, and room for
/// the rest (what the queue's byte bound counts). A walk that costs far
/// less than formatting the line.
fn weight(e: &Entry) -> usize {
    let mut total = 512 + e.tool.len();
    let mut stack = vec![&e.arguments];
    while let Some(v) = stack.pop() {
        total += match v {
            serde_json::Value::String(s) => s.len() + 2,
            serde_json::Value::Array(a) => {
                stack.extend(a.iter());
                2 + a.len()
            }
            serde_json::Value::Object(o) => {
                for (k, v) in o {
                    total += k.len() + 3;
                    stack.push(v);
                }
                2 + o.len()
            }
            _ => 8,
        };
    }
    total
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The queue and its thread, started on the first entry.
pub struct Writer {
    shared: Arc<Shared>,
    /// The queue's sending end; none once closed (or when the thread could
    /// not start), and lines are then written directly. The thread ends
    /// once this is gone and no push under way still holds it.
    queue: ArcSwapOption<Sender<Pending>>,
    /// Set once the thread was started (or could not be): the check every
    /// entry makes, without taking a lock.
    started: AtomicBool,
    thread: Mutex<Thread>,
}

enum Thread {
    /// The queue's receiving end, for the thread to take.
    NotStarted(Receiver<Pending>),
    /// `done` disconnects when the thread ends.
    Running {
        handle: JoinHandle<()>,
        done: Receiver<()>,
    },
    Gone,
}

impl Writer {
    #[cfg(test)]
    pub fn new(sink: Sink, log_arguments: bool) -> Writer {
        Writer::with_limits(sink, log_arguments, CAPACITY, STALL_AFTER)
    }

    /// A writer with another queue size and stall bound (tests).
    #[cfg(test)]
    pub fn with_limits(
        sink: Sink,
        log_arguments: bool,
        capacity: usize,
        stall_after: Duration,
    ) -> Writer {
        Writer::configured(
            sink,
            Format::new(log_arguments, &[]),
            None,
            capacity,
            stall_after,
            false,
        )
    }

    /// A writer making lines by `format`, handing each decision line to
    /// `ship` too when there is one.
    pub fn configured(
        sink: Sink,
        format: Format,
        ship: Option<Arc<Shipper>>,
        capacity: usize,
        stall_after: Duration,
        sync: bool,
    ) -> Writer {
        let capacity = capacity.max(1);
        let (tx, rx) = crossbeam_channel::bounded(capacity);
        Writer {
            shared: Arc::new(Shared {
                stalled: AtomicBool::new(false),
                missed: Mutex::new(0),
                out: Mutex::new(Output {
                    sink,
                    buf: Vec::with_capacity(BUFFER),
                    ship,
                }),
                format,
                capacity,
                stall_after,
                sync,
                queued: Mutex::new(0),
                room: std::sync::Condvar::new(),
                queue_bytes: QUEUE_BYTES,
            }),
            queue: ArcSwapOption::from_pointee(tx),
            started: AtomicBool::new(false),
            thread: Mutex::new(Thread::NotStarted(rx)),
        }
    }

    /// Queues `entry`, waiting for room when the queue is full (see the
    /// module docs for how long, and what happens then).
    pub fn push(&self, entry: Entry) -> Result<(), Stalled> {
        self.push_pending(Pending {
            entry,
            time: SystemTime::now(),
            weight: 0,
            ack: None,
        })
    }

    /// Queues `entry` as [`Writer::push`] does, and has `ack` told once its
    /// line is written (and synced, with `sync`); never told when the write
    /// fails. The caller waits for it before acting on the decision.
    pub fn push_acked(
        &self,
        entry: Entry,
        ack: tokio::sync::oneshot::Sender<()>,
    ) -> Result<(), Stalled> {
        self.push_pending(Pending {
            entry,
            time: SystemTime::now(),
            weight: 0,
            ack: Some(ack),
        })
    }

    fn push_pending(&self, mut pending: Pending) -> Result<(), Stalled> {
        self.start();
        if self.queue.load().is_some() {
            let weight = weight(&pending.entry);
            self.shared.reserve(weight)?;
            pending.weight = weight;
        }
        let pending = match &*self.queue.load() {
            None => return self.direct(pending),
            Some(tx) => match tx.try_send(pending) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Full(p)) => p,
                // The thread is gone (it panicked): write the line here.
                Err(TrySendError::Disconnected(p)) => return self.direct(p),
            },
        };
        // Full: refused at once while stalled, else wait for room, holding
        // the sending end (closing meanwhile lets this push finish).
        let Some(tx) = self.queue.load_full() else {
            return self.direct(pending);
        };
        if self.shared.refuse() {
            self.shared.release(pending.weight);
            return Err(self.shared.stalled());
        }
        match tx.send_timeout(pending, self.shared.stall_after) {
            Ok(()) => Ok(()),
            Err(SendTimeoutError::Timeout(p)) => {
                self.shared.release(p.weight);
                self.shared.stall();
                Err(self.shared.stalled())
            }
            Err(SendTimeoutError::Disconnected(p)) => self.direct(p),
        }
    }

    /// Writes the line here, not through the thread (after closing).
    fn direct(&self, p: Pending) -> Result<(), Stalled> {
        self.shared.release(p.weight);
        let mut out = lock(&self.shared.out);
        out.line(&p.entry, p.time, &self.shared.format);
        let mut acks: Vec<_> = p.ack.into_iter().collect();
        out.flush_acked(self.shared.sync, &mut acks);
        Ok(())
    }

    /// Whether an entry would be refused at once because the log is stalled
    /// (tests; callers use [`Writer::refuse_if_stalled`], which counts).
    #[cfg(test)]
    pub fn is_stalled(&self) -> bool {
        self.shared.stalled.load(Ordering::Acquire)
    }

    /// For a caller that refuses its decision while the log is stalled
    /// rather than pushing it (a call checks before it runs anything): true
    /// when stalled, and the refused decision is then counted in the next
    /// `gap` line, as a refused [`Writer::push`] is. Without this, calls
    /// refused at their check appeared in no line at all.
    pub fn refuse_if_stalled(&self) -> bool {
        if !self.shared.stalled.load(Ordering::Acquire) {
            return false;
        }
        // A stalled queue is full until the writer takes from it, which
        // clears the flag. One with room was taken from (or the flag was
        // set just after the writer emptied it, and only the next entry
        // clears it): that entry must be let through, not refused.
        let full = self.queue.load().as_ref().is_none_or(|tx| tx.is_full());
        full && self.shared.refuse()
    }

    fn start(&self) {
        if self.started.load(Ordering::Acquire) {
            return;
        }
        let mut thread = lock(&self.thread);
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let Thread::NotStarted(queue) = std::mem::replace(&mut *thread, Thread::Gone) else {
            return;
        };
        let shared = self.shared.clone();
        let (finished, done) = crossbeam_channel::bounded::<()>(0);
        let spawned = std::thread::Builder::new()
            .name("regent-decisions".into())
            .spawn(move || {
                let _finished = finished;
                run(&shared, &queue);
            });
        match spawned {
            Ok(handle) => *thread = Thread::Running { handle, done },
            Err(e) => {
                // Without a thread, lines are written directly (as after
                // closing): slower, but nothing is lost.
                tracing::error!("cannot start the decision-log writer, writing directly: {e}");
                self.queue.store(None);
            }
        }
    }

    /// Writes what is queued, flushes, and joins the thread; later entries
    /// are written directly. Gives up waiting after [`CLOSE_WAIT`] when the
    /// destination is blocked.
    pub fn close(&self) {
        let thread = {
            let mut thread = lock(&self.thread);
            // No thread starts after this.
            self.started.store(true, Ordering::Release);
            std::mem::replace(&mut *thread, Thread::Gone)
        };
        // The thread sees the queue closed once it is empty and no push
        // under way holds the sending end any more.
        self.queue.store(None);
        let Thread::Running { handle, done } = thread else {
            return;
        };
        if let Err(RecvTimeoutError::Timeout) = done.recv_timeout(CLOSE_WAIT) {
            return;
        }
        let _ = handle.join();
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.close();
    }
}

/// The writer thread: take everything queued, format it, write when the
/// queue runs dry or the buffer is full, sleep until more comes; end when
/// the queue is closed and empty.
fn run(shared: &Shared, queue: &Receiver<Pending>) {
    let mut batch: Vec<Pending> = Vec::new();
    let mut acks = Vec::new();
    let mut written_since_flush = false;
    loop {
        let first = if written_since_flush {
            match queue.try_recv() {
                Ok(p) => p,
                Err(e) => {
                    // Dry: write out what is buffered before sleeping.
                    lock(&shared.out).flush();
                    written_since_flush = false;
                    if e == TryRecvError::Disconnected {
                        return;
                    }
                    continue;
                }
            }
        } else {
            match queue.recv() {
                Ok(p) => p,
                Err(_) => return,
            }
        };
        batch.push(first);
        batch.extend(queue.try_iter().take(shared.capacity - 1));
        let missed = shared.progress();
        let mut out = lock(&shared.out);
        if missed > 0 {
            out.gap(missed, shared.stalled());
        }
        for p in batch.drain(..) {
            out.line(&p.entry, p.time, &shared.format);
            shared.release(p.weight);
            acks.extend(p.ack);
            if out.buf.len() >= BUFFER {
                out.flush_acked(shared.sync, &mut acks);
            }
        }
        // A line someone waits for (an intent line) is written at once,
        // not when the queue runs dry.
        if !acks.is_empty() {
            out.flush_acked(shared.sync, &mut acks);
        }
        written_since_flush = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decisions::{Kind, Verdict};
    use serde_json::Value;
    use std::io::Read;

    fn entry(i: usize) -> Entry {
        let mut e = Entry::new(Kind::Resolve, "tools/resolve", "t", json!({"i": i}), "rev");
        e.verdict = Verdict::Allowed;
        e
    }

    fn lines(text: &str) -> Vec<Value> {
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }

    #[test]
    fn every_entry_is_written_once_in_order_by_close() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        let w = Writer::new(Sink::File(File::create(&path).unwrap()), false);
        let n = 10_000;
        for i in 0..n {
            w.push(entry(i)).unwrap();
        }
        w.close();
        // After closing, lines are written directly.
        w.push(entry(n)).unwrap();
        let got = lines(&std::fs::read_to_string(&path).unwrap());
        assert_eq!(got.len(), n + 1);
        let want: Vec<String> = (0..=n)
            .map(|i| crate::decisions::arguments_digest(&json!({"i": i})))
            .collect();
        let digests: Vec<&str> = got
            .iter()
            .map(|l| l["argumentsDigest"].as_str().unwrap())
            .collect();
        assert_eq!(digests, want);
        let ids: std::collections::HashSet<&str> =
            got.iter().map(|l| l["id"].as_str().unwrap()).collect();
        assert_eq!(ids.len(), n + 1, "resolve lines get distinct ids");
    }

    #[test]
    fn a_blocked_destination_stalls_the_log_and_the_gap_is_reported() {
        let (mut reader, writer) = std::io::pipe().unwrap();
        let sink = Sink::File(File::from(std::os::fd::OwnedFd::from(writer)));
        let w = Writer::with_limits(sink, false, 8, Duration::from_millis(50));
        // Nobody reads the pipe: once it is full the thread blocks, the
        // queue fills, and a request waits for room, then is refused.
        let mut accepted = 0;
        let first_refusal = loop {
            match w.push(entry(accepted)) {
                Ok(()) => accepted += 1,
                Err(e) => break e,
            }
            assert!(accepted < 100_000, "the log never stalled");
        };
        assert_eq!(first_refusal.waiting, 8);
        assert!(w.is_stalled());
        // While stalled, refusals come at once.
        assert!(w.push(entry(accepted)).is_err());
        // A call refused at its check before running counts as well.
        assert!(w.refuse_if_stalled());
        assert!(w.refuse_if_stalled());

        let drain = std::thread::spawn(move || {
            let mut text = String::new();
            reader.read_to_string(&mut text).unwrap();
            text
        });
        w.close();
        drop(w); // closes the pipe's write end
        let got = lines(&drain.join().unwrap());
        let decisions = got.iter().filter(|l| l["kind"] == json!("resolve")).count();
        assert_eq!(decisions, accepted, "every accepted decision is written");
        let gaps: Vec<&Value> = got.iter().filter(|l| l["kind"] == json!("gap")).collect();
        assert_eq!(gaps.len(), 1, "{gaps:?}");
        assert_eq!(
            gaps[0]["missed"],
            json!(4),
            "two pushes and two checks refused"
        );
    }

    #[test]
    fn the_queue_is_bounded_in_bytes_as_well_as_in_entries() {
        // Nobody reads the pipe. Entries of 4 MiB arguments: the queue
        // takes what fits in its byte bound (far fewer than its 4,096
        // entries), then a request waits for room and is refused.
        let (reader, writer) = std::io::pipe().unwrap();
        let sink = Sink::File(File::from(std::os::fd::OwnedFd::from(writer)));
        let w = Writer::with_limits(sink, true, CAPACITY, Duration::from_millis(50));
        let big = |i: usize| {
            let mut e = entry(i);
            e.arguments = json!({"blob": "x".repeat(4 << 20)});
            e
        };
        let mut accepted = 0;
        let refusal = loop {
            match w.push(big(accepted)) {
                Ok(()) => accepted += 1,
                Err(e) => break e,
            }
            // Unbounded, it would take 4,096 (16 GiB); stop well before.
            assert!(accepted < 64, "the queue took {accepted} entries of 4 MiB");
        };
        // The writer holds one or two, the queue at most 64 MiB of them.
        assert!(accepted <= 20, "{accepted} entries of 4 MiB accepted");
        assert!(w.is_stalled(), "{refusal}");
        std::thread::spawn(move || {
            let mut reader = reader;
            std::io::copy(&mut reader, &mut std::io::sink()).unwrap();
        });
        w.close();
    }

    #[test]
    fn a_check_on_a_flowing_log_refuses_and_counts_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        let w = Writer::new(Sink::File(File::create(&path).unwrap()), false);
        w.push(entry(0)).unwrap();
        assert!(!w.refuse_if_stalled());
        w.close();
        let got = lines(&std::fs::read_to_string(&path).unwrap());
        assert_eq!(got.len(), 1);
        assert!(got.iter().all(|l| l["kind"] != json!("gap")), "{got:?}");
    }
}
