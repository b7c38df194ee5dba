//! `pico-bench`: throughput of a sink beside the destination's raw bulk path, measured on the
//! same server in the same run, reported as ratios (absolute numbers on a shared machine mean
//! little).
//!
//! `pico-bench s3|clickhouse|influxdb [--reps N]`: the same records, against a plain PutObject
//! of the same bytes, the same INSERT without the watermark query, and plain line protocol.
//!
//! `pico-bench delta|iceberg [--reps N]`: the sink's first write and replay against a plain
//! append of the same rows to the same table format (no watermark, no txn or snapshot
//! property), then commits and data files per 100 000 records written through the sink.
//!
//! `pico-bench postgres [--reps N]`: 1 KiB JSON records, batches of 1 000 and 10 000: the sink's
//! first write, a replay of the same batch, and raw binary `COPY` into an UNLOGGED table of the
//! same shape; then, on replays, COPY staging versus one unnest upsert per batch size (the
//! sink's `copy_threshold`).

use std::time::{Duration, Instant, SystemTime};

use futures_util::pin_mut;
use pico_sink::identity::RecordId;
use pico_sink::{Batch, Record, Sink};
use pico_sink_postgres::{PostgresSink, PostgresSinkConfig, RawJsonb};
use pico_suite::provide::first_available;
use pico_suite::servers::postgres::{PgServer, connect};
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::{ToSql, Type};

fn record(partition: u32, offset: u64) -> Record {
    // About 1 KiB of JSON per record.
    let filler: String = (0..960)
        .map(|i| (b'a' + ((offset as usize + i) % 26) as u8) as char)
        .collect();
    Record::new(
        RecordId::new("bench.readings", partition, offset),
        format!(
            "{{\"offset\":{offset},\"meter\":\"M{:05}\",\"payload\":\"{filler}\"}}",
            offset % 99_999
        ),
    )
    .with_key(format!("M{:05}", offset % 99_999))
    .with_timestamp_ms(1_767_225_600_000 + offset as i64)
}

fn batch(partition: u32, first: u64, n: u64) -> Batch {
    Batch::new((first..first + n).map(|o| record(partition, o)).collect())
        .unwrap_or_else(|e| unreachable!("{e}"))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn raw_copy(url: &str, table: &str, b: &Batch) -> Result<Duration, String> {
    let mut c = connect(url).await?;
    c.batch_execute(&format!(
        "CREATE UNLOGGED TABLE {table} (pico_topic text, pico_partition int, pico_offset bigint, \
         key bytea, value jsonb, headers jsonb, ts timestamptz)"
    ))
    .await
    .map_err(|e| e.to_string())?;
    let types = [
        Type::TEXT,
        Type::INT4,
        Type::INT8,
        Type::BYTEA,
        Type::JSONB,
        Type::JSONB,
        Type::TIMESTAMPTZ,
    ];
    let values: Vec<(String, Option<SystemTime>)> = b
        .records()
        .iter()
        .map(|r| {
            let ts = r
                .timestamp_ms
                .map(|ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms as u64));
            (String::from_utf8_lossy(&r.value).into_owned(), ts)
        })
        .collect();
    let started = Instant::now();
    let tx = c.transaction().await.map_err(|e| e.to_string())?;
    let sink = tx
        .copy_in(&format!("COPY {table} FROM STDIN (FORMAT binary)"))
        .await
        .map_err(|e| e.to_string())?;
    let writer = BinaryCopyInWriter::new(sink, &types);
    pin_mut!(writer);
    for (r, (value, ts)) in b.records().iter().zip(&values) {
        let topic: &str = &r.id.topic;
        let partition = r.id.partition as i32;
        let offset = r.id.offset as i64;
        let key = r.key.as_deref();
        let headers: Option<RawJsonb> = None;
        let row: [&(dyn ToSql + Sync); 7] = [
            &topic,
            &partition,
            &offset,
            &key,
            &RawJsonb(value),
            &headers,
            ts,
        ];
        writer
            .as_mut()
            .write(&row)
            .await
            .map_err(|e| e.to_string())?;
    }
    writer.finish().await.map_err(|e| e.to_string())?;
    tx.commit().await.map_err(|e| e.to_string())?;
    Ok(started.elapsed())
}

async fn sink_write(
    url: &str,
    table: &str,
    b: &Batch,
    threshold: usize,
) -> Result<(Duration, Duration), String> {
    let mut config = PostgresSinkConfig::new(url, table);
    config.copy_threshold = threshold;
    let sink = PostgresSink::new(config).map_err(|e| e.to_string())?;
    sink.open().await.map_err(|e| e.to_string())?;
    let started = Instant::now();
    sink.consume(b).await.map_err(|e| e.to_string())?;
    let first = started.elapsed();
    let started = Instant::now();
    let replay = sink.consume(b).await.map_err(|e| e.to_string())?;
    if replay.written != 0 {
        return Err(format!("replay wrote {} rows", replay.written));
    }
    Ok((first, started.elapsed()))
}

fn rate(n: u64, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64()
}

async fn postgres(reps: usize) -> Result<(), String> {
    let server = first_available(PgServer::provide).await?;
    let info = server.info().await;
    let url = server.url().to_owned();
    println!(
        "PostgreSQL {} — {reps} repetitions, medians; 1 KiB JSON records\n",
        info.version
    );
    println!("| batch | path | records/s | MB/s | ratio to raw COPY |");
    println!("|---:|---|---:|---:|---:|");
    for size in [1_000u64, 10_000] {
        let bytes: u64 = batch(0, 0, size)
            .records()
            .iter()
            .map(|r| r.value.len() as u64)
            .sum();
        let (mut raw, mut first, mut replay) = (Vec::new(), Vec::new(), Vec::new());
        for rep in 0..reps {
            let b = batch(rep as u32, 0, size);
            raw.push(raw_copy(&url, &format!("raw_{size}_{rep}"), &b).await?);
            let (f, r) = sink_write(&url, &format!("sink_{size}_{rep}"), &b, 256).await?;
            first.push(f);
            replay.push(r);
        }
        let raw = median(raw);
        for (path, d) in [
            ("raw COPY (unlogged)", raw),
            ("sink first write", median(first)),
            ("sink replay", median(replay)),
        ] {
            println!(
                "| {size} | {path} | {:.0} | {:.1} | {:.2} |",
                rate(size, d),
                rate(bytes, d) / 1e6,
                raw.as_secs_f64() / d.as_secs_f64()
            );
        }
    }
    println!(
        "\nStaging path by batch size (first writes; the sink's copy_threshold picks per size)\n"
    );
    println!("| batch | unnest records/s | COPY records/s | COPY / unnest |");
    println!("|---:|---:|---:|---:|");
    for size in [10u64, 50, 100, 250, 500, 1000, 2000] {
        let (mut unnest, mut copy) = (Vec::new(), Vec::new());
        for rep in 0..reps.max(5) {
            let b = batch(rep as u32, 0, size);
            unnest.push(
                sink_write(&url, &format!("un_{size}"), &b, usize::MAX)
                    .await?
                    .0,
            );
            copy.push(sink_write(&url, &format!("cp_{size}"), &b, 1).await?.0);
        }
        let (u, c) = (median(unnest), median(copy));
        println!(
            "| {size} | {:.0} | {:.0} | {:.2} |",
            rate(size, u),
            rate(size, c),
            u.as_secs_f64() / c.as_secs_f64()
        );
    }
    server.stop().await
}

/// Prints one comparison table: the raw path and the sink's first write and replay per size.
fn print_rows(
    size: u64,
    bytes: u64,
    raw: Duration,
    first: Duration,
    replay: Duration,
    raw_name: &str,
) {
    for (path, d) in [
        (raw_name, raw),
        ("sink first write", first),
        ("sink replay", replay),
    ] {
        println!(
            "| {size} | {path} | {:.0} | {:.1} | {:.2} |",
            rate(size, d),
            rate(bytes, d) / 1e6,
            raw.as_secs_f64() / d.as_secs_f64()
        );
    }
}

/// Times the sink's first write and replay of `b`.
async fn time_sink(sink: &dyn Sink, b: &Batch) -> Result<(Duration, Duration), String> {
    sink.open().await.map_err(|e| e.to_string())?;
    let started = Instant::now();
    sink.consume(b).await.map_err(|e| e.to_string())?;
    let first = started.elapsed();
    let started = Instant::now();
    // A replay skips (S3, ClickHouse, lakehouse watermarks) or rewrites in place (InfluxDB).
    sink.consume(b).await.map_err(|e| e.to_string())?;
    Ok((first, started.elapsed()))
}

/// One repetition of a comparison: bytes of the batch, the raw path, the sink's first write and
/// its replay.
struct Sample {
    bytes: u64,
    raw: Duration,
    first: Duration,
    replay: Duration,
}

/// Runs `sample(batch size, repetition)` `reps` times for batches of 1 000 and 10 000 records
/// and prints the medians beside the raw path (`raw_name`).
async fn compare(
    reps: usize,
    raw_name: &str,
    mut sample: impl AsyncFnMut(u64, usize) -> Result<Sample, String>,
) -> Result<(), String> {
    for size in [1_000u64, 10_000] {
        let (mut raw, mut first, mut replay) = (Vec::new(), Vec::new(), Vec::new());
        let mut bytes = 0;
        for rep in 0..reps {
            let s = sample(size, rep).await?;
            bytes = s.bytes;
            raw.push(s.raw);
            first.push(s.first);
            replay.push(s.replay);
        }
        print_rows(
            size,
            bytes,
            median(raw),
            median(first),
            median(replay),
            raw_name,
        );
    }
    Ok(())
}

fn table_header(title: &str) {
    println!("\n{title}\n");
    println!("| batch | path | records/s | MB/s | ratio to raw |");
    println!("|---:|---|---:|---:|---:|");
}

async fn s3(reps: usize) -> Result<(), String> {
    use aws_sdk_s3::primitives::ByteStream;
    use pico_suite::servers::s3::S3Server;
    let server = first_available(S3Server::provide).await?;
    let client = server.client();
    server.ensure_bucket("bench").await?;
    table_header(&format!(
        "{} {} — one object per batch; raw = plain PutObject of the same JSON lines",
        server.info().name,
        server.info().version
    ));
    compare(reps, "raw PUT", async |size: u64, rep: usize| {
        let b = batch(rep as u32, 0, size);
        let body: Vec<u8> = b
            .records()
            .iter()
            .flat_map(|r| {
                let mut l =
                    serde_json::to_vec(&pico_sink::Envelope::from_record(&Default::default(), r))
                        .unwrap_or_default();
                l.push(b'\n');
                l
            })
            .collect();
        let bytes = body.len() as u64;
        let started = Instant::now();
        client
            .put_object()
            .bucket("bench")
            .key(format!("raw/{size}/{rep}.jsonl"))
            .body(ByteStream::from(body))
            .send()
            .await
            .map_err(|e| format!("{e:?}"))?;
        let raw = started.elapsed();
        let mut config = pico_sink_s3::S3SinkConfig::new("bench", format!("sink/{size}/{rep}"));
        config.endpoint = Some(server.endpoint.clone());
        config.credentials = Some((server.access_key.clone(), server.secret_key.clone().into()));
        let sink = pico_sink_s3::S3Sink::new(config).map_err(|e| e.to_string())?;
        let (first, replay) = time_sink(&sink, &b).await?;
        Ok(Sample {
            bytes,
            raw,
            first,
            replay,
        })
    })
    .await?;
    server.stop().await
}

async fn clickhouse(reps: usize) -> Result<(), String> {
    use pico_suite::servers::clickhouse::ClickHouseServer;
    let server = first_available(ClickHouseServer::provide).await?;
    let info = server.info().await;
    server.query("CREATE DATABASE IF NOT EXISTS bench").await?;
    table_header(&format!(
        "ClickHouse {} — raw = the same TabSeparated INSERT without the watermark query",
        info.version
    ));
    compare(reps, "raw INSERT", async |size: u64, rep: usize| {
            let b = batch(rep as u32, 0, size);
            let table = format!("raw_{size}_{rep}");
            server
                .query(&format!(
                    "CREATE TABLE bench.{table} (pico_topic String, pico_partition UInt32, pico_offset UInt64, \
                     key String, value String, headers String, ts Nullable(Int64)) \
                     ENGINE = ReplacingMergeTree ORDER BY (pico_topic, pico_partition, pico_offset)"
                ))
                .await?;
            let mut rows = Vec::new();
            for r in b.records() {
                rows.extend_from_slice(
                    format!("{}\t{}\t{}\t", r.id.topic, r.id.partition, r.id.offset).as_bytes(),
                );
                pico_sink_clickhouse::escape(r.key.as_deref().unwrap_or_default(), &mut rows);
                rows.push(b'\t');
                pico_sink_clickhouse::escape(&r.value, &mut rows);
                rows.extend_from_slice(
                    format!("\t[]\t{}\n", r.timestamp_ms.unwrap_or_default()).as_bytes(),
                );
            }
            let bytes = rows.len() as u64;
            let mut url = reqwest::Url::parse(server.url()).map_err(|e| e.to_string())?;
            url.query_pairs_mut().append_pair(
                "query",
                &format!("INSERT INTO bench.{table} FORMAT TabSeparated"),
            );
            let started = Instant::now();
            let r = reqwest::Client::new()
                .post(url)
                .body(rows)
                .send()
                .await
                .map_err(|e| e.to_string())?;
            if !r.status().is_success() {
                return Err(r.text().await.unwrap_or_default());
            }
            let raw = started.elapsed();
            let config = pico_sink_clickhouse::ClickHouseSinkConfig::new(
                server.url(),
                "bench",
                format!("sink_{size}_{rep}"),
            );
            let sink =
                pico_sink_clickhouse::ClickHouseSink::new(config).map_err(|e| e.to_string())?;
            let (first, replay) = time_sink(&sink, &b).await?;
            Ok(Sample { bytes, raw, first, replay })
    })
    .await?;
    server.stop().await
}

async fn influxdb(reps: usize) -> Result<(), String> {
    use pico_sink_influxdb::{InfluxSink, InfluxSinkConfig, Payload, PointMapping};
    use pico_suite::servers::influxdb::InfluxServer;
    let server = first_available(InfluxServer::provide).await?;
    let info = server.info().await;
    let client = reqwest::Client::new();
    table_header(&format!(
        "InfluxDB {} — raw = the same points as plain line protocol, no identity tags or field",
        info.version
    ));
    compare(reps, "raw line protocol", async |size: u64, rep: usize| {
        let b = batch(rep as u32, 0, size);
        let db = format!("bench_{size}_{rep}");
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
        let bytes = lines.len() as u64;
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
        Ok(Sample {
            bytes,
            raw,
            first,
            replay,
        })
    })
    .await?;
    server.stop().await
}

/// Files named `*.{ext}` under `dir`, recursively.
fn count_files(dir: &std::path::Path, ext: &str) -> usize {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .map(|p| {
            if p.is_dir() {
                count_files(&p, ext)
            } else {
                usize::from(p.extension().is_some_and(|x| x == ext))
            }
        })
        .sum()
}

/// Which lakehouse format a run measures.
#[derive(Clone, Copy)]
enum Lakehouse {
    Delta,
    Iceberg,
}

/// A lakehouse sink writing table `name` under `dir`.
async fn lakehouse_sink(
    format: Lakehouse,
    dir: &std::path::Path,
    name: &str,
) -> Result<LakehouseSink, String> {
    Ok(match format {
        Lakehouse::Delta => LakehouseSink::Delta(pico_sink_delta::DeltaSink::new(
            pico_sink_delta::DeltaSinkConfig::new(dir.join(name).display().to_string()),
        )),
        Lakehouse::Iceberg => LakehouseSink::Iceberg(
            pico_sink_iceberg::IcebergSink::sqlite(
                &dir.join("catalog.db").display().to_string(),
                &dir.join("warehouse").display().to_string(),
                pico_sink_iceberg::IcebergSinkConfig::new("bench", name),
            )
            .await
            .map_err(|e| e.to_string())?,
        ),
    })
}

enum LakehouseSink {
    Delta(pico_sink_delta::DeltaSink),
    Iceberg(pico_sink_iceberg::IcebergSink),
}

impl LakehouseSink {
    fn sink(&self) -> &dyn Sink {
        match self {
            LakehouseSink::Delta(s) => s,
            LakehouseSink::Iceberg(s) => s,
        }
    }

    async fn append_unguarded(&mut self, b: &Batch) -> Result<(), String> {
        match self {
            LakehouseSink::Delta(s) => s.append_unguarded(b).await,
            LakehouseSink::Iceberg(s) => s.append_unguarded(b).await,
        }
        .map_err(|e| e.to_string())
    }

    /// (commits, data files) of the table.
    async fn stats(&self, dir: &std::path::Path, name: &str) -> Result<(usize, usize), String> {
        match self {
            // Every commit is one JSON log entry; the first one creates the table.
            LakehouseSink::Delta(_) => {
                let table = dir.join(name);
                let log = table.join("_delta_log");
                // Checkpoints are parquet files too, inside the log.
                Ok((
                    count_files(&log, "json").saturating_sub(1),
                    count_files(&table, "parquet") - count_files(&log, "parquet"),
                ))
            }
            LakehouseSink::Iceberg(s) => {
                pico_sink_iceberg::table_stats(s.catalog().as_ref(), s.table_ident()).await
            }
        }
    }
}

/// Delta or Iceberg: first write and replay through the sink against a plain append of the
/// same rows to the same format (no watermark read, no txn / snapshot property), then commits
/// and files per 100 000 records written through the sink.
async fn lakehouse(format: Lakehouse, reps: usize) -> Result<(), String> {
    let title = match format {
        Lakehouse::Delta => "Delta Lake (delta-rs 1.1.2, local filesystem)",
        Lakehouse::Iceberg => {
            "Iceberg (iceberg-rust 0.10.1, SQL catalog on SQLite, local warehouse)"
        }
    };
    table_header(&format!(
        "{title} — one commit per batch; raw = plain append of the same rows, same format"
    ));
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    compare(reps, "plain append", async |size: u64, rep: usize| {
        let b = batch(rep as u32, 0, size);
        let bytes = b.records().iter().map(|r| r.value.len() as u64).sum();
        let mut plain = lakehouse_sink(format, dir.path(), &format!("raw_{size}_{rep}")).await?;
        plain.sink().open().await.map_err(|e| e.to_string())?;
        let started = Instant::now();
        plain.append_unguarded(&b).await?;
        let raw = started.elapsed();
        let sink = lakehouse_sink(format, dir.path(), &format!("sink_{size}_{rep}")).await?;
        let (first, replay) = time_sink(sink.sink(), &b).await?;
        Ok(Sample {
            bytes,
            raw,
            first,
            replay,
        })
    })
    .await?;
    println!(
        "\n| batch | records written | commits | data files | per 100 000 records: commits, files | sink records/s | plain append records/s | ratio |"
    );
    println!("|---:|---:|---:|---:|---|---:|---:|---:|");
    for size in [1_000u64, 10_000] {
        let total = 100_000u64;
        let name = format!("volume_{size}");
        let sink = lakehouse_sink(format, dir.path(), &name).await?;
        sink.sink().open().await.map_err(|e| e.to_string())?;
        let started = Instant::now();
        for first in (0..total).step_by(size as usize) {
            sink.sink()
                .consume(&batch(0, first, size))
                .await
                .map_err(|e| e.to_string())?;
        }
        let elapsed = started.elapsed();
        let mut plain = lakehouse_sink(format, dir.path(), &format!("volume_raw_{size}")).await?;
        plain.sink().open().await.map_err(|e| e.to_string())?;
        let started = Instant::now();
        for first in (0..total).step_by(size as usize) {
            plain.append_unguarded(&batch(0, first, size)).await?;
        }
        let raw = started.elapsed();
        let (commits, files) = sink.stats(dir.path(), &name).await?;
        println!(
            "| {size} | {total} | {commits} | {files} | {}, {} | {:.0} | {:.0} | {:.2} |",
            commits as u64 * 100_000 / total,
            files as u64 * 100_000 / total,
            rate(total, elapsed),
            rate(total, raw),
            raw.as_secs_f64() / elapsed.as_secs_f64()
        );
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let reps = args
        .iter()
        .position(|a| a == "--reps")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = match args.first().map(String::as_str) {
        Some("postgres") => rt.block_on(postgres(reps)),
        Some("s3") => rt.block_on(s3(reps)),
        Some("clickhouse") => rt.block_on(clickhouse(reps)),
        Some("influxdb") => rt.block_on(influxdb(reps)),
        Some("delta") => rt.block_on(lakehouse(Lakehouse::Delta, reps)),
        Some("iceberg") => rt.block_on(lakehouse(Lakehouse::Iceberg, reps)),
        _ => {
            Err("usage: pico-bench postgres|s3|clickhouse|influxdb|delta|iceberg [--reps N]".into())
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
