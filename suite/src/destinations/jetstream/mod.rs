//! NATS JetStream (nats-server on this machine): the conformance target and the crash suite's
//! smoke test under pico-kafka.

pub mod runtime;
mod target;

pub use target::JetStreamTarget;
