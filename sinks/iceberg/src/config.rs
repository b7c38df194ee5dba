//! [`IcebergSinkConfig`].

use pico_sink::CommitPolicy;
use pico_sink::identity::Scope;

/// Configuration of [`crate::IcebergSink`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct IcebergSinkConfig {
    /// Namespace levels of the table (`["pico"]`).
    pub namespace: Vec<String>,
    /// Table name.
    pub table: String,
    /// Identity namespace (qualifies `pico_topic` and the watermark keys).
    pub scope: Scope,
    /// Create the namespace and table when missing.
    pub create_table: bool,
    /// Commit conflicts tolerated within one `consume` before `Retryable`.
    pub max_conflicts: u32,
    /// Table upkeep: snapshots kept when the sink expires old ones (default 100). Once the
    /// table holds twice as many, the commit that got there is followed by an expiry that keeps
    /// the newest `keep_snapshots` (the newest is always the sink's own and carries every
    /// partition's watermark), so the metadata every commit rewrites stays bounded. `None`:
    /// the sink never expires snapshots (run your own maintenance).
    pub keep_snapshots: Option<usize>,
    /// How many records a runtime gathers into one batch, that is into one snapshot
    /// ([`pico_sink::Sink::commit_policy`]); default 500 000 records, 64 MiB or 60 s. Every
    /// commit writes a data file, a manifest, a manifest list and a metadata file, so batches of
    /// a few hundred records leave many small files.
    pub commit: CommitPolicy,
}

impl IcebergSinkConfig {
    /// Defaults: create when missing, up to 50 conflicts per batch, keep 100 snapshots,
    /// commits of up to 500 000 records, 64 MiB or 60 s ([`CommitPolicy::default`]).
    pub fn new(namespace: impl Into<String>, table: impl Into<String>) -> Self {
        Self {
            namespace: vec![namespace.into()],
            table: table.into(),
            scope: Scope::default(),
            create_table: true,
            max_conflicts: 50,
            keep_snapshots: Some(100),
            commit: CommitPolicy::default(),
        }
    }
}
