//! The pipeline file: where to read (brokers, group, topics), how to batch, where dead letters
//! go, and which sink writes. TOML, one file per pipeline:
//!
//! ```toml
//! [kafka]
//! brokers = "127.0.0.1:9092"
//! group = "orders-to-postgres"
//! topics = ["orders"]
//! # any librdkafka consumer property
//! properties = { "session.timeout.ms" = "10000" }
//!
//! [batch]
//! max_records = 500
//! max_bytes = 1048576
//! linger_ms = 200
//!
//! [dead_letter]
//! topic = "orders-dlq"
//!
//! # the sink crate's own configuration (its README lists the keys); see [`pico_runtime::sinks`]
//! [sink]
//! kind = "postgres"
//! table = "orders"
//! namespace = "cluster-a"
//!
//! [sink.connection]
//! url = "postgres://app:secret@db/orders"
//! ```

use std::collections::BTreeMap;
use std::path::Path;

pub use pico_runtime::pipeline_file::ConfigError;
use pico_runtime::pipeline_file::{self, PipelineFile};
pub use pico_runtime::settings::{
    BatchLimits, BatchSettings, ChaosSettings, LogFormat, LogSettings, MetricsSettings,
    RetrySettings,
};
use pico_runtime::sinks::SinkSettings;
use serde::Deserialize;

/// librdkafka's default prefetch queue of one consumer (`queued.max.messages.kbytes`, 64 MiB),
/// bytes: fetched records it holds before the runtime takes them ([`BatchLimits::payload_bound`]).
pub const PREFETCH_QUEUE_BYTES: usize = 64 << 20;

/// A whole pipeline file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pipeline {
    /// The consumer group and what it reads.
    pub kafka: KafkaSettings,
    /// Per-partition batching.
    #[serde(default)]
    pub batch: BatchSettings,
    /// Where refused records go; without it a refused record stops the pipeline (nothing is
    /// committed past it).
    #[serde(default)]
    pub dead_letter: Option<DeadLetterSettings>,
    /// The sink and its settings.
    pub sink: SinkSettings,
    /// The driver's retry policy.
    #[serde(default)]
    pub retry: RetrySettings,
    /// Fault injection for tests of the runtime itself (never set in production).
    #[serde(default)]
    pub chaos: ChaosSettings,
    /// The HTTP listener serving `/metrics`; none unless the file has a `[metrics]` section.
    #[serde(default)]
    pub metrics: Option<MetricsSettings>,
    /// How the `pico-kafka` binary logs ([`pico_runtime::logging`]).
    #[serde(default)]
    pub log: LogSettings,
}

/// The broker side.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaSettings {
    /// `host:port[,host:port…]`.
    pub brokers: String,
    /// Consumer group id; offsets are committed under it.
    pub group: String,
    /// Topics to consume.
    pub topics: Vec<String>,
    /// Extra librdkafka consumer properties (`session.timeout.ms`, security settings, …).
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
    /// Seconds between progress lines per partition.
    #[serde(default = "default_progress_secs")]
    pub progress_secs: u64,
}

fn default_progress_secs() -> u64 {
    10
}

/// The dead-letter topic.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeadLetterSettings {
    /// Topic the refused records are produced to (with `acks=all`), each with its original
    /// key, value and headers plus `pico.dlq.*` headers: reason, original topic, partition,
    /// offset, and whether the destination may hold it after all.
    pub topic: String,
    /// librdkafka producer properties of the dead-letter producer, on top of the runtime's:
    /// `acks=all`, `enable.idempotence=true` and `message.max.bytes` of 100 MiB (a record the
    /// broker delivered must fit as a dead letter; the broker's and the topic's own limits
    /// still apply). On a secured cluster, set the same `security.protocol`, `sasl.*` and
    /// `ssl.*` as in `[kafka.properties]`: none is copied from there.
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
}

impl DeadLetterSettings {
    /// What is wrong with these settings, if anything: a dead letter must be on every replica
    /// before the offset of its record is committed.
    fn problem(&self) -> Option<String> {
        let acks = self.properties.get("acks")?;
        (acks != "all" && acks != "-1").then(|| {
            format!(
                "dead_letter.properties sets acks = \"{acks}\": a dead letter must be durable \
                 before its record's offset is committed; remove it (the runtime uses \"all\")"
            )
        })
    }
}

impl Pipeline {
    /// Reads and checks a pipeline file.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        pipeline_file::read(path)
    }

    /// Parses and checks a pipeline from TOML text.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        pipeline_file::parse(text, "pipeline")
    }
}

impl PipelineFile for Pipeline {
    fn check(&self) -> Result<(), ConfigError> {
        let bad = |m: &str| Err(ConfigError::Invalid(m.into()));
        if self.kafka.topics.is_empty() {
            return bad("kafka.topics is empty: name at least one topic");
        }
        if let Some(why) =
            pico_runtime::settings::problem(&self.batch, &self.retry, self.metrics.as_ref())
        {
            return bad(why);
        }
        for key in ["enable.auto.commit", "enable.auto.offset.store", "group.id"] {
            if self.kafka.properties.contains_key(key) {
                return Err(ConfigError::Invalid(format!(
                    "kafka.properties may not set {key}: the runtime commits offsets itself, \
                     only after the sink confirmed"
                )));
            }
        }
        if let Some(dlq) = &self.dead_letter {
            if self.kafka.topics.contains(&dlq.topic) {
                return bad(
                    "dead_letter.topic is one of kafka.topics: it would consume its own dead \
                     letters",
                );
            }
            if let Some(why) = dlq.problem() {
                return Err(ConfigError::Invalid(why));
            }
        }
        Ok(())
    }

    fn log(&self) -> &LogSettings {
        &self.log
    }

    fn sink(&self) -> &SinkSettings {
        &self.sink
    }

    fn chaos(&self) -> &ChaosSettings {
        &self.chaos
    }

    fn consumer(&self) -> String {
        format!("group {}", self.kafka.group)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_pipeline_file_parses_with_defaults_and_is_checked() {
        let p = Pipeline::from_toml(
            r#"
            [kafka]
            brokers = "127.0.0.1:9092"
            group = "g"
            topics = ["orders"]
            [sink]
            kind = "stdout"
            "#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.batch.limits(None), BatchLimits::default());
        assert_eq!(p.batch.limits(None).max_records, 500);
        assert_eq!(p.retry.max_attempts, 5);
        assert!(p.dead_letter.is_none());

        let auto_commit = Pipeline::from_toml(
            r#"
            [kafka]
            brokers = "b"
            group = "g"
            topics = ["t"]
            properties = { "enable.auto.commit" = "true" }
            [sink]
            kind = "stdout"
            "#,
        );
        assert!(
            matches!(auto_commit, Err(ConfigError::Invalid(m)) if m.contains("enable.auto.commit"))
        );
        let typo = Pipeline::from_toml(
            "[kafka]\nbrokers = \"b\"\ngroup = \"g\"\ntopics = [\"t\"]\nlinger = 5\n[sink]\nkind = \"stdout\"\n",
        );
        assert!(matches!(typo, Err(ConfigError::Parse { .. })));
    }

    #[test]
    fn metrics_are_served_only_with_a_section_and_on_loopback_unless_named() {
        let head = "[kafka]\nbrokers = \"b\"\ngroup = \"g\"\ntopics = [\"t\"]\n[sink]\nkind = \"stdout\"\n";
        let parse = |tail: &str| Pipeline::from_toml(&format!("{head}{tail}"));
        assert!(
            parse("")
                .unwrap_or_else(|e| panic!("{e}"))
                .metrics
                .is_none()
        );
        let on = parse("[metrics]\n").unwrap_or_else(|e| panic!("{e}"));
        let m = on
            .metrics
            .unwrap_or_else(|| panic!("an empty [metrics] section turns it on"));
        assert_eq!(m.listen.to_string(), "127.0.0.1:9464");
        assert_eq!(m.lag_interval_ms, 5_000);
        assert_eq!((m.unready_after_ms, m.stalled_after_ms), (60_000, 120_000));
        assert_eq!(on.log.format, LogFormat::Text);
        let json = parse("[log]\nformat = \"json\"\nlevel = \"debug\"\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (json.log.format, json.log.level.as_str()),
            (LogFormat::Json, "debug")
        );
        assert!(matches!(
            parse("[log]\nformat = \"yaml\"\n"),
            Err(ConfigError::Parse { .. })
        ));
        let named =
            parse("[metrics]\nlisten = \"0.0.0.0:9100\"\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            named.metrics.map(|m| m.listen.to_string()),
            Some("0.0.0.0:9100".to_owned())
        );
        assert!(matches!(
            parse("[metrics]\nlisten = \"localhost\"\n"),
            Err(ConfigError::Parse { .. })
        ));
        assert!(matches!(
            parse("[metrics]\nlag_interval_ms = 0\n"),
            Err(ConfigError::Invalid(m)) if m.contains("lag_interval_ms")
        ));
    }

    #[test]
    fn the_retry_backoff_and_its_jitter_come_from_the_file() {
        let file = |retry: &str| {
            Pipeline::from_toml(&format!(
                "[kafka]\nbrokers = \"b\"\ngroup = \"g\"\ntopics = [\"t\"]\n[sink]\nkind = \"stdout\"\n{retry}"
            ))
        };
        let default = file("").unwrap_or_else(|e| panic!("{e}"));
        let (low, high) = default.retry.policy().backoff_range(10);
        assert_eq!(
            (low, high),
            (Duration::from_millis(2_500), Duration::from_secs(5))
        );

        let exact =
            file("[retry]\ninitial_backoff_ms = 100\nmax_backoff_ms = 800\njitter = false\n")
                .unwrap_or_else(|e| panic!("{e}"));
        let policy = exact.retry.policy();
        assert_eq!(
            policy.backoff_range(1),
            (Duration::from_millis(100), Duration::from_millis(100))
        );
        assert_eq!(
            policy.backoff_range(10),
            (Duration::from_millis(800), Duration::from_millis(800))
        );

        let typo = file("[retry]\njiter = false\n");
        assert!(matches!(typo, Err(e) if e.to_string().contains("jiter")));
    }

    #[test]
    fn a_mutant_is_refused_by_a_build_without_the_mutants_feature() {
        let file = "[kafka]\nbrokers = \"b\"\ngroup = \"g\"\ntopics = [\"t\"]\n[sink]\nkind = \"stdout\"\n\
                    [chaos]\nmutant = \"commit-at-poll\"\n";
        let parsed = Pipeline::from_toml(file);
        if cfg!(feature = "mutants") {
            assert!(parsed.is_ok(), "{:?}", parsed.err());
        } else {
            assert!(
                matches!(&parsed, Err(ConfigError::Parse { source, .. }) if source.to_string().contains("mutant")),
                "{:?}",
                parsed.err()
            );
        }
    }

    #[test]
    fn the_dead_letter_producer_takes_properties_but_never_weaker_acks() {
        let file = |properties: &str| {
            Pipeline::from_toml(&format!(
                "[kafka]\nbrokers = \"b\"\ngroup = \"g\"\ntopics = [\"t\"]\n\
                 [dead_letter]\ntopic = \"t-dlq\"\nproperties = {{ {properties} }}\n\
                 [sink]\nkind = \"stdout\"\n"
            ))
        };
        let secured =
            file("\"security.protocol\" = \"SASL_SSL\"").unwrap_or_else(|e| panic!("{e}"));
        let dlq = secured
            .dead_letter
            .unwrap_or_else(|| panic!("no dead_letter"));
        assert_eq!(dlq.properties["security.protocol"], "SASL_SSL");
        assert!(file("\"acks\" = \"all\"").is_ok());
        let weak = file("\"acks\" = \"1\"");
        assert!(
            matches!(&weak, Err(ConfigError::Invalid(m)) if m.contains("acks = \"1\"")),
            "{weak:?}"
        );
    }
}
