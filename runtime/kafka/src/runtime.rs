//! The consumer loop: one consumer in a group, per-partition buffers cut into batches, one
//! worker per assigned partition delivering through the [`Driver`] into one shared sink, the
//! group offset committed only after the sink confirmed.
//!
//! * **Commit**: a worker commits synchronously after its batch was confirmed, never past the
//!   oldest record read and not confirmed ([`Progress`]). A commit the broker refuses (broker
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
//!   drained half of that ([`BatchLimits::pause_at`]).
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
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::FutureExt;
use pico_sink::identity::{BatchId, RecordId};
use pico_sink::{Batch, DeadLetter, Driver, DriverError, DriverHooks, Record, Sink};
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
use tokio::task::JoinHandle;
use tracing::{Instrument, debug, error, info, warn};

pub use pico_runtime::Exit;
use pico_runtime::dead_letter::origin_headers;
use pico_runtime::endpoint::Endpoint;
use pico_runtime::exit::panic_message;
use pico_runtime::fence::CommitFence;
use pico_runtime::health::Health;
use pico_runtime::lock;
use pico_runtime::logging::batch_span;
use pico_runtime::metered::Metered;
use pico_runtime::metrics::{Metrics, PartitionMeter};
use pico_runtime::outage::{deliver_through_outage, open_through_outage};
use pico_runtime::pending::{Pending, record_bytes};
use pico_runtime::settings::BatchLimits;
use pico_runtime::tracker::Progress;

use crate::METRICS_PREFIX;
use crate::config::{DeadLetterSettings, Pipeline};

/// A topic and partition.
type Tp = (String, i32);

/// Why the runtime could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The consumer or producer could not be created or subscribed.
    #[error("kafka: {0}")]
    Kafka(#[from] rdkafka::error::KafkaError),
    /// The `[metrics]` listener could not bind its address.
    #[error("cannot serve /metrics on {address}: {source}; set [metrics] listen to a free address")]
    Metrics {
        /// The address of `[metrics] listen`.
        address: std::net::SocketAddr,
        /// Why it could not bind.
        source: std::io::Error,
    },
}

/// A partition's worker: its queue, task and commit fence.
struct Worker {
    queue: mpsc::Sender<Batch>,
    task: JoinHandle<()>,
    fence: Arc<CommitFence>,
}

/// State shared by the loop, the workers and the rebalance callbacks.
#[derive(Default)]
struct Shared {
    progress: Mutex<HashMap<Tp, Progress>>,
    workers: Mutex<HashMap<Tp, Worker>>,
    /// Partitions revoked since the loop last looked.
    revoked: Mutex<Vec<Tp>>,
    /// A drain was requested: a batch whose round of attempts failed is not delivered again.
    draining: AtomicBool,
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
                    let worker = lock(&self.shared.workers).remove(&tp);
                    if let Some(worker) = worker {
                        // Stops the delivery in flight: the sink contract makes it safe, and
                        // the new owner resumes from the committed offset. No commit of the
                        // partition starts from now on.
                        worker.task.abort();
                        worker.fence.refuse();
                        fences.push((tp.clone(), worker.fence));
                    }
                    let read_not_committed = lock(&self.shared.progress)
                        .remove(&tp)
                        .map_or(0, |p| p.read_not_committed());
                    self.metrics.revoked(&tp.0, tp.1);
                    info!(topic = %tp.0, read_not_committed, partition = tp.1, "partition revoked: fetching stopped, nothing committed past what was confirmed");
                    lock(&self.shared.revoked).push(tp);
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

/// What a worker needs besides its queue.
#[derive(Clone)]
struct WorkerKit {
    sink: Arc<dyn Sink>,
    policy: pico_sink::RetryPolicy,
    commit_timeout: Duration,
    /// `retry.max_retry_duration_ms`: how long a batch is delivered again after its first
    /// failed round (`None`: as long as the destination answers `Retryable`).
    max_retry_duration: Option<Duration>,
    consumer: Arc<Kafka>,
    shared: Arc<Shared>,
    dlq: Option<(Arc<FutureProducer>, String)>,
    failures: mpsc::UnboundedSender<Exit>,
    /// A partition whose worker took a batch off its queue: the loop hands it the next one at
    /// once (without it, a partition whose buffer is full but gets no new record waited for
    /// the next linger tick: one batch per linger on a paused or single partition).
    ready: mpsc::UnboundedSender<Tp>,
    /// `[chaos] commit_delay_ms`: how long each commit waits once started (zero: not at all).
    commit_delay: Duration,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    /// The crash suite's control, if this build has them and the pipeline file names one.
    #[cfg(feature = "mutants")]
    mutant: Option<pico_runtime::mutants::Mutant>,
}

/// The driver's hooks for one partition: commit through the tracker, dead letters to the
/// topic.
struct PartitionHooks {
    tp: Tp,
    first: u64,
    kit: WorkerKit,
    fence: Arc<CommitFence>,
}

#[async_trait]
impl DriverHooks for PartitionHooks {
    async fn commit(&mut self, batch: &BatchId) -> Result<(), String> {
        let to_commit = lock(&self.kit.shared.progress)
            .get_mut(&self.tp)
            .and_then(|p| p.confirmed(self.first));
        let Some(offset) = to_commit else {
            return Ok(());
        };
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&self.tp.0, self.tp.1, Offset::Offset(offset as i64))
            .map_err(|e| e.to_string())?;
        // A refused commit is retried before this partition delivers anything else: what the
        // sink wrote and the group does not know about stays one batch. A revoked partition's
        // worker is aborted meanwhile; one that keeps failing past the timeout stops the
        // pipeline, which restarts from the committed offset.
        let started = Instant::now();
        let mut failures = 0;
        loop {
            let consumer = self.kit.consumer.clone();
            let list = tpl.clone();
            let (fence, delay) = (self.fence.clone(), self.kit.commit_delay);
            let commit = move || {
                fence.run(|| {
                    std::thread::sleep(delay);
                    consumer.commit(&list, CommitMode::Sync)
                })
            };
            let error = match tokio::task::spawn_blocking(commit).await {
                Ok(Some(Ok(()))) => break,
                Ok(Some(Err(e))) => e.to_string(),
                Ok(None) => {
                    debug!(batch = %batch, offset, "not committed: the partition was revoked, its next owner resumes from the committed offset");
                    return Ok(());
                }
                Err(e) => format!("the commit task failed: {e}"),
            };
            failures += 1;
            self.kit.metrics.commit_refused(&self.tp.0, self.tp.1);
            self.kit.health.commit_answered(Some("refused"));
            if started.elapsed() >= self.kit.commit_timeout {
                return Err(format!(
                    "offset {offset} of {}:{} not committed after {failures} attempts in {:?}: \
                     {error}",
                    self.tp.0,
                    self.tp.1,
                    started.elapsed()
                ));
            }
            let delay = self.kit.policy.backoff(failures);
            warn!(batch = %batch, offset, error = %error, ?delay, "offset commit refused; retrying before the next batch");
            tokio::time::sleep(delay).await;
        }
        if let Some(p) = lock(&self.kit.shared.progress).get_mut(&self.tp) {
            p.committed(offset);
        }
        self.kit
            .metrics
            .committed(&self.tp.0, self.tp.1, offset, started.elapsed());
        self.kit.health.commit_answered(None);
        #[cfg(feature = "mutants")]
        if let Some(mutant) = self.kit.mutant {
            let others = mutant.on_committed(&self.tp, &lock(&self.kit.shared.progress));
            mutant_commit(&self.kit, others);
        }
        debug!(batch = %batch, offset, attempts = failures + 1, "committed");
        Ok(())
    }

    async fn dead_letter(&mut self, letters: &[DeadLetter]) -> Result<(), String> {
        let Some((producer, topic)) = &self.kit.dlq else {
            let first = &letters[0];
            return Err(format!(
                "{} record(s) refused and no dead_letter topic is configured; first: {} ({})",
                letters.len(),
                first.record.id,
                first.reason
            ));
        };
        for letter in letters {
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
                .map_err(|(e, _)| {
                    format!("producing the dead letter of {} to {topic}: {e}", r.id)
                })?;
            self.kit
                .metrics
                .dead_lettered(&r.id.topic, r.id.partition as i32);
            warn!(record = %r.id, reason = %letter.reason, topic, "dead-lettered");
        }
        Ok(())
    }
}

/// One partition's worker: delivers its batches in order. A panic inside the delivery (the
/// sink's own bug) ends the pipeline like a batch that failed every attempt, with nothing of
/// the partition committed past what the sink confirmed: a worker that vanished would stall
/// its partition while the others go on.
async fn work(
    tp: Tp,
    mut queue: mpsc::Receiver<Batch>,
    kit: WorkerKit,
    fence: Arc<CommitFence>,
    meter: PartitionMeter,
) {
    let mut driver = Driver::with_policy(kit.sink.clone(), kit.policy.clone());
    while let Some(batch) = queue.recv().await {
        // Room in the queue: the next batch is cut while this one is written.
        let _ = kit.ready.send(tp.clone());
        let mut hooks = PartitionHooks {
            tp: tp.clone(),
            first: batch.id().first,
            kit: kit.clone(),
            fence: fence.clone(),
        };
        // Every line logged while the batch is delivered carries its topic, partition and
        // offsets, the lines below about its end too.
        let span = batch_span(&batch);
        let delivery = AssertUnwindSafe(
            deliver_through_outage(
                &mut driver,
                &batch,
                &mut hooks,
                kit.max_retry_duration,
                &kit.shared.draining,
            )
            .instrument(span.clone()),
        )
        .catch_unwind()
        .await;
        let _in_batch = span.enter();
        let delivered = match delivery {
            Ok(delivered) => delivered,
            Err(panic) => {
                let committed = lock(&kit.shared.progress)
                    .get(&tp)
                    .and_then(Progress::cursor);
                let text = format!(
                    "the worker of {}:{} panicked delivering {}: {}; nothing of the partition \
                     past its committed offset ({}) is delivered",
                    tp.0,
                    tp.1,
                    batch.id(),
                    panic_message(panic.as_ref()),
                    committed.map_or_else(|| "none".to_owned(), |c| c.to_string())
                );
                error!(batch = %batch.id(), error = %text, "delivery stopped");
                let _ = kit.failures.send(Exit::GaveUp(text));
                return;
            }
        };
        match delivered {
            Ok(delivered) => {
                kit.metrics.delivered(&batch);
                meter.confirmed(batch.records().iter().map(record_bytes).sum());
                debug!(batch = %batch.id(), attempts = delivered.attempts, written = delivered.outcome.written, changed = delivered.outcome.changed, "delivered")
            }
            Err(e) => {
                let text = e.to_string();
                error!(batch = %batch.id(), error = %text, "delivery stopped");
                let exit = match e {
                    DriverError::Fatal(_) => Exit::Fatal(text),
                    DriverError::DeadLetter(_) => Exit::Refused(text),
                    _ => Exit::GaveUp(text),
                };
                let _ = kit.failures.send(exit);
                return;
            }
        }
    }
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
    let metrics = Arc::new(Metrics::new(METRICS_PREFIX));
    let probes = pipeline.metrics.clone().unwrap_or_default();
    let health = Arc::new(Health::new(
        Duration::from_millis(probes.unready_after_ms),
        Duration::from_millis(probes.stalled_after_ms),
    ));
    // Served from the start (a destination down at start shows in `/ready`), and stopped when
    // `run` returns, whichever way.
    let _endpoint: Option<Endpoint> = match &pipeline.metrics {
        Some(m) => Some(
            pico_runtime::endpoint::serve(m.listen, metrics.clone(), health.clone())
                .await
                .map_err(|source| StartError::Metrics {
                    address: m.listen,
                    source,
                })?,
        ),
        None => None,
    };
    metrics.sink_described(&sink.describe());
    let sink: Arc<dyn Sink> = Arc::new(Metered::new(sink, metrics.clone(), health.clone()));
    let opened = open_through_outage(
        sink.clone(),
        pipeline.retry.policy(),
        pipeline.retry.max_retry_duration(),
        shutdown.as_mut(),
    )
    .await;
    if let Err(exit) = opened {
        return Ok(exit);
    }
    health.opened();
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
            Some((Arc::new(producer), d.topic.clone()))
        }
        None => None,
    };
    let (failures, mut failed) = mpsc::unbounded_channel();
    let (ready, mut wants_more) = mpsc::unbounded_channel();
    let batch = pipeline.batch.limits(sink.commit_policy());
    let kit = WorkerKit {
        sink,
        policy: pipeline.retry.policy(),
        commit_timeout: pipeline.retry.commit_timeout(),
        max_retry_duration: pipeline.retry.max_retry_duration(),
        consumer: consumer.clone(),
        shared: shared.clone(),
        dlq,
        failures,
        ready,
        commit_delay: Duration::from_millis(pipeline.chaos.commit_delay_ms),
        metrics: metrics.clone(),
        health: health.clone(),
        #[cfg(feature = "mutants")]
        mutant: pipeline.chaos.mutant,
    };
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
                    log_progress(&shared);
                }
            }
        }
    };
    if let Some(exit) = ended {
        abort_workers(&shared);
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
                Some(exit) = failed.recv() => { abort_workers(&shared); return Ok(exit); }
                () = tokio::time::sleep(Duration::from_millis(20)) => flush(tp, &mut pending, &kit, &batch, true),
            }
        }
    }
    let workers: Vec<Worker> = lock(&shared.workers).drain().map(|(_, w)| w).collect();
    for worker in workers {
        drop(worker.queue);
        let _ = worker.task.await;
    }
    if let Ok(exit) = failed.try_recv() {
        return Ok(exit);
    }
    log_progress(&shared);
    consumer.unsubscribe();
    info!("drained: every record read was delivered and committed");
    Ok(Exit::Drained)
}

/// Commits what a mutant runtime wants committed, without waiting for the broker, and takes it
/// as committed (so the honest path commits nothing lower).
#[cfg(feature = "mutants")]
fn mutant_commit(kit: &WorkerKit, offsets: Vec<(Tp, u64)>) {
    if offsets.is_empty() {
        return;
    }
    let mut tpl = TopicPartitionList::new();
    for ((topic, partition), offset) in &offsets {
        if let Err(e) = tpl.add_partition_offset(topic, *partition, Offset::Offset(*offset as i64))
        {
            warn!(error = %e, "mutant: cannot build its commit");
            return;
        }
    }
    if let Err(e) = kit.consumer.commit(&tpl, CommitMode::Async) {
        warn!(error = %e, "mutant: its commit was refused");
        return;
    }
    let mut progress = lock(&kit.shared.progress);
    for (tp, offset) in &offsets {
        if let Some(p) = progress.get_mut(tp) {
            p.committed(*offset);
        }
    }
    debug!(?offsets, "mutant: committed ahead of the sink");
}

/// Drops the buffers and counters of revoked partitions.
fn forget_revoked(
    shared: &Shared,
    pending: &mut HashMap<Tp, Pending>,
    meters: &mut HashMap<Tp, PartitionMeter>,
) {
    for tp in lock(&shared.revoked).drain(..) {
        pending.remove(&tp);
        meters.remove(&tp);
    }
}

fn abort_workers(shared: &Shared) {
    for (_, w) in lock(&shared.workers).drain() {
        w.task.abort();
    }
}

fn log_progress(shared: &Shared) {
    for ((topic, partition), p) in lock(&shared.progress).iter() {
        info!(
            topic,
            partition,
            cursor = ?p.cursor(),
            read = ?p.read_position(),
            in_flight = p.in_flight(),
            nothing_unacked = p.nothing_unacked(),
            "progress (cursor == read position ⟺ nothing unacked)"
        );
    }
}

/// Hands as many batches of `tp`'s buffer to its worker as its queue takes (all of them when
/// `whole`), pausing or resuming the partition at the broker by how much stays buffered.
fn flush(
    tp: &Tp,
    pending: &mut HashMap<Tp, Pending>,
    kit: &WorkerKit,
    limits: &BatchLimits,
    whole: bool,
) {
    let Some(buffer) = pending.get_mut(tp) else {
        return;
    };
    let queue = {
        let mut workers = lock(&kit.shared.workers);
        let worker = workers.entry(tp.clone()).or_insert_with(|| {
            let (queue, rx) = mpsc::channel(1);
            let fence = Arc::new(CommitFence::default());
            let meter = kit.metrics.partition(&tp.0, tp.1);
            let task = tokio::spawn(work(tp.clone(), rx, kit.clone(), fence.clone(), meter));
            Worker { queue, task, fence }
        });
        worker.queue.clone()
    };
    while queue.capacity() > 0 {
        let batch = match buffer.cut(limits, whole) {
            Ok(Some(batch)) => batch,
            Ok(None) => break,
            Err(why) => {
                // A bug, not something a redelivery mends (no seek asks for one): the run ends
                // and the restart resumes from the committed offset.
                error!(topic = %tp.0, partition = tp.1, error = %why, "delivery stopped");
                let _ = kit.failures.send(Exit::Fatal(why));
                break;
            }
        };
        let rest = buffer.records.first().map(|r| r.id.offset);
        if let Some(p) = lock(&kit.shared.progress).get_mut(tp) {
            p.handed(batch.id().first, batch.id().last, rest);
        }
        #[cfg(feature = "mutants")]
        if let Some(mutant) = kit.mutant {
            mutant_commit(kit, mutant.on_handed(tp, batch.id().last));
        }
        if queue.try_send(batch).is_err() {
            warn!(topic = %tp.0, partition = tp.1, "worker queue closed");
            break;
        }
    }
    let (high, high_bytes) = limits.pause_at();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition(&tp.0, tp.1);
    if !buffer.paused && (buffer.records.len() >= high || buffer.bytes >= high_bytes) {
        if kit.consumer.pause(&tpl).is_ok() {
            buffer.paused = true;
            debug!(topic = %tp.0, partition = tp.1, "paused: the sink is behind");
        }
    } else if buffer.paused
        && buffer.records.len() < high / 2
        && buffer.bytes < high_bytes / 2
        && kit.consumer.resume(&tpl).is_ok()
    {
        buffer.paused = false;
        debug!(topic = %tp.0, partition = tp.1, "resumed");
    }
}
