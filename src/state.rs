//! The live catalog: the current immutable snapshot behind an atomic pointer,
//! and what is known about how it got there.
//!
//! Requests call [`CatalogState::current`] once and keep that `Arc` until they
//! answer, so a swap never mixes two revisions in one request. Only a whole,
//! successfully built catalog is ever swapped in; a failed build leaves the
//! previous one serving (the reload logic that decides this lives with the
//! watcher, not here).

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use arc_swap::ArcSwap;

use crate::catalog::Catalog;

/// What an operator can ask about reloads without reading logs.
#[derive(Debug, Clone)]
pub struct ReloadStatus {
    pub revision: String,
    pub loaded_at: SystemTime,
    /// The error of the latest attempt, when it failed; `None` after a success.
    pub last_error: Option<String>,
    pub successes: u64,
    pub failures: u64,
}

pub struct CatalogState {
    current: ArcSwap<Catalog>,
    status: Mutex<ReloadStatus>,
}

impl CatalogState {
    pub fn new(catalog: Catalog) -> CatalogState {
        let status = ReloadStatus {
            revision: catalog.revision.clone(),
            loaded_at: SystemTime::now(),
            last_error: None,
            successes: 1,
            failures: 0,
        };
        CatalogState {
            current: ArcSwap::from_pointee(catalog),
            status: Mutex::new(status),
        }
    }

    /// The snapshot to use for one request, from start to end.
    pub fn current(&self) -> Arc<Catalog> {
        self.current.load_full()
    }

    /// Replaces the snapshot; returns the one it replaced.
    pub fn swap(&self, catalog: Catalog) -> Arc<Catalog> {
        let revision = catalog.revision.clone();
        let old = self.current.swap(Arc::new(catalog));
        let mut s = self.status.lock().unwrap_or_else(|p| p.into_inner());
        s.revision = revision;
        s.loaded_at = SystemTime::now();
        s.last_error = None;
        s.successes += 1;
        old
    }

    /// Records a failed reload; the current snapshot keeps serving.
    pub fn record_failure(&self, error: String) {
        let mut s = self.status.lock().unwrap_or_else(|p| p.into_inner());
        s.last_error = Some(error);
        s.failures += 1;
    }

    pub fn status(&self) -> ReloadStatus {
        self.status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}
