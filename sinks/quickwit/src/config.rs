//! [`QuickwitSinkConfig`].

use std::time::Duration;

use pico_http_common::HttpSettings;
use pico_sink::config::namespace;
use pico_sink::identity::Scope;
use pico_sink::kit::DocumentShape;
use serde::{Deserialize, Serialize};

/// The ingest `commit` parameter; in a file `"wait_for"` or `"force"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Commit {
    /// Answer after the next scheduled commit (`commit_timeout_secs` of the index).
    #[default]
    WaitFor,
    /// Commit at once and answer after it (lower latency, more small splits to merge).
    Force,
}

impl Commit {
    pub(crate) fn param(self) -> &'static str {
        match self {
            Commit::WaitFor => "wait_for",
            Commit::Force => "force",
        }
    }
}

/// Configuration of [`crate::QuickwitSink`]. Read from a file with serde: `url` and `index`
/// are required, the rest defaults as [`QuickwitSinkConfig::new`] says; an unknown key is
/// refused with its name.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct QuickwitSinkConfig {
    /// Base URL of a Quickwit node (`http://127.0.0.1:7280`).
    pub url: String,
    /// Index id.
    pub index: String,
    /// Create the index when it does not exist (default `true`).
    #[serde(default = "create_index")]
    pub create_index: bool,
    /// `commit_timeout_secs` of an index the sink creates (default 5).
    #[serde(default = "commit_timeout_secs")]
    pub commit_timeout_secs: u32,
    /// How each ingest commits (default `"wait_for"`).
    #[serde(default)]
    pub commit: Commit,
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
    /// Extra headers and timeouts; the request timeout must exceed the commit timeout (default:
    /// a 90 s request timeout; a `[http]` table that leaves `request_timeout_ms` out gets the
    /// shared 30 s).
    #[serde(default = "http")]
    pub http: HttpSettings,
}

/// The default of [`QuickwitSinkConfig::create_index`].
fn create_index() -> bool {
    true
}

/// The default of [`QuickwitSinkConfig::commit_timeout_secs`].
fn commit_timeout_secs() -> u32 {
    5
}

/// The default of [`QuickwitSinkConfig::http`]: a `wait_for` ingest answers after the next
/// commit, so the request waits longer than the shared default.
fn http() -> HttpSettings {
    HttpSettings {
        request_timeout: Duration::from_secs(90),
        ..HttpSettings::default()
    }
}

impl QuickwitSinkConfig {
    /// Defaults: create the index with a 5 s commit timeout, `commit=wait_for`, envelope
    /// documents, 90 s request timeout.
    pub fn new(url: impl Into<String>, index: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            index: index.into(),
            create_index: create_index(),
            commit_timeout_secs: commit_timeout_secs(),
            commit: Commit::default(),
            shape: DocumentShape::default(),
            scope: Scope::default(),
            http: http(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pico_sink::config::checks::file_form;

    #[test]
    fn reads_from_toml_with_defaults_and_refuses_unknown_keys() {
        let text = "url = \"http://qw:7280\"\nindex = \"i\"\n";
        let full = format!(
            "{text}create_index = false\ncommit_timeout_secs = 2\ncommit = \"force\"\n\
             shape = \"merged\"\nnamespace = \"east\"\n[http]\nrequest_timeout_ms = 60000\n\
             headers = {{ Authorization = \"Bearer t\" }}\n"
        );
        let new = QuickwitSinkConfig::new("http://qw:7280", "i");
        let (top, http) = (
            format!("{text}comit = \"force\"\n"),
            format!("{text}[http]\nrequest_timeout = 1\n"),
        );
        let refused = [(top.as_str(), "comit"), (http.as_str(), "request_timeout")];
        let read = file_form(text, &new, &full, &refused);
        assert!(!read.create_index);
        assert_eq!(read.commit_timeout_secs, 2);
        assert_eq!(read.commit, Commit::Force);
        assert_eq!(read.shape, DocumentShape::Merged);
        assert_eq!(read.scope.namespace().unwrap().as_str(), "east");
        assert_eq!(read.http.request_timeout, Duration::from_secs(60));
        assert_eq!(read.http.connect_timeout, Duration::from_secs(5));
        assert_eq!(
            read.http.headers,
            [("Authorization".into(), "Bearer t".into())]
        );
    }
}
