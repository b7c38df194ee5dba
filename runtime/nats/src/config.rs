//! The pipeline file of pico-nats: the JetStream consumer, how to batch, where dead letters go,
//! and which sink writes. TOML, one file per pipeline:
//!
//! ```toml
//! [jetstream]
//! url = "nats://127.0.0.1:4222"
//! stream = "ORDERS"
//! filter = "orders.eu.>"          # optional: the whole stream without it
//! durable = "orders-eu-to-postgres"
//!
//! [dead_letter]
//! subject = "dlq.orders"          # a subject some stream captures
//!
//! [sink]
//! kind = "postgres"
//! table = "orders"
//! ```
//!
//! `[batch]`, `[retry]`, `[metrics]`, `[log]` and `[chaos]` are pico-runtime's, as in
//! pico-kafka's pipeline file.

use std::path::Path;
use std::time::Duration;

pub use pico_runtime::pipeline_file::ConfigError;
use pico_runtime::pipeline_file::{self, PipelineFile};
use pico_runtime::settings::{
    BatchSettings, ChaosSettings, LogSettings, MetricsSettings, RetrySettings,
};
use pico_runtime::sinks::SinkSettings;
use pico_sink::identity::jetstream::JetStreamSource;
use serde::Deserialize;

use crate::consumer::ConsumerSettings;

/// A whole pipeline file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pipeline {
    /// The server, the stream and the durable consumer.
    pub jetstream: JetStreamSettings,
    /// Batching.
    #[serde(default)]
    pub batch: BatchSettings,
    /// Where refused records go; without it a refused record stops the pipeline (nothing is
    /// acknowledged past it).
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
    /// The HTTP listener serving `/metrics`, `/health` and `/ready`.
    #[serde(default)]
    pub metrics: Option<MetricsSettings>,
    /// How the binary logs.
    #[serde(default)]
    pub log: LogSettings,
}

/// `[jetstream]`: what the runtime consumes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JetStreamSettings {
    /// The server (`nats://host:4222`; several, comma-separated, for a cluster).
    pub url: String,
    /// The stream read.
    pub stream: String,
    /// The subjects of the stream read (all of them without it). Part of every record's
    /// identity: change it only with the durable.
    #[serde(default)]
    pub filter: Option<String>,
    /// The durable consumer's name; created if missing, with the settings pico-nats needs
    /// ([`crate::consumer::pull_config`]); an existing one must have them.
    pub durable: String,
    /// How long the server waits for an acknowledgement before it delivers a message again,
    /// ms: how long a restarted process waits for what the dead one held.
    #[serde(default = "default_ack_wait_ms")]
    pub ack_wait_ms: u64,
    /// The most messages the server hands out unacknowledged.
    #[serde(default = "default_max_ack_pending")]
    pub max_ack_pending: i64,
    /// How often the progress line is logged, s.
    #[serde(default = "default_progress_secs")]
    pub progress_secs: u64,
    /// The time to live of the durable's lease, ms ([`crate::lease`]): how long after a
    /// holder died a standby takes over. Set where the lease bucket is created (its
    /// `max_age`); an existing bucket's `max_age` rules.
    #[serde(default = "default_lease_ms")]
    pub lease_ms: u64,
}

fn default_ack_wait_ms() -> u64 {
    30_000
}

fn default_max_ack_pending() -> i64 {
    20_000
}

fn default_progress_secs() -> u64 {
    30
}

fn default_lease_ms() -> u64 {
    10_000
}

impl JetStreamSettings {
    /// The source every record's identity comes from.
    pub fn source(&self) -> Result<JetStreamSource, ConfigError> {
        JetStreamSource::new(&self.stream, self.filter.as_deref())
            .map_err(|e| ConfigError::Invalid(format!("jetstream.stream or filter: {e}")))
    }

    /// The durable consumer's settings.
    pub fn consumer(&self) -> ConsumerSettings {
        ConsumerSettings {
            durable: self.durable.clone(),
            ack_wait: Duration::from_millis(self.ack_wait_ms),
            max_ack_pending: self.max_ack_pending,
        }
    }
}

/// `[dead_letter]`: the subject refused records are published to, through JetStream (the
/// publish waits for the stream's acknowledgement, so a stream must capture the subject).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeadLetterSettings {
    /// The subject; each dead letter carries its record's value and headers plus `pico.dlq.*`
    /// headers (reason, origin).
    pub subject: String,
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
        let source = self.jetstream.source()?;
        if JetStreamSource::new(&self.jetstream.durable, None).is_err() {
            return bad(
                "jetstream.durable must be a name JetStream takes: no whitespace, '.', '*', \
                 '>', '/' or '\\'",
            );
        }
        if self.jetstream.ack_wait_ms == 0 || self.jetstream.max_ack_pending <= 0 {
            return bad("jetstream.ack_wait_ms and max_ack_pending must be above 0");
        }
        if self.jetstream.lease_ms < 300 {
            return bad("jetstream.lease_ms must be 300 or more (it is renewed every third)");
        }
        if let Some(why) =
            pico_runtime::settings::problem(&self.batch, &self.retry, self.metrics.as_ref())
        {
            return bad(why);
        }
        if let Some(dlq) = &self.dead_letter
            && source
                .filter()
                .is_some_and(|f| pico_sink::identity::jetstream::subjects_overlap(f, &dlq.subject))
        {
            return bad(
                "dead_letter.subject matches jetstream.filter: the pipeline would consume its own \
                 dead letters; publish them to a subject outside the filter",
            );
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
        format!("durable {}", self.jetstream.durable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "[jetstream]\nurl = \"nats://127.0.0.1:4222\"\nstream = \"ORDERS\"\n";

    fn parse(tail: &str) -> Result<Pipeline, ConfigError> {
        Pipeline::from_toml(&format!("{HEAD}{tail}\n[sink]\nkind = \"stdout\"\n"))
    }

    #[test]
    fn a_pipeline_parses_with_defaults() {
        let p = parse("durable = \"d\"").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.jetstream.ack_wait_ms, 30_000);
        assert_eq!(p.jetstream.consumer().max_ack_pending, 20_000);
        assert_eq!(
            p.jetstream.source().map(|s| s.topic().to_owned()).ok(),
            Some("ORDERS".into())
        );
        assert!(p.dead_letter.is_none());
    }

    #[test]
    fn what_cannot_work_is_refused_with_what_to_change() {
        let refused = |tail: &str, says: &str| match parse(tail) {
            Err(e) => assert!(e.to_string().contains(says), "{tail}: {e}"),
            Ok(_) => panic!("{tail}: accepted"),
        };
        refused("durable = \"a.b\"", "jetstream.durable");
        refused("durable = \"d\"\nfilter = \"orders..eu\"", "filter");
        refused("durable = \"d\"\nack_wait_ms = 0", "ack_wait_ms");
        refused("durable = \"d\"\nlease_ms = 100", "lease_ms");
        refused(
            "durable = \"d\"\nfilter = \"orders.>\"\n[dead_letter]\nsubject = \"orders.dlq\"",
            "own dead letters",
        );
        refused("durable = \"d\"\nackwait = 1", "ackwait");
        assert!(
            parse(
                "durable = \"d\"\nfilter = \"orders.>\"\n[dead_letter]\nsubject = \"dlq.orders\""
            )
            .is_ok()
        );
    }
}
