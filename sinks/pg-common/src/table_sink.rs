//! [`TableSink`]: the sink every PostgreSQL-protocol destination is, around its [`Dialect`].

use async_trait::async_trait;
use pico_sink::{Batch, Description, Outcome, Sink, SinkError, WriteReport};
use tokio::sync::OnceCell;
use tracing::{debug, info};

use crate::dialect::{Dialect, Known};
use crate::{
    ConflictAction, Connections, Pool, Probe, changed_in, probe_batch, probe_sql, reject_changed,
    reject_needs_digest, stored_digests_sql,
};

/// A table sink on a PostgreSQL-protocol server: one instance serves every partition of a
/// process, each batch in flight on one pooled connection.
///
/// Per batch: a probe of the range's count and content digests answers an exact replay
/// without writing (tables with `pico_digest`); otherwise the records become rows, the ones
/// held with another payload are found (and rejected under [`ConflictAction::Reject`]), and the
/// dialect writes the rest.
pub struct TableSink<D: Dialect> {
    config: D::Config,
    connections: Connections,
    table: OnceCell<Prepared<D::Statements>>,
}

/// What the first `open` learned about the table, and the statements for it.
struct Prepared<S> {
    statements: S,
    /// `pico_digest` exists: replays are answered by one probe.
    digest: bool,
    probe: String,
    /// Reads the stored digests of a range (tables with `pico_digest`).
    stored: Option<String>,
}

impl<D: Dialect> TableSink<D> {
    /// Checks the configuration and builds a pool of `connection.pool_size` (no connection yet).
    pub fn new(config: D::Config) -> Result<Self, SinkError> {
        check::<D>(&config)?;
        let connections = Connections::from_config(D::settings(&config).connection)?;
        Ok(Self::build(connections, config))
    }

    /// Writes through a pool the caller already has. A connection URL in the configuration
    /// would not be used, and is refused. The same checks as [`TableSink::new`].
    pub fn with_pool(pool: Pool, config: D::Config) -> Result<Self, SinkError> {
        check::<D>(&config)?;
        let connections = Connections::given(
            pool,
            D::settings(&config).connection,
            D::WITH_POOL,
            D::FOR_TABLE,
        )?;
        Ok(Self::build(connections, config))
    }

    fn build(connections: Connections, config: D::Config) -> Self {
        Self {
            config,
            connections,
            table: OnceCell::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &D::Config {
        &self.config
    }

    /// The pool the sink writes through.
    pub fn pool(&self) -> &Pool {
        self.connections.pool()
    }

    async fn prepare_table(&self) -> Result<&Prepared<D::Statements>, SinkError> {
        self.table
            .get_or_try_init(|| async {
                let settings = D::settings(&self.config);
                let client = self.connections.checkout().await?;
                let digest = D::ensure_table(&client, &self.config).await?;
                client.release();
                if !digest {
                    info!(table = %settings.table, "no pico_digest column: replays are upserted rather than answered by a probe");
                }
                reject_needs_digest(settings.conflict, digest, settings.table)?;
                let name = settings.table.to_string();
                Ok(Prepared {
                    statements: D::statements(&self.config, digest),
                    digest,
                    probe: probe_sql(&name),
                    stored: digest.then(|| stored_digests_sql(&name)),
                })
            })
            .await
    }
}

/// The checks every dialect shares, then the dialect's own.
fn check<D: Dialect>(config: &D::Config) -> Result<(), SinkError> {
    let settings = D::settings(config);
    settings.table.check()?;
    if !settings.keep_value && settings.mapped_columns.is_empty() {
        return Err(SinkError::fatal(
            "keep_value is false and no mapped_columns are set: the sink would store no payload",
        ));
    }
    pico_sink::kit::check_mapped_columns(settings.mapped_columns)?;
    D::check(config)
}

#[async_trait]
impl<D: Dialect> Sink for TableSink<D> {
    async fn open(&self) -> Result<(), SinkError> {
        self.prepare_table().await.map(|_| ())
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let table = self.prepare_table().await?;
        let settings = D::settings(&self.config);
        let mut client = self.connections.checkout().await?;
        let probe = if table.digest {
            probe_batch(&client, &table.probe, settings.scope, batch).await?
        } else {
            Probe::Partial
        };
        if probe == Probe::Identical {
            client.release();
            debug!(batch = %batch.id(), "the table holds the batch: nothing written");
            return Ok(WriteReport::already_present(batch.len()).into());
        }
        let (mut rows, mut rejected) = D::prepare(&self.config, batch);
        let changed = changed_in(
            &client,
            table.stored.as_deref(),
            settings.scope,
            batch,
            probe,
        )
        .await?;
        if settings.conflict == ConflictAction::Reject {
            rejected.extend(reject_changed(&mut rows, D::position, &changed, batch));
        }
        let mut report = WriteReport::default();
        if !rows.is_empty() {
            let known = Known {
                empty: probe == Probe::Empty,
                changed: &changed,
            };
            let (counts, refused) = D::write(
                &mut client,
                &self.config,
                &table.statements,
                &rows,
                batch,
                known,
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
        D::describe(&self.config)
    }
}
