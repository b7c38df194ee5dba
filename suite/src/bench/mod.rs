//! `pico-bench`: each sink beside its destination's raw bulk path, measured on the same server
//! in the same run and reported as ratios ([`report`]).

mod clickhouse;
mod identity;
mod influxdb;
mod lakehouse;
mod pipeline;
mod postgres;
mod quickwit;
pub mod report;
mod s3;
mod soak;

use std::time::{Duration, Instant};

use pico_sink::identity::RecordId;
use pico_sink::{Batch, Record, Sink};

pub use clickhouse::clickhouse;
pub use identity::identity;
pub use influxdb::influxdb;
pub use lakehouse::{Lakehouse, lakehouse};
pub use pipeline::pipeline;
pub use postgres::{postgres, redshift};
pub use quickwit::quickwit;
pub use report::PipelineBench;
use report::{BenchRow, BenchSize};
pub use s3::s3;
pub use soak::{SOAK_BATCH, Store, soak, soak_commits, soak_window, soaks};

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
