//! The ClickHouse sink against a real ClickHouse, the fault proxy cutting the answer to the
//! INSERT; visible rows are read with `FINAL`, physical rows counted without it.

use std::sync::Arc;

use super::server::ClickHouseServer;
use crate::provide::ANY_SERVER;
use crate::serve::{Served, ServedDestination, Store};
use async_trait::async_trait;
use pico_conformance::horizon::{Horizon, Upkeep};
use pico_conformance::provider::ProviderKind;
use pico_conformance::target::{
    Destination, PayloadForm, ReadRow, Readback, SinkUnderTest, Target, checksum,
};
use pico_sink::identity::RecordId;
use pico_sink_clickhouse::{ClickHouseSink, ClickHouseSinkConfig, unescape_field};

const DATABASE: &str = "pico";

/// The ClickHouse sink.
pub struct ClickHouseTarget;

#[async_trait]
impl Target for ClickHouseTarget {
    fn name(&self) -> &'static str {
        "clickhouse"
    }
    fn sink_crate(&self) -> &'static str {
        "pico-sink-clickhouse"
    }
    fn providers(&self) -> Vec<ProviderKind> {
        ANY_SERVER.to_vec()
    }
    async fn provision(&self, provider: ProviderKind) -> Result<Box<dyn Destination>, String> {
        let server = ClickHouseServer::provide(provider).await?;
        let info = server.info().await;
        Ok(Box::new(ServedDestination {
            served: Served::new(server),
            info,
            form: PayloadForm::Exact,
            store: ChStore,
        }))
    }
}

struct ChStore;

fn table(isolation: &str) -> String {
    isolation.replace('-', "_")
}

#[async_trait]
impl Store for ChStore {
    type Server = ClickHouseServer;

    fn lost_ack_trigger(&self) -> Option<&'static [u8]> {
        Some(b"INSERT")
    }

    async fn sink(
        &self,
        served: &Served<ClickHouseServer>,
        isolation: &str,
    ) -> Result<SinkUnderTest, String> {
        let (url, proxy) = served.proxied("http").await?;
        let config = ClickHouseSinkConfig::new(url, DATABASE, table(isolation));
        Ok(SinkUnderTest {
            sink: Arc::new(ClickHouseSink::new(config).map_err(|e| e.to_string())?),
            faults: Some(proxy),
        })
    }

    async fn read_back(
        &self,
        served: &Served<ClickHouseServer>,
        isolation: &str,
    ) -> Result<Readback, String> {
        let t = format!("{DATABASE}.{}", table(isolation));
        let (rows, physical) = read_rows(served.server(), &t, "").await?;
        Ok(Readback {
            rows,
            physical_rows: Some(physical),
            notes: vec![format!("{physical} physical rows before merge")],
        })
    }

    /// The table's own upkeep: `OPTIMIZE TABLE … FINAL` merges every part (the
    /// ReplacingMergeTree collapses repeats). The sink recognises a replay by the partition's
    /// `max(pico_offset)` watermark, not by the insert-dedupe window (which serves two writers
    /// racing on one range, on servers with tokens), so no count of later inserts passes it.
    async fn pass_horizon(
        &self,
        served: &Served<ClickHouseServer>,
        isolation: &str,
    ) -> Result<Upkeep, String> {
        served
            .server()
            .query(&format!(
                "OPTIMIZE TABLE {DATABASE}.{} FINAL",
                table(isolation)
            ))
            .await?;
        Ok(Upkeep::of(Horizon::unbounded(
            "the partition's max(pico_offset) watermark: as long as its highest row is held",
        ))
        .did("OPTIMIZE TABLE … FINAL runs (every part merged)", 1))
    }
}

/// The rows of `table` (`database.table`) that `filter` selects (a `WHERE` clause, or empty)
/// as the `FINAL` view shows them, and how many rows are stored physically, before merges
/// collapse repeats. The conformance target and the crash suite both read ClickHouse through it.
pub(crate) async fn read_rows(
    server: &ClickHouseServer,
    table: &str,
    filter: &str,
) -> Result<(Vec<ReadRow>, u64), String> {
    let visible = server
        .query(&format!(
            "SELECT pico_topic, pico_partition, pico_offset, value FROM {table} FINAL {filter} FORMAT TabSeparated"
        ))
        .await?;
    let mut rows = Vec::new();
    for line in visible.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let fields: Vec<&[u8]> = line.split(|b| *b == b'\t').collect();
        let [topic, partition, offset, value] = fields[..] else {
            return Err(format!("unexpected row: {}", String::from_utf8_lossy(line)));
        };
        let parse = |f: &[u8]| {
            String::from_utf8_lossy(f)
                .parse::<u64>()
                .map_err(|e| e.to_string())
        };
        let value = unescape_field(value);
        rows.push(ReadRow {
            id: RecordId::new(
                String::from_utf8_lossy(&unescape_field(topic)).into_owned(),
                parse(partition)? as u32,
                parse(offset)?,
            ),
            checksum: checksum(&value),
            value: value.into(),
        });
    }
    let physical: u64 = String::from_utf8_lossy(
        &server
            .query(&format!("SELECT count() FROM {table} {filter}"))
            .await?,
    )
    .trim()
    .parse()
    .map_err(|e| format!("count(): {e}"))?;
    Ok((rows, physical))
}
