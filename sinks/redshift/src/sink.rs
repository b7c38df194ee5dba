//! [`RedshiftSink`].

use async_trait::async_trait;
use pico_pg_common::{Checkout, Pool, connect_pool};
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
    pool: Pool,
    statements: Statements,
    table_ready: OnceCell<()>,
}

impl RedshiftSink {
    /// Checks the configuration and builds a pool of `connection.pool_size` (no connection yet).
    pub fn new(config: RedshiftSinkConfig) -> Result<Self, SinkError> {
        check(&config)?;
        let pool = connect_pool(&config.connection)?;
        Self::with_pool(pool, config)
    }

    /// Uses a pool the caller already has; the configuration's `connection` is then not used.
    pub fn with_pool(pool: Pool, config: RedshiftSinkConfig) -> Result<Self, SinkError> {
        check(&config)?;
        let statements = Statements::new(&config);
        Ok(Self {
            config,
            pool,
            statements,
            table_ready: OnceCell::new(),
        })
    }

    async fn prepare_table(&self) -> Result<(), SinkError> {
        self.table_ready
            .get_or_try_init(|| async {
                let client = Checkout::get(&self.pool).await?;
                ensure_table(&client, &self.config).await?;
                client.release();
                Ok(())
            })
            .await
            .map(|_| ())
    }
}

fn check(config: &RedshiftSinkConfig) -> Result<(), SinkError> {
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
        self.prepare_table().await
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        self.prepare_table().await?;
        let (rows, mut rejected) = prepare(&self.config, batch);
        let mut report = WriteReport::default();
        if !rows.is_empty() {
            let mut client = Checkout::get(&self.pool).await?;
            let (counts, refused) =
                write_rows(&mut client, &self.config, &self.statements, &rows, batch)
                    .await
                    .map_err(|f| f.into_sink_error())?;
            client.release();
            report = counts;
            rejected.extend(refused);
        }
        debug!(batch = %batch.id(), written = report.written, rejected = rejected.len(), "batch merged");
        Ok(Outcome::new(report, rejected))
    }

    async fn close(&self) -> Result<(), SinkError> {
        self.pool.close();
        Ok(())
    }

    fn describe(&self) -> Description {
        Description::new(
            "redshift",
            format!(
                "no enforced key: per batch one transaction that LOCKs the table, stages rows in a \
                 temp table and {} on (pico_topic, pico_partition, pico_offset)",
                match self.config.strategy {
                    UpsertStrategy::Merge => "MERGEs",
                    UpsertStrategy::DeleteInsert => "DELETE USING + INSERTs",
                }
            ),
            Claim::NoVisibleDuplicate,
        )
    }
}
