//! One transaction per batch: stage (binary COPY or unnest), then INSERT … ON CONFLICT.

use std::error::Error;
use std::time::SystemTime;

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::{SinkExt, pin_mut};
use pico_pg_common::{Failure, classify, json_has_nul, quote_ident};
use pico_sink::identity::columns;
use pico_sink::kit::{Attempt, Isolator};
use pico_sink::{RejectedRecord, WriteReport};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, Transaction};

use pico_pg_common::ConflictAction;

use crate::config::{PostgresSinkConfig, ValueColumn};
use crate::copy_binary::CopyEncoder;
use crate::rows::{Row, Value};

/// JSON text sent as `jsonb` without parsing it on the client (the binary jsonb format is a
/// version byte, 1, followed by the text; the server parses and validates it).
#[derive(Debug, Clone, Copy)]
pub struct RawJsonb<'a>(pub &'a str);

impl ToSql for RawJsonb<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        JsonText(self.0.as_bytes()).to_sql(ty, out)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::JSONB
    }

    to_sql_checked!();
}

/// [`RawJsonb`] over bytes the sink checked to be UTF-8.
#[derive(Debug, Clone, Copy)]
struct JsonText<'a>(&'a [u8]);

impl ToSql for JsonText<'_> {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        out.put_u8(1);
        out.put_slice(self.0);
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::JSONB
    }

    to_sql_checked!();
}

/// The SQL for one configuration, built once.
#[derive(Debug, Clone)]
pub(crate) struct Statements {
    create_stage: String,
    copy_in: String,
    /// COPY straight into the target (first writes); `None` with mapped columns, which need
    /// the staging casts.
    direct_copy: Option<String>,
    /// Whether any row of the batch's offset range is already there (one index probe).
    probe: String,
    /// Whether rows carry `pico_digest`.
    digest: bool,
    from_stage: String,
    from_unnest: String,
    /// Fields per COPY row.
    copy_fields: usize,
}

/// A stored column: name, staging type. `pico_digest` (when the table has it) comes before the
/// mapped columns, which stay last.
fn columns(config: &PostgresSinkConfig, digest: bool) -> Vec<(String, String)> {
    let named = |name: &str, ty: &str| (name.to_owned(), ty.to_owned());
    let mut cols = vec![
        named(columns::TOPIC, "text"),
        named(columns::PARTITION, "int4"),
        named(columns::OFFSET, "int8"),
        named(columns::RECORD_KEY, "bytea"),
    ];
    if config.keep_value {
        cols.push(named(columns::VALUE, config.value_column.sql_type()));
    }
    cols.push(named(columns::HEADERS, "jsonb"));
    cols.push(named(columns::TIMESTAMP, "timestamptz"));
    if digest {
        cols.push(named(columns::DIGEST, "int8"));
    }
    for m in &config.mapped_columns {
        cols.push((m.column.clone(), "text".into()));
    }
    cols
}

fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl Statements {
    /// Builds every statement for `config`, for a table with or without `pico_digest`.
    pub(crate) fn new(config: &PostgresSinkConfig, digest: bool) -> Self {
        let cols = columns(config, digest);
        let names: Vec<String> = cols.iter().map(|(n, _)| quote_ident(n)).collect();
        let list = names.join(", ");
        let signature = format!("{}|{list}", config.table);
        let stage = format!("pico_stage_{:016x}", fnv(&signature));
        let stage_cols: Vec<String> = cols
            .iter()
            .map(|(n, t)| format!("{} {t}", quote_ident(n)))
            .collect();
        // Mapped columns are staged as text and cast into their declared type here.
        let mapped_start = cols.len() - config.mapped_columns.len();
        let select = |source: &str| -> String {
            cols.iter()
                .enumerate()
                .map(|(i, (n, _))| {
                    let col = format!("{source}.{}", quote_ident(n));
                    if i >= mapped_start {
                        let ty = &config.mapped_columns[i - mapped_start].sql_type;
                        format!("CAST({col} AS {ty})")
                    } else {
                        col
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let payload: Vec<&String> = names.iter().skip(3).collect();
        let conflict = match config.conflict {
            // Reject: the sink took the changed records out of the batch beforehand.
            ConflictAction::Nothing | ConflictAction::Reject => "DO NOTHING".to_owned(),
            // Skip no-op updates: a replay rewrites nothing and returns nothing.
            ConflictAction::Update => format!(
                "DO UPDATE SET ({p}) = ROW({e}) WHERE ({t}) IS DISTINCT FROM ({e})",
                p = payload
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                e = payload
                    .iter()
                    .map(|n| format!("EXCLUDED.{n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                t = payload
                    .iter()
                    .map(|n| format!("t.{n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
        };
        let counted = |select_from: String| {
            format!(
                "WITH ins AS (INSERT INTO {table} AS t ({list}) {select_from} \
                 ON CONFLICT (pico_topic, pico_partition, pico_offset) {conflict} \
                 RETURNING 1) SELECT count(*)::int8 FROM ins",
                table = config.table
            )
        };
        let unnest_args: Vec<String> = cols
            .iter()
            .enumerate()
            .map(|(i, (_, t))| format!("${}::{t}[]", i + 1))
            .collect();
        Self {
            create_stage: format!(
                "CREATE TEMP TABLE IF NOT EXISTS {stage} ({}) ON COMMIT DELETE ROWS",
                stage_cols.join(", ")
            ),
            copy_in: format!("COPY {stage} ({list}) FROM STDIN (FORMAT binary)"),
            probe: format!(
                "SELECT EXISTS (SELECT 1 FROM {} WHERE pico_topic = $1 AND pico_partition = $2 \
                 AND pico_offset BETWEEN $3 AND $4)",
                config.table
            ),
            direct_copy: config
                .mapped_columns
                .is_empty()
                .then(|| format!("COPY {} ({list}) FROM STDIN (FORMAT binary)", config.table)),
            from_stage: counted(format!(
                "SELECT {} FROM {stage} AS s ORDER BY s.pico_offset",
                select("s")
            )),
            from_unnest: counted(format!(
                "SELECT {} FROM unnest({}) AS u({list})",
                select("u"),
                unnest_args.join(", ")
            )),
            copy_fields: cols.len(),
            digest,
        }
    }
}

/// Column-wise parameter arrays for the unnest path.
struct Columns<'a> {
    topics: Vec<&'a str>,
    partitions: Vec<i32>,
    offsets: Vec<i64>,
    keys: Vec<Option<&'a [u8]>>,
    json_values: Vec<Option<JsonText<'a>>>,
    byte_values: Vec<Option<&'a [u8]>>,
    headers: Vec<Option<RawJsonb<'a>>>,
    ts: Vec<Option<SystemTime>>,
    digests: Vec<i64>,
    mapped: Vec<Vec<Option<&'a str>>>,
}

impl<'a> Columns<'a> {
    fn new(config: &PostgresSinkConfig, rows: &'a [Row]) -> Self {
        let mut c = Columns {
            topics: Vec::with_capacity(rows.len()),
            partitions: Vec::with_capacity(rows.len()),
            offsets: Vec::with_capacity(rows.len()),
            keys: Vec::with_capacity(rows.len()),
            json_values: Vec::new(),
            byte_values: Vec::new(),
            headers: Vec::with_capacity(rows.len()),
            ts: Vec::with_capacity(rows.len()),
            digests: Vec::with_capacity(rows.len()),
            mapped: vec![Vec::with_capacity(rows.len()); config.mapped_columns.len()],
        };
        for r in rows {
            c.topics.push(&r.topic);
            c.partitions.push(r.partition);
            c.offsets.push(r.offset);
            c.keys.push(r.key.as_deref());
            match &r.value {
                Some(Value::Json(t)) => c.json_values.push(Some(JsonText(t))),
                Some(Value::Bytes(b)) => c.byte_values.push(Some(b)),
                None => {}
            }
            c.headers.push(r.headers.as_deref().map(RawJsonb));
            c.ts.push(r.ts);
            c.digests.push(r.digest);
            for (i, m) in r.mapped.iter().enumerate() {
                c.mapped[i].push(m.as_deref());
            }
        }
        c
    }

    fn params(&self, config: &PostgresSinkConfig, digest: bool) -> Vec<&(dyn ToSql + Sync)> {
        let mut p: Vec<&(dyn ToSql + Sync)> =
            vec![&self.topics, &self.partitions, &self.offsets, &self.keys];
        if config.keep_value {
            match config.value_column {
                ValueColumn::Jsonb => p.push(&self.json_values),
                ValueColumn::Bytea => p.push(&self.byte_values),
            }
        }
        p.push(&self.headers);
        p.push(&self.ts);
        if digest {
            p.push(&self.digests);
        }
        for m in &self.mapped {
            p.push(m);
        }
        p
    }
}

/// Binary COPY of `rows` with `sql` (into the staging table or the target).
async fn copy_rows(
    tx: &Transaction<'_>,
    sql: &str,
    stmts: &Statements,
    config: &PostgresSinkConfig,
    rows: &[Row],
) -> Result<(), tokio_postgres::Error> {
    let sink = tx.copy_in::<_, Bytes>(sql).await?;
    pin_mut!(sink);
    let mut enc = CopyEncoder::new();
    for row in rows {
        enc.row(stmts.copy_fields);
        enc.text(Some(&row.topic));
        enc.int4(row.partition);
        enc.int8(row.offset);
        enc.bytea(row.key.as_deref());
        if config.keep_value {
            match &row.value {
                Some(Value::Json(text)) => enc.jsonb(Some(text)),
                Some(Value::Bytes(b)) => enc.bytea(Some(b)),
                None => enc.bytea(None),
            }
        }
        enc.jsonb(row.headers.as_deref().map(str::as_bytes));
        enc.timestamptz(row.ts);
        if stmts.digest {
            enc.int8(row.digest);
        }
        for m in &row.mapped {
            enc.text(m.as_deref());
        }
        if let Some(chunk) = enc.take_chunk() {
            sink.send(chunk).await?;
        }
    }
    sink.send(enc.finish()).await?;
    sink.as_mut().finish().await?;
    Ok(())
}

/// Writes `rows` in one transaction; `known_empty` when a probe just found none of them.
async fn write_once(
    client: &mut Client,
    config: &PostgresSinkConfig,
    stmts: &Statements,
    rows: &[Row],
    known_empty: bool,
) -> Result<WriteReport, Failure> {
    let mut tx = client
        .transaction()
        .await
        .map_err(|e| classify(e, "BEGIN"))?;
    // First writes are the common case: when no row of the range is there yet, COPY straight
    // into the target inside a savepoint. A row that appears meanwhile (a zombie writer) fails
    // it with a unique violation; then upsert like a replay.
    if let (Some(direct), Some(first), Some(last)) = (&stmts.direct_copy, rows.first(), rows.last())
    {
        let present: bool = if known_empty {
            false
        } else {
            tx.query_one(
                &stmts.probe,
                &[&first.topic, &first.partition, &first.offset, &last.offset],
            )
            .await
            .map_err(|e| classify(e, "probing for rows already present"))?
            .get(0)
        };
        if !present {
            let savepoint = tx
                .savepoint("pico_direct")
                .await
                .map_err(|e| classify(e, "SAVEPOINT"))?;
            match copy_rows(&savepoint, direct, stmts, config, rows).await {
                Ok(()) => {
                    savepoint
                        .commit()
                        .await
                        .map_err(|e| classify(e, "RELEASE SAVEPOINT"))?;
                    tx.commit().await.map_err(|e| classify(e, "COMMIT"))?;
                    return Ok(WriteReport {
                        written: rows.len() as u64,
                        already_present: 0,
                    });
                }
                Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                    savepoint
                        .rollback()
                        .await
                        .map_err(|e| classify(e, "ROLLBACK TO SAVEPOINT"))?;
                }
                Err(e) => return Err(classify(e, "COPY into the table")),
            }
        }
    }
    let written: i64 = if rows.len() >= config.copy_threshold {
        tx.batch_execute(&stmts.create_stage)
            .await
            .map_err(|e| classify(e, "creating the staging table"))?;
        copy_rows(&tx, &stmts.copy_in, stmts, config, rows)
            .await
            .map_err(|e| classify(e, "COPY into the staging table"))?;
        tx.query_one(&stmts.from_stage, &[])
            .await
            .map_err(|e| classify(e, "INSERT … ON CONFLICT from the staging table"))?
            .get(0)
    } else {
        let columns = Columns::new(config, rows);
        tx.query_one(&stmts.from_unnest, &columns.params(config, stmts.digest))
            .await
            .map_err(|e| classify(e, "INSERT … SELECT FROM unnest … ON CONFLICT"))?
            .get(0)
    };
    tx.commit().await.map_err(|e| classify(e, "COMMIT"))?;
    let written = u64::try_from(written).unwrap_or_default();
    Ok(WriteReport {
        written,
        already_present: rows.len() as u64 - written.min(rows.len() as u64),
    })
}

/// Writes `rows`, splitting on data errors until the offending records are isolated; those are
/// returned as rejections, the rest is written. `known_empty`: a probe found none of the
/// batch's offsets in the table.
pub(crate) async fn write_rows(
    client: &mut Client,
    config: &PostgresSinkConfig,
    stmts: &Statements,
    rows: &[Row],
    batch: &pico_sink::Batch,
    known_empty: bool,
) -> Result<(WriteReport, Vec<RejectedRecord>), Failure> {
    let mut plan = Isolator::new(rows.len());
    while let Some((start, end)) = plan.next_range() {
        let empty = known_empty && (start, end) == (0, rows.len());
        let attempt = match write_once(client, config, stmts, &rows[start..end], empty).await {
            Ok(report) => Attempt::Written(report),
            Err(Failure::Data(reason)) => Attempt::Refused(reason),
            Err(other) => return Err(other),
        };
        if matches!(attempt, Attempt::Refused(_)) && (start, end) == (0, rows.len()) {
            plan.suspect(suspects(rows));
        }
        plan.record(start, end, attempt);
    }
    Ok(plan.finish_rejecting(|i| batch.records()[rows[i].index].id.clone()))
}

/// Rows whose value the server will likely refuse as `jsonb`: JSON that does not parse, or
/// that holds `\u0000`. Looked for only once the server refused the batch (a batch it takes is
/// parsed once, by the server), so that the refused records are split out in a few requests
/// instead of halving the batch down to them: each request is a transaction of several round
/// trips, and a network that cuts one restarts the whole batch.
fn suspects(rows: &[Row]) -> Vec<usize> {
    rows.iter()
        .enumerate()
        .filter(|(_, r)| match &r.value {
            Some(Value::Json(text)) => match serde_json::from_slice::<serde_json::Value>(text) {
                Ok(v) => json_has_nul(&v),
                Err(_) => true,
            },
            _ => false,
        })
        .map(|(i, _)| i)
        .collect()
}
