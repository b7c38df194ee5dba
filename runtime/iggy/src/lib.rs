//! Run any pico sink under an Apache Iggy consumer group.
//!
//! An Iggy message is identified by its stream and topic names, its partition and its offset
//! ([`pico_sink::identity::iggy`]): a member of a consumer group that polls again after a crash
//! gets the same messages at the same offsets, so every sink turns the redelivery into no
//! visible duplicate as it does a Kafka replay.
//!
//! This crate holds, so far, the two parts the runtime is built on, each checked against a real
//! Iggy server: the group member that polls from positions it keeps and stores an offset only
//! when told to ([`consumer`]), and a served message as a [`pico_sink::Record`] ([`record`]).
//! The pipeline runtime (`pico-iggy run pipeline.toml`), on pico-runtime's partition worker,
//! comes next (issue #42 step 3).

pub mod consumer;
pub mod record;

pub use consumer::{Assignment, ConsumerError, GroupMember, Polled};
pub use record::{RecordError, to_record};
