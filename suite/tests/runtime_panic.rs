//! pico-kafka used as a library (its binary then exits with `Exit::GaveUp`'s code 2, which the
//! crash suite's panic case checks), against a real Kafka-protocol broker (tansu started
//! natively, Kafka through docker, or `PICO_KAFKA_BROKERS`): a sink that panics inside one
//! partition's delivery ends `run` with `Exit::GaveUp` naming the partition and the panic, and
//! the group's committed offset of that partition, read back from the broker, stays at the
//! batch that panicked. Where no broker can be provided, the test prints a loud SKIPPED line.

#![allow(clippy::unwrap_used)] // test helpers may panic

mod common;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use pico_kafka::runtime::Exit;
use pico_sink::identity::Scope;
use pico_sink::{Batch, Description, Outcome, Sink, SinkError};
use pico_sink_stdout::StdoutSink;
use pico_suite::crash::committed;

/// Records produced to each partition.
const PER_PARTITION: u64 = 60;
/// The partition whose delivery panics, at the batch holding this offset.
const PANICS_AT: (u32, u64) = (1, 30);

/// Writes through a stdout sink into memory, and panics on the batch of [`PANICS_AT`].
struct PanicsOnOneBatch {
    inner: StdoutSink<Vec<u8>>,
}

#[async_trait]
impl Sink for PanicsOnOneBatch {
    async fn open(&self) -> Result<(), SinkError> {
        self.inner.open().await
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let (partition, offset) = PANICS_AT;
        if batch.partition() == partition && batch.get(offset).is_some() {
            panic!("test: the sink panics on {}", batch.id());
        }
        self.inner.consume(batch).await
    }

    async fn close(&self) -> Result<(), SinkError> {
        self.inner.close().await
    }

    fn describe(&self) -> Description {
        self.inner.describe()
    }
}

#[tokio::test]
async fn a_worker_that_panics_ends_run_with_gave_up_and_commits_nothing_past_its_batch() {
    let Some((broker, topic, group)) = common::fresh_topic("panic", PER_PARTITION).await else {
        return;
    };
    let pipeline = pico_kafka::Pipeline::from_toml(&format!(
        "[kafka]\nbrokers = \"{}\"\ngroup = \"{group}\"\ntopics = [\"{topic}\"]\n\n\
         [batch]\nmax_records = 10\nlinger_ms = 50\n\n[sink]\nkind = \"stdout\"\n",
        broker.brokers
    ))
    .unwrap();
    let sink = Arc::new(PanicsOnOneBatch {
        inner: StdoutSink::to_writer(Vec::new(), Scope::default()),
    });
    // No shutdown: only the panic can end the run.
    let ran = tokio::time::timeout(
        Duration::from_secs(60),
        pico_kafka::run(&pipeline, sink.clone(), std::future::pending()),
    )
    .await;
    let exit = ran
        .expect("run did not end within 60 s of a worker's panic: its partition stalled")
        .unwrap();
    let (partition, offset) = PANICS_AT;
    let Exit::GaveUp(why) = &exit else {
        panic!("a panicked worker must end run with GaveUp, got {exit:?}");
    };
    assert!(why.contains(&format!("{topic}:{partition}")), "{why}");
    assert!(why.contains("test: the sink panics on"), "{why}");
    let offsets = committed(&broker.brokers, &group, &topic).await.unwrap();
    let held = offsets[&partition];
    eprintln!("exit: {why}; committed offsets {offsets:?}");
    assert!(
        held <= offset,
        "partition {partition} committed at {held}, past the batch holding offset {offset} that panicked"
    );
    assert!(
        held > 0,
        "the batches before the panic were confirmed and committed"
    );
    broker.stop().await.unwrap();
}
