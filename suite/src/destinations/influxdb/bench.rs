//! InfluxDB against the same points as plain line protocol.

use std::time::{Duration, Instant};

use pico_sink::Batch;
use pico_sink_influxdb::{
    DIGEST_FIELD, InfluxSink, InfluxSinkConfig, OFFSET_FIELD, PARTITION_TAG, Payload, PointMapping,
    TOPIC_TAG, digest31, point_time_ns,
};

use super::server::InfluxServer;
use super::target::InfluxStore;
use crate::measure::{BenchRow, BenchSize, SinkBench, median};
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
            let lines = plain_lines(&batch(rep as u32, 0, records), Shape::Plain)?;
            post_lines(
                &client,
                &server,
                &format!("raw_bench_{records}_{rep}"),
                lines,
            )
            .await
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
    let notes = vec![identity_cost(&client, &server, size, &rows).await?];
    server.stop().await?;
    Ok(SinkBench {
        sink: "influxdb".into(),
        server: format!("InfluxDB {}", info.version),
        raw_path: "plain line protocol of the same points (tag, fields, times)".into(),
        rows,
        notes,
    })
}

/// The batch size [`identity_cost`] measures at.
const IDENTITY_RECORDS: u64 = 10_000;

/// Where the sink's first write goes beyond its anchor, measured in the same run: the sink's
/// own points (the anchor's plus its identity tags and fields) posted as plain line protocol,
/// against the anchor's points, in alternating order after one unmeasured post of each; the
/// rest of the first write is the sink's own work (conversion, its seal lookup and its seal).
async fn identity_cost(
    client: &reqwest::Client,
    server: &InfluxServer,
    size: BenchSize,
    rows: &[BenchRow],
) -> Result<String, String> {
    let b = batch(0, 0, IDENTITY_RECORDS);
    let (plain, own) = (
        plain_lines(&b, Shape::Plain)?,
        plain_lines(&b, Shape::SinksOwn)?,
    );
    let (mut plains, mut owns) = (Vec::new(), Vec::new());
    for rep in 0..=size.reps() {
        let post = async |shape: &str, lines: &String| {
            let db = format!("identity_bench_{shape}_{rep}");
            post_lines(client, server, &db, lines.clone()).await
        };
        let (p, o) = if rep % 2 == 0 {
            (post("plain", &plain).await?, post("own", &own).await?)
        } else {
            let o = post("own", &own).await?;
            (post("plain", &plain).await?, o)
        };
        // The first of each is the warm-up.
        if rep > 0 {
            plains.push(p);
            owns.push(o);
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let (plain_ms, own_ms) = (ms(median(plains)), ms(median(owns)));
    let first_ms = rows
        .iter()
        .find(|r| r.records == IDENTITY_RECORDS)
        .map(|r| r.first_ms)
        .ok_or("no row at 10 000 records")?;
    Ok(format!(
        "at {IDENTITY_RECORDS} records ({} reps, medians, same run), the sink's own \
         points (the anchor's plus the identity's tags {PARTITION_TAG}, {TOPIC_TAG} and fields \
         {OFFSET_FIELD}, {DIGEST_FIELD}; {} bytes against {}) posted as plain line protocol \
         take {own_ms:.1} ms against the anchor's {plain_ms:.1} ms ({:.2} of its rate: what \
         storing the identity costs the destination); the sink's own work (conversion, seal \
         lookup, seal) adds about {:.1} ms to its first write of {first_ms:.1} ms.",
        size.reps(),
        own.len(),
        plain.len(),
        plain_ms / own_ms,
        first_ms - own_ms,
    ))
}

/// Posts `lines` to a new database `db`; the time of the write alone. InfluxDB 1.6 here has
/// now and then answered a write right after `CREATE DATABASE` with "database not found": the
/// database is created and the write timed again, up to three times.
async fn post_lines(
    client: &reqwest::Client,
    server: &InfluxServer,
    db: &str,
    lines: String,
) -> Result<Duration, String> {
    let mut answer = String::new();
    for _ in 0..3 {
        let created = client
            .post(format!("{}/query?q=CREATE+DATABASE+{db}", server.url()))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !created.status().is_success() {
            return Err(format!("CREATE DATABASE {db}: {}", created.status()));
        }
        let started = Instant::now();
        let resp = client
            .post(format!("{}/write?db={db}&precision=ns", server.url()))
            .body(lines.clone())
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let took = started.elapsed();
        if resp.status().is_success() {
            return Ok(took);
        }
        answer = resp.text().await.unwrap_or_default();
        if !answer.contains("database not found") {
            break;
        }
        tracing::warn!(db, %answer, "write right after CREATE DATABASE: timed again");
    }
    Err(answer)
}

/// Which points [`plain_lines`] writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// The anchor's: the record's meter tag and fields.
    Plain,
    /// The sink's own: the same, with the identity's tags and fields as the sink writes them.
    SinksOwn,
}

/// The sink's points for `b` as plain line protocol: `readings,meter=<meter>` with the
/// record's `offset` (an integer) and `payload` (a string) fields at the time the sink gives
/// the record (its timestamp in ms, the offset in the sub-millisecond digits); with
/// [`Shape::SinksOwn`], the identity's tags and fields too, in the sink's order.
fn plain_lines(b: &Batch, shape: Shape) -> Result<String, String> {
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
        let (tags, fields) = match shape {
            Shape::Plain => (String::new(), String::new()),
            Shape::SinksOwn => (
                format!(
                    ",{PARTITION_TAG}={},{TOPIC_TAG}={}",
                    r.id.partition, r.id.topic
                ),
                format!(
                    "{OFFSET_FIELD}={}i,{DIGEST_FIELD}={}i,",
                    r.id.offset,
                    digest31(r)
                ),
            ),
        };
        lines.push_str(&format!(
            "readings,meter={meter}{tags} {fields}offset={offset}i,payload=\"{payload}\" {time}\n"
        ));
    }
    Ok(lines)
}
