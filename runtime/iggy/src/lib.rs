//! Run any pico sink under an Apache Iggy consumer group.
//!
//! An Iggy message is identified by its stream and topic names, its partition and its offset
//! ([`pico_sink::identity::iggy`]): a member of a consumer group that polls again after a crash
//! gets the same messages at the same offsets, so every sink turns the redelivery into no
//! visible duplicate as it does a Kafka replay.
//!
//! A pipeline file ([`config::Pipeline`]) names the server, the topic, the consumer group, the
//! batching, the dead-letter topic and the sink; [`runtime::run`] delivers through
//! pico-runtime's partition workers and stores the group's offset of a partition only after the
//! sink confirmed everything up to it — never at poll, as Iggy's own connector runtime does. The
//! group member ([`consumer`]) and a served message as a [`pico_sink::Record`] ([`record`]) are
//! each checked against a real Iggy server.
//!
//! The `pico-iggy` binary runs a pipeline file: `pico-iggy run pipeline.toml`.

pub mod config;
pub mod consumer;
pub mod record;
pub mod runtime;

pub use config::Pipeline;
pub use consumer::{Assignment, ConsumerError, GroupMember, Polled};
pub use pico_runtime::Exit;
pub use record::{UNDECODED_HEADERS, to_record};
pub use runtime::run;

/// The prefix of every metric pico-iggy serves: `pico_iggy_records_read_total`, …
pub const METRICS_PREFIX: &str = "pico_iggy";
