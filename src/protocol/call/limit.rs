//! The bound on tool executions running at once (`serve
//! --max-concurrent-calls`), shared by every session and transport of one
//! server: a permit is taken right before a call's process starts or its
//! request is sent, never waited for. When to take it is the call
//! sequence's business (`call`); what runs, `exec`'s and `upstream`'s.

use std::sync::Arc;

use rmcp::ErrorData;
use serde_json::json;

use crate::metrics::Metrics;

/// The default of `serve --max-concurrent-calls`.
pub const DEFAULT_MAX_CONCURRENT_CALLS: usize = 64;

/// The bound on tool executions running at once, shared by every session
/// and transport of one server.
pub struct CallLimit {
    permits: Arc<tokio::sync::Semaphore>,
    max: usize,
    metrics: Arc<Metrics>,
}

impl CallLimit {
    /// At most `max` (at least 1) executions at once, counted in `metrics`.
    pub fn new(max: usize, metrics: Arc<Metrics>) -> CallLimit {
        let max = max.max(1);
        CallLimit {
            permits: Arc::new(tokio::sync::Semaphore::new(max)),
            max,
            metrics,
        }
    }

    /// A permit for one execution, or the error that refuses the call when
    /// `max` are running. Never waits.
    pub fn try_enter(&self) -> Result<CallPermit, ErrorData> {
        match self.permits.clone().try_acquire_owned() {
            Ok(permit) => {
                self.metrics.calls_in_flight.inc();
                Ok(CallPermit {
                    _permit: permit,
                    metrics: self.metrics.clone(),
                })
            }
            Err(_) => {
                self.metrics.calls_refused.inc();
                Err(ErrorData::internal_error(
                    format!(
                        "server busy: {} tool calls are already running (--max-concurrent-calls); nothing was run, try again later",
                        self.max
                    ),
                    Some(json!({"reason": "capacity", "maxConcurrentCalls": self.max})),
                ))
            }
        }
    }
}

/// One execution's place under the [`CallLimit`], given back when dropped.
pub struct CallPermit {
    _permit: tokio::sync::OwnedSemaphorePermit,
    metrics: Arc<Metrics>,
}

impl Drop for CallPermit {
    fn drop(&mut self) {
        self.metrics.calls_in_flight.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_call_limit_refuses_past_its_size_and_frees_places_on_drop() {
        let metrics = Arc::new(Metrics::new());
        let limit = CallLimit::new(2, metrics.clone());
        let a = limit.try_enter().expect("first");
        let _b = limit.try_enter().expect("second");
        let e = limit.try_enter().err().expect("third is refused");
        assert_eq!(e.code.0, -32603);
        assert!(e.message.starts_with("server busy"), "{}", e.message);
        assert_eq!(
            e.data,
            Some(json!({"reason": "capacity", "maxConcurrentCalls": 2}))
        );
        assert_eq!(metrics.calls_in_flight.get(), 2);
        assert_eq!(metrics.calls_refused.get(), 1);
        drop(a);
        assert_eq!(metrics.calls_in_flight.get(), 1);
        let _c = limit.try_enter().expect("room again");
        assert_eq!(metrics.calls_in_flight.get(), 2);
    }
}
