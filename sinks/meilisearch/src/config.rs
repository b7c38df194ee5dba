//! [`MeilisearchSinkConfig`].

use std::time::Duration;

use pico_http_common::HttpSettings;
use pico_sink::DocumentShape;
use pico_sink::identity::Scope;

/// Configuration of [`crate::MeilisearchSink`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct MeilisearchSinkConfig {
    /// Base URL (`http://127.0.0.1:7700`).
    pub url: String,
    /// Index uid (`[A-Za-z0-9_-]`, at most 400 bytes).
    pub index: String,
    /// API key with `documents.add` and `tasks.get`, sent as a bearer token.
    pub api_key: Option<pico_sink::Secret>,
    /// Name of the primary-key field the sink writes.
    pub primary_key: String,
    /// Document shape.
    pub shape: DocumentShape,
    /// Namespace for every identity.
    pub scope: Scope,
    /// How long to wait for one task to finish before `Retryable`.
    pub task_timeout: Duration,
    /// Extra headers and timeouts.
    pub http: HttpSettings,
}

impl MeilisearchSinkConfig {
    /// Defaults: no key, primary key `pico_key`, envelope documents, 120 s task timeout.
    pub fn new(url: impl Into<String>, index: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            index: index.into(),
            api_key: None,
            primary_key: "pico_key".into(),
            shape: DocumentShape::Envelope,
            scope: Scope::default(),
            task_timeout: Duration::from_secs(120),
            http: HttpSettings::default(),
        }
    }
}
