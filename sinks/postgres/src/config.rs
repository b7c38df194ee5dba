//! [`PostgresSinkConfig`].

use pico_pg_common::{ConflictAction, ConnectionConfig, MappedColumn, QualifiedTable};
use pico_sink::config::namespace;
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

/// Configuration of [`crate::PostgresSink`]. Read from a file with serde: `connection` (with
/// its `url`) and `table` are required, the rest defaults as [`PostgresSinkConfig::new`] says;
/// an unknown key is refused with its name.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PostgresSinkConfig {
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
    /// Type of the `value` column (default `"jsonb"`).
    #[serde(default)]
    pub value_column: ValueColumn,
    /// Keep the whole payload in `value` (false: only the mapped columns; requires some;
    /// default `true`).
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
    /// Upserts (replays, and first writes with mapped columns) of at least this many records
    /// stage with binary COPY, smaller ones use one `unnest` INSERT; the crossover measured by
    /// `pico-bench postgres` is about 1 000 records (default 1 000). First writes without
    /// mapped columns COPY straight into the table at any size.
    #[serde(default = "copy_threshold")]
    pub copy_threshold: usize,
}

/// The default of the switches that are on unless turned off.
fn yes() -> bool {
    true
}

/// The default of [`PostgresSinkConfig::copy_threshold`].
fn copy_threshold() -> usize {
    1000
}

impl PostgresSinkConfig {
    /// `table` is `orders` (in `public`) or `schema.orders`. Defaults: create if missing, update
    /// on conflict, jsonb values.
    pub fn new(url: impl Into<String>, table: impl Into<String>) -> Self {
        Self {
            connection: ConnectionConfig::new(url),
            table: QualifiedTable::parse(&table.into()),
            create_if_missing: yes(),
            conflict: ConflictAction::default(),
            value_column: ValueColumn::default(),
            keep_value: yes(),
            mapped_columns: Vec::new(),
            scope: Scope::default(),
            copy_threshold: copy_threshold(),
        }
    }

    /// The same defaults without a connection URL, for [`crate::PostgresSink::with_pool`]: the
    /// pool knows the server.
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
        let text = "table = \"sales.orders\"\n[connection]\nurl = \"postgres://u:pw@db/d\"\n";
        let full = "table = { schema = \"s\", table = \"t.x\" }\ncreate_if_missing = false\n\
                    on_changed = \"reject\"\nvalue_column = \"bytea\"\nkeep_value = false\n\
                    namespace = \"east\"\ncopy_threshold = 10\n\
                    mapped_columns = [{ column = \"v\", field = \"/a\", sql_type = \"bigint\" }]\n\
                    [connection]\nurl = \"postgres://db/d\"\npool_size = 8\n\
                    connect_timeout_ms = 250\ntls_ca_file = \"/ca.pem\"\n";
        let new = PostgresSinkConfig::new("postgres://u:pw@db/d", "sales.orders");
        let refused = [
            (
                "copy_treshold = 1\ntable = \"t\"\n[connection]\nurl = \"x\"\n",
                "copy_treshold",
            ),
            (
                "table = \"t\"\n[connection]\nurl = \"x\"\npoolsize = 1\n",
                "poolsize",
            ),
        ];
        let read = file_form(text, &new, full, &refused);
        assert_eq!(read.table, QualifiedTable::new("s", "t.x"));
        assert!(!read.create_if_missing && !read.keep_value);
        assert_eq!(read.conflict, ConflictAction::Reject);
        assert_eq!(read.value_column, ValueColumn::Bytea);
        assert_eq!(read.scope.namespace().unwrap().as_str(), "east");
        assert_eq!(read.copy_threshold, 10);
        assert_eq!(read.mapped_columns[0].field, "/a");
        assert_eq!(read.connection.pool_size, 8);
        assert_eq!(
            read.connection.connect_timeout,
            std::time::Duration::from_millis(250)
        );
    }
}
