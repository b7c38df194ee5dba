//! [`CommitPolicy`]: how large a batch a sink wants, for sinks where every `consume` is a
//! commit that costs far more than the records in it (a lakehouse table commit).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How many records a runtime should gather into one batch for a sink whose every `consume`
/// is one commit (a Delta log entry, an Iceberg snapshot): a batch is handed over once it holds
/// `max_records` records or `max_bytes` payload bytes, or once its oldest record has waited
/// `max_latency_ms`, whichever comes first.
///
/// The accumulation lives in the runtime, not in the sink: `consume` still returns only after
/// its batch is committed, so the offset commit follows the table commit and the sink's
/// per-partition watermark stays exact. A runtime that batches by its own settings may ignore
/// the policy; pico-kafka uses it for every `[batch]` setting the pipeline file leaves out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CommitPolicy {
    /// At most this many records per batch.
    pub max_records: usize,
    /// At most this many payload bytes (keys and values) per batch.
    pub max_bytes: usize,
    /// A partition's records wait at most this long for more before they are handed over.
    pub max_latency_ms: u64,
}

impl CommitPolicy {
    /// A batch of `max_records` records or `max_bytes` bytes, or whatever arrived within
    /// `max_latency`.
    pub fn new(max_records: usize, max_bytes: usize, max_latency: Duration) -> Self {
        Self {
            max_records,
            max_bytes,
            max_latency_ms: u64::try_from(max_latency.as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// The latency bound as a duration.
    pub fn max_latency(&self) -> Duration {
        Duration::from_millis(self.max_latency_ms)
    }

    /// What is wrong with this policy, if anything: every bound must be above 0.
    pub fn problem(&self) -> Option<&'static str> {
        if self.max_records == 0 {
            Some("max_records must be above 0")
        } else if self.max_bytes == 0 {
            Some("max_bytes must be above 0")
        } else if self.max_latency_ms == 0 {
            Some("max_latency_ms must be above 0")
        } else {
            None
        }
    }
}

impl Default for CommitPolicy {
    /// The lakehouse default: 500 000 records, 64 MiB or 60 s per commit. At a few hundred bytes
    /// per record a busy partition fills 64 MiB, which Parquet compresses into a data file of
    /// tens of MB; a quiet one still commits once a minute.
    fn default() -> Self {
        Self {
            max_records: 500_000,
            max_bytes: 64 << 20,
            max_latency_ms: 60_000,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bound_must_be_above_zero() {
        assert_eq!(CommitPolicy::default().problem(), None);
        let zero = |f: fn(&mut CommitPolicy)| {
            let mut p = CommitPolicy::default();
            f(&mut p);
            p.problem()
        };
        assert!(zero(|p| p.max_records = 0).is_some_and(|m| m.contains("max_records")));
        assert!(zero(|p| p.max_bytes = 0).is_some_and(|m| m.contains("max_bytes")));
        assert!(zero(|p| p.max_latency_ms = 0).is_some_and(|m| m.contains("max_latency_ms")));
    }

    #[test]
    fn a_partial_policy_takes_the_defaults_for_the_rest() {
        let p: CommitPolicy = serde_json::from_str(r#"{"max_records": 1000}"#).unwrap();
        assert_eq!(p.max_records, 1000);
        assert_eq!(p.max_bytes, CommitPolicy::default().max_bytes);
        assert_eq!(
            CommitPolicy::new(1, 2, Duration::from_secs(3)).max_latency(),
            Duration::from_secs(3)
        );
    }
}
