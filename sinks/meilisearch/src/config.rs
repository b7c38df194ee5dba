//! [`MeilisearchSinkConfig`].

use std::time::Duration;

use pico_http_common::HttpSettings;
use pico_sink::config::{millis, namespace};
use pico_sink::identity::Scope;
use pico_sink::kit::DocumentShape;
use serde::{Deserialize, Serialize};

/// Configuration of [`crate::MeilisearchSink`]. Read from a file with serde: `url` and `index`
/// are required, the rest defaults as [`MeilisearchSinkConfig::new`] says; an unknown key is
/// refused with its name.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct MeilisearchSinkConfig {
    /// Base URL (`http://127.0.0.1:7700`).
    pub url: String,
    /// Index uid (`[A-Za-z0-9_-]`, at most 400 bytes).
    pub index: String,
    /// API key with `documents.add` and `tasks.get`, sent as a bearer token (default: none).
    #[serde(default)]
    pub api_key: Option<pico_sink::kit::Secret>,
    /// Name of the primary-key field the sink writes (default `"pico_key"`).
    #[serde(default = "primary_key")]
    pub primary_key: String,
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
    /// How long to wait for one task to finish before `Retryable` (`task_timeout_ms`, default
    /// 120 000).
    #[serde(rename = "task_timeout_ms", with = "millis", default = "task_timeout")]
    pub task_timeout: Duration,
    /// Extra headers and timeouts (default: the shared [`HttpSettings`]).
    #[serde(default)]
    pub http: HttpSettings,
}

/// The default of [`MeilisearchSinkConfig::primary_key`].
fn primary_key() -> String {
    "pico_key".into()
}

/// The default of [`MeilisearchSinkConfig::task_timeout`].
fn task_timeout() -> Duration {
    Duration::from_secs(120)
}

impl MeilisearchSinkConfig {
    /// Defaults: no key, primary key `pico_key`, envelope documents, 120 s task timeout.
    pub fn new(url: impl Into<String>, index: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            index: index.into(),
            api_key: None,
            primary_key: primary_key(),
            shape: DocumentShape::default(),
            scope: Scope::default(),
            task_timeout: task_timeout(),
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
        let text = "url = \"http://ms:7700\"\nindex = \"i\"\n";
        let full = format!(
            "{text}api_key = \"k3y\"\nprimary_key = \"id\"\nshape = \"merged\"\n\
             namespace = \"east\"\ntask_timeout_ms = 1500\n"
        );
        let new = MeilisearchSinkConfig::new("http://ms:7700", "i");
        let typo = format!("{text}apikey = \"k\"\n");
        let read = file_form(text, &new, &full, &[(&typo, "apikey")]);
        assert_eq!(read.api_key.as_ref().unwrap().expose(), "k3y");
        assert!(
            !format!("{read:?}").contains("k3y"),
            "Debug must redact the key"
        );
        assert_eq!(read.primary_key, "id");
        assert_eq!(read.shape, DocumentShape::Merged);
        assert_eq!(read.scope.namespace().unwrap().as_str(), "east");
        assert_eq!(read.task_timeout, Duration::from_millis(1500));
    }
}
