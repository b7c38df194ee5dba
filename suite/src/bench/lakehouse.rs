//! Delta Lake and Iceberg against a plain append of the same rows to the same table format,
//! plus commits and data files per volume written through the sink.

use std::path::Path;
use std::time::Instant;

use pico_conformance::target::{ReadRow, Readback, checksum};
use pico_sink::identity::RecordId;
use pico_sink::{Batch, Sink};

use super::report::{BenchSize, SinkBench};
use super::{Place, batch, compare};
use crate::serve::s3::S3Server;

/// Which table format a run measures.
#[derive(Debug, Clone, Copy)]
pub enum Lakehouse {
    /// Delta Lake (delta-rs), local filesystem.
    Delta,
    /// Apache Iceberg (iceberg-rust), SQL catalog on SQLite, local warehouse.
    Iceberg,
}

/// A Delta or Iceberg sink of the benchmarks.
pub(super) enum LakehouseSink {
    Delta(pico_sink_delta::DeltaSink),
    Iceberg(pico_sink_iceberg::IcebergSink),
}

impl LakehouseSink {
    /// A sink of table `name` in the local directory `dir` (Iceberg: its SQLite catalog there
    /// too).
    pub(super) async fn new(format: Lakehouse, dir: &Path, name: &str) -> Result<Self, String> {
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

    /// A sink of a table at `location` (`s3://bucket/prefix`) on `server`; an Iceberg
    /// table's SQLite catalog stays in the local `dir`.
    pub(super) async fn on_s3(
        format: Lakehouse,
        dir: &Path,
        server: &S3Server,
        location: &str,
    ) -> Result<Self, String> {
        Ok(match format {
            Lakehouse::Delta => {
                let mut config = pico_sink_delta::DeltaSinkConfig::new(format!("{location}/soak"));
                config.storage_options =
                    crate::destinations::delta::delta_s3_options(server, &server.endpoint);
                Self::Delta(pico_sink_delta::DeltaSink::new(config))
            }
            Lakehouse::Iceberg => {
                let catalog = pico_sink_iceberg::sqlite_catalog_s3(
                    &dir.join("catalog.db").display().to_string(),
                    location,
                    crate::destinations::iceberg::iceberg_s3_properties(server),
                )
                .await
                .map_err(|e| e.to_string())?;
                Self::Iceberg(
                    pico_sink_iceberg::IcebergSink::with_catalog(
                        catalog,
                        pico_sink_iceberg::IcebergSinkConfig::new("bench", "soak"),
                    )
                    .map_err(|e| e.to_string())?,
                )
            }
        })
    }

    /// The sink.
    pub(super) fn sink(&self) -> &dyn Sink {
        match self {
            Self::Delta(s) => s,
            Self::Iceberg(s) => s,
        }
    }

    /// The sink, owned.
    fn into_sink(self) -> Box<dyn Sink> {
        match self {
            Self::Delta(s) => Box::new(s),
            Self::Iceberg(s) => Box::new(s),
        }
    }

    async fn append_unguarded(&self, b: &Batch) -> Result<(), String> {
        match self {
            Self::Delta(s) => s.append_unguarded(b).await,
            Self::Iceberg(s) => s.append_unguarded(b).await,
        }
        .map_err(|e| e.to_string())
    }

    /// Every row the table `name` in `dir` holds, read from its data files.
    pub(super) async fn held(&self, dir: &Path, name: &str) -> Result<Readback, String> {
        match self {
            Self::Delta(_) => {
                let location = dir.join(name).display().to_string();
                crate::destinations::delta::read_delta(&location, Default::default()).await
            }
            Self::Iceberg(s) => {
                let contents =
                    pico_sink_iceberg::read_table(s.catalog().as_ref(), s.table_ident()).await?;
                let rows = contents
                    .rows
                    .into_iter()
                    .map(|r| ReadRow {
                        id: RecordId::new(r.topic, r.partition, r.offset),
                        checksum: checksum(&r.value),
                        value: r.value.into(),
                    })
                    .collect();
                Ok(Readback::of_rows(rows))
            }
        }
    }

    /// (commits, data files) of the table.
    pub(super) async fn stats(&self, dir: &Path, name: &str) -> Result<(usize, usize), String> {
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
    let rows = compare(
        size,
        async |records: u64, rep: usize| {
            let name = format!("raw_{records}_{rep}");
            let plain = LakehouseSink::new(format, dir.path(), &name).await?;
            plain.sink().open().await.map_err(|e| e.to_string())?;
            let b = batch(rep as u32, 0, records);
            let started = Instant::now();
            plain.append_unguarded(&b).await?;
            Ok(started.elapsed())
        },
        async |place: Place| {
            let name = format!("sink_{place}");
            Ok(LakehouseSink::new(format, dir.path(), &name)
                .await?
                .into_sink())
        },
        async |place: Place| {
            let name = format!("sink_{place}");
            LakehouseSink::new(format, dir.path(), &name)
                .await?
                .held(dir.path(), &name)
                .await
        },
    )
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
    use crate::destinations::delta::DELTA_RS_VERSION;
    use crate::destinations::iceberg::ICEBERG_RUST_VERSION;
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
