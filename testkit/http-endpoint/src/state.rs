//! What the endpoint holds: stored elements and the idempotency-key table.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Request counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// POST requests received.
    pub posts: u64,
    /// Requests that stored their elements.
    pub stored_requests: u64,
    /// Requests answered from the key table without storing (replays).
    pub replayed: u64,
    /// 409 answers (same key in flight).
    pub in_flight_conflicts: u64,
    /// 422 answers (key reused with another payload).
    pub key_mismatches: u64,
    /// 400 and 413 answers.
    pub refused: u64,
    /// Keys forgotten after the key retention (a later request with one of them is stored).
    #[serde(default)]
    pub keys_expired: u64,
}

/// The first answer given for a key.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    pub status: u16,
    pub body: String,
}

/// The state of one idempotency key.
#[derive(Debug, Clone)]
pub(crate) enum KeyEntry {
    InFlight {
        fingerprint: [u8; 32],
    },
    Done {
        fingerprint: [u8; 32],
        answer: Answer,
        /// When the first answer was given.
        at: Instant,
    },
}

impl KeyEntry {
    pub fn fingerprint(&self) -> &[u8; 32] {
        match self {
            KeyEntry::InFlight { fingerprint } | KeyEntry::Done { fingerprint, .. } => fingerprint,
        }
    }
}

/// Everything behind the endpoint's mutex.
#[derive(Debug, Default)]
pub(crate) struct Inner {
    /// Elements exactly as received.
    pub records: Vec<Box<serde_json::value::RawValue>>,
    pub keys: HashMap<String, KeyEntry>,
    pub stats: Stats,
    /// How far the key clock was moved ahead of the real one ([`crate::Endpoint::age_keys`]).
    pub aged: Duration,
}

/// Whether `entry` is an answered key older than `retention` on a key clock `aged` ahead.
fn expired(entry: &KeyEntry, aged: Duration, retention: Duration) -> bool {
    matches!(entry, KeyEntry::Done { at, .. } if at.elapsed() + aged >= retention)
}

impl Inner {
    /// Forgets every answered key older than `retention` on the key clock; how many.
    pub fn expire_keys(&mut self, retention: Duration) -> u64 {
        let aged = self.aged;
        let before = self.keys.len();
        self.keys
            .retain(|_, entry| !expired(entry, aged, retention));
        let forgotten = (before - self.keys.len()) as u64;
        self.stats.keys_expired += forgotten;
        forgotten
    }

    /// Forgets `key` if it is an answered key older than `retention` on the key clock (a
    /// request looks up only its own key, so only that one is checked).
    pub fn expire_key(&mut self, key: &str, retention: Duration) {
        if self
            .keys
            .get(key)
            .is_some_and(|entry| expired(entry, self.aged, retention))
        {
            self.keys.remove(key);
            self.stats.keys_expired += 1;
        }
    }
}
