//! Reading and writing the gzip tarball a bundle travels as.
//!
//! Reading is bounded and strict, since a bundle may come from the network:
//! the decompressed stream has a size limit (a gzip bomb stops there), the
//! number of files a limit, and only regular files and directories are
//! accepted. A path is taken from the bundle's root: OPA writes
//! `/data.json`, so one leading `/` is dropped, as are `.` segments; a `..`
//! segment, a backslash, a NUL, or two entries at the same path are refused.
//! Symbolic and hard links, devices and FIFOs are refused too. The whole
//! gzip stream is read to its end, so its CRC and length are checked and a
//! truncated download is refused even when the cut falls after the last
//! file.
//!
//! Writing is reproducible: entries sorted by path, regular files only,
//! mode 0644, owner 0, mtime 0, and a gzip header without a time or name.
//! What the files mean is left to `bundle` and `bundle::layout`.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use super::BundleError;

/// What reading a bundle may take.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The most bytes the decompressed tar stream may hold.
    pub max_bytes: u64,
    /// The most files (regular entries) it may hold.
    pub max_files: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        // A catalog is text: tool files, policies, data. 64 MiB and 10 000
        // files are far above any real one and far below harm.
        Limits {
            max_bytes: 64 * 1024 * 1024,
            max_files: 10_000,
        }
    }
}

/// The files of a bundle, by path from its root.
pub type Files = BTreeMap<String, Vec<u8>>;

/// A reader that fails once more than `left` bytes have come through.
struct Bounded<R> {
    inner: R,
    left: u64,
    limit: u64,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n as u64 > self.left {
            return Err(std::io::Error::other(format!(
                "the bundle holds more than {} decompressed",
                human_size(self.limit)
            )));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

fn human_size(n: u64) -> String {
    if n >= 1024 * 1024 && n.is_multiple_of(1024 * 1024) {
        format!("{} MiB", n / (1024 * 1024))
    } else {
        format!("{n} bytes")
    }
}

/// Reads every file of the gzip tarball `bytes` within `limits`.
pub fn read(bytes: &[u8], limits: Limits) -> Result<Files, BundleError> {
    // Go's gzip reader (OPA's) reads concatenated members; so does this one.
    let gz = flate2::read::MultiGzDecoder::new(bytes);
    let bounded = Bounded {
        inner: gz,
        left: limits.max_bytes,
        limit: limits.max_bytes,
    };
    let mut archive = tar::Archive::new(bounded);
    let mut files = Files::new();
    let entries = archive.entries().map_err(stream_error)?;
    for entry in entries {
        let mut entry = entry.map_err(stream_error)?;
        let raw = entry.path_bytes().into_owned();
        let shown = String::from_utf8_lossy(&raw).into_owned();
        let kind = entry.header().entry_type();
        if kind.is_dir() || kind.is_pax_global_extensions() {
            continue;
        }
        if !(kind.is_file() || kind.is_contiguous()) {
            let what = if kind.is_symlink() {
                "a symbolic link"
            } else if kind.is_hard_link() {
                "a hard link"
            } else if kind.is_character_special() || kind.is_block_special() {
                "a device"
            } else if kind.is_fifo() {
                "a fifo"
            } else {
                "not a regular file"
            };
            return Err(BundleError::at(
                &shown,
                format!("the bundle entry is {what}; bundles hold regular files only"),
            ));
        }
        let path = clean_path(&raw).map_err(|why| BundleError::at(&shown, why))?;
        if files.len() >= limits.max_files {
            return Err(BundleError::whole(format!(
                "the bundle holds more than {} files",
                limits.max_files
            )));
        }
        if files.contains_key(&path) {
            return Err(BundleError::at(
                &path,
                "the bundle holds two entries at this path".to_string(),
            ));
        }
        // No capacity from the header's size: it is the sender's claim; the
        // bounded stream is what limits the read.
        let mut data = Vec::new();
        entry
            .read_to_end(&mut data)
            .map_err(|e| BundleError::at(&path, stream_message(&e)))?;
        files.insert(path, data);
    }
    // The rest of the stream (tar's end blocks, padding, further members)
    // up to gzip's trailer, so that the CRC and length are checked.
    let mut rest = archive.into_inner();
    std::io::copy(&mut rest, &mut std::io::sink()).map_err(stream_error)?;
    Ok(files)
}

fn stream_error(e: std::io::Error) -> BundleError {
    BundleError::whole(stream_message(&e))
}

fn stream_message(e: &std::io::Error) -> String {
    let text = e.to_string();
    if text.starts_with("the bundle holds more than") {
        return text;
    }
    match e.kind() {
        std::io::ErrorKind::UnexpectedEof => {
            "the bundle is truncated (the gzip stream or the tar archive ends early)".to_string()
        }
        _ => format!(
            "the bundle is not a readable gzip tarball: {}",
            lower_first(&text)
        ),
    }
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// The path of an entry from the bundle's root, or why it is refused.
pub fn clean_path(raw: &[u8]) -> Result<String, String> {
    let text = std::str::from_utf8(raw).map_err(|_| "the entry's path is not utf-8".to_string())?;
    if text.contains('\0') || text.contains('\\') {
        return Err("the entry's path holds a NUL or a backslash".to_string());
    }
    let mut parts = Vec::new();
    for part in text.strip_prefix('/').unwrap_or(text).split('/') {
        match part {
            "" | "." => {}
            ".." => {
                return Err(
                    "the entry's path climbs out of the bundle (`..`); bundles hold paths from their root"
                        .to_string(),
                );
            }
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Err("the entry's path is empty".to_string());
    }
    if text.starts_with("//") {
        return Err("the entry's path is absolute".to_string());
    }
    Ok(parts.join("/"))
}

/// A reproducible gzip tarball of `files`.
pub fn write(files: &Files) -> std::io::Result<Vec<u8>> {
    let gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    tar.mode(tar::HeaderMode::Deterministic);
    for (path, data) in files {
        // GNU headers: a path past ustar's 100 bytes goes in a long-name
        // entry, which Go's reader (OPA's) and this one both read.
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        tar.append_data(&mut header, path, data.as_slice())?;
    }
    let mut gz = tar.into_inner()?;
    gz.flush()?;
    gz.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_taken_from_the_root_and_escapes_refused() {
        for (raw, want) in [
            ("data.json", Ok("data.json")),
            ("/data.json", Ok("data.json")),
            ("./a/./b.rego", Ok("a/b.rego")),
            ("a//b.rego", Ok("a/b.rego")),
            ("../etc/passwd", Err("climbs out")),
            ("a/../../x", Err("climbs out")),
            ("//etc/passwd", Err("absolute")),
            ("a\\..\\x", Err("backslash")),
            ("/", Err("empty")),
        ] {
            match (clean_path(raw.as_bytes()), want) {
                (Ok(got), Ok(w)) => assert_eq!(got, w, "{raw}"),
                (Err(got), Err(w)) => assert!(got.contains(w), "{raw}: {got}"),
                (got, w) => panic!("{raw}: {got:?}, wanted {w:?}"),
            }
        }
    }

    #[test]
    fn sizes_and_counts_past_the_limits_are_refused() {
        let mut files = Files::new();
        files.insert("a.rego".into(), vec![b'x'; 4096]);
        files.insert("b.rego".into(), vec![b'y'; 10]);
        let bytes = write(&files).unwrap();
        let small = Limits {
            max_bytes: 4096,
            max_files: 10,
        };
        let e = read(&bytes, small).unwrap_err();
        assert_eq!(
            e.message,
            "the bundle holds more than 4096 bytes decompressed"
        );
        let few = Limits {
            max_bytes: 1 << 20,
            max_files: 1,
        };
        let e = read(&bytes, few).unwrap_err();
        assert_eq!(e.message, "the bundle holds more than 1 files");
        // A gzip bomb: 65 MiB of zeros in some 65 KiB, stopped at 64 MiB.
        let mut bomb = Files::new();
        bomb.insert("zeros.rego".into(), vec![0; 65 * 1024 * 1024]);
        let bytes = write(&bomb).unwrap();
        assert!(bytes.len() < 1024 * 1024);
        let e = read(&bytes, Limits::default()).unwrap_err();
        assert_eq!(e.message, "the bundle holds more than 64 MiB decompressed");
        assert_eq!(e.file.as_deref(), Some("zeros.rego"));
    }

    #[test]
    fn writing_is_reproducible_and_reads_back() {
        let mut files = Files::new();
        files.insert("b/x.rego".into(), b"package x\n".to_vec());
        files.insert("a.yaml".into(), b"tools: []\n".to_vec());
        let one = write(&files).unwrap();
        let two = write(&files).unwrap();
        assert_eq!(one, two);
        assert_eq!(read(&one, Limits::default()).unwrap(), files);
    }
}
