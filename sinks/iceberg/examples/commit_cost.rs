//! What one commit costs as the table grows: `N` batches of 100 records (default 2 000) through
//! the sink into a local table (SQLite catalog, local warehouse), printing the latency of the
//! commits around 1, 1 000 and 2 000 (median of 9) with the table's snapshot count and the bytes
//! of its metadata directory.
//!
//! `cargo run --release -p pico-sink-iceberg --features sql-catalog --example commit_cost -- 2000`

use std::path::Path;
use std::time::{Duration, Instant};

use pico_sink::identity::RecordId;
use pico_sink::{Batch, Record, Sink};
use pico_sink_iceberg::{IcebergSink, IcebergSinkConfig};

/// Records per batch.
const BATCH: u64 = 100;
/// The commits reported (1-based), each as the median of the 9 around it.
const REPORTED: [usize; 3] = [1, 1_000, 2_000];

fn batch(n: u64) -> Result<Batch, Box<dyn std::error::Error>> {
    let records = (n * BATCH..(n + 1) * BATCH)
        .map(|o| {
            Record::new(
                RecordId::new("meter", 0, o),
                format!("{{\"offset\":{o},\"reading\":{}}}", o * 7919 % 10_000),
            )
        })
        .collect();
    Ok(Batch::new(records)?)
}

/// Bytes and files under `dir`, recursively.
fn usage(dir: &Path) -> (u64, u64) {
    let mut total = (0, 0);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return total;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            let (b, f) = usage(&path);
            total = (total.0 + b, total.1 + f);
        } else if let Ok(meta) = entry.metadata() {
            total = (total.0 + meta.len(), total.1 + 1);
        }
    }
    total
}

fn median(window: &[Duration]) -> Duration {
    let mut sorted = window.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let commits: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(2_000);
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("catalog.db").display().to_string();
    let warehouse = dir.path().join("warehouse");
    let sink = IcebergSink::sqlite(
        &db,
        &warehouse.display().to_string(),
        IcebergSinkConfig::new("pico", "commit_cost"),
    )
    .await?;
    sink.open().await?;
    let mut latencies = Vec::with_capacity(commits);
    let started = Instant::now();
    for n in 0..commits {
        let b = batch(n as u64)?;
        let t = Instant::now();
        let outcome = sink.consume(&b).await?;
        latencies.push(t.elapsed());
        if outcome.written != BATCH {
            return Err(format!("commit {} wrote {} of {BATCH}", n + 1, outcome.written).into());
        }
    }
    let (snapshots, data_files) =
        pico_sink_iceberg::table_stats(sink.catalog().as_ref(), sink.table_ident()).await?;
    println!(
        "{commits} commits of {BATCH} records in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    for commit in REPORTED.into_iter().filter(|c| *c <= commits) {
        let from = commit.saturating_sub(5);
        let to = (commit + 4).min(commits);
        println!(
            "commit {commit:>5}: {:>7.1} ms (median of commits {}..={to})",
            median(&latencies[from..to]).as_secs_f64() * 1e3,
            from + 1
        );
    }
    let (bytes, files) = usage(&warehouse.join("pico").join("commit_cost").join("metadata"));
    println!("metadata directory: {files} files, {bytes} bytes");
    println!("table: {snapshots} snapshots, {data_files} data files");
    Ok(())
}
