//! RFC 3339 timestamps (`2026-01-31T12:34:56.789Z`, UTC, milliseconds) for
//! the decision log and the reload status, in one format everywhere; and
//! durations as messages write them (`30s`, `250ms`, `2m`).

use std::time::{Duration, SystemTime};

use chrono::{DateTime, SecondsFormat, Utc};

/// `2026-01-31T12:34:56.789Z`.
pub fn rfc3339(t: SystemTime) -> String {
    DateTime::<Utc>::from(t).to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// `30s`, `250ms`, `2m`.
pub fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(60_000) && ms > 0 {
        format!("{}m", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
