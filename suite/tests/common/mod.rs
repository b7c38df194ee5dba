//! Helpers shared by the tests that run pico-kafka as a library against a real broker.

#![allow(clippy::unwrap_used)] // test helpers may panic

use std::time::Duration;

use pico_suite::crash::PARTITIONS;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord};

/// Produces `per_partition` keyed JSON records `{"i": n}` to each of the topic's
/// [`PARTITIONS`] partitions, each acknowledged by the broker (`acks=all`).
pub async fn produce(brokers: &str, topic: &str, per_partition: u64) {
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("acks", "all")
        .create()
        .unwrap();
    for partition in 0..PARTITIONS {
        for i in 0..per_partition {
            producer
                .send(
                    FutureRecord::to(topic)
                        .partition(partition)
                        .key(&format!("k{i}"))
                        .payload(&format!("{{\"i\":{i}}}")),
                    Duration::from_secs(30),
                )
                .await
                .map_err(|(e, _)| e)
                .unwrap();
        }
    }
}
