//! Postgres and Redshift (on PostgreSQL) against raw binary `COPY` of the same rows into a
//! durable table like the sink's: logged, with the sink's primary key for Postgres, without a
//! key for Redshift (whose table has none). The unlogged, keyless `COPY` is reported beside them
//! as information.

use std::time::{Duration, Instant, SystemTime};

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::{SinkExt, pin_mut};
use pico_sink::{Batch, Sink};
use pico_sink_postgres::{PostgresSink, PostgresSinkConfig, RawJsonb};
use pico_sink_redshift::{Dialect, RedshiftSink, RedshiftSinkConfig};
use tokio_postgres::types::{IsNull, ToSql, Type};

use super::read_table;
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

/// Raw binary `COPY` of `b` into a new table `table` of the sink's columns, in one
/// transaction. The rows are encoded before the timer starts and sent as one buffer, so the
/// anchor times the server's bulk path, not a client's encoder. (That did not explain why the
/// keyed anchor is slower than the sink at 10 000 records: first / raw 2.54 before, 2.45 after,
/// 4821afd; still to find.)
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
    let body = copy_body(b)?;
    let started = Instant::now();
    let tx = c.transaction().await.map_err(|e| e.to_string())?;
    let sink = tx
        .copy_in::<_, Bytes>(&format!("COPY {table} FROM STDIN (FORMAT binary)"))
        .await
        .map_err(|e| e.to_string())?;
    pin_mut!(sink);
    sink.send(body).await.map_err(|e| e.to_string())?;
    sink.finish().await.map_err(|e| e.to_string())?;
    tx.commit().await.map_err(|e| e.to_string())?;
    Ok(started.elapsed())
}

/// The rows of `b` in PostgreSQL's binary `COPY` format (signature, flags, header extension,
/// then per row the field count and each field's length and bytes, then the trailer), in the
/// columns of [`raw_copy`]'s table.
fn copy_body(b: &Batch) -> Result<Bytes, String> {
    let mut buf = BytesMut::new();
    buf.put_slice(b"PGCOPY\n\xff\r\n\0");
    buf.put_i32(0);
    buf.put_i32(0);
    for r in b.records() {
        let value = std::str::from_utf8(&r.value).map_err(|e| e.to_string())?;
        let ts = r
            .timestamp_ms
            .map(|ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms as u64));
        let headers: Option<RawJsonb> = None;
        let topic: &str = &r.id.topic;
        let fields: [(&(dyn ToSql + Sync), Type); 7] = [
            (&topic, Type::TEXT),
            (&(r.id.partition as i32), Type::INT4),
            (&(r.id.offset as i64), Type::INT8),
            (&r.key.as_deref(), Type::BYTEA),
            (&RawJsonb(value), Type::JSONB),
            (&headers, Type::JSONB),
            (&ts, Type::TIMESTAMPTZ),
        ];
        buf.put_i16(fields.len() as i16);
        for (field, ty) in fields {
            let at = buf.len();
            buf.put_i32(0);
            match field
                .to_sql_checked(&ty, &mut buf)
                .map_err(|e| e.to_string())?
            {
                IsNull::Yes => {
                    buf.truncate(at);
                    buf.put_i32(-1);
                }
                IsNull::No => {
                    let len = i32::try_from(buf.len() - at - 4).map_err(|e| e.to_string())?;
                    buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
                }
            }
        }
    }
    buf.put_i16(-1);
    Ok(buf.freeze())
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
        async |place: Place| read_table(&url, &format!("sink_{place}")).await,
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
