//! [`DorisSinkConfig`].

use std::time::Duration;

use pico_http_common::HttpSettings;
use pico_sink::identity::Scope;

/// Configuration of [`crate::DorisSink`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DorisSinkConfig {
    /// FE HTTP address (`http://127.0.0.1:8030`).
    pub fe_url: String,
    /// Load through this BE HTTP address (`http://be:8040`) instead of following the FE's
    /// redirect.
    pub load_url: Option<String>,
    /// Database.
    pub database: String,
    /// Table.
    pub table: String,
    /// User (basic auth).
    pub user: String,
    /// Password.
    pub password: pico_sink::Secret,
    /// Create the database and a Unique Key table when missing.
    pub create_table: bool,
    /// `replication_num` of a table the sink creates (Doris's default when `None`).
    pub replication_num: Option<u8>,
    /// How long to wait for a load of the same label that is still running.
    pub label_wait: Duration,
    /// Namespace for every identity.
    pub scope: Scope,
    /// Extra headers and timeouts.
    pub http: HttpSettings,
}

impl DorisSinkConfig {
    /// Defaults: user `root` without password, create the table, wait 60 s for a running label.
    pub fn new(
        fe_url: impl Into<String>,
        database: impl Into<String>,
        table: impl Into<String>,
    ) -> Self {
        Self {
            fe_url: fe_url.into(),
            load_url: None,
            database: database.into(),
            table: table.into(),
            user: "root".into(),
            password: pico_sink::Secret::default(),
            create_table: true,
            replication_num: None,
            label_wait: Duration::from_secs(60),
            scope: Scope::default(),
            http: HttpSettings::default(),
        }
    }
}
