//! [`S3SinkConfig`].

use std::time::Duration;

use pico_sink::config::{millis, namespace};
use pico_sink::identity::Scope;
use pico_sink::kit::Secret;
use serde::{Deserialize, Serialize};

/// Configuration of [`crate::S3Sink`]. `Debug` never prints the secret key. Read from a file
/// with serde: `bucket` is required, the rest defaults as [`S3SinkConfig::new`] says; an unknown
/// key is refused with its name.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct S3SinkConfig {
    /// Bucket.
    pub bucket: String,
    /// Key prefix, no leading or trailing `/` needed (default: none).
    #[serde(default)]
    pub prefix: String,
    /// Endpoint for S3-compatible stores (`http://127.0.0.1:8333`); `None` for AWS (default).
    #[serde(default)]
    pub endpoint: Option<String>,
    /// Region (default `"us-east-1"`).
    #[serde(default = "region")]
    pub region: String,
    /// Path-style addressing, which most S3-compatible stores need (default `true`).
    #[serde(default = "yes")]
    pub force_path_style: bool,
    /// Access key and secret, in a file `credentials = { access_key = "…", secret_key = "…" }`;
    /// `None` (default) reads `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`.
    #[serde(
        with = "pico_sink::config::access_key",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub credentials: Option<(String, Secret)>,
    /// Gzip the JSON lines (default `false`).
    #[serde(default)]
    pub gzip: bool,
    /// Create the bucket at `open` when missing (default `false`).
    #[serde(default)]
    pub create_bucket: bool,
    /// Namespace of every identity, a key segment of its own (`namespace = "cluster-a"`;
    /// default: none).
    #[serde(
        rename = "namespace",
        with = "namespace",
        default,
        skip_serializing_if = "namespace::is_unset"
    )]
    pub scope: Scope,
    /// Per-request timeout (`request_timeout_ms`, default 30 000).
    #[serde(
        rename = "request_timeout_ms",
        with = "millis",
        default = "request_timeout"
    )]
    pub request_timeout: Duration,
}

/// The default of [`S3SinkConfig::region`].
fn region() -> String {
    "us-east-1".into()
}

/// The default of [`S3SinkConfig::force_path_style`].
fn yes() -> bool {
    true
}

/// The default of [`S3SinkConfig::request_timeout`].
fn request_timeout() -> Duration {
    Duration::from_secs(30)
}

impl S3SinkConfig {
    /// Defaults: path-style, no gzip, no bucket creation, 30 s requests.
    pub fn new(bucket: impl Into<String>, prefix: impl Into<String>) -> Self {
        Self {
            bucket: bucket.into(),
            prefix: prefix.into(),
            endpoint: None,
            region: region(),
            force_path_style: yes(),
            credentials: None,
            gzip: false,
            create_bucket: false,
            scope: Scope::default(),
            request_timeout: request_timeout(),
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

#[cfg(test)]
mod config_file_tests {
    use super::*;
    use pico_sink::config::checks::file_form;

    #[test]
    fn reads_from_toml_with_defaults_and_refuses_unknown_keys() {
        let text = "bucket = \"b\"\n";
        let full = "bucket = \"b\"\nprefix = \"p\"\nendpoint = \"http://s3:8333\"\n\
                    region = \"eu-west-1\"\nforce_path_style = false\ngzip = true\n\
                    create_bucket = true\nnamespace = \"east\"\nrequest_timeout_ms = 900\n\
                    credentials = { access_key = \"AK\", secret_key = \"s3cr3t\" }\n";
        let new = S3SinkConfig::new("b", "");
        let refused = [
            ("bucket = \"b\"\nregoin = \"x\"\n", "regoin"),
            (
                "bucket = \"b\"\ncredentials = { access_key = \"a\", secret = \"s\" }\n",
                "secret",
            ),
        ];
        let read = file_form(text, &new, full, &refused);
        assert_eq!(read.prefix, "p");
        assert_eq!(read.endpoint.as_deref(), Some("http://s3:8333"));
        assert_eq!(read.region, "eu-west-1");
        assert!(!read.force_path_style && read.gzip && read.create_bucket);
        assert_eq!(read.scope.namespace().unwrap().as_str(), "east");
        assert_eq!(read.request_timeout, Duration::from_millis(900));
        let (access, secret) = read.credentials.clone().unwrap();
        assert_eq!((access.as_str(), secret.expose()), ("AK", "s3cr3t"));
        assert!(!format!("{read:?}").contains("s3cr3t"), "Debug must redact");
    }
}
