//! [`ElasticsearchSinkConfig`].

use pico_http_common::HttpSettings;
use pico_sink::DocumentShape;
use pico_sink::identity::Scope;

/// Which bulk operation carries documents.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IndexMode {
    /// `index`: create or replace by `_id` (regular indices).
    #[default]
    Index,
    /// `create` with 409 = already written (data streams; needs `@timestamp`).
    DataStream,
}

/// The bulk `refresh` parameter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Refresh {
    /// Leave visibility to the index's refresh interval (fastest).
    #[default]
    None,
    /// Answer after a refresh made the documents searchable.
    WaitFor,
    /// Refresh the affected shards at once (expensive).
    Immediate,
}

impl Refresh {
    pub(crate) fn param(self) -> &'static str {
        match self {
            Refresh::None => "false",
            Refresh::WaitFor => "wait_for",
            Refresh::Immediate => "true",
        }
    }
}

/// Configuration of [`crate::ElasticsearchSink`]. `Debug` redacts credential headers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ElasticsearchSinkConfig {
    /// Base URL (`http://127.0.0.1:9200`).
    pub url: String,
    /// Index or data stream name.
    pub index: String,
    /// `index` or data-stream `create`.
    pub mode: IndexMode,
    /// Document shape (envelope, or the value's fields merged with the identity).
    pub shape: DocumentShape,
    /// Namespace for every identity.
    pub scope: Scope,
    /// When documents become searchable.
    pub refresh: Refresh,
    /// Upper bound for one bulk request body; a batch is sent in several requests above it.
    pub max_bulk_bytes: usize,
    /// Headers (e.g. `Authorization: ApiKey …`) and timeouts.
    pub http: HttpSettings,
}

impl ElasticsearchSinkConfig {
    /// Defaults: index mode, envelope documents, no forced refresh, 8 MiB bulk requests.
    pub fn new(url: impl Into<String>, index: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            index: index.into(),
            mode: IndexMode::Index,
            shape: DocumentShape::Envelope,
            scope: Scope::default(),
            refresh: Refresh::None,
            max_bulk_bytes: 8 << 20,
            http: HttpSettings::default(),
        }
    }
}
