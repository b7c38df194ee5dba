//! [`ControlDestination`]: the SQLite database a control writes into, read back from its own
//! connection.

use std::path::PathBuf;

use async_trait::async_trait;
use pico_conformance::target::{
    Destination, PayloadForm, ReadRow, Readback, ServerInfo, SinkUnderTest, payload_checksum,
};
use pico_sink::identity::RecordId;

use crate::control::Control;
use crate::sink::ControlSink;

/// One SQLite database file per control, in a temporary directory; each scenario its own
/// table.
pub struct ControlDestination {
    dir: tempfile::TempDir,
    control: Control,
}

/// The table of an isolation (SQLite names: no dashes).
fn table(isolation: &str) -> String {
    isolation.replace('-', "_")
}

impl ControlDestination {
    /// A fresh database for `control`.
    pub fn new(control: Control) -> Result<Self, String> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("pico-control-{}-", control.id()))
            .tempdir()
            .map_err(|e| format!("creating a directory for the SQLite database: {e}"))?;
        Ok(Self { dir, control })
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("db.sqlite")
    }

    /// Every row of `isolation`'s table, as stored.
    fn rows(&self, isolation: &str) -> Result<Vec<ReadRow>, rusqlite::Error> {
        let conn = rusqlite::Connection::open(self.path())?;
        let mut stmt = conn.prepare(&format!(
            "SELECT pico_topic, pico_partition, pico_offset, value FROM {}",
            table(isolation)
        ))?;
        let rows = stmt.query_map([], |r| {
            let value: Vec<u8> = r.get(3)?;
            Ok(ReadRow {
                id: RecordId::new(
                    r.get::<_, String>(0)?,
                    r.get(1)?,
                    r.get::<_, i64>(2)? as u64,
                ),
                checksum: payload_checksum(PayloadForm::Exact, &value),
                value: value.into(),
            })
        })?;
        rows.collect()
    }
}

#[async_trait]
impl Destination for ControlDestination {
    fn server(&self) -> ServerInfo {
        ServerInfo {
            name: "SQLite (in process)".into(),
            version: rusqlite::version().to_owned(),
        }
    }

    async fn sink(&self, isolation: &str) -> Result<SinkUnderTest, String> {
        let sink = ControlSink::new(&self.path(), &table(isolation), self.control)
            .map_err(|e| e.to_string())?;
        // No network between the sink and SQLite: faults are injected at the sink's boundary.
        Ok(SinkUnderTest::in_process(sink))
    }

    async fn read_back(&self, isolation: &str) -> Result<Readback, String> {
        self.rows(isolation)
            .map(Readback::of_rows)
            .map_err(|e| format!("reading {}: {e}", table(isolation)))
    }

    async fn shutdown(self: Box<Self>) -> Result<(), String> {
        Ok(())
    }
}
