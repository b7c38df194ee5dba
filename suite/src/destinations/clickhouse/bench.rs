//! ClickHouse against a plain RowBinary insert through the same client into the same engine.

use std::time::Instant;

use pico_conformance::target::Readback;
use pico_sink::Sink;
use pico_sink_clickhouse::{ClickHouseSink, ClickHouseSinkConfig};

use super::read_rows;
use super::server::ClickHouseServer;
use crate::measure::{BenchSize, SinkBench};
use crate::measure::{Place, batch, compare};
use crate::provide::first_available;
use crate::serve::Server;

/// The ClickHouse sink beside `ClickHouseSink::insert_unguarded`: the same RowBinary block with
/// LZ4 through the official client into a table of the same engine, with no watermark query
/// and no deduplication token.
pub async fn clickhouse(size: BenchSize) -> Result<SinkBench, String> {
    let server = first_available(ClickHouseServer::provide).await?;
    let info = server.info().await;
    server.query("CREATE DATABASE IF NOT EXISTS bench").await?;
    let sink_for = |table: String| {
        ClickHouseSink::new(ClickHouseSinkConfig::new(server.url(), "bench", table))
            .map_err(|e| e.to_string())
    };
    let rows = compare(
        size,
        async |records: u64, rep: usize| {
            let plain = sink_for(format!("raw_{records}_{rep}"))?;
            plain.open().await.map_err(|e| e.to_string())?;
            let b = batch(rep as u32, 0, records);
            let started = Instant::now();
            plain
                .insert_unguarded(&b)
                .await
                .map_err(|e| e.to_string())?;
            Ok(started.elapsed())
        },
        async |place: Place| sink_for(format!("sink_{place}")),
        async |place: Place| {
            let table = format!("bench.sink_{place}");
            let (rows, physical) = read_rows(&server, &table, "").await?;
            Ok(Readback {
                rows,
                physical_rows: Some(physical),
                notes: Vec::new(),
            })
        },
    )
    .await?;
    server.stop().await?;
    Ok(SinkBench {
        sink: "clickhouse".into(),
        server: format!("ClickHouse {}", info.version),
        raw_path: "plain RowBinary insert, same client and engine".into(),
        rows,
        notes: Vec::new(),
    })
}
