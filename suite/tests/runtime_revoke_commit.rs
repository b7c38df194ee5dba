//! pico-kafka used as a library against a real Kafka-protocol broker (tansu started natively,
//! Kafka through docker, or `PICO_KAFKA_BROKERS`): an offset commit still in flight when its
//! partition is revoked must not land after the next owner committed further, which would move
//! the group's offset back. Member A's every commit is slowed on purpose (`[chaos]
//! commit_delay_ms`); member B joins while A's first commits are in flight, so each partition is
//! revoked from A during a commit. Once both members stopped, every partition's committed
//! offset, read back from the broker, must be the partition's end. Where no broker can be
//! provided, the test prints a loud SKIPPED line.

#![allow(clippy::unwrap_used)] // test helpers may panic

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use pico_kafka::runtime::Exit;
use pico_sink::identity::Scope;
use pico_sink::{Batch, Description, Outcome, Sink, SinkError};
use pico_sink_stdout::StdoutSink;
use pico_suite::crash::{PARTITIONS, committed};
use tokio::sync::oneshot;

/// Records produced to each partition: two batches of [`BATCH`].
const PER_PARTITION: u64 = 60;
/// Records per batch.
const BATCH: u64 = 30;
/// How long each of member A's commits waits once started: longer than B's join, the
/// rebalance and B's own commits of the partitions it takes over.
const COMMIT_DELAY: Duration = Duration::from_secs(10);

/// Writes through a stdout sink into memory and counts its batches.
struct Counting {
    inner: StdoutSink<Vec<u8>>,
    batches: Arc<AtomicUsize>,
}

#[async_trait]
impl Sink for Counting {
    async fn open(&self) -> Result<(), SinkError> {
        self.inner.open().await
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let outcome = self.inner.consume(batch).await;
        self.batches.fetch_add(1, Ordering::SeqCst);
        outcome
    }

    async fn close(&self) -> Result<(), SinkError> {
        self.inner.close().await
    }

    fn describe(&self) -> Description {
        self.inner.describe()
    }
}

/// One group member running in the background until told to drain.
struct Member {
    stop: oneshot::Sender<()>,
    run: tokio::task::JoinHandle<Exit>,
    batches: Arc<AtomicUsize>,
}

fn start(brokers: &str, group: &str, topic: &str, chaos: &str) -> Member {
    let pipeline = pico_kafka::Pipeline::from_toml(&format!(
        "[kafka]\nbrokers = \"{brokers}\"\ngroup = \"{group}\"\ntopics = [\"{topic}\"]\n\
         [kafka.properties]\n\"session.timeout.ms\" = \"6000\"\n\"heartbeat.interval.ms\" = \"500\"\n\n\
         [batch]\nmax_records = {BATCH}\nlinger_ms = 50\n\n[sink]\nkind = \"stdout\"\n\n[chaos]\n{chaos}\n"
    ))
    .unwrap();
    let batches = Arc::new(AtomicUsize::new(0));
    let sink = Arc::new(Counting {
        inner: StdoutSink::to_writer(Vec::new(), Scope::default()),
        batches: batches.clone(),
    });
    let (stop, stopped) = oneshot::channel::<()>();
    let run = tokio::spawn(async move {
        pico_kafka::run(&pipeline, sink, async {
            let _ = stopped.await;
        })
        .await
        .unwrap()
    });
    Member { stop, run, batches }
}

impl Member {
    /// Drains the member and returns how it ended.
    async fn drain(self) -> Exit {
        let _ = self.stop.send(());
        tokio::time::timeout(Duration::from_secs(60), self.run)
            .await
            .expect("the member did not drain within 60 s")
            .unwrap()
    }
}

/// Waits up to `within` until `ready` holds.
async fn wait_for(within: Duration, what: &str, mut ready: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !ready() {
        assert!(t0.elapsed() < within, "{what}: not within {within:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The group's committed offsets, once every partition reached its end (or after `within`).
async fn committed_at_ends(
    brokers: &str,
    group: &str,
    topic: &str,
    within: Duration,
) -> BTreeMap<u32, u64> {
    let t0 = Instant::now();
    loop {
        let offsets = committed(brokers, group, topic).await.unwrap();
        if offsets.values().all(|o| *o == PER_PARTITION) || t0.elapsed() >= within {
            return offsets;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_in_flight_at_revoke_never_moves_the_group_offset_back() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_test_writer()
        .try_init();
    let Some((broker, topic, group)) = common::fresh_topic("revoke", PER_PARTITION).await else {
        return;
    };
    let delay = format!("commit_delay_ms = {}", COMMIT_DELAY.as_millis());
    let a = start(&broker.brokers, &group, &topic, &delay);
    // A's first batch of every partition is confirmed: each partition's commit is now waiting
    // inside COMMIT_DELAY, whichever partitions B takes over.
    wait_for(Duration::from_secs(60), "member A's first batches", || {
        a.batches.load(Ordering::SeqCst) >= PARTITIONS as usize
    })
    .await;
    let joined = Instant::now();
    let b = start(&broker.brokers, &group, &topic, "");
    wait_for(Duration::from_secs(60), "member B's first batch", || {
        b.batches.load(Ordering::SeqCst) >= 1
    })
    .await;
    let b_first = joined.elapsed();
    assert!(
        b_first < COMMIT_DELAY * 3,
        "B delivered only {b_first:?} after it joined"
    );
    let ends = committed_at_ends(&broker.brokers, &group, &topic, Duration::from_secs(60)).await;
    // A commit of A's that lagged behind B's would land within one more delay: wait it out.
    tokio::time::sleep(COMMIT_DELAY + Duration::from_secs(2)).await;
    let (a_batches, b_batches) = (
        a.batches.load(Ordering::SeqCst),
        b.batches.load(Ordering::SeqCst),
    );
    let (a_exit, b_exit) = (a.drain().await, b.drain().await);
    let after = committed(&broker.brokers, &group, &topic).await.unwrap();
    eprintln!(
        "A {a_batches} batches ({a_exit:?}), B {b_batches} batches ({b_exit:?}, first {b_first:?} \
         after joining); committed at the ends {ends:?}, after a further delay and the drains {after:?}"
    );
    assert!(
        matches!(a_exit, Exit::Drained) && matches!(b_exit, Exit::Drained),
        "both members drain"
    );
    assert!(
        b_batches >= 1,
        "B took over no partition: no revoke happened during A's commits"
    );
    for p in 0..PARTITIONS as u32 {
        assert_eq!(
            after[&p], PER_PARTITION,
            "partition {p}: the group's committed offset is {}, not the partition's end {PER_PARTITION} \
             (at the ends: {ends:?}): a commit that was in flight at revoke landed after the next \
             owner's and moved it back",
            after[&p]
        );
    }
    broker.stop().await.unwrap();
}
