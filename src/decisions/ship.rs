//! The decision log's HTTP sink (`serve --decision-log-url`), as OPA's
//! decision-log plugin does it: lines are posted in batches, each a
//! gzip-compressed JSON array (`Content-Encoding: gzip`, `Content-Type:
//! application/json`), to one URL.
//!
//! The writer thread ([`super::writer`]) hands every decision line to
//! [`Shipper::push`], which only appends it to a bounded in-memory buffer:
//! no request and no line ever waits on the network. The buffer holds at
//! most [`Settings::buffer`] decisions waiting to be sent (plus the batch
//! being sent); when it is full the *oldest* waiting decision is dropped
//! and counted, so after an outage the collector gets the most recent
//! decisions, and the count says how many are missing before them. (The
//! file or stderr log keeps every line either way: that is the audit
//! trail, with backpressure; this sink is a copy for a collector.)
//!
//! A thread of its own sends: a batch once [`Settings::batch_entries`]
//! decisions wait or every [`Settings::interval`], each batch at most
//! [`Settings::batch_entries`] decisions and about [`Settings::batch_bytes`]
//! of JSON. A failed upload (no connection, a timeout, a status other than
//! 2xx) puts the batch back at the front of the buffer and is retried after
//! an exponential backoff, from [`Settings::backoff_min`] doubling up to
//! [`Settings::backoff_max`]. Closing sends what is left, within
//! [`CLOSE_WAIT`]; what could not be sent by then is counted as dropped.
//!
//! Decisions sent, uploads failed and decisions dropped are counted in
//! `metrics` (`regent_decision_log_*` in `/metrics`) and reported in
//! regent's log: a warning per failed upload and per burst of drops, and a
//! summary at shutdown.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use flate2::Compression;
use flate2::write::GzEncoder;
use reqwest::Url;

use crate::metrics::Metrics;

/// How long closing may spend sending what is left.
pub const CLOSE_WAIT: Duration = Duration::from_secs(5);
/// The default `--decision-log-buffer`.
pub const DEFAULT_BUFFER: usize = 10_000;

/// Where and how decisions are shipped.
#[derive(Debug, Clone)]
pub struct Settings {
    pub url: Url,
    /// Decisions that may wait to be sent; the oldest is dropped beyond.
    pub buffer: usize,
    /// How often waiting decisions are sent when fewer than a batch wait.
    pub interval: Duration,
    pub batch_entries: usize,
    pub batch_bytes: usize,
    pub backoff_min: Duration,
    pub backoff_max: Duration,
    /// The longest one upload may take.
    pub timeout: Duration,
}

impl Settings {
    /// The defaults for `url`, with `buffer` decisions of room.
    pub fn new(url: Url, buffer: usize) -> Settings {
        Settings {
            url,
            buffer: buffer.max(1),
            interval: Duration::from_secs(1),
            batch_entries: 500,
            batch_bytes: 1 << 20,
            backoff_min: Duration::from_millis(100),
            backoff_max: Duration::from_secs(10),
            timeout: Duration::from_secs(5),
        }
    }
}

/// `--decision-log-url`, checked: an absolute http or https URL.
pub fn parse_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| {
        format!(
            "invalid --decision-log-url {text:?}: {e}\n  = help: give the collector's full URL, for example http://127.0.0.1:8181/logs"
        )
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "invalid --decision-log-url {text:?}: the scheme must be http or https\n  = help: give the collector's full URL, for example https://collector.example/logs"
        ));
    }
    Ok(url)
}

/// `--decision-log-buffer`, checked: at least one decision.
pub fn parse_buffer(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "invalid --decision-log-buffer {text:?}: give a number of decisions, at least 1 (default {DEFAULT_BUFFER})"
        )),
    }
}

struct State {
    /// Serialized lines, oldest first.
    queue: VecDeque<Vec<u8>>,
    closed: bool,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when a batch is ready or on close.
    wake: Condvar,
    settings: Settings,
    metrics: Arc<Metrics>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The buffer and the thread that empties it.
pub struct Shipper {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Shipper {
    /// Starts the sending thread. Counts go to `metrics`.
    pub fn start(settings: Settings, metrics: Arc<Metrics>) -> Result<Shipper, String> {
        crate::outbound::install_crypto();
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("regent/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| {
                format!(
                    "cannot set up the decision-log http client: {}",
                    crate::outbound::error_chain(&e)
                )
            })?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the decision-log sender's runtime: {e}"))?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                closed: false,
            }),
            wake: Condvar::new(),
            settings,
            metrics,
        });
        let s = shared.clone();
        let handle = std::thread::Builder::new()
            .name("regent-decision-ship".into())
            .spawn(move || run(&s, &client, &runtime))
            .map_err(|e| format!("cannot start the decision-log sender: {e}"))?;
        Ok(Shipper {
            shared,
            thread: Mutex::new(Some(handle)),
        })
    }

    /// Adds one line (JSON, no newline) to the buffer, dropping the oldest
    /// waiting line when it is full. Never waits on the network.
    pub fn push(&self, line: &[u8]) {
        let shared = &*self.shared;
        let mut st = lock(&shared.state);
        if st.closed {
            // The sender is gone: nothing will send this one.
            shared.metrics.decision_log_dropped.inc();
            return;
        }
        if st.queue.len() >= shared.settings.buffer {
            st.queue.pop_front();
            shared.metrics.decision_log_dropped.inc();
        }
        st.queue.push_back(line.to_vec());
        if st.queue.len() == shared.settings.batch_entries {
            shared.wake.notify_one();
        }
    }

    /// Sends what is waiting (within [`CLOSE_WAIT`]) and stops the thread.
    pub fn close(&self) {
        let Some(handle) = lock(&self.thread).take() else {
            return;
        };
        lock(&self.shared.state).closed = true;
        self.shared.wake.notify_one();
        let _ = handle.join();
    }
}

impl Drop for Shipper {
    fn drop(&mut self) {
        self.close();
    }
}

/// The sending thread: wait for a batch or the interval, send, back off on
/// failure; on close, send what is left and report.
fn run(shared: &Shared, client: &reqwest::Client, runtime: &tokio::runtime::Runtime) {
    let settings = &shared.settings;
    let metrics = &*shared.metrics;
    let mut backoff: Option<Duration> = None;
    let mut close_deadline: Option<Instant> = None;
    let mut dropped_reported = 0;
    loop {
        let batch = {
            let mut st = lock(&shared.state);
            let deadline = Instant::now() + backoff.unwrap_or(settings.interval);
            loop {
                if st.closed {
                    break;
                }
                if backoff.is_none() && st.queue.len() >= settings.batch_entries {
                    break;
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                st = shared
                    .wake
                    .wait_timeout(st, left)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            if st.closed && close_deadline.is_none() {
                close_deadline = Some(Instant::now() + CLOSE_WAIT);
            }
            let mut batch = Vec::new();
            let mut bytes = 0;
            while batch.len() < settings.batch_entries {
                let Some(next) = st.queue.front() else { break };
                if !batch.is_empty() && bytes + next.len() > settings.batch_bytes {
                    break;
                }
                bytes += next.len() + 1;
                batch.push(st.queue.pop_front().expect("a front line"));
            }
            batch
        };
        let dropped = metrics.decision_log_dropped.get();
        if dropped > dropped_reported {
            tracing::warn!(
                dropped = dropped - dropped_reported,
                dropped_total = dropped,
                buffer = settings.buffer,
                "the decision-log buffer for {} was full: the oldest decisions were dropped; raise --decision-log-buffer or check the collector",
                settings.url
            );
            dropped_reported = dropped;
        }
        if batch.is_empty() {
            if close_deadline.is_some() {
                break;
            }
            continue;
        }
        let timeout = match close_deadline {
            Some(d) => settings
                .timeout
                .min(d.saturating_duration_since(Instant::now())),
            None => settings.timeout,
        };
        let sent = if timeout.is_zero() {
            Err("no time left to send before exiting".to_string())
        } else {
            runtime.block_on(post(client, &settings.url, &batch, timeout))
        };
        match sent {
            Ok(()) => {
                metrics.decision_log_sent.add(batch.len() as u64);
                if backoff.take().is_some() {
                    tracing::info!(url = %settings.url, "decision-log uploads resumed");
                }
            }
            Err(why) => {
                metrics.decision_log_failed.inc();
                let next = match backoff {
                    None => settings.backoff_min,
                    Some(b) => (b * 2).min(settings.backoff_max),
                };
                tracing::warn!(
                    url = %settings.url,
                    decisions = batch.len(),
                    retry_in_ms = next.as_millis() as u64,
                    "cannot upload decisions: {why}"
                );
                if close_deadline.is_some() {
                    // Exiting: one attempt each; what is left is dropped.
                    let mut st = lock(&shared.state);
                    let left = (batch.len() + st.queue.len()) as u64;
                    st.queue.clear();
                    drop(st);
                    metrics.decision_log_dropped.add(left);
                    break;
                }
                backoff = Some(next);
                let mut st = lock(&shared.state);
                for line in batch.into_iter().rev() {
                    st.queue.push_front(line);
                }
                while st.queue.len() > settings.buffer {
                    st.queue.pop_front();
                    metrics.decision_log_dropped.inc();
                }
            }
        }
    }
    let (sent, failed, dropped) = (
        metrics.decision_log_sent.get(),
        metrics.decision_log_failed.get(),
        metrics.decision_log_dropped.get(),
    );
    if dropped > 0 {
        tracing::warn!(
            sent,
            failed_uploads = failed,
            dropped,
            "decision-log uploads to {} ended with {dropped} decisions not sent",
            settings.url
        );
    } else {
        tracing::info!(sent, failed_uploads = failed, url = %settings.url, "decision-log uploads done");
    }
}

/// The body: the lines as one JSON array, gzip-compressed.
pub fn gzip_array(lines: &[Vec<u8>]) -> Vec<u8> {
    let size: usize = lines.iter().map(|l| l.len() + 1).sum();
    let mut gz = GzEncoder::new(Vec::with_capacity(size / 4 + 64), Compression::fast());
    // Writing into a Vec cannot fail.
    let _ = gz.write_all(b"[");
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            let _ = gz.write_all(b",");
        }
        let _ = gz.write_all(line);
    }
    let _ = gz.write_all(b"]");
    gz.finish().unwrap_or_default()
}

async fn post(
    client: &reqwest::Client,
    url: &Url,
    lines: &[Vec<u8>],
    timeout: Duration,
) -> Result<(), String> {
    let response = client
        .post(url.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(reqwest::header::CONTENT_ENCODING, "gzip")
        .body(gzip_array(lines))
        .timeout(timeout)
        .send()
        .await
        .map_err(|e| crate::outbound::error_chain(&e))?;
    let status = response.status();
    if status.is_success() {
        Ok(())
    } else {
        Err(format!("the collector answered {status}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_batch_is_a_gzipped_json_array() {
        let body = gzip_array(&[br#"{"a":1}"#.to_vec(), br#"{"b":2}"#.to_vec()]);
        let mut text = String::new();
        flate2::read::GzDecoder::new(&body[..])
            .read_to_string(&mut text)
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v, serde_json::json!([{"a": 1}, {"b": 2}]));
    }

    #[test]
    fn urls_must_be_http() {
        assert!(parse_url("http://127.0.0.1:1/logs").is_ok());
        let e = parse_url("ftp://x/").unwrap_err();
        assert!(e.contains("http or https"), "{e}");
        assert!(parse_url("logs").unwrap_err().contains("help"));
    }

    #[test]
    fn a_full_buffer_drops_the_oldest_and_counts() {
        // Nothing listens on port 9 of 127.0.0.1 (discard, not served).
        let metrics = Arc::new(Metrics::new());
        let mut settings = Settings::new(parse_url("http://127.0.0.1:9/").unwrap(), 3);
        settings.interval = Duration::from_secs(60);
        let s = Shipper::start(settings, metrics.clone()).unwrap();
        for i in 0..5 {
            s.push(format!("{{\"i\":{i}}}").as_bytes());
        }
        assert_eq!(metrics.decision_log_dropped.get(), 2);
        let left: Vec<Vec<u8>> = lock(&s.shared.state).queue.iter().cloned().collect();
        assert_eq!(
            left,
            [
                b"{\"i\":2}".to_vec(),
                b"{\"i\":3}".to_vec(),
                b"{\"i\":4}".to_vec()
            ]
        );
        s.close();
        // The collector is not there: closing drops the rest, counted.
        assert_eq!(metrics.decision_log_dropped.get(), 5);
        assert_eq!(metrics.decision_log_sent.get(), 0);
        assert_eq!(metrics.decision_log_failed.get(), 1);
    }
}
