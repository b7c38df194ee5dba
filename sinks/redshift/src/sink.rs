//! [`RedshiftSink`].

use async_trait::async_trait;
use pico_pg_common::{Pool, connect_pool, pool_error};
use pico_sink::{Batch, Claim, Description, Sink, SinkError, WriteReport};
use tracing::debug;

use crate::config::{RedshiftSinkConfig, UpsertStrategy};
use crate::rows::prepare;
use crate::schema::ensure_table;
use crate::write::{Statements, write_rows};

/// Stages and merges batches on the pico columns; see the crate docs.
pub struct RedshiftSink {
    config: RedshiftSinkConfig,
    pool: Pool,
    statements: Statements,
    ready: bool,
}

impl RedshiftSink {
    /// Checks the configuration and builds the pool (no connection yet).
    pub fn new(config: RedshiftSinkConfig) -> Result<Self, SinkError> {
        if !config.keep_value && config.mapped_columns.is_empty() {
            return Err(SinkError::fatal(
                "keep_value is false and no mapped_columns are set: the sink would store no payload",
            ));
        }
        let pool = connect_pool(&config.connection)?;
        let statements = Statements::new(&config);
        Ok(Self {
            config,
            pool,
            statements,
            ready: false,
        })
    }

    async fn prepare_table(&mut self) -> Result<(), SinkError> {
        if !self.ready {
            let client = self.pool.get().await.map_err(pool_error)?;
            ensure_table(&client, &self.config).await?;
            self.ready = true;
        }
        Ok(())
    }
}

#[async_trait]
impl Sink for RedshiftSink {
    async fn open(&mut self) -> Result<(), SinkError> {
        self.prepare_table().await
    }

    async fn consume(&mut self, batch: &Batch) -> Result<WriteReport, SinkError> {
        self.prepare_table().await?;
        let (rows, mut rejected) = prepare(&self.config, batch);
        let mut report = WriteReport::default();
        if !rows.is_empty() {
            let mut client = self.pool.get().await.map_err(pool_error)?;
            let (counts, refused) =
                write_rows(&mut client, &self.config, &self.statements, &rows, batch)
                    .await
                    .map_err(|f| f.into_sink_error())?;
            report.written = counts.written;
            report.already_present = counts.already_present;
            rejected.extend(refused);
        }
        debug!(batch = %batch.id(), written = report.written, rejected = rejected.len(), "batch merged");
        SinkError::outcome(report, rejected)
    }

    async fn close(&mut self) -> Result<(), SinkError> {
        self.pool.close();
        Ok(())
    }

    fn describe(&self) -> Description {
        Description {
            sink: "redshift".into(),
            mechanism: format!(
                "no enforced key: per batch one transaction that LOCKs the table, stages rows in a \
                 temp table and {} on (pico_topic, pico_partition, pico_offset)",
                match self.config.strategy {
                    UpsertStrategy::Merge => "MERGEs",
                    UpsertStrategy::DeleteInsert => "DELETE USING + INSERTs",
                }
            ),
            claims: Vec::new(),
            default_claim: Claim::NoVisibleDuplicate,
        }
    }
}
