//! The commit-cost soak: many small commits through a lakehouse sink into one table, locally
//! and on S3, and whether a commit late in the table's life costs what an early one did.

use std::collections::HashMap;

use pico_sink::Sink;
use std::path::Path;
use std::time::{Duration, Instant};

use super::lakehouse::{Lakehouse, LakehouseSink};
use super::report::{BenchSize, SoakRow};
use super::{batch, median};
use crate::provide::first_available;
use crate::serve::Server;
use crate::serve::s3::S3Server;

/// Records per commit of the soak (small on purpose: the cost measured is the commit's own).
pub const SOAK_BATCH: u64 = 100;
/// The bucket the S3 soaks write to.
const BUCKET: &str = "bench";

/// Where a soak's table lives.
pub enum Store<'a> {
    /// A temporary local directory.
    Local,
    /// The S3 server, under a fresh prefix.
    S3(&'a S3Server),
}

/// Commits per soak at `size`.
pub fn soak_commits(size: BenchSize) -> usize {
    match size {
        BenchSize::Full => 10_000,
        BenchSize::Reduced => 1_000,
    }
}

/// Commits per latency window of a soak of `commits`: a tenth, at most 1 000.
pub fn soak_window(commits: usize) -> usize {
    (commits / 10).clamp(1, 1_000)
}

/// Every soak of the report: delta, delta-s3, iceberg and iceberg-s3, `commits` each, with
/// latency windows of `window` commits.
/// Each S3 soak has a server of its own, so that what one soak left (a delta-s3 table of 10 000
/// commits holds gigabytes) neither fills the next one's server nor slows it.
pub async fn soaks(commits: usize, window: usize) -> Result<Vec<SoakRow>, String> {
    let mut rows = Vec::new();
    for format in [Lakehouse::Delta, Lakehouse::Iceberg] {
        rows.push(soak(format, Store::Local, commits, window).await?);
        let server = first_available(S3Server::provide).await?;
        server.ensure_bucket(BUCKET).await?;
        let row = soak(format, Store::S3(&server), commits, window).await;
        server.stop().await?;
        rows.push(row?);
    }
    Ok(rows)
}

/// `commits` batches of [`SOAK_BATCH`] records through the sink into a fresh table, one commit
/// each: the median latency of the first and of the last `window` commits, and what the
/// table's storage holds at the end.
pub async fn soak(
    format: Lakehouse,
    store: Store<'_>,
    commits: usize,
    window: usize,
) -> Result<SoakRow, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let name = "soak";
    // On S3 the run's objects live under a prefix named like its local directory.
    let run = dir
        .path()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (sink, on) = match &store {
        Store::Local => (
            LakehouseSink::new(format, dir.path(), name).await?,
            "local filesystem".to_owned(),
        ),
        Store::S3(server) => {
            let info = server.info();
            (
                LakehouseSink::on_s3(format, dir.path(), server, &format!("s3://{BUCKET}/{run}"))
                    .await?,
                format!("{} {}", info.name, info.version),
            )
        }
    };
    let label = match (&format, &store) {
        (Lakehouse::Delta, Store::Local) => "delta",
        (Lakehouse::Delta, Store::S3(_)) => "delta-s3",
        (Lakehouse::Iceberg, Store::Local) => "iceberg",
        (Lakehouse::Iceberg, Store::S3(_)) => "iceberg-s3",
    };
    sink.sink().open().await.map_err(|e| e.to_string())?;
    let Commits { latencies, retries } = commit_all(sink.sink(), label, commits).await?;
    let wall: Duration = latencies.iter().sum();
    let window = window.clamp(1, commits.max(1));
    let ms = |v: &[Duration]| median(v.to_vec()).as_secs_f64() * 1e3;
    let files = match &store {
        Store::Local => local_objects(dir.path()),
        Store::S3(server) => s3_objects(server, &run).await?,
    };
    let usage = Usage::of(&files);
    let kept = match &sink {
        LakehouseSink::Iceberg(_) => sink.stats(dir.path(), name).await?.0 as u64,
        // One JSON entry per version, until the log cleanup removes expired ones.
        LakehouseSink::Delta(_) => files
            .keys()
            .filter(|k| k.contains("/_delta_log/") && k.ends_with(".json"))
            .count() as u64,
    };
    let row = SoakRow {
        sink: label.into(),
        store: on,
        commits: commits as u64,
        records_per_commit: SOAK_BATCH,
        window: window as u64,
        first_p50_ms: ms(&latencies[..window]),
        last_p50_ms: ms(&latencies[commits - window..]),
        wall_s: wall.as_secs_f64(),
        retries,
        versions_kept: kept,
        data_files: usage.data_files,
        data_bytes: usage.data_bytes,
        metadata_files: usage.metadata_files,
        metadata_bytes: usage.metadata_bytes,
    };
    tracing::info!(sink = %row.sink, growth = row.growth(), total_s = row.wall_s, "soak done");
    Ok(row)
}

/// Times a sink waits before handing a batch that failed with a `Retryable` error again, as a
/// runtime does; and how many times in a row one batch may fail so before the soak gives up.
const RETRY_PAUSE: Duration = Duration::from_secs(1);
const RETRIES_PER_BATCH: u32 = 10;

/// What [`commit_all`] measured: each commit's latency, and the batches handed again after a
/// `Retryable` error.
struct Commits {
    latencies: Vec<Duration>,
    retries: u64,
}

/// Commits `commits` batches one after the other, each checked to be written whole (a batch
/// handed again after a `Retryable` error may find part or all of it committed by the failed
/// attempt: already present); the latency of each commit (its successful attempt), with a
/// progress line every 30 s.
async fn commit_all(sink: &dyn Sink, label: &str, commits: usize) -> Result<Commits, String> {
    let mut out = Commits {
        latencies: Vec::with_capacity(commits),
        retries: 0,
    };
    let started = Instant::now();
    let mut shown = Instant::now();
    for n in 0..commits as u64 {
        let b = batch(0, n * SOAK_BATCH, SOAK_BATCH);
        let mut failed = 0;
        let (outcome, latency) = loop {
            let t = Instant::now();
            match sink.consume(&b).await {
                Ok(outcome) => break (outcome, t.elapsed()),
                Err(e) if e.is_retryable() && failed < RETRIES_PER_BATCH => {
                    failed += 1;
                    out.retries += 1;
                    tracing::warn!(sink = label, commit = n + 1, failed, error = %e, "retryable error: the same batch again");
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
                Err(e) => return Err(format!("{label}: commit {}: {e}", n + 1)),
            }
        };
        out.latencies.push(latency);
        let whole = outcome.written == SOAK_BATCH
            || (failed > 0 && outcome.written + outcome.already_present == SOAK_BATCH);
        if !whole {
            return Err(format!(
                "{label}: commit {} wrote {} and found {} already present of {SOAK_BATCH} records",
                n + 1,
                outcome.written,
                outcome.already_present
            ));
        }
        if shown.elapsed() >= Duration::from_secs(30) {
            shown = Instant::now();
            tracing::info!(
                sink = label,
                done = n + 1,
                commits,
                retries = out.retries,
                elapsed_s = started.elapsed().as_secs(),
                "soak in progress"
            );
        }
    }
    Ok(out)
}

/// Data and metadata held by a table's storage.
#[derive(Debug, Default, PartialEq)]
struct Usage {
    data_files: u64,
    data_bytes: u64,
    metadata_files: u64,
    metadata_bytes: u64,
}

impl Usage {
    /// Sorts objects (path → size) into metadata (Delta's `_delta_log/`, Iceberg's `metadata/`)
    /// and data (everything else).
    fn of(objects: &HashMap<String, u64>) -> Self {
        let mut u = Usage::default();
        for (path, size) in objects {
            if path.contains("/_delta_log/") || path.contains("/metadata/") {
                u.metadata_files += 1;
                u.metadata_bytes += size;
            } else {
                u.data_files += 1;
                u.data_bytes += size;
            }
        }
        u
    }
}

/// Every file under `dir` (its path from `dir`, with a leading `/`) and its size, leaving out
/// the SQLite catalog of an Iceberg table (the catalog is not the table's storage).
fn local_objects(dir: &Path) -> HashMap<String, u64> {
    fn walk(root: &Path, dir: &Path, out: &mut HashMap<String, u64>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if path.extension().is_none_or(|x| x != "db") {
                let relative = path.strip_prefix(root).unwrap_or(&path);
                let size = entry.metadata().map_or(0, |m| m.len());
                out.insert(format!("/{}", relative.display()), size);
            }
        }
    }
    let mut out = HashMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Every object under the prefix `run` in the bucket and its size.
async fn s3_objects(server: &S3Server, run: &str) -> Result<HashMap<String, u64>, String> {
    let client = server.client();
    let mut pages = client
        .list_objects_v2()
        .bucket(BUCKET)
        .prefix(format!("{run}/"))
        .into_paginator()
        .send();
    let mut out = HashMap::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| format!("listing the soak's objects: {e:?}"))?;
        for object in page.contents() {
            if let Some(key) = object.key() {
                let size = object.size().unwrap_or(0).max(0) as u64;
                out.insert(format!("/{key}"), size);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_the_delta_log_and_the_iceberg_metadata_folder() {
        let objects = HashMap::from([
            ("/t/_delta_log/00000000000000000001.json".to_owned(), 10),
            ("/t/part-0001.parquet".to_owned(), 100),
            ("/w/bench/soak/metadata/snap-1.avro".to_owned(), 20),
            ("/w/bench/soak/data/0001.parquet".to_owned(), 200),
        ]);
        assert_eq!(
            Usage::of(&objects),
            Usage {
                data_files: 2,
                data_bytes: 300,
                metadata_files: 2,
                metadata_bytes: 30
            }
        );
    }

    /// A Delta sink whose `n`-th consume commits and then answers `Retryable`, as when the
    /// answer to a commit is lost.
    struct AnswerLost {
        inner: pico_sink_delta::DeltaSink,
        calls: std::sync::atomic::AtomicU32,
        lost_at: u32,
    }

    #[async_trait::async_trait]
    impl Sink for AnswerLost {
        async fn open(&self) -> Result<(), pico_sink::SinkError> {
            self.inner.open().await
        }

        async fn close(&self) -> Result<(), pico_sink::SinkError> {
            self.inner.close().await
        }

        async fn consume(
            &self,
            batch: &pico_sink::Batch,
        ) -> Result<pico_sink::Outcome, pico_sink::SinkError> {
            let call = self
                .calls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                + 1;
            let outcome = self.inner.consume(batch).await?;
            if call == self.lost_at {
                return Err(pico_sink::SinkError::retryable(
                    "the answer to the commit was lost",
                ));
            }
            Ok(outcome)
        }

        fn describe(&self) -> pico_sink::Description {
            self.inner.describe()
        }
    }

    #[tokio::test]
    async fn a_retryable_error_hands_the_same_batch_again_and_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        let config =
            pico_sink_delta::DeltaSinkConfig::new(dir.path().join("t").display().to_string());
        let sink = AnswerLost {
            inner: pico_sink_delta::DeltaSink::new(config),
            calls: Default::default(),
            lost_at: 3,
        };
        let done = commit_all(&sink, "delta", 5).await.unwrap();
        println!(
            "{} commits timed, {} retries",
            done.latencies.len(),
            done.retries
        );
        assert_eq!((done.latencies.len(), done.retries), (5, 1));
        assert_eq!(
            sink.calls.load(std::sync::atomic::Ordering::Relaxed),
            6,
            "the third batch was handed twice; its replay found it already present"
        );
    }

    #[tokio::test]
    async fn a_local_soak_times_every_commit_and_counts_what_the_table_holds() {
        for format in [Lakehouse::Delta, Lakehouse::Iceberg] {
            let row = soak(format, Store::Local, 24, 5)
                .await
                .unwrap_or_else(|e| panic!("{format:?}: {e}"));
            println!("{row:?}");
            assert_eq!((row.commits, row.window), (24, 5), "{format:?}");
            assert!(row.first_p50_ms > 0.0 && row.last_p50_ms > 0.0, "{row:?}");
            assert_eq!(row.data_files, 24, "{format:?}: one data file per commit");
            assert!(row.metadata_files > 0 && row.data_bytes > 0, "{row:?}");
            assert!(row.versions_kept >= 1, "{row:?}");
        }
    }
}
