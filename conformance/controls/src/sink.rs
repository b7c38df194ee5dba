//! [`ControlSink`]: one SQLite sink, honest or broken in the way its [`Control`] names.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use pico_sink::{
    Batch, Claim, Description, Outcome, Record, RejectedRecord, Sink, SinkError, WriteReport,
};
use rusqlite::{Connection, ErrorCode, params};
use tokio::task::JoinHandle;

use crate::control::Control;

/// How long a torn write stays torn before the whole value follows ([`Control::TornOnCancel`]):
/// longer than the two steps themselves take for a runtime-sized batch, so most of a consume
/// is spent torn and a drop at a random point of it falls there.
const TORN_WINDOW: Duration = Duration::from_millis(25);
/// How long after its answer a write becomes visible ([`Control::AcksBeforeVisible`]).
const BEHIND: Duration = Duration::from_secs(1);
/// Rows a [`Control::ForgetsOldWrites`] sink still recognises: more than the largest batch a
/// scenario replays whole (10 240 records), fewer than the traffic replay-after-horizon sends
/// after its old batch (20 000).
const REMEMBERED_ROWS: i64 = 16_384;

/// How a table recognises a record it already holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keying {
    /// A primary key on the identity: always.
    Key,
    /// No key: never.
    Append,
    /// No key; only among the last [`REMEMBERED_ROWS`] rows.
    Window,
}

/// A sink writing into one SQLite table, keyed on the record identity unless its control
/// appends.
pub struct ControlSink {
    conn: Arc<Mutex<Connection>>,
    table: String,
    control: Control,
    /// Writes still to run in the background ([`Control::AcksBeforeVisible`]).
    behind: Mutex<Vec<JoinHandle<()>>>,
}

/// SQLite errors onto the contract: a busy or locked database passes, the rest is not.
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

fn lock(conn: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    conn.lock().unwrap_or_else(|p| p.into_inner())
}

/// The statement that stores one record: a record the table recognises is skipped.
fn insert_sql(table: &str, keying: Keying) -> String {
    let columns = format!("INSERT INTO {table} (pico_topic, pico_partition, pico_offset, value)");
    match keying {
        Keying::Key => format!("{columns} VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING"),
        Keying::Append => format!("{columns} VALUES (?1, ?2, ?3, ?4)"),
        Keying::Window => format!(
            "{columns} SELECT ?1, ?2, ?3, ?4 WHERE NOT EXISTS (SELECT 1 FROM {table} \
             WHERE pico_topic = ?1 AND pico_partition = ?2 AND pico_offset = ?3 \
             AND rowid > (SELECT coalesce(max(rowid), 0) FROM {table}) - {REMEMBERED_ROWS})"
        ),
    }
}

/// Stores `records` in one transaction; per record, whether it was new.
fn insert(
    conn: &mut Connection,
    table: &str,
    keying: Keying,
    records: &[Record],
) -> Result<Vec<bool>, SinkError> {
    let tx = conn.transaction().map_err(|e| classify(e, "BEGIN"))?;
    let mut new = Vec::with_capacity(records.len());
    {
        let mut stmt = tx
            .prepare_cached(&insert_sql(table, keying))
            .map_err(|e| classify(e, "preparing the insert"))?;
        for r in records {
            let changed = stmt
                .execute(params![
                    r.id.topic,
                    r.id.partition,
                    r.id.offset as i64,
                    r.value.as_ref()
                ])
                .map_err(|e| classify(e, "INSERT"))?;
            new.push(changed == 1);
        }
    }
    tx.commit().map_err(|e| classify(e, "COMMIT"))?;
    Ok(new)
}

/// Writes the whole values of `records` over what their rows hold, in one transaction.
fn complete(conn: &mut Connection, table: &str, records: &[Record]) -> Result<(), SinkError> {
    let tx = conn.transaction().map_err(|e| classify(e, "BEGIN"))?;
    {
        let mut stmt = tx
            .prepare_cached(&format!(
                "UPDATE {table} SET value = ?4 \
                 WHERE pico_topic = ?1 AND pico_partition = ?2 AND pico_offset = ?3"
            ))
            .map_err(|e| classify(e, "preparing the update"))?;
        for r in records {
            stmt.execute(params![
                r.id.topic,
                r.id.partition,
                r.id.offset as i64,
                r.value.as_ref()
            ])
            .map_err(|e| classify(e, "UPDATE"))?;
        }
    }
    tx.commit().map_err(|e| classify(e, "COMMIT"))
}

/// The records SQLite can key (offsets fit its signed 64-bit integers), and the others
/// rejected with their reason.
fn storable(batch: &Batch) -> (Vec<Record>, Vec<RejectedRecord>) {
    let mut kept = Vec::with_capacity(batch.len());
    let mut rejected = Vec::new();
    for r in batch.records() {
        if i64::try_from(r.id.offset).is_ok() {
            kept.push(r.clone());
        } else {
            rejected.push(RejectedRecord::new(
                r.id.clone(),
                format!("offset {} is above i64::MAX", r.id.offset),
            ));
        }
    }
    (kept, rejected)
}

/// What a batch of `new` flags reports, plus records the sink says it wrote without writing.
fn report(new: &[bool], claimed: usize) -> WriteReport {
    let written = new.iter().filter(|n| **n).count();
    WriteReport {
        written: (written + claimed) as u64,
        already_present: (new.len() - written) as u64,
    }
}

impl ControlSink {
    /// A sink of `control` writing into `table` of the database file at `path`.
    pub fn new(path: &Path, table: &str, control: Control) -> Result<Self, SinkError> {
        let conn = Connection::open(path).map_err(|e| classify(e, "opening the database"))?;
        conn.busy_timeout(Duration::from_secs(10))
            .map_err(|e| classify(e, "setting the busy timeout"))?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            table: table.to_owned(),
            control,
            behind: Mutex::new(Vec::new()),
        })
    }

    fn keying(&self) -> Keying {
        match self.control {
            Control::AppendsClaimingNoDuplicate => Keying::Append,
            Control::ForgetsOldWrites => Keying::Window,
            _ => Keying::Key,
        }
    }

    /// Runs `f` on the connection in a blocking task (SQLite calls block).
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection, &str, Keying) -> Result<T, SinkError> + Send + 'static,
    ) -> Result<T, SinkError> {
        let conn = self.conn.clone();
        let table = self.table.clone();
        let keying = self.keying();
        tokio::task::spawn_blocking(move || f(&mut lock(&conn), &table, keying))
            .await
            .map_err(|e| SinkError::retryable("the blocking task failed").with_source(e))?
    }

    /// Stores `records`; per record, whether it was new.
    async fn store(&self, records: Vec<Record>) -> Result<Vec<bool>, SinkError> {
        self.blocking(move |conn, table, keying| insert(conn, table, keying, &records))
            .await
    }

    /// [`Control::TornOnCancel`]: truncated values first, the whole ones after a pause.
    async fn store_in_two_steps(&self, records: Vec<Record>) -> Result<Vec<bool>, SinkError> {
        let torn: Vec<Record> = records
            .iter()
            .map(|r| {
                let mut t = r.clone();
                t.value = r.value.slice(..r.value.len() / 2);
                t
            })
            .collect();
        let new = self.store(torn).await?;
        tokio::time::sleep(TORN_WINDOW).await;
        let fresh: Vec<Record> = records
            .into_iter()
            .zip(&new)
            .filter_map(|(r, n)| n.then_some(r))
            .collect();
        self.blocking(move |conn, table, _| complete(conn, table, &fresh))
            .await?;
        Ok(new)
    }

    /// [`Control::AcksBeforeVisible`]: the write runs later, in a task the sink owns.
    fn store_behind(&self, records: Vec<Record>) {
        let conn = self.conn.clone();
        let table = self.table.clone();
        let task = tokio::spawn(async move {
            tokio::time::sleep(BEHIND).await;
            let written = tokio::task::spawn_blocking(move || {
                insert(&mut lock(&conn), &table, Keying::Key, &records)
            })
            .await;
            if !matches!(written, Ok(Ok(_))) {
                tracing::warn!("a write behind the answer failed");
            }
        });
        let mut behind = self.behind.lock().unwrap_or_else(|p| p.into_inner());
        behind.retain(|t| !t.is_finished());
        behind.push(task);
    }
}

impl Drop for ControlSink {
    /// Writes still behind die with the instance, as a buffer dies with a crashed process.
    fn drop(&mut self) {
        for task in self.behind.get_mut().unwrap_or_else(|p| p.into_inner()) {
            task.abort();
        }
    }
}

#[async_trait]
impl Sink for ControlSink {
    async fn open(&self) -> Result<(), SinkError> {
        self.blocking(move |conn, table, keying| {
            let key = match keying {
                Keying::Key => ", PRIMARY KEY (pico_topic, pico_partition, pico_offset)",
                Keying::Append | Keying::Window => "",
            };
            conn.execute_batch(&format!(
                "CREATE TABLE IF NOT EXISTS {table} (pico_topic TEXT NOT NULL, \
                 pico_partition INTEGER NOT NULL, pico_offset INTEGER NOT NULL, \
                 value BLOB NOT NULL{key})"
            ))
            .map_err(|e| classify(e, "creating the table"))?;
            if keying == Keying::Window {
                // Not unique: only a lookup for the window's check.
                conn.execute_batch(&format!(
                    "CREATE INDEX IF NOT EXISTS {table}_identity \
                     ON {table} (pico_topic, pico_partition, pico_offset)"
                ))
                .map_err(|e| classify(e, "creating the identity index"))?;
            }
            Ok(())
        })
        .await
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let (mut records, mut rejected) = storable(batch);
        let several = records.len() >= 2;
        let written = match self.control {
            Control::Honest | Control::AppendsClaimingNoDuplicate | Control::ForgetsOldWrites => {
                report(&self.store(records).await?, 0)
            }
            Control::DropsRecord => {
                let dropped = if several { records.pop() } else { None };
                report(&self.store(records).await?, usize::from(dropped.is_some()))
            }
            Control::DeadLettersValid => {
                if several {
                    let first = records.remove(0);
                    rejected.push(RejectedRecord::new(first.id, "refused by the control"));
                }
                report(&self.store(records).await?, 0)
            }
            Control::DeadLettersStored => {
                let first = several.then(|| records[0].id.clone());
                let mut new = self.store(records).await?;
                if let Some(id) = first {
                    new.remove(0);
                    rejected.push(RejectedRecord::new(id, "refused by the control"));
                }
                report(&new, 0)
            }
            Control::TornOnCancel => report(&self.store_in_two_steps(records).await?, 0),
            Control::PresentBeforeHeld => {
                let told = report(&self.store(records).await?, 0);
                WriteReport {
                    written: told.already_present,
                    already_present: told.written,
                }
            }
            Control::AcksBeforeVisible => {
                let claimed = records.len();
                self.store_behind(records);
                report(&[], claimed)
            }
        };
        Ok(Outcome::new(written, rejected))
    }

    fn describe(&self) -> Description {
        let description = Description::new(
            format!("sqlite control ({})", self.control.id()),
            self.control.does(),
            Claim::NoVisibleDuplicate,
        );
        // The liar says nothing of telling records apart: only the judge of every sink's
        // "already present" can catch it.
        match self.control {
            Control::PresentBeforeHeld => description,
            _ => description.telling_already_present(),
        }
    }
}
