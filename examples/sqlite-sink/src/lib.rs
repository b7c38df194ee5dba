//! An example of a sink of your own, tested with the pico-sinks conformance suite.
//!
//! [`SqliteSink`] writes records into a SQLite table whose primary key is the record identity
//! `(pico_topic, pico_partition, pico_offset)`; a batch is one transaction of
//! `INSERT … ON CONFLICT DO NOTHING`, so a replayed batch changes nothing. Its test
//! (`tests/conformance.rs`) implements `pico_conformance::Destination` — building a
//! sink and reading the table back — and runs every scenario of the suite from `cargo test`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use pico_sink::{Batch, Claim, Description, Outcome, RejectedRecord, Sink, SinkError, WriteReport};
use rusqlite::{Connection, ErrorCode, params};

/// Writes batches into one SQLite table keyed on the record identity.
pub struct SqliteSink {
    path: PathBuf,
    table: String,
    conn: Arc<Mutex<Option<Connection>>>,
}

/// SQLite errors onto the contract: a busy or locked database passes, the rest is
/// configuration (a path that cannot be opened, a table of another shape).
fn classify(e: rusqlite::Error, what: &str) -> SinkError {
    let busy = matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    );
    let message = format!("{what}: {e}");
    if busy {
        SinkError::retryable(message).with_source(e)
    } else {
        SinkError::fatal(message).with_source(e)
    }
}

impl SqliteSink {
    /// A sink writing into `table` of the database file at `path` (opened at `open`).
    pub fn new(path: impl AsRef<Path>, table: impl Into<String>) -> Result<Self, SinkError> {
        let table = table.into();
        if table.is_empty()
            || !table
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Err(SinkError::fatal(format!(
                "table {table:?} must be [A-Za-z0-9_]+"
            )));
        }
        Ok(Self {
            path: path.as_ref().to_owned(),
            table,
            conn: Arc::new(Mutex::new(None)),
        })
    }

    /// Runs `f` on the connection (opened and the table created on first use) in a blocking
    /// task: SQLite calls block.
    async fn with_conn<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection, &str) -> Result<T, SinkError> + Send + 'static,
    ) -> Result<T, SinkError> {
        let conn = self.conn.clone();
        let path = self.path.clone();
        let table = self.table.clone();
        tokio::task::spawn_blocking(move || {
            let mut slot = conn.lock().unwrap_or_else(|p| p.into_inner());
            if slot.is_none() {
                let c = Connection::open(&path).map_err(|e| classify(e, "opening the database"))?;
                c.busy_timeout(Duration::from_secs(5))
                    .map_err(|e| classify(e, "busy timeout"))?;
                c.execute_batch(&format!(
                    "CREATE TABLE IF NOT EXISTS {table} (pico_topic TEXT NOT NULL, \
                     pico_partition INTEGER NOT NULL, pico_offset INTEGER NOT NULL, value BLOB NOT NULL, \
                     PRIMARY KEY (pico_topic, pico_partition, pico_offset))"
                ))
                .map_err(|e| classify(e, "creating the table"))?;
                *slot = Some(c);
            }
            match slot.as_mut() {
                Some(c) => f(c, &table),
                None => Err(SinkError::fatal("no connection")),
            }
        })
        .await
        .map_err(|e| SinkError::retryable("the blocking task failed").with_source(e))?
    }
}

#[async_trait]
impl Sink for SqliteSink {
    async fn open(&self) -> Result<(), SinkError> {
        self.with_conn(|_, _| Ok(())).await
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let batch = batch.clone();
        self.with_conn(move |conn, table| {
            let tx = conn.transaction().map_err(|e| classify(e, "BEGIN"))?;
            let mut report = WriteReport::default();
            let mut rejected = Vec::new();
            {
                let mut insert = tx
                    .prepare_cached(&format!(
                        "INSERT INTO {table} (pico_topic, pico_partition, pico_offset, value) \
                         VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING"
                    ))
                    .map_err(|e| classify(e, "preparing the insert"))?;
                for r in batch.records() {
                    // SQLite integers are signed 64-bit.
                    let Ok(offset) = i64::try_from(r.id.offset) else {
                        rejected.push(RejectedRecord::new(
                            r.id.clone(),
                            format!("offset {} is above i64::MAX", r.id.offset),
                        ));
                        continue;
                    };
                    let changed = insert
                        .execute(params![
                            r.id.topic,
                            r.id.partition,
                            offset,
                            r.value.as_ref()
                        ])
                        .map_err(|e| classify(e, "INSERT"))?;
                    if changed == 1 {
                        report.written += 1;
                    } else {
                        report.already_present += 1;
                    }
                }
            }
            tx.commit().map_err(|e| classify(e, "COMMIT"))?;
            Ok(Outcome::new(report, rejected))
        })
        .await
    }

    fn describe(&self) -> Description {
        Description::new(
            "sqlite (example)",
            "PRIMARY KEY (pico_topic, pico_partition, pico_offset); INSERT … ON CONFLICT DO \
             NOTHING, one transaction per batch",
            Claim::NoVisibleDuplicate,
        )
    }
}
