//! [`HttpSinkConfig`].

use std::time::Duration;

use pico_sink::identity::{IdempotencyKeyStyle, Scope};

/// How a batch is written in the request body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BodyFormat {
    /// One JSON array of envelopes (`application/json`).
    #[default]
    JsonArray,
    /// One envelope per line (`application/x-ndjson`).
    Ndjson,
}

impl BodyFormat {
    /// The `Content-Type` of the body.
    pub fn content_type(self) -> &'static str {
        match self {
            BodyFormat::JsonArray => "application/json",
            BodyFormat::Ndjson => "application/x-ndjson",
        }
    }
}

/// Configuration of [`crate::HttpSink`]. `Debug` redacts credential headers and the HMAC
/// secret.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpSinkConfig {
    /// Where batches are POSTed.
    pub url: String,
    /// Body format.
    pub format: BodyFormat,
    /// Namespace for every identity.
    pub scope: Scope,
    /// How the `Idempotency-Key` is written (readable, or HMAC under a secret).
    pub key_style: IdempotencyKeyStyle,
    /// Extra headers on every request (authorization etc.).
    pub headers: Vec<(String, String)>,
    /// Whole-request timeout.
    pub request_timeout: Duration,
    /// TCP/TLS connect timeout.
    pub connect_timeout: Duration,
    /// Whether the endpoint honours `Idempotency-Key`; only changes what
    /// [`pico_sink::Sink::describe`] claims, since the sink cannot know.
    pub endpoint_honours_key: bool,
}

impl std::fmt::Debug for HttpSinkConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSinkConfig")
            .field("url", &pico_sink::redact_url(&self.url))
            .field("format", &self.format)
            .field("scope", &self.scope)
            .field("key_style", &self.key_style)
            .field(
                "headers",
                &pico_http_common::redacted_headers(&self.headers),
            )
            .field("request_timeout", &self.request_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("endpoint_honours_key", &self.endpoint_honours_key)
            .finish()
    }
}

impl HttpSinkConfig {
    /// Defaults for `url`: JSON array, readable keys, 30 s request and 5 s connect timeouts,
    /// endpoint assumed to honour keys.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            format: BodyFormat::JsonArray,
            scope: Scope::default(),
            key_style: IdempotencyKeyStyle::Readable,
            headers: Vec::new(),
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            endpoint_honours_key: true,
        }
    }
}
