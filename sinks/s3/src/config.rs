//! [`S3SinkConfig`].

use std::time::Duration;

use pico_sink::Secret;
use pico_sink::identity::Scope;
use serde::{Deserialize, Serialize};

/// Configuration of [`crate::S3Sink`]. `Debug` never prints the secret key.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct S3SinkConfig {
    /// Bucket.
    pub bucket: String,
    /// Key prefix (no leading or trailing `/` needed).
    pub prefix: String,
    /// Endpoint for S3-compatible stores (`http://127.0.0.1:8333`); `None` for AWS.
    pub endpoint: Option<String>,
    /// Region.
    pub region: String,
    /// Path-style addressing (most S3-compatible stores need it).
    pub force_path_style: bool,
    /// Access key and secret; `None` reads `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`.
    pub credentials: Option<(String, Secret)>,
    /// Gzip the JSON lines.
    pub gzip: bool,
    /// Create the bucket at `open` when missing.
    pub create_bucket: bool,
    /// Namespace of every identity (a key segment of its own).
    pub scope: Scope,
    /// Per-request timeout.
    pub request_timeout: Duration,
}

impl S3SinkConfig {
    /// Defaults: path-style, no gzip, no bucket creation, 30 s requests.
    pub fn new(bucket: impl Into<String>, prefix: impl Into<String>) -> Self {
        Self {
            bucket: bucket.into(),
            prefix: prefix.into(),
            endpoint: None,
            region: "us-east-1".into(),
            force_path_style: true,
            credentials: None,
            gzip: false,
            create_bucket: false,
            scope: Scope::default(),
            request_timeout: Duration::from_secs(30),
        }
    }

    /// The same configuration with an access key and secret.
    pub fn with_credentials(
        mut self,
        access_key: impl Into<String>,
        secret: impl Into<Secret>,
    ) -> Self {
        self.credentials = Some((access_key.into(), secret.into()));
        self
    }

    /// `prefix/` normalized (empty stays empty).
    pub(crate) fn key_prefix(&self) -> String {
        let p = self.prefix.trim_matches('/');
        if p.is_empty() {
            String::new()
        } else {
            format!("{p}/")
        }
    }
}

/// The object extension for a configuration.
pub fn extension(gzip: bool) -> &'static str {
    if gzip { ".jsonl.gz" } else { ".jsonl" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_prints_the_secret_key() {
        let c = S3SinkConfig::new("b", "p").with_credentials("AKIA", "wJalrXUtnFEMI");
        let text = format!("{c:?}");
        assert!(
            text.contains("AKIA") && !text.contains("wJalrXUtnFEMI"),
            "{text}"
        );
    }
}
