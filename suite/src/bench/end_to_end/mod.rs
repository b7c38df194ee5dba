//! End to end: a topic on a Kafka-protocol broker through the `pico-kafka` binary into a
//! destination, beside its two parts measured in the same run: a plain consumer reading the
//! same topic, and the sink alone writing the same records in the runtime's batch sizes
//! (#39 step 2). The destinations are the crash suite's ([`RuntimeDestination`]): the same
//! `[sink]` section and the same read-back of what a topic left there.

mod process;
mod row;
mod topic;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Instant;

use pico_conformance::target::ServerInfo;
use pico_kafka::config::{BatchLimits, Pipeline};
use tracing::info;

pub use row::{EndToEndRow, PathFigures, render};

use self::process::{RuntimeRun, run_runtime};
use self::topic::{Moved, Topic, produce, raw_consume, steady};
use crate::crash::supervisor::runtime_binary;
use crate::destinations::runtime::{Runtime, RuntimeDestination, toml_string};
use crate::destinations::{clickhouse, delta, postgres, s3};
use crate::measure::{BenchSize, consume_checked, held_exactly, median_f64};
use crate::provide::first_available;
use crate::serve::kafka::Broker;

/// The destinations measured end to end, by their crash-suite entries.
pub const DESTINATIONS: [&Runtime; 4] = [
    &postgres::runtime::RUNTIME,
    &clickhouse::runtime::RUNTIME,
    &s3::runtime::RUNTIME,
    &delta::runtime::RUNTIME,
];

/// The longest linger a run keeps from a sink's commit policy: Delta's 60 s would leave the
/// topic's last partial batch waiting a minute after everything else was written (a latency
/// setting, not a rate); its batch sizes stay the policy's.
pub const LINGER_CAP_MS: u64 = 1_000;

/// Partitions of the two topics.
const LAYOUTS: [u32; 2] = [8, 1];

/// Records on each topic.
pub fn records(size: BenchSize) -> u64 {
    match size {
        BenchSize::Full => 200_000,
        BenchSize::Reduced => 20_000,
    }
}

/// The three paths, in the order one repetition runs them.
#[derive(Debug, Clone, Copy)]
enum Path3 {
    RawConsume,
    SinkWrite,
    Runtime,
}

/// Repetition `rep`'s order: rotated by one each repetition, so that no path always follows
/// the same other one.
fn order(rep: usize) -> [Path3; 3] {
    let mut paths = [Path3::RawConsume, Path3::SinkWrite, Path3::Runtime];
    paths.rotate_left(rep % 3);
    paths
}

/// What every measurement of one destination shares.
struct Bench<'a> {
    size: BenchSize,
    bin: &'a Path,
    dir: &'a Path,
    brokers: &'a str,
    broker: ServerInfo,
    id: &'static str,
    dest: &'a dyn RuntimeDestination,
    /// The destination's own address (no proxy in front).
    addr: SocketAddr,
    /// Names this run's isolations apart from earlier runs' on the same servers.
    tag: u32,
    /// [`LINGER_CAP_MS`] where the sink's policy lingers longer.
    linger_ms: Option<u64>,
}

/// A pipeline file reading `topic` in `group` into `sink` (a `[sink]` section), lingering at
/// most `linger_ms` when given.
fn pipeline_text(
    brokers: &str,
    group: &str,
    topic: &Topic,
    linger_ms: Option<u64>,
    sink: &str,
) -> String {
    let batch = linger_ms.map_or(String::new(), |ms| format!("[batch]\nlinger_ms = {ms}\n\n"));
    format!(
        "[kafka]\nbrokers = {}\ngroup = {}\ntopics = [{}]\n\n{batch}{sink}",
        toml_string(brokers),
        toml_string(group),
        toml_string(&topic.name)
    )
}

/// Records per batch the runtime cuts under `limits` from records of `record_bytes` each.
fn per_batch(limits: &BatchLimits, record_bytes: u64) -> u64 {
    let by_bytes = (limits.max_bytes as u64 / record_bytes.max(1)).max(1);
    (limits.max_records as u64).min(by_bytes)
}

impl Bench<'_> {
    /// Checks that `isolation` holds exactly `topic`'s records, each once.
    async fn check(&self, isolation: &str, topic: &Topic, what: &str) -> Result<(), String> {
        let stored = self.dest.read(isolation, &topic.name).await?;
        held_exactly(
            &format!("{what} ({isolation})"),
            &stored.rows,
            stored.physical.map(|(rows, _)| rows),
            &topic.expected(),
        )
    }

    /// The sink alone writing `topic`'s records into `isolation`, in the runtime's batch
    /// sizes, the partitions in turn; opened untimed, checked after.
    async fn sink_write(
        &self,
        topic: &Topic,
        isolation: &str,
    ) -> Result<(Moved, BatchLimits), String> {
        let section = self.dest.sink_toml(isolation, self.addr).await?;
        let text = pipeline_text(self.brokers, "-", topic, self.linger_ms, &section);
        let pipeline = Pipeline::from_toml(&text).map_err(|e| e.to_string())?;
        let sink = pipeline.sink.build().await.map_err(|e| e.to_string())?;
        let limits = pipeline.batch.limits(sink.commit_policy());
        let n = per_batch(&limits, topic.record_bytes());
        let mut batches = Vec::new();
        for first in (0..topic.per_partition).step_by(n as usize) {
            for p in 0..topic.partitions {
                batches.push(topic.batch(p, first, n)?);
            }
        }
        sink.open().await.map_err(|e| e.to_string())?;
        let started = Instant::now();
        for b in &batches {
            consume_checked(sink.as_ref(), b, b.len() as u64, "the sink's own write").await?;
        }
        let total = started.elapsed();
        sink.close().await.map_err(|e| e.to_string())?;
        self.check(isolation, topic, "the sink's own write").await?;
        let moved = Moved {
            total,
            steady_per_s: steady(topic.records(), total),
        };
        Ok((moved, limits))
    }

    /// `pico-kafka` moving `topic` into `isolation`, checked after.
    async fn runtime(&self, topic: &Topic, isolation: &str) -> Result<RuntimeRun, String> {
        let group = format!("{isolation}-group");
        let section = self.dest.sink_toml(isolation, self.addr).await?;
        let file = self.dir.join(format!("{isolation}.toml"));
        std::fs::write(
            &file,
            pipeline_text(self.brokers, &group, topic, self.linger_ms, &section),
        )
        .map_err(|e| format!("{}: {e}", file.display()))?;
        let log = self.dir.join(format!("{isolation}.log"));
        let run = run_runtime(self.bin, &file, &log, self.brokers, &group, topic).await?;
        self.check(isolation, topic, "pico-kafka").await?;
        Ok(run)
    }

    /// Every path over `topic`: one unmeasured run each, then the repetitions.
    async fn measure(&self, topic: &Topic) -> Result<EndToEndRow, String> {
        let reps = self.size.reps();
        let (mut consumed, mut written, mut runs) = (Vec::new(), Vec::new(), Vec::new());
        let mut limits = None;
        for rep in std::iter::once(reps).chain(0..reps) {
            let measured = rep < reps;
            for path in order(rep) {
                let isolation = format!(
                    "e2e-{:08x}-{}-{}p-{rep}",
                    self.tag, self.id, topic.partitions
                );
                info!(
                    sink = self.id,
                    partitions = topic.partitions,
                    rep,
                    ?path,
                    measured,
                    "end to end"
                );
                match path {
                    Path3::RawConsume => {
                        let m = raw_consume(self.brokers, topic).await?;
                        if measured {
                            consumed.push(m);
                        }
                    }
                    Path3::SinkWrite => {
                        let (m, l) = self.sink_write(topic, &format!("{isolation}-own")).await?;
                        limits = Some(l);
                        if measured {
                            written.push(m);
                        }
                    }
                    Path3::Runtime => {
                        let r = self.runtime(topic, &isolation).await?;
                        if measured {
                            runs.push(r);
                        }
                    }
                }
            }
        }
        let limits = limits.ok_or("no sink write ran")?;
        let ratios: Vec<f64> = runs
            .iter()
            .zip(consumed.iter().zip(&written))
            .map(|(r, (c, w))| r.moved.steady_per_s / c.steady_per_s.min(w.steady_per_s))
            .collect();
        let lowest = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let highest = ratios.iter().copied().fold(0.0, f64::max);
        let e2e: Vec<Moved> = runs.iter().map(|r| r.moved).collect();
        Ok(EndToEndRow {
            sink: self.id.into(),
            server: self.dest.info().await,
            broker: self.broker.clone(),
            partitions: topic.partitions,
            records: topic.records(),
            record_bytes: topic.record_bytes(),
            max_records: limits.max_records as u64,
            max_bytes: limits.max_bytes as u64,
            linger_ms: limits.linger_ms,
            reps,
            raw_consume: figures(&consumed),
            sink_write: figures(&written),
            end_to_end: figures(&e2e),
            per_slower_range: (lowest, highest),
            peak_rss_bytes: runs.iter().map(|r| r.peak_rss).max().unwrap_or(0),
            verified_records: topic.records(),
        })
    }
}

/// The linger the sink's commit policy asks of the runtime, when it asks one.
async fn policy_linger(
    dest: &dyn RuntimeDestination,
    addr: SocketAddr,
    brokers: &str,
    topic: &Topic,
) -> Result<Option<u64>, String> {
    let section = dest.sink_toml("e2e-policy", addr).await?;
    let pipeline = Pipeline::from_toml(&pipeline_text(brokers, "-", topic, None, &section))
        .map_err(|e| e.to_string())?;
    let sink = pipeline.sink.build().await.map_err(|e| e.to_string())?;
    Ok(sink.commit_policy().map(|p| p.max_latency_ms))
}

/// Medians of `runs`.
fn figures(runs: &[Moved]) -> PathFigures {
    PathFigures {
        total_ms: median_f64(
            runs.iter()
                .map(|m| m.total.as_secs_f64() * 1000.0)
                .collect(),
        ),
        steady_per_s: median_f64(runs.iter().map(|m| m.steady_per_s).collect()),
    }
}

/// Measures every destination of [`DESTINATIONS`] (those named in `only`, when it names any)
/// over both layouts.
pub async fn end_to_end(size: BenchSize, only: &[String]) -> Result<Vec<EndToEndRow>, String> {
    let bin = runtime_binary()?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let broker = first_available(Broker::provide).await?;
    let tag = fastrand::u32(..);
    let mut topics = Vec::new();
    for partitions in LAYOUTS {
        let n = records(size);
        let topic = Topic {
            name: format!("bench-e2e-{tag:08x}-{partitions}p"),
            partitions,
            per_partition: n / u64::from(partitions),
        };
        broker.create_topic(&topic.name, partitions as i32).await?;
        info!(topic = %topic.name, records = n, "producing");
        produce(&broker.brokers, &topic).await?;
        topics.push(topic);
    }
    let mut rows = Vec::new();
    for runtime in DESTINATIONS
        .iter()
        .filter(|r| only.is_empty() || only.iter().any(|o| o == r.id))
    {
        let dest = (runtime.provide)().await?;
        let addr = pico_conformance::proxy::resolve_url(&dest.upstream()?).await?;
        let linger_ms = policy_linger(dest.as_ref(), addr, &broker.brokers, &topics[0])
            .await?
            .filter(|ms| *ms > LINGER_CAP_MS)
            .map(|_| LINGER_CAP_MS);
        let bench = Bench {
            size,
            bin: &bin,
            dir: dir.path(),
            brokers: &broker.brokers,
            broker: broker.info(),
            id: runtime.id,
            dest: dest.as_ref(),
            addr,
            tag,
            linger_ms,
        };
        for topic in &topics {
            rows.push(bench.measure(topic).await?);
        }
        dest.stop().await?;
    }
    broker.stop().await?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_cut_by_records_or_by_bytes_whichever_binds_first() {
        let limits = |max_records, max_bytes| BatchLimits {
            max_records,
            max_bytes,
            linger_ms: 200,
        };
        assert_eq!(per_batch(&limits(500, 1 << 20), 1008), 500);
        assert_eq!(per_batch(&limits(10_000, 1 << 20), 1008), 1040);
        // A record larger than the byte limit still makes a batch of one.
        assert_eq!(per_batch(&limits(500, 100), 1008), 1);
    }

    #[test]
    fn each_path_leads_one_repetition_in_three() {
        let firsts: Vec<String> = (0..3).map(|rep| format!("{:?}", order(rep)[0])).collect();
        assert_eq!(firsts, ["RawConsume", "SinkWrite", "Runtime"]);
        assert_eq!(format!("{:?}", order(3)), format!("{:?}", order(0)));
    }
}
