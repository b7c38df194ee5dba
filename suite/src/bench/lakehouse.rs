//! Delta Lake and Iceberg against a plain append of the same rows to the same table format,
//! plus commits and data files per volume written through the sink.

use std::path::Path;
use std::time::{Duration, Instant};

use pico_sink::{Batch, Sink};

use super::report::{BenchSize, SinkBench};
use super::{Sample, batch, compare, time_sink};

/// Which table format a run measures.
#[derive(Debug, Clone, Copy)]
pub enum Lakehouse {
    /// Delta Lake (delta-rs), local filesystem.
    Delta,
    /// Apache Iceberg (iceberg-rust), SQL catalog on SQLite, local warehouse.
    Iceberg,
}

enum LakehouseSink {
    Delta(pico_sink_delta::DeltaSink),
    Iceberg(pico_sink_iceberg::IcebergSink),
}

impl LakehouseSink {
    async fn new(format: Lakehouse, dir: &Path, name: &str) -> Result<Self, String> {
        Ok(match format {
            Lakehouse::Delta => Self::Delta(pico_sink_delta::DeltaSink::new(
                pico_sink_delta::DeltaSinkConfig::new(dir.join(name).display().to_string()),
            )),
            Lakehouse::Iceberg => Self::Iceberg(
                pico_sink_iceberg::IcebergSink::sqlite(
                    &dir.join("catalog.db").display().to_string(),
                    &dir.join("warehouse").display().to_string(),
                    pico_sink_iceberg::IcebergSinkConfig::new("bench", name),
                )
                .await
                .map_err(|e| e.to_string())?,
            ),
        })
    }

    fn sink(&self) -> &dyn Sink {
        match self {
            Self::Delta(s) => s,
            Self::Iceberg(s) => s,
        }
    }

    async fn append_unguarded(&self, b: &Batch) -> Result<(), String> {
        match self {
            Self::Delta(s) => s.append_unguarded(b).await,
            Self::Iceberg(s) => s.append_unguarded(b).await,
        }
        .map_err(|e| e.to_string())
    }

    /// (commits, data files) of the table.
    async fn stats(&self, dir: &Path, name: &str) -> Result<(usize, usize), String> {
        match self {
            // Every commit is one JSON log entry; the first one creates the table.
            Self::Delta(_) => {
                let table = dir.join(name);
                let log = table.join("_delta_log");
                // Checkpoints are parquet files too, inside the log.
                Ok((
                    count_files(&log, "json").saturating_sub(1),
                    count_files(&table, "parquet") - count_files(&log, "parquet"),
                ))
            }
            Self::Iceberg(s) => {
                pico_sink_iceberg::table_stats(s.catalog().as_ref(), s.table_ident()).await
            }
        }
    }
}

/// Files named `*.{ext}` under `dir`, recursively.
fn count_files(dir: &Path, ext: &str) -> usize {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .map(|p| {
            if p.is_dir() {
                count_files(&p, ext)
            } else {
                usize::from(p.extension().is_some_and(|x| x == ext))
            }
        })
        .sum()
}

/// Delta or Iceberg: first write and replay through the sink beside a plain append of the same
/// rows to the same format (no watermark read, no txn or snapshot property); then, per batch
/// size, commits and data files for `size.volume()` records written through the sink.
pub async fn lakehouse(format: Lakehouse, size: BenchSize) -> Result<SinkBench, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let rows = compare(size, async |records: u64, rep: usize| {
        let b = batch(rep as u32, 0, records);
        let plain = LakehouseSink::new(format, dir.path(), &format!("raw_{records}_{rep}")).await?;
        plain.sink().open().await.map_err(|e| e.to_string())?;
        let started = Instant::now();
        plain.append_unguarded(&b).await?;
        let raw = started.elapsed();
        let sink = LakehouseSink::new(format, dir.path(), &format!("sink_{records}_{rep}")).await?;
        let (first, replay) = time_sink(sink.sink(), &b).await?;
        Ok(Sample { raw, first, replay })
    })
    .await?;
    let mut notes = Vec::new();
    let total = size.volume();
    for records in super::SIZES {
        let name = format!("volume_{records}");
        let sink = LakehouseSink::new(format, dir.path(), &name).await?;
        sink.sink().open().await.map_err(|e| e.to_string())?;
        for first in (0..total).step_by(records as usize) {
            sink.sink()
                .consume(&batch(0, first, records))
                .await
                .map_err(|e| e.to_string())?;
        }
        let (commits, files) = sink.stats(dir.path(), &name).await?;
        notes.push(format!(
            "{total} records in batches of {records}: {commits} commits, {files} data files"
        ));
    }
    use crate::targets::{DELTA_RS_VERSION, ICEBERG_RUST_VERSION};
    let (sink, server) = match format {
        Lakehouse::Delta => (
            "delta",
            format!("delta-rs (deltalake) {DELTA_RS_VERSION}, local filesystem"),
        ),
        Lakehouse::Iceberg => (
            "iceberg",
            format!("iceberg-rust {ICEBERG_RUST_VERSION}, SQL catalog on SQLite, local warehouse"),
        ),
    };
    Ok(SinkBench {
        sink: sink.into(),
        server,
        raw_path: "plain append of the same rows, same format".into(),
        rows,
        notes,
    })
}

/// Bytes and files under `dir`, recursively.
fn usage(dir: &Path) -> (u64, u64) {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            let p = e.path();
            if p.is_dir() {
                usage(&p)
            } else {
                (e.metadata().map_or(0, |m| m.len()), 1)
            }
        })
        .fold((0, 0), |(b, f), (b2, f2)| (b + b2, f + f2))
}

/// Records per batch of the commit-cost run.
pub const COMMIT_BATCH: u64 = 100;
/// The commits whose latency the commit-cost run reports (1-based), each as the median of the
/// 9 around it.
pub const REPORTED_COMMITS: [usize; 3] = [1, 1_000, 2_000];

/// What one commit cost as the table grew ([`commit_cost`]).
#[derive(Debug, Clone)]
pub struct CommitCost {
    /// Commits made (one per batch).
    pub commits: usize,
    /// Wall time of all of them.
    pub wall: Duration,
    /// Per reported commit, the median latency of the commits around it.
    pub at: Vec<(usize, Duration)>,
    /// Files and bytes the table's directory holds at the end (data and metadata).
    pub files: u64,
    /// See `files`.
    pub bytes: u64,
    /// (snapshots or log entries, data files) of the table at the end.
    pub table: (usize, usize),
}

/// `commits` batches of [`COMMIT_BATCH`] records through the sink into a fresh local table, one
/// commit each: the latency of the commits around [`REPORTED_COMMITS`] and what the table holds
/// at the end. A commit whose cost grows with the table shows here first.
pub async fn commit_cost(format: Lakehouse, commits: usize) -> Result<CommitCost, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let name = "commit_cost";
    let sink = LakehouseSink::new(format, dir.path(), name).await?;
    sink.sink().open().await.map_err(|e| e.to_string())?;
    let mut latencies = Vec::with_capacity(commits);
    let started = Instant::now();
    for n in 0..commits as u64 {
        let b = batch(0, n * COMMIT_BATCH, COMMIT_BATCH);
        let t = Instant::now();
        let outcome = sink.sink().consume(&b).await.map_err(|e| e.to_string())?;
        latencies.push(t.elapsed());
        if outcome.written != COMMIT_BATCH {
            return Err(format!(
                "commit {} wrote {} of {COMMIT_BATCH} records",
                n + 1,
                outcome.written
            ));
        }
    }
    let wall = started.elapsed();
    let at = REPORTED_COMMITS
        .into_iter()
        .filter(|c| *c <= commits)
        .map(|c| {
            let window = latencies[c.saturating_sub(5)..(c + 4).min(commits)].to_vec();
            (c, super::median(window))
        })
        .collect();
    let (bytes, files) = usage(dir.path());
    Ok(CommitCost {
        commits,
        wall,
        at,
        files,
        bytes,
        table: sink.stats(dir.path(), name).await?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn commit_cost_counts_every_commit_of_both_formats() {
        for format in [Lakehouse::Delta, Lakehouse::Iceberg] {
            let cost = commit_cost(format, 12)
                .await
                .unwrap_or_else(|e| panic!("{format:?}: {e}"));
            assert_eq!(cost.commits, 12, "{format:?}");
            assert_eq!(cost.at.len(), 1, "{format:?}: only commit 1 is within 12");
            assert_eq!(cost.table.1, 12, "{format:?}: one data file per commit");
            assert!(cost.files > 12 && cost.bytes > 0, "{format:?}: {cost:?}");
        }
    }
}
