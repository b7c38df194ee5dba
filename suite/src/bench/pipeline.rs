//! End to end: records on a Kafka-protocol broker through the `pico-kafka` runtime into
//! PostgreSQL, beside the broker's raw consume rate and a raw `COPY` of the same records, in
//! the same run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::Message;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::producer::{FutureProducer, FutureRecord};

use super::report::{BenchSize, PipelineBench};
use super::{batch, record};
use crate::crash::{PARTITIONS, committed};
use crate::destinations::postgres::bench::{RawTable, raw_copy};
use crate::destinations::postgres::server::PgServer;
use crate::provide::first_available;
use crate::serve::Server;
use crate::serve::kafka::Broker;

/// Records on the topic at each size.
fn records(size: BenchSize) -> u64 {
    match size {
        BenchSize::Full => 20_000,
        BenchSize::Reduced => 4_000,
    }
}

async fn produce(brokers: &str, topic: &str, n: u64) -> Result<(), String> {
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("acks", "all")
        .set("linger.ms", "20")
        .create()
        .map_err(|e| e.to_string())?;
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let mut pending = Vec::new();
        for i in chunk {
            let r = record(0, *i);
            let (producer, topic) = (producer.clone(), topic.to_owned());
            pending.push(tokio::spawn(async move {
                producer
                    .send(
                        FutureRecord::to(&topic)
                            .partition((r.id.offset % PARTITIONS as u64) as i32)
                            .key(r.key.as_deref().unwrap_or_default())
                            .payload(r.value.as_ref()),
                        Duration::from_secs(60),
                    )
                    .await
                    .map(|_| ())
                    .map_err(|(e, _)| e.to_string())
            }));
        }
        for p in pending {
            p.await.map_err(|e| e.to_string())??;
        }
    }
    Ok(())
}

/// A plain consumer of a fresh group reading `n` records from the start.
async fn raw_consume(brokers: &str, topic: &str, n: u64) -> Result<Duration, String> {
    let consumer: StreamConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", format!("raw-{}", fastrand::u64(..)))
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create()
        .map_err(|e| e.to_string())?;
    consumer.subscribe(&[topic]).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut seen = 0u64;
    let mut bytes = 0usize;
    while seen < n {
        let m = tokio::time::timeout(Duration::from_secs(60), consumer.recv())
            .await
            .map_err(|_| format!("raw consume stalled after {seen} of {n} records"))?
            .map_err(|e| e.to_string())?;
        bytes += m.payload().map_or(0, <[u8]>::len);
        seen += 1;
    }
    std::hint::black_box(bytes);
    Ok(started.elapsed())
}

/// The runtime from start to drained, with `n` records waiting on `topic`.
async fn end_to_end(brokers: &str, topic: &str, pg_url: &str) -> Result<(Duration, u64), String> {
    let group = format!("e2e-{}", fastrand::u64(..));
    let pipeline = pico_kafka::config::Pipeline::from_toml(&format!(
        "[kafka]\nbrokers = \"{brokers}\"\ngroup = \"{group}\"\ntopics = [\"{topic}\"]\n\
         properties = {{ \"auto.offset.reset\" = \"earliest\" }}\n\n\
         [sink]\nkind = \"postgres\"\ntable = \"e2e\"\n[sink.connection]\nurl = \"{pg_url}\"\n"
    ))
    .map_err(|e| e.to_string())?;
    let sink = pipeline.sink.build().await.map_err(|e| e.to_string())?;
    let ends = {
        let (brokers, topic) = (brokers.to_owned(), topic.to_owned());
        tokio::task::spawn_blocking(move || high_watermarks(&brokers, &topic))
            .await
            .map_err(|e| e.to_string())??
    };
    let (brokers_c, group_c, topic_c) = (brokers.to_owned(), group.clone(), topic.to_owned());
    let done = async move {
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let now = committed(&brokers_c, &group_c, &topic_c)
                .await
                .unwrap_or_default();
            if ends
                .iter()
                .all(|(p, end)| now.get(p).is_some_and(|c| c >= end))
            {
                break;
            }
        }
    };
    let started = Instant::now();
    let exit = pico_kafka::runtime::run(&pipeline, Arc::clone(&sink), done)
        .await
        .map_err(|e| e.to_string())?;
    let elapsed = started.elapsed();
    match exit {
        pico_kafka::runtime::Exit::Drained => Ok((
            elapsed,
            pipeline.batch.limits(sink.commit_policy()).max_records as u64,
        )),
        other => Err(format!("the runtime stopped: {other:?}")),
    }
}

/// The end offset of every partition of `topic`.
fn high_watermarks(
    brokers: &str,
    topic: &str,
) -> Result<std::collections::BTreeMap<u32, u64>, String> {
    let consumer: rdkafka::consumer::BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()
        .map_err(|e| e.to_string())?;
    (0..PARTITIONS)
        .map(|p| {
            consumer
                .fetch_watermarks(topic, p, Duration::from_secs(10))
                .map(|(_, high)| (p as u32, high.max(0) as u64))
                .map_err(|e| e.to_string())
        })
        .collect()
}

/// Broker → `pico-kafka` → PostgreSQL, beside raw consume and raw `COPY`.
pub async fn pipeline(size: BenchSize) -> Result<PipelineBench, String> {
    let n = records(size);
    let broker = first_available(Broker::provide).await?;
    let pg = first_available(PgServer::provide).await?;
    let topic = format!("bench-e2e-{}", fastrand::u32(..));
    broker.create_topic(&topic, PARTITIONS).await?;
    produce(&broker.brokers, &topic, n).await?;
    let raw_consume_ms = raw_consume(&broker.brokers, &topic, n).await?;
    let raw_copy_ms = raw_copy(pg.url(), "raw_e2e", RawTable::Unlogged, &batch(0, 0, n)).await?;
    let (end_to_end_ms, batch_records) = end_to_end(&broker.brokers, &topic, pg.url()).await?;
    let result = PipelineBench {
        broker: broker.info(),
        server: pg.info().await,
        records: n,
        batch_records,
        raw_consume_ms: raw_consume_ms.as_secs_f64() * 1000.0,
        raw_copy_ms: raw_copy_ms.as_secs_f64() * 1000.0,
        end_to_end_ms: end_to_end_ms.as_secs_f64() * 1000.0,
    };
    pg.stop().await?;
    broker.stop().await?;
    Ok(result)
}
