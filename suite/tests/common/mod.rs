//! Helpers shared by the tests that run pico-kafka as a library against a real broker.

#![allow(clippy::unwrap_used)] // test helpers may panic

use std::time::Duration;

use pico_suite::crash::PARTITIONS;
use pico_suite::provide::first_available;
use pico_suite::serve::kafka::Broker;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord};

/// Produces `per_partition` keyed JSON records `{"i": n}` to each of the topic's
/// [`PARTITIONS`] partitions, each acknowledged by the broker (`acks=all`).
pub async fn produce(brokers: &str, topic: &str, per_partition: u64) {
    produce_values(brokers, topic, per_partition, |i| format!("{{\"i\":{i}}}")).await;
}

/// Produces `per_partition` records keyed `k<n>` with the value `value(n)` to each of the
/// topic's [`PARTITIONS`] partitions, each acknowledged by the broker (`acks=all`).
pub async fn produce_values(
    brokers: &str,
    topic: &str,
    per_partition: u64,
    value: impl Fn(u64) -> String,
) {
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
                        .payload(&value(i)),
                    Duration::from_secs(30),
                )
                .await
                .map_err(|(e, _)| e)
                .unwrap();
        }
    }
}

/// A Kafka-protocol broker (tansu started natively, Kafka through docker, or
/// `PICO_KAFKA_BROKERS`) with a fresh topic `<name>-<id>` of [`PARTITIONS`] partitions holding
/// `per_partition` records each ([`produce`]), and a fresh group name `<name>-group-<id>`; `None`,
/// after a loud SKIPPED line, where no broker can be provided.
pub async fn fresh_topic(name: &str, per_partition: u64) -> Option<(Broker, String, String)> {
    let broker = match first_available(Broker::provide).await {
        Ok(b) => b,
        Err(reasons) => {
            eprintln!("SKIPPED — no Kafka-protocol broker could be provided: {reasons}");
            return None;
        }
    };
    let id = fastrand::u64(..);
    let (topic, group) = (format!("{name}-{id}"), format!("{name}-group-{id}"));
    broker.create_topic(&topic, PARTITIONS).await.unwrap();
    produce(&broker.brokers, &topic, per_partition).await;
    Some((broker, topic, group))
}
