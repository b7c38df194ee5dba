//! InfluxDB against the same points as plain line protocol.

use std::time::Instant;

use pico_sink_influxdb::{InfluxSink, InfluxSinkConfig, Payload, PointMapping};

use super::server::InfluxServer;
use crate::measure::{BenchSize, SinkBench};
use crate::measure::{Sample, batch, compare, time_sink};
use crate::provide::first_available;
use crate::serve::Server;

/// The InfluxDB sink beside plain line protocol of the same points (no identity tags, no
/// offset field, no probe).
pub async fn influxdb(size: BenchSize) -> Result<SinkBench, String> {
    let server = first_available(InfluxServer::provide).await?;
    let info = server.info().await;
    let client = reqwest::Client::new();
    let rows = compare(size, async |records: u64, rep: usize| {
        let b = batch(rep as u32, 0, records);
        let db = format!("bench_{records}_{rep}");
        client
            .post(format!("{}/query?q=CREATE+DATABASE+raw_{db}", server.url()))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let lines: String = b
            .records()
            .iter()
            .map(|r| {
                format!(
                    "readings,meter=M{:05} offset={}i,payload=\"{}\" {}\n",
                    r.id.offset % 99_999,
                    r.id.offset,
                    "x".repeat(960),
                    r.timestamp_ms.unwrap_or_default() * 1_000_000
                )
            })
            .collect();
        let started = Instant::now();
        let resp = client
            .post(format!("{}/write?db=raw_{db}&precision=ns", server.url()))
            .body(lines)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !resp.status().is_success() {
            return Err(resp.text().await.unwrap_or_default());
        }
        let raw = started.elapsed();
        let mapping = PointMapping {
            measurement: "readings".into(),
            tags: vec!["meter".into()],
            fields: vec![],
            time_field: None,
        };
        let sink = InfluxSink::new(InfluxSinkConfig::v1(
            server.url(),
            db,
            Payload::Json(mapping),
        ))
        .map_err(|e| e.to_string())?;
        let (first, replay) = time_sink(&sink, &b).await?;
        Ok(Sample { raw, first, replay })
    })
    .await?;
    server.stop().await?;
    Ok(SinkBench {
        sink: "influxdb".into(),
        server: format!("InfluxDB {}", info.version),
        raw_path: "plain line protocol of the same points".into(),
        rows,
        notes: Vec::new(),
    })
}
