//! Reading catalog files only once they have stopped changing.
//!
//! An in-place save (`echo >`, many editors) truncates the file and then
//! writes it: for a millisecond or two the file is empty or half-written.
//! A reload that reads it then sees a valid file with fewer tools, or none.
//! Events are debounced, but a reload started by an earlier event can still
//! land in that window. So before reading, the reload looks at what
//! identifies every file (inode, size, modification time, see
//! [`fingerprint`]); when a file changed within the settle interval, it
//! waits until the fingerprint stays the same across one interval.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// What identifies one file's content without reading it: device, inode,
/// size and modification time (seconds, nanoseconds) of what its path leads
/// to (through symlinks); `None` when it cannot be read.
pub type FileId = Option<(u64, u64, u64, i64, i64)>;

/// Every catalog file with its [`FileId`], in discovery order. A rename save
/// or a ConfigMap swap puts a new inode at a path; an in-place write changes
/// the size or the time. Equal fingerprints before and after a read mean
/// nothing changed in between.
pub type Fingerprint = Vec<(PathBuf, FileId)>;

pub fn fingerprint(paths: &[PathBuf]) -> Fingerprint {
    use std::os::unix::fs::MetadataExt;
    let Ok(found) = crate::source::files::discover(paths) else {
        return Vec::new();
    };
    found
        .into_iter()
        .map(|(path, _)| {
            let id = std::fs::metadata(&path)
                .ok()
                .map(|m| (m.dev(), m.ino(), m.len(), m.mtime(), m.mtime_nsec()));
            (path, id)
        })
        .collect()
}

/// The files in `fp` modified less than `interval` before `now` (or, with a
/// clock that disagrees with the file system's, after it).
pub fn recently_changed(fp: &Fingerprint, interval: Duration, now: SystemTime) -> Vec<PathBuf> {
    fp.iter()
        .filter(|(_, id)| {
            let Some((_, _, _, secs, nsecs)) = id else {
                return false;
            };
            let mtime = if *secs >= 0 {
                SystemTime::UNIX_EPOCH + Duration::new(*secs as u64, *nsecs as u32)
            } else {
                return false;
            };
            match now.duration_since(mtime) {
                Ok(age) => age < interval,
                Err(_) => true,
            }
        })
        .map(|(p, _)| p.clone())
        .collect()
}

/// Waits until the catalog files under `paths` have settled, and returns
/// their fingerprint. Files that all changed longer than `interval` ago are
/// settled at once (the usual case: no wait). Otherwise the fingerprint is
/// taken again after each `interval` until two in a row are equal. After
/// `tries` intervals without that, returns the files still changing.
pub fn settle(
    paths: &[PathBuf],
    interval: Duration,
    tries: usize,
) -> Result<Fingerprint, Vec<PathBuf>> {
    let mut fp = fingerprint(paths);
    let mut changing = recently_changed(&fp, interval, SystemTime::now());
    for _ in 0..tries {
        if changing.is_empty() {
            return Ok(fp);
        }
        tracing::debug!(files = ?changing, "catalog files changed just now; waiting for them to settle");
        std::thread::sleep(interval);
        let next = fingerprint(paths);
        if next == fp {
            return Ok(next);
        }
        changing = differing(&fp, &next);
        fp = next;
    }
    Err(changing)
}

/// The paths whose entry differs between two fingerprints (added, removed
/// or changed).
fn differing(a: &Fingerprint, b: &Fingerprint) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = a
        .iter()
        .filter(|e| !b.contains(e))
        .chain(b.iter().filter(|e| !a.contains(e)))
        .map(|(p, _)| p.clone())
        .collect();
    out.sort();
    out.dedup();
    if out.is_empty() {
        // Same entries in another order: the listing itself changed.
        out = b.iter().map(|(p, _)| p.clone()).collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::Instant;

    #[test]
    fn old_files_are_settled_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.yaml");
        std::fs::write(&file, "tools: []\n").unwrap();
        let old = SystemTime::now() - Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(old)
            .unwrap();
        // Nothing changed within the interval, so nothing is reported as
        // changing (the wait itself is not timed: tests share loaded cores).
        let fp = settle(&[dir.path().to_path_buf()], Duration::from_millis(200), 5).unwrap();
        assert!(recently_changed(&fp, Duration::from_millis(200), SystemTime::now()).is_empty());
        assert_eq!(fp, fingerprint(&[dir.path().to_path_buf()]));
    }

    #[test]
    fn a_file_just_written_is_waited_for_until_it_stops_changing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.yaml");
        std::fs::write(&file, "").unwrap();
        let writer = {
            let file = file.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(15));
                let mut f = std::fs::File::options().write(true).open(&file).unwrap();
                f.write_all(b"tools: []\n").unwrap();
            })
        };
        // The interval is far longer than the writer's delay, so a writer
        // descheduled on a loaded machine still writes within it.
        let started = Instant::now();
        let fp = settle(&[dir.path().to_path_buf()], Duration::from_millis(400), 10).unwrap();
        writer.join().unwrap();
        assert!(started.elapsed() >= Duration::from_millis(400));
        assert_eq!(fp[0].1.unwrap().2, 10, "settled on the written size");
    }

    #[test]
    fn a_file_that_keeps_changing_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.yaml");
        std::fs::write(&file, "").unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let (file, stop) = (file.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    n += 1;
                    std::fs::write(&file, "#".repeat(n % 50)).unwrap();
                    std::thread::yield_now();
                }
            })
        };
        // Writes back to back against a 600 ms interval: the writer would
        // have to get no CPU for 600 ms for the file to look settled. (At
        // 200 ms with a millisecond's sleep between writes, a machine with
        // a load average of 15 on two cores once starved it that long.)
        let r = settle(&[dir.path().to_path_buf()], Duration::from_millis(600), 3);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        writer.join().unwrap();
        assert_eq!(r.unwrap_err(), vec![file]);
    }
}
