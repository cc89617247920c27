//! Where the nonces of spent `requestState` values are remembered, so that a
//! state is accepted once: in this process (the default, right for one
//! replica), or in a Redis (or Valkey) shared by every replica
//! (`serve --request-state-store redis://…`), so that a state is accepted
//! once across the fleet.
//!
//! Spending is one atomic `SET regent:state:<nonce> 1 NX PX <ms>`: the first
//! replica to set the key runs the call, every other one is refused. The key
//! lives as long as the state could still open, then Redis drops it.
//!
//! Fail closed: when the store cannot be reached (down, timeout, refused
//! credentials), the spend fails and the caller refuses the retry; nothing
//! runs unchecked. Sealing and verifying states, and the errors a client
//! sees, are left to `input`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::metrics::Metrics;

/// How long one Redis command (or a connection attempt) may take before the
/// retry it checks is refused: a confirmed call waits at most this long.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(1);

/// The most a spend may take in all: two tries (a broken connection is
/// tried once more, reconnected).
pub const SPEND_TIMEOUT: Duration = Duration::from_secs(2);

/// Why a state could not be spent.
#[derive(Debug)]
pub enum SpendError {
    /// The state was spent before (here, or on another replica).
    Used,
    /// The shared store did not answer; the text is for the log (no secrets).
    Unavailable(String),
}

/// The spent states, in this process or in Redis.
pub enum Spent {
    /// Nonces with when they expire; pruned as states expire, so this holds
    /// at most one TTL's worth of retries.
    Memory(Mutex<HashMap<String, Instant>>),
    Redis(Box<RedisSpent>),
}

impl Spent {
    pub fn memory() -> Spent {
        Spent::Memory(Mutex::new(HashMap::new()))
    }

    /// Spends `nonce`, whose state stays valid for `left` more: `Ok` the
    /// first time, [`SpendError::Used`] after.
    pub async fn spend(&self, nonce: &str, left: Duration) -> Result<(), SpendError> {
        match self {
            Spent::Memory(used) => {
                let now = Instant::now();
                let mut used = used.lock().unwrap_or_else(|p| p.into_inner());
                used.retain(|_, expires| *expires > now);
                if used.contains_key(nonce) {
                    return Err(SpendError::Used);
                }
                used.insert(nonce.to_string(), now + left);
                Ok(())
            }
            Spent::Redis(r) => r.spend(nonce, left).await,
        }
    }
}

/// A Redis shared by the replicas. The connection is made on first use (or
/// at start, [`RedisSpent::ping`]) and then kept by redis-rs' connection
/// manager, which reconnects after an error; until Redis answers, every
/// spend fails.
pub struct RedisSpent {
    client: redis::Client,
    /// The URL without its password, for messages.
    shown: String,
    conn: tokio::sync::Mutex<Option<ConnectionManager>>,
    metrics: Arc<Metrics>,
}

impl RedisSpent {
    /// A store at `url` (`redis://` or `rediss://`); `password`, when given,
    /// replaces the URL's. Connects nothing yet.
    pub fn new(
        url: &str,
        password: Option<String>,
        metrics: Arc<Metrics>,
    ) -> Result<RedisSpent, String> {
        RedisSpent::with_ca(url, password, None, metrics)
    }

    /// [`RedisSpent::new`], trusting the PEM certificates `ca` instead of
    /// the system's roots (`rediss://` only: a private CA).
    pub fn with_ca(
        url: &str,
        password: Option<String>,
        ca: Option<Vec<u8>>,
        metrics: Arc<Metrics>,
    ) -> Result<RedisSpent, String> {
        let shown = redact(url);
        let parsed = url::Url::parse(url).map_err(|e| {
            format!(
                "the request-state store {shown} is not a URL ({e}); give one such as redis://127.0.0.1:6379 or rediss://redis.example:6380"
            )
        })?;
        if !matches!(parsed.scheme(), "redis" | "rediss") {
            return Err(format!(
                "the request-state store {shown} has the scheme {}: only redis:// and rediss:// (TLS) are supported; give one such as redis://127.0.0.1:6379",
                parsed.scheme()
            ));
        }
        crate::outbound::install_crypto();
        let mut info: redis::ConnectionInfo =
            redis::IntoConnectionInfo::into_connection_info(parsed.clone()).map_err(|e| {
                format!(
                    "the request-state store {shown} is not a usable redis URL: {}",
                    lower(&e.to_string())
                )
            })?;
        if let Some(password) = password {
            let settings = info.redis_settings().clone().set_password(password);
            info = info.set_redis_settings(settings);
        }
        let client = match ca {
            None => redis::Client::open(info),
            Some(_) if parsed.scheme() != "rediss" => {
                return Err(format!(
                    "--request-state-store-ca is for a TLS store, but {shown} is not rediss://; use rediss://HOST:PORT or drop the CA"
                ));
            }
            Some(pem) => redis::Client::build_with_tls(
                info,
                redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(pem),
                },
            ),
        }
        .map_err(|e| format!("the request-state store {shown}: {}", lower(&e.to_string())))?;
        Ok(RedisSpent {
            client,
            shown,
            conn: tokio::sync::Mutex::new(None),
            metrics,
        })
    }

    /// The URL as messages show it (no password).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Connects and sends PING (at start: the caller warns on an error and
    /// starts anyway; each retry then fails closed until Redis answers).
    pub async fn ping(&self) -> Result<(), String> {
        let mut conn = self.connection().await?;
        timed(redis::cmd("PING").query_async::<String>(&mut conn)).await?;
        Ok(())
    }

    async fn connection(&self) -> Result<ConnectionManager, String> {
        let mut slot = self.conn.lock().await;
        if let Some(conn) = slot.as_ref() {
            return Ok(conn.clone());
        }
        // Few, short reconnection attempts: a retry waits for at most one
        // command timeout, and the next retry tries again.
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(COMMAND_TIMEOUT))
            .set_response_timeout(Some(COMMAND_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(500));
        let conn = timed(self.client.get_connection_manager_with_config(config)).await?;
        *slot = Some(conn.clone());
        Ok(conn)
    }

    async fn spend(&self, nonce: &str, left: Duration) -> Result<(), SpendError> {
        let ms = u64::try_from(left.as_millis()).unwrap_or(u64::MAX).max(1);
        let set = || async {
            let mut conn = self.connection().await.map_err(|e| (e, false))?;
            timed_kind(
                redis::cmd("SET")
                    .arg(format!("regent:state:{nonce}"))
                    .arg(1)
                    .arg("NX")
                    .arg("PX")
                    .arg(ms)
                    .query_async::<Option<String>>(&mut conn),
            )
            .await
        };
        // A connection that broke since the last command (Redis restarted)
        // fails once and makes the manager reconnect: one more try, so a
        // blip costs no retry. Safe: a SET that did land before its reply
        // was lost answers nil the second time, which refuses (fail closed).
        let tries = async {
            match set().await {
                Err((_, true)) => set().await.map_err(|(e, _)| e),
                other => other.map_err(|(e, _)| e),
            }
        };
        // One bound for the whole spend: retries arriving together while
        // Redis is down queue for the connection, and none may wait longer.
        let outcome = match tokio::time::timeout(SPEND_TIMEOUT, tries).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!("no answer within {} ms", SPEND_TIMEOUT.as_millis())),
        };
        match outcome {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(SpendError::Used),
            Err(why) => {
                self.metrics.state_store_errors.inc();
                tracing::warn!(
                    store = %self.shown,
                    why,
                    "the request-state store cannot be reached; the retry was refused"
                );
                Err(SpendError::Unavailable(why))
            }
        }
    }
}

/// [`timed`], saying beside the error whether the connection broke (worth
/// one more try on the reconnected manager) rather than Redis refusing or
/// not answering in time.
async fn timed_kind<T>(
    step: impl std::future::Future<Output = redis::RedisResult<T>>,
) -> Result<T, (String, bool)> {
    match tokio::time::timeout(COMMAND_TIMEOUT, step).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => {
            let broken = e.is_io_error() || e.is_connection_dropped();
            Err((lower(&e.to_string()), broken))
        }
        Err(_) => Err((
            format!("no answer within {} ms", COMMAND_TIMEOUT.as_millis()),
            false,
        )),
    }
}

/// Runs one Redis step under [`COMMAND_TIMEOUT`].
async fn timed<T>(
    step: impl std::future::Future<Output = redis::RedisResult<T>>,
) -> Result<T, String> {
    match tokio::time::timeout(COMMAND_TIMEOUT, step).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(lower(&e.to_string())),
        Err(_) => Err(format!(
            "no answer within {} ms",
            COMMAND_TIMEOUT.as_millis()
        )),
    }
}

fn lower(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}

/// `url` with its password (if any) replaced, for messages and logs.
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("REDACTED"));
            }
            u.to_string()
        }
        // Not a URL: show no part of it after a possible `user:pass@`.
        Err(_) => match url.rsplit_once('@') {
            Some((_, host)) => format!("…@{host}"),
            None => url.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_hides_the_password_only() {
        assert_eq!(
            redact("redis://user:secret@h:6379/0"),
            "redis://user:REDACTED@h:6379/0"
        );
        assert_eq!(redact("rediss://h:6380"), "rediss://h:6380");
        assert!(!redact("nota url:secret@h").contains("secret"));
    }

    #[test]
    fn other_schemes_are_refused_with_the_fix() {
        let m = Arc::new(Metrics::new());
        let e = RedisSpent::new("http://u:pw@h:6379", None, m.clone())
            .err()
            .unwrap();
        assert!(e.contains("only redis:// and rediss://"), "{e}");
        assert!(!e.contains("pw@"), "{e}");
        assert!(RedisSpent::new("redis://127.0.0.1:1", None, m).is_ok());
    }

    /// The Redis round trip a confirmed call pays: N spends of fresh
    /// nonces through the connection manager, p50/p99 printed. Needs a
    /// Redis: `REGENT_BENCH_REDIS_URL=redis://127.0.0.1:PORT cargo test
    /// --lib spend_round_trip -- --ignored --nocapture`.
    #[tokio::test]
    #[ignore = "measures; needs REGENT_BENCH_REDIS_URL"]
    async fn spend_round_trip() {
        let Ok(url) = std::env::var("REGENT_BENCH_REDIS_URL") else {
            eprintln!("skipped: REGENT_BENCH_REDIS_URL is not set");
            return;
        };
        let store = RedisSpent::new(&url, None, Arc::new(Metrics::new())).unwrap();
        store.ping().await.unwrap();
        let n = 5000;
        let mut took = Vec::with_capacity(n);
        for i in 0..n {
            let nonce = format!("bench-{}-{i}", std::process::id());
            let t = Instant::now();
            store.spend(&nonce, Duration::from_secs(60)).await.unwrap();
            took.push(t.elapsed());
        }
        // Spending one again is refused (the key is there).
        let again = format!("bench-{}-0", std::process::id());
        assert!(matches!(
            store.spend(&again, Duration::from_secs(60)).await,
            Err(SpendError::Used)
        ));
        took.sort();
        let at = |q: f64| took[((n as f64) * q) as usize - 1];
        println!(
            "{n} spends (SET NX PX) on {}: p50 {:?}, p99 {:?}, max {:?}",
            store.shown(),
            at(0.50),
            at(0.99),
            took[n - 1]
        );
    }

    #[tokio::test]
    async fn memory_spends_once() {
        let s = Spent::memory();
        assert!(s.spend("n", Duration::from_secs(5)).await.is_ok());
        assert!(matches!(
            s.spend("n", Duration::from_secs(5)).await,
            Err(SpendError::Used)
        ));
    }
}
