//! [`PostgresSink`].

use async_trait::async_trait;
use pico_pg_common::{
    ConflictAction, Connections, Pool, Probe, changed_in, probe_batch, probe_sql, reject_changed,
    reject_needs_digest, stored_digests_sql,
};
use pico_sink::{Batch, Claim, Description, Outcome, Sink, SinkError, WriteReport};
use tokio::sync::OnceCell;
use tracing::debug;

use crate::config::PostgresSinkConfig;
use crate::rows::prepare;
use crate::schema::ensure_table;
use crate::write::{Statements, write_rows};

/// Upserts batches on `(pico_topic, pico_partition, pico_offset)`; see the crate docs.
///
/// One instance serves every partition of a process: each batch in flight uses one pooled
/// connection, so batches of different partitions are written concurrently up to the pool's
/// size. Build it on the process's own pool with [`PostgresSink::with_pool`].
pub struct PostgresSink {
    config: PostgresSinkConfig,
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

/// Columns the sink writes itself; a mapped column may not take one of these names.
const RESERVED: [&str; 7] = [
    "pico_topic",
    "pico_partition",
    "pico_offset",
    "key",
    "value",
    "headers",
    "ts",
];

impl PostgresSink {
    /// Checks the configuration and builds a pool of `connection.pool_size` (no connection yet).
    pub fn new(config: PostgresSinkConfig) -> Result<Self, SinkError> {
        check(&config)?;
        let connections = Connections::from_config(&config.connection)?;
        Ok(Self::build(connections, config))
    }

    /// Writes through a pool the caller already has (shared with the rest of the process), built
    /// with the [`deadpool_postgres`](crate::deadpool_postgres) this crate re-exports. The
    /// configuration comes from [`PostgresSinkConfig::for_table`]: a connection URL in it would
    /// not be used, and is refused. The same checks as [`PostgresSink::new`].
    pub fn with_pool(pool: Pool, config: PostgresSinkConfig) -> Result<Self, SinkError> {
        check(&config)?;
        let connections = Connections::given(
            pool,
            &config.connection,
            "PostgresSink::with_pool",
            "PostgresSinkConfig::for_table(table)",
        )?;
        Ok(Self::build(connections, config))
    }

    fn build(connections: Connections, config: PostgresSinkConfig) -> Self {
        Self {
            config,
            connections,
            table: OnceCell::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &PostgresSinkConfig {
        &self.config
    }

    /// The pool the sink writes through.
    pub fn pool(&self) -> &Pool {
        self.connections.pool()
    }

    async fn prepare_table(&self) -> Result<&Table, SinkError> {
        self.table
            .get_or_try_init(|| async {
                let client = self.connections.checkout().await?;
                let digest = ensure_table(&client, &self.config).await?;
                client.release();
                if !digest {
                    tracing::info!(table = %self.config.table, "no pico_digest column: replays are upserted rather than answered by a probe");
                }
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

fn check(config: &PostgresSinkConfig) -> Result<(), SinkError> {
    config.table.check()?;
    if !config.keep_value && config.mapped_columns.is_empty() {
        return Err(SinkError::fatal(
            "keep_value is false and no mapped_columns are set: the sink would store no payload",
        ));
    }
    if let Some(m) = config
        .mapped_columns
        .iter()
        .find(|m| RESERVED.contains(&m.column.as_str()))
    {
        return Err(SinkError::fatal(format!(
            "mapped column {:?} collides with a column the sink writes: rename it",
            m.column
        )));
    }
    Ok(())
}

#[async_trait]
impl Sink for PostgresSink {
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
            let known_empty = probe == Probe::Empty;
            let (counts, refused) = write_rows(
                &mut client,
                &self.config,
                &table.statements,
                &rows,
                batch,
                known_empty,
            )
            .await
            .map_err(|f| f.into_sink_error())?;
            report = counts;
            rejected.extend(refused);
        }
        client.release();
        debug!(batch = %batch.id(), written = report.written, present = report.already_present, rejected = rejected.len(), "batch committed");
        Ok(Outcome::new(report, rejected).with_changed(changed.len() as u64))
    }

    async fn close(&self) -> Result<(), SinkError> {
        self.connections.pool().close();
        Ok(())
    }

    fn describe(&self) -> Description {
        Description::new(
            "postgres",
            format!(
                "PRIMARY KEY (pico_topic, pico_partition, pico_offset); a probe of the range's count \
                 and content digests answers an exact replay without writing; one transaction per \
                 batch: binary COPY straight into the table when no row of the range exists, else \
                 staging (COPY into a temp table from {} records, unnest below) and INSERT … ON \
                 CONFLICT DO {}",
                self.config.copy_threshold,
                match self.config.conflict {
                    pico_pg_common::ConflictAction::Update => "UPDATE (skipping identical rows)",
                    pico_pg_common::ConflictAction::Nothing => "NOTHING",
                    pico_pg_common::ConflictAction::Reject => {
                        "NOTHING, rejecting a record held with another payload"
                    }
                }
            ),
            Claim::NoVisibleDuplicate,
        )
        .telling_already_present()
    }
}
