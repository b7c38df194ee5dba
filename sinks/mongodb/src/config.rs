//! [`MongoSinkConfig`].

use pico_sink::DocumentShape;
use pico_sink::identity::Scope;

/// Configuration of [`crate::MongoSink`]. `Debug` redacts the password in `uri`.
#[derive(Clone)]
#[non_exhaustive]
pub struct MongoSinkConfig {
    /// Connection string (`mongodb://…` or `mongodb+srv://…`).
    pub uri: String,
    /// Database.
    pub database: String,
    /// Collection.
    pub collection: String,
    /// Document shape.
    pub shape: DocumentShape,
    /// Namespace for every identity.
    pub scope: Scope,
    /// Ask for `w: "majority"` on every write (otherwise the connection string's default).
    pub majority: bool,
    /// Statements per `update` command.
    pub max_statements: usize,
}

impl std::fmt::Debug for MongoSinkConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MongoSinkConfig")
            .field("uri", &pico_sink::redact_url(&self.uri))
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
            shape: DocumentShape::Envelope,
            scope: Scope::default(),
            majority: true,
            max_statements: 1000,
        }
    }

    /// The same defaults without a connection string, for [`crate::MongoSink::with_client`]:
    /// the client knows the deployment.
    pub fn for_collection(database: impl Into<String>, collection: impl Into<String>) -> Self {
        Self::new("", database, collection)
    }
}
