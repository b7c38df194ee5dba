//! The pipeline file of pico-iggy: the consumer group, how to batch, where dead letters go, and
//! which sink writes. TOML, one file per pipeline:
//!
//! ```toml
//! [iggy]
//! url = "iggy://pico:secret@127.0.0.1:8090"
//! stream = "orders"
//! topic = "payments"
//! group = "payments-to-postgres"
//!
//! [dead_letter]
//! topic = "payments-dlq"          # a topic of the same stream (or set `stream`)
//!
//! [sink]
//! kind = "postgres"
//! table = "payments"
//! ```
//!
//! `[batch]`, `[retry]`, `[metrics]`, `[log]` and `[chaos]` are pico-runtime's, as in
//! pico-kafka's pipeline file.

use std::path::Path;

pub use pico_runtime::pipeline_file::ConfigError;
use pico_runtime::pipeline_file::{self, PipelineFile};
use pico_runtime::settings::{
    BatchSettings, ChaosSettings, LogSettings, MetricsSettings, RetrySettings,
};
use pico_runtime::sinks::SinkSettings;
use pico_sink::identity::iggy::{IGGY_NAME_MAX, IggySource};
use serde::Deserialize;

/// A whole pipeline file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pipeline {
    /// The server, the topic and the consumer group.
    pub iggy: IggySettings,
    /// Per-partition batching.
    #[serde(default)]
    pub batch: BatchSettings,
    /// Where refused records go; without it a refused record stops the pipeline (nothing is
    /// stored past it).
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

/// `[iggy]`: what the runtime consumes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IggySettings {
    /// The server and the user: `iggy://USER:PASSWORD@HOST:PORT` (TCP).
    pub url: String,
    /// The stream's name.
    pub stream: String,
    /// The topic's name. Stream and topic are part of every record's identity.
    pub topic: String,
    /// The consumer group; created if missing. Its stored offsets are where a restarted member
    /// resumes.
    pub group: String,
    /// How often the member asks the group which partitions it owns, ms (and at once when the
    /// server refuses a poll of a partition it lost).
    #[serde(default = "default_assignment_interval_ms")]
    pub assignment_interval_ms: u64,
    /// How often the progress line is logged, s.
    #[serde(default = "default_progress_secs")]
    pub progress_secs: u64,
}

fn default_assignment_interval_ms() -> u64 {
    1_000
}

fn default_progress_secs() -> u64 {
    30
}

impl IggySettings {
    /// The source every record's identity comes from.
    pub fn source(&self) -> Result<IggySource, ConfigError> {
        IggySource::new(&self.stream, &self.topic)
            .map_err(|e| ConfigError::Invalid(format!("iggy.stream or iggy.topic: {e}")))
    }
}

/// `[dead_letter]`: the Iggy topic refused records are sent to. Each dead letter carries its
/// record's value and headers plus `pico.dlq.*` headers (reason, origin).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeadLetterSettings {
    /// The stream of the dead-letter topic: the source's stream without it.
    #[serde(default)]
    pub stream: Option<String>,
    /// The dead-letter topic; it must exist.
    pub topic: String,
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

    /// The dead-letter topic, if the file names one.
    pub fn dead_letters(&self) -> Option<Result<IggySource, ConfigError>> {
        self.dead_letter.as_ref().map(|d| {
            IggySource::new(d.stream.as_deref().unwrap_or(&self.iggy.stream), &d.topic)
                .map_err(|e| ConfigError::Invalid(format!("dead_letter: {e}")))
        })
    }
}

impl PipelineFile for Pipeline {
    fn check(&self) -> Result<(), ConfigError> {
        let bad = |m: &str| Err(ConfigError::Invalid(m.into()));
        let source = self.iggy.source()?;
        if !self.iggy.url.starts_with("iggy://") {
            return bad("iggy.url is iggy://USER:PASSWORD@HOST:PORT (TCP)");
        }
        if self.iggy.group.is_empty() || self.iggy.group.len() > IGGY_NAME_MAX {
            return bad("iggy.group is a name of 1 to 255 bytes");
        }
        if self.iggy.assignment_interval_ms == 0 {
            return bad("iggy.assignment_interval_ms must be above 0");
        }
        if let Some(why) =
            pico_runtime::settings::problem(&self.batch, &self.retry, self.metrics.as_ref())
        {
            return bad(why);
        }
        if self
            .dead_letters()
            .transpose()?
            .is_some_and(|dlq| dlq == source)
        {
            return bad(
                "dead_letter.topic is iggy.topic: the pipeline would consume its own dead \
                 letters; send them to another topic",
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
        format!("group {}", self.iggy.group)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str =
        "[iggy]\nurl = \"iggy://u:p@127.0.0.1:8090\"\nstream = \"orders\"\ngroup = \"g\"\n";

    fn parse(tail: &str) -> Result<Pipeline, ConfigError> {
        Pipeline::from_toml(&format!("{HEAD}{tail}\n[sink]\nkind = \"stdout\"\n"))
    }

    #[test]
    fn a_pipeline_parses_with_defaults() {
        let p = parse("topic = \"payments\"").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.iggy.assignment_interval_ms, 1_000);
        assert_eq!(
            p.iggy.source().map(|s| s.topic().to_owned()).ok(),
            Some("orders/payments".into())
        );
        assert!(p.dead_letters().is_none());
        assert_eq!(p.consumer(), "group g");
    }

    #[test]
    fn what_cannot_work_is_refused_with_what_to_change() {
        let refused = |tail: &str, says: &str| match parse(tail) {
            Err(e) => assert!(e.to_string().contains(says), "{tail}: {e}"),
            Ok(_) => panic!("{tail}: accepted"),
        };
        refused("topic = \"\"", "iggy.topic");
        refused(
            "topic = \"t\"\nassignment_interval_ms = 0",
            "assignment_interval_ms",
        );
        refused(
            "topic = \"t\"\n[dead_letter]\ntopic = \"t\"",
            "own dead letters",
        );
        refused("topic = \"t\"\ntopics = [\"t\"]", "topics");
        let p = parse("topic = \"t\"\n[dead_letter]\ntopic = \"t-dlq\"").unwrap();
        assert_eq!(
            p.dead_letters()
                .map(|d| d.map(|s| s.topic().to_owned()).ok()),
            Some(Some("orders/t-dlq".into()))
        );
        let other_stream = "topic = \"t\"\n[dead_letter]\nstream = \"dlq\"\ntopic = \"t\"";
        assert!(parse(other_stream).is_ok());
    }
}
