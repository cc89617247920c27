//! Accepting connections and shutting down gracefully.
//!
//! The accept loop is hyper-util's, run by hand rather than through
//! `axum::serve`, for two settings axum does not expose: a header read
//! timeout (a client that trickles its headers is cut off) and control over
//! the order of shutdown:
//!
//! 1. stop accepting (the listening socket is closed: new connections are
//!    refused) and answer any new request on an open connection with 503;
//! 2. ask every connection to close once its current request is answered;
//! 3. wait, up to the grace period, for MCP requests in flight to finish;
//! 4. cancel rmcp's token, which ends sessions and their SSE streams;
//! 5. wait briefly for the connections to close.
//!
//! Connections are bounded (`--max-connections`), and so are those from one
//! IP address (`--max-connections-per-peer`, counted per address, not per
//! port): one accepted past either limit is answered `503` naming the flag
//! (best effort, without waiting on the client) and closed at once, so it
//! costs no task and no buffers. The per-address counts live in a map with
//! an entry only for an address that has a connection open, so it never
//! holds more entries than there are open connections.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::HEADER_READ_TIMEOUT;
use super::guard::Shared;

/// How long connections get to close after the requests in flight drained.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// A bound listening socket.
pub struct Bound {
    listener: TcpListener,
    pub addr: SocketAddr,
}

pub async fn bind(addr: SocketAddr) -> std::io::Result<Bound> {
    let listener = TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    Ok(Bound { listener, addr })
}

/// What a connection past `--max-connections` is told before it is closed.
const TOO_MANY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 61\r\n\r\nService Unavailable: too many connections (--max-connections)";

/// What a connection past `--max-connections-per-peer` is told.
const TOO_MANY_FROM_PEER: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 88\r\n\r\nService Unavailable: too many connections from this address (--max-connections-per-peer)";

/// The connection limits: `global` (at least 1) and `per_peer` (0: none).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub global: usize,
    pub per_peer: usize,
}

/// Connections open per IP address, under `--max-connections-per-peer`.
struct PerPeer {
    limit: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

impl PerPeer {
    /// A place for one more connection from `ip`, or `None` when `limit`
    /// are open from it. An IPv4 client of a dual-stack socket
    /// (`::ffff:a.b.c.d`) counts as its IPv4 address.
    fn enter(self: &Arc<PerPeer>, ip: IpAddr) -> Option<PeerPlace> {
        let ip = ip.to_canonical();
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(ip).or_insert(0);
        if *n >= self.limit {
            return None;
        }
        *n += 1;
        Some(PeerPlace {
            peers: self.clone(),
            ip,
        })
    }
}

/// One connection's place under its address's limit; the entry goes when
/// its address's last connection does.
struct PeerPlace {
    peers: Arc<PerPeer>,
    ip: IpAddr,
}

impl Drop for PeerPlace {
    fn drop(&mut self) {
        let mut open = self.peers.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// One open connection: its places under the limits and in the gauge.
struct Open {
    _permit: tokio::sync::OwnedSemaphorePermit,
    _peer: Option<PeerPlace>,
    shared: Arc<Shared>,
}

impl Drop for Open {
    fn drop(&mut self) {
        self.shared.metrics.connections_open.dec();
    }
}

pub async fn run(
    bound: Bound,
    app: Router,
    shared: Arc<Shared>,
    rmcp_cancel: CancellationToken,
    grace: Duration,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let Bound { listener, addr } = bound;
    let max_connections = limits.global;
    let connections = Arc::new(tokio::sync::Semaphore::new(max_connections.max(1)));
    let per_peer = (limits.per_peer > 0).then(|| {
        Arc::new(PerPeer {
            limit: limits.per_peer,
            open: Mutex::new(HashMap::new()),
        })
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    builder.http2().timer(TokioTimer::new());
    let graceful = GracefulShutdown::new();
    let service = TowerToHyperService::new(app);

    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(c) => c,
                    Err(e) => {
                        // Out of file descriptors and the like: keep serving
                        // the connections we have, and try again shortly.
                        tracing::warn!("accept failed on {addr}: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                // The address's limit first: a client over its own share is
                // told so, whether or not the server is full.
                let peer_place = match &per_peer {
                    None => None,
                    Some(peers) => match peers.enter(peer.ip()) {
                        Some(place) => Some(place),
                        None => {
                            shared.metrics.connections_refused_per_peer.inc();
                            tracing::debug!(
                                "refused a connection from {peer}: {} open from its address (--max-connections-per-peer)",
                                peers.limit
                            );
                            let _ = stream.try_write(TOO_MANY_FROM_PEER);
                            drop(stream);
                            continue;
                        }
                    },
                };
                let Ok(permit) = connections.clone().try_acquire_owned() else {
                    shared.metrics.connections_refused.inc();
                    tracing::debug!("refused a connection from {peer}: {max_connections} open (--max-connections)");
                    // Best effort: a full send buffer just loses the text.
                    let _ = stream.try_write(TOO_MANY);
                    drop(stream);
                    continue;
                };
                shared.metrics.connections_open.inc();
                let open = Open { _permit: permit, _peer: peer_place, shared: shared.clone() };
                let _ = stream.set_nodelay(true);
                let builder = builder.clone();
                let service = service.clone();
                let watcher = graceful.watcher();
                tokio::spawn(async move {
                    let _open = open;
                    // hyper's header timeout starts with the first byte: a
                    // connection that never sends one would keep its place
                    // under the limit for ever. (`peek`, not `readable`, which
                    // may wake before any byte is there.)
                    let mut first = [0u8; 1];
                    if tokio::time::timeout(HEADER_READ_TIMEOUT, stream.peek(&mut first))
                        .await
                        .is_err()
                    {
                        tracing::debug!("connection from {peer} sent nothing; closing it");
                        return;
                    }
                    let conn = builder
                        .serve_connection_with_upgrades(TokioIo::new(stream), service)
                        .into_owned();
                    if let Err(e) = watcher.watch(conn).await {
                        tracing::debug!("connection from {peer} ended: {e}");
                    }
                });
            }
            () = &mut shutdown => break,
        }
    }

    shared.start_draining();
    drop(listener);
    let in_flight = shared.in_flight();
    tracing::info!(
        in_flight,
        "shutting down: no new connections; waiting up to {}s for requests in flight",
        grace.as_secs()
    );
    let closing = tokio::spawn(graceful.shutdown());
    if tokio::time::timeout(grace, shared.drained()).await.is_err() {
        tracing::warn!(
            in_flight = shared.in_flight(),
            "shutdown grace period over; ending the requests still in flight"
        );
    }
    rmcp_cancel.cancel();
    if tokio::time::timeout(CLOSE_WAIT, closing).await.is_err() {
        tracing::warn!("some connections did not close in time; dropping them");
    }
    tracing::info!("stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusals_content_length_is_their_body_length() {
        for raw in [TOO_MANY, TOO_MANY_FROM_PEER] {
            let text = std::str::from_utf8(raw).unwrap();
            let (head, body) = text.split_once("\r\n\r\n").unwrap();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .unwrap();
            assert_eq!(length.parse::<usize>().unwrap(), body.len(), "{text}");
        }
    }

    #[test]
    fn per_peer_places_are_counted_by_address_and_forgotten_at_zero() {
        let peers = Arc::new(PerPeer {
            limit: 2,
            open: Mutex::new(HashMap::new()),
        });
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let first = peers.enter(a).unwrap();
        let second = peers.enter(mapped).unwrap();
        assert!(
            peers.enter(a).is_none(),
            "the mapped address is the same peer"
        );
        let other = peers.enter(b).unwrap();
        drop(first);
        let third = peers.enter(a).unwrap();
        drop((second, third, other));
        assert!(peers.open.lock().unwrap().is_empty());
    }
}
