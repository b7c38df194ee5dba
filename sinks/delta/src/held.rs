//! [`HeldTable`]: the table as one sink instance knows it — a loaded state and the commits the
//! instance made on top of it — and the commit that keeps that knowledge exact.

use std::collections::HashMap;

use deltalake::kernel::transaction::{CommitBuilder, CommitProperties, TransactionError};
use deltalake::kernel::{Action, Transaction};
use deltalake::logstore::CommitOrBytes;
use deltalake::protocol::{DeltaOperation, SaveMode};
use deltalake::{DeltaTable, DeltaTableError};
use pico_sink::SinkError;
use tracing::warn;

use crate::sink::error;

/// The table under the sink's lock.
///
/// delta-rs extends a loaded state after each commit by replaying the whole list of live files
/// (its post-commit step), so a commit through `CommitBuilder` costs more the more files the
/// table holds: measured, the median commit of a release build grew 6.19 × over 10 000 commits
/// of 100 records. The sink only appends, and never rebases a commit, so it needs none of that:
/// it writes the log entry of version `n + 1` itself with the log store's create-if-absent, and
/// keeps what it committed since the loaded state (the version, and each application id's
/// watermark). That is exact: the entry of `n + 1` is created only if no other writer made it,
/// so when every commit since the loaded state succeeded, they are all this instance's. A lost
/// race reloads the state and forgets the rest. The state itself is reloaded only around a
/// checkpoint (every `checkpoint_interval` commits).
pub(crate) struct HeldTable {
    /// The table, its state as last loaded.
    pub(crate) table: DeltaTable,
    /// The log's newest version as this instance knows it: the loaded state's, or the last one
    /// it committed since.
    version: u64,
    /// The watermark this instance committed for each application id since the loaded state.
    committed: HashMap<String, i64>,
    /// A commit failed without an answer: its entry may have landed, so this knowledge may be
    /// behind the log until the next reload.
    unsure: bool,
}

impl HeldTable {
    /// Holds `table`, whose state is loaded.
    pub(crate) fn new(table: DeltaTable) -> Result<Self, SinkError> {
        let version = loaded_version(&table)?;
        Ok(Self {
            table,
            version,
            committed: HashMap::new(),
            unsure: false,
        })
    }

    /// The log's newest version as far as this instance knows.
    #[cfg(test)]
    pub(crate) fn version(&self) -> u64 {
        self.version
    }

    /// Whether the loaded state is the newest version this instance knows (no commit of its
    /// own on top of it).
    pub(crate) fn is_current(&self) -> bool {
        self.committed.is_empty() && self.table.version() == Some(self.version)
    }

    /// The committed `txn` version of `app`: the one this instance committed since the loaded
    /// state, or else the loaded state's.
    pub(crate) async fn watermark(&self, app: &str) -> Result<Option<i64>, SinkError> {
        if let Some(mark) = self.committed.get(app) {
            return Ok(Some(*mark));
        }
        self.table
            .snapshot()
            .map_err(|e| error(e, "reading the snapshot"))?
            .transaction_version(self.table.log_store().as_ref(), app)
            .await
            .map_err(|e| error(e, "reading the watermark"))
    }

    /// Loads the log's newest state (from its last checkpoint on), forgetting what this
    /// instance committed on top of the previous one.
    pub(crate) async fn reload(&mut self) -> Result<(), SinkError> {
        self.table
            .update_state()
            .await
            .map_err(|e| error(e, "reloading the table"))?;
        self.adopt_state()
    }

    /// Takes the table's state as it is now (after delta-rs changed it) as the loaded one.
    pub(crate) fn adopt_state(&mut self) -> Result<(), SinkError> {
        self.version = loaded_version(&self.table)?;
        self.committed.clear();
        self.unsure = false;
        Ok(())
    }

    /// Whether a commit of this instance failed without an answer since the last reload (its
    /// entry may be in the log, unknown to this instance).
    pub(crate) fn is_unsure(&self) -> bool {
        self.unsure
    }

    /// Commits `adds` with `app`'s watermark `mark` as the next version: `Some(version)`, or
    /// `None` when another writer made that version first (reload, then try again).
    pub(crate) async fn commit(
        &mut self,
        adds: Vec<Action>,
        app: &str,
        mark: i64,
    ) -> Result<Option<u64>, SinkError> {
        // Watermark and data in one log entry; checkpoints, and the log cleanup that can only
        // follow one, are the sink's own step after the commit.
        let properties = CommitProperties::default()
            .with_application_transaction(Transaction::new(app, mark))
            .with_max_retries(0)
            .with_create_checkpoint(false)
            .with_cleanup_expired_logs(Some(false));
        let log_store = self.table.log_store();
        let snapshot = self
            .table
            .snapshot()
            .map_err(|e| error(e, "reading the snapshot"))?;
        // CommitBuilder checks the table's protocol and serialises the entry (and, on a store
        // without create-if-absent, stages it as a temporary object); the sink writes it.
        let entry: CommitOrBytes = CommitBuilder::from(properties)
            .with_actions(adds)
            .build(
                Some(snapshot),
                log_store.clone(),
                DeltaOperation::Write {
                    mode: SaveMode::Append,
                    partition_by: None,
                    predicate: None,
                },
            )
            .into_prepared_commit_future()
            .await
            .map_err(|e| error(e, "preparing the commit"))?
            .commit_or_bytes()
            .clone();
        let version = self.version + 1;
        let operation = uuid::Uuid::new_v4();
        let written = match log_store
            .write_commit_entry(version, entry.clone(), operation)
            .await
        {
            // The store retried a create whose answer was lost, and met the entry it had
            // written: the commit is this instance's, not another writer's.
            Err(TransactionError::VersionAlreadyExists(_)) => self.own_entry(version, &entry).await,
            other => other,
        };
        match written {
            Ok(()) => {
                self.version = version;
                self.committed.insert(app.to_owned(), mark);
                Ok(Some(version))
            }
            Err(e) => {
                if let Err(abort) = log_store
                    .abort_commit_entry(version, entry, operation)
                    .await
                {
                    warn!(error = %abort, "removing the staged log entry failed");
                }
                match e {
                    TransactionError::VersionAlreadyExists(_) => Ok(None),
                    other => {
                        self.unsure = true;
                        Err(error(DeltaTableError::from(other), "committing"))
                    }
                }
            }
        }
    }
}

impl HeldTable {
    /// After a create of `version` met an existing entry: `Ok` when that entry is byte for
    /// byte the one this commit wrote (its own earlier try landed), `VersionAlreadyExists`
    /// when it is another writer's. A failed read is an error the call fails on, and the next
    /// call reloads the log ([`HeldTable::is_unsure`]).
    async fn own_entry(
        &mut self,
        version: u64,
        entry: &CommitOrBytes,
    ) -> Result<(), TransactionError> {
        let taken = || TransactionError::VersionAlreadyExists(version);
        let CommitOrBytes::LogBytes(ours) = entry else {
            return Err(taken());
        };
        match self.table.log_store().read_commit_entry(version).await {
            Ok(Some(held)) if held == *ours => Ok(()),
            Ok(_) => Err(taken()),
            Err(e) => Err(TransactionError::LogStoreError {
                msg: format!("reading log entry {version} after its create met it"),
                source: Box::new(e),
            }),
        }
    }
}

/// The version of `table`'s loaded state.
fn loaded_version(table: &DeltaTable) -> Result<u64, SinkError> {
    table
        .version()
        .ok_or_else(|| SinkError::fatal("the Delta table has no loaded state"))
}
