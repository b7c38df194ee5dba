//! Run any pico sink under a Kafka-protocol consumer group.
//!
//! A pipeline (a TOML file, [`config::Pipeline`]) names the brokers, the group, the topics, how
//! to batch, the dead-letter topic and the sink. [`runtime::run`] consumes with manual
//! commits: each partition's records are cut into batches (max records, max bytes, linger),
//! each batch goes through the at-least-once [`pico_sink::Driver`] into one sink shared by
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

pub mod chaos;
pub mod config;
mod endpoint;
mod fence;
mod health;
pub mod logging;
mod metered;
pub mod metrics;
#[cfg(feature = "mutants")]
pub mod mutants;
mod outage;
mod pending;
pub mod runtime;
pub mod sinks;
pub mod tracker;

pub use config::Pipeline;
pub use runtime::{Exit, run};
