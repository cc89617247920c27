//! Spreading independent work over the machine's cores while keeping results
//! in input order, for the parts of a catalog (re)load that grow with the
//! catalog: parsing files, the whole-catalog analyses ([`join`]) and
//! compiling tools.
//!
//! Plain scoped threads, each taking the next few items as it comes free:
//! no pool to keep alive between reloads, nothing shared but the inputs and
//! a counter, and results come back in the order the inputs were given, so
//! diagnostics and tool order stay deterministic. Small inputs run on the
//! calling thread.

use std::num::NonZeroUsize;

/// Stack size of every thread that evaluates policies (main, workers, the
/// reload thread, HTTP workers). regorus evaluates recursively, a few KiB of stack per nested expression.
/// Recursive policies are refused at load (`rego/recursion`), so depth comes
/// only from how deeply a policy nests its own expressions and from values up
/// to serde_json's depth limit; a large stack keeps that far from an
/// overflow, which would abort the process. The memory is only reserved, and
/// committed as it is used.
pub const STACK_SIZE: usize = 1024 * 1024 * 1024;

/// `f` applied to every item, in parallel when there is enough work; the
/// results are in the order of `items`. `min_per_thread` is the fewest items
/// worth a thread.
pub fn map_ordered<T, R, F>(items: &[T], min_per_thread: usize, f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    let threads = cores.min(items.len() / min_per_thread.max(1)).max(1);
    if threads == 1 {
        return items.iter().map(&f).collect();
    }
    // The threads take the next few items as they come free, rather than
    // a share fixed beforehand: costly items cluster (files sorted by path
    // put all the tool files in one place), and a thread that gets less of
    // its core (other work of the load beside it, `join`; other processes
    // on a busy machine) would otherwise hold the whole result back while
    // the others idle. A few items at a time keep the shared counter out
    // of the way and the wait at the end short.
    let chunk = (items.len() / (threads * 64)).clamp(1, 8);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut done: Vec<(usize, Vec<R>)> = Vec::new();
        loop {
            let start = next.fetch_add(chunk, std::sync::atomic::Ordering::Relaxed);
            if start >= items.len() {
                return done;
            }
            let end = (start + chunk).min(items.len());
            done.push((start, items[start..end].iter().map(&f).collect()));
        }
    };
    let work = &work;
    let mut parts: Vec<(usize, Vec<R>)> = std::thread::scope(|s| {
        // A worker that cannot be had (a loaded machine refuses the
        // stack's reservation, a thread limit) is simply not there: the
        // others, this thread among them, take its items as they come free,
        // so the load is slower instead of failing.
        let handles: Vec<_> = (1..threads)
            .filter_map(|_| {
                // Compiling a tool evaluates its policy once, and regorus
                // recurses on the native stack: these threads get the same
                // large (reserved, not committed) stack as the main thread.
                std::thread::Builder::new()
                    .stack_size(STACK_SIZE)
                    .spawn_scoped(s, work)
                    .ok()
            })
            .collect();
        // The calling thread does its share instead of idling.
        let mut parts = work();
        for h in handles {
            match h.join() {
                Ok(part) => parts.extend(part),
                // A panic in `f` is a bug; let it surface as it would have
                // without threads.
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        parts
    });
    parts.sort_unstable_by_key(|(start, _)| *start);
    let out: Vec<R> = parts.into_iter().flat_map(|(_, part)| part).collect();
    debug_assert_eq!(out.len(), items.len(), "one result per item");
    out
}

/// `a()` and `b()` side by side when the machine has more than one core
/// (`b` on a scoped thread with [`STACK_SIZE`], since the whole-catalog
/// analyses recurse over syntax trees as evaluation does), else one after
/// the other. For a few independent passes over the same input, each one
/// pass long; nest it for more than two.
pub fn join<A, B>(a: impl FnOnce() -> A, b: impl FnOnce() -> B + Send) -> (A, B)
where
    B: Send,
{
    let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    if cores == 1 {
        let a = a();
        return (a, b());
    }
    // `b` waits in a slot the thread takes it from, so that when no thread
    // can be had (a loaded machine refuses the stack's reservation) it
    // runs here after `a` instead of failing the load.
    let slot = std::sync::Mutex::new(Some(b));
    let take = || slot.lock().unwrap_or_else(|p| p.into_inner()).take();
    std::thread::scope(|s| {
        let other = std::thread::Builder::new()
            .stack_size(STACK_SIZE)
            .spawn_scoped(s, || take().map(|b| b()));
        let a = a();
        let b = match other.map(|h| h.join()) {
            Ok(Ok(Some(b))) => b,
            // A panic in `b` is a bug; let it surface as it would have
            // without a thread.
            Ok(Err(p)) => std::panic::resume_unwind(p),
            Ok(Ok(None)) | Err(_) => match take() {
                Some(b) => b(),
                None => unreachable!("`b` ran on the thread or waits in its slot"),
            },
        };
        (a, b)
    })
}

/// CPU time the whole process has used so far, user and system, for the
/// debug lines that say where a large catalog's start-up goes: a phase's
/// CPU time over its wall time says how many cores it kept busy
/// (BENCHMARKS.md). `None` where the system does not say.
pub fn cpu_time() -> Option<std::time::Duration> {
    // SAFETY: `getrusage` writes only the struct it is given, which is
    // plain data zeroed here.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
            return None;
        }
        usage
    };
    let of = |t: libc::timeval| {
        std::time::Duration::from_secs(t.tv_sec.max(0) as u64)
            + std::time::Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    Some(of(usage.ru_utime) + of(usage.ru_stime))
}

/// Milliseconds of CPU time (all cores) since `since` (a [`cpu_time`]).
pub fn cpu_ms_since(since: Option<std::time::Duration>) -> u64 {
    match (since, cpu_time()) {
        (Some(a), Some(b)) => b.saturating_sub(a).as_millis() as u64,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::{join, map_ordered};

    #[test]
    fn join_answers_both_in_place() {
        let items: Vec<usize> = (0..100).collect();
        let (sum, (max, len)) = join(
            || items.iter().sum::<usize>(),
            || join(|| items.iter().max().copied(), || items.len()),
        );
        assert_eq!((sum, max, len), (4950, Some(99), 100));
    }

    #[test]
    fn keeps_input_order_whatever_the_chunking() {
        let items: Vec<usize> = (0..1000).collect();
        for min in [1, 7, 100, 5000] {
            let out = map_ordered(&items, min, |x| x * 2);
            assert_eq!(
                out,
                items.iter().map(|x| x * 2).collect::<Vec<_>>(),
                "min_per_thread {min}"
            );
        }
        assert!(map_ordered(&[] as &[u8], 1, |x| *x).is_empty());
    }

    #[test]
    fn every_item_is_taken_once_whatever_its_cost() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        // Costly items bunched at the end, as tool files sort after the
        // policies: each is still run exactly once, in order.
        let items: Vec<usize> = (0..5000).collect();
        let calls = AtomicUsize::new(0);
        let out = map_ordered(&items, 1, |&x| {
            calls.fetch_add(1, Ordering::Relaxed);
            if x > 4900 {
                (0..2000).fold(x, |a, b| a.wrapping_mul(31).wrapping_add(b)) % 7 + x * 10
            } else {
                x * 10
            }
        });
        assert_eq!(calls.load(Ordering::Relaxed), items.len());
        assert_eq!(out.len(), items.len());
        for (i, y) in out.iter().enumerate() {
            assert!(*y >= i * 10 && *y < i * 10 + 7, "item {i} answered {y}");
        }
    }
}
