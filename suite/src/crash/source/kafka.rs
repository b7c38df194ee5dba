//! Kafka (tansu here, or any Kafka API broker) under `pico-kafka`: records produced with
//! `acks=all`, the group's committed offsets read as a member of no assignment would, the dead
//! letters read from the physical log (uncommitted transactions included).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Headers, Message};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};

use super::{CaseBroker, CaseNames, Pace};
use crate::crash::dead_letters::{BadRecords, Letter};
use crate::crash::{PARTITIONS, Produced, record_value};
use pico_conformance::target::{PayloadForm, payload_checksum};

/// A Kafka broker at `brokers` (`host:port`, comma-separated), consumed by `pico-kafka`.
#[derive(Debug, Clone)]
pub struct KafkaSide {
    /// The bootstrap servers.
    pub brokers: String,
}

#[async_trait]
impl CaseBroker for KafkaSide {
    fn runtime(&self) -> &'static str {
        "pico-kafka"
    }

    fn metrics_prefix(&self) -> &'static str {
        "pico_kafka"
    }

    fn sections(&self, names: CaseNames<'_>, session: Duration) -> String {
        let CaseNames {
            topic,
            group,
            dead_letters,
        } = names;
        let brokers = &self.brokers;
        let session = session.as_millis();
        let heartbeat = session / 6;
        format!(
            "[kafka]\nbrokers = \"{brokers}\"\ngroup = \"{group}\"\ntopics = [\"{topic}\"]\nprogress_secs = 5\n\
             [kafka.properties]\n\"session.timeout.ms\" = \"{session}\"\n\"heartbeat.interval.ms\" = \"{heartbeat}\"\n\
             \"max.poll.interval.ms\" = \"60000\"\n\n[dead_letter]\ntopic = \"{dead_letters}\"\n"
        )
    }

    async fn produce(&self, topic: &str, pace: Pace) -> Result<(Produced, BadRecords), String> {
        produce(&self.brokers, topic, pace).await
    }

    async fn committed(&self, group: &str, topic: &str) -> Result<BTreeMap<u32, u64>, String> {
        committed(&self.brokers, group, topic).await
    }

    async fn letters(&self, topic: &str) -> Result<Vec<Letter>, String> {
        read_letters(&self.brokers, topic).await
    }
}

/// Produces the keyed records `pace` hands out; the offsets the broker acknowledged,
/// each with the [`payload_checksum`] of its payload as JSON, and which of them are bad.
async fn produce(
    brokers: &str,
    topic: &str,
    mut pace: Pace,
) -> Result<(Produced, BadRecords), String> {
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("acks", "all")
        .set("message.timeout.ms", "120000")
        // Room for the oversized bad records.
        .set("message.max.bytes", "4194304")
        .create()
        .map_err(|e| e.to_string())?;
    let mut acked = Produced::new();
    let mut bad = BadRecords::new();
    while let Some(chunk) = pace.next().await {
        let mut pending = Vec::new();
        for i in chunk {
            let key = format!("meter-{}", i % 97);
            let (value, kind) = record_value(i);
            let producer = producer.clone();
            let topic = topic.to_owned();
            let payload = payload_checksum(PayloadForm::Json, &value);
            pending.push(tokio::spawn(async move {
                producer
                    .send(
                        FutureRecord::to(&topic).key(&key).payload(&value),
                        Duration::from_secs(120),
                    )
                    .await
                    .map(|delivery| (delivery, payload, kind))
                    .map_err(|(e, _)| e.to_string())
            }));
        }
        for p in pending {
            let (delivery, payload, kind) = p.await.map_err(|e| e.to_string())??;
            let at = (delivery.partition as u32, delivery.offset as u64);
            acked.insert(at, payload);
            if let Some(kind) = kind {
                bad.insert(at, kind);
            }
        }
    }
    Ok((acked, bad))
}

/// The group's committed offset per partition (0 where none).
pub async fn committed(
    brokers: &str,
    group: &str,
    topic: &str,
) -> Result<BTreeMap<u32, u64>, String> {
    let (brokers, group, topic) = (brokers.to_owned(), group.to_owned(), topic.to_owned());
    tokio::task::spawn_blocking(move || {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &brokers)
            .set("group.id", &group)
            .set("enable.auto.commit", "false")
            .create()
            .map_err(|e| e.to_string())?;
        let mut tpl = TopicPartitionList::new();
        for p in 0..PARTITIONS {
            tpl.add_partition(&topic, p);
        }
        let committed = consumer
            .committed_offsets(tpl, Duration::from_secs(5))
            .map_err(|e| e.to_string())?;
        Ok((0..PARTITIONS)
            .map(|p| {
                let offset = committed
                    .find_partition(&topic, p)
                    .map_or(0, |e| match e.offset() {
                        Offset::Offset(o) => o.max(0) as u64,
                        _ => 0,
                    });
                (p as u32, offset)
            })
            .collect())
    })
    .await
    .map_err(|e| e.to_string())?
}

/// Every record of `topic` (one partition), read from the broker as it physically holds them
/// (uncommitted transactions included).
async fn read_letters(brokers: &str, topic: &str) -> Result<Vec<Letter>, String> {
    let (brokers, topic) = (brokers.to_owned(), topic.to_owned());
    tokio::task::spawn_blocking(move || read_letters_blocking(&brokers, &topic))
        .await
        .map_err(|e| e.to_string())?
}

fn read_letters_blocking(brokers: &str, topic: &str) -> Result<Vec<Letter>, String> {
    let failed =
        |e: rdkafka::error::KafkaError| format!("reading the dead letters of {topic}: {e}");
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", format!("{topic}-reader"))
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_uncommitted")
        .create()
        .map_err(failed)?;
    let (_, high) = consumer
        .fetch_watermarks(topic, 0, Duration::from_secs(10))
        .map_err(failed)?;
    let mut letters = Vec::new();
    if high <= 0 {
        return Ok(letters);
    }
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning)
        .map_err(failed)?;
    consumer.assign(&tpl).map_err(failed)?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(500)) {
            Some(Ok(m)) => {
                letters.push(Letter::of(
                    m.offset(),
                    m.headers()
                        .into_iter()
                        .flat_map(|h| h.iter())
                        .map(|h| (h.key, h.value.unwrap_or_default())),
                    m.payload().unwrap_or_default(),
                ));
                if m.offset() + 1 >= high {
                    return Ok(letters);
                }
            }
            Some(Err(e)) => return Err(failed(e)),
            None => {}
        }
    }
    Err(format!(
        "read {} of the {high} dead letters of {topic} within 60 s",
        letters.len()
    ))
}
