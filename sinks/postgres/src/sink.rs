//! [`PostgresSink`]: the PostgreSQL [`Dialect`] of the shared [`TableSink`].

use async_trait::async_trait;
use pico_pg_common::{ConflictAction, Dialect, Failure, Known, Pool, Settings, TableSink};
use pico_sink::{Batch, Claim, Description, Outcome, RejectedRecord, Sink, SinkError, WriteReport};
use tokio_postgres::Client;

use crate::config::PostgresSinkConfig;
use crate::rows::{Row, prepare};
use crate::schema::ensure_table;
use crate::write::{Statements, write_rows};

/// Upserts batches on `(pico_topic, pico_partition, pico_offset)`; see the crate docs.
///
/// One instance serves every partition of a process: each batch in flight uses one pooled
/// connection, so batches of different partitions are written concurrently up to the pool's
/// size. Build it on the process's own pool with [`PostgresSink::with_pool`].
pub struct PostgresSink(TableSink<Postgres>);

impl PostgresSink {
    /// Checks the configuration and builds a pool of `connection.pool_size` (no connection yet).
    pub fn new(config: PostgresSinkConfig) -> Result<Self, SinkError> {
        TableSink::new(config).map(Self)
    }

    /// Writes through a pool the caller already has (shared with the rest of the process), built
    /// with the [`deadpool_postgres`](crate::deadpool_postgres) this crate re-exports. The
    /// configuration comes from [`PostgresSinkConfig::for_table`]: a connection URL in it would
    /// not be used, and is refused. The same checks as [`PostgresSink::new`].
    pub fn with_pool(pool: Pool, config: PostgresSinkConfig) -> Result<Self, SinkError> {
        TableSink::with_pool(pool, config).map(Self)
    }

    /// The configuration.
    pub fn config(&self) -> &PostgresSinkConfig {
        self.0.config()
    }

    /// The pool the sink writes through.
    pub fn pool(&self) -> &Pool {
        self.0.pool()
    }
}

#[async_trait]
impl Sink for PostgresSink {
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

/// PostgreSQL: a primary key on the identity, binary COPY for first writes, `ON CONFLICT` for
/// replays.
pub(crate) struct Postgres;

#[async_trait]
impl Dialect for Postgres {
    type Config = PostgresSinkConfig;
    type Row = Row;
    type Statements = Statements;

    const WITH_POOL: &'static str = "PostgresSink::with_pool";
    const FOR_TABLE: &'static str = "PostgresSinkConfig::for_table(table)";

    fn settings(config: &PostgresSinkConfig) -> Settings<'_> {
        Settings {
            connection: &config.connection,
            table: &config.table,
            conflict: config.conflict,
            keep_value: config.keep_value,
            mapped_columns: &config.mapped_columns,
            scope: &config.scope,
        }
    }

    async fn ensure_table(client: &Client, config: &PostgresSinkConfig) -> Result<bool, SinkError> {
        ensure_table(client, config).await
    }

    fn statements(config: &PostgresSinkConfig, digest: bool) -> Statements {
        Statements::new(config, digest)
    }

    fn prepare(config: &PostgresSinkConfig, batch: &Batch) -> (Vec<Row>, Vec<RejectedRecord>) {
        prepare(config, batch)
    }

    fn position(row: &Row) -> usize {
        row.index
    }

    async fn write(
        client: &mut Client,
        config: &PostgresSinkConfig,
        statements: &Statements,
        rows: &[Row],
        batch: &Batch,
        known: Known<'_>,
    ) -> Result<(WriteReport, Vec<RejectedRecord>), Failure> {
        write_rows(client, config, statements, rows, batch, known.empty).await
    }

    fn describe(config: &PostgresSinkConfig) -> Description {
        Description::new(
            "postgres",
            format!(
                "PRIMARY KEY (pico_topic, pico_partition, pico_offset); a probe of the range's count \
                 and content digests answers an exact replay without writing; one transaction per \
                 batch: binary COPY straight into the table when no row of the range exists, else \
                 staging (COPY into a temp table from {} records, unnest below) and INSERT … ON \
                 CONFLICT DO {}",
                config.copy_threshold,
                match config.conflict {
                    ConflictAction::Update => "UPDATE (skipping identical rows)",
                    ConflictAction::Nothing => "NOTHING",
                    ConflictAction::Reject => {
                        "NOTHING, rejecting a record held with another payload"
                    }
                }
            ),
            Claim::NoVisibleDuplicate,
        )
        .telling_already_present()
    }
}
