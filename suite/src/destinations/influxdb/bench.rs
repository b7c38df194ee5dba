//! InfluxDB against the same points as plain line protocol.

use std::time::Instant;

use pico_sink::Batch;
use pico_sink_influxdb::{InfluxSink, InfluxSinkConfig, Payload, PointMapping, point_time_ns};

use super::server::InfluxServer;
use super::target::InfluxStore;
use crate::measure::{BenchSize, SinkBench};
use crate::measure::{Place, batch, compare};
use crate::provide::first_available;
use crate::serve::Server;

/// The InfluxDB sink beside plain line protocol of the same points: the measurement, the
/// `meter` tag, the record's own fields and the time the sink gives each point, without the
/// sink's identity tags, offset and digest fields and without its replay probe.
pub async fn influxdb(size: BenchSize) -> Result<SinkBench, String> {
    let server = first_available(InfluxServer::provide).await?;
    let info = server.info().await;
    let client = reqwest::Client::new();
    let store = InfluxStore::new(client.clone());
    let rows = compare(
        size,
        async |records: u64, rep: usize| {
            let db = format!("raw_bench_{records}_{rep}");
            client
                .post(format!("{}/query?q=CREATE+DATABASE+{db}", server.url()))
                .send()
                .await
                .map_err(|e| e.to_string())?;
            let lines = plain_lines(&batch(rep as u32, 0, records))?;
            let started = Instant::now();
            let resp = client
                .post(format!("{}/write?db={db}&precision=ns", server.url()))
                .body(lines)
                .send()
                .await
                .map_err(|e| e.to_string())?;
            if !resp.status().is_success() {
                return Err(resp.text().await.unwrap_or_default());
            }
            Ok(started.elapsed())
        },
        async |place: Place| {
            let mapping = PointMapping {
                measurement: "readings".into(),
                tags: vec!["meter".into()],
                fields: vec![],
                time_field: None,
            };
            let db = format!("bench_{place}");
            let config = InfluxSinkConfig::v1(server.url(), db, Payload::Json(mapping));
            InfluxSink::new(config).map_err(|e| e.to_string())
        },
        async |place: Place| {
            let db = format!("bench_{place}");
            store.read_measurement(&server, &db, "readings").await
        },
    )
    .await?;
    server.stop().await?;
    Ok(SinkBench {
        sink: "influxdb".into(),
        server: format!("InfluxDB {}", info.version),
        raw_path: "plain line protocol of the same points (tag, fields, times)".into(),
        rows,
        notes: Vec::new(),
    })
}

/// The sink's points for `b` as plain line protocol: `readings,meter=<meter>` with the
/// record's `offset` (an integer) and `payload` (a string) fields at the time the sink gives
/// the record (its timestamp in ms, the offset in the sub-millisecond digits).
fn plain_lines(b: &Batch) -> Result<String, String> {
    let mut lines = String::new();
    for r in b.records() {
        let doc: serde_json::Value = serde_json::from_slice(&r.value).map_err(|e| e.to_string())?;
        let field = |name: &str| doc.get(name).ok_or(format!("a record without {name}"));
        let meter = field("meter")?.as_str().ok_or("meter is not a string")?;
        let offset = field("offset")?
            .as_i64()
            .ok_or("offset is not an integer")?;
        let payload = field("payload")?
            .as_str()
            .ok_or("payload is not a string")?;
        let ms = r.timestamp_ms.ok_or("a record without a timestamp")?;
        let time = point_time_ns(ms, r.id.offset).ok_or("a time outside InfluxDB's range")?;
        let payload = payload.replace('\\', "\\\\").replace('"', "\\\"");
        lines.push_str(&format!(
            "readings,meter={meter} offset={offset}i,payload=\"{payload}\" {time}\n"
        ));
    }
    Ok(lines)
}
