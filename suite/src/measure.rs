//! The measuring kit of the benchmarks: the records measured, a sink's first write and replay
//! timed, repeated samples reduced to medians beside the raw anchor's, and the rows they make
//! ([`SinkBench`]). Each destination's anchor (`destinations/<x>/bench.rs`) measures with it and
//! the bench suite ([`crate::bench`]) runs the anchors and writes the report; both import this
//! module, it imports neither.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use pico_sink::identity::RecordId;
use pico_sink::{Batch, Record, Sink};
use serde::{Deserialize, Serialize};

/// How large a run was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BenchSize {
    /// Five repetitions, 100 000 records for the lakehouse volume figures.
    Full,
    /// Two repetitions, 20 000 records for the volume figures (CI).
    Reduced,
}

impl BenchSize {
    /// Repetitions per measurement (the median is reported).
    pub fn reps(self) -> usize {
        match self {
            BenchSize::Full => 5,
            BenchSize::Reduced => 2,
        }
    }

    /// Records written through a lakehouse sink for its commits-and-files figures.
    pub fn volume(self) -> u64 {
        match self {
            BenchSize::Full => 100_000,
            BenchSize::Reduced => 20_000,
        }
    }

    /// The size's name.
    pub fn id(self) -> &'static str {
        match self {
            BenchSize::Full => "full",
            BenchSize::Reduced => "reduced",
        }
    }
}

/// Medians of one batch size: the raw anchor, the sink's first write and its replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchRow {
    /// Records per batch.
    pub records: u64,
    /// Payload bytes per batch.
    pub bytes: u64,
    /// The destination's raw bulk path, milliseconds (median).
    pub raw_ms: f64,
    /// The sink's first write of the batch, milliseconds (median).
    pub first_ms: f64,
    /// The sink's replay of the same batch, milliseconds (median).
    pub replay_ms: f64,
    /// The lowest and highest first / raw of one repetition (the spread behind the medians);
    /// none in a report from before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_per_raw_range: Option<(f64, f64)>,
}

impl BenchRow {
    /// The sink's first-write throughput as a share of the raw anchor's.
    pub fn first_per_raw(&self) -> f64 {
        self.raw_ms / self.first_ms
    }

    /// What a replay costs as a share of a first write (time).
    pub fn replay_per_first(&self) -> f64 {
        self.replay_ms / self.first_ms
    }

    /// Whether the sink wrote faster than its own raw anchor: the anchor is the destination's
    /// bare path for the same rows, so this is a measurement to explain (an order or warm-up
    /// effect, an anchor doing more than the sink) before the figure is trusted.
    pub fn faster_than_anchor(&self) -> bool {
        self.first_per_raw() > 1.0
    }
}

/// One sink's measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SinkBench {
    /// Short sink id (`postgres`, `clickhouse`, …).
    pub sink: String,
    /// The server it ran against, with its version.
    pub server: String,
    /// What the raw anchor is.
    pub raw_path: String,
    /// One row per batch size.
    pub rows: Vec<BenchRow>,
    /// Further measured figures (commits and files per volume, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A benchmark of one sink under way ([`crate::destinations::Entry::bench`]).
pub type Measuring = Pin<Box<dyn Future<Output = Result<SinkBench, String>>>>;

/// The batch sizes every sink is measured at.
pub const SIZES: [u64; 2] = [1_000, 10_000];

/// A record of about 1 KiB of JSON.
pub fn record(partition: u32, offset: u64) -> Record {
    let filler: String = (0..960)
        .map(|i| (b'a' + ((offset as usize + i) % 26) as u8) as char)
        .collect();
    Record::new(
        RecordId::new("bench.readings", partition, offset),
        format!(
            "{{\"offset\":{offset},\"meter\":\"M{:05}\",\"payload\":\"{filler}\"}}",
            offset % 99_999
        ),
    )
    .with_key(format!("M{:05}", offset % 99_999))
    .with_timestamp_ms(1_767_225_600_000 + offset as i64)
}

/// `n` records of `partition` from offset `first`.
pub fn batch(partition: u32, first: u64, n: u64) -> Batch {
    Batch::new((first..first + n).map(|o| record(partition, o)).collect())
        .unwrap_or_else(|e| unreachable!("consecutive offsets of one partition: {e}"))
}

/// Payload bytes of a batch.
pub fn payload_bytes(b: &Batch) -> u64 {
    b.records().iter().map(|r| r.value.len() as u64).sum()
}

/// The median of `v` (the upper one of an even count).
pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// Times the sink's first write and replay of `b`; a replay that writes is an error (the
/// benchmark would not measure what it says).
pub async fn time_sink(sink: &dyn Sink, b: &Batch) -> Result<(Duration, Duration), String> {
    sink.open().await.map_err(|e| e.to_string())?;
    let started = Instant::now();
    let first = sink.consume(b).await.map_err(|e| e.to_string())?;
    let first_time = started.elapsed();
    if first.written != b.len() as u64 {
        return Err(format!(
            "the first write wrote {} of {} records",
            first.written,
            b.len()
        ));
    }
    let started = Instant::now();
    let replay = sink.consume(b).await.map_err(|e| e.to_string())?;
    let replay_time = started.elapsed();
    if replay.written != 0 {
        return Err(format!(
            "the replay wrote {} of {} records: it was not answered as already present",
            replay.written,
            b.len()
        ));
    }
    Ok((first_time, replay_time))
}

/// Repetitions per batch size, each timing the raw anchor (`raw(records, rep)`) and the sink
/// (`sink(records, rep)`: its first write and replay), reduced to medians. Each path first runs
/// once unmeasured (repetition index `size.reps()`), so neither meets a cold server, cold
/// caches or a cold client that the other has already warmed; then the order alternates, the
/// anchor first in even repetitions and the sink first in odd ones, so neither always runs
/// right after the other. Each call must write into a place of its own (the repetition index
/// names it).
pub async fn compare(
    size: BenchSize,
    mut raw: impl AsyncFnMut(u64, usize) -> Result<Duration, String>,
    mut sink: impl AsyncFnMut(u64, usize) -> Result<(Duration, Duration), String>,
) -> Result<Vec<BenchRow>, String> {
    let mut rows = Vec::new();
    for records in SIZES {
        let warm_up = size.reps();
        raw(records, warm_up).await?;
        sink(records, warm_up).await?;
        let (mut raws, mut firsts, mut replays) = (Vec::new(), Vec::new(), Vec::new());
        for rep in 0..size.reps() {
            let (r, (first, replay)) = if rep % 2 == 0 {
                let r = raw(records, rep).await?;
                (r, sink(records, rep).await?)
            } else {
                let s = sink(records, rep).await?;
                (raw(records, rep).await?, s)
            };
            raws.push(r);
            firsts.push(first);
            replays.push(replay);
        }
        let ratios: Vec<f64> = raws
            .iter()
            .zip(&firsts)
            .map(|(r, f)| r.as_secs_f64() / f.as_secs_f64())
            .collect();
        let low = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let high = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        rows.push(BenchRow {
            records,
            bytes: payload_bytes(&batch(0, 0, records)),
            raw_ms: ms(median(raws)),
            first_ms: ms(median(firsts)),
            replay_ms: ms(median(replays)),
            first_per_raw_range: Some((low, high)),
        });
        tracing::info!(records, "measured");
    }
    Ok(rows)
}
