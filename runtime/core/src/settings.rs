//! The sections of a pipeline file that every runtime shares, whatever its broker: `[batch]`,
//! `[retry]`, `[metrics]`, `[log]` and `[chaos]`. A runtime's pipeline file adds its broker's
//! section, its dead letters and the `[sink]` ([`crate::sinks::SinkSettings`]).

use std::time::Duration;

use pico_sink::CommitPolicy;
use serde::Deserialize;

/// `[log]`: the format and level of a runtime binary's log, on stderr.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogSettings {
    /// `text` (the default) or `json`: one JSON object per line, a batch's lines with its
    /// topic, partition and offsets under `span`.
    pub format: LogFormat,
    /// A `tracing` filter (`info`, `debug`, `pico_runtime=debug,pico_kafka=debug,info`, …);
    /// `RUST_LOG`, when set,
    /// takes its place.
    pub level: String,
}

impl Default for LogSettings {
    fn default() -> Self {
        Self {
            format: LogFormat::Text,
            level: "info".into(),
        }
    }
}

/// How each log line is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable text.
    Text,
    /// One JSON object per line.
    Json,
}

/// `[metrics]`: where `/metrics` ([`crate::metrics`]) and the `/health` and `/ready` probes
/// are served. An empty section serves them on loopback, port 9464; name an address reachable
/// from your Prometheus or orchestrator to reach them from another host.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsSettings {
    /// `host:port` to listen on (port 0: one the system picks, logged at start).
    #[serde(default = "default_metrics_listen")]
    pub listen: std::net::SocketAddr,
    /// How often the broker client reports the consumer lag (ms; pico-kafka: librdkafka's
    /// statistics interval).
    #[serde(default = "default_lag_interval_ms")]
    pub lag_interval_ms: u64,
    /// `/ready` fails once the sink's calls, or the offset commits, have kept failing this long
    /// (ms); a destination outage is ridden out meanwhile.
    #[serde(default = "default_unready_after_ms")]
    pub unready_after_ms: u64,
    /// `/health` fails once the consumer loop has not turned for this long (ms): it is stuck.
    #[serde(default = "default_stalled_after_ms")]
    pub stalled_after_ms: u64,
}

impl Default for MetricsSettings {
    fn default() -> Self {
        Self {
            listen: default_metrics_listen(),
            lag_interval_ms: default_lag_interval_ms(),
            unready_after_ms: default_unready_after_ms(),
            stalled_after_ms: default_stalled_after_ms(),
        }
    }
}

fn default_metrics_listen() -> std::net::SocketAddr {
    std::net::SocketAddr::from(([127, 0, 0, 1], 9464))
}

fn default_lag_interval_ms() -> u64 {
    5_000
}

fn default_unready_after_ms() -> u64 {
    60_000
}

fn default_stalled_after_ms() -> u64 {
    120_000
}

/// When a partition's buffered records become a batch, as the pipeline file says. A setting
/// left out comes from the sink's [`CommitPolicy`] (lakehouse sinks, whose every batch is a
/// table commit, ask for large batches), else from the defaults: 500 records, 1 MiB, 200 ms.
/// [`BatchSettings::limits`] resolves them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BatchSettings {
    /// At most this many records per batch.
    pub max_records: Option<usize>,
    /// At most this many payload bytes (keys and values) per batch.
    pub max_bytes: Option<usize>,
    /// A partition's records wait at most this long for more before they are delivered.
    pub linger_ms: Option<u64>,
}

impl BatchSettings {
    /// What the runtime batches by: each setting from the pipeline file, else from the sink's
    /// policy, else the default.
    pub fn limits(&self, policy: Option<CommitPolicy>) -> BatchLimits {
        let fallback = BatchLimits::default();
        BatchLimits {
            max_records: self
                .max_records
                .or(policy.map(|p| p.max_records))
                .unwrap_or(fallback.max_records),
            max_bytes: self
                .max_bytes
                .or(policy.map(|p| p.max_bytes))
                .unwrap_or(fallback.max_bytes),
            linger_ms: self
                .linger_ms
                .or(policy.map(|p| p.max_latency_ms))
                .unwrap_or(fallback.linger_ms),
        }
    }
}

/// The resolved batching of one pipeline ([`BatchSettings::limits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchLimits {
    /// At most this many records per batch.
    pub max_records: usize,
    /// At most this many payload bytes (keys and values) per batch.
    pub max_bytes: usize,
    /// A partition's records wait at most this long for more before they are delivered.
    pub linger_ms: u64,
}

impl Default for BatchLimits {
    fn default() -> Self {
        Self {
            max_records: 500,
            max_bytes: 1 << 20,
            linger_ms: 200,
        }
    }
}

/// Batches' worth of records a partition's buffer holds before the partition is paused at the
/// broker. librdkafka answers a resume with new records only after a pause (about 0.5 s against
/// tansu here): pausing at four batches of 500 records on one partition cut each cycle to 2 000
/// records per 0.5 s, 0.21 of the sink's and the broker's pace (#39, measured in the end-to-end
/// benchmark). A buffer that holds several fetch responses keeps the partition fetching.
const PAUSE_AT_BATCHES: usize = 16;

/// Payload bytes a partition's buffer holds at least before it is paused, whatever the batch
/// limits: about sixteen fetch responses of librdkafka's default 1 MiB per partition.
const PAUSE_AT_LEAST_BYTES: usize = 16 << 20;

impl BatchLimits {
    /// The linger as a duration.
    pub fn linger(&self) -> Duration {
        Duration::from_millis(self.linger_ms)
    }

    /// A partition's buffer is paused at the broker once it holds this many records or payload
    /// bytes, and resumed once below half of both: sixteen batches' records, and four batches'
    /// bytes but at least 16 MiB.
    pub fn pause_at(&self) -> (usize, usize) {
        (
            self.max_records.saturating_mul(PAUSE_AT_BATCHES),
            self.max_bytes.saturating_mul(4).max(PAUSE_AT_LEAST_BYTES),
        )
    }

    /// The most payload bytes (keys and values) the runtime holds for one partition, one record
    /// aside: its buffer up to the pause bound, one batch queued for its worker and one being
    /// written.
    pub fn partition_payload_bound(&self) -> usize {
        self.pause_at()
            .1
            .saturating_add(self.max_bytes.saturating_mul(2))
    }

    /// The most payload bytes a runtime holding `partitions` partitions holds, its broker
    /// client's prefetch of `prefetch_bytes` included (pico-kafka: librdkafka's queue at its
    /// default size, the README's "Memory"); the process itself and the sink's encoding of the
    /// batches it writes come on top.
    pub fn payload_bound(&self, partitions: usize, prefetch_bytes: usize) -> usize {
        self.partition_payload_bound()
            .saturating_mul(partitions)
            .saturating_add(prefetch_bytes)
    }
}

/// The driver's retry policy (the spec's by default: rounds of 5 attempts, 200 ms → 5 s), and how
/// long a destination outage is ridden out (by default: for as long as it lasts).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetrySettings {
    /// Attempts per round. When every attempt of a round failed with a `Retryable` error, the
    /// partition waits [`Self::max_backoff_ms`] (with jitter) and delivers the same batch again,
    /// keeping its partitions; fetching pauses once sixteen batches (or four batches' bytes, at
    /// least 16 MiB) wait behind it.
    pub max_attempts: u32,
    /// First backoff, ms.
    pub initial_backoff_ms: u64,
    /// Longest backoff, ms.
    pub max_backoff_ms: u64,
    /// Whether each wait is drawn at random between half its backoff and the backoff (default
    /// `true`), so that the partitions and processes an outage stopped do not all come back at
    /// the same instant; `false` waits the backoff exactly.
    pub jitter: bool,
    /// How long a refused offset commit is retried (same backoff) before the pipeline stops
    /// with an error (exit code 2) and resumes, restarted, from the committed offset. The
    /// partition delivers nothing else meanwhile, so a broker outage repeats at most the one
    /// batch whose commit did not arrive.
    pub commit_timeout_ms: u64,
    /// How long a batch is delivered again after its first round of attempts failed before the
    /// pipeline stops with an error (exit code 2), its supervisor restarting it. Unset: as long
    /// as the destination answers `Retryable` (an operator stops it with a signal).
    pub max_retry_duration_ms: Option<u64>,
}

impl Default for RetrySettings {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            initial_backoff_ms: 200,
            max_backoff_ms: 5_000,
            jitter: true,
            commit_timeout_ms: 120_000,
            max_retry_duration_ms: None,
        }
    }
}

impl RetrySettings {
    /// As the driver's policy.
    pub fn policy(&self) -> pico_sink::driver::RetryPolicy {
        pico_sink::driver::RetryPolicy::attempts(self.max_attempts)
            .with_backoff(
                Duration::from_millis(self.initial_backoff_ms),
                Duration::from_millis(self.max_backoff_ms),
            )
            .with_jitter(self.jitter)
    }

    /// How long a refused offset commit is retried.
    pub fn commit_timeout(&self) -> Duration {
        Duration::from_millis(self.commit_timeout_ms)
    }

    /// How long a batch is delivered again after its first failed round; `None`: unlimited.
    pub fn max_retry_duration(&self) -> Option<Duration> {
        self.max_retry_duration_ms.map(Duration::from_millis)
    }
}

/// Faults the runtime injects into itself, for crash tests.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChaosSettings {
    /// If set and the file does not exist yet: inside the next `consume`, write the first half
    /// of the batch through the sink, record in this file what was written (partition, first
    /// offset, last offset written, last offset; then the batch id), wait
    /// [`Self::panic_hold_ms`] and panic (as a plugin's bug does: the partition's worker stops the
    /// run, which exits with code 2, with part of a batch in the destination and none of it
    /// committed). Once the file exists, nothing
    /// happens: a restarted process runs normally.
    pub panic_once_file: Option<String>,
    /// How long the process waits between writing part of the batch and its panic (with
    /// [`Self::panic_once_file`]): the crash suite reads the destination meanwhile.
    #[serde(default)]
    pub panic_hold_ms: u64,
    /// If set: after the sink confirmed a batch, append its id as a line to this file, then
    /// wait [`Self::hold_after_write_ms`] before the offset is committed. The crash suite kills
    /// the process in that window, where the destination holds what the group has not
    /// committed.
    pub written_file: Option<String>,
    /// How long a confirmed batch is held before its commit (with [`Self::written_file`]).
    #[serde(default)]
    pub hold_after_write_ms: u64,
    /// If set: every offset commit waits this long once it started, before its request goes
    /// to the broker, so a test can revoke the partition while the commit is in flight.
    #[serde(default)]
    pub commit_delay_ms: u64,
    /// A deliberately broken runtime or sink ([`crate::mutants`]), for the crash suite's
    /// controls. Only with the `mutants` feature; a build without it refuses the key.
    #[cfg(feature = "mutants")]
    #[serde(default)]
    pub mutant: Option<crate::mutants::Mutant>,
}

/// What is wrong with the sections every runtime shares, if anything: the message says what to
/// change in the pipeline file.
pub fn problem(
    batch: &BatchSettings,
    retry: &RetrySettings,
    metrics: Option<&MetricsSettings>,
) -> Option<&'static str> {
    if batch.max_records == Some(0) || batch.max_bytes == Some(0) {
        return Some("batch.max_records and batch.max_bytes must be above 0");
    }
    if retry.max_attempts == 0 {
        return Some("retry.max_attempts must be at least 1");
    }
    if let Some(m) = metrics
        && (m.lag_interval_ms == 0 || m.unready_after_ms == 0 || m.stalled_after_ms == 0)
    {
        return Some(
            "metrics.lag_interval_ms, unready_after_ms and stalled_after_ms must be above 0",
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_bound_follows_the_batching() {
        const MIB: usize = 1 << 20;
        // The defaults: 16 MiB buffered at most (the floor), 1 MiB queued, 1 MiB being written.
        let defaults = BatchLimits::default();
        assert_eq!(defaults.pause_at(), (8_000, 16 * MIB));
        assert_eq!(defaults.partition_payload_bound(), 18 * MIB);
        assert_eq!(defaults.payload_bound(8, 64 * MIB), (8 * 18 + 64) * MIB);
        // The lakehouse policy's 64 MiB batches: four of them buffered, two at the worker.
        let lakehouse = BatchLimits {
            max_records: 500_000,
            max_bytes: 64 * MIB,
            linger_ms: 60_000,
        };
        assert_eq!(lakehouse.partition_payload_bound(), 384 * MIB);
    }

    #[test]
    fn each_shared_section_refuses_what_cannot_work() {
        let (batch, retry) = (BatchSettings::default(), RetrySettings::default());
        assert_eq!(
            problem(&batch, &retry, Some(&MetricsSettings::default())),
            None
        );
        let empty = BatchSettings {
            max_bytes: Some(0),
            ..BatchSettings::default()
        };
        assert!(problem(&empty, &retry, None).is_some_and(|m| m.contains("max_bytes")));
        let never = RetrySettings {
            max_attempts: 0,
            ..RetrySettings::default()
        };
        assert!(problem(&batch, &never, None).is_some_and(|m| m.contains("max_attempts")));
        let blind = MetricsSettings {
            stalled_after_ms: 0,
            ..MetricsSettings::default()
        };
        assert!(problem(&batch, &retry, Some(&blind)).is_some_and(|m| m.contains("stalled")));
    }

    #[test]
    fn batching_comes_from_the_file_then_the_sink_then_the_defaults() {
        let lakehouse = CommitPolicy::new(100_000, 64 << 20, Duration::from_secs(60));
        let none = BatchSettings::default();
        assert_eq!(none.limits(None), BatchLimits::default());
        assert_eq!(
            none.limits(Some(lakehouse)),
            BatchLimits {
                max_records: 100_000,
                max_bytes: 64 << 20,
                linger_ms: 60_000
            }
        );
        let records_only = BatchSettings {
            max_records: Some(200),
            ..BatchSettings::default()
        };
        let limits = records_only.limits(Some(lakehouse));
        assert_eq!(
            (limits.max_records, limits.max_bytes, limits.linger_ms),
            (200, 64 << 20, 60_000),
            "a setting in the file wins, the others come from the sink"
        );
        assert_eq!(
            records_only.limits(None).linger(),
            Duration::from_millis(200)
        );
    }
}
