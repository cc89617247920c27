//! What a catalog load leaves the allocator holding: the pages its
//! temporaries freed go back to the system soon after they are freed while
//! a load runs (serve's start-up and each reload), and what is left all at
//! once when it is done (issue 32 item 2: 10,000 tools under 300 MB, peak
//! included).
//!
//! The binary's allocator is mimalloc (`main.rs`). It returns a freed page
//! to the system only after a delay (`purge_delay`, 1 s in mimalloc 3), and
//! only when a later allocation or free gets round to it. A load frees most
//! of what it makes within that second (each tool's engine made, warmed,
//! lowered and dropped), so with the delay the freed pages pile up and the
//! peak holds them; and a server that goes idle on its stdin right after
//! the load can keep them for as long as it serves, which made the resident
//! figure after start-up differ by 100 MB between runs of one binary. What
//! stays live is not this module's concern (the build drops its
//! temporaries); it only changes when the allocator lets go of what was
//! already freed. Serving keeps mimalloc's delay, so that a request's
//! allocations do not pay a system call for each page that empties.
//!
//! In builds that use another allocator (the library's unit tests) this
//! acts on mimalloc's own, unused, heap: nothing to free, and harmless.

use std::ffi::c_long;

/// `mi_option_purge_delay` in mimalloc 3's `mimalloc.h` (the 16th option),
/// which `libmimalloc-sys` 0.1 declares no constant for. The test below
/// checks that it reads mimalloc 3's default delay.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// The purge delay while a load runs, in milliseconds. Session 26 had 0
/// (a page purged when it empties): each tool's engine then freed its pages
/// to the system and the next one faulted them in again, 56,000–200,000
/// page faults at 10,000 tools against about 20,000 with 30 ms and 10,000
/// with 100 ms, and seconds of system time on a busy host (BENCHMARKS.md,
/// session 27). 30 ms lets the next tools reuse a page that empties; 100 ms
/// put the peak 20–30 MB higher in the load bench (up to 267 MB against the
/// 300 MB goal), 30 ms left it where 0 had it (234–237 MB).
const LOADING_DELAY_MS: c_long = 30;

/// Purging pages as they are freed, for the time a load runs; dropped,
/// the delay is as it was and every page freed meanwhile is purged.
#[must_use = "the short purge delay ends when this is dropped"]
pub struct Loading {
    delay: c_long,
    /// Whether this load turned transparent huge pages off ([`small_pages`]).
    small_pages: bool,
}

/// Starts purging freed pages after [`LOADING_DELAY_MS`], until the
/// returned guard is dropped (at the end of the load). One load at a time:
/// start-up's guard is dropped before the reload thread starts, and that
/// thread runs one attempt after another. An explicit
/// `MIMALLOC_PURGE_DELAY` in the environment is respected (the guard then
/// only purges at the end).
pub fn loading() -> Loading {
    // SAFETY: reading and setting an option is what mimalloc's options API
    // is for; they may be changed at any time from any thread (the value is
    // read when a purge is scheduled).
    let delay = unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, LOADING_DELAY_MS) };
    }
    Loading {
        delay,
        small_pages: small_pages(),
    }
}

/// No transparent huge pages for the process while a load runs, unless
/// `MIMALLOC_ALLOW_THP` says otherwise; whether it was this call that
/// turned them off (and so must turn them on again).
///
/// mimalloc advises the kernel to back its arenas with 2 MiB pages, so a
/// load's first touch of each 2 MiB zeroes all of it, and a page purged and
/// touched again is zeroed again: at 10,000 tools the kernel zeroing pages
/// was a quarter of the load's CPU and the peak 13–15 MB higher than with
/// 4 KiB pages (BENCHMARKS.md, session 27). The flag is checked at each
/// page fault, so it takes effect for memory already mapped; serving gets
/// huge pages again.
#[cfg(target_os = "linux")]
fn small_pages() -> bool {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
        return false;
    }
    // SAFETY: prctl with these options reads or sets one flag of this
    // process and takes no pointers.
    unsafe {
        libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) == 0
            && libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0
    }
}

#[cfg(not(target_os = "linux"))]
fn small_pages() -> bool {
    false
}

impl Drop for Loading {
    fn drop(&mut self) {
        // SAFETY: as in `loading`. `mi_collect` takes no pointers; with
        // `force` it frees this thread's empty pages and purges every page
        // of the arenas waiting for its delay (those the build's worker
        // threads freed before they ended included).
        unsafe {
            libmimalloc_sys::mi_option_set(PURGE_DELAY, self.delay);
            libmimalloc_sys::mi_collect(true);
        }
        #[cfg(target_os = "linux")]
        if self.small_pages {
            // SAFETY: as in `small_pages`.
            unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 0, 0, 0, 0) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_is_the_purge_delay() {
        // mimalloc 3 purges after 1,000 ms unless told otherwise; a wrong
        // option number would read another option's default.
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            let delay = unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
            assert_eq!(delay, 1000);
        }
        let guard = loading();
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            let delay = unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
            assert_eq!(delay, LOADING_DELAY_MS);
        }
        #[cfg(target_os = "linux")]
        let small = guard.small_pages;
        #[cfg(target_os = "linux")]
        if small {
            // SAFETY: reads one flag of this process.
            assert_eq!(
                unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) },
                1
            );
        }
        let before = guard.delay;
        drop(guard);
        #[cfg(target_os = "linux")]
        if small {
            // Turned on again for serving.
            assert_eq!(
                unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) },
                0
            );
        }
        assert_eq!(
            unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) },
            before
        );
    }
}
