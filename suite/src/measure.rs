//! The measuring kit of the benchmarks: the records measured, a sink's first write and replay
//! timed, repeated samples reduced to medians beside the raw anchor's, and the rows they make
//! ([`SinkBench`]). Each destination's anchor (`destinations/<x>/bench.rs`) measures with it and
//! the bench suite ([`crate::bench`]) runs the anchors and writes the report; both import this
//! module, it imports neither.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use pico_conformance::target::{ReadRow, Readback};
use pico_sink::identity::RecordId;
use pico_sink::{Batch, Record, Sink};
use serde::{Deserialize, Serialize};

/// How large a run was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BenchSize {
    /// Five repetitions, 100 earlier batches before a cold replay, 100 000 records for the
    /// lakehouse volume figures.
    Full,
    /// Two repetitions, 20 earlier batches before a cold replay, 20 000 records for the volume
    /// figures (CI).
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

    /// Earlier batches of the same partition (of [`HISTORY_BATCH_RECORDS`] records each) the
    /// place of a cold replay holds before the replayed batch. Quickwit's ingest answers after
    /// its next commit (about 3 s here), so these cost it minutes: the reduced size writes fewer.
    pub fn history_batches(self) -> u64 {
        match self {
            BenchSize::Full => 100,
            BenchSize::Reduced => 20,
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

/// Medians of one batch size: the raw anchor, the sink's first write and its replays.
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
    /// The warm replay: the same batch again through the instance that has just written it,
    /// into a place holding only that batch, milliseconds (median).
    pub replay_ms: f64,
    /// The cold replay, as after a restart: the batch through a new sink instance, into a place
    /// that holds earlier batches of the same partition ([`BenchSize::history_batches`]) and the
    /// batch itself, milliseconds (median); none in a report from before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold_replay_ms: Option<f64>,
    /// The lowest and highest first / raw of one repetition (the spread behind the medians);
    /// none in a report from before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_per_raw_range: Option<(f64, f64)>,
    /// Whether every place the sink wrote was read back after each write and replay and held
    /// exactly the records sent, each once (a run that found otherwise fails instead); false
    /// in a report from before the check.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held_checked: bool,
}

impl BenchRow {
    /// The sink's first-write throughput as a share of the raw anchor's.
    pub fn first_per_raw(&self) -> f64 {
        self.raw_ms / self.first_ms
    }

    /// What a warm replay costs as a share of a first write (time).
    pub fn replay_per_first(&self) -> f64 {
        self.replay_ms / self.first_ms
    }

    /// What a cold replay costs as a share of a first write (time), when it was measured.
    pub fn cold_replay_per_first(&self) -> Option<f64> {
        self.cold_replay_ms.map(|cold| cold / self.first_ms)
    }

    /// The replay the goals judge: the cold one where it was measured, else the warm one.
    pub fn judged_replay_per_first(&self) -> f64 {
        self.cold_replay_per_first()
            .unwrap_or_else(|| self.replay_per_first())
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

/// The median of `v` (the upper one of an even count, as [`median`]).
pub fn median_f64(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// Records in each earlier batch the place of a cold replay holds
/// ([`BenchSize::history_batches`]).
pub const HISTORY_BATCH_RECORDS: u64 = 100;

/// Where one timing of a sink writes: a sink's maker (see [`compare`]) names its table, index,
/// database or prefix after it (`Display`: `1000_3`, `1000_history`), so that no two timings
/// share a place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// The place of one repetition's first write and warm replay (the warm-up's too).
    Rep {
        /// Records per batch.
        records: u64,
        /// The repetition (the warm-up is `reps`).
        rep: usize,
    },
    /// The place of every cold replay of one batch size: the earlier batches and the batch.
    History {
        /// Records per batch.
        records: u64,
    },
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Rep { records, rep } => write!(f, "{records}_{rep}"),
            Place::History { records } => write!(f, "{records}_history"),
        }
    }
}

impl Place {
    /// What the place must hold once written: (partition, offset) of every record sent to it,
    /// each once, in order.
    fn expected(self, size: BenchSize) -> Vec<(u32, u64)> {
        match self {
            Place::Rep { records, rep } => (0..records).map(|o| (rep as u32, o)).collect(),
            Place::History { records } => (0..size.history_batches() * HISTORY_BATCH_RECORDS
                + records)
                .map(|o| (0, o))
                .collect(),
        }
    }
}

/// Checks that `place` holds exactly the records sent to it, each once, as `held` reads it:
/// a benchmark whose sink lost or repeated a record would not measure what it says.
async fn check_held(
    held: &impl AsyncFn(Place) -> Result<Readback, String>,
    place: Place,
    size: BenchSize,
) -> Result<(), String> {
    let back = held(place).await?;
    held_exactly(
        &place.to_string(),
        &back.rows,
        back.physical_rows,
        &place.expected(size),
    )
}

/// Checks that `rows` (what `what` holds) are exactly `expected` (`(partition, offset)`,
/// sorted), each once, and that the destination physically stores that many rows where it
/// says (`physical`).
pub(crate) fn held_exactly(
    what: &str,
    rows: &[ReadRow],
    physical: Option<u64>,
    expected: &[(u32, u64)],
) -> Result<(), String> {
    let mut ids: Vec<(u32, u64)> = rows.iter().map(|r| (r.id.partition, r.id.offset)).collect();
    ids.sort_unstable();
    if ids != expected {
        let rows = ids.len();
        ids.dedup();
        let missing = expected.iter().filter(|e| ids.binary_search(e).is_err());
        return Err(format!(
            "{what} holds {rows} rows of {} distinct records where exactly the {} records sent \
             were expected, each once ({} of them missing)",
            ids.len(),
            expected.len(),
            missing.count()
        ));
    }
    if let Some(physical) = physical
        && physical != expected.len() as u64
    {
        return Err(format!(
            "{what} stores {physical} physical rows for the {} records sent",
            expected.len()
        ));
    }
    Ok(())
}

/// A batch consumed by `sink`, checked to have written `expected` records.
pub(crate) async fn consume_checked(
    sink: &dyn Sink,
    b: &Batch,
    expected: u64,
    what: &str,
) -> Result<Duration, String> {
    let started = Instant::now();
    let outcome = sink.consume(b).await.map_err(|e| e.to_string())?;
    let elapsed = started.elapsed();
    if outcome.written != expected {
        return Err(format!(
            "{what} wrote {} of {} records, where {expected} was expected: the benchmark would \
             not measure what it says",
            outcome.written,
            b.len()
        ));
    }
    Ok(elapsed)
}

/// Times a new sink's first write of `b` and its warm replay (the same batch again through the
/// same instance); a first write that does not write every record, or a replay that writes, is
/// an error.
pub async fn time_sink(sink: &dyn Sink, b: &Batch) -> Result<(Duration, Duration), String> {
    sink.open().await.map_err(|e| e.to_string())?;
    let first = consume_checked(sink, b, b.len() as u64, "the first write").await?;
    let replay = consume_checked(sink, b, 0, "the warm replay").await?;
    Ok((first, replay))
}

/// The batch a cold replay replays at `records`: partition 0, right after the earlier batches.
fn replayed_batch(size: BenchSize, records: u64) -> Batch {
    batch(0, size.history_batches() * HISTORY_BATCH_RECORDS, records)
}

/// Fills the cold replay's place for `records` through one instance (untimed): the earlier
/// batches of partition 0 ([`BenchSize::history_batches`]), then the replayed batch; then
/// closes it.
async fn write_history<S: Sink>(
    make: &impl AsyncFn(Place) -> Result<S, String>,
    held: &impl AsyncFn(Place) -> Result<Readback, String>,
    size: BenchSize,
    records: u64,
) -> Result<(), String> {
    let sink = make(Place::History { records }).await?;
    sink.open().await.map_err(|e| e.to_string())?;
    for n in 0..size.history_batches() {
        let earlier = batch(0, n * HISTORY_BATCH_RECORDS, HISTORY_BATCH_RECORDS);
        consume_checked(&sink, &earlier, HISTORY_BATCH_RECORDS, "an earlier batch").await?;
    }
    let b = replayed_batch(size, records);
    consume_checked(&sink, &b, records, "the replayed batch's first write").await?;
    sink.close().await.map_err(|e| e.to_string())?;
    check_held(held, Place::History { records }, size).await
}

/// Times the cold replay at `records`: a new instance (opened untimed, as a restarted process
/// opens its sink before its first batch) replays the batch into the place
/// [`write_history`] filled; it must write nothing, and the place must hold what it held.
async fn time_cold<S: Sink>(
    make: &impl AsyncFn(Place) -> Result<S, String>,
    held: &impl AsyncFn(Place) -> Result<Readback, String>,
    size: BenchSize,
    records: u64,
) -> Result<Duration, String> {
    let sink = make(Place::History { records }).await?;
    sink.open().await.map_err(|e| e.to_string())?;
    let b = replayed_batch(size, records);
    let replay = consume_checked(&sink, &b, 0, "the cold replay").await?;
    sink.close().await.map_err(|e| e.to_string())?;
    check_held(held, Place::History { records }, size).await?;
    Ok(replay)
}

/// The sink's timings of one repetition: first write and warm replay in the repetition's own
/// place (partition `rep`), checked to hold the batch once, then the cold replay.
async fn time_rep<S: Sink>(
    make: &impl AsyncFn(Place) -> Result<S, String>,
    held: &impl AsyncFn(Place) -> Result<Readback, String>,
    size: BenchSize,
    records: u64,
    rep: usize,
) -> Result<(Duration, Duration, Duration), String> {
    let place = Place::Rep { records, rep };
    let sink = make(place).await?;
    let (first, warm) = time_sink(&sink, &batch(rep as u32, 0, records)).await?;
    sink.close().await.map_err(|e| e.to_string())?;
    check_held(held, place, size).await?;
    let cold = time_cold(make, held, size, records).await?;
    Ok((first, warm, cold))
}

/// Repetitions per batch size, each timing the raw anchor (`raw(records, rep)`) and the sink
/// made by `make` for each [`Place`]: its first write and warm replay, then its cold replay
/// through a new instance into a place with history (`write_history`, filled once per batch
/// size before the repetitions), reduced to medians. After every write and replay, `held`
/// reads the place back (untimed), which must hold exactly the records sent, each once. Each
/// path first runs once unmeasured (repetition index `size.reps()`), so neither meets a cold
/// server, cold caches or a cold client that the other has already warmed; then the order
/// alternates, the anchor first in even repetitions and the sink first in odd ones, so neither
/// always runs right after the other. Each raw call must write into a place of its own (the
/// repetition index names it).
pub async fn compare<S: Sink>(
    size: BenchSize,
    mut raw: impl AsyncFnMut(u64, usize) -> Result<Duration, String>,
    make: impl AsyncFn(Place) -> Result<S, String>,
    held: impl AsyncFn(Place) -> Result<Readback, String>,
) -> Result<Vec<BenchRow>, String> {
    let mut rows = Vec::new();
    for records in SIZES {
        write_history(&make, &held, size, records).await?;
        let warm_up = size.reps();
        raw(records, warm_up).await?;
        time_rep(&make, &held, size, records, warm_up).await?;
        let (mut raws, mut firsts, mut warms, mut colds) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for rep in 0..size.reps() {
            let (r, (first, warm, cold)) = if rep % 2 == 0 {
                let r = raw(records, rep).await?;
                (r, time_rep(&make, &held, size, records, rep).await?)
            } else {
                let s = time_rep(&make, &held, size, records, rep).await?;
                (raw(records, rep).await?, s)
            };
            raws.push(r);
            firsts.push(first);
            warms.push(warm);
            colds.push(cold);
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
            replay_ms: ms(median(warms)),
            cold_replay_ms: Some(ms(median(colds))),
            first_per_raw_range: Some((low, high)),
            held_checked: true,
        });
        tracing::info!(records, "measured");
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a place holding `ids` (partition, offset) reads back as.
    fn back(ids: &[(u32, u64)], physical: Option<u64>) -> Readback {
        let rows = ids
            .iter()
            .map(|&(p, o)| ReadRow {
                id: RecordId::new("bench.readings", p, o),
                value: bytes::Bytes::new(),
                checksum: 0,
            })
            .collect();
        Readback {
            rows,
            physical_rows: physical,
            notes: Vec::new(),
        }
    }

    #[tokio::test]
    async fn a_place_must_hold_exactly_what_was_sent_each_once() {
        let place = Place::Rep { records: 3, rep: 1 };
        let size = BenchSize::Reduced;
        let held = |ids: Vec<(u32, u64)>, physical: Option<u64>| {
            async move |_: Place| -> Result<Readback, String> { Ok(back(&ids, physical)) }
        };
        let exact = vec![(1, 2), (1, 0), (1, 1)];
        assert_eq!(
            check_held(&held(exact.clone(), None), place, size).await,
            Ok(())
        );
        assert_eq!(
            check_held(&held(exact.clone(), Some(3)), place, size).await,
            Ok(())
        );
        let repeated = vec![(1, 0), (1, 1), (1, 1), (1, 2)];
        let error = check_held(&held(repeated, None), place, size).await;
        assert_eq!(
            error,
            Err(
                "3_1 holds 4 rows of 3 distinct records where exactly the 3 records sent were \
                 expected, each once (0 of them missing)"
                    .into()
            )
        );
        let lost = vec![(1, 0), (1, 2)];
        let error = check_held(&held(lost, None), place, size).await;
        assert!(error.is_err_and(|e| e.contains("(1 of them missing)")));
        let other_partition = vec![(0, 0), (0, 1), (0, 2)];
        assert!(
            check_held(&held(other_partition, None), place, size)
                .await
                .is_err()
        );
        let physical_repeat = check_held(&held(exact, Some(4)), place, size).await;
        assert_eq!(
            physical_repeat,
            Err("3_1 stores 4 physical rows for the 3 records sent".into())
        );
        let history = Place::History { records: 5 };
        assert_eq!(history.expected(size).len(), 20 * 100 + 5);
        assert_eq!(history.to_string(), "5_history");
    }
}
