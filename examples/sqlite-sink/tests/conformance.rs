//! The example sink through the whole conformance suite: every scenario, judged against the
//! sink's own claims, zero loss. This is all a sink's author writes to get the same table row
//! and the same loss counter as the project's own sinks.

#![allow(clippy::unwrap_used)] // test helpers may panic

use async_trait::async_trait;
use pico_conformance::{
    Destination, PayloadForm, ReadRow, Readback, RunOptions, ServerInfo, Silent, SinkUnderTest,
    SuiteSize, Verdict, assert_conformant, payload_checksum, run_destination,
};
use pico_example_sqlite_sink::SqliteSink;
use pico_sink::identity::RecordId;

/// One SQLite database file; each scenario gets its own table.
struct SqliteDestination {
    dir: tempfile::TempDir,
}

fn table(isolation: &str) -> String {
    isolation.replace('-', "_")
}

#[async_trait]
impl Destination for SqliteDestination {
    fn server(&self) -> ServerInfo {
        ServerInfo {
            name: "SQLite".into(),
            version: rusqlite_version(),
        }
    }

    async fn sink(&self, isolation: &str) -> Result<SinkUnderTest, String> {
        let sink = SqliteSink::new(self.dir.path().join("db.sqlite"), table(isolation))
            .map_err(|e| e.to_string())?;
        // No network between the sink and SQLite: faults are injected at the sink's boundary.
        Ok(SinkUnderTest::in_process(sink))
    }

    async fn read_back(&self, isolation: &str) -> Result<Readback, String> {
        let conn = rusqlite::Connection::open(self.dir.path().join("db.sqlite"))
            .map_err(|e| e.to_string())?;
        let mut stmt = conn
            .prepare(&format!(
                "SELECT pico_topic, pico_partition, pico_offset, value FROM {}",
                table(isolation)
            ))
            .map_err(|e| e.to_string())?;
        let rows = stmt
            .query_map([], |r| {
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
            })
            .map_err(|e| e.to_string())?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        Ok(Readback::of_rows(rows))
    }

    async fn shutdown(self: Box<Self>) -> Result<(), String> {
        Ok(())
    }
}

fn rusqlite_version() -> String {
    rusqlite::version().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_sink_passes_the_whole_suite() {
    let dest = SqliteDestination {
        dir: tempfile::tempdir().unwrap(),
    };
    let opts = RunOptions {
        size: SuiteSize::Reduced,
        ..RunOptions::default()
    };
    let row = run_destination(
        "sqlite-example",
        "pico-example-sqlite-sink",
        None,
        &dest,
        &[],
        &opts,
        &Silent,
    )
    .await;
    for cell in &row.scenarios {
        println!("{}: {}", cell.scenario.id(), cell.outcome);
    }
    assert_eq!(row.scenarios.len(), pico_sink::Scenario::ALL.len());
    assert_conformant(&row);
    // Every scenario ran and its fault happened: none is "not applicable" or "not exercised"
    // for a sink with a fault path.
    assert!(
        row.scenarios.iter().all(|s| !matches!(
            s.verdict,
            Verdict::NotApplicable(_) | Verdict::NotExercised(_)
        )),
        "{:?}",
        row.scenarios.iter().map(|s| &s.outcome).collect::<Vec<_>>()
    );
}
