//! The topic an end-to-end run reads: produced once per layout, each partition's records in
//! offset order, then read by a plain consumer (the raw-consume anchor).

use std::sync::Arc;
use std::time::{Duration, Instant};

use pico_sink::identity::RecordId;
use pico_sink::{Batch, Record};
use rdkafka::Message;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, StreamConsumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::future_producer::DeliveryFuture;
use rdkafka::producer::{FutureProducer, FutureRecord};

use crate::measure::record;

/// A topic of `partitions` partitions, each holding `per_partition` records of about 1 KiB of
/// JSON from offset 0.
#[derive(Debug, Clone)]
pub(super) struct Topic {
    /// Its name on the broker.
    pub name: String,
    /// Its partitions.
    pub partitions: u32,
    /// Records in each partition.
    pub per_partition: u64,
}

impl Topic {
    /// Every record on the topic.
    pub fn records(&self) -> u64 {
        u64::from(self.partitions) * self.per_partition
    }

    /// The record partition `p` holds at `offset`: what [`produce`] sent there (the broker
    /// stamps its own time on it).
    fn record(&self, name: &Arc<str>, p: u32, offset: u64) -> Record {
        let r = record(p, offset);
        let mut out = Record::new(RecordId::new(name.clone(), p, offset), r.value);
        if let Some(key) = r.key {
            out = out.with_key(key);
        }
        out
    }

    /// The records of partition `p` from `first`, at most `n` of them.
    pub fn batch(&self, p: u32, first: u64, n: u64) -> Result<Batch, String> {
        let last = (first + n).min(self.per_partition);
        let name: Arc<str> = self.name.as_str().into();
        Batch::new((first..last).map(|o| self.record(&name, p, o)).collect())
            .map_err(|e| e.to_string())
    }

    /// Key and value bytes of one record.
    pub fn record_bytes(&self) -> u64 {
        let r = self.record(&self.name.as_str().into(), 0, 0);
        (r.value.len() + r.key.as_ref().map_or(0, |k| k.len())) as u64
    }

    /// `(partition, offset)` of every record, sorted.
    pub fn expected(&self) -> Vec<(u32, u64)> {
        (0..self.partitions)
            .flat_map(|p| (0..self.per_partition).map(move |o| (p, o)))
            .collect()
    }
}

/// Awaits every delivery of `pending`.
async fn delivered(pending: &mut Vec<DeliveryFuture>) -> Result<(), String> {
    for f in pending.drain(..) {
        f.await
            .map_err(|_| "the producer went away".to_owned())?
            .map_err(|(e, _)| e.to_string())?;
    }
    Ok(())
}

/// Produces `topic`'s records (`acks=all`), each partition's in offset order, and checks that
/// every partition ends where it should.
pub(super) async fn produce(brokers: &str, topic: &Topic) -> Result<(), String> {
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("acks", "all")
        .set("linger.ms", "20")
        .create()
        .map_err(|e| e.to_string())?;
    let mut pending = Vec::new();
    let name: Arc<str> = topic.name.as_str().into();
    for offset in 0..topic.per_partition {
        for p in 0..topic.partitions {
            let r = topic.record(&name, p, offset);
            let key = r.key.clone().unwrap_or_default();
            loop {
                let sent = producer.send_result(
                    FutureRecord::to(&topic.name)
                        .partition(p as i32)
                        .key(key.as_ref())
                        .payload(r.value.as_ref()),
                );
                match sent {
                    Ok(f) => {
                        pending.push(f);
                        break;
                    }
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                        delivered(&mut pending).await?;
                    }
                    Err((e, _)) => return Err(format!("producing to {}: {e}", topic.name)),
                }
            }
            if pending.len() >= 10_000 {
                delivered(&mut pending).await?;
            }
        }
    }
    delivered(&mut pending).await?;
    let ends = high_watermarks(brokers, topic).await?;
    if ends.iter().any(|end| *end != topic.per_partition) {
        return Err(format!(
            "{} ends at {ends:?} after producing {} records to each of its {} partitions",
            topic.name, topic.per_partition, topic.partitions
        ));
    }
    Ok(())
}

/// The end offset of every partition of `topic`.
async fn high_watermarks(brokers: &str, topic: &Topic) -> Result<Vec<u64>, String> {
    let (brokers, topic) = (brokers.to_owned(), topic.clone());
    tokio::task::spawn_blocking(move || {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &brokers)
            .create()
            .map_err(|e| e.to_string())?;
        (0..topic.partitions)
            .map(|p| {
                consumer
                    .fetch_watermarks(&topic.name, p as i32, Duration::from_secs(10))
                    .map(|(_, high)| high.max(0) as u64)
                    .map_err(|e| e.to_string())
            })
            .collect()
    })
    .await
    .map_err(|e| e.to_string())?
}

/// How one path moved a topic: from its start, and in steady state.
#[derive(Debug, Clone, Copy)]
pub(super) struct Moved {
    /// From the start (the consumer created, the process spawned) to the last record.
    pub total: Duration,
    /// Records per second in steady state, once the group formed: from the first record
    /// received (raw consume) or the first partition assigned (end to end) to the last.
    pub steady_per_s: f64,
}

/// A plain consumer of a fresh group reading every record of `topic` once, touching each
/// payload; it fails on a record read twice or one missing.
pub(super) async fn raw_consume(brokers: &str, topic: &Topic) -> Result<Moved, String> {
    let consumer: StreamConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", format!("raw-{}", fastrand::u64(..)))
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create()
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    consumer
        .subscribe(&[&topic.name])
        .map_err(|e| e.to_string())?;
    let n = topic.records();
    let mut next = vec![0u64; topic.partitions as usize];
    let (mut seen, mut bytes) = (0u64, 0usize);
    let mut first: Option<Instant> = None;
    while seen < n {
        let m = tokio::time::timeout(Duration::from_secs(60), consumer.recv())
            .await
            .map_err(|_| format!("raw consume stalled after {seen} of {n} records"))?
            .map_err(|e| e.to_string())?;
        first.get_or_insert_with(Instant::now);
        let slot = next
            .get_mut(m.partition().max(0) as usize)
            .ok_or_else(|| format!("a record of partition {}", m.partition()))?;
        if m.offset() != *slot as i64 {
            return Err(format!(
                "raw consume read offset {} of partition {} where {slot} was next",
                m.offset(),
                m.partition()
            ));
        }
        *slot += 1;
        bytes += m.payload().map_or(0, <[u8]>::len);
        seen += 1;
    }
    let last = Instant::now();
    std::hint::black_box(bytes);
    let first = first.unwrap_or(last);
    Ok(Moved {
        total: last - started,
        steady_per_s: steady(n.saturating_sub(1), last - first),
    })
}

/// `records` over `elapsed`, per second (0 when nothing elapsed).
pub(super) fn steady(records: u64, elapsed: Duration) -> f64 {
    if elapsed.is_zero() {
        0.0
    } else {
        records as f64 / elapsed.as_secs_f64()
    }
}
