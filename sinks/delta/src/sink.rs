//! [`DeltaSink`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use async_trait::async_trait;
use deltalake::kernel::Action;
use deltalake::table::config::TablePropertiesExt;
use deltalake::table::state::DeltaTableState;
use deltalake::writer::{DeltaWriter, RecordBatchWriter};
use deltalake::{DeltaTable, DeltaTableBuilder, DeltaTableError, ObjectStore};
use pico_sink::identity::Scope;
use pico_sink::{Batch, Claim, Description, Outcome, RejectedRecord, Sink, SinkError, WriteReport};
use tokio::sync::{Mutex, MutexGuard};
use tracing::{debug, warn};

use crate::arrow_rows::{delta_columns, to_arrow};
use crate::config::DeltaSinkConfig;
use crate::held::HeldTable;

/// The application id of a topic-partition's `txn` actions.
pub fn app_id(scope: &Scope, topic: &str, partition: u32) -> String {
    format!("pico:{}", scope.partition_text(topic, partition))
}

/// Commits one batch per Delta version with its watermark; see the crate docs.
///
/// One instance serves every partition of a process. Batches of one table commit one after
/// the other (each is one table version, so concurrent commits of one table would only race
/// for the next version): the loaded table is kept behind an async lock held for the whole
/// commit. Writers in other processes race as before and are handled by the re-read.
pub struct DeltaSink {
    config: DeltaSinkConfig,
    table: Mutex<Option<HeldTable>>,
    /// The caller's object store holding the table ([`DeltaSink::with_object_store`]).
    store: Option<Arc<dyn ObjectStore>>,
    /// Commits by this instance since its last checkpoint succeeded (see [`DeltaSink::checkpoint_due`]).
    since_checkpoint: AtomicU32,
}

fn table_url(location: &str) -> Result<url::Url, SinkError> {
    if location.contains("://") {
        url::Url::parse(location)
            .map_err(|e| SinkError::fatal(format!("location {location:?} is not a URL: {e}")))
    } else {
        std::fs::create_dir_all(location)
            .map_err(|e| SinkError::fatal(format!("cannot create {location:?}: {e}")))?;
        let path = std::fs::canonicalize(location)
            .map_err(|e| SinkError::fatal(format!("location {location:?}: {e}")))?;
        url::Url::from_directory_path(&path).map_err(|()| {
            SinkError::fatal(format!(
                "location {location:?} is not an absolute directory"
            ))
        })
    }
}

/// Storage and I/O problems may pass (also when wrapped, as kernel errors wrap object-store
/// errors); denied access and everything else is configuration.
pub(crate) fn error(e: DeltaTableError, what: &str) -> SinkError {
    let error = classify(&e, what);
    error.with_source(e)
}

fn classify(e: &DeltaTableError, what: &str) -> SinkError {
    use deltalake::ObjectStoreError;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(store) = s.downcast_ref::<ObjectStoreError>() {
            return match store {
                ObjectStoreError::PermissionDenied { .. }
                | ObjectStoreError::Unauthenticated { .. } => {
                    SinkError::fatal(format!("{what}: {e} — check the storage credentials"))
                }
                _ => SinkError::retryable(format!("{what}: {e}")),
            };
        }
        if s.downcast_ref::<std::io::Error>().is_some() {
            return SinkError::retryable(format!("{what}: {e}"));
        }
        source = s.source();
    }
    match e {
        DeltaTableError::ObjectStore { .. } | DeltaTableError::Io { .. } => {
            SinkError::retryable(format!("{what}: {e}"))
        }
        // The kernel (and delta-rs's generic errors) keep an object-store error of their own
        // object_store version without exposing it as a source: recognise it by its text.
        other if transient_kernel_error(&other.to_string()) => {
            SinkError::retryable(format!("{what}: {e}"))
        }
        other => SinkError::fatal(format!("{what}: {other}")),
    }
}

/// Whether a kernel error's text is an object-store or I/O failure that is not about access.
fn transient_kernel_error(text: &str) -> bool {
    let storage = text.contains("Error interacting with object store") || text.contains("IO error");
    // Status codes as whole words between spaces: "in 2.500401ms" and "in 401.270696ms" are
    // durations, not a 401; "status 401:" and "(403)" are status codes.
    let status = text
        .split_whitespace()
        .map(|word| {
            word.trim_matches(|c: char| matches!(c, ':' | ',' | ';' | '(' | ')' | '[' | ']'))
        })
        .any(|word| word == "401" || word == "403");
    let access = [
        "PermissionDenied",
        "Unauthenticated",
        "Access Denied",
        "Forbidden",
        "Unauthorized",
    ]
    .iter()
    .any(|m| text.contains(m));
    storage && !access && !status
}

impl DeltaSink {
    /// A sink for the configured table (nothing is touched before `open`).
    pub fn new(config: DeltaSinkConfig) -> Self {
        Self {
            config,
            table: Mutex::new(None),
            store: None,
            since_checkpoint: AtomicU32::new(0),
        }
    }

    /// A sink writing through an object store the caller already has (its credentials,
    /// retries, client options), from the [`deltalake`](crate::deltalake) this crate re-exports
    /// (`deltalake::logstore::object_store`). `location` is the table's URL in that store; the
    /// configuration's `storage_options` would not be used, and are refused.
    pub fn with_object_store(
        store: Arc<dyn ObjectStore>,
        config: DeltaSinkConfig,
    ) -> Result<Self, SinkError> {
        if let Some(key) = config.storage_options.keys().next() {
            pico_sink::kit::refuse_unused_setting(
                "storage_options, with the key",
                key,
                "DeltaSink::with_object_store",
                "DeltaSinkConfig::new(location) and no storage_options",
            )?;
        }
        Ok(Self {
            store: Some(store),
            ..Self::new(config)
        })
    }

    /// Appends every record of `batch` in one plain commit with no watermark read and no `txn`
    /// action: the plain append of the same rows that benchmarks compare the sink with. A
    /// replay through it duplicates; do not use it to deliver.
    pub async fn append_unguarded(&self, batch: &Batch) -> Result<(), SinkError> {
        let scope = self.config.scope.clone();
        let mut guard = self.table().await?;
        let held = loaded(&mut guard)?;
        // delta-rs commits on the loaded state: it must be the newest this instance knows.
        if !held.is_current() {
            held.reload().await?;
        }
        writer_of(&held.table, &scope, batch)
            .await?
            .flush_and_commit(&mut held.table)
            .await
            .map_err(|e| error(e, "committing"))?;
        held.adopt_state()
    }

    /// Writes a checkpoint once `checkpoint_interval` commits of this instance went by since its
    /// last successful one, and after every later commit until one succeeds. Without it every
    /// watermark read replays the log since the last checkpoint: delta-rs makes a checkpoint only
    /// at versions divisible by the interval and gives up on a failed one, so under a lossy
    /// network the log segment grew until no read could finish (measured: 100 failed attempts in
    /// a row at ~130 versions). A failed checkpoint never fails the batch: it is committed.
    ///
    /// After a checkpoint the held state is rebuilt from it: delta-rs extends a held snapshot
    /// commit by commit and never moves it onto a newer checkpoint, so without the rebuild every
    /// watermark read still replays every commit since the table was opened (measured: log
    /// segments of 87 commits and no checkpoint at version 151, while checkpoints existed).
    async fn checkpoint_due(&self, held: &mut HeldTable) {
        let commits = self.since_checkpoint.fetch_add(1, Ordering::Relaxed) + 1;
        if commits < self.config.checkpoint_interval.max(1) {
            return;
        }
        // The checkpoint is of the loaded state's version: bring it to the newest first.
        if let Err(e) = held.reload().await {
            warn!(error = %e, commits, "loading the table for its checkpoint failed; tried again after the next commit");
            return;
        }
        let table = &mut held.table;
        match deltalake::checkpoints::create_checkpoint(table, None).await {
            Ok(()) => {
                self.since_checkpoint.store(0, Ordering::Relaxed);
                debug!(version = ?table.version(), "checkpoint written");
                match DeltaTableState::try_new(table.log_store().as_ref(), None).await {
                    Ok(state) => table.state = Some(state),
                    // The held state stays valid, only longer to read; the next checkpoint
                    // tries again.
                    Err(e) => warn!(error = %e, "reloading from the checkpoint failed"),
                }
                clean_expired_log(table).await;
                if let Err(e) = held.adopt_state() {
                    warn!(error = %e, "the state loaded from the checkpoint has no version");
                }
            }
            Err(e) => {
                warn!(error = %e, commits, "checkpoint failed; tried again after the next commit");
            }
        }
    }

    /// The table at the configured location, through the caller's object store or one built
    /// from `storage_options`; loaded, or with no state when there is no table yet.
    async fn open_table(&self) -> Result<DeltaTable, SinkError> {
        let url = table_url(&self.config.location)?;
        let builder =
            DeltaTableBuilder::from_url(url.clone()).map_err(|e| error(e, "opening the table"))?;
        let builder = match &self.store {
            Some(store) => builder.with_storage_backend(store.clone(), url),
            None => builder.with_storage_options(self.config.storage_options.clone()),
        };
        let mut table = builder.build().map_err(|e| error(e, "opening the table"))?;
        match table.load().await {
            Ok(()) | Err(DeltaTableError::NotATable(_)) => Ok(table),
            Err(e) => Err(error(e, "opening the table")),
        }
    }

    /// The loaded table, under the sink's lock (loaded or created on first use).
    async fn table(&self) -> Result<MutexGuard<'_, Option<HeldTable>>, SinkError> {
        let mut slot = self.table.lock().await;
        if slot.is_none() {
            let table = self.open_table().await?;
            let table = if table.version().is_some() {
                table
            } else if self.config.create_if_missing {
                let created = table
                    .create()
                    .with_columns(delta_columns())
                    .with_configuration_property(
                        deltalake::TableProperty::CheckpointInterval,
                        Some(self.config.checkpoint_interval.to_string()),
                    )
                    .await;
                match created {
                    Ok(t) => t,
                    // Another writer created it meanwhile.
                    Err(_) => self.open_table().await?,
                }
            } else {
                return Err(SinkError::fatal(format!(
                    "no Delta table at {}: create it or set create_if_missing",
                    self.config.location
                )));
            };
            *slot = Some(HeldTable::new(table)?);
        }
        Ok(slot)
    }
}

/// Deletes the log entries older than the table's `delta.logRetentionDuration` (30 days by
/// default) that the newest checkpoint makes unneeded, unless `delta.enableExpiredLogCleanup`
/// is off. delta-rs would do it after every commit, listing the whole `_delta_log` each time
/// (a LIST of every log object on S3): commit cost then grows with the table's history. Only a
/// new checkpoint can make an entry unneeded, so the sink cleans right after writing one. The
/// checkpoint carries every `txn` action, so no watermark is lost with the entries. A failed
/// cleanup is retried after the next checkpoint.
async fn clean_expired_log(table: &DeltaTable) {
    let enabled = table
        .snapshot()
        .is_ok_and(|s| s.table_config().enable_expired_log_cleanup());
    if !enabled {
        return;
    }
    match deltalake::checkpoints::cleanup_metadata(table, None).await {
        Ok(0) => {}
        Ok(removed) => debug!(removed, "expired log entries removed"),
        Err(e) => warn!(error = %e, "log cleanup failed; tried again after the next checkpoint"),
    }
}

/// Writes `batch` as data files of `table`, not yet committed: the add actions of its commit.
/// Files written and never committed (a crash, a cancelled consume, a lost race) stay in the
/// table's directory unreferenced, for `VACUUM`.
async fn write_files(
    table: &DeltaTable,
    scope: &Scope,
    batch: &Batch,
) -> Result<Vec<Action>, SinkError> {
    Ok(writer_of(table, scope, batch)
        .await?
        .flush()
        .await
        .map_err(|e| error(e, "flushing data files"))?
        .into_iter()
        .map(Action::Add)
        .collect())
}

/// A writer of `table` holding `batch`'s rows, neither flushed nor committed.
async fn writer_of(
    table: &DeltaTable,
    scope: &Scope,
    batch: &Batch,
) -> Result<RecordBatchWriter, SinkError> {
    let rows = to_arrow(scope, batch.records())
        .map_err(|e| SinkError::fatal(format!("building the Arrow batch: {e}")))?;
    let mut writer =
        RecordBatchWriter::for_table(table).map_err(|e| error(e, "creating the writer"))?;
    writer
        .write(rows)
        .await
        .map_err(|e| error(e, "writing data files"))?;
    Ok(writer)
}

/// The table inside a guard that [`DeltaSink::table`] filled.
fn loaded<'a>(
    slot: &'a mut MutexGuard<'_, Option<HeldTable>>,
) -> Result<&'a mut HeldTable, SinkError> {
    slot.as_mut()
        .ok_or_else(|| SinkError::fatal("the Delta table is not loaded"))
}

#[async_trait]
impl Sink for DeltaSink {
    async fn open(&self) -> Result<(), SinkError> {
        if let Some(problem) = self.config.commit.problem() {
            return Err(SinkError::fatal(format!(
                "DeltaSinkConfig.commit: {problem} (or leave it at CommitPolicy::default())"
            )));
        }
        self.table().await.map(|_| ())
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let (fit, rejected): (Vec<_>, Vec<_>) = batch
            .records()
            .iter()
            .partition(|r| i64::try_from(r.id.offset).is_ok());
        let rejected: Vec<RejectedRecord> = rejected
            .into_iter()
            .map(|r| {
                RejectedRecord::new(
                    r.id.clone(),
                    format!(
                        "offset {} is above i64::MAX: a Delta long and the txn version are signed",
                        r.id.offset
                    ),
                )
            })
            .collect();
        let app = app_id(&self.config.scope, batch.topic(), batch.partition());
        let attempts = self.config.commit_attempts.max(1);
        let scope = self.config.scope.clone();
        let mut report = WriteReport::default();
        if !fit.is_empty() {
            let fit = Batch::new(fit.into_iter().cloned().collect())
                .map_err(|e| SinkError::fatal(format!("{e}")))?;
            let mut guard = self.table().await?;
            let held = loaded(&mut guard)?;
            let mut done = false;
            // After a commit that failed without an answer (its entry may have landed), the
            // log is read again: a redelivery of that batch is then told already present.
            if held.is_unsure() {
                held.reload().await?;
            }
            // Versions only grow: what the instance knows of the table (its loaded state and
            // its own commits since) already covering the batch proves it is committed,
            // without reading the log.
            let known = held.watermark(&app).await?;
            if known.is_some_and(|v| u64::try_from(v).is_ok_and(|v| v >= fit.id().last)) {
                debug!(batch = %batch.id(), "committed before: nothing written");
                return Ok(Outcome::new(
                    WriteReport::already_present(fit.len()),
                    rejected,
                ));
            }
            for attempt in 1..=attempts {
                // The first attempt commits on what the instance knows: if another writer made
                // the next version, the commit fails and the next attempt reloads the log first.
                let committed = if attempt > 1 {
                    held.reload().await?;
                    held.watermark(&app).await?
                } else {
                    known
                };
                let tail = match committed {
                    Some(v) => fit.after(u64::try_from(v).unwrap_or(0)),
                    None => Some(fit.clone()),
                };
                let Some(tail) = tail else {
                    report = WriteReport {
                        written: 0,
                        already_present: fit.len() as u64,
                    };
                    done = true;
                    break;
                };
                let adds = write_files(&held.table, &scope, &tail).await?;
                // Watermark and data in one log entry; no automatic rebase (see the crate docs).
                match held.commit(adds, &app, tail.id().last as i64).await? {
                    Some(version) => {
                        debug!(batch = %batch.id(), version, attempt, "committed");
                        self.checkpoint_due(held).await;
                        report = WriteReport {
                            written: tail.len() as u64,
                            already_present: (fit.len() - tail.len()) as u64,
                        };
                        done = true;
                        break;
                    }
                    None => {
                        debug!(batch = %batch.id(), attempt, "lost the race for the table version, retrying");
                    }
                }
            }
            if !done {
                return Err(SinkError::retryable(format!(
                    "{attempts} commit attempts lost to other writers of the table"
                )));
            }
        }
        Ok(Outcome::new(report, rejected))
    }

    fn commit_policy(&self) -> Option<pico_sink::CommitPolicy> {
        Some(self.config.commit)
    }

    fn describe(&self) -> Description {
        Description::new(
            "delta",
            "one commit per batch with a txn action (app id pico:topic:partition, version = last \
             offset) in the same log entry as the data; only offsets above the committed version \
             are written (a replay the instance's own knowledge of the table already covers is \
             answered without reading the log); the log entry written by the sink with \
             create-if-absent, no automatic rebase, retried after re-reading",
            Claim::NoVisibleDuplicate,
        )
        .telling_already_present()
    }
}

#[cfg(test)]
mod tests {
    use super::{loaded, transient_kernel_error, write_files};
    use crate::{DeltaSink, DeltaSinkConfig};
    use pico_sink::identity::{RecordId, Scope};
    use pico_sink::testing::batch_with;
    use pico_sink::{Batch, CommitPolicy, Record, Sink};

    /// Parquet files directly in `dir` (an unpartitioned table's data files).
    fn parquet_files(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "parquet"))
            })
            .count()
    }

    fn batch(first: u64, last: u64) -> Batch {
        batch_with("orders", 0, first..=last, |o| format!("v{o}"))
    }

    /// One commit of a commit-sized batch, then replays inside it and across its end: the
    /// inside one is already present whole, the one across writes only its new tail.
    #[tokio::test]
    async fn a_replay_inside_or_across_a_large_commit_is_recognised() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        let sink = DeltaSink::new(DeltaSinkConfig::new(path.display().to_string()));
        let first = sink.consume(&batch(0, 9_999)).await.unwrap();
        assert_eq!((first.written, first.already_present), (10_000, 0));
        let inside = sink.consume(&batch(2_500, 7_499)).await.unwrap();
        assert_eq!((inside.written, inside.already_present), (0, 5_000));
        let across = sink.consume(&batch(9_000, 10_999)).await.unwrap();
        assert_eq!((across.written, across.already_present), (1_000, 1_000));
        let mut guard = sink.table().await.unwrap();
        let held = loaded(&mut guard).unwrap();
        held.reload().await.unwrap();
        let files = held
            .table
            .snapshot()
            .unwrap()
            .log_data()
            .into_iter()
            .count();
        assert_eq!(files, 2, "two commits wrote data: the first and the tail");
        assert_eq!(parquet_files(&path), 2, "no file beyond them");
    }

    /// Rows the table references (a fresh load of it, from the numRecords of every live file)
    /// and its live files.
    async fn live_rows(path: &std::path::Path) -> (usize, usize) {
        live_rows_of(&DeltaSink::new(DeltaSinkConfig::new(
            path.display().to_string(),
        )))
        .await
    }

    /// [`live_rows`] of the table `sink` loads.
    async fn live_rows_of(sink: &DeltaSink) -> (usize, usize) {
        let mut guard = sink.table().await.unwrap();
        let held = loaded(&mut guard).unwrap();
        let files: Vec<_> = held
            .table
            .snapshot()
            .unwrap()
            .log_data()
            .into_iter()
            .collect();
        let rows = files.iter().map(|f| f.num_records().unwrap()).sum();
        (rows, files.len())
    }

    /// A commit writes the next log entry itself: the state loaded at the start stays as it
    /// was (delta-rs would have replayed every live file into it after each commit), while the
    /// instance knows the newest version and its watermarks; a fresh instance sees them all.
    #[tokio::test]
    async fn commits_advance_without_reloading_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        let mut config = DeltaSinkConfig::new(path.display().to_string());
        config.checkpoint_interval = 1_000;
        let sink = DeltaSink::new(config.clone());
        for n in 0..30 {
            let b = batch(n * 10, n * 10 + 9);
            assert_eq!(sink.consume(&b).await.unwrap().written, 10);
        }
        {
            let mut guard = sink.table().await.unwrap();
            let held = loaded(&mut guard).unwrap();
            println!(
                "loaded state at version {:?}, known version {}",
                held.table.version(),
                held.version()
            );
            assert_eq!(
                held.table.version(),
                Some(0),
                "the state loaded at creation"
            );
            assert_eq!(held.version(), 30, "one version per commit");
        }
        let replay = sink.consume(&batch(100, 109)).await.unwrap();
        assert_eq!((replay.written, replay.already_present), (0, 10));
        let fresh = DeltaSink::new(config)
            .consume(&batch(0, 299))
            .await
            .unwrap();
        assert_eq!((fresh.written, fresh.already_present), (0, 300));
        assert_eq!(live_rows(&path).await, (300, 30));
    }

    /// Two instances write one partition (a zombie after a rebalance): the one whose known
    /// version is stale loses the race for the next version, reloads, and writes only what
    /// the other did not. The table holds every record once.
    #[tokio::test]
    async fn a_commit_after_another_writers_reloads_and_writes_only_the_new_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        let config = DeltaSinkConfig::new(path.display().to_string());
        let zombie = DeltaSink::new(config.clone());
        let owner = DeltaSink::new(config);
        assert_eq!(zombie.consume(&batch(0, 9)).await.unwrap().written, 10);
        let taken = owner.consume(&batch(0, 19)).await.unwrap();
        assert_eq!((taken.written, taken.already_present), (10, 10));
        let late = zombie.consume(&batch(10, 29)).await.unwrap();
        println!(
            "the stale writer: {} written, {} already present",
            late.written, late.already_present
        );
        assert_eq!((late.written, late.already_present), (10, 10));
        assert_eq!(live_rows(&path).await, (30, 3), "every record once");
    }

    /// With a log retention of zero, the cleanup after each checkpoint deletes the log entries
    /// before it; a replay of the first batch is still recognised, by the running sink and by
    /// a fresh one that reads the table from the checkpoint (it carries every txn action).
    #[tokio::test]
    async fn log_cleanup_after_a_checkpoint_keeps_every_watermark() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        std::fs::create_dir_all(&path).unwrap();
        let url = url::Url::from_directory_path(std::fs::canonicalize(&path).unwrap()).unwrap();
        deltalake::DeltaTable::try_from_url(url)
            .await
            .unwrap()
            .create()
            .with_columns(crate::arrow_rows::delta_columns())
            .with_configuration_property(
                deltalake::TableProperty::LogRetentionDuration,
                Some("interval 0 seconds"),
            )
            .await
            .unwrap();
        let config = DeltaSinkConfig::new(path.display().to_string());
        let sink = DeltaSink::new(config.clone());
        for n in 0..25 {
            let partition = n % 3;
            let b = Batch::new(
                (n * 10..n * 10 + 10)
                    .map(|o| Record::new(RecordId::new("orders", partition as u32, o), "v"))
                    .collect(),
            )
            .unwrap();
            assert_eq!(sink.consume(&b).await.unwrap().written, 10);
        }
        let log = path.join("_delta_log");
        let entries = std::fs::read_dir(&log)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "json"))
            })
            .count();
        println!("log entries after 26 versions: {entries}");
        assert!(
            entries < 10,
            "the cleanup after the checkpoint at version 20 removed the entries before it: {entries} left"
        );
        let first = Batch::new(
            (0..10)
                .map(|o| Record::new(RecordId::new("orders", 0, o), "v"))
                .collect(),
        )
        .unwrap();
        for (who, s) in [("running", &sink), ("fresh", &DeltaSink::new(config))] {
            let replay = s.consume(&first).await.unwrap();
            assert_eq!(
                (replay.written, replay.already_present),
                (0, 10),
                "{who} sink: the first batch's watermark survived the cleanup"
            );
        }
    }

    /// A process that dies after writing a batch's data files and before its commit leaves
    /// one unreferenced file and no visible row: the redelivered batch is written once, and
    /// the table references only the files of that commit.
    #[tokio::test]
    async fn a_crash_between_data_files_and_commit_leaves_an_orphan_file_and_no_duplicate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        let config = DeltaSinkConfig::new(path.display().to_string());
        let batch = batch(0, 9);
        let crashed = DeltaSink::new(config.clone());
        crashed.open().await.unwrap();
        {
            let mut guard = crashed.table().await.unwrap();
            let held = loaded(&mut guard).unwrap();
            let adds = write_files(&held.table, &Scope::default(), &batch)
                .await
                .unwrap();
            assert!(!adds.is_empty(), "the crashed attempt wrote its data files");
        }
        drop(crashed);
        let orphans_before = parquet_files(&path);

        let restarted = DeltaSink::new(config);
        let first = restarted.consume(&batch).await.unwrap();
        assert_eq!((first.written, first.already_present), (10, 0));
        let replay = restarted.consume(&batch).await.unwrap();
        assert_eq!((replay.written, replay.already_present), (0, 10));
        let mut guard = restarted.table().await.unwrap();
        let held = loaded(&mut guard).unwrap();
        held.reload().await.unwrap();
        let referenced = held
            .table
            .snapshot()
            .unwrap()
            .log_data()
            .into_iter()
            .count();
        let on_disk = parquet_files(&path);
        println!(
            "data files: {on_disk} on disk, {referenced} referenced, {} orphaned",
            on_disk - referenced
        );
        assert_eq!(orphans_before, 1, "the file the crash left");
        assert_eq!(referenced, 1, "one commit, one data file");
        assert_eq!(
            on_disk - referenced,
            1,
            "the crashed attempt's file is the only orphan"
        );
    }

    /// A table in the caller's own object store (in memory here): commits and replays go
    /// through it, a second instance on the same store sees the watermark, and storage options
    /// beside a store are refused.
    #[tokio::test]
    async fn a_sink_on_the_callers_object_store_writes_once_and_answers_replays() {
        use deltalake::logstore::object_store::{ObjectStore, memory::InMemory};
        let store: std::sync::Arc<dyn ObjectStore> = std::sync::Arc::new(InMemory::new());
        let config = DeltaSinkConfig::new("memory:///orders");
        let sink = DeltaSink::with_object_store(store.clone(), config.clone()).unwrap();
        sink.open().await.unwrap();
        assert_eq!(sink.consume(&batch(0, 99)).await.unwrap().written, 100);
        let again = DeltaSink::with_object_store(store.clone(), config.clone()).unwrap();
        let replay = again.consume(&batch(0, 99)).await.unwrap();
        assert_eq!((replay.written, replay.already_present), (0, 100));
        let (rows, _) = live_rows_of(&again).await;
        println!("rows in the caller's store: {rows}");
        assert_eq!(rows, 100);
        let mut with_options = config;
        with_options
            .storage_options
            .insert("AWS_ACCESS_KEY_ID".into(), "AKIA...".into());
        let e = DeltaSink::with_object_store(store, with_options)
            .err()
            .unwrap();
        assert!(
            e.is_fatal() && e.to_string().contains("AWS_ACCESS_KEY_ID"),
            "{e}"
        );
    }

    /// The sink asks its runtime for commit-sized batches, and a bound of 0 is refused at
    /// `open`, before the table is touched, with the field to change.
    #[tokio::test]
    async fn the_commit_policy_reaches_the_runtime_and_a_zero_bound_is_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = DeltaSinkConfig::new(dir.path().join("t").display().to_string());
        assert_eq!(
            DeltaSink::new(config.clone()).commit_policy(),
            Some(CommitPolicy::default())
        );
        config.commit.max_latency_ms = 0;
        let e = DeltaSink::new(config).open().await.unwrap_err();
        assert!(e.is_fatal(), "{e}");
        assert!(e.to_string().contains("commit: max_latency_ms"), "{e}");
        assert!(!dir.path().join("t").exists(), "nothing was created");
    }

    #[test]
    fn generic_errors_wrapping_a_store_failure_are_retryable() {
        // Seen under the flaky-network scenario: a cut LIST inside a commit.
        let e = deltalake::DeltaTableError::Generic(
            "Error interacting with object store: Generic S3 error: Error performing list \
             request: HTTP error: error sending request"
                .into(),
        );
        assert!(super::classify(&e, "committing").is_retryable());
        let denied = deltalake::DeltaTableError::Generic(
            "Error interacting with object store: Generic S3 error: 403 Access Denied".into(),
        );
        assert!(super::classify(&denied, "committing").is_fatal());
    }

    #[test]
    fn kernel_storage_errors_are_transient_unless_about_access() {
        assert!(transient_kernel_error(
            "Error interacting with object store: Generic S3 error: Error performing list request: HTTP error: error sending request"
        ));
        assert!(!transient_kernel_error(
            "Error interacting with object store: Generic S3 error: 403 Forbidden Access Denied"
        ));
        assert!(!transient_kernel_error("Invalid table version: 7"));
        // Seen under the flaky-network scenario: a request duration that contains "401".
        assert!(transient_kernel_error(
            "Kernel error: Error interacting with object store: Generic S3 error: Error performing \
             GET http://127.0.0.1:38159/pico-delta/t/_delta_log/00000000000000000005.json in \
             2.500401ms - HTTP error: error sending request"
        ));
        assert!(transient_kernel_error(
            "Kernel error: Error interacting with object store: Generic S3 error: Error performing \
             GET http://127.0.0.1:36695/pico-delta/t/_delta_log/00000000000000000300.json in \
             401.270696ms - HTTP error: error sending request"
        ));
        assert!(!transient_kernel_error(
            "Error interacting with object store: Generic S3 error: Client error with status (403)"
        ));
        assert!(!transient_kernel_error(
            "Error interacting with object store: Generic S3 error: Client error with status 401: Unauthorized"
        ));
    }
}
