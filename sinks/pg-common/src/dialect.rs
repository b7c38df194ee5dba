//! [`Dialect`]: what a PostgreSQL-protocol destination fills in of the [`TableSink`]
//! skeleton.
//!
//! [`TableSink`]: crate::TableSink

use async_trait::async_trait;
use pico_sink::identity::Scope;
use pico_sink::kit::MappedColumn;
use pico_sink::{Batch, Description, RejectedRecord, SinkError, WriteReport};
use tokio_postgres::Client;

use crate::{ConflictAction, ConnectionConfig, Failure, QualifiedTable};

/// The settings every PostgreSQL-protocol table sink has, borrowed from its configuration.
#[derive(Debug, Clone, Copy)]
pub struct Settings<'a> {
    /// Server and pool.
    pub connection: &'a ConnectionConfig,
    /// The target table.
    pub table: &'a QualifiedTable,
    /// What a record whose identity is held with another payload does.
    pub conflict: ConflictAction,
    /// Whether the whole payload is stored in the value column.
    pub keep_value: bool,
    /// Payload fields written to their own columns.
    pub mapped_columns: &'a [MappedColumn],
    /// The namespace that qualifies the topic column.
    pub scope: &'a Scope,
}

/// What the probe learned of the batch's offset range before the write.
#[derive(Debug, Clone, Copy)]
pub struct Known<'a> {
    /// None of the range's offsets is in the table: a first write.
    pub empty: bool,
    /// Positions in the batch of the records held with another payload.
    pub changed: &'a [usize],
}

/// What differs between the PostgreSQL-protocol destinations: the table's shape, how records
/// become rows, and the statements that write them. The [`TableSink`](crate::TableSink)
/// around it does the rest, the same for every one: the configuration checks, the pool, the
/// one-time table preparation, the probe that answers an exact replay without writing, the
/// check for records changed since they were written, and the report.
#[async_trait]
pub trait Dialect: Send + Sync + 'static {
    /// The sink's configuration.
    type Config: Send + Sync + 'static;
    /// One record, checked and converted for the destination.
    type Row: Send + Sync;
    /// The statements for one configuration and table, built once.
    type Statements: Send + Sync;

    /// The sink's pool constructor, for messages (`"PostgresSink::with_pool"`).
    const WITH_POOL: &'static str;
    /// The configuration constructor without a URL, for messages
    /// (`"PostgresSinkConfig::for_table(table)"`).
    const FOR_TABLE: &'static str;

    /// The settings every dialect has.
    fn settings(config: &Self::Config) -> Settings<'_>;

    /// Checks of the dialect's own settings, after the shared ones (default: none).
    fn check(_config: &Self::Config) -> Result<(), SinkError> {
        Ok(())
    }

    /// Creates the table when allowed and missing, checks its shape otherwise; returns whether
    /// it has the digest column (`pico_digest`).
    async fn ensure_table(client: &Client, config: &Self::Config) -> Result<bool, SinkError>;

    /// The statements for a table with or without the digest column.
    fn statements(config: &Self::Config, digest: bool) -> Self::Statements;

    /// Every record of `batch` as a row, or rejected with the reason the destination cannot
    /// hold it.
    fn prepare(config: &Self::Config, batch: &Batch) -> (Vec<Self::Row>, Vec<RejectedRecord>);

    /// The row's position in its batch.
    fn position(row: &Self::Row) -> usize;

    /// Writes `rows` (not empty) in one transaction per attempt, isolating records the server
    /// refuses; returns the counts and those records.
    async fn write(
        client: &mut Client,
        config: &Self::Config,
        statements: &Self::Statements,
        rows: &[Self::Row],
        batch: &Batch,
        known: Known<'_>,
    ) -> Result<(WriteReport, Vec<RejectedRecord>), Failure>;

    /// The mechanism and the claim.
    fn describe(config: &Self::Config) -> Description;
}
