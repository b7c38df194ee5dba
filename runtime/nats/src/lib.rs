//! Run any pico sink under a NATS JetStream durable pull consumer.
//!
//! A JetStream consumer (one stream, optionally one filter subject) is one partition of the
//! record identity: topic the stream (or `stream>filter`), partition 0, offset the stream
//! sequence ([`pico_sink::identity::jetstream`]). The server delivers a message again — after a
//! crash, an acknowledgement that did not arrive, or its `ack_wait` — with the same stream
//! sequence, so every sink turns the redelivery into no visible duplicate as it does a Kafka
//! replay.
//!
//! A pipeline file ([`config::Pipeline`]) names the server, the stream, its filter, the durable
//! consumer, the batching, the dead-letter subject and the sink; [`runtime::run`] delivers
//! through pico-runtime's partition worker and acknowledges each message only after the sink
//! confirmed it. The durable consumer's settings ([`consumer`]) and a delivered message as a
//! [`pico_sink::Record`] ([`record`]) are each checked against a real nats-server.
//!
//! The `pico-nats` binary runs a pipeline file: `pico-nats run pipeline.toml`.

pub mod config;
pub mod consumer;
mod gate;
pub mod lease;
pub mod record;
pub mod runtime;

pub use config::Pipeline;
pub use pico_runtime::Exit;
pub use runtime::run;

/// The prefix of every metric pico-nats serves: `pico_nats_records_read_total`, …
pub const METRICS_PREFIX: &str = "pico_nats";
