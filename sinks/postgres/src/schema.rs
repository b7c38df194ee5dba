//! Creating the table, and checking an existing one has the shape the sink writes.

use pico_pg_common::{Failure, NameUse, classify, quote_ident, quote_literal};
use pico_sink::SinkError;
use pico_sink::identity::columns;
use tokio_postgres::Client;

use crate::config::PostgresSinkConfig;

/// A column the sink writes: its name, the `udt_name` an existing table must give it (none for
/// mapped columns, whose type is the user's), and its type in `CREATE`/`ALTER TABLE`.
struct Expected<'a> {
    name: &'a str,
    udt: Option<&'a str>,
    ddl: &'a str,
}

fn expected_columns(config: &PostgresSinkConfig) -> Vec<Expected<'_>> {
    let fixed = |name, udt| Expected {
        name,
        udt: Some(udt),
        ddl: udt,
    };
    let mut cols = vec![
        fixed(columns::TOPIC, "text"),
        fixed(columns::PARTITION, "int4"),
        fixed(columns::OFFSET, "int8"),
        fixed(columns::RECORD_KEY, "bytea"),
    ];
    if config.keep_value {
        cols.push(fixed(columns::VALUE, config.value_column.sql_type()));
    }
    cols.push(fixed(columns::HEADERS, "jsonb"));
    cols.push(fixed(columns::TIMESTAMP, "timestamptz"));
    for m in &config.mapped_columns {
        cols.push(Expected {
            name: m.column.as_str(),
            udt: None,
            ddl: m.sql_type.as_str(),
        });
    }
    cols
}

/// `CREATE TABLE` for the configuration: the columns it writes, then `pico_digest`, keyed on
/// the identity.
pub(crate) fn create_table_sql(config: &PostgresSinkConfig) -> String {
    let mut cols: Vec<String> = expected_columns(config)
        .iter()
        .map(|c| {
            let not_null = if columns::KEY.contains(&c.name) {
                " NOT NULL"
            } else {
                ""
            };
            format!("{} {}{not_null}", quote_ident(c.name), c.ddl)
        })
        .collect();
    cols.push(format!("{} int8", columns::DIGEST));
    cols.push(format!("PRIMARY KEY ({})", columns::KEY.join(", ")));
    format!(
        "CREATE TABLE IF NOT EXISTS {} ({})",
        config.table,
        cols.join(", ")
    )
}

fn fatal(f: Failure) -> SinkError {
    f.into_sink_error()
}

async fn existing_columns(
    client: &Client,
    config: &PostgresSinkConfig,
) -> Result<Vec<(String, String)>, SinkError> {
    let rows = client
        .query(
            "SELECT column_name::text, udt_name::text FROM information_schema.columns \
             WHERE table_schema = $1 AND table_name = $2",
            &[&config.table.schema, &config.table.table],
        )
        .await
        .map_err(|e| fatal(classify(e, "reading the table's columns")))?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// `Fatal` when an existing table lacks a column the sink writes or gives one another type,
/// with the statements that add the missing ones and, for a value column of another type, the
/// setting that matches it.
fn shape_problems(
    config: &PostgresSinkConfig,
    existing: &[(String, String)],
) -> Result<(), SinkError> {
    let t = &config.table;
    let mut problems = Vec::new();
    let mut fixes = Vec::new();
    for col in expected_columns(config) {
        match existing.iter().find(|(n, _)| n == col.name) {
            None => {
                problems.push(format!("column {} is missing", col.name));
                fixes.push(format!(
                    "ALTER TABLE {t} ADD COLUMN {} {};",
                    quote_ident(col.name),
                    col.ddl
                ));
            }
            Some((_, actual)) => {
                if let Some(udt) = col.udt.filter(|u| u != actual) {
                    problems.push(format!(
                        "column {} is {actual}, the sink writes {udt}",
                        col.name
                    ));
                    let setting = match actual.as_str() {
                        "jsonb" => Some("Jsonb"),
                        "bytea" => Some("Bytea"),
                        _ => None,
                    };
                    if let (true, Some(variant)) = (col.name == columns::VALUE, setting) {
                        fixes.push(format!(
                            "set value_column = \"{actual}\" (ValueColumn::{variant}) to write the table's value column as it is;"
                        ));
                    }
                }
            }
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    fixes.push("or name a table of the sink's own, which it creates".into());
    Err(SinkError::fatal(format!(
        "table {t} exists with another shape than the sink writes: {}. To change: {}",
        problems.join("; "),
        fixes.join(" ")
    )))
}

/// Creates the table if allowed and missing; checks columns and the unique key otherwise.
/// Returns whether the table has the `pico_digest` column (tables created by earlier versions
/// lack it: they work, without the replay fast path).
pub(crate) async fn ensure_table(
    client: &Client,
    config: &PostgresSinkConfig,
) -> Result<bool, SinkError> {
    NameUse::of(client, &config.table)
        .await?
        .check(&config.table)?;
    let mut existing = existing_columns(client, config).await?;
    if existing.is_empty() {
        if !config.create_if_missing {
            return Err(SinkError::fatal(format!(
                "table {} does not exist: create it (see the crate docs for its shape) or set create_if_missing = true",
                config.table
            )));
        }
        let ddl = format!(
            "CREATE SCHEMA IF NOT EXISTS {}; {}",
            quote_ident(&config.table.schema),
            create_table_sql(config)
        );
        if let Err(e) = client.batch_execute(&ddl).await {
            // Two sinks creating the same table at once: one loses the catalog race; fine if
            // the table now exists.
            existing = existing_columns(client, config).await?;
            if existing.is_empty() {
                return Err(fatal(classify(e, "creating the table")));
            }
        } else {
            existing = existing_columns(client, config).await?;
        }
    }
    shape_problems(config, &existing)?;
    let unique: i64 = client
        .query_one(
            &format!(
                "SELECT count(*) FROM pg_index i \
                 WHERE i.indrelid = {}::regclass AND i.indisunique AND i.indpred IS NULL \
                 AND i.indexprs IS NULL AND i.indnatts = 3 \
                 AND (SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_attribute a \
                      WHERE a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)) \
                     = ARRAY[{}]",
                quote_literal(&config.table.to_string()),
                sorted_key_literals()
            ),
            &[],
        )
        .await
        .map_err(|e| fatal(classify(e, "reading the table's unique keys")))?
        .get(0);
    if unique == 0 {
        return Err(SinkError::fatal(format!(
            "table {t} has no unique key on ({k}), which ON CONFLICT needs: \
             ALTER TABLE {t} ADD PRIMARY KEY ({k})",
            t = config.table,
            k = columns::KEY.join(", ")
        )));
    }
    Ok(existing
        .iter()
        .any(|(n, udt)| n == columns::DIGEST && udt == "int8"))
}

/// The key columns as SQL literals in name order, as `array_agg(… ORDER BY attname)` lists
/// them.
fn sorted_key_literals() -> String {
    let mut key = columns::KEY;
    key.sort_unstable();
    key.map(quote_literal).join(", ")
}
