//! Postgres and Redshift (on PostgreSQL) against raw binary `COPY` of the same rows into a
//! durable table like the sink's: logged, with the sink's primary key for Postgres, without a
//! key for Redshift (whose table has none). The unlogged, keyless `COPY` is reported beside them
//! as information.

use std::time::{Duration, Instant, SystemTime};

use futures_util::pin_mut;
use pico_sink::{Batch, Sink};
use pico_sink_postgres::{PostgresSink, PostgresSinkConfig, RawJsonb};
use pico_sink_redshift::{Dialect, RedshiftSink, RedshiftSinkConfig};
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::{ToSql, Type};

use super::server::{PgServer, connect};
use crate::measure::{BenchSize, SinkBench};
use crate::measure::{Place, batch, compare, median};
use crate::provide::first_available;
use crate::serve::Server;

/// The table a raw `COPY` goes into.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum RawTable {
    /// Unlogged, no key: the destination's fastest bulk path, which no durable table matches
    /// (information beside the anchor).
    Unlogged,
    /// Logged, without a key: the Redshift stand-in's anchor (its table has no key).
    Logged,
    /// Logged, with the sink's primary key: the Postgres anchor, what a durable keyed table
    /// costs.
    LoggedKeyed,
}

impl RawTable {
    /// What a `COPY` into it is, in words.
    fn words(self) -> &'static str {
        match self {
            RawTable::Unlogged => "binary COPY into an unlogged table without a key",
            RawTable::Logged => "binary COPY into a logged table without a key",
            RawTable::LoggedKeyed => "binary COPY into a logged table with the sink's primary key",
        }
    }
}

/// Raw binary `COPY` of `b` into a new table `table` of the sink's columns, in one transaction.
pub(crate) async fn raw_copy(
    url: &str,
    table: &str,
    kind: RawTable,
    b: &Batch,
) -> Result<Duration, String> {
    let mut c = connect(url).await?;
    let (unlogged, key) = match kind {
        RawTable::Unlogged => ("UNLOGGED", ""),
        RawTable::Logged => ("", ""),
        RawTable::LoggedKeyed => (
            "",
            ", PRIMARY KEY (pico_topic, pico_partition, pico_offset)",
        ),
    };
    c.batch_execute(&format!(
        "CREATE {unlogged} TABLE {table} (pico_topic text, pico_partition int, pico_offset bigint, \
         key bytea, value jsonb, headers jsonb, ts timestamptz{key})"
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

/// Which PostgreSQL-protocol sink a run measures.
#[derive(Clone, Copy)]
enum Flavour {
    Postgres,
    Redshift,
}

impl Flavour {
    /// The anchor: a durable table like the sink's.
    fn anchor(self) -> RawTable {
        match self {
            Flavour::Postgres => RawTable::LoggedKeyed,
            Flavour::Redshift => RawTable::Logged,
        }
    }
}

async fn measure(size: BenchSize, flavour: Flavour) -> Result<SinkBench, String> {
    let server = first_available(PgServer::provide).await?;
    let info = server.info().await;
    let url = server.url().to_owned();
    // The unlogged COPY of the same rows, timed in the anchor's turn, after it.
    let mut unlogged: Vec<(u64, Duration)> = Vec::new();
    let rows = compare(
        size,
        async |records: u64, rep: usize| {
            let b = batch(rep as u32, 0, records);
            let table = format!("raw_{records}_{rep}");
            let anchor = raw_copy(&url, &table, flavour.anchor(), &b).await?;
            let table = format!("unlogged_{records}_{rep}");
            unlogged.push((
                records,
                raw_copy(&url, &table, RawTable::Unlogged, &b).await?,
            ));
            Ok(anchor)
        },
        async |place: Place| -> Result<Box<dyn Sink>, String> {
            let table = format!("sink_{place}");
            let sink: Box<dyn Sink> = match flavour {
                Flavour::Postgres => Box::new(
                    PostgresSink::new(PostgresSinkConfig::new(url.as_str(), table))
                        .map_err(|e| e.to_string())?,
                ),
                Flavour::Redshift => {
                    let mut config = RedshiftSinkConfig::new(url.as_str(), table.as_str());
                    config.dialect = Dialect::PostgresStandIn;
                    Box::new(RedshiftSink::new(config).map_err(|e| e.to_string())?)
                }
            };
            Ok(sink)
        },
    )
    .await?;
    server.stop().await?;
    let (sink, server) = match flavour {
        Flavour::Postgres => ("postgres", format!("PostgreSQL {}", info.version)),
        Flavour::Redshift => (
            "redshift",
            format!("PostgreSQL {} standing in for Redshift", info.version),
        ),
    };
    // What a table without WAL (and without a key) would allow: information, not the anchor.
    let notes = rows
        .iter()
        .map(|row| {
            let times: Vec<Duration> = unlogged
                .iter()
                .filter(|(n, _)| *n == row.records)
                .map(|(_, t)| *t)
                .collect();
            let unlogged_ms = median(times).as_secs_f64() * 1000.0;
            format!(
                "{} records: the same binary COPY into an unlogged table without a key is {:.2} × \
                 the anchor's throughput; the first write reaches {:.2} of it",
                row.records,
                row.raw_ms / unlogged_ms,
                unlogged_ms / row.first_ms
            )
        })
        .collect();
    Ok(SinkBench {
        sink: sink.into(),
        server,
        raw_path: flavour.anchor().words().into(),
        rows,
        notes,
    })
}

/// The Postgres sink beside raw binary `COPY`.
pub async fn postgres(size: BenchSize) -> Result<SinkBench, String> {
    measure(size, Flavour::Postgres).await
}

/// The Redshift sink on PostgreSQL (the suite's stand-in) beside raw binary `COPY`.
pub async fn redshift(size: BenchSize) -> Result<SinkBench, String> {
    measure(size, Flavour::Redshift).await
}
