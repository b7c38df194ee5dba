//! The `[sink]` section of a pipeline file and the sink it builds.
//!
//! `kind` names the sink; every other key of the section is that sink crate's own configuration
//! as its `*SinkConfig` reads it from a file (its README lists the keys), so a key means the same
//! under pico-kafka as in a user's own runtime. `namespace` is one of them in every kind: it
//! qualifies every identity the sink writes, so two clusters with the same topic names stay
//! apart in one destination.
//!
//! ```toml
//! [sink]
//! kind = "postgres"
//! table = "public.orders"
//! namespace = "cluster-a"
//!
//! [sink.connection]
//! url = "postgres://app@db/orders"
//! pool_size = 4
//! ```
//!
//! Each kind but `stdout` is a cargo feature of this crate, all on by default; a lean binary
//! takes `--no-default-features --features postgres`. The kinds, their features, their
//! configuration types and how each is opened are written once, in the list below
//! ([`KINDS`] is generated from it).

#[cfg(feature = "iceberg")]
mod iceberg;
mod stdout;

use std::sync::Arc;

use pico_sink::identity::Scope;
use pico_sink::{Sink, SinkError};
use serde::{Deserialize, Deserializer};

#[cfg(feature = "iceberg")]
pub use iceberg::{CatalogSettings, IcebergSettings};
pub use stdout::StdoutSettings;

/// A sink kind a pipeline file may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    /// `kind = "…"` in the file.
    pub name: &'static str,
    /// The cargo feature that carries it (`None`: always built).
    pub feature: Option<&'static str>,
    /// Whether this build carries it.
    pub built: bool,
}

/// Declares [`SinkSettings`], [`KINDS`] and the reading and building of each kind from one list
/// of `Variant = "kind" [feature "name"]: ConfigType, scope(field path), [read fn,] open
/// |config| sink;` (`read`: a section read by hand; by default the type deserializes it).
macro_rules! sink_kinds {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident = $kind:literal $(feature $feature:literal)?: $config:ty,
            scope($($scope:ident).+), $(read $read:path,)? open |$c:ident| $open:expr;
    )*) => {
        /// Which sink a pipeline writes to, with its configuration as the sink crate reads it.
        #[derive(Debug, Clone)]
        #[non_exhaustive]
        pub enum SinkSettings {
            $(
                $(#[doc = $doc])*
                $(#[cfg(feature = $feature)])?
                $variant(Box<$config>),
            )*
        }

        /// Every kind a pipeline file may name, in the order of the list.
        pub const KINDS: &[Kind] = &[$(
            Kind {
                name: $kind,
                feature: sink_kinds!(@feature $($feature)?),
                built: sink_kinds!(@built $($feature)?),
            },
        )*];

        impl SinkSettings {
            /// The settings of `kind` from the rest of its section.
            fn read(kind: &str, section: toml::Table) -> Result<Self, String> {
                match kind {
                    $(
                        $(#[cfg(feature = $feature)])?
                        $kind => (sink_kinds!(@read $config $(, $read)?))(section)
                            .map(|config| Self::$variant(Box::new(config))),
                    )*
                    other => Err(not_readable(other)),
                }
            }

            /// The sink these settings describe, shared by every partition. Opening may reach
            /// the destination only where the sink needs it to exist (Iceberg's catalog).
            pub async fn build(&self) -> Result<Arc<dyn Sink>, SinkError> {
                match self {
                    $(
                        $(#[cfg(feature = $feature)])?
                        Self::$variant(config) => {
                            let $c: $config = (**config).clone();
                            Ok(Arc::new($open))
                        }
                    )*
                }
            }

            /// The kind's name, as in the file.
            pub fn kind(&self) -> &'static str {
                match self {
                    $(
                        $(#[cfg(feature = $feature)])?
                        Self::$variant(_) => $kind,
                    )*
                }
            }

            /// The identity scope the sink writes under (the section's `namespace`).
            pub fn scope(&self) -> &Scope {
                match self {
                    $(
                        $(#[cfg(feature = $feature)])?
                        Self::$variant(config) => &config.$($scope).+,
                    )*
                }
            }
        }
    };
    (@read $config:ty) => {
        |section| read_at::<$config>("sink", toml::Value::Table(section))
    };
    (@read $config:ty, $read:path) => { $read };
    (@feature $feature:literal) => { Some($feature) };
    (@feature) => { None };
    (@built $feature:literal) => { cfg!(feature = $feature) };
    (@built) => { true };
}

sink_kinds! {
    /// JSON lines on standard output.
    Stdout = "stdout": StdoutSettings,
        scope(scope), open |c| pico_sink_stdout::StdoutSink::stdout(c.scope);
    /// POST per batch with an `Idempotency-Key`.
    Http = "http" feature "http": pico_sink_http::HttpSinkConfig,
        scope(scope), open |c| pico_sink_http::HttpSink::new(c)?;
    /// Upsert into a PostgreSQL table.
    Postgres = "postgres" feature "postgres": pico_sink_postgres::PostgresSinkConfig,
        scope(scope), open |c| pico_sink_postgres::PostgresSink::new(c)?;
    /// Redshift (or its PostgreSQL stand-in) through a staging table.
    Redshift = "redshift" feature "redshift": pico_sink_redshift::RedshiftSinkConfig,
        scope(scope), open |c| pico_sink_redshift::RedshiftSink::new(c)?;
    /// ReplacingMergeTree with a per-partition watermark.
    Clickhouse = "clickhouse" feature "clickhouse": pico_sink_clickhouse::ClickHouseSinkConfig,
        scope(scope), open |c| pico_sink_clickhouse::ClickHouseSink::new(c)?;
    /// One object per batch, named by the batch identity.
    S3 = "s3" feature "s3": pico_sink_s3::S3SinkConfig,
        scope(scope), open |c| pico_sink_s3::S3Sink::new(c)?;
    /// One Delta commit per batch with a `txn` watermark.
    Delta = "delta" feature "delta": pico_sink_delta::DeltaSinkConfig,
        scope(scope), open |c| pico_sink_delta::DeltaSink::new(c);
    /// One Iceberg snapshot per batch with a watermark in its summary.
    Iceberg = "iceberg" feature "iceberg": IcebergSettings,
        scope(table.scope), read IcebergSettings::read, open |c| c.open().await?;
    /// Points whose series and time come from the record identity.
    Influxdb = "influxdb" feature "influxdb": pico_sink_influxdb::InfluxSinkConfig,
        scope(scope), open |c| pico_sink_influxdb::InfluxSink::new(c)?;
    /// Documents keyed by the record identity.
    Elasticsearch = "elasticsearch" feature "elasticsearch":
        pico_sink_elasticsearch::ElasticsearchSinkConfig,
        scope(scope), open |c| pico_sink_elasticsearch::ElasticsearchSink::new(c)?;
    /// Documents keyed by the record identity.
    Meilisearch = "meilisearch" feature "meilisearch":
        pico_sink_meilisearch::MeilisearchSinkConfig,
        scope(scope), open |c| pico_sink_meilisearch::MeilisearchSink::new(c)?;
    /// Documents keyed by the record identity.
    Quickwit = "quickwit" feature "quickwit": pico_sink_quickwit::QuickwitSinkConfig,
        scope(scope), open |c| pico_sink_quickwit::QuickwitSink::new(c)?;
    /// Documents keyed by the record identity.
    Mongodb = "mongodb" feature "mongodb": pico_sink_mongodb::MongoSinkConfig,
        scope(scope), open |c| pico_sink_mongodb::MongoSink::new(c);
    /// Records keyed by the record identity.
    Surrealdb = "surrealdb" feature "surrealdb": pico_sink_surrealdb::SurrealSinkConfig,
        scope(scope), open |c| pico_sink_surrealdb::SurrealSink::new(c);
    /// Stream Load with the batch identity as its label.
    Doris = "doris" feature "doris": pico_sink_doris::DorisSinkConfig,
        scope(scope), open |c| pico_sink_doris::DorisSink::new(c)?;
    /// Messages de-duplicated by a `Nats-Msg-Id` from the record identity.
    Jetstream = "jetstream" feature "jetstream": pico_sink_jetstream::JetStreamSinkConfig,
        scope(scope), open |c| pico_sink_jetstream::JetStreamSink::connect(c).await?;
}

impl<'de> Deserialize<'de> for SinkSettings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut section = toml::Table::deserialize(deserializer)?;
        let kind = match section.remove("kind") {
            Some(toml::Value::String(kind)) => kind,
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "sink.kind = {other} is not a name: write one of {}",
                    kind_names()
                )));
            }
            None => {
                return Err(D::Error::custom(format!(
                    "the [sink] section has no kind: add kind = \"…\", one of {}",
                    kind_names()
                )));
            }
        };
        Self::read(&kind, section).map_err(D::Error::custom)
    }
}

/// `value`, found at the key path `at` of the file, as a `C`; an error names the key path of
/// the offending key and what is wrong with it.
pub(crate) fn read_at<C: serde::de::DeserializeOwned>(
    at: &str,
    value: toml::Value,
) -> Result<C, String> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let key = match e.path().to_string().as_str() {
            "." => at.to_owned(),
            path => format!("{at}.{path}"),
        };
        // The message alone: toml would add the key path again, relative to the section.
        format!("{key}: {}", e.inner().message().trim_end())
    })
}

/// Why `kind` cannot be read by this build: not a kind at all, or one left out of it.
fn not_readable(kind: &str) -> String {
    match KINDS.iter().find(|k| k.name == kind) {
        Some(Kind {
            feature: Some(feature),
            ..
        }) => format!(
            "sink kind \"{kind}\" is not in this build of the runtime: rebuild it with \
             --features {feature} (or with the default features, which carry every sink)"
        ),
        _ => format!(
            "sink.kind = \"{kind}\" is not a sink kind: write one of {}",
            kind_names()
        ),
    }
}

/// The kinds a file may name, for error messages.
fn kind_names() -> String {
    KINDS
        .iter()
        .map(|k| format!("\"{}\"", k.name))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The least `[sink]` section of each kind (without `kind`), as a user writes it.
    const MINIMAL: &[(&str, &str)] = &[
        ("stdout", ""),
        ("http", "url = \"http://127.0.0.1:8080/ingest\"\n"),
        (
            "postgres",
            "table = \"orders\"\n[connection]\nurl = \"postgres://app@db/app\"\n",
        ),
        (
            "redshift",
            "table = \"orders\"\n[connection]\nurl = \"postgres://app@rs/app\"\n",
        ),
        (
            "clickhouse",
            "url = \"http://ch:8123\"\ndatabase = \"d\"\ntable = \"t\"\n",
        ),
        ("s3", "bucket = \"b\"\n"),
        ("delta", "location = \"/tmp/pico-kafka-delta\"\n"),
        (
            "iceberg",
            "table_namespace = [\"pico\"]\ntable = \"t\"\n\
             [catalog]\npath = \"/tmp/c.sqlite\"\nwarehouse = \"/tmp/wh\"\n",
        ),
        (
            "influxdb",
            "url = \"http://h:8086\"\npayload = \"line_protocol\"\n\
             [api]\nversion = \"v1\"\ndatabase = \"db\"\n",
        ),
        ("elasticsearch", "url = \"http://es:9200\"\nindex = \"i\"\n"),
        ("meilisearch", "url = \"http://ms:7700\"\nindex = \"i\"\n"),
        ("quickwit", "url = \"http://qw:7280\"\nindex = \"i\"\n"),
        (
            "mongodb",
            "uri = \"mongodb://db:27017\"\ndatabase = \"d\"\ncollection = \"c\"\n",
        ),
        ("surrealdb", "url = \"ws://sdb:8000\"\ntable = \"t\"\n"),
        (
            "doris",
            "fe_url = \"http://fe:8030\"\ndatabase = \"d\"\ntable = \"t\"\n",
        ),
        (
            "jetstream",
            "url = \"nats://n:4222\"\nstream = \"S\"\nsubject = \"s.in\"\n",
        ),
    ];

    fn section(kind: &str, body: &str) -> Result<SinkSettings, String> {
        #[derive(Deserialize)]
        struct File {
            sink: SinkSettings,
        }
        // The kind first, then the body's own keys, then its tables: as a user writes it.
        let (keys, tables) = match body.find("\n[") {
            Some(at) => body.split_at(at + 1),
            None => (body, ""),
        };
        let prefixed = tables.replace("\n[", "\n[sink.");
        let tables = match prefixed.strip_prefix('[') {
            Some(rest) => format!("[sink.{rest}"),
            None => prefixed,
        };
        let text = format!("[sink]\nkind = \"{kind}\"\n{keys}{tables}");
        toml::from_str::<File>(&text)
            .map(|f| f.sink)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn every_kind_reads_its_crate_configuration_and_its_namespace() {
        for kind in KINDS {
            let (_, body) = MINIMAL
                .iter()
                .find(|(name, _)| *name == kind.name)
                .unwrap_or_else(|| panic!("no minimal section for kind {}", kind.name));
            let plain = section(kind.name, body);
            let scoped = section(kind.name, &format!("namespace = \"east\"\n{body}"));
            if !kind.built {
                let e = plain.err().unwrap_or_default();
                assert!(e.contains("--features"), "{}: {e}", kind.name);
                continue;
            }
            let plain = plain.unwrap_or_else(|e| panic!("{}: {e}", kind.name));
            let scoped = scoped.unwrap_or_else(|e| panic!("{}: {e}", kind.name));
            assert_eq!(plain.kind(), kind.name);
            assert!(plain.scope().namespace().is_none(), "{}", kind.name);
            let namespace = scoped.scope().namespace().map(|n| n.as_str().to_owned());
            assert_eq!(namespace.as_deref(), Some("east"), "{}", kind.name);
        }
        assert_eq!(
            KINDS.len(),
            MINIMAL.len(),
            "a minimal section without its kind"
        );
    }

    #[test]
    fn a_bad_section_names_the_key_and_what_to_write() {
        let typo = section("stdout", "namespce = \"east\"\n").err();
        let typo = typo.unwrap_or_default();
        assert!(
            typo.contains("sink.namespce: unknown field `namespce`, expected `namespace`"),
            "{typo}"
        );
        if cfg!(feature = "postgres") {
            let nested = section(
                "postgres",
                "table = \"t\"\n[connection]\nurl = \"x\"\npool_size = \"four\"\n",
            );
            let nested = nested.err().unwrap_or_default();
            assert!(
                nested.contains("sink.connection.pool_size: invalid type"),
                "{nested}"
            );
        }

        let unknown = section("kafka", "").err().unwrap_or_default();
        assert!(
            unknown.contains("\"kafka\" is not a sink kind") && unknown.contains("\"postgres\""),
            "{unknown}"
        );
        let none = toml::from_str::<toml::Table>("[sink]\nurl = \"u\"\n")
            .map_err(|e| e.to_string())
            .and_then(|t| {
                SinkSettings::deserialize(toml::Value::Table(
                    t["sink"].as_table().cloned().unwrap_or_default(),
                ))
                .map_err(|e| e.to_string())
            });
        let none = none.err().unwrap_or_default();
        assert!(none.contains("add kind"), "{none}");
    }

    #[cfg(feature = "iceberg")]
    #[test]
    fn the_iceberg_catalog_is_required_and_its_keys_named() {
        let table = "table_namespace = [\"pico\"]\ntable = \"t\"\n";
        let missing = section("iceberg", table).err().unwrap_or_default();
        assert!(missing.contains("[sink.catalog]"), "{missing}");
        let typo = section(
            "iceberg",
            &format!("{table}[catalog]\npath = \"c\"\nwarehouse = \"w\"\nwarehose = \"x\"\n"),
        );
        let typo = typo.err().unwrap_or_default();
        assert!(
            typo.contains("catalog") && typo.contains("warehose"),
            "{typo}"
        );
    }
}
