//! The reload status as a JSON document: what `--status-file` holds and what
//! the `regent/status` request returns (and, later, what a health endpoint
//! serves). It is written atomically, so a reader never sees half of it.

use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

use serde_json::{Value, json};

use crate::state::ReloadStatus;

/// The status as JSON. Times are RFC 3339 in UTC.
pub fn to_json(s: &ReloadStatus) -> Value {
    json!({
        "revision": s.revision,
        "listing": s.listing,
        "tools": s.tools,
        "loadedAt": rfc3339(s.loaded_at),
        "attemptedAt": rfc3339(s.attempted_at),
        "lastDurationMs": s.last_duration.map(|d| d.as_secs_f64() * 1000.0),
        "ok": s.last_error.is_none(),
        "lastError": s.last_error,
        "reloads": {"succeeded": s.successes, "failed": s.failures},
        "listingChanges": s.listing_changes,
        "watching": s.watching,
    })
}

/// Replaces `path` with the status: written to a hidden temporary file in the
/// same directory, then renamed over it, so readers see the old document or
/// the new one, never a partial write.
pub fn write_file(path: &Path, status: &ReloadStatus) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "status".into());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let mut bytes = serde_json::to_vec_pretty(&to_json(status)).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(&bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// `2026-01-31T12:34:56.789Z`, from days since the epoch by the civil
/// calendar algorithm (proleptic Gregorian), so no date crate is needed.
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, day) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats_known_instants() {
        let at = |s: u64, ms: u64| SystemTime::UNIX_EPOCH + Duration::from_millis(s * 1000 + ms);
        assert_eq!(rfc3339(at(0, 0)), "1970-01-01T00:00:00.000Z");
        // 2000-02-29 (a leap day in a century leap year) 12:00:00.5
        assert_eq!(rfc3339(at(951_825_600, 500)), "2000-02-29T12:00:00.500Z");
        // 2024-12-31T23:59:59Z
        assert_eq!(rfc3339(at(1_735_689_599, 0)), "2024-12-31T23:59:59.000Z");
        assert_eq!(rfc3339(at(1_735_689_600, 0)), "2025-01-01T00:00:00.000Z");
    }
}
