//! The pipeline: a consumer-group member reads its partitions into pico-runtime's buffers and
//! workers, which deliver each batch into the sink and only then store the group's offset.
//!
//! * **Assignment.** The member asks the group which partitions it owns every
//!   `iggy.assignment_interval_ms`, and at once when the server refuses a poll of a partition
//!   it lost. A partition it gained is read from the stored offset + 1; a partition it lost is
//!   revoked as under pico-kafka: its worker stops (the sink contract makes dropping a delivery
//!   in flight safe), its commit fence closes once a store already running returned, and
//!   nothing of it is stored afterwards (the server would refuse it anyway).
//! * **Polling.** Each owned partition is polled by offset from the member's own position,
//!   about a batch at a time, never with `auto_commit`.
//! * **Storing.** A worker stores offset *n − 1* when everything before *n* was confirmed by
//!   the sink (pico-runtime's tracker: never past the oldest record read and not confirmed).
//! * **Dead letters** go to an Iggy topic, with the record's value and headers and the
//!   `pico.dlq.*` headers, before the offset past them is stored.
//! * **A lost connection.** A request that fails for the connection (or gets no answer within
//!   [`crate::consumer::ANSWER_WITHIN`]) makes the member connect again with a new client and
//!   join the group again (the client's own reconnection can stall for good: `tests/runtime.rs`),
//!   then re-read its assignment; what it was handed before is stored only by the fence's rules.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use iggy::prelude::{HeaderKey, HeaderValue, IggyMessage};
use pico_runtime::Exit;
use pico_runtime::dead_letter::origin_headers;
use pico_runtime::fence::CommitFence;
use pico_runtime::health::Health;
use pico_runtime::lock;
use pico_runtime::metrics::{Metrics, PartitionMeter};
use pico_runtime::pending::{Pending, record_bytes};
use pico_runtime::start::{MetricsUnavailable, Started, start};
use pico_runtime::tracker::Tp;
use pico_runtime::worker::{Broker, Channels, Shared, WorkerKit, flush, forget_revoked};
use pico_sink::identity::iggy::IggySource;
use pico_sink::{DeadLetter, Sink};
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

use crate::METRICS_PREFIX;
use crate::config::Pipeline;
use crate::consumer::{ConsumerError, GroupMember, Polled, hide_password};
use crate::record::to_record;

/// How long a poll round that found nothing waits before the next.
const POLL_IDLE: Duration = Duration::from_millis(100);

/// How long the runtime tries to reach the server and join the group before it gives up
/// (exit code 1; a supervisor starts it again).
const JOIN_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest header key or value Iggy takes, bytes.
const HEADER_MAX: usize = 255;

/// Why the runtime could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The server could not be reached, the topic or group not found or created.
    #[error("{0}")]
    Iggy(String),
    /// The `[metrics]` listener could not bind its address.
    #[error(transparent)]
    Metrics(#[from] MetricsUnavailable),
}

/// The Iggy side of the worker: the group's offset stored up to the confirmed position, dead
/// letters sent to a topic.
struct IggyBroker {
    member: Arc<GroupMember>,
    dead_letters: Option<(IggySource, String)>,
    paused: Mutex<HashSet<Tp>>,
    handle: tokio::runtime::Handle,
}

#[async_trait]
impl Broker for IggyBroker {
    async fn confirm(
        &self,
        tp: &Tp,
        offset: u64,
        fence: &Arc<CommitFence>,
    ) -> Result<bool, String> {
        // Iggy stores the last offset written; `offset` is the first not written.
        let Some(last) = offset.checked_sub(1) else {
            return Ok(true);
        };
        let partition = u32::try_from(tp.1).map_err(|_| format!("no Iggy partition {}", tp.1))?;
        let (member, fence, handle) = (self.member.clone(), fence.clone(), self.handle.clone());
        // The fence lets a revoke wait for a store already running; it blocks, so the store
        // runs on a blocking thread.
        let store = move || fence.run(|| handle.block_on(member.store(partition, last)));
        match tokio::task::spawn_blocking(store).await {
            Ok(Some(Ok(()))) => Ok(true),
            Ok(Some(Err(e))) => Err(e.to_string()),
            Ok(None) => Ok(false),
            Err(e) => Err(format!("the store task failed: {e}")),
        }
    }

    fn dead_letter_destination(&self) -> Option<&str> {
        self.dead_letters.as_ref().map(|(_, name)| name.as_str())
    }

    async fn dead_letter(&self, letter: &DeadLetter) -> Result<(), String> {
        let Some((target, _)) = &self.dead_letters else {
            return Err("no dead_letter topic is configured".into());
        };
        let started = Instant::now();
        loop {
            let mut message = [dead_letter_message(letter)?];
            match self.member.send(target, &mut message).await {
                Ok(()) => return Ok(()),
                // The server is away: the main loop connects again, the letter waits (nothing
                // past its record is stored meanwhile).
                Err(e) if e.is_connection() && started.elapsed() < DEAD_LETTER_PATIENCE => {
                    warn!(error = %e, record = %letter.record.id, "consumer error: dead letter not produced yet, retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    fn pause(&self, tp: &Tp) -> bool {
        lock(&self.paused).insert(tp.clone());
        true
    }

    fn resume(&self, tp: &Tp) -> bool {
        lock(&self.paused).remove(tp);
        true
    }

    /// A mutant runtime's store of `offsets` at once, not waited for (the controls of the kill
    /// tests: storing before the sink wrote must be caught losing records).
    fn confirm_ahead(&self, offsets: &[(Tp, u64)]) -> Result<(), String> {
        for (tp, offset) in offsets {
            let (Ok(partition), Some(last)) = (u32::try_from(tp.1), offset.checked_sub(1)) else {
                continue;
            };
            let member = self.member.clone();
            self.handle.spawn(async move {
                if let Err(e) = member.store(partition, last).await {
                    warn!(error = %e, "mutant: its store was refused");
                }
            });
        }
        Ok(())
    }
}

/// A dead letter as an Iggy message: the record's value, its headers, then the `pico.dlq.*`
/// ones. Iggy takes header keys and values of at most 255 bytes: a longer one (a long reason,
/// a long topic) is cut on a character boundary, its end marked `…`.
fn dead_letter_message(letter: &DeadLetter) -> Result<IggyMessage, String> {
    let r = &letter.record;
    let mut headers = BTreeMap::new();
    let mut put = |key: &str, value: &[u8]| -> Result<(), String> {
        let key = HeaderKey::from_str(&cut(key)).map_err(|e| format!("header {key:?}: {e}"))?;
        let value = match std::str::from_utf8(value) {
            Ok(text) => HeaderValue::from_str(&cut(text)),
            Err(_) => HeaderValue::try_from(&value[..value.len().min(HEADER_MAX)]),
        }
        .map_err(|e| format!("header {key}: {e}"))?;
        headers.insert(key, value);
        Ok(())
    };
    for h in &r.headers {
        put(&h.name, &h.value)?;
    }
    for (key, value) in origin_headers(letter) {
        put(key, value.as_bytes())?;
    }
    IggyMessage::builder()
        .payload(r.value.clone())
        .user_headers(headers)
        .build()
        .map_err(|e| {
            format!(
                "the dead letter of {} cannot be an Iggy message ({e}); Iggy refuses an empty \
                 payload and one over its size limit",
                r.id
            )
        })
}

/// `text` cut to [`HEADER_MAX`] bytes on a character boundary, marked `…` when cut.
fn cut(text: &str) -> String {
    if text.len() <= HEADER_MAX {
        return text.to_owned();
    }
    let mut end = HEADER_MAX - '…'.len_utf8();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The runtime's name of an Iggy partition (pico-runtime numbers partitions as Kafka does).
fn tp(topic: &str, partition: u32) -> Tp {
    (
        topic.to_owned(),
        i32::try_from(partition).unwrap_or(i32::MAX),
    )
}

/// What the member owns, and where it reads next.
struct Owned {
    /// Each owned partition's next offset to poll.
    next: BTreeMap<u32, u64>,
    /// Each partition's last offset when last polled (for the lag).
    ends: HashMap<u32, u64>,
}

/// Asks the group which partitions this member owns: revokes the ones it lost, starts the
/// ones it gained after their stored offset. A member whose connection failed connects again;
/// one the server no longer counts joins again.
async fn sync(
    member: &GroupMember,
    owned: &mut Owned,
    shared: &Shared,
    (metrics, health): (&Metrics, &Health),
) -> Result<(), ConsumerError> {
    let assignment = match member.assignment().await {
        Ok(a) => a,
        Err(first) if first.is_connection() => {
            warn!(error = %first, "consumer error: connecting again with a new client");
            member.reconnect().await?;
            info!("connected again and joined the group");
            member.assignment().await?
        }
        Err(first) => {
            debug!(error = %first, "assignment not read: joining the group again");
            member.rejoin().await?;
            member.assignment().await?
        }
    };
    let now: BTreeSet<u32> = assignment.partitions.iter().copied().collect();
    let topic = member.source().topic().to_owned();
    let lost: Vec<u32> = owned
        .next
        .keys()
        .filter(|p| !now.contains(p))
        .copied()
        .collect();
    for partition in lost {
        owned.next.remove(&partition);
        owned.ends.remove(&partition);
        let tp = tp(&topic, partition);
        // Named as pico-kafka names it (Iggy's stored offset is its commit): the crash suite
        // reads one vocabulary from every runtime's log.
        let (fence, read_not_committed) = shared.revoke(&tp);
        if let Some(fence) = fence {
            // A store already running lands before the next owner reads the stored offset.
            let _ = tokio::task::spawn_blocking(move || fence.close()).await;
        }
        metrics.rebalanced("revoke");
        metrics.revoked(&tp.0, tp.1);
        health.assigned(-1);
        info!(topic = %tp.0, partition, read_not_committed, generation = assignment.generation, "partition revoked: polling stopped, nothing stored past what was confirmed");
    }
    for &partition in &now {
        if owned.next.contains_key(&partition) {
            continue;
        }
        let stored = member.stored(partition).await?;
        let from = stored.map_or(0, |s| s + 1);
        owned.next.insert(partition, from);
        metrics.rebalanced("assign");
        health.assigned(1);
        info!(topic = %topic, partition, ?stored, from, generation = assignment.generation, "partition assigned: reading after the stored offset");
    }
    Ok(())
}

/// How long a dead letter waits for the server to come back before the run stops with an
/// error (its record's offset is not stored, so a restart delivers it again).
const DEAD_LETTER_PATIENCE: Duration = Duration::from_secs(60);

/// What one round of polls answered, per partition.
type Round = Vec<(u32, Result<Polled, ConsumerError>)>;

/// Polls each partition of `wanted` once from its position.
async fn poll_round(member: &GroupMember, wanted: Vec<(u32, u64)>, count: u32) -> Round {
    let mut round = Vec::with_capacity(wanted.len());
    for (partition, from) in wanted {
        round.push((partition, member.poll(partition, from, count).await));
    }
    round
}

/// Whether any poll of `round` brought messages.
fn brought_messages(round: &Round) -> bool {
    round
        .iter()
        .any(|(_, p)| matches!(p, Ok(Polled::Messages { messages, .. }) if !messages.is_empty()))
}

/// Opens the sink (riding out a destination that is down), joins the group, then runs the
/// pipeline until `shutdown` completes (then drains, stores and leaves the group) or a batch
/// cannot be delivered.
pub async fn run(
    pipeline: &Pipeline,
    sink: Arc<dyn Sink>,
    shutdown: impl Future<Output = ()>,
) -> Result<Exit, StartError> {
    tokio::pin!(shutdown);
    let source = pipeline
        .iggy
        .source()
        .map_err(|e| StartError::Iggy(e.to_string()))?;
    let dead_letters = pipeline
        .dead_letters()
        .transpose()
        .map_err(|e| StartError::Iggy(e.to_string()))?;
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
    // The client retries a refused connection without end (what rides out an outage later):
    // joining is bounded, and a shutdown ends it.
    let joining = tokio::time::timeout(
        JOIN_TIMEOUT,
        GroupMember::join(&pipeline.iggy.url, &source, &pipeline.iggy.group),
    );
    let member = tokio::select! {
        biased;
        () = shutdown.as_mut() => return Ok(Exit::Drained),
        joined = joining => match joined {
            Ok(Ok(member)) => Arc::new(member),
            Ok(Err(e)) => return Err(StartError::Iggy(e.to_string())),
            Err(_) => {
                return Err(StartError::Iggy(format!(
                    "no Iggy server answered at {} within {JOIN_TIMEOUT:?}: check iggy.url and \
                     that the server is up",
                    hide_password(&pipeline.iggy.url)
                )));
            }
        },
    };
    if let Some(target) = &dead_letters {
        let exists = member
            .topic_exists(target)
            .await
            .map_err(|e| StartError::Iggy(e.to_string()))?;
        if !exists {
            return Err(StartError::Iggy(format!(
                "the dead-letter topic {} does not exist: create it (or name another in \
                 [dead_letter])",
                target.topic()
            )));
        }
    }
    let broker = Arc::new(IggyBroker {
        member: member.clone(),
        dead_letters: dead_letters.map(|d| {
            let name = d.topic().to_owned();
            (d, name)
        }),
        paused: Mutex::default(),
        handle: tokio::runtime::Handle::current(),
    });
    let shared = Arc::new(Shared::default());
    let (failures, mut failed) = mpsc::unbounded_channel();
    let (ready, mut wants_more) = mpsc::unbounded_channel();
    let batch = pipeline.batch.limits(sink.commit_policy());
    let kit = WorkerKit::new(
        sink,
        broker.clone(),
        shared.clone(),
        Channels { failures, ready },
        (metrics.clone(), health.clone()),
        &pipeline.retry,
        &pipeline.chaos,
    );
    let per_poll = u32::try_from(batch.max_records.max(1)).unwrap_or(u32::MAX);
    info!(
        group = %pipeline.iggy.group,
        topic = source.topic(),
        max_records = batch.max_records,
        max_bytes = batch.max_bytes,
        linger_ms = batch.linger_ms,
        "consuming"
    );

    let mut owned = Owned {
        next: BTreeMap::new(),
        ends: HashMap::new(),
    };
    let mut pending: HashMap<Tp, Pending> = HashMap::new();
    let mut meters: HashMap<Tp, PartitionMeter> = HashMap::new();
    let mut tick = tokio::time::interval((batch.linger() / 4).max(Duration::from_millis(10)));
    let progress_every = Duration::from_secs(pipeline.iggy.progress_secs.max(1));
    let sync_every = Duration::from_millis(pipeline.iggy.assignment_interval_ms);
    let (mut last_progress, mut next_sync) = (Instant::now(), Instant::now());
    let topic = source.topic().to_owned();
    // The round of polls in flight: kept across the loop's turns (a tick must not drop its
    // answers — an idle partition's would never be read, nor its lag reported) and started
    // again once answered, after POLL_IDLE when no poll brought anything.
    let mut polling: Option<Pin<Box<dyn Future<Output = Round> + Send + '_>>> = None;
    let mut idle_until = Instant::now();
    let ended = loop {
        health.turned();
        if Instant::now() >= next_sync {
            let before: Vec<u32> = owned.next.keys().copied().collect();
            if let Err(e) = sync(&member, &mut owned, &shared, (&metrics, &health)).await {
                warn!(error = %e, "consumer error: assignment not read, polling what was owned");
            }
            forget_revoked(&shared, &mut pending, &mut meters);
            if !owned.next.keys().copied().eq(before) {
                // Polls from positions of another assignment are not read.
                polling = None;
            }
            next_sync = Instant::now() + sync_every;
        }
        if polling.is_none() && Instant::now() >= idle_until {
            let wanted: Vec<(u32, u64)> = {
                let paused = lock(&broker.paused);
                owned
                    .next
                    .iter()
                    .filter(|(p, _)| !paused.contains(&tp(&topic, **p)))
                    .map(|(p, n)| (*p, *n))
                    .collect()
            };
            polling = Some(Box::pin(poll_round(&member, wanted, per_poll)));
        }
        tokio::select! {
            biased;
            () = &mut shutdown => break None,
            Some(exit) = failed.recv() => break Some(exit),
            Some(tp) = wants_more.recv() => {
                forget_revoked(&shared, &mut pending, &mut meters);
                flush(&tp, &mut pending, &kit, &batch, false);
            }
            round = async {
                match polling.as_mut() {
                    Some(round) => round.await,
                    None => std::future::pending().await,
                }
            }, if polling.is_some() => {
                polling = None;
                if !brought_messages(&round) {
                    idle_until = Instant::now() + POLL_IDLE;
                }
                for (partition, polled) in round {
                    match polled {
                        Ok(Polled::Messages { messages, end }) => {
                            if !owned.next.contains_key(&partition) {
                                continue;
                            }
                            owned.ends.insert(partition, end);
                            let tp = tp(&topic, partition);
                            for message in &messages {
                                let record = to_record(&source, partition, message);
                                let offset = record.id.offset;
                                owned.next.insert(partition, offset + 1);
                                {
                                    let mut progress = lock(&shared.progress);
                                    let p = progress.entry(tp.clone()).or_default();
                                    if p.read_position().is_some_and(|r| offset < r) {
                                        continue;
                                    }
                                    p.read(offset);
                                }
                                meters
                                    .entry(tp.clone())
                                    .or_insert_with(|| metrics.partition(&tp.0, tp.1))
                                    .read(record_bytes(&record));
                                pending.entry(tp.clone()).or_default().push(record);
                            }
                            if pending.get(&tp).is_some_and(|b| {
                                b.records.len() >= batch.max_records || b.bytes >= batch.max_bytes
                            }) {
                                flush(&tp, &mut pending, &kit, &batch, false);
                            }
                        }
                        Ok(Polled::NotOwned) => {
                            debug!(partition, "poll refused: the group gave the partition to another member");
                            next_sync = Instant::now();
                        }
                        Err(e) => {
                            warn!(error = %e, "consumer error: poll failed");
                            // A failed connection is mended by the next sync.
                            let wait = if e.is_connection() { Duration::ZERO } else { sync_every.min(Duration::from_millis(200)) };
                            next_sync = next_sync.min(Instant::now() + wait);
                        }
                    }
                }
            }
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
                // A paused partition is flushed as soon as its worker takes more.
                let paused: Vec<Tp> = lock(&broker.paused).iter().cloned().collect();
                for tp in paused {
                    flush(&tp, &mut pending, &kit, &batch, false);
                }
                if last_progress.elapsed() >= progress_every {
                    last_progress = Instant::now();
                    shared.log_progress();
                }
                if pipeline.metrics.is_some() {
                    for (partition, next) in &owned.next {
                        if let Some(end) = owned.ends.get(partition) {
                            let lag = (end + 1).saturating_sub(*next);
                            let (_, partition) = tp(&topic, *partition);
                            metrics.lag(&topic, partition, i64::try_from(lag).unwrap_or(i64::MAX));
                        }
                    }
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
    // Leaving hands the partitions to the other members at once, from the offsets stored.
    if let Err(e) = member.leave().await {
        warn!(error = %e, "leaving the group");
    }
    info!("drained: every message read was delivered and its offset stored");
    Ok(Exit::Drained)
}
