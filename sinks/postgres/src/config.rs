//! [`PostgresSinkConfig`].

use pico_pg_common::{ConflictAction, ConnectionConfig, MappedColumn, QualifiedTable};
use pico_sink::identity::Scope;
use serde::{Deserialize, Serialize};

/// Type of the `value` column.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ValueColumn {
    /// `jsonb`: values must be JSON (others are rejected).
    #[default]
    Jsonb,
    /// `bytea`: any bytes.
    Bytea,
}

impl ValueColumn {
    /// The SQL type.
    pub fn sql_type(self) -> &'static str {
        match self {
            ValueColumn::Jsonb => "jsonb",
            ValueColumn::Bytea => "bytea",
        }
    }
}

/// Configuration of [`crate::PostgresSink`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PostgresSinkConfig {
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
    /// Type of the `value` column.
    pub value_column: ValueColumn,
    /// Keep the whole payload in `value` (false: only the mapped columns; requires some).
    pub keep_value: bool,
    /// Payload fields written to their own columns.
    pub mapped_columns: Vec<MappedColumn>,
    /// Namespace that qualifies `pico_topic`.
    pub scope: Scope,
    /// Upserts (replays, and first writes with mapped columns) of at least this many records
    /// stage with binary COPY, smaller ones use one `unnest` INSERT; the crossover measured by
    /// `pico-bench postgres` is about 1 000 records. First writes without mapped columns COPY
    /// straight into the table at any size.
    pub copy_threshold: usize,
}

impl PostgresSinkConfig {
    /// `table` is `orders` (in `public`) or `schema.orders`. Defaults: create if missing, update
    /// on conflict, jsonb values.
    pub fn new(url: impl Into<String>, table: impl Into<String>) -> Self {
        Self {
            connection: ConnectionConfig::new(url),
            table: QualifiedTable::parse(&table.into()),
            create_if_missing: true,
            conflict: ConflictAction::Update,
            value_column: ValueColumn::Jsonb,
            keep_value: true,
            mapped_columns: Vec::new(),
            scope: Scope::default(),
            copy_threshold: 1000,
        }
    }

    /// The same defaults without a connection URL, for [`crate::PostgresSink::with_pool`]: the
    /// pool knows the server.
    pub fn for_table(table: impl Into<String>) -> Self {
        Self::new("", table)
    }
}
