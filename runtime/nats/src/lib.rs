//! Run any pico sink under a NATS JetStream durable pull consumer.
//!
//! A JetStream consumer (one stream, optionally one filter subject) is one partition of the
//! record identity: topic the stream (or `stream>filter`), partition 0, offset the stream
//! sequence ([`pico_sink::identity::jetstream`]). The server delivers a message again — after a
//! crash, an acknowledgement that did not arrive, or its `ack_wait` — with the same stream
//! sequence, so every sink turns the redelivery into no visible duplicate as it does a Kafka
//! replay.
//!
//! This first part holds what the runtime is built on, each piece checked against a real
//! nats-server: the durable pull consumer's configuration ([`consumer`]) and a delivered
//! message as a [`pico_sink::Record`] ([`record`]). The consumer loop on
//! [`pico_runtime`](https://docs.rs/pico-runtime)'s workers comes next (issue #42, step 2).

pub mod consumer;
pub mod record;
