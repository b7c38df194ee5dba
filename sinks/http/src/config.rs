//! [`HttpSinkConfig`].

use std::time::Duration;

use pico_sink::config::{millis, namespace, pairs};
use pico_sink::identity::{IdempotencyKeyStyle, Scope};
use serde::{Deserialize, Serialize};

/// How a batch is written in the request body; in a file `"json_array"` or `"ndjson"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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
/// secret. Read from a file with serde: `url` is required, the rest defaults as
/// [`HttpSinkConfig::new`] says; an unknown key is refused with its name.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct HttpSinkConfig {
    /// Where batches are POSTed.
    pub url: String,
    /// Body format (default `"json_array"`).
    #[serde(default)]
    pub format: BodyFormat,
    /// Namespace for every identity (`namespace = "cluster-a"`; default: none).
    #[serde(
        rename = "namespace",
        with = "namespace",
        default,
        skip_serializing_if = "namespace::is_unset"
    )]
    pub scope: Scope,
    /// How the `Idempotency-Key` is written: readable, or HMAC under a secret; in a file
    /// `key_secret = "…"` selects the HMAC (default: readable).
    #[serde(
        rename = "key_secret",
        with = "key_secret",
        default,
        skip_serializing_if = "key_secret::is_readable"
    )]
    pub key_style: IdempotencyKeyStyle,
    /// Extra headers on every request (authorization etc.); in a file a table (default: none).
    #[serde(with = "pairs", default)]
    pub headers: Vec<(String, String)>,
    /// Whole-request timeout (`request_timeout_ms`, default 30 000).
    #[serde(
        rename = "request_timeout_ms",
        with = "millis",
        default = "request_timeout"
    )]
    pub request_timeout: Duration,
    /// TCP/TLS connect timeout (`connect_timeout_ms`, default 5 000).
    #[serde(
        rename = "connect_timeout_ms",
        with = "millis",
        default = "connect_timeout"
    )]
    pub connect_timeout: Duration,
    /// Whether the endpoint honours `Idempotency-Key`; only changes what
    /// [`pico_sink::Sink::describe`] claims, since the sink cannot know (default `true`).
    #[serde(default = "endpoint_honours_key")]
    pub endpoint_honours_key: bool,
}

/// The default of [`HttpSinkConfig::request_timeout`].
fn request_timeout() -> Duration {
    Duration::from_secs(30)
}

/// The default of [`HttpSinkConfig::connect_timeout`].
fn connect_timeout() -> Duration {
    Duration::from_secs(5)
}

/// The default of [`HttpSinkConfig::endpoint_honours_key`].
fn endpoint_honours_key() -> bool {
    true
}

/// [`HttpSinkConfig::key_style`] in a file: the HMAC secret as a string, absent for readable
/// keys.
mod key_secret {
    use pico_sink::identity::IdempotencyKeyStyle;
    use pico_sink::kit::Secret;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(
        style: &IdempotencyKeyStyle,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match style {
            IdempotencyKeyStyle::Readable => serializer.serialize_none(),
            IdempotencyKeyStyle::Keyed { secret } => std::str::from_utf8(secret)
                .map_err(|_| serde::ser::Error::custom("key_secret is not UTF-8"))?
                .serialize(serializer),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<IdempotencyKeyStyle, D::Error> {
        Ok(match Option::<Secret>::deserialize(deserializer)? {
            Some(secret) => IdempotencyKeyStyle::Keyed {
                secret: secret.expose().as_bytes().to_vec(),
            },
            None => IdempotencyKeyStyle::Readable,
        })
    }

    pub(super) fn is_readable(style: &IdempotencyKeyStyle) -> bool {
        *style == IdempotencyKeyStyle::Readable
    }
}

impl std::fmt::Debug for HttpSinkConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSinkConfig")
            .field("url", &pico_sink::kit::redact_url(&self.url))
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
            format: BodyFormat::default(),
            scope: Scope::default(),
            key_style: IdempotencyKeyStyle::default(),
            headers: Vec::new(),
            request_timeout: request_timeout(),
            connect_timeout: connect_timeout(),
            endpoint_honours_key: endpoint_honours_key(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pico_sink::config::checks::file_form;

    #[test]
    fn reads_from_toml_with_defaults_and_refuses_unknown_keys() {
        let text = "url = \"http://in:8080/batches\"\n";
        let full = format!(
            "{text}format = \"ndjson\"\nnamespace = \"east\"\nkey_secret = \"hm4c\"\n\
             request_timeout_ms = 1000\nconnect_timeout_ms = 200\nendpoint_honours_key = false\n\
             headers = {{ Authorization = \"Bearer t0ken\", X-Tenant = \"a\" }}\n"
        );
        let new = HttpSinkConfig::new("http://in:8080/batches");
        let typo = format!("{text}timeout_ms = 1\n");
        let read = file_form(text, &new, &full, &[(&typo, "timeout_ms")]);
        assert_eq!(read.format, BodyFormat::Ndjson);
        assert_eq!(read.scope.namespace().unwrap().as_str(), "east");
        assert_eq!(
            read.key_style,
            IdempotencyKeyStyle::Keyed {
                secret: b"hm4c".to_vec()
            }
        );
        assert_eq!(read.request_timeout, Duration::from_secs(1));
        assert_eq!(read.connect_timeout, Duration::from_millis(200));
        assert!(!read.endpoint_honours_key);
        assert_eq!(read.headers[1], ("X-Tenant".into(), "a".into()));
        let debug = format!("{read:?}");
        assert!(
            !debug.contains("hm4c") && !debug.contains("t0ken"),
            "{debug}"
        );
    }
}
