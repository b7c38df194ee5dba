//! [`DorisSinkConfig`].

use std::time::Duration;

use pico_http_common::HttpSettings;
use pico_sink::config::{millis, namespace};
use pico_sink::identity::Scope;
use serde::{Deserialize, Serialize};

/// Configuration of [`crate::DorisSink`]. Read from a file with serde: `fe_url`, `database`
/// and `table` are required, the rest defaults as [`DorisSinkConfig::new`] says; an unknown key
/// is refused with its name.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct DorisSinkConfig {
    /// FE HTTP address (`http://127.0.0.1:8030`).
    pub fe_url: String,
    /// Load through this BE HTTP address (`http://be:8040`) instead of following the FE's
    /// redirect (default: follow the redirect).
    #[serde(default)]
    pub load_url: Option<String>,
    /// Database.
    pub database: String,
    /// Table.
    pub table: String,
    /// User, for basic auth (default `"root"`).
    #[serde(default = "user")]
    pub user: String,
    /// Password (default: empty).
    #[serde(default)]
    pub password: pico_sink::kit::Secret,
    /// Create the database and a Unique Key table when missing (default `true`).
    #[serde(default = "create_table")]
    pub create_table: bool,
    /// `replication_num` of a table the sink creates (default: Doris's own).
    #[serde(default)]
    pub replication_num: Option<u8>,
    /// How long to wait for a load of the same label that is still running (`label_wait_ms`,
    /// default 60 000).
    #[serde(rename = "label_wait_ms", with = "millis", default = "label_wait")]
    pub label_wait: Duration,
    /// Namespace for every identity (`namespace = "cluster-a"`; default: none).
    #[serde(
        rename = "namespace",
        with = "namespace",
        default,
        skip_serializing_if = "namespace::is_unset"
    )]
    pub scope: Scope,
    /// Extra headers and timeouts (default: the shared [`HttpSettings`]).
    #[serde(default)]
    pub http: HttpSettings,
}

/// The default of [`DorisSinkConfig::user`].
fn user() -> String {
    "root".into()
}

/// The default of [`DorisSinkConfig::create_table`].
fn create_table() -> bool {
    true
}

/// The default of [`DorisSinkConfig::label_wait`].
fn label_wait() -> Duration {
    Duration::from_secs(60)
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
            user: user(),
            password: pico_sink::kit::Secret::default(),
            create_table: create_table(),
            replication_num: None,
            label_wait: label_wait(),
            scope: Scope::default(),
            http: HttpSettings::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pico_sink::config::checks::file_form;

    #[test]
    fn reads_from_toml_with_defaults_and_refuses_unknown_keys() {
        let text = "fe_url = \"http://fe:8030\"\ndatabase = \"d\"\ntable = \"t\"\n";
        let full = format!(
            "{text}load_url = \"http://be:8040\"\nuser = \"loader\"\npassword = \"pw9\"\n\
             create_table = false\nreplication_num = 1\nlabel_wait_ms = 500\n\
             namespace = \"east\"\n"
        );
        let new = DorisSinkConfig::new("http://fe:8030", "d", "t");
        let typo = format!("{text}pasword = \"x\"\n");
        let read = file_form(text, &new, &full, &[(&typo, "pasword")]);
        assert_eq!(read.load_url.as_deref(), Some("http://be:8040"));
        assert_eq!(read.user, "loader");
        assert_eq!(read.password.expose(), "pw9");
        assert!(
            !format!("{read:?}").contains("pw9"),
            "Debug must redact the password"
        );
        assert!(!read.create_table);
        assert_eq!(read.replication_num, Some(1));
        assert_eq!(read.label_wait, Duration::from_millis(500));
        assert_eq!(read.scope.namespace().unwrap().as_str(), "east");
    }
}
