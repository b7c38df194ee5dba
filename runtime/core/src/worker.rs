//! The partitions' workers, whatever the broker: one worker per partition held delivers that
//! partition's batches in order through the [`Driver`] into the one shared sink, then confirms
//! the position to the broker through the [`Broker`] — never past the oldest record read and
//! not confirmed ([`Progress`]) — and sends the records the sink refused as dead letters first.
//!
//! A runtime's consumer loop reads records into each partition's [`Pending`] buffer and calls
//! [`flush`]; the broker's callbacks revoke partitions through [`Shared::revoke`]. What differs
//! between brokers — how a position is confirmed, where a dead letter goes, how fetching a
//! partition pauses — is the [`Broker`]'s.
//!
//! * **Confirm**: a refused confirmation is retried with backoff before the partition delivers
//!   anything else, for up to `retry.commit_timeout_ms`; whoever holds the partition next
//!   redelivers at worst that one batch.
//! * **Back-pressure**: each worker takes one batch in flight and one queued; a partition
//!   whose buffer grows past [`BatchLimits::pause_at`] is paused at the broker until it has
//!   drained half of that.
//! * **Failures**: a batch that fails past `retry.max_retry_duration_ms`, a fatal sink error,
//!   a failed dead letter, a panic inside a delivery, or records that cannot form a batch end
//!   the run with an [`Exit`] sent on the workers' failure channel.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::FutureExt;
use pico_sink::driver::{Driver, DriverError, DriverHooks, RetryPolicy};
use pico_sink::identity::BatchId;
use pico_sink::{Batch, DeadLetter, Sink};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::{Instrument, debug, error, info, warn};

use crate::exit::panic_message;
use crate::fence::CommitFence;
use crate::health::Health;
use crate::logging::batch_span;
use crate::metrics::{Metrics, PartitionMeter};
use crate::outage::deliver_through_outage;
use crate::pending::{Pending, record_bytes};
use crate::settings::{BatchLimits, ChaosSettings, RetrySettings};
use crate::tracker::{Progress, Tp};
use crate::{Exit, lock};

/// What a broker does for the partitions' workers.
#[async_trait]
pub trait Broker: Send + Sync + 'static {
    /// Confirms to the broker that every record of `tp` before `offset` was delivered
    /// (Kafka: commits `offset`), waiting for its answer. A broker whose partitions can be
    /// revoked runs the confirmation through `fence` and answers `Ok(false)` when the fence
    /// refused it (the partition was revoked: nothing confirmed, its next owner resumes from
    /// the last confirmed position).
    async fn confirm(&self, tp: &Tp, offset: u64, fence: &Arc<CommitFence>)
    -> Result<bool, String>;

    /// Where dead letters go (a topic, a subject), or `None`: a refused record then stops the
    /// run with nothing confirmed past it.
    fn dead_letter_destination(&self) -> Option<&str>;

    /// Sends one dead letter durably (with its record's key, value and headers, and
    /// [`crate::dead_letter::origin_headers`]) before the position past its record is
    /// confirmed.
    async fn dead_letter(&self, letter: &DeadLetter) -> Result<(), String>;

    /// Stops fetching `tp`: its buffer is full. Whether it took effect.
    fn pause(&self, tp: &Tp) -> bool;

    /// Fetches `tp` again. Whether it took effect.
    fn resume(&self, tp: &Tp) -> bool;

    /// A mutant runtime's confirmation of `offsets` at once, without waiting for the broker
    /// (the crash suites' controls). By default a broker has none.
    fn confirm_ahead(&self, offsets: &[(Tp, u64)]) -> Result<(), String> {
        let _ = offsets;
        Err("this runtime has no mutant confirmation".into())
    }
}

/// A partition's worker: its queue, task and commit fence.
pub struct Worker {
    queue: mpsc::Sender<Batch>,
    task: JoinHandle<()>,
    fence: Arc<CommitFence>,
}

/// State shared by the consumer loop, the workers and the broker's callbacks.
#[derive(Default)]
pub struct Shared {
    /// Each partition's offsets.
    pub progress: Mutex<HashMap<Tp, Progress>>,
    workers: Mutex<HashMap<Tp, Worker>>,
    /// Partitions revoked since the loop last looked.
    revoked: Mutex<Vec<Tp>>,
    /// A drain was requested: a batch whose round of attempts failed is not delivered again.
    pub draining: AtomicBool,
}

impl Shared {
    /// Takes `tp` away: its worker is aborted (dropping a delivery in flight is safe by the sink
    /// contract) and its fence refuses every confirmation from now on; its offsets are dropped
    /// and the loop drops its buffer ([`forget_revoked`]). Returns the fence, to be closed
    /// ([`CommitFence::close`]) once every partition of the revoke was taken, and how many
    /// records were read and not confirmed.
    pub fn revoke(&self, tp: &Tp) -> (Option<Arc<CommitFence>>, u64) {
        let worker = lock(&self.workers).remove(tp);
        let fence = worker.map(|w| {
            w.task.abort();
            w.fence.refuse();
            w.fence
        });
        let read_not_confirmed = lock(&self.progress)
            .remove(tp)
            .map_or(0, |p| p.read_not_committed());
        lock(&self.revoked).push(tp.clone());
        (fence, read_not_confirmed)
    }

    /// Aborts every worker (the run ends with an error: nothing more is confirmed).
    pub fn abort_workers(&self) {
        for (_, w) in lock(&self.workers).drain() {
            w.task.abort();
        }
    }

    /// Lets every worker finish the batches it was handed, then returns.
    pub async fn finish_workers(&self) {
        let workers: Vec<Worker> = lock(&self.workers).drain().map(|(_, w)| w).collect();
        for worker in workers {
            drop(worker.queue);
            let _ = worker.task.await;
        }
    }

    /// Logs each partition's cursor, read position and batches in flight.
    pub fn log_progress(&self) {
        for ((topic, partition), p) in lock(&self.progress).iter() {
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
}

/// Drops the buffers and counters of the partitions revoked since the last call.
pub fn forget_revoked(
    shared: &Shared,
    pending: &mut HashMap<Tp, Pending>,
    meters: &mut HashMap<Tp, PartitionMeter>,
) {
    for tp in lock(&shared.revoked).drain(..) {
        pending.remove(&tp);
        meters.remove(&tp);
    }
}

/// What every worker needs besides its queue.
#[derive(Clone)]
pub struct WorkerKit {
    /// The one sink every partition writes to.
    pub sink: Arc<dyn Sink>,
    /// The driver's retry policy (also the backoff of refused confirmations).
    pub policy: RetryPolicy,
    /// `retry.commit_timeout_ms`: how long a refused confirmation is retried.
    pub commit_timeout: Duration,
    /// `retry.max_retry_duration_ms`: how long a batch is delivered again after its first
    /// failed round (`None`: as long as the destination answers `Retryable`).
    pub max_retry_duration: Option<Duration>,
    /// The broker's side.
    pub broker: Arc<dyn Broker>,
    /// State shared with the loop and the broker's callbacks.
    pub shared: Arc<Shared>,
    /// Where a worker reports the end of the run.
    pub failures: mpsc::UnboundedSender<Exit>,
    /// A partition whose worker took a batch off its queue: the loop hands it the next one at
    /// once (without it, a partition whose buffer is full but gets no new record waited for
    /// the next linger tick: one batch per linger on a paused or single partition).
    pub ready: mpsc::UnboundedSender<Tp>,
    /// The runtime's counts.
    pub metrics: Arc<Metrics>,
    /// The probes' state.
    pub health: Arc<Health>,
    /// The crash suites' control, if this build has them and the pipeline file names one.
    #[cfg(feature = "mutants")]
    pub mutant: Option<crate::mutants::Mutant>,
}

/// The channels a worker reports on: the end of the run, and that its queue has room.
pub struct Channels {
    /// Where a worker reports the end of the run.
    pub failures: mpsc::UnboundedSender<Exit>,
    /// Where a worker says it took a batch off its queue.
    pub ready: mpsc::UnboundedSender<Tp>,
}

impl WorkerKit {
    /// What the workers of a run share: `sink`, the `[retry]` policy and limits, the runtime's
    /// `broker`, and the mutant `[chaos]` names (with the `mutants` feature).
    pub fn new(
        sink: Arc<dyn Sink>,
        broker: Arc<dyn Broker>,
        shared: Arc<Shared>,
        channels: Channels,
        observed: (Arc<Metrics>, Arc<Health>),
        retry: &RetrySettings,
        chaos: &ChaosSettings,
    ) -> Self {
        let _ = chaos;
        Self {
            sink,
            policy: retry.policy(),
            commit_timeout: retry.commit_timeout(),
            max_retry_duration: retry.max_retry_duration(),
            broker,
            shared,
            failures: channels.failures,
            ready: channels.ready,
            metrics: observed.0,
            health: observed.1,
            #[cfg(feature = "mutants")]
            mutant: chaos.mutant,
        }
    }
}

/// The driver's hooks for one partition: confirm through the tracker, dead letters through
/// the broker.
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
        // A refused confirmation is retried before this partition delivers anything else:
        // what the sink wrote and the broker does not know about stays one batch. A revoked
        // partition's worker is aborted meanwhile; one that keeps failing past the timeout
        // stops the pipeline, which restarts from the confirmed position.
        let started = Instant::now();
        let mut failures = 0;
        loop {
            let error = match self.kit.broker.confirm(&self.tp, offset, &self.fence).await {
                Ok(true) => break,
                Ok(false) => {
                    debug!(batch = %batch, offset, "not committed: the partition was revoked, its next owner resumes from the committed offset");
                    return Ok(());
                }
                Err(e) => e,
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
            confirm_ahead(&self.kit, others);
        }
        debug!(batch = %batch, offset, attempts = failures + 1, "committed");
        Ok(())
    }

    async fn dead_letter(&mut self, letters: &[DeadLetter]) -> Result<(), String> {
        let Some(destination) = self.kit.broker.dead_letter_destination() else {
            let first = &letters[0];
            return Err(format!(
                "{} record(s) refused and no dead_letter topic is configured; first: {} ({})",
                letters.len(),
                first.record.id,
                first.reason
            ));
        };
        let destination = destination.to_owned();
        for letter in letters {
            let r = &letter.record;
            self.kit.broker.dead_letter(letter).await.map_err(|e| {
                format!(
                    "producing the dead letter of {} to {destination}: {e}",
                    r.id
                )
            })?;
            self.kit
                .metrics
                .dead_lettered(&r.id.topic, r.id.partition as i32);
            warn!(record = %r.id, reason = %letter.reason, topic = destination, "dead-lettered");
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

/// Confirms what a mutant runtime wants confirmed, without waiting for the broker, and takes
/// it as committed (so the honest path commits nothing lower).
#[cfg(feature = "mutants")]
fn confirm_ahead(kit: &WorkerKit, offsets: Vec<(Tp, u64)>) {
    if offsets.is_empty() {
        return;
    }
    if let Err(e) = kit.broker.confirm_ahead(&offsets) {
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

/// Hands as many batches of `tp`'s buffer to its worker as its queue takes (all of them when
/// `whole`), starting the worker at the partition's first batch, and pauses or resumes the
/// partition at the broker by how much stays buffered.
pub fn flush(
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
            confirm_ahead(kit, mutant.on_handed(tp, batch.id().last));
        }
        if queue.try_send(batch).is_err() {
            warn!(topic = %tp.0, partition = tp.1, "worker queue closed");
            break;
        }
    }
    let (high, high_bytes) = limits.pause_at();
    if !buffer.paused && (buffer.records.len() >= high || buffer.bytes >= high_bytes) {
        if kit.broker.pause(tp) {
            buffer.paused = true;
            debug!(topic = %tp.0, partition = tp.1, "paused: the sink is behind");
        }
    } else if buffer.paused
        && buffer.records.len() < high / 2
        && buffer.bytes < high_bytes / 2
        && kit.broker.resume(tp)
    {
        buffer.paused = false;
        debug!(topic = %tp.0, partition = tp.1, "resumed");
    }
}
