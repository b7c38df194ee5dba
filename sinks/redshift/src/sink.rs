//! [`RedshiftSink`].

use async_trait::async_trait;
use pico_pg_common::{Connections, Pool, Probe, probe_batch, probe_sql};
use pico_sink::{Batch, Claim, Description, Outcome, Sink, SinkError, WriteReport};
use tokio::sync::OnceCell;
use tracing::debug;

use crate::config::{RedshiftSinkConfig, UpsertStrategy};
use crate::rows::prepare;
use crate::schema::ensure_table;
use crate::write::{Statements, write_rows};

/// Stages and merges batches on the pico columns; see the crate docs. One instance serves
/// every partition of a process, one pooled connection per batch in flight (the table lock
/// serialises the merges themselves).
pub struct RedshiftSink {
    config: RedshiftSinkConfig,
    connections: Connections,
    table: OnceCell<Table>,
}

/// What `open` learned about the table, and the statements for it.
struct Table {
    statements: Statements,
    /// `pico_digest` exists: replays are answered by one probe.
    digest: bool,
    probe: String,
}

impl RedshiftSink {
    /// Checks the configuration and builds a pool of `connection.pool_size` (no connection yet).
    pub fn new(config: RedshiftSinkConfig) -> Result<Self, SinkError> {
        check(&config)?;
        let connections = Connections::from_config(&config.connection)?;
        Ok(Self::build(connections, config))
    }

    /// Writes through a pool the caller already has, built with the
    /// [`deadpool_postgres`](crate::deadpool_postgres) this crate re-exports. The configuration
    /// comes from [`RedshiftSinkConfig::for_table`]: a connection URL in it would not be used,
    /// and is refused. The same checks as [`RedshiftSink::new`].
    pub fn with_pool(pool: Pool, config: RedshiftSinkConfig) -> Result<Self, SinkError> {
        check(&config)?;
        let connections = Connections::given(
            pool,
            &config.connection,
            "RedshiftSink::with_pool",
            "RedshiftSinkConfig::for_table(table)",
        )?;
        Ok(Self::build(connections, config))
    }

    fn build(connections: Connections, config: RedshiftSinkConfig) -> Self {
        Self {
            config,
            connections,
            table: OnceCell::new(),
        }
    }

    async fn prepare_table(&self) -> Result<&Table, SinkError> {
        self.table
            .get_or_try_init(|| async {
                let client = self.connections.checkout().await?;
                let digest = ensure_table(&client, &self.config).await?;
                client.release();
                Ok(Table {
                    statements: Statements::new(&self.config, digest),
                    digest,
                    probe: probe_sql(&self.config.table.to_string()),
                })
            })
            .await
    }
}

fn check(config: &RedshiftSinkConfig) -> Result<(), SinkError> {
    config.table.check()?;
    if !config.keep_value && config.mapped_columns.is_empty() {
        return Err(SinkError::fatal(
            "keep_value is false and no mapped_columns are set: the sink would store no payload",
        ));
    }
    Ok(())
}

#[async_trait]
impl Sink for RedshiftSink {
    async fn open(&self) -> Result<(), SinkError> {
        self.prepare_table().await.map(|_| ())
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let table = self.prepare_table().await?;
        let mut client = self.connections.checkout().await?;
        if table.digest
            && probe_batch(&client, &table.probe, &self.config.scope, batch).await?
                == Probe::Identical
        {
            client.release();
            debug!(batch = %batch.id(), "the table holds the batch: nothing written");
            return Ok(WriteReport::already_present(batch.len()).into());
        }
        let (rows, mut rejected) = prepare(&self.config, batch);
        let mut report = WriteReport::default();
        if !rows.is_empty() {
            let (counts, refused) =
                write_rows(&mut client, &self.config, &table.statements, &rows, batch)
                    .await
                    .map_err(|f| f.into_sink_error())?;
            report = counts;
            rejected.extend(refused);
        }
        client.release();
        debug!(batch = %batch.id(), written = report.written, rejected = rejected.len(), "batch merged");
        Ok(Outcome::new(report, rejected))
    }

    async fn close(&self) -> Result<(), SinkError> {
        self.connections.pool().close();
        Ok(())
    }

    fn describe(&self) -> Description {
        Description::new(
            "redshift",
            format!(
                "no enforced key: a probe of the range's count and content digests answers an exact \
                 replay without writing; otherwise per batch one transaction that LOCKs the table, \
                 stages rows in a temp table and {} on (pico_topic, pico_partition, pico_offset)",
                match self.config.strategy {
                    UpsertStrategy::Merge => "MERGEs",
                    UpsertStrategy::DeleteInsert => "DELETE USING + INSERTs",
                }
            ),
            Claim::NoVisibleDuplicate,
        )
        .telling_already_present()
    }
}
