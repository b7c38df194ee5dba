//! [`QuickwitSinkConfig`].

use pico_http_common::HttpSettings;
use pico_sink::DocumentShape;
use pico_sink::identity::Scope;

/// The ingest `commit` parameter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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

/// Configuration of [`crate::QuickwitSink`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct QuickwitSinkConfig {
    /// Base URL of a Quickwit node (`http://127.0.0.1:7280`).
    pub url: String,
    /// Index id.
    pub index: String,
    /// Create the index when it does not exist.
    pub create_index: bool,
    /// `commit_timeout_secs` of an index the sink creates.
    pub commit_timeout_secs: u32,
    /// How each ingest commits.
    pub commit: Commit,
    /// Document shape.
    pub shape: DocumentShape,
    /// Namespace for every identity.
    pub scope: Scope,
    /// Extra headers and timeouts (the request timeout must exceed the commit timeout).
    pub http: HttpSettings,
}

impl QuickwitSinkConfig {
    /// Defaults: create the index with a 5 s commit timeout, `commit=wait_for`, envelope
    /// documents, 90 s request timeout.
    pub fn new(url: impl Into<String>, index: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            index: index.into(),
            create_index: true,
            commit_timeout_secs: 5,
            commit: Commit::WaitFor,
            shape: DocumentShape::Envelope,
            scope: Scope::default(),
            http: HttpSettings {
                request_timeout: std::time::Duration::from_secs(90),
                ..HttpSettings::default()
            },
        }
    }
}
