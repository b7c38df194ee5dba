//! Creating the table, and checking an existing one has the columns the sink writes.

use pico_pg_common::{NameUse, classify, quote_ident};
use pico_sink::SinkError;
use pico_sink::identity::columns;
use tokio_postgres::Client;

use crate::config::{Dialect, RedshiftSinkConfig};
use crate::rows::{TOPIC_MAX, VARCHAR_MAX};

/// `(column, type)` in table order; `pico_digest` (when the table has it) before the mapped
/// columns.
pub(crate) fn table_columns(config: &RedshiftSinkConfig, digest: bool) -> Vec<(String, String)> {
    let text = format!("VARCHAR({VARCHAR_MAX})");
    let named = |name: &str, ty: &str| (name.to_owned(), ty.to_owned());
    let mut cols = vec![
        named(columns::TOPIC, &format!("VARCHAR({TOPIC_MAX})")),
        named(columns::PARTITION, "INTEGER"),
        named(columns::OFFSET, "BIGINT"),
        named(columns::RECORD_KEY, &text),
    ];
    if config.keep_value {
        cols.push(named(columns::VALUE, &text));
    }
    cols.push(named(columns::HEADERS, &text));
    cols.push(named(columns::TIMESTAMP, "TIMESTAMPTZ"));
    if digest {
        cols.push(named(columns::DIGEST, "BIGINT"));
    }
    for m in &config.mapped_columns {
        cols.push((m.column.clone(), m.sql_type.clone()));
    }
    cols
}

fn create_table_sql(config: &RedshiftSinkConfig) -> String {
    let mut defs: Vec<String> = table_columns(config, true)
        .iter()
        .map(|(n, t)| {
            let not_null = if columns::KEY.contains(&n.as_str()) {
                " NOT NULL"
            } else {
                ""
            };
            format!("{} {t}{not_null}", quote_ident(n))
        })
        .collect();
    let key = columns::KEY.join(", ");
    match config.dialect {
        Dialect::Redshift => {
            // Informational only: Redshift does not enforce it.
            defs.push(format!("PRIMARY KEY ({key})"));
            format!(
                "CREATE TABLE IF NOT EXISTS {} ({}) SORTKEY ({key})",
                config.table,
                defs.join(", ")
            )
        }
        // No key at all: only the sink's MERGE keeps duplicates out, as on Redshift.
        Dialect::PostgresStandIn => format!(
            "CREATE TABLE IF NOT EXISTS {} ({})",
            config.table,
            defs.join(", ")
        ),
    }
}

async fn existing(client: &Client, config: &RedshiftSinkConfig) -> Result<Vec<String>, SinkError> {
    let rows = client
        .query(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = $1 AND table_name = $2",
            &[&config.table.schema, &config.table.table],
        )
        .await
        .map_err(|e| classify(e, "reading the table's columns").into_sink_error())?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Creates the table if allowed and missing; checks the columns otherwise. Returns whether it
/// has `pico_digest` (tables of earlier versions lack it: no replay fast path there).
pub(crate) async fn ensure_table(
    client: &Client,
    config: &RedshiftSinkConfig,
) -> Result<bool, SinkError> {
    NameUse::of(client, &config.table)
        .await?
        .check(&config.table)?;
    let mut have = existing(client, config).await?;
    if have.is_empty() {
        if !config.create_if_missing {
            return Err(SinkError::fatal(format!(
                "table {} does not exist: create it (see the crate docs for its columns) or set create_if_missing = true",
                config.table
            )));
        }
        let ddl = format!(
            "CREATE SCHEMA IF NOT EXISTS {}; {}",
            quote_ident(&config.table.schema),
            create_table_sql(config)
        );
        let created = client.batch_execute(&ddl).await;
        have = existing(client, config).await?;
        if let (Err(e), true) = (created, have.is_empty()) {
            return Err(classify(e, "creating the table").into_sink_error());
        }
    }
    let missing: Vec<(String, String)> = table_columns(config, false)
        .into_iter()
        .filter(|(n, _)| !have.contains(n))
        .collect();
    if missing.is_empty() {
        Ok(have.iter().any(|n| n == columns::DIGEST))
    } else {
        let t = &config.table;
        let names: Vec<&str> = missing.iter().map(|(n, _)| n.as_str()).collect();
        let alters: Vec<String> = missing
            .iter()
            .map(|(n, ty)| format!("ALTER TABLE {t} ADD COLUMN {} {ty};", quote_ident(n)))
            .collect();
        Err(SinkError::fatal(format!(
            "table {t} exists without columns the sink writes ({}): add them ({}) or name a \
             table of the sink's own, which it creates",
            names.join(", "),
            alters.join(" ")
        )))
    }
}
