//! What a runtime counts while it runs, for an operator: records and bytes read, what the sink
//! did with them (written, **already present** — the replays the destination absorbed —,
//! changed, refused, dead-lettered), the sink's failures by kind, batch sizes, the sink's and
//! the commit's latency, the committed offset, the consumer lag, rebalances and the bytes held
//! in memory. Counting is always on (a few atomic additions per record); the numbers are served
//! in the Prometheus text format only when the pipeline file has a `[metrics]` section
//! ([`crate::settings::MetricsSettings`]).
//!
//! Labels are the topic, the partition and a kind where one is named: never a broker address,
//! a credential or a record's content.

use std::sync::atomic::AtomicU64;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pico_sink::{Batch, Description, Outcome, SinkError};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The content type of [`Metrics::encode`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A topic and partition as labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PartitionLabels {
    topic: String,
    partition: i32,
}

/// A topic as a label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TopicLabels {
    topic: String,
}

/// A topic and a kind of failure.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    topic: String,
    kind: &'static str,
}

/// A kind of event.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

/// What the sink says of itself ([`pico_sink::Description`]).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SinkLabels {
    sink: String,
    tells_already_present: &'static str,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// Seconds, 1 ms to about 33 s.
fn seconds() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// Records per batch, 1 to about a million.
fn records() -> Histogram {
    Histogram::new(exponential_buckets(1.0, 4.0, 11))
}

/// Every metric a runtime keeps, shared by the consumer loop, the partitions' workers, the
/// rebalance and statistics callbacks and the listener that serves them.
pub struct Metrics {
    registry: Registry,
    read: Family<PartitionLabels, Counter>,
    read_bytes: Family<PartitionLabels, Counter>,
    written: Family<PartitionLabels, Counter>,
    already_present: Family<PartitionLabels, Counter>,
    changed: Family<PartitionLabels, Counter>,
    rejected: Family<PartitionLabels, Counter>,
    dead_lettered: Family<PartitionLabels, Counter>,
    sink_errors: Family<ErrorLabels, Counter>,
    batch_records: Histograms<TopicLabels>,
    sink_seconds: Histograms<TopicLabels>,
    commit_seconds: Histograms<TopicLabels>,
    commit_refusals: Family<PartitionLabels, Counter>,
    committed_offset: Family<PartitionLabels, Gauge>,
    lag: Family<PartitionLabels, Gauge>,
    in_flight_bytes: Family<PartitionLabels, Gauge>,
    rebalances: Family<KindLabels, Counter>,
    sink_info: Family<SinkLabels, Gauge>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// Every metric at zero, each name under the runtime's `prefix` and an underscore
    /// (pico-kafka: `pico_kafka`, so `pico_kafka_records_read_total`): an operator's alerts
    /// and dashboards name one runtime's metrics, and two runtimes in one Prometheus stay apart.
    pub fn new(prefix: &str) -> Self {
        let mut registry = Registry::with_prefix(prefix);
        let mut counter = |name: &str, help: &str| {
            let family = Family::<PartitionLabels, Counter>::default();
            registry.register(name, help, family.clone());
            family
        };
        let read = counter("records_read", "Records read from the broker");
        let read_bytes = counter(
            "bytes_read",
            "Payload and key bytes of the records read from the broker",
        );
        let written = counter("records_written", "Records the sink wrote (or overwrote)");
        let already_present = counter(
            "records_already_present",
            "Records the destination already held, so the sink wrote nothing for them: \
             replays absorbed (counted where the sink can tell)",
        );
        let changed = counter(
            "records_changed",
            "Records whose identity the destination held with another payload (a recreated \
             topic, a second cluster without its namespace, a non-deterministic upstream)",
        );
        let rejected = counter("records_rejected", "Records the destination refused");
        let dead_lettered = counter(
            "records_dead_lettered",
            "Refused records produced to the dead-letter topic",
        );
        let commit_refusals = counter(
            "commit_refusals",
            "Offset commits the broker refused (each is retried before the partition goes on)",
        );
        let sink_errors = Family::<ErrorLabels, Counter>::default();
        registry.register(
            "sink_errors",
            "Failed sink calls by kind: retryable and throttled ones are delivered again, \
             fatal ones stop the pipeline",
            sink_errors.clone(),
        );
        let mut histogram = |name: &str, help: &str, make: fn() -> Histogram| {
            let family = Histograms::<TopicLabels>::new_with_constructor(make);
            registry.register(name, help, family.clone());
            family
        };
        let batch_records = histogram("batch_records", "Records per delivered batch", records);
        let sink_seconds = histogram(
            "sink_consume_seconds",
            "Time of each call of the sink (successful or not)",
            seconds,
        );
        let commit_seconds = histogram(
            "commit_seconds",
            "Time from a batch's first commit attempt to the broker's acknowledgement",
            seconds,
        );
        let mut gauge = |name: &str, help: &str| {
            let family = Family::<PartitionLabels, Gauge>::default();
            registry.register(name, help, family.clone());
            family
        };
        let committed_offset = gauge(
            "committed_offset",
            "The group's committed offset (the next record to read) of each partition held",
        );
        let lag = gauge(
            "consumer_lag",
            "Records between the committed offset and the partition's end, as the broker client \
             reports it",
        );
        let in_flight_bytes = gauge(
            "in_flight_bytes",
            "Bytes read and not yet confirmed by the sink (buffered, queued or being written)",
        );
        let rebalances = Family::<KindLabels, Counter>::default();
        registry.register(
            "rebalances",
            "Rebalance callbacks by kind (assign, revoke)",
            rebalances.clone(),
        );
        let started = Gauge::<f64, AtomicU64>::default();
        started.set(unix_seconds(SystemTime::now()));
        registry.register(
            "start_time_seconds",
            "When this process started, in seconds since the Unix epoch: a new value is a \
             restart, after which its counters start again from 0",
            started,
        );
        let sink_info = Family::<SinkLabels, Gauge>::default();
        registry.register(
            "sink_info",
            "1, labelled with the sink and whether it tells records already present from \
             records written (where it does not, replays count as written)",
            sink_info.clone(),
        );
        Self {
            registry,
            read,
            read_bytes,
            written,
            already_present,
            changed,
            rejected,
            dead_lettered,
            sink_errors,
            batch_records,
            sink_seconds,
            commit_seconds,
            commit_refusals,
            committed_offset,
            lag,
            in_flight_bytes,
            rebalances,
            sink_info,
        }
    }

    /// The sink the pipeline writes through, as it describes itself.
    pub fn sink_described(&self, description: &Description) {
        let tells = if description.tells_already_present {
            "true"
        } else {
            "false"
        };
        self.sink_info
            .get_or_create(&SinkLabels {
                sink: description.sink.clone(),
                tells_already_present: tells,
            })
            .set(1);
    }

    /// The metrics in the OpenMetrics text format ([`CONTENT_TYPE`]).
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }

    /// The counters the consumer loop moves for every record of `topic`/`partition`.
    pub fn partition(&self, topic: &str, partition: i32) -> PartitionMeter {
        let labels = PartitionLabels {
            topic: topic.to_owned(),
            partition,
        };
        PartitionMeter {
            read: self.read.get_or_create(&labels).clone(),
            read_bytes: self.read_bytes.get_or_create(&labels).clone(),
            in_flight_bytes: self.in_flight_bytes.get_or_create(&labels).clone(),
        }
    }

    /// Records one call of the sink on `batch`: its time and what it reported.
    pub fn sink_called(&self, batch: &Batch, result: &Result<Outcome, SinkError>, took: Duration) {
        let topic = TopicLabels {
            topic: batch.topic().to_owned(),
        };
        self.sink_seconds
            .get_or_create(&topic)
            .observe(took.as_secs_f64());
        match result {
            Ok(outcome) => {
                let labels = partition_of(batch);
                self.written.get_or_create(&labels).inc_by(outcome.written);
                self.already_present
                    .get_or_create(&labels)
                    .inc_by(outcome.already_present);
                self.changed.get_or_create(&labels).inc_by(outcome.changed);
                self.rejected
                    .get_or_create(&labels)
                    .inc_by(outcome.rejected.len() as u64);
            }
            Err(e) => {
                self.sink_errors
                    .get_or_create(&ErrorLabels {
                        topic: topic.topic,
                        kind: error_kind(e),
                    })
                    .inc();
            }
        }
    }

    /// A batch delivered and committed: its size.
    pub fn delivered(&self, batch: &Batch) {
        self.batch_records
            .get_or_create(&TopicLabels {
                topic: batch.topic().to_owned(),
            })
            .observe(batch.len() as f64);
    }

    /// One record dead-lettered.
    pub fn dead_lettered(&self, topic: &str, partition: i32) {
        self.dead_lettered
            .get_or_create(&PartitionLabels {
                topic: topic.to_owned(),
                partition,
            })
            .inc();
    }

    /// A commit of `topic`/`partition` refused by the broker.
    pub fn commit_refused(&self, topic: &str, partition: i32) {
        self.commit_refusals
            .get_or_create(&PartitionLabels {
                topic: topic.to_owned(),
                partition,
            })
            .inc();
    }

    /// A commit of `offset` acknowledged after `took`.
    pub fn committed(&self, topic: &str, partition: i32, offset: u64, took: Duration) {
        self.commit_seconds
            .get_or_create(&TopicLabels {
                topic: topic.to_owned(),
            })
            .observe(took.as_secs_f64());
        self.committed_offset
            .get_or_create(&PartitionLabels {
                topic: topic.to_owned(),
                partition,
            })
            .set(offset as i64);
    }

    /// The broker client's lag of a partition held (pico-kafka: librdkafka's statistics).
    pub fn lag(&self, topic: &str, partition: i32, lag: i64) {
        self.lag
            .get_or_create(&PartitionLabels {
                topic: topic.to_owned(),
                partition,
            })
            .set(lag);
    }

    /// A rebalance callback (`"assign"` or `"revoke"`).
    pub fn rebalanced(&self, kind: &'static str) {
        self.rebalances.get_or_create(&KindLabels { kind }).inc();
    }

    /// A partition revoked: its gauges leave the output (another process holds it now). Its
    /// counters stay: they count what this process did.
    pub fn revoked(&self, topic: &str, partition: i32) {
        let labels = PartitionLabels {
            topic: topic.to_owned(),
            partition,
        };
        self.committed_offset.remove(&labels);
        self.lag.remove(&labels);
        self.in_flight_bytes.remove(&labels);
    }
}

/// The kind of a sink's failure, as its label says: `throttled` (retryable, and the
/// destination named a wait), `retryable` or `fatal`.
pub fn error_kind(e: &SinkError) -> &'static str {
    match (e.is_retryable(), e.retry_after().is_some()) {
        (true, true) => "throttled",
        (true, false) => "retryable",
        (false, _) => "fatal",
    }
}

/// Seconds since the Unix epoch of `at` (0 for a clock before it).
fn unix_seconds(at: SystemTime) -> f64 {
    at.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

fn partition_of(batch: &Batch) -> PartitionLabels {
    PartitionLabels {
        topic: batch.topic().to_owned(),
        partition: batch.partition() as i32,
    }
}

/// One partition's per-record counters, held by the consumer loop and the partition's worker
/// while this process holds the partition (clones of the registered metrics: no lookup per
/// record). After a revoke they count into metrics no longer served; the next assignment gets
/// new ones.
#[derive(Clone, Debug)]
pub struct PartitionMeter {
    read: Counter,
    read_bytes: Counter,
    in_flight_bytes: Gauge,
}

impl PartitionMeter {
    /// A record of `bytes` read and buffered.
    pub fn read(&self, bytes: usize) {
        self.read.inc();
        self.read_bytes.inc_by(bytes as u64);
        self.in_flight_bytes.inc_by(bytes as i64);
    }

    /// A batch of `bytes` confirmed by the sink: no longer held.
    pub fn confirmed(&self, bytes: usize) {
        self.in_flight_bytes.dec_by(bytes as i64);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use pico_sink::identity::RecordId;
    use pico_sink::testing::batch_with;
    use pico_sink::{RejectedRecord, WriteReport};

    use super::*;

    fn batch(partition: u32, n: u64) -> Batch {
        batch_with("orders", partition, 0..=n - 1, |_| "{}".to_owned())
    }

    /// The value of the sample whose line starts with `series` (name and labels as written).
    fn sample(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    }

    #[test]
    fn each_count_lands_in_its_own_metric_with_topic_and_partition() {
        let m = Metrics::new("pico_kafka");
        let meter = m.partition("orders", 2);
        for _ in 0..3 {
            meter.read(100);
        }
        let b = batch(2, 3);
        let mut outcome: Outcome = WriteReport {
            written: 1,
            already_present: 1,
        }
        .into();
        outcome.rejected.push(RejectedRecord::new(
            RecordId::new("orders", 2, 2),
            "not JSON",
        ));
        m.sink_called(&b, &Ok(outcome), Duration::from_millis(3));
        m.sink_called(
            &b,
            &Err(SinkError::retryable("down").with_retry_after(Some(Duration::from_secs(1)))),
            Duration::from_millis(1),
        );
        m.sink_called(&b, &Err(SinkError::retryable("down")), Duration::ZERO);
        m.sink_called(&b, &Err(SinkError::fatal("no table")), Duration::ZERO);
        m.delivered(&b);
        meter.confirmed(200);
        m.dead_lettered("orders", 2);
        m.commit_refused("orders", 2);
        m.committed("orders", 2, 3, Duration::from_millis(4));
        m.lag("orders", 2, 7);
        m.rebalanced("assign");
        m.sink_described(
            &Description::new("postgres", "keyed", pico_sink::Claim::NoVisibleDuplicate)
                .telling_already_present(),
        );
        let text = m.encode().unwrap();
        let p = "{topic=\"orders\",partition=\"2\"}";
        let at = |name: &str| sample(&text, &format!("pico_kafka_{name}{p}"));
        assert_eq!(at("records_read_total"), Some(3.0), "{text}");
        assert_eq!(at("bytes_read_total"), Some(300.0));
        assert_eq!(at("records_written_total"), Some(1.0));
        assert_eq!(at("records_already_present_total"), Some(1.0));
        assert_eq!(at("records_rejected_total"), Some(1.0));
        assert_eq!(at("records_dead_lettered_total"), Some(1.0));
        assert_eq!(at("commit_refusals_total"), Some(1.0));
        assert_eq!(at("committed_offset"), Some(3.0));
        assert_eq!(at("consumer_lag"), Some(7.0));
        assert_eq!(at("in_flight_bytes"), Some(100.0));
        for kind in ["throttled", "retryable", "fatal"] {
            let series =
                format!("pico_kafka_sink_errors_total{{topic=\"orders\",kind=\"{kind}\"}}");
            assert_eq!(sample(&text, &series), Some(1.0), "{kind}: {text}");
        }
        let count = |name: &str| {
            sample(
                &text,
                &format!("pico_kafka_{name}_count{{topic=\"orders\"}}"),
            )
        };
        assert_eq!(count("sink_consume_seconds"), Some(4.0));
        assert_eq!(count("batch_records"), Some(1.0));
        assert_eq!(count("commit_seconds"), Some(1.0));
        assert_eq!(
            sample(&text, "pico_kafka_rebalances_total{kind=\"assign\"}"),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                "pico_kafka_sink_info{sink=\"postgres\",tells_already_present=\"true\"}"
            ),
            Some(1.0)
        );
        let started = sample(&text, "pico_kafka_start_time_seconds").unwrap();
        let now = unix_seconds(SystemTime::now());
        assert!(started <= now && started > now - 60.0, "{started} vs {now}");
        assert!(text.ends_with("# EOF\n"));

        // A revoked partition's gauges leave the output; its counters stay.
        m.revoked("orders", 2);
        let text = m.encode().unwrap();
        assert_eq!(sample(&text, &format!("pico_kafka_consumer_lag{p}")), None);
        assert_eq!(
            sample(&text, &format!("pico_kafka_committed_offset{p}")),
            None
        );
        assert_eq!(
            sample(&text, &format!("pico_kafka_in_flight_bytes{p}")),
            None
        );
        assert_eq!(
            sample(&text, &format!("pico_kafka_records_read_total{p}")),
            Some(3.0)
        );
    }
}
