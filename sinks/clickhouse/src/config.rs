//! [`ClickHouseSinkConfig`].

use std::time::Duration;

use pico_sink::Secret;
use pico_sink::identity::Scope;
use serde::{Deserialize, Serialize};

/// Configuration of [`crate::ClickHouseSink`]. `Debug` never prints the password.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ClickHouseSinkConfig {
    /// HTTP interface (`http://127.0.0.1:8123`).
    pub url: String,
    /// Database.
    pub database: String,
    /// Table.
    pub table: String,
    /// User and password, if any.
    pub credentials: Option<(String, Secret)>,
    /// Create the database and table at `open` when missing.
    pub create_if_missing: bool,
    /// Namespace qualifying `pico_topic`.
    pub scope: Scope,
    /// Request timeout.
    pub request_timeout: Duration,
    /// `non_replicated_deduplication_window` for tables the sink creates on servers with
    /// deduplication tokens.
    pub deduplication_window: u32,
    /// JSON payload fields written to their own columns (`sql_type` is a ClickHouse type; the
    /// sink creates them `Nullable`). A value ClickHouse cannot parse rejects its record.
    pub mapped_columns: Vec<pico_sink::MappedColumn>,
}

impl ClickHouseSinkConfig {
    /// Defaults: create if missing, 30 s requests, a dedup window of 1000 inserts.
    pub fn new(
        url: impl Into<String>,
        database: impl Into<String>,
        table: impl Into<String>,
    ) -> Self {
        Self {
            url: url.into(),
            database: database.into(),
            table: table.into(),
            credentials: None,
            create_if_missing: true,
            scope: Scope::default(),
            request_timeout: Duration::from_secs(30),
            deduplication_window: 1000,
            mapped_columns: Vec::new(),
        }
    }

    /// The same defaults without a URL or credentials, for
    /// [`crate::ClickHouseSink::with_client`]: the client knows the server.
    pub fn for_table(database: impl Into<String>, table: impl Into<String>) -> Self {
        Self::new("", database, table)
    }

    /// `` `db`.`table` ``.
    pub(crate) fn qualified(&self) -> String {
        format!("{}.{}", ident(&self.database), ident(&self.table))
    }
}

/// A backquoted identifier.
pub(crate) fn ident(name: &str) -> String {
    format!("`{}`", name.replace('\\', "\\\\").replace('`', "\\`"))
}
