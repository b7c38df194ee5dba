//! [`InfluxSinkConfig`].

use std::time::Duration;

use pico_sink::Secret;
use pico_sink::identity::Scope;
use serde::{Deserialize, Serialize};

/// Which write API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "version", rename_all = "lowercase")]
pub enum Api {
    /// InfluxDB 1.x: `POST /write?db=…&rp=…&precision=ns`.
    V1 {
        /// Database.
        database: String,
        /// Retention policy (server default when `None`).
        retention_policy: Option<String>,
        /// `user:password` for basic auth, if enabled.
        credentials: Option<(String, Secret)>,
        /// `CREATE DATABASE` at open when missing.
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

/// How a JSON payload becomes a point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointMapping {
    /// Measurement name.
    pub measurement: String,
    /// Payload fields written as tags (their string form).
    pub tags: Vec<String>,
    /// Payload fields written as fields; empty means every field that is not a tag or the time.
    pub fields: Vec<String>,
    /// Payload field holding the time in ms since the epoch (number) — `None`: the record's
    /// timestamp.
    pub time_field: Option<String>,
}

/// What a record's value holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Payload {
    /// A JSON object mapped to one point.
    Json(PointMapping),
    /// One line of line protocol.
    LineProtocol,
}

/// What to do with a record that has no timestamp.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TimestampPolicy {
    /// Reject it with its offset (the default: a made-up time would mislead queries).
    #[default]
    Reject,
    /// Use the offset itself as the time in ms since the epoch (points of one partition stay
    /// ordered and distinct; the time axis then means "offset").
    RecordOffset,
}

/// Configuration of [`crate::InfluxSink`]. `Debug` never prints the token or password.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct InfluxSinkConfig {
    /// Base URL (`http://host:8086`).
    pub url: String,
    /// API and target.
    pub api: Api,
    /// Payload mapping.
    pub payload: Payload,
    /// Records without timestamp.
    pub timestamp_policy: TimestampPolicy,
    /// Namespace qualifying `pico_topic`.
    pub scope: Scope,
    /// Request timeout.
    pub request_timeout: Duration,
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
                create_database: true,
            },
            payload,
            timestamp_policy: TimestampPolicy::Reject,
            scope: Scope::default(),
            request_timeout: Duration::from_secs(30),
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
