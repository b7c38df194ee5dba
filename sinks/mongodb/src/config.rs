//! [`MongoSinkConfig`].

use pico_sink::config::namespace;
use pico_sink::identity::Scope;
use pico_sink::kit::DocumentShape;
use serde::{Deserialize, Serialize};

/// Configuration of [`crate::MongoSink`]. `Debug` redacts the password in `uri`. Read from a
/// file with serde: `uri`, `database` and `collection` are required, the rest defaults as
/// [`MongoSinkConfig::new`] says; an unknown key is refused with its name.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct MongoSinkConfig {
    /// Connection string (`mongodb://…` or `mongodb+srv://…`).
    pub uri: String,
    /// Database.
    pub database: String,
    /// Collection.
    pub collection: String,
    /// Document shape (default `"envelope"`).
    #[serde(default)]
    pub shape: DocumentShape,
    /// Namespace for every identity (`namespace = "cluster-a"`; default: none).
    #[serde(
        rename = "namespace",
        with = "namespace",
        default,
        skip_serializing_if = "namespace::is_unset"
    )]
    pub scope: Scope,
    /// Ask for `w: "majority"` on every write, otherwise the connection string's default
    /// (default `true`).
    #[serde(default = "majority")]
    pub majority: bool,
    /// Statements per `update` command (default 1000).
    #[serde(default = "max_statements")]
    pub max_statements: usize,
}

/// The default of [`MongoSinkConfig::majority`].
fn majority() -> bool {
    true
}

/// The default of [`MongoSinkConfig::max_statements`].
fn max_statements() -> usize {
    1000
}

impl std::fmt::Debug for MongoSinkConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MongoSinkConfig")
            .field("uri", &pico_sink::kit::redact_url(&self.uri))
            .field("database", &self.database)
            .field("collection", &self.collection)
            .field("shape", &self.shape)
            .field("scope", &self.scope)
            .field("majority", &self.majority)
            .field("max_statements", &self.max_statements)
            .finish()
    }
}

impl MongoSinkConfig {
    /// Defaults: envelope documents, majority write concern, 1000 statements per command.
    pub fn new(
        uri: impl Into<String>,
        database: impl Into<String>,
        collection: impl Into<String>,
    ) -> Self {
        Self {
            uri: uri.into(),
            database: database.into(),
            collection: collection.into(),
            shape: DocumentShape::default(),
            scope: Scope::default(),
            majority: majority(),
            max_statements: max_statements(),
        }
    }

    /// The same defaults without a connection string, for [`crate::MongoSink::with_client`]:
    /// the client knows the deployment.
    pub fn for_collection(database: impl Into<String>, collection: impl Into<String>) -> Self {
        Self::new("", database, collection)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pico_sink::config::checks::file_form;

    #[test]
    fn reads_from_toml_with_defaults_and_refuses_unknown_keys() {
        let text = "uri = \"mongodb://u:pw@db:27017\"\ndatabase = \"d\"\ncollection = \"c\"\n";
        let full = format!(
            "{text}shape = \"merged\"\nnamespace = \"east\"\nmajority = false\n\
             max_statements = 10\n"
        );
        let new = MongoSinkConfig::new("mongodb://u:pw@db:27017", "d", "c");
        let typo = format!("{text}majorty = true\n");
        let read = file_form(text, &new, &full, &[(&typo, "majorty")]);
        assert_eq!(read.shape, DocumentShape::Merged);
        assert_eq!(read.scope.namespace().unwrap().as_str(), "east");
        assert!(!read.majority);
        assert_eq!(read.max_statements, 10);
    }
}
