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

/// One repetition: the raw path, the sink's first write and its replay.
pub struct Sample {
    /// The raw anchor's time.
    pub raw: Duration,
    /// The sink's first write.
    pub first: Duration,
    /// The sink's replay of the same batch.
    pub replay: Duration,
}

/// Runs `sample(batch size, repetition)` `size.reps()` times per batch size and returns the
/// medians.
pub async fn compare(
    size: BenchSize,
    mut sample: impl AsyncFnMut(u64, usize) -> Result<Sample, String>,
) -> Result<Vec<BenchRow>, String> {
    let mut rows = Vec::new();
    for records in SIZES {
        let (mut raw, mut first, mut replay) = (Vec::new(), Vec::new(), Vec::new());
        for rep in 0..size.reps() {
            let s = sample(records, rep).await?;
            raw.push(s.raw);
            first.push(s.first);
            replay.push(s.replay);
        }
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        rows.push(BenchRow {
            records,
            bytes: payload_bytes(&batch(0, 0, records)),
            raw_ms: ms(median(raw)),
            first_ms: ms(median(first)),
            replay_ms: ms(median(replay)),
        });
        tracing::info!(records, "measured");
    }
    Ok(rows)
}
