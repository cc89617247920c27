//! Tokens already verified, so a client that sends the same bearer token
//! on every request pays for its signature once.
//!
//! A signature check (EdDSA, ES256, RS256) costs far more than resolving a
//! call with a policy does (see BENCHMARKS.md, "Issue 18: verified
//! tokens"), and an MCP client sends one token for many requests. What is
//! remembered is the outcome of everything that does not change while the
//! token is unchanged: its signature under a given key set, its issuer and
//! audience. What does change is checked on every use: the clock against
//! its `exp` (with the configured leeway) and the key set, whose rotation
//! (a new `Arc` from a refetch) makes every entry verified under the old
//! one count for nothing. Refused tokens are never remembered.
//!
//! Entries are keyed by the SHA-256 of the token, so the token itself is
//! not kept, and the map is bounded: when full, the least used go first
//! (quick_cache's S3-FIFO, so the token a client keeps sending stays while
//! tokens seen once pass through).
//!
//! This module knows digests and clocks; verifying is `http/jwt`'s.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use crate::caller::Caller;

/// The most tokens remembered at once.
pub const CAPACITY: usize = 4096;

#[derive(Clone)]
struct Entry {
    caller: Arc<Caller>,
    /// The token's `exp`, seconds since the epoch.
    expires: u64,
    /// Which key set verified it (the address of its `Arc`, 0 for a fixed
    /// set).
    keys: usize,
    /// That key set, held so its address cannot be reused by a later set
    /// while this entry names it.
    _pin: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

/// A bounded map from token digest to the caller it proved.
pub struct Verified {
    entries: quick_cache::sync::Cache<[u8; 32], Entry>,
}

impl Default for Verified {
    fn default() -> Self {
        Verified {
            entries: quick_cache::sync::Cache::new(CAPACITY),
        }
    }
}

/// The digest a token is remembered under.
pub fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The identity of a key set: the address of its `Arc` (which an entry
/// pins, so no other set can take it while the entry lives).
pub fn key_id<T: ?Sized>(set: &Arc<T>) -> usize {
    Arc::as_ptr(set) as *const () as usize
}

impl Verified {
    /// The caller `digest`'s token proved under the key set `keys`, if it
    /// has not expired since (`leeway` seconds of skew, as at verification).
    pub fn get(&self, digest: &[u8; 32], keys: usize, leeway: u64) -> Option<Arc<Caller>> {
        let e = self.entries.get(digest)?;
        (e.keys == keys && now() <= e.expires.saturating_add(leeway)).then(|| e.caller.clone())
    }

    /// Remembers that the token of `digest` proved `caller` until `expires`,
    /// under the key set `pin` (none: a fixed set, which never changes).
    pub fn insert(
        &self,
        digest: [u8; 32],
        caller: Arc<Caller>,
        expires: u64,
        pin: Option<Arc<dyn std::any::Any + Send + Sync>>,
    ) {
        let keys = pin.as_ref().map_or(0, key_id);
        let entry = Entry {
            caller,
            expires,
            keys,
            _pin: pin,
        };
        self.entries.insert(digest, entry);
    }

    /// How many tokens are remembered (the bound's test reads it).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;

    fn caller(sub: &str) -> Arc<Caller> {
        Arc::new(Caller {
            subject: sub.into(),
            issuer: "https://idp.example".into(),
            claims: Map::new(),
            spelled: Vec::new(),
        })
    }

    #[test]
    fn an_entry_counts_only_until_expiry_and_under_its_key_set() {
        let v = Verified::default();
        let fresh = digest("a.b.c");
        let set: Arc<dyn std::any::Any + Send + Sync> = Arc::new("keys v1");
        let id = key_id(&set);
        v.insert(fresh, caller("alice"), now() + 60, Some(set.clone()));
        assert_eq!(v.get(&fresh, id, 0).unwrap().subject, "alice");
        // Another key set (a refetch rotated the keys): verify again.
        let rotated: Arc<dyn std::any::Any + Send + Sync> = Arc::new("keys v2");
        assert!(v.get(&fresh, key_id(&rotated), 0).is_none());
        let stale = digest("d.e.f");
        v.insert(stale, caller("bob"), now() - 10, Some(set));
        assert!(v.get(&stale, id, 0).is_none());
        // Within the leeway it still counts, as it did when verified.
        assert!(v.get(&stale, id, 30).is_some());
        assert!(v.get(&digest("never"), id, 0).is_none());
    }

    #[test]
    fn the_map_stays_bounded_and_keeps_the_token_in_use() {
        let v = Verified::default();
        let remember = |i: usize| v.insert(digest(&i.to_string()), caller("x"), now() + 60, None);
        // Full of tokens seen once.
        (0..CAPACITY * 2).for_each(remember);
        assert!(v.len() <= CAPACITY, "{}", v.len());
        // Two tokens arrive together: one a client keeps sending, one sent
        // once; then three times the capacity of tokens seen once each.
        // Oldest-first would forget both; by use, the one in use stays.
        let (kept, once) = (digest("in use"), digest("seen once"));
        v.insert(kept, caller("alice"), now() + 60, None);
        v.insert(once, caller("bob"), now() + 60, None);
        for i in CAPACITY * 2..CAPACITY * 5 {
            remember(i);
            if i % 64 == 0 {
                assert!(v.get(&kept, 0, 0).is_some(), "forgotten at {i}");
            }
        }
        assert!(v.len() <= CAPACITY, "{}", v.len());
        assert!(v.get(&kept, 0, 0).is_some(), "the token in use stays");
        assert!(v.get(&once, 0, 0).is_none(), "the one seen once went");
        let last = digest(&(CAPACITY * 5 - 1).to_string());
        assert!(v.get(&last, 0, 0).is_some(), "the newest is kept");
    }
}
