//! [`RedshiftSink`].

use async_trait::async_trait;
use pico_pg_common::{
    ConflictAction, Connections, Pool, Probe, changed_in, probe_batch, probe_sql, reject_changed,
    reject_needs_digest, stored_digests_sql,
};
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
    /// Reads the stored digests of a range (tables with `pico_digest`).
    stored: Option<String>,
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
                reject_needs_digest(self.config.conflict, digest, &self.config.table)?;
                let name = self.config.table.to_string();
                Ok(Table {
                    statements: Statements::new(&self.config, digest),
                    digest,
                    probe: probe_sql(&name),
                    stored: digest.then(|| stored_digests_sql(&name)),
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
        let probe = if table.digest {
            probe_batch(&client, &table.probe, &self.config.scope, batch).await?
        } else {
            Probe::Partial
        };
        if probe == Probe::Identical {
            client.release();
            debug!(batch = %batch.id(), "the table holds the batch: nothing written");
            return Ok(WriteReport::already_present(batch.len()).into());
        }
        let (mut rows, mut rejected) = prepare(&self.config, batch);
        let changed = changed_in(
            &client,
            table.stored.as_deref(),
            &self.config.scope,
            batch,
            probe,
        )
        .await?;
        if self.config.conflict == ConflictAction::Reject {
            rejected.extend(reject_changed(&mut rows, |r| r.index, &changed, batch));
        }
        let mut report = WriteReport::default();
        if !rows.is_empty() {
            let (counts, refused) =
                write_rows(&mut client, &self.config, &table.statements, &rows, batch)
                    .await
                    .map_err(|f| f.into_sink_error())?;
            report = counts;
            rejected.extend(refused);
            if self.config.conflict == ConflictAction::Update {
                // The stage counts every held identity as present; the changed ones among the
                // rows were overwritten.
                let held: std::collections::HashSet<usize> = rows.iter().map(|r| r.index).collect();
                let overwritten = changed.iter().filter(|i| held.contains(i)).count() as u64;
                let moved = overwritten.min(report.already_present);
                report.written += moved;
                report.already_present -= moved;
            }
        }
        client.release();
        debug!(batch = %batch.id(), written = report.written, rejected = rejected.len(), "batch merged");
        Ok(Outcome::new(report, rejected).with_changed(changed.len() as u64))
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
