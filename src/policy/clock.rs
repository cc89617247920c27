//! Which clock one evaluation's time limit counts, and reading it.
//!
//! Serving counts wall-clock time: a request's latency is wall time, and a
//! policy that makes a client wait past the limit fails closed, whatever
//! kept it waiting. `regent check`, `regent test` and `regent review` count
//! the evaluating thread's CPU time instead ([`count_thread_cpu`], called by
//! those commands before they build a catalog): they ask whether a policy
//! is too slow, and on a busy machine (CI beside other jobs) a thread
//! waiting for a core passed 250 ms of wall-clock time on a policy that
//! takes microseconds, and a correct catalog was reported as timing out.
//!
//! The clock is read only where the limit was already checked: when an
//! evaluation's outermost [`Scope`](super::budget::Scope) begins, before a
//! guarded builtin (`budget::charge`), every few thousand steps of
//! `native`, after each evaluation (`engine::in_time`). Serving pays one
//! relaxed atomic load per read for the choice, and never reads the CPU
//! clock (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`, a system call).
//!
//! regorus' own execution timer is the one place that cannot be moved:
//! it reads `std::time::Instant` in every std build (its
//! `set_time_source` exists only in its own tests and no_std builds). So
//! regorus still stops an evaluation at the limit of wall-clock time, and
//! `engine::regorus_eval` confirms such a stop against the thread's CPU:
//! one the CPU does not confirm is run once more, its CPU forgiven
//! ([`forgive`]), under regorus' timer at [`BACKSTOP`] times the limit. A
//! policy that really runs long is still stopped (by the CPU check at a
//! guarded builtin or after the evaluation, or by the backstop) and fails
//! closed.
//!
//! What an evaluation may spend, and when it began, is `budget`'s; the
//! words of a time-out are `engine`'s and [`limit_text`]'s.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Whether this process counts evaluations' time on the thread's CPU
/// clock. Process-wide and set once: an evaluation runs on whichever
/// thread `par` or a pool gives it, and a command either serves or checks.
static THREAD_CPU: AtomicBool = AtomicBool::new(false);

/// How many times the limit regorus' wall-clock timer allows an
/// evaluation run again after a stop the CPU clock did not confirm: long
/// enough that a thread waiting for a core finishes, short enough that a
/// policy spinning without a guarded builtin on a loaded machine is still
/// stopped within seconds (2.5 s at the default 250 ms).
pub const BACKSTOP: u32 = 10;

thread_local! {
    /// The thread's CPU time when its outermost evaluation scope began
    /// (less what [`forgive`] took back); read only while counting CPU.
    static CPU_START: Cell<Duration> = const { Cell::new(Duration::ZERO) };
}

/// From now on, this process's evaluations count the thread's CPU time.
/// For `check`, `test` and `review`; never for `serve` or `resolve`, which
/// answer as a request is answered.
pub fn count_thread_cpu() {
    THREAD_CPU.store(true, Ordering::Relaxed);
}

/// Whether evaluations count the thread's CPU time.
pub fn counts_thread_cpu() -> bool {
    THREAD_CPU.load(Ordering::Relaxed)
}

/// The CPU time this thread has used, as the kernel counts it. Zero where
/// the clock cannot be read, which makes every limit pass: only checks
/// count CPU, and regorus' wall-clock backstop still stops a runaway.
pub fn thread_cpu() -> Duration {
    #[cfg(unix)]
    {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `clock_gettime` writes only the `timespec` it is given,
        // which lives on this stack frame for the call.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        if rc == 0 {
            return Duration::new(t.tv_sec as u64, t.tv_nsec as u32);
        }
    }
    Duration::ZERO
}

/// Notes the start of an evaluation's outermost scope on this thread.
pub(super) fn started() {
    if counts_thread_cpu() {
        CPU_START.with(|c| c.set(thread_cpu()));
    }
}

/// What the evaluation whose outermost scope began at `wall` has spent on
/// the clock this process counts.
pub(super) fn spent(wall: Instant) -> Duration {
    if counts_thread_cpu() {
        thread_cpu().saturating_sub(CPU_START.with(Cell::get))
    } else {
        wall.elapsed()
    }
}

/// Takes `cpu` back from the evaluation in progress on this thread: the
/// CPU of an attempt regorus' wall-clock timer cut short, which is run
/// again from its start.
pub(super) fn forgive(cpu: Duration) {
    CPU_START.with(|c| c.set(c.get().saturating_add(cpu)));
}

/// The limit as a time-out's message words it, naming its clock:
/// `250 ms of CPU`, `250 ms of wall-clock time`.
pub fn limit_text(limit: Duration) -> String {
    if counts_thread_cpu() {
        format!("{} ms of CPU", limit.as_millis())
    } else {
        format!("{} ms of wall-clock time", limit.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thread_cpu_clock_counts_work_not_sleep() {
        let before = thread_cpu();
        std::thread::sleep(Duration::from_millis(30));
        let slept = thread_cpu() - before;
        let mut x = 0u64;
        let start = thread_cpu();
        while thread_cpu() - start < Duration::from_millis(5) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        assert!(thread_cpu() > before, "the clock moves");
        // Sleeping costs next to no CPU, far less than the sleep itself.
        assert!(slept < Duration::from_millis(30), "{slept:?}");
    }
}
