//! [`MongoSinkConfig`].

use pico_sink::DocumentShape;
use pico_sink::identity::Scope;

/// Configuration of [`crate::MongoSink`].
#[derive(Debug, Clone)]
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
}
