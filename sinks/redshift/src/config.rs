//! [`RedshiftSinkConfig`].

use pico_pg_common::{ConflictAction, ConnectionConfig, MappedColumn, QualifiedTable};
use pico_sink::config::namespace;
use pico_sink::identity::Scope;
use serde::{Deserialize, Serialize};

/// The server the statements are written for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dialect {
    /// Amazon Redshift: `SORTKEY` and an informational primary key in the DDL.
    #[default]
    Redshift,
    /// PostgreSQL standing in for Redshift (tests): no primary key, no `SORTKEY`.
    PostgresStandIn,
}

/// How staged rows reach the target.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UpsertStrategy {
    /// `MERGE INTO … USING stage … WHEN MATCHED UPDATE WHEN NOT MATCHED INSERT`.
    #[default]
    Merge,
    /// `DELETE FROM target USING stage …` then `INSERT … SELECT` (clusters without MERGE).
    DeleteInsert,
}

/// Configuration of [`crate::RedshiftSink`]; the same shape as the Postgres sink's. Read from a
/// file with serde: `connection` (with its `url`) and `table` are required, the rest defaults
/// as [`RedshiftSinkConfig::new`] says; an unknown key is refused with its name.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RedshiftSinkConfig {
    /// Server and pool.
    pub connection: ConnectionConfig,
    /// Target table (`"orders"` is `public.orders`, or `"schema.orders"`).
    pub table: QualifiedTable,
    /// Create the schema and table at `open` when missing (default `true`).
    #[serde(default = "yes")]
    pub create_if_missing: bool,
    /// On an existing key: overwrite, keep, or reject a record whose payload differs from the
    /// row's (`on_changed` in a configuration file is the same setting; default `"update"`).
    #[serde(default, alias = "on_changed")]
    pub conflict: ConflictAction,
    /// Keep the whole payload in `value` (false: only the mapped columns; default `true`).
    #[serde(default = "yes")]
    pub keep_value: bool,
    /// Payload fields written to their own columns (default: none).
    #[serde(default)]
    pub mapped_columns: Vec<MappedColumn>,
    /// Namespace that qualifies `pico_topic` (`namespace = "cluster-a"`; default: none).
    #[serde(
        rename = "namespace",
        with = "namespace",
        default,
        skip_serializing_if = "namespace::is_unset"
    )]
    pub scope: Scope,
    /// Statement dialect (default `"redshift"`).
    #[serde(default)]
    pub dialect: Dialect,
    /// MERGE or DELETE + INSERT (default `"merge"`).
    #[serde(default)]
    pub strategy: UpsertStrategy,
}

/// The default of the switches that are on unless turned off.
fn yes() -> bool {
    true
}

impl RedshiftSinkConfig {
    /// `table` is `orders` (in `public`) or `schema.orders`. Defaults: create if missing, update
    /// on conflict, MERGE, Redshift DDL.
    pub fn new(url: impl Into<String>, table: impl Into<String>) -> Self {
        Self {
            connection: ConnectionConfig::new(url),
            table: QualifiedTable::parse(&table.into()),
            create_if_missing: yes(),
            conflict: ConflictAction::default(),
            keep_value: yes(),
            mapped_columns: Vec::new(),
            scope: Scope::default(),
            dialect: Dialect::default(),
            strategy: UpsertStrategy::default(),
        }
    }

    /// The same defaults without a connection URL, for [`crate::RedshiftSink::with_pool`]: the
    /// pool knows the cluster.
    pub fn for_table(table: impl Into<String>) -> Self {
        Self::new("", table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pico_sink::config::checks::file_form;

    #[test]
    fn reads_from_toml_with_defaults_and_refuses_unknown_keys() {
        let text = "table = \"orders\"\n[connection]\nurl = \"postgres://u:pw@rs/d\"\n";
        let full = "table = \"s.t\"\nconflict = \"keep\"\nnamespace = \"east\"\n\
                    dialect = \"postgres-stand-in\"\nstrategy = \"delete-insert\"\n\
                    [connection]\nurl = \"postgres://rs/d\"\n";
        let new = RedshiftSinkConfig::new("postgres://u:pw@rs/d", "orders");
        let typo = format!("stratgy = \"merge\"\n{text}");
        let read = file_form(text, &new, full, &[(&typo, "stratgy")]);
        assert_eq!(read.table, QualifiedTable::new("s", "t"));
        assert_eq!(read.conflict, ConflictAction::Nothing);
        assert_eq!(read.scope.namespace().unwrap().as_str(), "east");
        assert_eq!(read.dialect, Dialect::PostgresStandIn);
        assert_eq!(read.strategy, UpsertStrategy::DeleteInsert);
    }
}
