//! [`RedshiftSinkConfig`].

use pico_pg_common::{ConflictAction, ConnectionConfig, MappedColumn, QualifiedTable};
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

/// Configuration of [`crate::RedshiftSink`]; the same shape as the Postgres sink's.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RedshiftSinkConfig {
    /// Server and pool.
    pub connection: ConnectionConfig,
    /// Target table.
    pub table: QualifiedTable,
    /// Create the schema and table at `open` when missing.
    pub create_if_missing: bool,
    /// On an existing key: overwrite, keep, or reject a record whose payload differs from the
    /// row's (`on_changed` in a configuration file is the same setting).
    #[serde(alias = "on_changed")]
    pub conflict: ConflictAction,
    /// Keep the whole payload in `value` (false: only the mapped columns).
    pub keep_value: bool,
    /// Payload fields written to their own columns.
    pub mapped_columns: Vec<MappedColumn>,
    /// Namespace that qualifies `pico_topic`.
    pub scope: Scope,
    /// Statement dialect.
    pub dialect: Dialect,
    /// MERGE or DELETE + INSERT.
    pub strategy: UpsertStrategy,
}

impl RedshiftSinkConfig {
    /// `table` is `orders` (in `public`) or `schema.orders`. Defaults: create if missing, update
    /// on conflict, MERGE, Redshift DDL.
    pub fn new(url: impl Into<String>, table: impl Into<String>) -> Self {
        Self {
            connection: ConnectionConfig::new(url),
            table: QualifiedTable::parse(&table.into()),
            create_if_missing: true,
            conflict: ConflictAction::Update,
            keep_value: true,
            mapped_columns: Vec::new(),
            scope: Scope::default(),
            dialect: Dialect::Redshift,
            strategy: UpsertStrategy::Merge,
        }
    }

    /// The same defaults without a connection URL, for [`crate::RedshiftSink::with_pool`]: the
    /// pool knows the cluster.
    pub fn for_table(table: impl Into<String>) -> Self {
        Self::new("", table)
    }
}
