//! The reload status as a JSON document: what `--status-file` holds and what
//! the `regent/status` request returns, with each upstream MCP server's
//! liveness (also on `/healthz`). It is written atomically, so a reader
//! never sees half of it.

use crate::timestamp::rfc3339;
use std::io::Write;
use std::path::Path;

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
        "upstreams": upstreams_json(s),
    })
}

/// Each upstream's liveness, by name: `{"up", "restarts", "since", "pid",
/// "lastError", "tools"}`. Also what `/healthz` shows.
pub fn upstreams_json(s: &ReloadStatus) -> Value {
    s.upstreams
        .iter()
        .map(|(name, u)| {
            (
                name.clone(),
                json!({
                    "up": u.up,
                    "restarts": u.restarts,
                    "since": rfc3339(u.since),
                    "pid": u.pid,
                    "lastError": u.last_error,
                    "tools": u.tools,
                }),
            )
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
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
