//! [`ElasticsearchSinkConfig`].

use pico_http_common::HttpSettings;
use pico_sink::config::namespace;
use pico_sink::identity::Scope;
use pico_sink::kit::DocumentShape;
use serde::{Deserialize, Serialize};

/// Which bulk operation carries documents; in a file `"index"` or `"data_stream"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexMode {
    /// `index`: create or replace by `_id` (regular indices).
    #[default]
    Index,
    /// `create` with 409 = already written (data streams; needs `@timestamp`).
    DataStream,
}

/// The bulk `refresh` parameter; in a file `"none"`, `"wait_for"` or `"immediate"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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

/// Configuration of [`crate::ElasticsearchSink`]. `Debug` redacts credential headers. Read
/// from a file with serde: `url` and `index` are required, the rest defaults as
/// [`ElasticsearchSinkConfig::new`] says; an unknown key is refused with its name.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ElasticsearchSinkConfig {
    /// Base URL (`http://127.0.0.1:9200`).
    pub url: String,
    /// Index or data stream name.
    pub index: String,
    /// `index` or data-stream `create` (default `"index"`).
    #[serde(default)]
    pub mode: IndexMode,
    /// Document shape: envelope, or the value's fields merged with the identity (default
    /// `"envelope"`).
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
    /// When documents become searchable (default `"none"`: the index's refresh interval).
    #[serde(default)]
    pub refresh: Refresh,
    /// Upper bound for one bulk request body; a batch is sent in several requests above it
    /// (default 8 MiB).
    #[serde(default = "max_bulk_bytes")]
    pub max_bulk_bytes: usize,
    /// Headers (e.g. `Authorization: ApiKey …`) and timeouts (default: the shared
    /// [`HttpSettings`]).
    #[serde(default)]
    pub http: HttpSettings,
}

/// The default of [`ElasticsearchSinkConfig::max_bulk_bytes`].
fn max_bulk_bytes() -> usize {
    8 << 20
}

impl ElasticsearchSinkConfig {
    /// Defaults: index mode, envelope documents, no forced refresh, 8 MiB bulk requests.
    pub fn new(url: impl Into<String>, index: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            index: index.into(),
            mode: IndexMode::default(),
            shape: DocumentShape::default(),
            scope: Scope::default(),
            refresh: Refresh::default(),
            max_bulk_bytes: max_bulk_bytes(),
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
        let text = "url = \"http://es:9200\"\nindex = \"i\"\n";
        let full = format!(
            "{text}mode = \"data_stream\"\nshape = \"merged\"\nnamespace = \"east\"\n\
             refresh = \"wait_for\"\nmax_bulk_bytes = 1024\n\
             [http]\nheaders = {{ Authorization = \"ApiKey s3cret\" }}\n"
        );
        let new = ElasticsearchSinkConfig::new("http://es:9200", "i");
        let typo = format!("{text}refesh = \"x\"\n");
        let read = file_form(text, &new, &full, &[(&typo, "refesh")]);
        assert_eq!(read.mode, IndexMode::DataStream);
        assert_eq!(read.shape, DocumentShape::Merged);
        assert_eq!(read.scope.namespace().unwrap().as_str(), "east");
        assert_eq!(read.refresh, Refresh::WaitFor);
        assert_eq!(read.max_bulk_bytes, 1024);
        assert!(!format!("{read:?}").contains("s3cret"), "Debug must redact");
    }
}
