//! pico-kafka used as a library against a real Kafka-protocol broker (tansu started natively,
//! Kafka through docker, or `PICO_KAFKA_BROKERS`): a destination that answers `Retryable` for
//! longer than a round of attempts is an operating state. `run` keeps going through it and, once
//! the destination is back, every partition is committed to its end (read back from the broker);
//! with `retry.max_retry_duration_ms` set it gives up. The same holds for a destination already
//! down when `run` opens the sink. Meanwhile its `/ready` probe answers 503 with the outage as
//! its reason, and 200 again once the destination is back; `/health` stays 200 throughout.
//! Where no broker can be provided, the test prints a loud SKIPPED line.

#![allow(clippy::unwrap_used)] // test helpers may panic

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use pico_kafka::runtime::Exit;
use pico_sink::identity::Scope;
use pico_sink::{Batch, Description, Outcome, Sink, SinkError};
use pico_sink_stdout::StdoutSink;
use pico_suite::crash::{PARTITIONS, committed};
use pico_suite::provide::free_port;
use pico_suite::serve::kafka::Broker;

/// Records produced to each partition.
const PER_PARTITION: u64 = 40;
/// Attempts per round, and the longest backoff: a round takes well under a second.
const RETRY: &str = "[retry]\nmax_attempts = 3\ninitial_backoff_ms = 50\nmax_backoff_ms = 300\n";

/// Where the destination's outage shows: when the sink is opened, or when a batch is consumed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum DownAt {
    Open,
    Consume,
}

/// A stdout sink into memory whose destination is down for `outage` from the first call that
/// `at` names: every such call meanwhile fails with `Retryable`, and is counted. Like a real
/// sink, it refuses to consume before it was opened.
struct Down {
    inner: StdoutSink<Vec<u8>>,
    at: DownAt,
    outage: Duration,
    down_since: Mutex<Option<Instant>>,
    refused: AtomicU64,
    opened: AtomicBool,
}

impl Down {
    fn new(at: DownAt, outage: Duration) -> Self {
        Self {
            inner: StdoutSink::to_writer(Vec::new(), Scope::default()),
            at,
            outage,
            down_since: Mutex::new(None),
            refused: AtomicU64::new(0),
            opened: AtomicBool::new(false),
        }
    }

    /// `Err` while the outage lasts, for a call at `at`.
    fn check(&self, at: DownAt) -> Result<(), SinkError> {
        if at != self.at {
            return Ok(());
        }
        let since = *self
            .down_since
            .lock()
            .unwrap()
            .get_or_insert_with(Instant::now);
        if since.elapsed() < self.outage {
            self.refused.fetch_add(1, Ordering::SeqCst);
            return Err(SinkError::retryable("test: the destination is down"));
        }
        Ok(())
    }
}

#[async_trait]
impl Sink for Down {
    async fn open(&self) -> Result<(), SinkError> {
        self.check(DownAt::Open)?;
        self.inner.open().await?;
        self.opened.store(true, Ordering::SeqCst);
        Ok(())
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        if !self.opened.load(Ordering::SeqCst) {
            return Err(SinkError::fatal("test: consume before the sink was opened"));
        }
        self.check(DownAt::Consume)?;
        self.inner.consume(batch).await
    }

    async fn close(&self) -> Result<(), SinkError> {
        self.inner.close().await
    }

    fn describe(&self) -> Description {
        self.inner.describe()
    }
}

/// A fresh topic with records ([`common::fresh_topic`]), its group, and the pipeline that
/// consumes it with `extra` appended; `None` where no broker can be provided.
async fn prepared(
    name: &str,
    extra: &str,
) -> Option<(Broker, String, String, pico_kafka::Pipeline)> {
    let (broker, topic, group) = common::fresh_topic(name, PER_PARTITION).await?;
    let pipeline = pico_kafka::Pipeline::from_toml(&format!(
        "[kafka]\nbrokers = \"{}\"\ngroup = \"{group}\"\ntopics = [\"{topic}\"]\n\n\
         [batch]\nmax_records = 10\nlinger_ms = 50\n\n[sink]\nkind = \"stdout\"\n\n{RETRY}{extra}",
        broker.brokers
    ))
    .unwrap();
    Some((broker, topic, group, pipeline))
}

/// Runs the pipeline over a destination down at `at` for 6 s, until every partition is
/// committed to its end; asserts the run drained, the outage outlasted a round of attempts, and
/// every offset reached its end (read back from the broker).
async fn rides_out(name: &str, at: DownAt, more_than: u64) {
    let port = free_port().unwrap();
    let probes_on =
        format!("\n[metrics]\nlisten = \"127.0.0.1:{port}\"\nunready_after_ms = 1000\n");
    let Some((broker, topic, group, pipeline)) = prepared(name, &probes_on).await else {
        return;
    };
    let sink = Arc::new(Down::new(at, Duration::from_secs(6)));
    let probes = tokio::spawn(watch_probes(port));
    // Drains once every partition is committed to its end (or after 90 s).
    let shutdown = {
        let (brokers, group, topic) = (broker.brokers.clone(), group.clone(), topic.clone());
        async move {
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(90) {
                let offsets = committed(&brokers, &group, &topic).await.unwrap();
                if offsets.values().all(|o| *o == PER_PARTITION) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    };
    let exit = tokio::time::timeout(
        Duration::from_secs(120),
        pico_kafka::run(&pipeline, sink.clone(), shutdown),
    )
    .await
    .expect("run did not end within 120 s")
    .unwrap();
    let refused = sink.refused.load(Ordering::SeqCst);
    let offsets = committed(&broker.brokers, &group, &topic).await.unwrap();
    eprintln!("exit {exit:?}; {refused} calls refused during the outage; committed {offsets:?}");
    assert!(
        matches!(exit, Exit::Drained),
        "an outage must not end the run: {exit:?}"
    );
    assert!(
        refused > more_than,
        "the outage lasted no longer than a round of attempts: {refused} refused"
    );
    assert_eq!(
        offsets.len(),
        usize::try_from(PARTITIONS).unwrap(),
        "{offsets:?}"
    );
    for (p, offset) in &offsets {
        assert_eq!(*offset, PER_PARTITION, "partition {p}: {offsets:?}");
    }
    let (ready, unhealthy) = probes.await.unwrap();
    eprintln!("/ready answers, in order: {ready:?}");
    let reason = match at {
        DownAt::Open => "the sink is not open",
        DownAt::Consume => "the sink's calls have been failing",
    };
    let outage = ready
        .iter()
        .position(|(status, body)| *status == 503 && body.contains(reason))
        .unwrap_or_else(|| panic!("/ready never said {reason:?}: {ready:?}"));
    assert!(
        ready[outage..]
            .iter()
            .any(|(status, body)| *status == 200 && body.starts_with("ready")),
        "/ready did not come back after the outage: {ready:?}"
    );
    assert!(
        unhealthy.is_empty(),
        "/health failed during an outage: {unhealthy:?}"
    );
    broker.stop().await.unwrap();
}

/// Polls `/ready` and `/health` on `port` every 100 ms until the listener is gone (the run
/// ended) or 130 s passed: each change of `/ready`'s status or reason (digits left out, so a
/// growing duration is one answer), and every `/health` answer that was not 200.
async fn watch_probes(port: u16) -> (Vec<(u16, String)>, Vec<(u16, String)>) {
    let client = reqwest::Client::new();
    let get = async |path: &str| {
        let r = client
            .get(format!("http://127.0.0.1:{port}{path}"))
            .send()
            .await
            .ok()?;
        let status = r.status().as_u16();
        Some((status, r.text().await.ok()?))
    };
    let (mut ready, mut unhealthy) = (Vec::<(u16, String)>::new(), Vec::new());
    let (started, mut reached) = (Instant::now(), false);
    while started.elapsed() < Duration::from_secs(130) {
        match get("/ready").await {
            Some((status, body)) => {
                reached = true;
                let shape = |b: &str| b.replace(|c: char| c.is_ascii_digit() || c == '.', "");
                if ready
                    .last()
                    .is_none_or(|(s, b)| *s != status || shape(b) != shape(&body))
                {
                    ready.push((status, body));
                }
                if let Some((status, body)) = get("/health").await
                    && status != 200
                {
                    unhealthy.push((status, body));
                }
            }
            None if reached => break,
            None => {}
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (ready, unhealthy)
}

#[tokio::test]
async fn an_outage_longer_than_a_round_of_attempts_is_ridden_out_and_everything_committed() {
    rides_out(
        "outage",
        DownAt::Consume,
        3 * u64::try_from(PARTITIONS).unwrap(),
    )
    .await;
}

#[tokio::test]
async fn a_destination_down_at_start_is_ridden_out_by_opening_again() {
    rides_out("outage-open", DownAt::Open, 3).await;
}

/// Runs the pipeline with `retry.max_retry_duration_ms = 2000` over a destination down at `at`
/// for good; asserts the run gave up within 60 s with the destination's error, after more than
/// one round of attempts, with nothing committed. Returns why it gave up.
async fn gives_up(name: &str, at: DownAt) -> Option<String> {
    let (broker, topic, group, pipeline) = prepared(name, "max_retry_duration_ms = 2000\n").await?;
    let sink = Arc::new(Down::new(at, Duration::from_secs(600)));
    let started = Instant::now();
    let exit = tokio::time::timeout(
        Duration::from_secs(60),
        pico_kafka::run(&pipeline, sink.clone(), std::future::pending()),
    )
    .await
    .expect("run did not give up within 60 s of an outage with max_retry_duration_ms = 2000")
    .unwrap();
    let refused = sink.refused.load(Ordering::SeqCst);
    let offsets = committed(&broker.brokers, &group, &topic).await.unwrap();
    eprintln!(
        "exit {exit:?} after {:?}; {refused} calls refused; committed {offsets:?}",
        started.elapsed()
    );
    let Exit::GaveUp(why) = exit else {
        panic!("an outage past max_retry_duration_ms ends the run with GaveUp, got {exit:?}");
    };
    assert!(why.contains("the destination is down"), "{why}");
    assert!(refused > 3, "more than one round of attempts: {refused}");
    assert!(
        offsets.values().all(|o| *o == 0),
        "nothing was delivered, nothing may be committed: {offsets:?}"
    );
    broker.stop().await.unwrap();
    Some(why)
}

#[tokio::test]
async fn an_outage_past_max_retry_duration_ends_the_run_with_gave_up() {
    gives_up("outage-limit", DownAt::Consume).await;
}

#[tokio::test]
async fn a_destination_down_at_start_past_max_retry_duration_ends_the_run_with_gave_up() {
    if let Some(why) = gives_up("outage-open-limit", DownAt::Open).await {
        assert!(why.contains("opening the sink"), "{why}");
    }
}
