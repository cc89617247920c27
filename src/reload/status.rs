//! The `--status-file`: the reload status document
//! ([`ReloadStatus::to_json`], the same one `regent/status` returns), written
//! atomically, so a reader never sees half of it.

use std::io::Write;
use std::path::Path;

use crate::state::ReloadStatus;

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
    let mut bytes = serde_json::to_vec_pretty(&status.to_json()).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(&bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}
