//! `serve --bundle-url`: the catalog delivered as an OPA bundle, polled.
//!
//! At start-up [`start_up`] serves the copy persisted under `--bundle-dir`
//! when there is one (verified again: the disk is not trusted more than the
//! network), else downloads the bundle (a few bounded tries) and refuses to
//! start without it. A [`Poller`] thread then asks the server every
//! `--bundle-poll` seconds (±15 % jitter, so replicas started together do
//! not poll together) with `If-None-Match`; a `304` does nothing. A new
//! bundle is read within the archive limits, verified with
//! `--bundle-public-key` when given, written to a fresh directory and
//! handed to the reload thread ([`super::Requester::bundle`]), which builds,
//! checks and swaps it exactly as a file change; only once it serves is it
//! persisted (temporary file, fsync, rename) with its ETag. A download
//! error, a refused bundle or a catalog that does not build keeps the last
//! good one serving: logged, in the status document's `lastError`, counted
//! in `regent_bundle_failures_total`.
//!
//! This module knows HTTP, the persisted files and the bundle format (through
//! `crate::bundle`). It does not know Rego, tool declarations, MCP, or how a
//! catalog is built and swapped (the reload thread does that).

use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sha2::Digest;

use crate::bundle::{self, Bundle, Limits, PublicKeys, Signature, layout};
use crate::metrics::Metrics;
use crate::state::{BundleInfo, CatalogState};

/// The persisted bundle's file name under `--bundle-dir`.
const TARBALL: &str = "bundle.tar.gz";
/// What is known of the persisted bundle: its ETag, URL and digest.
const META: &str = "bundle.json";
/// How many times a start-up without a persisted copy tries to download.
const START_TRIES: u32 = 3;
/// How long one download may take, connection included.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest compressed bundle accepted: the archive's decompressed
/// limit already bounds what is read; this bounds what is downloaded.
const MAX_DOWNLOAD: u64 = 64 * 1024 * 1024;

/// How one server gets its bundle.
#[derive(Clone)]
pub struct Settings {
    pub url: reqwest::Url,
    pub keys: Option<Arc<PublicKeys>>,
    /// `--bundle-ca`: the only roots trusted for the bundle server, when given.
    pub ca: Option<Vec<reqwest::Certificate>>,
    pub poll: Duration,
    pub dir: PathBuf,
    pub limits: Limits,
    /// Tool files are given beside the bundle (`serve --bundle-url URL
    /// PATH…`): a bundle of Rego and data only is the policy part of the
    /// catalog, not refused.
    pub tools_elsewhere: bool,
}

/// A verified bundle, written out where the catalog reader reads it.
pub struct Ready {
    /// The directory of catalog files (under `--bundle-dir`).
    pub catalog_dir: PathBuf,
    pub info: BundleInfo,
    tarball: Vec<u8>,
}

/// The bundle's name: the URL's last path segment without `.tar.gz` (or
/// `.tgz`), as OPA names a bundle after the resource it polls; `regent`
/// when the URL has none.
pub fn name_of(url: &reqwest::Url) -> String {
    let last = url
        .path_segments()
        .and_then(|mut s| s.next_back())
        .unwrap_or("");
    let name = last
        .strip_suffix(".tar.gz")
        .or_else(|| last.strip_suffix(".tgz"))
        .unwrap_or(last);
    if name.is_empty() {
        "regent".to_string()
    } else {
        name.to_string()
    }
}

/// Reads `--bundle-ca`: PEM certificates, at least one.
pub fn read_ca(path: &Path) -> Result<Vec<reqwest::Certificate>, String> {
    let pem = std::fs::read(path).map_err(|e| {
        format!(
            "cannot read the CA file {}: {}\n  = help: --bundle-ca names a PEM file with the certificates of the CAs that signed the bundle server's certificate",
            path.display(),
            crate::diag::lower_io(&e)
        )
    })?;
    reqwest::Certificate::from_pem_bundle(&pem)
        .ok()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| {
            format!(
                "the CA file {} holds no PEM certificate\n  = help: --bundle-ca wants -----BEGIN CERTIFICATE----- blocks",
                path.display()
            )
        })
}

/// The client for the bundle server. With `--bundle-ca` its certificates
/// are the only roots, as OPA's `tls.ca_cert` does without
/// `system_ca_required`: a private CA names the one server meant, and a
/// certificate some public CA issued for that name is not trusted instead.
fn http_client(ca: Option<&[reqwest::Certificate]>) -> Result<reqwest::Client, String> {
    crate::outbound::install_crypto();
    let mut b = reqwest::Client::builder()
        .no_proxy()
        .timeout(FETCH_TIMEOUT)
        .connect_timeout(FETCH_TIMEOUT)
        .user_agent(concat!("regent/", env!("CARGO_PKG_VERSION")));
    if let Some(certs) = ca {
        b = b.tls_certs_only(certs.iter().cloned());
    }
    b.build()
        .map_err(|e| format!("cannot make the bundle's HTTP client: {e}"))
}

/// What one poll found.
enum Fetched {
    NotModified,
    New {
        bytes: Vec<u8>,
        etag: Option<String>,
    },
}

async fn fetch(
    client: &reqwest::Client,
    url: &reqwest::Url,
    etag: Option<&str>,
) -> Result<Fetched, String> {
    let mut req = client.get(url.clone());
    if let Some(e) = etag {
        req = req.header(reqwest::header::IF_NONE_MATCH, e);
    }
    let mut resp = req
        .send()
        .await
        .map_err(|e| crate::outbound::error_chain(&e).to_lowercase())?;
    let status = resp.status();
    if status == reqwest::StatusCode::NOT_MODIFIED {
        return Ok(Fetched::NotModified);
    }
    if !status.is_success() {
        return Err(format!("the server answered {status}"));
    }
    if resp.content_length().is_some_and(|n| n > MAX_DOWNLOAD) {
        return Err(format!(
            "the bundle is larger than {} MiB",
            MAX_DOWNLOAD >> 20
        ));
    }
    let etag = resp
        .headers()
        .get(reqwest::header::ETAG)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut bytes = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| {
        format!(
            "the download broke off: {}",
            crate::outbound::error_chain(&e).to_lowercase()
        )
    })? {
        if bytes.len() as u64 + chunk.len() as u64 > MAX_DOWNLOAD {
            return Err(format!(
                "the bundle is larger than {} MiB",
                MAX_DOWNLOAD >> 20
            ));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Fetched::New { bytes, etag })
}

/// Opens and verifies `bytes`, and writes its catalog files to a fresh
/// directory under `settings.dir`.
fn prepare(settings: &Settings, bytes: Vec<u8>, etag: Option<String>) -> Result<Ready, String> {
    let label = settings.url.to_string();
    let opened: Bundle = bundle::open(&bytes, settings.keys.as_deref(), settings.limits)
        .map_err(|e| e.render(&label))?;
    let files = layout::catalog_files(&opened.files).map_err(|e| e.render(&label))?;
    // Served alone, a policy-only bundle (`opa build` of Rego and data)
    // would serve no tools at all: refused, as `check` refuses it alone.
    if !settings.tools_elsewhere
        && !files.keys().any(|p| {
            crate::source::FileKind::of(Path::new(p)) == Some(crate::source::FileKind::Tools)
        })
    {
        return Err(format!(
            "{label}: the bundle holds no tool files (a bundle of Rego and data only, as `opa build` makes)\n  help: give the tool files beside it (`regent serve --bundle-url URL tools/`), or build the whole catalog with `regent bundle build DIR -o FILE`"
        ));
    }
    let dir = fresh_dir(&settings.dir).map_err(|e| {
        format!(
            "cannot make a directory under {}: {e}",
            settings.dir.display()
        )
    })?;
    if let Err(e) = layout::write_dir(&files, &dir) {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(format!(
            "cannot write the bundle under {}: {e}",
            dir.display()
        ));
    }
    let (key_id, verified) = match &opened.signature {
        Signature::Unsigned => (None, false),
        Signature::NotVerified { key_id } => (key_id.clone(), false),
        Signature::Verified { key_id } => (key_id.clone(), true),
    };
    Ok(Ready {
        catalog_dir: dir,
        info: BundleInfo {
            name: name_of(&settings.url),
            revision: opened.manifest.revision.clone(),
            key_id,
            verified,
            url: label,
            etag,
        },
        tarball: bytes,
    })
}

/// A directory no earlier bundle used: `active-<pid>-<n>`.
fn fresh_dir(root: &Path) -> std::io::Result<PathBuf> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = root.join(format!("active-{}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Writes `bytes` to `path` so that a reader (or a crash) sees the old file
/// or the new one: a temporary file beside it, synced, renamed over it.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    // The rename itself is durable once the directory is synced.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Persists the bundle that now serves: the tarball first, then what
/// describes it. The ETag is trusted only when the digest it was recorded
/// with matches the tarball, so a crash between the two writes costs one
/// download, never a wrong `304`.
fn persist(dir: &Path, ready: &Ready) -> std::io::Result<()> {
    write_atomically(&dir.join(TARBALL), &ready.tarball)?;
    let meta = serde_json::json!({
        "url": ready.info.url,
        "etag": ready.info.etag,
        "sha256": hex(&sha2::Sha256::digest(&ready.tarball)),
    });
    write_atomically(
        &dir.join(META),
        &serde_json::to_vec_pretty(&meta).unwrap_or_default(),
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The persisted bundle and its ETag, when there is one for this URL.
fn persisted(settings: &Settings) -> Option<(Vec<u8>, Option<String>)> {
    let bytes = std::fs::read(settings.dir.join(TARBALL)).ok()?;
    let meta: serde_json::Value = std::fs::read(settings.dir.join(META))
        .ok()
        .and_then(|m| serde_json::from_slice(&m).ok())
        .unwrap_or_default();
    // A copy of another URL's bundle is not this server's catalog.
    if meta["url"].as_str() != Some(settings.url.as_str()) {
        tracing::info!(
            "the bundle kept in {} is not from {}; downloading",
            settings.dir.display(),
            settings.url
        );
        return None;
    }
    let same = meta["sha256"].as_str() == Some(hex(&sha2::Sha256::digest(&bytes)).as_str());
    let etag = same
        .then(|| meta["etag"].as_str().map(str::to_string))
        .flatten();
    Some((bytes, etag))
}

/// Removes the catalog directories of earlier bundles (of this process or
/// an earlier one), keeping `keep`.
fn sweep(root: &Path, keep: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p != keep && e.file_name().to_string_lossy().starts_with("active-") {
            let _ = std::fs::remove_dir_all(&p);
        }
    }
}

/// The bundle to start with: the persisted copy when there is one and it
/// still verifies, else a download. An error says why the server cannot
/// start.
pub fn start_up(settings: &Settings) -> Result<Ready, String> {
    std::fs::create_dir_all(&settings.dir).map_err(|e| {
        format!(
            "cannot make the bundle directory {}: {}\n  = help: give --bundle-dir a writable directory",
            settings.dir.display(),
            crate::source::files::lower_io(&e)
        )
    })?;
    sweep(&settings.dir, Path::new(""));
    if let Some((bytes, etag)) = persisted(settings) {
        match prepare(settings, bytes, etag) {
            Ok(ready) => {
                tracing::info!(
                    revision = %ready.info.revision,
                    dir = %settings.dir.display(),
                    "serving the persisted bundle; polling {} for a newer one",
                    settings.url
                );
                return Ok(ready);
            }
            Err(e) => tracing::warn!(
                "the persisted bundle in {} is refused ({e}); downloading it again",
                settings.dir.display()
            ),
        }
    }
    let client = http_client(settings.ca.as_deref())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the bundle's runtime: {e}"))?;
    let mut last = String::new();
    for attempt in 1..=START_TRIES {
        match runtime.block_on(fetch(&client, &settings.url, None)) {
            Ok(Fetched::New { bytes, etag }) => {
                let ready = prepare(settings, bytes, etag)?;
                if let Err(e) = persist(&settings.dir, &ready) {
                    tracing::warn!(
                        "cannot persist the bundle in {}: {e}; a restart will download it again",
                        settings.dir.display()
                    );
                }
                return Ok(ready);
            }
            Ok(Fetched::NotModified) => {
                last = "the server answered 304 without an ETag sent".into()
            }
            Err(e) => last = e,
        }
        if attempt < START_TRIES {
            tracing::warn!(
                "cannot download the bundle {} ({last}); trying again",
                settings.url
            );
            std::thread::sleep(Duration::from_secs(u64::from(attempt)));
        }
    }
    Err(format!(
        "cannot download the bundle {} after {START_TRIES} tries: {last}\n  = help: check that the server is up and the URL is right; once one bundle has served, a restart serves the copy kept in --bundle-dir without the server",
        settings.url
    ))
}

/// Polls for new bundles until the process exits.
pub struct Poller {
    pub settings: Settings,
    pub state: Arc<CatalogState>,
    pub metrics: Arc<Metrics>,
    pub reload: super::Requester,
}

impl Poller {
    /// Starts polling on a thread of its own, `serving` being the bundle
    /// that serves now.
    pub fn start(self, serving: Ready) -> Result<(), String> {
        std::thread::Builder::new()
            .name("regent-bundle".into())
            .spawn(move || self.run(serving))
            .map(|_| ())
            .map_err(|e| format!("cannot start the bundle poller: {e}"))
    }

    fn run(self, serving: Ready) {
        let (client, runtime) = match (
            http_client(self.settings.ca.as_deref()),
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build(),
        ) {
            (Ok(c), Ok(r)) => (c, r),
            (Err(e), _) => return tracing::error!("bundle polling stopped: {e}"),
            (_, Err(e)) => return tracing::error!("bundle polling stopped: {e}"),
        };
        let mut etag = serving.info.etag.clone();
        // A server without ETags sends the same bundle again: the same
        // bytes are not built again.
        let mut serving_digest = sha2::Sha256::digest(&serving.tarball);
        // Whether the last poll failed: the status says so until a poll
        // finds the serving bundle is what the server has again.
        let mut failing = false;
        loop {
            std::thread::sleep(jittered(self.settings.poll));
            let fetched = runtime.block_on(fetch(&client, &self.settings.url, etag.as_deref()));
            let (bytes, new_etag) = match fetched {
                Ok(Fetched::NotModified) => {
                    tracing::debug!("bundle not modified");
                    self.recovered(&mut failing);
                    continue;
                }
                Ok(Fetched::New { bytes, etag: new }) => {
                    if sha2::Sha256::digest(&bytes) == serving_digest {
                        tracing::debug!("bundle unchanged (same bytes)");
                        etag = new;
                        self.recovered(&mut failing);
                        continue;
                    }
                    (bytes, new)
                }
                Err(e) => {
                    failing = true;
                    self.failed(
                        "download",
                        format!("cannot download the bundle {}: {e}", self.settings.url),
                    );
                    continue;
                }
            };
            let ready = match prepare(&self.settings, bytes, new_etag) {
                Ok(r) => r,
                Err(e) => {
                    failing = true;
                    self.failed("bundle", format!("the bundle is refused: {e}"));
                    continue;
                }
            };
            let revision = ready.info.revision.clone();
            match self
                .reload
                .bundle(ready.catalog_dir.clone(), ready.info.clone())
            {
                Ok(()) => {
                    if let Err(e) = persist(&self.settings.dir, &ready) {
                        tracing::warn!(
                            "cannot persist the bundle in {}: {e}; a restart serves the previous copy",
                            self.settings.dir.display()
                        );
                    }
                    tracing::info!(revision = %revision, "bundle activated");
                    etag = ready.info.etag.clone();
                    serving_digest = sha2::Sha256::digest(&ready.tarball);
                    sweep(&self.settings.dir, &ready.catalog_dir);
                    failing = false;
                }
                Err(_) => {
                    failing = true;
                    // The reload thread logged the catalog's errors and
                    // recorded them in the status.
                    let _ = std::fs::remove_dir_all(&ready.catalog_dir);
                    self.metrics.count_bundle_failure("catalog");
                    tracing::error!(
                        revision = %revision,
                        "the bundle's catalog is refused; the last good bundle keeps serving"
                    );
                }
            }
        }
    }

    /// The server has the serving bundle again after a failed poll: the
    /// error no longer applies.
    fn recovered(&self, failing: &mut bool) {
        if std::mem::take(failing) {
            tracing::info!("the bundle server has the serving bundle again");
            self.state.record_unchanged(Duration::ZERO);
            self.reload.status_changed();
        }
    }

    fn failed(&self, reason: &'static str, message: String) {
        tracing::error!("{message}; the last good bundle keeps serving");
        self.metrics.count_bundle_failure(reason);
        self.state.record_failure(message);
        self.reload.status_changed();
    }
}

/// `every`, give or take 15 %, at random.
fn jittered(every: Duration) -> Duration {
    let r = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    // In [0.85, 1.15).
    let factor = 0.85 + (r % 3000) as f64 / 10_000.0;
    every.mul_f64(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundle_names_follow_the_url() {
        for (url, name) in [
            ("http://h/bundles/prod.tar.gz", "prod"),
            ("http://h/b/x.tgz", "x"),
            ("http://h/", "regent"),
            ("https://h/a/latest", "latest"),
        ] {
            assert_eq!(name_of(&reqwest::Url::parse(url).unwrap()), name, "{url}");
        }
    }

    #[test]
    fn jitter_stays_within_fifteen_percent() {
        for _ in 0..100 {
            let d = jittered(Duration::from_secs(100));
            assert!(
                d >= Duration::from_secs(85) && d < Duration::from_secs(115),
                "{d:?}"
            );
        }
    }
}
