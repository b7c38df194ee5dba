//! [`IcebergSink`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use iceberg::spec::{DataFile, DataFileFormat};
use iceberg::table::Table;
use iceberg::transaction::{ApplyTransactionAction, Transaction};
use iceberg::writer::base_writer::data_file_writer::DataFileWriterBuilder;
use iceberg::writer::file_writer::ParquetWriterBuilder;
use iceberg::writer::file_writer::location_generator::{
    DefaultFileNameGenerator, DefaultLocationGenerator,
};
use iceberg::writer::file_writer::rolling_writer::RollingFileWriterBuilder;
use iceberg::writer::{IcebergWriter, IcebergWriterBuilder};
use iceberg::{Catalog, ErrorKind, NamespaceIdent, TableCreation, TableIdent};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use pico_sink::kit::convert_records;
use pico_sink::{Batch, Claim, Description, Outcome, Record, Sink, SinkError, WriteReport};
use tracing::{debug, warn};

use crate::catalog::PinnedCatalog;
use crate::config::IcebergSinkConfig;
use crate::rows::{check, table_schema, to_arrow};
use crate::watermark::{WATERMARK_PROPERTY, watermarks};

/// Appends one snapshot per batch carrying the offset watermarks; see the crate docs.
///
/// One instance serves every partition of a process. Its batches commit one after the other
/// (every snapshot carries the whole watermark map, so two commits of one table always
/// conflict): an async lock spans read-watermark → write → commit. Writers in other processes
/// are handled by the pinned commit and the re-read after a conflict.
pub struct IcebergSink {
    config: IcebergSinkConfig,
    catalog: Arc<dyn Catalog>,
    ident: TableIdent,
    commits: tokio::sync::Mutex<()>,
    /// Metadata files the last upkeep saw in the table's metadata log (and its current one):
    /// those that dropped out of the log since are deleted at the next upkeep.
    seen_metadata: std::sync::Mutex<Vec<String>>,
}

/// An Iceberg error in the sink contract: invalid data or unsupported features are `Fatal`
/// (configuration or table layout), anything else (I/O, catalog) `Retryable`.
fn classify(e: iceberg::Error, what: &str) -> SinkError {
    let message = format!("{what}: {e}");
    let error = match e.kind() {
        ErrorKind::DataInvalid
        | ErrorKind::FeatureUnsupported
        | ErrorKind::NamespaceNotFound
        | ErrorKind::TableNotFound => SinkError::fatal(message),
        _ => SinkError::retryable(message),
    };
    error.with_source(e)
}

impl IcebergSink {
    /// A sink writing through `catalog`.
    pub fn with_catalog(
        catalog: Arc<dyn Catalog>,
        config: IcebergSinkConfig,
    ) -> Result<Self, SinkError> {
        let namespace = NamespaceIdent::from_vec(config.namespace.clone())
            .map_err(|e| SinkError::fatal(format!("namespace {:?}: {e}", config.namespace)))?;
        if config.table.is_empty() {
            return Err(SinkError::fatal("table name is empty"));
        }
        let ident = TableIdent::new(namespace, config.table.clone());
        Ok(Self {
            config,
            catalog,
            ident,
            commits: tokio::sync::Mutex::new(()),
            seen_metadata: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// A sink on the SQL catalog in the SQLite file `catalog_path`, warehouse in the local
    /// directory `warehouse` (feature `sql-catalog`).
    #[cfg(feature = "sql-catalog")]
    pub async fn sqlite(
        catalog_path: &str,
        warehouse: &str,
        config: IcebergSinkConfig,
    ) -> Result<Self, SinkError> {
        Self::with_catalog(
            crate::sql_catalog::sqlite_catalog(catalog_path, warehouse).await?,
            config,
        )
    }

    /// The catalog.
    pub fn catalog(&self) -> &Arc<dyn Catalog> {
        &self.catalog
    }

    /// The table's identifier.
    pub fn table_ident(&self) -> &TableIdent {
        &self.ident
    }

    /// Appends every record of `batch` as one snapshot with no watermark read or written and
    /// no pinning: the plain append of the same rows that benchmarks compare the sink with. A
    /// replay through it duplicates; do not use it to deliver.
    pub async fn append_unguarded(&self, batch: &Batch) -> Result<(), SinkError> {
        let table = self.load().await?;
        let records: Vec<&Record> = batch.records().iter().collect();
        let files = self.write_file(&table, &records).await?;
        let tx = Transaction::new(&table);
        let tx = tx
            .fast_append()
            .with_check_duplicate(false)
            .add_data_files(files)
            .apply(tx)
            .map_err(|e| classify(e, "preparing the append"))?;
        tx.commit(self.catalog.as_ref())
            .await
            .map(|_| ())
            .map_err(|e| classify(e, &format!("committing to {}", self.ident)))
    }

    /// Table upkeep after a commit ([`IcebergSinkConfig::keep_snapshots`]): once `table` (as
    /// the sink's own commit left it, so its current snapshot is the sink's and carries every
    /// watermark) holds twice the snapshots to keep, expires all but the newest ones, then
    /// deletes the files nothing reads any more. The batch is committed either way: a failed
    /// expiry is logged and tried again after a later commit.
    async fn upkeep(&self, table: &Table) {
        let Some(keep) = self.config.keep_snapshots.map(|k| k.max(1)) else {
            return;
        };
        let held = table.metadata().snapshots().count();
        if held < 2 * keep {
            return;
        }
        match self.expire(table, keep).await {
            Ok(after) => {
                let deleted = self.delete_unread(table, &after).await;
                debug!(table = %self.ident, held, keep, deleted, "expired old snapshots");
            }
            Err(e) => warn!(
                table = %self.ident, held, keep, error = %e,
                "expiring old snapshots failed; tried again after a later commit"
            ),
        }
    }

    /// Expires every snapshot of `table` but the newest `keep`; the table after.
    async fn expire(&self, table: &Table, keep: usize) -> Result<Table, iceberg::Error> {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(i64::MAX, |d| {
                i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
            });
        let tx = Transaction::new(table);
        let tx = tx
            .expire_snapshots()
            .expire_older_than_ms(now_ms.saturating_add(1))
            .retain_last(keep)
            .apply(tx)?;
        tx.commit(self.catalog.as_ref()).await
    }

    /// Deletes what an expiry left unread: the manifest lists of the snapshots `before` held
    /// and `after` does not (their manifests and data files stay: later snapshots of a
    /// fast-append table reference them), and the metadata files that dropped out of the
    /// metadata log since the previous upkeep (iceberg-rust keeps the log at
    /// `write.metadata.previous-versions-max` entries but leaves the files). Returns how many
    /// were deleted; a failed delete leaves an orphan file, logged.
    async fn delete_unread(&self, before: &Table, after: &Table) -> usize {
        let kept: std::collections::HashSet<i64> = after
            .metadata()
            .snapshots()
            .map(|s| s.snapshot_id())
            .collect();
        let mut unread: Vec<String> = before
            .metadata()
            .snapshots()
            .filter(|s| !kept.contains(&s.snapshot_id()))
            .map(|s| s.manifest_list().to_owned())
            .collect();
        let mut live: Vec<String> = after
            .metadata()
            .metadata_log()
            .iter()
            .map(|l| l.metadata_file.clone())
            .collect();
        live.extend(after.metadata_location().map(str::to_owned));
        {
            let mut seen = self.seen_metadata.lock().unwrap_or_else(|p| p.into_inner());
            unread.extend(seen.iter().filter(|f| !live.contains(f)).cloned());
            *seen = live;
        }
        let mut deleted = 0;
        for path in unread {
            match after.file_io().delete(&path).await {
                Ok(()) => deleted += 1,
                Err(e) => {
                    warn!(table = %self.ident, path, error = %e, "deleting an unread file failed; it stays as an orphan")
                }
            }
        }
        deleted
    }

    async fn load(&self) -> Result<Table, SinkError> {
        self.catalog
            .load_table(&self.ident)
            .await
            .map_err(|e| classify(e, &format!("loading {}", self.ident)))
    }

    async fn write_file(
        &self,
        table: &Table,
        records: &[&Record],
    ) -> Result<Vec<DataFile>, SinkError> {
        let what = format!("writing a data file for {}", self.ident);
        let schema = table.metadata().current_schema().clone();
        let batch = to_arrow(&self.config.scope, records, &schema).map_err(SinkError::fatal)?;
        let properties = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .build();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let first = records.first().map_or(0, |r| r.id.offset);
        let names = DefaultFileNameGenerator::new(
            format!(
                "pico-p{}-o{first}-{nanos:x}",
                records.first().map_or(0, |r| r.id.partition)
            ),
            None,
            DataFileFormat::Parquet,
        );
        let locations =
            DefaultLocationGenerator::new(table.metadata()).map_err(|e| classify(e, &what))?;
        let rolling = RollingFileWriterBuilder::new_with_default_file_size(
            ParquetWriterBuilder::new(properties, schema),
            table.file_io().clone(),
            locations,
            names,
        );
        let mut writer = DataFileWriterBuilder::new(rolling)
            .build(None)
            .await
            .map_err(|e| classify(e, &what))?;
        writer.write(batch).await.map_err(|e| classify(e, &what))?;
        writer.close().await.map_err(|e| classify(e, &what))
    }
}

#[async_trait]
impl Sink for IcebergSink {
    async fn open(&self) -> Result<(), SinkError> {
        if let Some(problem) = self.config.commit.problem() {
            return Err(SinkError::fatal(format!(
                "IcebergSinkConfig.commit: {problem} (or leave it at CommitPolicy::default())"
            )));
        }
        if !self.config.create_table {
            return Ok(());
        }
        let namespace = self.ident.namespace();
        let exists = self
            .catalog
            .namespace_exists(namespace)
            .await
            .map_err(|e| classify(e, "checking the namespace"))?;
        if !exists
            && let Err(e) = self
                .catalog
                .create_namespace(namespace, HashMap::new())
                .await
            && e.kind() != ErrorKind::NamespaceAlreadyExists
        {
            return Err(classify(e, "creating the namespace"));
        }
        let exists = self
            .catalog
            .table_exists(&self.ident)
            .await
            .map_err(|e| classify(e, "checking the table"))?;
        if exists {
            return Ok(());
        }
        let schema = table_schema().map_err(|e| classify(e, "table schema"))?;
        let creation = TableCreation::builder()
            .name(self.ident.name().to_owned())
            .schema(schema)
            // The sink re-reads its watermark after a conflict; the library's own retries
            // would only fail again on the pinned table.
            .properties([("commit.retry.num-retries".to_owned(), "0".to_owned())])
            .build();
        match self.catalog.create_table(namespace, creation).await {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == ErrorKind::TableAlreadyExists => Ok(()),
            Err(e) => Err(classify(e, &format!("creating {}", self.ident))),
        }
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let (valid, rejected) = convert_records(batch, |_, r| check(r).map(|_| r));
        let key = self
            .config
            .scope
            .partition_text(batch.topic(), batch.partition());
        let _one_commit_at_a_time = self.commits.lock().await;
        for attempt in 0..=self.config.max_conflicts {
            let table = self.load().await?;
            let mut marks = watermarks(table.metadata()).map_err(SinkError::fatal)?;
            let mark = marks.get(&key).copied();
            let fresh: Vec<&Record> = valid
                .iter()
                .copied()
                .filter(|r| mark.is_none_or(|m| r.id.offset > m))
                .collect();
            let skipped = (valid.len() - fresh.len()) as u64;
            let Some(last) = fresh.last().map(|r| r.id.offset) else {
                return Ok(Outcome::new(
                    WriteReport {
                        written: 0,
                        already_present: skipped,
                    },
                    rejected,
                ));
            };
            let files = self.write_file(&table, &fresh).await?;
            marks.insert(key.clone(), last);
            let text = serde_json::to_string(&marks)
                .map_err(|e| SinkError::fatal(format!("watermarks: {e}")))?;
            let tx = Transaction::new(&table);
            // No duplicate-file check: it reads every manifest of the table on each commit (a
            // cost that grows with every commit), and the files added are always new ones
            // (named by partition, first offset and the time of the write).
            let tx = tx
                .fast_append()
                .with_check_duplicate(false)
                .add_data_files(files)
                .set_snapshot_properties(HashMap::from([(
                    WATERMARK_PROPERTY.to_owned(),
                    text.clone(),
                )]))
                .apply(tx)
                .map_err(|e| classify(e, "preparing the append"))?;
            // The same map as a table property, in the same commit: snapshots expire (another
            // engine's may sit on top of the sink's, and expiry keeps only the newest), table
            // properties do not.
            let tx = tx
                .update_table_properties()
                .set(WATERMARK_PROPERTY.to_owned(), text)
                .apply(tx)
                .map_err(|e| classify(e, "preparing the watermark property"))?;
            let pinned = PinnedCatalog::new(self.catalog.clone(), table);
            match tx.commit(&pinned).await {
                Ok(committed) => {
                    self.upkeep(&committed).await;
                    return Ok(Outcome::new(
                        WriteReport {
                            written: fresh.len() as u64,
                            already_present: skipped,
                        },
                        rejected,
                    ));
                }
                Err(e) if e.kind() == ErrorKind::CatalogCommitConflicts => {
                    debug!(table = %self.ident, attempt, "commit conflict; re-reading the watermark");
                }
                Err(e) => return Err(classify(e, &format!("committing to {}", self.ident))),
            }
        }
        Err(SinkError::retryable(format!(
            "{} commit conflicts in a row on {}",
            self.config.max_conflicts + 1,
            self.ident
        )))
    }

    fn commit_policy(&self) -> Option<pico_sink::CommitPolicy> {
        Some(self.config.commit)
    }

    fn describe(&self) -> Description {
        Description::new(
            "iceberg",
            "fast-append snapshot per batch whose summary carries every partition's offset \
             watermark (pico.watermarks, carried forward; also a table property, set in the same \
             commit); offsets at or below it skipped; commits pinned to the snapshot the \
             watermark was read from, re-read after a conflict",
            Claim::NoVisibleDuplicate,
        )
        .telling_already_present()
    }
}

#[cfg(test)]
#[cfg(feature = "sql-catalog")]
mod tests {
    use super::*;
    use pico_sink::identity::RecordId;
    use pico_sink::testing::batch_with;

    /// A sink over a SQLite catalog and a warehouse inside `dir` (the same table for every
    /// sink made on one `dir`).
    async fn local_sink(dir: &std::path::Path, config: IcebergSinkConfig) -> IcebergSink {
        let db = dir.join("c.db").display().to_string();
        let wh = dir.join("wh").display().to_string();
        IcebergSink::sqlite(&db, &wh, config).await.unwrap()
    }

    fn batch(first: u64, last: u64) -> Batch {
        batch_with("orders", 0, first..=last, |o| format!("v{o}"))
    }

    /// The sink asks its runtime for commit-sized batches, and a bound of 0 is refused at
    /// `open` with the field to change.
    #[tokio::test]
    async fn the_commit_policy_reaches_the_runtime_and_a_zero_bound_is_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = IcebergSinkConfig::new("ns", "t");
        let sink = local_sink(dir.path(), config.clone()).await;
        assert_eq!(
            sink.commit_policy(),
            Some(pico_sink::CommitPolicy::default())
        );
        config.commit.max_bytes = 0;
        let sink = local_sink(dir.path(), config).await;
        let e = sink.open().await.unwrap_err();
        assert!(e.is_fatal(), "{e}");
        assert!(e.to_string().contains("commit: max_bytes"), "{e}");
    }

    /// One commit of a commit-sized batch, then replays inside it and across its end: the
    /// inside one is already present whole, the one across writes only its new tail.
    #[tokio::test]
    async fn a_replay_inside_or_across_a_large_commit_is_recognised() {
        let dir = tempfile::tempdir().unwrap();
        let sink = local_sink(dir.path(), IcebergSinkConfig::new("ns", "t")).await;
        sink.open().await.unwrap();
        let first = sink.consume(&batch(0, 9_999)).await.unwrap();
        assert_eq!((first.written, first.already_present), (10_000, 0));
        let inside = sink.consume(&batch(2_500, 7_499)).await.unwrap();
        assert_eq!((inside.written, inside.already_present), (0, 5_000));
        let across = sink.consume(&batch(9_000, 10_999)).await.unwrap();
        assert_eq!((across.written, across.already_present), (1_000, 1_000));
        let contents = crate::read_table(sink.catalog.as_ref(), &sink.ident)
            .await
            .unwrap();
        assert_eq!(contents.rows.len(), 11_000, "every record once");
    }

    /// Data files (`.parquet`) anywhere under `dir`.
    fn parquet_files(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .map(|p| {
                if p.is_dir() {
                    parquet_files(&p)
                } else {
                    usize::from(p.extension().is_some_and(|x| x == "parquet"))
                }
            })
            .sum()
    }

    /// A process that dies after writing a batch's data file and before its commit leaves one
    /// unreferenced file and no visible row: the redelivered batch is written once.
    #[tokio::test]
    async fn a_crash_between_data_file_and_commit_leaves_an_orphan_file_and_no_duplicate() {
        let dir = tempfile::tempdir().unwrap();
        let wh = dir.path().join("wh");
        let b = batch(0, 9);
        let crashed = local_sink(dir.path(), IcebergSinkConfig::new("ns", "t")).await;
        crashed.open().await.unwrap();
        let table = crashed.load().await.unwrap();
        let records: Vec<&Record> = b.records().iter().collect();
        let files = crashed.write_file(&table, &records).await.unwrap();
        assert!(!files.is_empty(), "the crashed attempt wrote its data file");
        drop(crashed);
        assert_eq!(parquet_files(&wh), 1, "the file the crash left");

        let restarted = local_sink(dir.path(), IcebergSinkConfig::new("ns", "t")).await;
        let first = restarted.consume(&b).await.unwrap();
        assert_eq!((first.written, first.already_present), (10, 0));
        let replay = restarted.consume(&b).await.unwrap();
        assert_eq!((replay.written, replay.already_present), (0, 10));
        let contents = crate::read_table(restarted.catalog.as_ref(), &restarted.ident)
            .await
            .unwrap();
        let on_disk = parquet_files(&wh);
        println!(
            "rows visible: {}; data files on disk: {on_disk}, 1 of them orphaned",
            contents.rows.len()
        );
        assert_eq!(contents.rows.len(), 10, "every record once");
        assert_eq!(
            on_disk, 2,
            "the committed file and the crashed attempt's orphan"
        );
    }

    /// Why commits go through the pinned view: iceberg-rust re-applies an append made from a
    /// stale table onto the current one, while the pinned view makes the catalog refuse it.
    #[tokio::test]
    async fn a_stale_append_is_rebased_by_the_library_and_refused_when_pinned() {
        let dir = tempfile::tempdir().unwrap();
        let sink = local_sink(dir.path(), IcebergSinkConfig::new("ns", "t")).await;
        sink.open().await.unwrap();
        let stale = sink.load().await.unwrap();
        sink.consume(&batch(0, 9)).await.unwrap();

        let b = batch(0, 9);
        let records: Vec<&Record> = b.records().iter().collect();
        let append = |table: &Table, files: Vec<DataFile>| {
            let tx = Transaction::new(table);
            tx.fast_append().add_data_files(files).apply(tx).unwrap()
        };
        let files = sink.write_file(&stale, &records).await.unwrap();
        let pinned = PinnedCatalog::new(sink.catalog.clone(), stale.clone());
        let refused = append(&stale, files.clone())
            .commit(&pinned)
            .await
            .unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::CatalogCommitConflicts);

        // The library alone rebases the stale append: the batch is in the table twice.
        append(&stale, files)
            .commit(sink.catalog.as_ref())
            .await
            .unwrap();
        let contents = crate::read_table(sink.catalog.as_ref(), &sink.ident)
            .await
            .unwrap();
        assert_eq!(contents.rows.len(), 20);

        // The sink itself skips what the table holds, whatever its snapshot history.
        let report = sink.consume(&batch(5, 14)).await.unwrap();
        assert_eq!((report.written, report.already_present), (5, 5));
    }

    /// Expiring every snapshot but the newest keeps every partition's watermark, because each
    /// snapshot carries the whole map; a replay of the expired partition's batch is skipped.
    #[tokio::test]
    async fn expiring_old_snapshots_keeps_every_watermark() {
        let dir = tempfile::tempdir().unwrap();
        let sink = local_sink(dir.path(), IcebergSinkConfig::new("ns", "t")).await;
        sink.open().await.unwrap();
        let other_partition = |first: u64, last: u64| {
            Batch::new(
                (first..=last)
                    .map(|o| Record::new(RecordId::new("orders", 1, o), format!("w{o}")))
                    .collect(),
            )
            .unwrap()
        };
        sink.consume(&batch(0, 9)).await.unwrap();
        sink.consume(&other_partition(0, 4)).await.unwrap();
        let table = sink.load().await.unwrap();
        let newest = table.metadata().current_snapshot().unwrap().snapshot_id();
        let older: Vec<i64> = table
            .metadata()
            .snapshots()
            .map(|s| s.snapshot_id())
            .filter(|id| *id != newest)
            .collect();
        assert_eq!(older.len(), 1);
        let tx = Transaction::new(&table);
        tx.expire_snapshots()
            .expire_snapshot_ids(older)
            .apply(tx)
            .unwrap()
            .commit(sink.catalog.as_ref())
            .await
            .unwrap();
        let table = sink.load().await.unwrap();
        assert_eq!(
            table.metadata().snapshots().count(),
            1,
            "only the newest is left"
        );

        // Partition 0 was last written by the expired snapshot; its watermark survived.
        let replay = sink.consume(&batch(0, 9)).await.unwrap();
        assert_eq!((replay.written, replay.already_present), (0, 10));
        let contents = crate::read_table(sink.catalog.as_ref(), &sink.ident)
            .await
            .unwrap();
        assert_eq!(contents.rows.len(), 15);
    }

    /// The sink's own upkeep keeps the snapshots bounded and every watermark readable: a
    /// replay of a batch whose snapshot expired long ago is still skipped.
    #[tokio::test]
    async fn upkeep_bounds_the_snapshots_and_keeps_every_watermark() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = IcebergSinkConfig::new("ns", "t");
        config.keep_snapshots = Some(2);
        let sink = local_sink(dir.path(), config).await;
        sink.open().await.unwrap();
        let other = Batch::new(
            (0..5)
                .map(|o| Record::new(RecordId::new("orders", 1, o), format!("w{o}")))
                .collect(),
        )
        .unwrap();
        sink.consume(&other).await.unwrap();
        let mut most = 0;
        for n in 0..10 {
            sink.consume(&batch(n * 10, n * 10 + 9)).await.unwrap();
            let held = sink.load().await.unwrap().metadata().snapshots().count();
            most = most.max(held);
        }
        assert!(
            most <= 3,
            "at most 2 × 2 - 1 snapshots after a commit, saw {most}"
        );
        // The manifest lists of expired snapshots are deleted (`snap-*.avro`), the rest kept.
        let lists = std::fs::read_dir(dir.path().join("wh/ns/t/metadata"))
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                name.to_string_lossy().starts_with("snap-")
            })
            .count();
        assert!((1..=3).contains(&lists), "{lists} manifest lists left");
        let replay = sink.consume(&other).await.unwrap();
        assert_eq!((replay.written, replay.already_present), (0, 5));
        let replay = sink.consume(&batch(0, 9)).await.unwrap();
        assert_eq!((replay.written, replay.already_present), (0, 10));
        let contents = crate::read_table(sink.catalog.as_ref(), &sink.ident)
            .await
            .unwrap();
        assert_eq!(contents.rows.len(), 105);
    }

    /// Another engine's snapshot on top of the sink's, then an expiry keeping only the current
    /// snapshot: no summary left carries a watermark, and the table property the sink writes in
    /// the same commits still recognises the replay (before it, the replay was appended again).
    #[tokio::test]
    async fn a_replay_is_recognised_after_another_engines_commit_and_expiry() {
        let dir = tempfile::tempdir().unwrap();
        let sink = local_sink(dir.path(), IcebergSinkConfig::new("ns", "t")).await;
        sink.open().await.unwrap();
        for n in 0..3 {
            sink.consume(&batch(n * 10, n * 10 + 9)).await.unwrap();
        }
        let table = sink.load().await.unwrap();
        let tx = Transaction::new(&table);
        let tx = tx
            .fast_append()
            .set_snapshot_properties(HashMap::from([("engine".to_owned(), "other".to_owned())]))
            .apply(tx)
            .unwrap();
        let table = tx.commit(sink.catalog.as_ref()).await.unwrap();
        let expired = sink.expire(&table, 1).await.unwrap();
        let left: Vec<bool> = expired
            .metadata()
            .snapshots()
            .map(|s| {
                s.summary()
                    .additional_properties
                    .contains_key(WATERMARK_PROPERTY)
            })
            .collect();
        assert_eq!(left, [false], "only the other engine's snapshot is left");

        let restarted = local_sink(dir.path(), IcebergSinkConfig::new("ns", "t")).await;
        let replay = restarted.consume(&batch(0, 9)).await.unwrap();
        assert_eq!((replay.written, replay.already_present), (0, 10));
        let contents = crate::read_table(restarted.catalog.as_ref(), &restarted.ident)
            .await
            .unwrap();
        assert_eq!(contents.rows.len(), 30, "every record once");
    }

    /// A partition above i32::MAX is stored as it is (a `long`, as in Delta), not wrapped.
    #[tokio::test]
    async fn partitions_above_i32_max_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let sink = local_sink(dir.path(), IcebergSinkConfig::new("ns", "t")).await;
        sink.open().await.unwrap();
        for partition in [u32::MAX, 1 << 31] {
            let b = Batch::new(vec![Record::new(
                RecordId::new("orders", partition, 7),
                "v",
            )])
            .unwrap();
            assert_eq!(sink.consume(&b).await.unwrap().written, 1);
        }
        let contents = crate::read_table(sink.catalog.as_ref(), &sink.ident)
            .await
            .unwrap();
        let mut partitions: Vec<u32> = contents.rows.iter().map(|r| r.partition).collect();
        partitions.sort();
        assert_eq!(partitions, vec![1 << 31, u32::MAX]);
    }
}
