//! One locked transaction per batch: stage, count what is present, MERGE.

use std::time::SystemTime;

use pico_pg_common::{ConflictAction, Failure, classify, quote_ident};
use pico_sink::identity::columns;
use pico_sink::kit::{Attempt, Isolator};
use pico_sink::{RejectedRecord, WriteReport};
use tokio_postgres::Client;
use tokio_postgres::types::ToSql;

use crate::config::{RedshiftSinkConfig, UpsertStrategy};
use crate::rows::Row;
use crate::schema::table_columns;

/// Parameters per staging INSERT, under Redshift's limit of 32767.
const MAX_PARAMS: usize = 32_000;
const STAGE: &str = "pico_stage";

/// One column's parameter in the staging INSERT.
#[derive(Debug, Clone)]
enum Param {
    /// `$n::type`, bound from a value of that type.
    Typed(&'static str),
    /// `CAST($n::varchar AS type)`: bound as text, cast by the server (a value that does not
    /// cast is a data error, which rejects its record).
    FromText(String),
}

/// The SQL for one configuration, built once.
#[derive(Debug, Clone)]
pub(crate) struct Statements {
    lock: String,
    create_stage: String,
    insert_head: String,
    /// How each column's parameter is written in the staging INSERT.
    params: Vec<Param>,
    count_present: String,
    upsert: Vec<String>,
    ncols: usize,
    /// Whether rows carry `pico_digest`.
    digest: bool,
}

impl Statements {
    pub(crate) fn new(config: &RedshiftSinkConfig, digest: bool) -> Self {
        let cols = table_columns(config, digest);
        let names: Vec<String> = cols.iter().map(|(n, _)| quote_ident(n)).collect();
        let list = names.join(", ");
        let t = config.table.to_string();
        let on = |a: &str, b: &str| {
            columns::KEY
                .iter()
                .map(|k| format!("{a}.{k} = {b}.{k}"))
                .collect::<Vec<_>>()
                .join(" AND ")
        };
        let stage_list: Vec<String> = names.iter().map(|n| format!("s.{n}")).collect();
        let payload = &names[3..];
        let upsert = match (config.conflict, config.strategy) {
            // Reject: the sink took the changed records out of the batch beforehand.
            (ConflictAction::Nothing | ConflictAction::Reject, _) => vec![format!(
                "INSERT INTO {t} ({list}) SELECT {} FROM {STAGE} s WHERE NOT EXISTS \
                 (SELECT 1 FROM {t} WHERE {})",
                stage_list.join(", "),
                on(&t, "s")
            )],
            (ConflictAction::Update, UpsertStrategy::Merge) => vec![format!(
                "MERGE INTO {t} USING {STAGE} s ON {} \
                 WHEN MATCHED THEN UPDATE SET {} \
                 WHEN NOT MATCHED THEN INSERT ({list}) VALUES ({})",
                on(&t, "s"),
                payload
                    .iter()
                    .map(|n| format!("{n} = s.{n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                stage_list.join(", ")
            )],
            (ConflictAction::Update, UpsertStrategy::DeleteInsert) => vec![
                format!("DELETE FROM {t} USING {STAGE} s WHERE {}", on(&t, "s")),
                format!(
                    "INSERT INTO {t} ({list}) SELECT {} FROM {STAGE} s",
                    stage_list.join(", ")
                ),
            ],
        };
        Self {
            lock: format!("LOCK TABLE {t}"),
            create_stage: format!(
                "DROP TABLE IF EXISTS {STAGE}; CREATE TEMP TABLE {STAGE} ({})",
                cols.iter()
                    .map(|(n, ty)| format!("{} {ty}", quote_ident(n)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            insert_head: format!("INSERT INTO {STAGE} ({list}) VALUES "),
            params: cols
                .iter()
                .enumerate()
                .map(|(i, (name, ty))| match (i, name.as_str(), ty.as_str()) {
                    (1, _, _) => Param::Typed("int4"),
                    (2, _, _) | (_, columns::DIGEST, _) => Param::Typed("int8"),
                    (_, _, "TIMESTAMPTZ") => Param::Typed("timestamptz"),
                    _ => Param::FromText(ty.clone()),
                })
                .collect(),
            count_present: format!(
                "SELECT count(*)::int8 FROM {STAGE} s JOIN {t} ON {}",
                on(&t, "s")
            ),
            upsert,
            ncols: cols.len(),
            digest,
        }
    }

    /// `INSERT INTO stage … VALUES (…), (…)` for `rows` rows.
    fn insert(&self, rows: usize) -> String {
        let mut sql = self.insert_head.clone();
        let mut n = 1;
        for r in 0..rows {
            if r > 0 {
                sql.push_str(", ");
            }
            sql.push('(');
            for (c, param) in self.params.iter().enumerate() {
                if c > 0 {
                    sql.push_str(", ");
                }
                match param {
                    Param::Typed(ty) => sql.push_str(&format!("${n}::{ty}")),
                    Param::FromText(ty) => sql.push_str(&format!("CAST(${n}::varchar AS {ty})")),
                }
                n += 1;
            }
            sql.push(')');
        }
        sql
    }
}

fn params<'a>(row: &'a Row, keep_value: bool, digest: bool, out: &mut Vec<&'a (dyn ToSql + Sync)>) {
    out.push(&row.topic);
    out.push(&row.partition);
    out.push(&row.offset);
    out.push(&row.key);
    if keep_value {
        out.push(&row.value);
    }
    out.push(&row.headers);
    out.push(&row.ts as &Option<SystemTime>);
    if digest {
        out.push(&row.digest);
    }
    for m in &row.mapped {
        out.push(m);
    }
}

async fn write_once(
    client: &mut Client,
    config: &RedshiftSinkConfig,
    stmts: &Statements,
    rows: &[Row],
) -> Result<WriteReport, Failure> {
    let tx = client
        .transaction()
        .await
        .map_err(|e| classify(e, "BEGIN"))?;
    tx.batch_execute(&stmts.lock)
        .await
        .map_err(|e| classify(e, "LOCK TABLE"))?;
    tx.batch_execute(&stmts.create_stage)
        .await
        .map_err(|e| classify(e, "creating the staging table"))?;
    let per_insert = (MAX_PARAMS / stmts.ncols).max(1);
    for chunk in rows.chunks(per_insert) {
        let mut p: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(chunk.len() * stmts.ncols);
        for row in chunk {
            params(row, config.keep_value, stmts.digest, &mut p);
        }
        tx.execute(&stmts.insert(chunk.len()), &p)
            .await
            .map_err(|e| classify(e, "staging rows"))?;
    }
    let present: i64 = tx
        .query_one(&stmts.count_present, &[])
        .await
        .map_err(|e| classify(e, "counting rows already present"))?
        .get(0);
    for sql in &stmts.upsert {
        tx.batch_execute(sql)
            .await
            .map_err(|e| classify(e, "MERGE"))?;
    }
    tx.commit().await.map_err(|e| classify(e, "COMMIT"))?;
    let present = u64::try_from(present)
        .unwrap_or_default()
        .min(rows.len() as u64);
    Ok(WriteReport {
        written: rows.len() as u64 - present,
        already_present: present,
    })
}

/// Writes `rows`, isolating records the server refuses.
pub(crate) async fn write_rows(
    client: &mut Client,
    config: &RedshiftSinkConfig,
    stmts: &Statements,
    rows: &[Row],
    batch: &pico_sink::Batch,
) -> Result<(WriteReport, Vec<RejectedRecord>), Failure> {
    let mut plan = Isolator::new(rows.len());
    while let Some((start, end)) = plan.next_range() {
        let attempt = match write_once(client, config, stmts, &rows[start..end]).await {
            Ok(report) => Attempt::Written(report),
            Err(Failure::Data(reason)) => Attempt::Refused(reason),
            Err(other) => return Err(other),
        };
        plan.record(start, end, attempt);
    }
    Ok(plan.finish_rejecting(|i| batch.records()[rows[i].index].id.clone()))
}
