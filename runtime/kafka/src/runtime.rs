//! The consumer loop: one consumer in a group, per-partition buffers cut into batches, one
//! worker per assigned partition delivering through the [`pico_sink::driver::Driver`] into one shared sink, the
//! group offset committed only after the sink confirmed.
//!
//! * **Commit**: a worker commits synchronously after its batch was confirmed, never past the
//!   oldest record read and not confirmed ([`pico_runtime::tracker::Progress`]). A commit the broker refuses (broker
//!   down, rebalance in progress) is retried with backoff before the partition delivers
//!   anything else, for up to `retry.commit_timeout_ms`; whoever owns the partition next
//!   redelivers at worst that one batch.
//! * **Rebalance**: on revoke, the partition's worker is aborted (dropping a `consume` future
//!   is safe by the sink contract) and its buffer dropped; nothing past what was confirmed is
//!   committed. A commit of the partition already running lands before the revoke returns,
//!   and none starts after it (its commit fence), so no late commit moves the group's offset
//!   back behind the next owner's. On assign, librdkafka resumes from the committed offset.
//! * **Back-pressure**: each worker takes one batch in flight and one queued, the queue refilled
//!   as soon as the worker takes a batch off it; a partition whose buffer grows past sixteen
//!   batches (or four batches' bytes, at least 16 MiB) is paused at the broker until it has
//!   drained half of that ([`pico_runtime::settings::BatchLimits::pause_at`]).
//! * **Opening**: the sink is opened before the consumer joins the group; a destination down
//!   at start is ridden out the same way as below, with no partition held meanwhile.
//! * **Outage**: a batch whose every attempt failed with `Retryable` waits the longest backoff
//!   and is delivered again, its partitions kept and the process polling, for as long as the
//!   destination is down (or `retry.max_retry_duration_ms`); no restart, no rebalance.
//! * **Dead letters**: refused records are produced to the dead-letter topic (`acks=all`) with
//!   the reason and their origin as headers before the commit; without a dead-letter topic a
//!   refusal stops the pipeline with nothing committed past it.
//! * **Failures**: a batch that fails past `retry.max_retry_duration_ms`, a fatal sink error,
//!   a failed dead letter, a panic inside a partition's delivery, or records that cannot form a
//!   batch (the partition then hands nothing more on, so no later batch is committed past
//!   them) end [`run`] with an [`Exit`] naming it; a supervisor restarts the process and it
//!   resumes from the committed offsets.
//! * **Shutdown**: when the `shutdown` future completes, fetching stops, every buffered record
//!   is delivered and committed, then `run` returns [`Exit::Drained`].

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use pico_sink::identity::RecordId;
use pico_sink::{DeadLetter, Record, Sink};
use rdkafka::client::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{
    BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance, StreamConsumer,
};
use rdkafka::message::{BorrowedMessage, Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::statistics::Statistics;
use rdkafka::{Offset, TopicPartitionList};
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

pub use pico_runtime::Exit;
use pico_runtime::dead_letter::origin_headers;
use pico_runtime::fence::CommitFence;
use pico_runtime::health::Health;
use pico_runtime::lock;
use pico_runtime::metrics::{Metrics, PartitionMeter};
use pico_runtime::pending::{Pending, record_bytes};
use pico_runtime::start::{MetricsUnavailable, Started, start};
use pico_runtime::tracker::Tp;
use pico_runtime::worker::{Broker, Channels, Shared, WorkerKit, flush, forget_revoked};

use crate::METRICS_PREFIX;
use crate::config::{DeadLetterSettings, Pipeline};

/// Why the runtime could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The consumer or producer could not be created or subscribed.
    #[error("kafka: {0}")]
    Kafka(#[from] rdkafka::error::KafkaError),
    /// The `[metrics]` listener could not bind its address.
    #[error(transparent)]
    Metrics(#[from] MetricsUnavailable),
}

/// The consumer's context: rebalance callbacks, and librdkafka's statistics (the lag).
struct Context {
    shared: Arc<Shared>,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
}

impl ClientContext for Context {
    fn stats(&self, statistics: Statistics) {
        for (topic, t) in &statistics.topics {
            for p in t.partitions.values() {
                // Partition -1 is librdkafka's internal one; a lag of -1 is not known yet.
                if p.partition >= 0 && p.desired && p.consumer_lag >= 0 {
                    self.metrics.lag(topic, p.partition, p.consumer_lag);
                }
            }
        }
    }
}

impl ConsumerContext for Context {
    fn pre_rebalance(&self, _: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        match rebalance {
            Rebalance::Revoke(tpl) => {
                self.metrics.rebalanced("revoke");
                self.health.assigned(-(tpl.count() as i64));
                let mut fences = Vec::new();
                for e in tpl.elements() {
                    let tp = (e.topic().to_owned(), e.partition());
                    // Stops the delivery in flight: the sink contract makes it safe, and the
                    // new owner resumes from the committed offset. No commit of the partition
                    // starts from now on.
                    let (fence, read_not_committed) = self.shared.revoke(&tp);
                    if let Some(fence) = fence {
                        fences.push((tp.clone(), fence));
                    }
                    self.metrics.revoked(&tp.0, tp.1);
                    info!(topic = %tp.0, read_not_committed, partition = tp.1, "partition revoked: fetching stopped, nothing committed past what was confirmed");
                }
                // A commit already running lands before the revoke returns: the next owner
                // commits after it, never before.
                let waited = Instant::now();
                for (tp, fence) in fences {
                    fence.close();
                    debug!(topic = %tp.0, partition = tp.1, waited_ms = waited.elapsed().as_millis() as u64, "commit fence closed");
                }
            }
            Rebalance::Assign(tpl) => {
                self.metrics.rebalanced("assign");
                self.health.assigned(tpl.count() as i64);
                for e in tpl.elements() {
                    info!(
                        topic = e.topic(),
                        partition = e.partition(),
                        "partition assigned: resuming from the committed offset"
                    );
                }
            }
            Rebalance::Error(e) => warn!(error = %e, "rebalance error"),
        }
    }
}

type Kafka = StreamConsumer<Context>;

/// The Kafka side of the partitions' workers: offsets committed by the consumer, dead letters
/// produced to a topic, fetching paused per partition.
struct KafkaBroker {
    consumer: Arc<Kafka>,
    dlq: Option<(FutureProducer, String)>,
    /// `[chaos] commit_delay_ms`: how long each commit waits once started (zero: not at all).
    commit_delay: Duration,
}

impl KafkaBroker {
    /// `tp` alone, as librdkafka names partitions.
    fn list(tp: &Tp) -> TopicPartitionList {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition(&tp.0, tp.1);
        tpl
    }
}

#[async_trait]
impl Broker for KafkaBroker {
    async fn confirm(
        &self,
        tp: &Tp,
        offset: u64,
        fence: &Arc<CommitFence>,
    ) -> Result<bool, String> {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&tp.0, tp.1, Offset::Offset(offset as i64))
            .map_err(|e| e.to_string())?;
        let (consumer, fence, delay) = (self.consumer.clone(), fence.clone(), self.commit_delay);
        // librdkafka's commit blocks; the fence lets a revoke wait for one already running.
        let commit = move || {
            fence.run(|| {
                std::thread::sleep(delay);
                consumer.commit(&tpl, CommitMode::Sync)
            })
        };
        match tokio::task::spawn_blocking(commit).await {
            Ok(Some(Ok(()))) => Ok(true),
            Ok(Some(Err(e))) => Err(e.to_string()),
            Ok(None) => Ok(false),
            Err(e) => Err(format!("the commit task failed: {e}")),
        }
    }

    fn dead_letter_destination(&self) -> Option<&str> {
        self.dlq.as_ref().map(|(_, topic)| topic.as_str())
    }

    async fn dead_letter(&self, letter: &DeadLetter) -> Result<(), String> {
        let Some((producer, topic)) = &self.dlq else {
            return Err("no dead_letter topic is configured".into());
        };
        let r = &letter.record;
        let mut headers = OwnedHeaders::new();
        for h in &r.headers {
            headers = headers.insert(Header {
                key: &h.name,
                value: Some(h.value.as_ref()),
            });
        }
        for (key, value) in &origin_headers(letter) {
            headers = headers.insert(Header {
                key,
                value: Some(value.as_str()),
            });
        }
        let mut record = FutureRecord::to(topic)
            .payload(r.value.as_ref())
            .headers(headers);
        if let Some(key) = &r.key {
            record = record.key(key.as_ref());
        }
        producer
            .send(record, Duration::from_secs(30))
            .await
            .map(|_| ())
            .map_err(|(e, _)| e.to_string())
    }

    fn pause(&self, tp: &Tp) -> bool {
        self.consumer.pause(&Self::list(tp)).is_ok()
    }

    fn resume(&self, tp: &Tp) -> bool {
        self.consumer.resume(&Self::list(tp)).is_ok()
    }

    fn confirm_ahead(&self, offsets: &[(Tp, u64)]) -> Result<(), String> {
        let mut tpl = TopicPartitionList::new();
        for ((topic, partition), offset) in offsets {
            tpl.add_partition_offset(topic, *partition, Offset::Offset(*offset as i64))
                .map_err(|e| format!("cannot build its commit: {e}"))?;
        }
        self.consumer
            .commit(&tpl, CommitMode::Async)
            .map_err(|e| e.to_string())
    }
}

/// A message as a record.
fn to_record(m: &BorrowedMessage<'_>) -> Record {
    let id = RecordId::new(
        m.topic(),
        m.partition().max(0) as u32,
        m.offset().max(0) as u64,
    );
    let mut record = Record::new(
        id,
        bytes::Bytes::copy_from_slice(m.payload().unwrap_or_default()),
    );
    if let Some(key) = m.key() {
        record = record.with_key(bytes::Bytes::copy_from_slice(key));
    }
    if let Some(headers) = m.headers() {
        for h in headers.iter() {
            record = record.with_header(h.key, h.value.unwrap_or_default().to_vec());
        }
    }
    if let Some(ms) = m.timestamp().to_millis() {
        record = record.with_timestamp_ms(ms);
    }
    record
}

/// The consumer's properties.
fn consumer_config(pipeline: &Pipeline) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", &pipeline.kafka.brokers)
        .set("group.id", &pipeline.kafka.group)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("enable.partition.eof", "false");
    if let Some(m) = &pipeline.metrics {
        config.set("statistics.interval.ms", m.lag_interval_ms.to_string());
    }
    for (k, v) in &pipeline.kafka.properties {
        config.set(k, v);
    }
    config
}

/// The largest dead letter the runtime's producer sends by default: librdkafka's own default
/// (1 MB) would refuse the dead letter of a record the broker delivered.
const DEAD_LETTER_MAX_BYTES: &str = "104857600";

/// The dead-letter producer's properties: durable (`acks=all`), no copy from its own retries
/// (`enable.idempotence`), room for any record the broker delivers; then the file's.
fn dead_letter_config(pipeline: &Pipeline, dlq: &DeadLetterSettings) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", &pipeline.kafka.brokers)
        .set("acks", "all")
        .set("enable.idempotence", "true")
        .set("message.max.bytes", DEAD_LETTER_MAX_BYTES);
    for (k, v) in &dlq.properties {
        config.set(k, v);
    }
    config
}

/// Opens the sink (riding out a destination that is down, before joining the group), then runs
/// the pipeline until `shutdown` completes (then drains) or a batch cannot be delivered.
pub async fn run(
    pipeline: &Pipeline,
    sink: Arc<dyn Sink>,
    shutdown: impl Future<Output = ()>,
) -> Result<Exit, StartError> {
    tokio::pin!(shutdown);
    let started = start(
        METRICS_PREFIX,
        pipeline.metrics.as_ref(),
        &pipeline.retry,
        sink,
        shutdown.as_mut(),
    )
    .await?;
    // The endpoint serves until `run` returns, whichever way.
    let Started {
        metrics,
        health,
        sink,
        endpoint: _endpoint,
    } = match started {
        Ok(started) => started,
        Err(exit) => return Ok(exit),
    };
    let shared = Arc::new(Shared::default());
    let consumer: Arc<Kafka> =
        Arc::new(consumer_config(pipeline).create_with_context(Context {
            shared: shared.clone(),
            metrics: metrics.clone(),
            health: health.clone(),
        })?);
    let topics: Vec<&str> = pipeline.kafka.topics.iter().map(String::as_str).collect();
    consumer.subscribe(&topics)?;
    let dlq = match &pipeline.dead_letter {
        Some(d) => {
            let producer: FutureProducer = dead_letter_config(pipeline, d).create()?;
            Some((producer, d.topic.clone()))
        }
        None => None,
    };
    let broker = Arc::new(KafkaBroker {
        consumer: consumer.clone(),
        dlq,
        commit_delay: Duration::from_millis(pipeline.chaos.commit_delay_ms),
    });
    let (failures, mut failed) = mpsc::unbounded_channel();
    let (ready, mut wants_more) = mpsc::unbounded_channel();
    let batch = pipeline.batch.limits(sink.commit_policy());
    let kit = WorkerKit::new(
        sink,
        broker,
        shared.clone(),
        Channels { failures, ready },
        (metrics.clone(), health.clone()),
        &pipeline.retry,
        &pipeline.chaos,
    );
    info!(
        group = %pipeline.kafka.group,
        topics = ?pipeline.kafka.topics,
        max_records = batch.max_records,
        max_bytes = batch.max_bytes,
        linger_ms = batch.linger_ms,
        "consuming"
    );

    let mut pending: HashMap<Tp, Pending> = HashMap::new();
    // Each partition's per-record counters, while it is held.
    let mut meters: HashMap<Tp, PartitionMeter> = HashMap::new();
    let mut tick = tokio::time::interval((batch.linger() / 4).max(Duration::from_millis(10)));
    let progress_every = Duration::from_secs(pipeline.kafka.progress_secs.max(1));
    let mut last_progress = Instant::now();
    let ended = loop {
        health.turned();
        tokio::select! {
            biased;
            () = &mut shutdown => break None,
            Some(exit) = failed.recv() => break Some(exit),
            Some(tp) = wants_more.recv() => {
                forget_revoked(&shared, &mut pending, &mut meters);
                flush(&tp, &mut pending, &kit, &batch, false);
            }
            message = consumer.recv() => match message {
                Ok(m) => {
                    forget_revoked(&shared, &mut pending, &mut meters);
                    let record = to_record(&m);
                    let tp: Tp = (m.topic().to_owned(), m.partition());
                    let offset = record.id.offset;
                    {
                        let mut progress = lock(&shared.progress);
                        let p = progress.entry(tp.clone()).or_default();
                        // A record read again (librdkafka re-fetched after an error) is
                        // already buffered or delivered.
                        if p.read_position().is_some_and(|r| offset < r) {
                            continue;
                        }
                        p.read(offset);
                    }
                    // Looked up without cloning the key: a new meter only at the partition's
                    // first record.
                    let bytes = record_bytes(&record);
                    match meters.get(&tp) {
                        Some(meter) => meter.read(bytes),
                        None => {
                            let meter = metrics.partition(&tp.0, tp.1);
                            meter.read(bytes);
                            meters.insert(tp.clone(), meter);
                        }
                    }
                    let buffer = pending.entry(tp.clone()).or_default();
                    buffer.push(record);
                    if buffer.records.len() >= batch.max_records || buffer.bytes >= batch.max_bytes {
                        flush(&tp, &mut pending, &kit, &batch, false);
                    }
                }
                Err(e) => {
                    // Broker unreachable and the like: librdkafka reconnects; fetching stalls.
                    warn!(error = %e, "consumer error");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            },
            _ = tick.tick() => {
                forget_revoked(&shared, &mut pending, &mut meters);
                let due: Vec<Tp> = pending
                    .iter()
                    .filter(|(_, p)| !p.records.is_empty() && p.since.elapsed() >= batch.linger())
                    .map(|(tp, _)| tp.clone())
                    .collect();
                for tp in due {
                    flush(&tp, &mut pending, &kit, &batch, false);
                }
                if last_progress.elapsed() >= progress_every {
                    last_progress = Instant::now();
                    shared.log_progress();
                }
            }
        }
    };
    if let Some(exit) = ended {
        shared.abort_workers();
        return Ok(exit);
    }
    info!("shutdown requested: draining");
    shared.draining.store(true, Ordering::SeqCst);
    health.draining();
    let tps: Vec<Tp> = pending.keys().cloned().collect();
    for tp in &tps {
        flush(tp, &mut pending, &kit, &batch, true);
        while pending.get(tp).is_some_and(|p| !p.records.is_empty()) {
            tokio::select! {
                Some(exit) = failed.recv() => { shared.abort_workers(); return Ok(exit); }
                () = tokio::time::sleep(Duration::from_millis(20)) => flush(tp, &mut pending, &kit, &batch, true),
            }
        }
    }
    shared.finish_workers().await;
    if let Ok(exit) = failed.try_recv() {
        return Ok(exit);
    }
    shared.log_progress();
    consumer.unsubscribe();
    info!("drained: every record read was delivered and committed");
    Ok(Exit::Drained)
}
