//! The consumer loop: one durable pull consumer (one partition of the identity), its messages
//! cut into batches and delivered by pico-runtime's partition worker into the sink, every
//! message acknowledged only once the sink confirmed it and every earlier one.
//!
//! * **Acknowledge**: the worker confirms a position (the next stream sequence not
//!   confirmed, never past the oldest one read and not confirmed); the runtime then acks each
//!   message held below it, the last one as a request the server answers, so a confirmation
//!   that returned was processed. A refused one is retried before anything else is delivered.
//! * **Redelivery**: a message delivered again (its `ack_wait` passed) while this process still
//!   holds it is not handed to the sink twice: its newer reply subject replaces the older.
//! * **Stream order**: JetStream redelivers a message once its `ack_wait` passed, after later
//!   ones were delivered — the messages a killed process held come back to its successor after
//!   the new ones. Every message pulled waits in the stream-order gate (`gate.rs`) until the
//!   server counts no message delivered and unacknowledged outside this process, then goes to
//!   the sink in stream order: a sink keeping a watermark never sees a message after a later
//!   one it wrote.
//! * **One process per durable**: only the holder of the durable's lease ([`crate::lease`])
//!   pulls; another process waits as a standby until it expires or is given up at a drain. No
//!   acknowledgement or in-progress acknowledgement is sent once the lease may have lapsed.
//! * **Out of order** still: an acknowledgement lost on the way brings its (written) message
//!   back below the confirmed position. Acknowledging by position must never cover a message
//!   this process did not write, so one below the read position and not held is never taken
//!   for confirmed: everything read before it is first written and acknowledged, the positions
//!   start again from it, and it is written again (a keyed sink holds it once, a watermark
//!   sink tells it already present).
//! * **Slow sink**: every third of `ack_wait`, each message held gets an in-progress
//!   acknowledgement, so the server does not deliver it again while it waits or is written.
//! * **Dead letters**: published through JetStream to `[dead_letter] subject` (the stream that
//!   captures it acknowledges each) before the position past them is confirmed.
//! * **Pulling**: explicit pull requests of about one batch, each waiting at most 500 ms, not
//!   a continuous stream that prefetches: nothing is delivered to the process that it has not
//!   read.
//! * **Shutdown**: the pull request in flight is read to its end, everything held is delivered
//!   and acknowledged, then [`run`] returns [`Exit::Drained`].

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::consumer::{AckPolicy, PullConsumer, pull};
use async_nats::jetstream::{self, Context};
use async_nats::{HeaderMap, Subject};
use async_trait::async_trait;
use futures_util::StreamExt;
use futures_util::stream::Fuse;
use pico_runtime::Exit;
use pico_runtime::dead_letter::origin_headers;
use pico_runtime::fence::CommitFence;
use pico_runtime::lock;
use pico_runtime::metrics::{Metrics, PartitionMeter};
use pico_runtime::pending::{Pending, record_bytes};
use pico_runtime::settings::BatchLimits;
use pico_runtime::start::{MetricsUnavailable, Started, start};
use pico_runtime::tracker::{Progress, Tp};
use pico_runtime::worker::{Broker, Channels, Shared, WorkerKit, flush, forget_revoked};
use pico_sink::identity::jetstream::JetStreamSource;
use pico_sink::{DeadLetter, Sink};
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

use crate::METRICS_PREFIX;
use crate::config::Pipeline;
use crate::consumer::pull_config;
use crate::gate::{self, Gate};
use crate::lease::Lease;
use crate::record::to_record;

/// The acknowledgement of a message, as JetStream's protocol spells it.
const ACK: &str = "+ACK";
/// An in-progress acknowledgement: the server restarts the message's `ack_wait`.
const IN_PROGRESS: &str = "+WPI";

/// Why the runtime could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The server could not be reached, or the stream or consumer not found or created.
    #[error("jetstream: {0}")]
    JetStream(String),
    /// The durable exists with settings that would lose messages: the text says which.
    #[error("{0}")]
    Consumer(String),
    /// The `[metrics]` listener could not bind its address.
    #[error(transparent)]
    Metrics(#[from] MetricsUnavailable),
}

/// The reply subject of each message read and not acknowledged, by stream sequence.
type Held = Arc<Mutex<BTreeMap<u64, Subject>>>;

/// The JetStream side of the worker: explicit acks up to the confirmed position, dead letters
/// published through JetStream.
struct JetStreamBroker {
    client: async_nats::Client,
    js: Context,
    /// The reply subject of each message read and not acknowledged, by stream sequence.
    held: Held,
    dead_letters: Option<String>,
    lease: Arc<Lease>,
}

#[async_trait]
impl Broker for JetStreamBroker {
    async fn confirm(&self, _: &Tp, offset: u64, _: &Arc<CommitFence>) -> Result<bool, String> {
        if !self.lease.valid() {
            return Err(
                "the durable's lease was not renewed in time: nothing acknowledged \
                        (another process may hold it)"
                    .into(),
            );
        }
        let acked: Vec<(u64, Subject)> = {
            let mut held = lock(&self.held);
            let rest = held.split_off(&offset);
            std::mem::replace(&mut *held, rest).into_iter().collect()
        };
        let Some(((_, last), earlier)) = acked.split_last() else {
            return Ok(true);
        };
        let sent = async {
            for (_, reply) in earlier {
                self.client
                    .publish(reply.clone(), ACK.into())
                    .await
                    .map_err(|e| e.to_string())?;
            }
            // The server answers an ack sent as a request once it processed it, after the
            // earlier ones of this connection.
            self.client
                .request(last.clone(), ACK.into())
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        match sent.await {
            Ok(()) => Ok(true),
            Err(e) => {
                // Held again: the retry acknowledges them.
                lock(&self.held).extend(acked);
                Err(e)
            }
        }
    }

    fn dead_letter_destination(&self) -> Option<&str> {
        self.dead_letters.as_deref()
    }

    async fn dead_letter(&self, letter: &DeadLetter) -> Result<(), String> {
        let Some(subject) = &self.dead_letters else {
            return Err("no dead_letter subject is configured".into());
        };
        let r = &letter.record;
        let mut headers = HeaderMap::new();
        for h in &r.headers {
            headers.append(h.name.as_str(), String::from_utf8_lossy(&h.value).as_ref());
        }
        for (key, value) in origin_headers(letter) {
            headers.insert(key, value.as_str());
        }
        self.js
            .publish_with_headers(subject.clone(), headers, r.value.clone())
            .await
            .map_err(|e| e.to_string())?
            .await
            .map(|_| ())
            .map_err(|e| format!("{e} (does a stream capture {subject}?)"))
    }

    fn pause(&self, _: &Tp) -> bool {
        true
    }

    fn resume(&self, _: &Tp) -> bool {
        true
    }

    /// A mutant runtime's acknowledgement of every message held below `offsets`, at once and
    /// not waited for (the controls of the kill tests: acknowledging before the sink wrote
    /// must be caught losing messages).
    fn confirm_ahead(&self, offsets: &[(Tp, u64)]) -> Result<(), String> {
        for (_, offset) in offsets {
            let acked: Vec<Subject> = {
                let mut held = lock(&self.held);
                let rest = held.split_off(offset);
                std::mem::replace(&mut *held, rest).into_values().collect()
            };
            let client = self.client.clone();
            tokio::spawn(async move {
                for reply in acked {
                    if let Err(e) = client.publish(reply, ACK.into()).await {
                        warn!(error = %e, "mutant: its acknowledgement was not sent");
                    }
                }
            });
        }
        Ok(())
    }
}

/// The durable consumer, created if missing; an existing one must acknowledge explicitly and
/// never give a message up.
async fn durable(
    js: &Context,
    pipeline: &Pipeline,
    source: &JetStreamSource,
) -> Result<PullConsumer, StartError> {
    let settings = pipeline.jetstream.consumer();
    let stream = js
        .get_stream(source.stream())
        .await
        .map_err(|e| StartError::JetStream(format!("stream {}: {e}", source.stream())))?;
    let mut consumer: PullConsumer = stream
        .get_or_create_consumer(&settings.durable, pull_config(source, &settings))
        .await
        .map_err(|e| StartError::JetStream(format!("consumer {}: {e}", settings.durable)))?;
    let config = &consumer
        .info()
        .await
        .map_err(|e| StartError::JetStream(e.to_string()))?
        .config;
    if config.ack_policy != AckPolicy::Explicit || config.max_deliver > 0 {
        return Err(StartError::Consumer(format!(
            "the durable {} exists with ack_policy {:?} and max_deliver {}: pico-nats needs \
             explicit acks and unlimited deliveries (anything else can lose messages); delete \
             it or name another jetstream.durable",
            settings.durable, config.ack_policy, config.max_deliver
        )));
    }
    if config.filter_subject != source.filter().unwrap_or_default() {
        return Err(StartError::Consumer(format!(
            "the durable {} reads {:?}, the pipeline's filter is {:?}: the filter is part of each \
             record's identity; name another jetstream.durable for another filter",
            settings.durable,
            config.filter_subject,
            source.filter().unwrap_or_default()
        )));
    }
    Ok(consumer)
}

/// Where a delivered stream sequence stands.
enum Seen {
    /// Read before and not acknowledged yet: buffered or being written.
    Held,
    /// Below the read position and not held: delivered out of order (see the module's
    /// documentation). Not taken as read.
    Behind,
    /// Above everything read: taken as read.
    New,
}

/// Where `seq` of `tp` stands; a new one is taken as read.
fn seen_before(shared: &Shared, held: &Mutex<BTreeMap<u64, Subject>>, tp: &Tp, seq: u64) -> Seen {
    if lock(held).contains_key(&seq) {
        return Seen::Held;
    }
    let mut progress = lock(&shared.progress);
    let p = progress.entry(tp.clone()).or_default();
    if p.read_position().is_some_and(|r| seq < r) {
        Seen::Behind
    } else {
        p.read(seq);
        Seen::New
    }
}

/// What [`Reader::take`] did with a message.
enum Taken {
    /// Buffered, or dropped as a redelivery of one held (or as no consumer's message).
    Done,
    /// Delivered out of order: given back, to be taken again after [`Reader::realign`].
    Behind(Box<jetstream::Message>),
}

/// How long one pull request waits for its messages before it ends with fewer.
const PULL_WAIT: Duration = Duration::from_millis(500);

/// One pull request of up to `n` messages: it ends once they arrived or after [`PULL_WAIT`].
/// Explicit requests (not a continuous stream) leave nothing delivered and unread when the
/// loop stops asking: a drain reads the request in flight to its end and delivers it. Fused:
/// once ended it stays ended, whoever read its end.
async fn request(consumer: &PullConsumer, n: usize) -> Result<Pulled, String> {
    consumer
        .batch()
        .max_messages(n)
        .expires(PULL_WAIT)
        .messages()
        .await
        .map(StreamExt::fuse)
        .map_err(|e| e.to_string())
}

/// The messages of one pull request.
type Pulled = Fuse<pull::Batch>;

/// What turns delivered messages into buffered records.
struct Reader {
    source: JetStreamSource,
    tp: Tp,
    ack_wait: Duration,
    shared: Arc<Shared>,
    held: Held,
    metrics: Arc<Metrics>,
    lease: Arc<Lease>,
}

impl Reader {
    /// Buffers `message` in `pending` unless it is a redelivery of one held; gives it back if
    /// it came out of order.
    fn take(
        &self,
        message: jetstream::Message,
        pending: &mut HashMap<Tp, Pending>,
        meters: &mut HashMap<Tp, PartitionMeter>,
    ) -> Taken {
        let record = match to_record(&self.source, &message) {
            Ok(r) => r,
            Err(e) => {
                warn!(error = %e, "not a consumer's message: skipped");
                return Taken::Done;
            }
        };
        let Some(reply) = message.reply.clone() else {
            return Taken::Done;
        };
        let seq = record.id.offset;
        match seen_before(&self.shared, &self.held, &self.tp, seq) {
            Seen::Held => {
                // Buffered or being written: its newer reply subject replaces the older.
                lock(&self.held).insert(seq, reply);
                debug!(seq, "delivered again while held: not handed on twice");
                return Taken::Done;
            }
            Seen::Behind => {
                info!(
                    seq,
                    "delivered out of order: everything read before it is written first"
                );
                return Taken::Behind(Box::new(message));
            }
            Seen::New => {}
        }
        lock(&self.held).insert(seq, reply);
        let tp = &self.tp;
        meters
            .entry(tp.clone())
            .or_insert_with(|| self.metrics.partition(&tp.0, tp.1))
            .read(record_bytes(&record));
        pending.entry(tp.clone()).or_default().push(record);
        Taken::Done
    }

    /// [`Reader::take`]; when `message` came out of order, everything read before it is
    /// written and acknowledged first ([`Reader::realign`]), then it is taken.
    async fn take_in_order(
        &self,
        message: jetstream::Message,
        (pulled, gate): (&mut Pulled, &Gate),
        (pending, meters): (&mut HashMap<Tp, Pending>, &mut HashMap<Tp, PartitionMeter>),
        (kit, limits): (&WorkerKit, &BatchLimits),
        failed: &mut mpsc::UnboundedReceiver<Exit>,
    ) -> Result<(), Exit> {
        let Taken::Behind(message) = self.take(message, pending, meters) else {
            return Ok(());
        };
        self.realign((pulled, gate), pending, (kit, limits), failed)
            .await?;
        // The positions start again from it: taken as new. (One given back would stay
        // unacknowledged and come again after its `ack_wait`: nothing is lost.)
        let _ = self.take(*message, pending, meters);
        Ok(())
    }

    /// Hands everything buffered to the worker and waits until the sink confirmed and the
    /// server acknowledged all of it, then forgets the partition's positions: the next message
    /// taken starts them again. Meanwhile the rest of the pull request in flight waits in the
    /// `gate` (left unread, it would come again out of order). Ends early with the run's exit
    /// if a batch cannot be delivered.
    async fn realign(
        &self,
        (pulled, gate): (&mut Pulled, &Gate),
        pending: &mut HashMap<Tp, Pending>,
        (kit, limits): (&WorkerKit, &BatchLimits),
        failed: &mut mpsc::UnboundedReceiver<Exit>,
    ) -> Result<(), Exit> {
        let tp = &self.tp;
        let settled = || {
            lock(&self.shared.progress)
                .get(tp)
                .is_none_or(Progress::nothing_unacked)
        };
        let mut request_open = true;
        flush(tp, pending, kit, limits, true);
        while pending.get(tp).is_some_and(|p| !p.records.is_empty()) || !settled() {
            tokio::select! {
                Some(exit) = failed.recv() => return Err(exit),
                message = pulled.next(), if request_open => match message {
                    Some(Ok(m)) => self.park(m, gate),
                    Some(Err(e)) => warn!(error = %e, "consumer error"),
                    None => request_open = false,
                },
                () = tokio::time::sleep(Duration::from_millis(10)) => flush(tp, pending, kit, limits, true),
            }
        }
        lock(&self.shared.progress).insert(tp.clone(), Progress::default());
        info!(
            waiting = gate.len(),
            "realigned: everything read before is acknowledged; reading on in stream order"
        );
        Ok(())
    }

    /// Puts `message` in the `gate`, unless it is a redelivery of one held (buffered or being
    /// written): then its newer reply subject replaces the older.
    fn park(&self, message: jetstream::Message, gate: &Gate) {
        let Ok(seq) = message.info().map(|i| i.stream_sequence) else {
            warn!("a message without JetStream metadata: skipped");
            return;
        };
        if let Some(reply) = &message.reply {
            let mut held = lock(&self.held);
            if let Some(older) = held.get_mut(&seq) {
                *older = reply.clone();
                debug!(seq, "delivered again while held: not handed on twice");
                return;
            }
        }
        gate.park(seq, message);
    }

    /// Takes every message waiting in the `gate`, in stream order, once the server counts no
    /// more messages delivered and unacknowledged than this process holds ([`gate`]); else
    /// leaves them waiting. Fills and hands on batches as it goes.
    async fn release(
        &self,
        consumer: &mut PullConsumer,
        (pulled, gate): (&mut Pulled, &Gate),
        (pending, meters): (&mut HashMap<Tp, Pending>, &mut HashMap<Tp, PartitionMeter>),
        (kit, limits): (&WorkerKit, &BatchLimits),
        failed: &mut mpsc::UnboundedReceiver<Exit>,
    ) -> Result<(), Exit> {
        if gate.is_empty() {
            return Ok(());
        }
        gate.checked();
        if !self.lease.valid() {
            if gate.first_long_wait(self.ack_wait / 10) {
                warn!(
                    waiting = gate.len(),
                    "consumer error: messages wait while the durable's lease may have lapsed (its renewal is late)"
                );
            }
            return Ok(());
        }
        let outstanding = match consumer.info().await {
            Ok(info) => info.num_ack_pending,
            Err(e) => {
                warn!(error = %e, "consumer error: its count of unacknowledged messages not read; messages wait");
                return Ok(());
            }
        };
        let held = lock(&self.held).len();
        if !gate::all_here(outstanding, held, gate.len()) {
            if gate.first_long_wait(self.ack_wait / 10) {
                info!(
                    outstanding,
                    held,
                    waiting = gate.len(),
                    "messages wait for earlier ones delivered elsewhere (a process before this one, or a lost pull), which come back after ack_wait: the sink gets them in stream order"
                );
            }
            return Ok(());
        }
        let tp = &self.tp;
        for message in gate.release() {
            self.take_in_order(
                message,
                (pulled, gate),
                (pending, meters),
                (kit, limits),
                failed,
            )
            .await?;
            if pending.get(tp).is_some_and(|b| {
                b.records.len() >= limits.max_records || b.bytes >= limits.max_bytes
            }) {
                flush(tp, pending, kit, limits, false);
            }
        }
        Ok(())
    }
}

/// Sends an in-progress acknowledgement for every message held or waiting in the gate, every
/// third of `ack_wait`.
fn keep_held_alive(
    client: async_nats::Client,
    (held, gate, lease): (Held, Gate, Arc<Lease>),
    ack_wait: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let every = (ack_wait / 3).max(Duration::from_millis(100));
        loop {
            tokio::time::sleep(every).await;
            // Without the lease, what this process holds must come back to the holder.
            if !lease.valid() {
                continue;
            }
            let mut replies: Vec<Subject> = lock(&held).values().cloned().collect();
            replies.extend(gate.replies());
            for reply in replies {
                if let Err(e) = client.publish(reply, IN_PROGRESS.into()).await {
                    warn!(error = %e, "in-progress acknowledgement not sent");
                }
            }
        }
    })
}

/// Renews `lease` every third of its time to live; once it is lost (refused, or not renewed
/// in time) the run ends with [`Exit::GaveUp`] on `failures`: restarted, the process waits as
/// a standby.
fn keep_lease(
    lease: Arc<Lease>,
    failures: mpsc::UnboundedSender<Exit>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(lease.renew_every()).await;
            if let Err(e) = lease.renew().await {
                if lease.valid() {
                    warn!(error = %e, "consumer error: the lease not renewed yet, trying again");
                    continue;
                }
                let _ = failures.send(Exit::GaveUp(format!(
                    "{e}: another process may consume the durable now; restarted, this one waits \
                     as a standby"
                )));
                return;
            }
        }
    })
}

/// Opens the sink (riding out a destination that is down), then runs the pipeline until
/// `shutdown` completes (then drains) or a batch cannot be delivered.
pub async fn run(
    pipeline: &Pipeline,
    sink: Arc<dyn Sink>,
    shutdown: impl Future<Output = ()>,
) -> Result<Exit, StartError> {
    tokio::pin!(shutdown);
    let source = pipeline
        .jetstream
        .source()
        .map_err(|e| StartError::Consumer(e.to_string()))?;
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
    let client = async_nats::ConnectOptions::new()
        .event_callback(|event| async move { connection_event(&event) })
        .connect(&pipeline.jetstream.url)
        .await
        .map_err(|e| StartError::JetStream(format!("{}: {e}", pipeline.jetstream.url)))?;
    let js = jetstream::new(client.clone());
    let mut consumer = durable(&js, pipeline, &source).await?;
    let durable_key = (source.stream(), pipeline.jetstream.durable.as_str());
    let lease_ttl = Duration::from_millis(pipeline.jetstream.lease_ms);
    let Some(lease) = Lease::take(&js, durable_key, lease_ttl, shutdown.as_mut())
        .await
        .map_err(StartError::JetStream)?
    else {
        info!("shutdown requested while standby: nothing was read");
        return Ok(Exit::Drained);
    };
    let lease = Arc::new(lease);
    health.assigned(1);
    let held: Held = Arc::default();
    let gate = Gate::default();
    let keeper = keep_held_alive(
        client.clone(),
        (held.clone(), gate.clone(), lease.clone()),
        Duration::from_millis(pipeline.jetstream.ack_wait_ms),
    );
    let broker = Arc::new(JetStreamBroker {
        client: client.clone(),
        js: js.clone(),
        held: held.clone(),
        dead_letters: pipeline.dead_letter.as_ref().map(|d| d.subject.clone()),
        lease: lease.clone(),
    });
    let shared = Arc::new(Shared::default());
    let (failures, mut failed) = mpsc::unbounded_channel();
    let renewer = keep_lease(lease.clone(), failures.clone());
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
    let tp: Tp = (source.topic().to_owned(), 0);
    // Each request asks for about a batch, within what the server hands out unacknowledged.
    let per_request = batch.max_records.clamp(
        1,
        usize::try_from(pipeline.jetstream.max_ack_pending).unwrap_or(usize::MAX),
    );
    let mut pulled = request(&consumer, per_request)
        .await
        .map_err(StartError::JetStream)?;
    let reader = Reader {
        source: source.clone(),
        tp: tp.clone(),
        ack_wait: Duration::from_millis(pipeline.jetstream.ack_wait_ms),
        shared: shared.clone(),
        held: held.clone(),
        metrics: metrics.clone(),
        lease: lease.clone(),
    };
    // In the vocabulary every runtime logs (the crash suite reads it): the durable consumer is
    // the group, and its one partition is this process's from the start.
    info!(
        group = %pipeline.jetstream.durable,
        stream = source.stream(),
        filter = source.filter().unwrap_or_default(),
        max_records = batch.max_records,
        max_bytes = batch.max_bytes,
        linger_ms = batch.linger_ms,
        "consuming"
    );
    info!(topic = %tp.0, partition = tp.1, "partition assigned: the durable consumer's one partition, from its ack floor");

    let mut pending: HashMap<Tp, Pending> = HashMap::new();
    let mut meters: HashMap<Tp, PartitionMeter> = HashMap::new();
    let mut tick = tokio::time::interval((batch.linger() / 4).max(Duration::from_millis(10)));
    let progress_every = Duration::from_secs(pipeline.jetstream.progress_secs.max(1));
    let probes = pipeline.metrics.clone().unwrap_or_default();
    let lag_every = Duration::from_millis(probes.lag_interval_ms.max(1));
    let (mut last_progress, mut last_lag) = (Instant::now(), Instant::now());
    let ended = loop {
        health.turned();
        let paused = pending.get(&tp).is_some_and(|p| p.paused);
        tokio::select! {
            biased;
            () = &mut shutdown => break None,
            Some(exit) = failed.recv() => break Some(exit),
            Some(tp) = wants_more.recv() => {
                forget_revoked(&shared, &mut pending, &mut meters);
                flush(&tp, &mut pending, &kit, &batch, false);
            }
            message = pulled.next(), if !paused => match message {
                Some(Ok(m)) => {
                    reader.park(m, &gate);
                    if gate.len() >= per_request
                        && let Err(exit) = reader.release(&mut consumer, (&mut pulled, &gate), (&mut pending, &mut meters), (&kit, &batch), &mut failed).await
                    {
                        break Some(exit);
                    }
                }
                Some(Err(e)) => {
                    warn!(error = %e, "consumer error");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                None => {
                    if let Err(exit) = reader.release(&mut consumer, (&mut pulled, &gate), (&mut pending, &mut meters), (&kit, &batch), &mut failed).await {
                        break Some(exit);
                    }
                    match request(&consumer, per_request).await {
                        Ok(next) => pulled = next,
                        Err(e) => {
                            warn!(error = %e, "pull request refused: asking again");
                            tokio::time::sleep(Duration::from_millis(200)).await;
                        }
                    }
                }
            },
            _ = tick.tick() => {
                if gate.check_due()
                    && let Err(exit) = reader.release(&mut consumer, (&mut pulled, &gate), (&mut pending, &mut meters), (&kit, &batch), &mut failed).await
                {
                    break Some(exit);
                }
                let due = pending
                    .get(&tp)
                    .is_some_and(|p| !p.records.is_empty() && p.since.elapsed() >= batch.linger());
                if due || paused {
                    flush(&tp, &mut pending, &kit, &batch, false);
                }
                if last_progress.elapsed() >= progress_every {
                    last_progress = Instant::now();
                    shared.log_progress();
                }
                if pipeline.metrics.is_some() && last_lag.elapsed() >= lag_every {
                    last_lag = Instant::now();
                    if let Ok(info) = consumer.info().await {
                        metrics.lag(&tp.0, tp.1, i64::try_from(info.num_pending).unwrap_or(i64::MAX));
                    }
                }
            }
        }
    };
    if let Some(exit) = ended {
        shared.abort_workers();
        keeper.abort();
        renewer.abort();
        return Ok(exit);
    }
    info!("shutdown requested: draining");
    shared.draining.store(true, Ordering::SeqCst);
    health.draining();
    // The pull request in flight is read to its end: nothing stays delivered and unread.
    while let Some(m) = pulled.next().await {
        match m {
            Ok(m) => reader.park(m, &gate),
            Err(e) => warn!(error = %e, "consumer error while draining"),
        }
    }
    // An acknowledgement on its way keeps the server's count above what is held for a moment:
    // a few tries before the waiting messages are left to the next process.
    for _ in 0..10 {
        if gate.is_empty() {
            break;
        }
        if let Err(exit) = reader
            .release(
                &mut consumer,
                (&mut pulled, &gate),
                (&mut pending, &mut meters),
                (&kit, &batch),
                &mut failed,
            )
            .await
        {
            shared.abort_workers();
            keeper.abort();
            renewer.abort();
            return Ok(exit);
        }
        if !gate.is_empty() {
            tokio::time::sleep(gate::CHECK_EVERY).await;
        }
    }
    if !gate.is_empty() {
        info!(
            waiting = gate.len(),
            "messages not delivered: they wait for earlier ones delivered elsewhere; unacknowledged, they come to the next process"
        );
    }
    flush(&tp, &mut pending, &kit, &batch, true);
    while pending.get(&tp).is_some_and(|p| !p.records.is_empty()) {
        tokio::select! {
            Some(exit) = failed.recv() => { shared.abort_workers(); keeper.abort();
        renewer.abort(); return Ok(exit); }
            () = tokio::time::sleep(Duration::from_millis(20)) => flush(&tp, &mut pending, &kit, &batch, true),
        }
    }
    shared.finish_workers().await;
    keeper.abort();
    renewer.abort();
    if let Ok(exit) = failed.try_recv() {
        return Ok(exit);
    }
    shared.log_progress();
    lease.release().await;
    info!("drained: every message read was delivered and acknowledged");
    Ok(Exit::Drained)
}

/// Logs what happened to the connection: the client reconnects by itself, so a lost
/// connection is otherwise silent while pulls wait (the crash suite counts these lines as the
/// consumer errors of a broker outage).
fn connection_event(event: &async_nats::Event) {
    match event {
        async_nats::Event::Disconnected => {
            warn!("consumer error: disconnected from nats-server, reconnecting");
        }
        async_nats::Event::Connected => info!("connected to nats-server"),
        async_nats::Event::ServerError(e) => warn!(error = %e, "consumer error: server error"),
        async_nats::Event::ClientError(e) => warn!(error = %e, "consumer error: client error"),
        other => debug!(event = %other, "connection event"),
    }
}
