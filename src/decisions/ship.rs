//! The decision log's HTTP sink (`serve --decision-log-url`), as OPA's
//! decision-log plugin does it: lines are posted in batches, each a
//! gzip-compressed JSON array (`Content-Encoding: gzip`, `Content-Type:
//! application/json`), to one URL.
//!
//! The writer thread ([`super::writer`]) hands every decision line to
//! [`Shipper::push`], which only appends it to a bounded in-memory buffer:
//! no request and no line ever waits on the network. The buffer is bounded
//! twice, as OPA's is (`buffer_size_limit_bytes`): it holds at most
//! [`Settings::buffer`] decisions and at most [`Settings::buffer_bytes`]
//! bytes of lines, *the batch being sent included*; when a new line does
//! not fit, the *oldest* waiting decisions are dropped (and counted at
//! once) until it does, so after an outage the collector gets the most
//! recent decisions, and the count says how many are missing before them.
//! A line is never larger than the log's per-line limit (see
//! [`super::Format`]: an oversized line is cut where it is made, and says
//! so), so whatever clients send and whatever the collector does, this
//! sink holds at most [`Settings::buffer_bytes`] of lines plus one gzip
//! body. (The file or stderr log keeps every line either way: that is the
//! audit trail, with backpressure; this sink is a copy for a collector.)
//!
//! A thread of its own sends: a batch once [`Settings::batch_entries`]
//! decisions wait or every [`Settings::interval`], each batch at most
//! [`Settings::batch_entries`] decisions and at most
//! [`Settings::upload_bytes`] of JSON array (uncompressed; a single line
//! larger than that goes alone). A failed upload (no connection, a timeout,
//! a status other than 2xx) puts the batch back at the front of the buffer
//! and is retried after an exponential backoff, from
//! [`Settings::backoff_min`] doubling up to [`Settings::backoff_max`]
//! (backon's exponential delays, no jitter, as before).
//! Closing sends what is left within [`CLOSE_WAIT`] of [`Shipper::close`],
//! an upload in flight included (it is abandoned at the deadline, whatever
//! its own timeout); what could not be sent by then is counted as dropped.
//!
//! Decisions sent, uploads failed and decisions dropped are counted in
//! `metrics` (`regent_decision_log_*` in `/metrics`) the moment they happen,
//! and reported in regent's log: a warning per failed upload, a warning when
//! decisions are dropped (at once, then at most once a second while drops
//! go on), and a summary at shutdown.
//!
//! The buffer is a `VecDeque` under a Mutex and Condvar rather than a
//! channel such as the one [`super::writer`] reads from: a bounded channel
//! refuses the *newest* line when full, cannot be bounded in bytes with the
//! batch in flight counted, and cannot take a failed batch back at its
//! front, and this sink needs all three.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};
use flate2::Compression;
use flate2::write::GzEncoder;
use reqwest::Url;

use crate::metrics::Metrics;

/// How long closing may spend sending what is left.
pub const CLOSE_WAIT: Duration = Duration::from_secs(5);
/// The default `--decision-log-buffer`.
pub const DEFAULT_BUFFER: usize = 10_000;
/// The default `--decision-log-buffer-bytes`: 32 MiB.
pub const DEFAULT_BUFFER_BYTES: usize = 32 << 20;
/// The default `--decision-log-upload-bytes`: 1 MiB.
pub const DEFAULT_UPLOAD_BYTES: usize = 1 << 20;
/// How often, at most, a burst of drops is reported in regent's log (the
/// first drop after a quiet second is reported at once).
const DROP_REPORT_EVERY: Duration = Duration::from_secs(1);

/// Where and how decisions are shipped.
#[derive(Debug, Clone)]
pub struct Settings {
    pub url: Url,
    /// Decisions that may wait to be sent; the oldest is dropped beyond.
    pub buffer: usize,
    /// Bytes of lines that may be held, the batch being sent included; the
    /// oldest waiting lines are dropped beyond.
    pub buffer_bytes: usize,
    /// How often waiting decisions are sent when fewer than a batch wait.
    pub interval: Duration,
    pub batch_entries: usize,
    /// The largest upload: bytes of the JSON array before compression.
    pub upload_bytes: usize,
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
            buffer_bytes: DEFAULT_BUFFER_BYTES,
            interval: Duration::from_secs(1),
            batch_entries: 500,
            upload_bytes: DEFAULT_UPLOAD_BYTES,
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

/// `--decision-log-buffer-bytes` and `--decision-log-upload-bytes`: a
/// size such as `32MiB`, `512KiB` or `1048576`, at least 1 KiB.
pub fn parse_bytes(flag: &'static str) -> impl Fn(&str) -> Result<usize, String> + Clone {
    move |text: &str| match crate::source::run::parse_size(text) {
        Some(n) if n >= 1024 => Ok(n),
        _ => Err(format!(
            "invalid {flag} {text:?}: give a size of at least 1KiB, for example 32MiB, 512KiB or 1048576"
        )),
    }
}

struct State {
    /// Serialized lines, oldest first.
    queue: VecDeque<Vec<u8>>,
    /// Bytes of the lines in `queue`.
    queued_bytes: usize,
    /// Bytes of the lines of the batch being sent (out of `queue`, still
    /// held): they count against [`Settings::buffer_bytes`] too.
    sending_bytes: usize,
    closed: bool,
    /// Drops not yet reported in regent's log, and when the last report was.
    unreported: u64,
    reported_at: Option<Instant>,
}

impl State {
    fn pop_front(&mut self) -> Option<Vec<u8>> {
        let line = self.queue.pop_front()?;
        self.queued_bytes -= line.len();
        Some(line)
    }

    fn push_front(&mut self, line: Vec<u8>) {
        self.queued_bytes += line.len();
        self.queue.push_front(line);
    }

    /// Whether `extra` more bytes in one more line would exceed a bound.
    fn over(&self, settings: &Settings, lines: usize, extra: usize) -> bool {
        self.queue.len() + lines > settings.buffer
            || self.queued_bytes + self.sending_bytes + extra > settings.buffer_bytes
    }
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when a batch is ready or on close.
    wake: Condvar,
    /// Set by [`Shipper::close`]: when closing must be done.
    deadline: OnceLock<Instant>,
    /// Wakes an upload in flight when closing begins, so that it ends by
    /// the deadline.
    closing: tokio::sync::Notify,
    settings: Settings,
    metrics: Arc<Metrics>,
}

impl Shared {
    /// Counts `n` dropped decisions at once; returns how many to report in
    /// regent's log now (none if a report was made less than
    /// [`DROP_REPORT_EVERY`] ago: they go in the next one). The caller
    /// reports after letting go of the lock ([`Shared::report`]).
    #[must_use]
    fn dropped(&self, st: &mut State, n: u64) -> Option<u64> {
        self.metrics.decision_log_dropped.inc_by(n);
        st.unreported += n;
        let now = Instant::now();
        if st.unreported == 0
            || st
                .reported_at
                .is_some_and(|at| now.duration_since(at) < DROP_REPORT_EVERY)
        {
            return None;
        }
        st.reported_at = Some(now);
        Some(std::mem::take(&mut st.unreported))
    }

    fn report(&self, dropped: Option<u64>, why: &str) {
        let Some(n) = dropped else { return };
        let s = &self.settings;
        tracing::warn!(
            dropped = n,
            dropped_total = self.metrics.decision_log_dropped.get(),
            buffer = s.buffer,
            buffer_bytes = s.buffer_bytes,
            "{n} decisions for {} were dropped: {why}",
            s.url
        );
    }
}

const FULL: &str = "the decision-log buffer was full; raise --decision-log-buffer or --decision-log-buffer-bytes, or check the collector";

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
                queued_bytes: 0,
                sending_bytes: 0,
                closed: false,
                unreported: 0,
                reported_at: None,
            }),
            wake: Condvar::new(),
            deadline: OnceLock::new(),
            closing: tokio::sync::Notify::new(),
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
    /// waiting lines until it fits both bounds (a line that cannot fit even
    /// in an empty buffer is dropped itself). Drops are counted before this
    /// returns. Never waits on the network.
    pub fn push(&self, line: &[u8]) {
        let shared = &*self.shared;
        let settings = &shared.settings;
        let mut st = lock(&shared.state);
        if st.closed {
            // The sender is gone: nothing will send this one.
            let report = shared.dropped(&mut st, 1);
            drop(st);
            shared.report(report, "they were made after the sender stopped");
            return;
        }
        let mut dropped = 0;
        while st.over(settings, 1, line.len()) && st.pop_front().is_some() {
            dropped += 1;
        }
        let fits = !st.over(settings, 1, line.len());
        if fits {
            st.queued_bytes += line.len();
            st.queue.push_back(line.to_vec());
        } else {
            dropped += 1;
        }
        let report = shared.dropped(&mut st, dropped);
        if fits && st.queue.len() == settings.batch_entries {
            shared.wake.notify_one();
        }
        drop(st);
        shared.report(report, FULL);
    }

    /// Sends what is waiting and stops the thread, within [`CLOSE_WAIT`]
    /// of this call, an upload in flight included: at the deadline it is
    /// abandoned and what is left is counted as dropped.
    pub fn close(&self) {
        let Some(handle) = lock(&self.thread).take() else {
            return;
        };
        let _ = self.shared.deadline.set(Instant::now() + CLOSE_WAIT);
        lock(&self.shared.state).closed = true;
        self.shared.wake.notify_one();
        self.shared.closing.notify_one();
        let _ = handle.join();
    }
}

impl Drop for Shipper {
    fn drop(&mut self) {
        self.close();
    }
}

/// The sending thread: wait for a batch or the interval, send, back off on
/// failure; on close, send what is left by the deadline and report.
fn run(shared: &Shared, client: &reqwest::Client, runtime: &tokio::runtime::Runtime) {
    let settings = &shared.settings;
    let metrics = &*shared.metrics;
    // While uploads fail: the delays to come and the one being waited.
    let mut backoff: Option<(ExponentialBackoff, Duration)> = None;
    loop {
        let (batch, closing) = {
            let mut st = lock(&shared.state);
            let wait = backoff.as_ref().map_or(settings.interval, |(_, d)| *d);
            let wait_until = Instant::now() + wait;
            loop {
                if st.closed {
                    break;
                }
                if backoff.is_none() && st.queue.len() >= settings.batch_entries {
                    break;
                }
                let left = wait_until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                st = shared
                    .wake
                    .wait_timeout(st, left)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            let mut batch = Vec::new();
            // The array's brackets, then each line and its comma.
            let mut bytes = 2;
            while batch.len() < settings.batch_entries {
                let Some(next) = st.queue.front() else { break };
                if !batch.is_empty() && bytes + next.len() + 1 > settings.upload_bytes {
                    break;
                }
                bytes += next.len() + 1;
                batch.push(st.pop_front().expect("a front line"));
            }
            st.sending_bytes = batch.iter().map(Vec::len).sum();
            // Drops within a second of the last report are reported here.
            let report = shared.dropped(&mut st, 0);
            let closed = st.closed;
            drop(st);
            shared.report(report, FULL);
            (batch, closed)
        };
        if batch.is_empty() {
            if closing {
                break;
            }
            continue;
        }
        let deadline = closing.then(|| *shared.deadline.get().expect("set before closed"));
        let timeout = match deadline {
            Some(d) => settings
                .timeout
                .min(d.saturating_duration_since(Instant::now())),
            None => settings.timeout,
        };
        let sent = if timeout.is_zero() {
            Err("no time left to send before exiting".to_string())
        } else {
            runtime.block_on(async {
                tokio::select! {
                    sent = post(client, &settings.url, &batch, timeout) => sent,
                    () = abandon_at_close(shared) => {
                        Err("abandoned: regent is exiting and its time to send is up".to_string())
                    }
                }
            })
        };
        match sent {
            Ok(()) => {
                lock(&shared.state).sending_bytes = 0;
                metrics.decision_log_sent.inc_by(batch.len() as u64);
                if backoff.take().is_some() {
                    tracing::info!(url = %settings.url, "decision-log uploads resumed");
                }
            }
            Err(why) => {
                metrics.decision_log_failed.inc();
                let mut delays = backoff.take().map_or_else(|| delays(settings), |(d, _)| d);
                // The delays never run out (no limit on retries).
                let next = delays.next().unwrap_or(settings.backoff_max);
                tracing::warn!(
                    url = %settings.url,
                    decisions = batch.len(),
                    retry_in_ms = next.as_millis() as u64,
                    "cannot upload decisions: {why}"
                );
                let mut st = lock(&shared.state);
                st.sending_bytes = 0;
                if st.closed {
                    // Exiting: one attempt each; what is left is dropped.
                    let left = (batch.len() + st.queue.len()) as u64;
                    st.queue.clear();
                    st.queued_bytes = 0;
                    let report = shared.dropped(&mut st, left);
                    drop(st);
                    shared.report(report, "they could not be sent before exiting");
                    break;
                }
                backoff = Some((delays, next));
                for line in batch.into_iter().rev() {
                    st.push_front(line);
                }
                // Lines pushed meanwhile were counted against the bounds
                // with the batch, so this only trims a lowered bound's
                // excess; the newest are kept.
                let mut dropped = 0;
                while st.over(settings, 0, 0) && st.pop_front().is_some() {
                    dropped += 1;
                }
                let report = shared.dropped(&mut st, dropped);
                drop(st);
                shared.report(report, FULL);
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

/// The delays between failed uploads: [`Settings::backoff_min`] doubling up
/// to [`Settings::backoff_max`], for as long as uploads fail.
fn delays(settings: &Settings) -> ExponentialBackoff {
    ExponentialBuilder::new()
        .with_min_delay(settings.backoff_min)
        .with_max_delay(settings.backoff_max.max(settings.backoff_min))
        .with_factor(2.0)
        .without_max_times()
        .build()
}

/// Resolves at the close deadline once closing has begun (never before):
/// an upload started before closing is raced against it.
async fn abandon_at_close(shared: &Shared) {
    if shared.deadline.get().is_none() {
        shared.closing.notified().await;
    }
    if let Some(d) = shared.deadline.get() {
        tokio::time::sleep_until(tokio::time::Instant::from_std(*d)).await;
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

    /// A collector that accepts connections and never answers.
    fn hanging() -> (std::net::TcpListener, Url) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = parse_url(&format!("http://{}/logs", l.local_addr().unwrap())).unwrap();
        (l, url)
    }

    #[test]
    fn the_buffer_is_bounded_in_bytes_and_drops_are_counted_at_once() {
        let metrics = Arc::new(Metrics::new());
        let mut settings = Settings::new(parse_url("http://127.0.0.1:9/").unwrap(), 1000);
        settings.interval = Duration::from_secs(60);
        settings.buffer_bytes = 100;
        let s = Shipper::start(settings, metrics.clone()).unwrap();
        let line = |i: usize| format!("{{\"i\":{i:>20}}}").into_bytes(); // 26 bytes
        assert_eq!(line(0).len(), 26);
        for i in 0..3 {
            s.push(&line(i));
        }
        assert_eq!(metrics.decision_log_dropped.get(), 0);
        s.push(&line(3));
        // 4 x 26 > 100: the oldest went, counted before push returned.
        assert_eq!(metrics.decision_log_dropped.get(), 1);
        {
            let st = lock(&s.shared.state);
            assert_eq!(st.queue.len(), 3);
            assert_eq!(st.queued_bytes, 78);
            assert_eq!(st.queue.front().unwrap(), &line(1));
        }
        // A line larger than the whole buffer empties it and is dropped too.
        s.push(&[b' '; 101]);
        assert_eq!(metrics.decision_log_dropped.get(), 5);
        assert_eq!(lock(&s.shared.state).queued_bytes, 0);
    }

    #[test]
    fn batches_respect_the_upload_limit() {
        // The collector is fixture-free here: the batch is read off the
        // hanging socket's request by length only.
        let (listener, url) = hanging();
        let metrics = Arc::new(Metrics::new());
        let mut settings = Settings::new(url, 1000);
        settings.interval = Duration::from_millis(20);
        settings.upload_bytes = 64;
        settings.timeout = Duration::from_secs(30);
        let s = Shipper::start(settings, metrics.clone()).unwrap();
        for i in 0..5 {
            s.push(format!("{{\"i\":{i:>20}}}").as_bytes()); // 26 bytes each
        }
        // The first batch is in flight: 2 lines (2 + 2 x 27 = 56 <= 64, a third is 83).
        let (_conn, _) = listener.accept().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let st = lock(&s.shared.state);
            if st.sending_bytes > 0 {
                assert_eq!(st.sending_bytes, 52);
                assert_eq!(st.queue.len(), 3);
                break;
            }
            drop(st);
            assert!(Instant::now() < deadline, "no batch was taken");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn the_upload_in_flight_counts_against_the_buffer_and_close_abandons_it() {
        let (listener, url) = hanging();
        let metrics = Arc::new(Metrics::new());
        let mut settings = Settings::new(url, 1000);
        settings.interval = Duration::from_millis(20);
        settings.buffer_bytes = 100;
        // Far longer than this test may wait: the upload can only end by
        // closing abandoning it, never by its own timeout.
        settings.timeout = Duration::from_secs(3600);
        let s = Shipper::start(settings, metrics.clone()).unwrap();
        let line = |i: usize| format!("{{\"i\":{i:>20}}}").into_bytes();
        s.push(&line(0));
        s.push(&line(1));
        let (mut conn, _) = listener.accept().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while lock(&s.shared.state).sending_bytes == 0 {
            assert!(Instant::now() < deadline, "no batch was taken");
            std::thread::sleep(Duration::from_millis(10));
        }
        // 52 bytes in flight: room for one more 26-byte line, not two.
        s.push(&line(2));
        assert_eq!(metrics.decision_log_dropped.get(), 0);
        s.push(&line(3));
        assert_eq!(metrics.decision_log_dropped.get(), 1);
        assert_eq!(lock(&s.shared.state).queue.front().unwrap(), &line(3));
        // Still in flight: nothing failed before closing began.
        assert_eq!(metrics.decision_log_failed.get(), 0);

        // Closing, on a thread of its own so that a close that never
        // returns fails this test (bounded) instead of hanging it.
        let shared = s.shared.clone();
        let (done, closed) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            s.close();
            let _ = done.send(Instant::now());
        });
        let returned_at = closed
            .recv_timeout(Duration::from_secs(120))
            .expect("closing did not abandon the upload in flight");
        // The upload was given its time: closing returned no earlier than
        // the deadline it set (a later return is only a slow host).
        let close_deadline = *shared.deadline.get().expect("closing set its deadline");
        assert!(
            returned_at >= close_deadline,
            "closing returned {:?} before its deadline: the upload in flight was cut short",
            close_deadline - returned_at
        );
        // Abandoned, not left open: the collector sees the connection end.
        conn.set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut request = Vec::new();
        conn.read_to_end(&mut request)
            .expect("the abandoned upload's connection was not closed");
        // The two in flight and the one waiting: never sent, all counted.
        assert_eq!(metrics.decision_log_dropped.get(), 4);
        assert_eq!(metrics.decision_log_sent.get(), 0);
        assert_eq!(metrics.decision_log_failed.get(), 1);
    }

    #[test]
    fn the_backoff_doubles_from_its_minimum_up_to_its_maximum_for_ever() {
        let mut settings = Settings::new(parse_url("http://127.0.0.1:9/").unwrap(), 1);
        settings.backoff_min = Duration::from_millis(100);
        settings.backoff_max = Duration::from_millis(1000);
        let ms: Vec<u128> = delays(&settings).take(8).map(|d| d.as_millis()).collect();
        assert_eq!(ms, [100, 200, 400, 800, 1000, 1000, 1000, 1000]);
    }

    #[test]
    fn sizes_parse_with_units() {
        let p = parse_bytes("--decision-log-buffer-bytes");
        assert_eq!(p("32MiB"), Ok(32 << 20));
        assert_eq!(p("4096"), Ok(4096));
        assert!(p("12").unwrap_err().contains("at least 1KiB"));
        assert!(p("lots").is_err());
    }
}
