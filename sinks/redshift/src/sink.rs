//! [`RedshiftSink`]: the Redshift [`Dialect`] of the shared [`TableSink`].

use std::collections::HashSet;

use async_trait::async_trait;
use pico_pg_common::{ConflictAction, Dialect, Failure, Known, Pool, Settings, TableSink};
use pico_sink::{Batch, Claim, Description, Outcome, RejectedRecord, Sink, SinkError, WriteReport};
use tokio_postgres::Client;

use crate::config::{RedshiftSinkConfig, UpsertStrategy};
use crate::rows::{Row, prepare};
use crate::schema::ensure_table;
use crate::write::{Statements, write_rows};

/// Stages and merges batches on the pico columns; see the crate docs. One instance serves
/// every partition of a process, one pooled connection per batch in flight (the table lock
/// serialises the merges themselves).
pub struct RedshiftSink(TableSink<Redshift>);

impl RedshiftSink {
    /// Checks the configuration and builds a pool of `connection.pool_size` (no connection yet).
    pub fn new(config: RedshiftSinkConfig) -> Result<Self, SinkError> {
        TableSink::new(config).map(Self)
    }

    /// Writes through a pool the caller already has, built with the
    /// [`deadpool_postgres`](crate::deadpool_postgres) this crate re-exports. The configuration
    /// comes from [`RedshiftSinkConfig::for_table`]: a connection URL in it would not be used,
    /// and is refused. The same checks as [`RedshiftSink::new`].
    pub fn with_pool(pool: Pool, config: RedshiftSinkConfig) -> Result<Self, SinkError> {
        TableSink::with_pool(pool, config).map(Self)
    }

    /// The configuration.
    pub fn config(&self) -> &RedshiftSinkConfig {
        self.0.config()
    }

    /// The pool the sink writes through.
    pub fn pool(&self) -> &Pool {
        self.0.pool()
    }
}

#[async_trait]
impl Sink for RedshiftSink {
    async fn open(&self) -> Result<(), SinkError> {
        self.0.open().await
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        self.0.consume(batch).await
    }

    async fn close(&self) -> Result<(), SinkError> {
        self.0.close().await
    }

    fn describe(&self) -> Description {
        self.0.describe()
    }
}

/// Redshift: no enforced key, so every write locks the table, stages the rows and merges them.
pub(crate) struct Redshift;

#[async_trait]
impl Dialect for Redshift {
    type Config = RedshiftSinkConfig;
    type Row = Row;
    type Statements = Statements;

    const WITH_POOL: &'static str = "RedshiftSink::with_pool";
    const FOR_TABLE: &'static str = "RedshiftSinkConfig::for_table(table)";

    fn settings(config: &RedshiftSinkConfig) -> Settings<'_> {
        Settings {
            connection: &config.connection,
            table: &config.table,
            conflict: config.conflict,
            keep_value: config.keep_value,
            mapped_columns: &config.mapped_columns,
            scope: &config.scope,
        }
    }

    async fn ensure_table(client: &Client, config: &RedshiftSinkConfig) -> Result<bool, SinkError> {
        ensure_table(client, config).await
    }

    fn statements(config: &RedshiftSinkConfig, digest: bool) -> Statements {
        Statements::new(config, digest)
    }

    fn prepare(config: &RedshiftSinkConfig, batch: &Batch) -> (Vec<Row>, Vec<RejectedRecord>) {
        prepare(config, batch)
    }

    fn position(row: &Row) -> usize {
        row.index
    }

    async fn write(
        client: &mut Client,
        config: &RedshiftSinkConfig,
        statements: &Statements,
        rows: &[Row],
        batch: &Batch,
        known: Known<'_>,
    ) -> Result<(WriteReport, Vec<RejectedRecord>), Failure> {
        let (mut report, refused) = write_rows(client, config, statements, rows, batch).await?;
        if config.conflict == ConflictAction::Update {
            // The stage counts every held identity as present; the changed ones among the rows
            // were overwritten.
            let held: HashSet<usize> = rows.iter().map(|r| r.index).collect();
            let overwritten = known.changed.iter().filter(|i| held.contains(i)).count() as u64;
            let moved = overwritten.min(report.already_present);
            report.written += moved;
            report.already_present -= moved;
        }
        Ok((report, refused))
    }

    fn describe(config: &RedshiftSinkConfig) -> Description {
        Description::new(
            "redshift",
            format!(
                "no enforced key: a probe of the range's count and content digests answers an exact \
                 replay without writing; otherwise per batch one transaction that LOCKs the table, \
                 stages rows in a temp table and {} on (pico_topic, pico_partition, pico_offset)",
                match config.strategy {
                    UpsertStrategy::Merge => "MERGEs",
                    UpsertStrategy::DeleteInsert => "DELETE USING + INSERTs",
                }
            ),
            Claim::NoVisibleDuplicate,
        )
        .telling_already_present()
    }
}
