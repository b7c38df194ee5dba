//! [`ClickHouseSinkConfig`].

use std::time::Duration;

use pico_sink::config::{millis, namespace};
use pico_sink::identity::Scope;
use pico_sink::kit::Secret;
use serde::{Deserialize, Serialize};

/// Configuration of [`crate::ClickHouseSink`]. `Debug` never prints the password. Read from a
/// file with serde: `url`, `database` and `table` are required, the rest defaults as
/// [`ClickHouseSinkConfig::new`] says; an unknown key is refused with its name.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ClickHouseSinkConfig {
    /// HTTP interface (`http://127.0.0.1:8123`).
    pub url: String,
    /// Database.
    pub database: String,
    /// Table.
    pub table: String,
    /// User and password, if any; in a file `credentials = { user = "…", password = "…" }`
    /// (default: none).
    #[serde(
        with = "pico_sink::config::user_password",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub credentials: Option<(String, Secret)>,
    /// Create the database and table at `open` when missing (default `true`).
    #[serde(default = "create_if_missing")]
    pub create_if_missing: bool,
    /// Namespace qualifying `pico_topic` (`namespace = "cluster-a"`; default: none).
    #[serde(
        rename = "namespace",
        with = "namespace",
        default,
        skip_serializing_if = "namespace::is_unset"
    )]
    pub scope: Scope,
    /// Request timeout (`request_timeout_ms`, default 30 000).
    #[serde(
        rename = "request_timeout_ms",
        with = "millis",
        default = "request_timeout"
    )]
    pub request_timeout: Duration,
    /// `non_replicated_deduplication_window` for tables the sink creates on servers with
    /// deduplication tokens (default 1000).
    #[serde(default = "deduplication_window")]
    pub deduplication_window: u32,
    /// JSON payload fields written to their own columns (`sql_type` is a ClickHouse type; the
    /// sink creates them `Nullable`). A value ClickHouse cannot parse rejects its record.
    /// Default: none.
    #[serde(default)]
    pub mapped_columns: Vec<pico_sink::kit::MappedColumn>,
}

/// The default of [`ClickHouseSinkConfig::create_if_missing`].
fn create_if_missing() -> bool {
    true
}

/// The default of [`ClickHouseSinkConfig::request_timeout`].
fn request_timeout() -> Duration {
    Duration::from_secs(30)
}

/// The default of [`ClickHouseSinkConfig::deduplication_window`].
fn deduplication_window() -> u32 {
    1000
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
            create_if_missing: create_if_missing(),
            scope: Scope::default(),
            request_timeout: request_timeout(),
            deduplication_window: deduplication_window(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use pico_sink::config::checks::file_form;

    #[test]
    fn reads_from_toml_with_defaults_and_refuses_unknown_keys() {
        let text = "url = \"http://ch:8123\"\ndatabase = \"d\"\ntable = \"t\"\n";
        let full = format!(
            "{text}create_if_missing = false\nnamespace = \"east\"\nrequest_timeout_ms = 800\n\
             deduplication_window = 50\ncredentials = {{ user = \"u\", password = \"hunt3r\" }}\n\
             mapped_columns = [{{ column = \"v\", field = \"v\", sql_type = \"Int64\" }}]\n"
        );
        let new = ClickHouseSinkConfig::new("http://ch:8123", "d", "t");
        let typo = format!("{text}dedup_window = 1\n");
        let read = file_form(text, &new, &full, &[(&typo, "dedup_window")]);
        assert!(!read.create_if_missing);
        assert_eq!(read.scope.namespace().unwrap().as_str(), "east");
        assert_eq!(read.request_timeout, Duration::from_millis(800));
        assert_eq!(read.deduplication_window, 50);
        assert_eq!(read.credentials.as_ref().unwrap().1.expose(), "hunt3r");
        assert_eq!(read.mapped_columns[0].sql_type, "Int64");
        assert!(!format!("{read:?}").contains("hunt3r"), "Debug must redact");
    }
}
