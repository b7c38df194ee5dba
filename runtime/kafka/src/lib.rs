//! Run any pico sink under a Kafka-protocol consumer group.
//!
//! A pipeline (a TOML file, [`config::Pipeline`]) names the brokers, the group, the topics, how
//! to batch, the dead-letter topic and the sink. [`runtime::run`] consumes with manual
//! commits: each partition's records are cut into batches (max records, max bytes, linger),
//! each batch goes through the at-least-once [`pico_sink::driver::Driver`] into one sink shared by
//! every partition, and the group offset is committed only after the sink confirmed — never
//! past the oldest record read and not confirmed ([`tracker::Progress`]). Revoked partitions
//! stop at once and commit nothing more; assigned ones resume from the committed offset;
//! refused records go to the dead-letter topic with their reason and origin; SIGTERM drains
//! and commits before exit. A process that stops with an error is meant to run under a
//! supervisor, which restarts it: it resumes from the committed offsets.
//!
//! The `pico-kafka` binary runs a pipeline file: `pico-kafka run pipeline.toml`.
//!
//! librdkafka is built from the source bundled with the `rdkafka` crate (2.12), never linked
//! from the system: older system builds (Debian's 2.0.2) fail the handshake with some
//! Kafka-compatible brokers.

//! What is not Kafka's (batch forming, the in-flight tracker, riding out an outage, metrics,
//! probes, logging, the `[sink]` section) is [`pico_runtime`]'s, shared with the other
//! runtimes; its modules are re-exported here under their old paths.

pub mod config;
pub mod runtime;

#[cfg(feature = "mutants")]
pub use pico_runtime::mutants;
pub use pico_runtime::{chaos, logging, metrics, sinks, tracker};

pub use config::Pipeline;
pub use runtime::{Exit, run};

/// The prefix of every metric pico-kafka serves: `pico_kafka_records_read_total`, …
pub const METRICS_PREFIX: &str = "pico_kafka";
