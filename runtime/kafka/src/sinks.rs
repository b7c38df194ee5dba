//! The `[sink]` section of a pipeline file and the sink it builds. Each kind is a cargo feature
//! of this crate (`postgres`, `clickhouse`, `s3`, `delta`, `http`, `stdout`), so a binary only
//! carries the clients it needs. Settings that are secrets (passwords, keys) are read from the
//! file as written; keep the file out of version control or use `${ENV}`-free deployment
//! tooling of your choice.

use std::collections::BTreeMap;
use std::sync::Arc;

use pico_sink::Sink;
use serde::Deserialize;

/// Which sink a pipeline writes to, with its settings.
#[derive(Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
#[non_exhaustive]
pub enum SinkSettings {
    /// JSON lines on standard output.
    Stdout {},
    /// POST per batch with an `Idempotency-Key`.
    Http {
        /// Where batches are POSTed.
        url: String,
        /// Extra headers on every request.
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
    /// Upsert into a PostgreSQL table.
    Postgres {
        /// `postgres://user:password@host:port/db`.
        url: String,
        /// Table (created when missing).
        table: String,
        /// Connections in the pool shared by every partition.
        #[serde(default = "default_pool")]
        pool_size: usize,
    },
    /// ReplacingMergeTree with a per-partition watermark.
    Clickhouse {
        /// HTTP interface.
        url: String,
        /// Database.
        database: String,
        /// Table (created when missing).
        table: String,
        /// User, if any.
        #[serde(default)]
        user: Option<String>,
        /// Password, if any.
        #[serde(default)]
        password: Option<String>,
    },
    /// One object per batch.
    S3 {
        /// Bucket.
        bucket: String,
        /// Key prefix.
        #[serde(default)]
        prefix: String,
        /// Endpoint of an S3-compatible store.
        #[serde(default)]
        endpoint: Option<String>,
        /// Region.
        #[serde(default = "default_region")]
        region: String,
        /// Access key (else `AWS_ACCESS_KEY_ID`).
        #[serde(default)]
        access_key: Option<String>,
        /// Secret key (else `AWS_SECRET_ACCESS_KEY`).
        #[serde(default)]
        secret_key: Option<String>,
        /// Create the bucket when missing.
        #[serde(default)]
        create_bucket: bool,
    },
    /// One Delta commit per batch with a `txn` watermark.
    Delta {
        /// Table location (local path or `s3://…`).
        location: String,
        /// Object-store options (`AWS_ENDPOINT_URL`, keys, `AWS_ALLOW_HTTP`, …).
        #[serde(default)]
        storage_options: BTreeMap<String, String>,
    },
}

impl std::fmt::Debug for SinkSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The settings hold credentials: only the kind and where it writes are shown.
        let (kind, target) = match self {
            SinkSettings::Stdout {} => ("stdout", String::new()),
            SinkSettings::Http { url, .. } => ("http", pico_sink::redact_url(url).into_owned()),
            SinkSettings::Postgres { url, table, .. } => (
                "postgres",
                format!("{} {table}", pico_sink::redact_url(url)),
            ),
            SinkSettings::Clickhouse {
                url,
                database,
                table,
                ..
            } => ("clickhouse", format!("{url} {database}.{table}")),
            SinkSettings::S3 { bucket, prefix, .. } => ("s3", format!("{bucket}/{prefix}")),
            SinkSettings::Delta { location, .. } => {
                ("delta", pico_sink::redact_url(location).into_owned())
            }
        };
        write!(f, "{kind} {target}")
    }
}

fn default_pool() -> usize {
    4
}

fn default_region() -> String {
    "us-east-1".into()
}

/// Why no sink could be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The kind is known, but this binary was built without its feature.
    #[error("sink kind {0:?} is not in this build: rebuild pico-kafka with --features {0}")]
    NotBuilt(&'static str),
    /// The sink refused its configuration.
    #[error("{0}")]
    Sink(#[from] pico_sink::SinkError),
}

impl SinkSettings {
    /// The sink these settings describe, shared by every partition.
    pub fn build(&self) -> Result<Arc<dyn Sink>, BuildError> {
        match self {
            #[cfg(feature = "stdout")]
            SinkSettings::Stdout {} => Ok(Arc::new(pico_sink_stdout::StdoutSink::stdout(
                Default::default(),
            ))),
            #[cfg(feature = "http")]
            SinkSettings::Http { url, headers } => {
                let mut config = pico_sink_http::HttpSinkConfig::new(url.clone());
                config.headers = headers.clone().into_iter().collect();
                Ok(Arc::new(pico_sink_http::HttpSink::new(config)?))
            }
            #[cfg(feature = "postgres")]
            SinkSettings::Postgres {
                url,
                table,
                pool_size,
            } => {
                let mut config = pico_sink_postgres::PostgresSinkConfig::new(url.clone(), table);
                config.connection.pool_size = *pool_size;
                Ok(Arc::new(pico_sink_postgres::PostgresSink::new(config)?))
            }
            #[cfg(feature = "clickhouse")]
            SinkSettings::Clickhouse {
                url,
                database,
                table,
                user,
                password,
            } => {
                let mut config =
                    pico_sink_clickhouse::ClickHouseSinkConfig::new(url.clone(), database, table);
                if let Some(user) = user {
                    config.credentials =
                        Some((user.clone(), password.clone().unwrap_or_default().into()));
                }
                Ok(Arc::new(pico_sink_clickhouse::ClickHouseSink::new(config)?))
            }
            #[cfg(feature = "s3")]
            SinkSettings::S3 {
                bucket,
                prefix,
                endpoint,
                region,
                access_key,
                secret_key,
                create_bucket,
            } => {
                let mut config = pico_sink_s3::S3SinkConfig::new(bucket.clone(), prefix.clone());
                config.endpoint = endpoint.clone();
                config.region = region.clone();
                config.create_bucket = *create_bucket;
                if let (Some(k), Some(s)) = (access_key, secret_key) {
                    config = config.with_credentials(k.clone(), s.clone());
                }
                Ok(Arc::new(pico_sink_s3::S3Sink::new(config)?))
            }
            #[cfg(feature = "delta")]
            SinkSettings::Delta {
                location,
                storage_options,
            } => {
                let mut config = pico_sink_delta::DeltaSinkConfig::new(location.clone());
                config.storage_options = storage_options.clone().into_iter().collect();
                Ok(Arc::new(pico_sink_delta::DeltaSink::new(config)))
            }
            #[allow(unreachable_patterns)]
            other => Err(BuildError::NotBuilt(other.kind())),
        }
    }

    /// The kind's name, as in the file.
    pub fn kind(&self) -> &'static str {
        match self {
            SinkSettings::Stdout {} => "stdout",
            SinkSettings::Http { .. } => "http",
            SinkSettings::Postgres { .. } => "postgres",
            SinkSettings::Clickhouse { .. } => "clickhouse",
            SinkSettings::S3 { .. } => "s3",
            SinkSettings::Delta { .. } => "delta",
        }
    }
}
