//! pico-kafka used as a library against a real Kafka-protocol broker (tansu started natively,
//! Kafka through docker, or `PICO_KAFKA_BROKERS`): a partition whose records are all fetched
//! and buffered (paused at the broker, nothing new arriving) hands its worker the next batch as
//! soon as the worker takes one, not at the next linger tick. With a linger of 10 s and twelve
//! batches per partition, a runtime that waited for the linger between batches needs over 80 s;
//! this one must move the whole topic in well under three lingers. Where no broker can be
//! provided, the test prints a loud SKIPPED line.

#![allow(clippy::unwrap_used)] // test helpers may panic

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use pico_kafka::runtime::Exit;
use pico_sink::identity::Scope;
use pico_sink_stdout::StdoutSink;
use pico_suite::crash::{PARTITIONS, committed};

/// Records produced to each partition: twelve batches of [`MAX_RECORDS`].
const PER_PARTITION: u64 = 600;
/// Records per batch.
const MAX_RECORDS: u64 = 50;
/// The linger: long enough that waiting for it between batches cannot go unseen.
const LINGER: Duration = Duration::from_secs(10);

#[tokio::test]
async fn a_buffered_partition_gets_its_next_batch_without_waiting_for_the_linger() {
    let Some((broker, topic, group)) = common::fresh_topic("refill", PER_PARTITION).await else {
        return;
    };
    let pipeline = pico_kafka::Pipeline::from_toml(&format!(
        "[kafka]\nbrokers = \"{}\"\ngroup = \"{group}\"\ntopics = [\"{topic}\"]\n\n\
         [batch]\nmax_records = {MAX_RECORDS}\nlinger_ms = {}\n\n[sink]\nkind = \"stdout\"\n",
        broker.brokers,
        LINGER.as_millis()
    ))
    .unwrap();
    let sink = Arc::new(StdoutSink::to_writer(Vec::new(), Scope::default()));
    let (brokers, g, t) = (broker.brokers.clone(), group.clone(), topic.clone());
    // Drains once the group committed every record.
    let all_committed = async move {
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let now = committed(&brokers, &g, &t).await.unwrap_or_default();
            if now.len() == PARTITIONS as usize && now.values().all(|c| *c >= PER_PARTITION) {
                break;
            }
        }
    };
    let started = Instant::now();
    let ran = tokio::time::timeout(
        LINGER * 12,
        pico_kafka::run(&pipeline, sink.clone(), all_committed),
    )
    .await;
    let elapsed = started.elapsed();
    let exit = ran
        .expect("the topic was not moved within twelve lingers")
        .unwrap();
    assert_eq!(exit, Exit::Drained);
    let batches = PER_PARTITION / MAX_RECORDS * PARTITIONS as u64;
    eprintln!(
        "{batches} batches of {MAX_RECORDS} records moved in {elapsed:?} (linger {LINGER:?})"
    );
    assert!(
        elapsed < LINGER * 3,
        "{batches} batches took {elapsed:?}: batches waited for the {LINGER:?} linger"
    );
    broker.stop().await.unwrap();
}
