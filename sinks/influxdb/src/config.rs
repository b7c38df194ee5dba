//! [`InfluxSinkConfig`].

use std::time::Duration;

use pico_sink::config::{millis, namespace};
use pico_sink::identity::Scope;
use pico_sink::kit::Secret;
use serde::{Deserialize, Serialize};

/// Which write API; in a file an `[api]` table with `version = "v1"` or `"v2"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "version", rename_all = "lowercase", deny_unknown_fields)]
pub enum Api {
    /// InfluxDB 1.x: `POST /write?db=…&rp=…&precision=ns`.
    V1 {
        /// Database.
        database: String,
        /// Retention policy (default: the server's).
        #[serde(default)]
        retention_policy: Option<String>,
        /// User and password for basic auth, if enabled; in a file
        /// `credentials = { user = "…", password = "…" }` (default: none).
        #[serde(
            with = "pico_sink::config::user_password",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        credentials: Option<(String, Secret)>,
        /// `CREATE DATABASE` at open when missing (default `true`).
        #[serde(default = "create_database")]
        create_database: bool,
    },
    /// InfluxDB 2.x / 3.x: `POST /api/v2/write?org=…&bucket=…&precision=ns`, token auth.
    V2 {
        /// Organization.
        org: String,
        /// Bucket.
        bucket: String,
        /// API token.
        token: Secret,
    },
}

/// The default of `Api::V1::create_database`.
fn create_database() -> bool {
    true
}

/// How a JSON payload becomes a point; in a file `[payload.json]` with `measurement` required.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointMapping {
    /// Measurement name.
    pub measurement: String,
    /// Payload fields written as tags, their string form (default: none).
    #[serde(default)]
    pub tags: Vec<String>,
    /// Payload fields written as fields; empty (the default) means every field that is not a
    /// tag or the time.
    #[serde(default)]
    pub fields: Vec<String>,
    /// Payload field holding the time in ms since the epoch (number) — `None` (the default):
    /// the record's timestamp.
    #[serde(default)]
    pub time_field: Option<String>,
}

/// What a record's value holds; in a file `payload = "line_protocol"` or a `[payload.json]`
/// table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Payload {
    /// A JSON object mapped to one point.
    Json(PointMapping),
    /// One line of line protocol.
    LineProtocol,
}

/// What to do with a record that has no timestamp; in a file `"reject"` or `"record_offset"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimestampPolicy {
    /// Reject it with its offset (the default: a made-up time would mislead queries).
    #[default]
    Reject,
    /// Use the offset itself as the time in ms since the epoch (points of one partition stay
    /// ordered and distinct; the time axis then means "offset").
    RecordOffset,
}

/// Configuration of [`crate::InfluxSink`]. `Debug` never prints the token or password. Read
/// from a file with serde: `url`, `[api]` and `payload` are required, the rest defaults as
/// [`InfluxSinkConfig::v1`] says; an unknown key is refused with its name.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct InfluxSinkConfig {
    /// Base URL (`http://host:8086`).
    pub url: String,
    /// API and target.
    pub api: Api,
    /// Payload mapping.
    pub payload: Payload,
    /// Records without timestamp (default `"reject"`).
    #[serde(default)]
    pub timestamp_policy: TimestampPolicy,
    /// Namespace qualifying `pico_topic` (`namespace = "cluster-a"`; default: none).
    #[serde(
        rename = "namespace",
        with = "namespace",
        default,
        skip_serializing_if = "namespace::is_unset"
    )]
    pub scope: Scope,
    /// Request timeout (`request_timeout_ms`, default 30 000).
    #[serde(
        rename = "request_timeout_ms",
        with = "millis",
        default = "request_timeout"
    )]
    pub request_timeout: Duration,
}

/// The default of [`InfluxSinkConfig::request_timeout`].
fn request_timeout() -> Duration {
    Duration::from_secs(30)
}

impl InfluxSinkConfig {
    /// InfluxDB 1.x defaults: create the database if missing, reject records without time.
    pub fn v1(url: impl Into<String>, database: impl Into<String>, payload: Payload) -> Self {
        Self {
            url: url.into(),
            api: Api::V1 {
                database: database.into(),
                retention_policy: None,
                credentials: None,
                create_database: create_database(),
            },
            payload,
            timestamp_policy: TimestampPolicy::default(),
            scope: Scope::default(),
            request_timeout: request_timeout(),
        }
    }

    /// InfluxDB 2.x / 3.x defaults (v2 write API with a token): reject records without time.
    /// The bucket must exist.
    pub fn v2(
        url: impl Into<String>,
        org: impl Into<String>,
        bucket: impl Into<String>,
        token: impl Into<Secret>,
        payload: Payload,
    ) -> Self {
        Self {
            api: Api::V2 {
                org: org.into(),
                bucket: bucket.into(),
                token: token.into(),
            },
            ..Self::v1(url, String::new(), payload)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pico_sink::config::checks::file_form;

    #[test]
    fn reads_from_toml_with_defaults_and_refuses_unknown_keys() {
        let api = "[api]\nversion = \"v1\"\ndatabase = \"db\"\n";
        let text = format!("url = \"http://h:8086\"\npayload = \"line_protocol\"\n{api}");
        let full = "url = \"http://h:8086\"\ntimestamp_policy = \"record_offset\"\n\
                    namespace = \"east\"\nrequest_timeout_ms = 700\n\
                    [api]\nversion = \"v1\"\ndatabase = \"db\"\nretention_policy = \"rp\"\n\
                    create_database = false\ncredentials = { user = \"u\", password = \"pa55\" }\n\
                    [payload.json]\nmeasurement = \"m\"\ntags = [\"site\"]\ntime_field = \"ts\"\n";
        let new = InfluxSinkConfig::v1("http://h:8086", "db", Payload::LineProtocol);
        let (in_api, in_payload) = (
            format!("{text}datbase = \"x\"\n"),
            format!("url = \"u\"\n{api}[payload.json]\nmeasurment = \"m\"\n"),
        );
        let refused = [
            (in_api.as_str(), "datbase"),
            (in_payload.as_str(), "measurment"),
        ];
        let read = file_form(&text, &new, full, &refused);
        assert_eq!(read.timestamp_policy, TimestampPolicy::RecordOffset);
        assert_eq!(read.scope.namespace().unwrap().as_str(), "east");
        assert_eq!(read.request_timeout, Duration::from_millis(700));
        let Api::V1 {
            credentials,
            create_database,
            retention_policy,
            ..
        } = &read.api
        else {
            panic!("{:?}", read.api);
        };
        assert_eq!(credentials.as_ref().unwrap().1.expose(), "pa55");
        assert!(!create_database);
        assert_eq!(retention_policy.as_deref(), Some("rp"));
        let Payload::Json(mapping) = &read.payload else {
            panic!("{:?}", read.payload);
        };
        assert_eq!((mapping.tags.len(), mapping.fields.len()), (1, 0));
        assert!(!format!("{read:?}").contains("pa55"), "Debug must redact");
        let v2: InfluxSinkConfig = pico_sink::config::checks::read(
            "url = \"http://h:8086\"\npayload = \"line_protocol\"\n\
             [api]\nversion = \"v2\"\norg = \"o\"\nbucket = \"b\"\ntoken = \"t0k\"\n",
        );
        assert!(matches!(&v2.api, Api::V2 { token, .. } if token.expose() == "t0k"));
    }

    #[test]
    fn debug_never_prints_the_token_or_password() {
        let v2 = InfluxSinkConfig::v2("http://h", "o", "b", "tok3n-value", Payload::LineProtocol);
        let mut v1 = InfluxSinkConfig::v1("http://h", "db", Payload::LineProtocol);
        if let Api::V1 { credentials, .. } = &mut v1.api {
            *credentials = Some(("u".into(), "pa55word".into()));
        }
        let text = format!("{v2:?} {v1:?}");
        assert!(
            !text.contains("tok3n-value") && !text.contains("pa55word"),
            "{text}"
        );
    }
}
