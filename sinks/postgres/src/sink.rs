//! [`PostgresSink`].

use async_trait::async_trait;
use pico_pg_common::{Pool, connect_pool, pool_error};
use pico_sink::{Batch, Claim, Description, Sink, SinkError, WriteReport};
use tracing::debug;

use crate::config::PostgresSinkConfig;
use crate::rows::prepare;
use crate::schema::ensure_table;
use crate::write::{Statements, write_rows};

/// Upserts batches on `(pico_topic, pico_partition, pico_offset)`; see the crate docs.
pub struct PostgresSink {
    config: PostgresSinkConfig,
    pool: Pool,
    statements: Statements,
    ready: bool,
}

impl PostgresSink {
    /// Checks the configuration and builds the pool (no connection yet).
    pub fn new(config: PostgresSinkConfig) -> Result<Self, SinkError> {
        if !config.keep_value && config.mapped_columns.is_empty() {
            return Err(SinkError::fatal(
                "keep_value is false and no mapped_columns are set: the sink would store no payload",
            ));
        }
        let reserved = [
            "pico_topic",
            "pico_partition",
            "pico_offset",
            "key",
            "value",
            "headers",
            "ts",
        ];
        for m in &config.mapped_columns {
            if reserved.contains(&m.column.as_str()) {
                return Err(SinkError::fatal(format!(
                    "mapped column {:?} collides with a column the sink writes: rename it",
                    m.column
                )));
            }
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

    /// The configuration.
    pub fn config(&self) -> &PostgresSinkConfig {
        &self.config
    }

    async fn prepare_table(&mut self) -> Result<(), SinkError> {
        if self.ready {
            return Ok(());
        }
        let client = self.pool.get().await.map_err(pool_error)?;
        ensure_table(&client, &self.config).await?;
        self.ready = true;
        Ok(())
    }
}

#[async_trait]
impl Sink for PostgresSink {
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
        debug!(batch = %batch.id(), written = report.written, present = report.already_present, rejected = rejected.len(), "batch committed");
        SinkError::outcome(report, rejected)
    }

    async fn close(&mut self) -> Result<(), SinkError> {
        self.pool.close();
        Ok(())
    }

    fn describe(&self) -> Description {
        Description {
            sink: "postgres".into(),
            mechanism: format!(
                "PRIMARY KEY (pico_topic, pico_partition, pico_offset); one transaction per batch: \
                 binary COPY straight into the table when no row of the range exists, else staging \
                 (COPY into a temp table from {} records, unnest below) and INSERT … ON CONFLICT DO {}",
                self.config.copy_threshold,
                match self.config.conflict {
                    pico_pg_common::ConflictAction::Update => "UPDATE (skipping identical rows)",
                    pico_pg_common::ConflictAction::Nothing => "NOTHING",
                }
            ),
            claims: Vec::new(),
            default_claim: Claim::NoVisibleDuplicate,
        }
    }
}
