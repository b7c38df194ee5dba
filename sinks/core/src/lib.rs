//! The pico-sinks contract. The crate root holds what a runtime and a sink agree on, and
//! nothing else:
//!
//! * [`Record`] and [`Batch`]: what a runtime hands a sink — records of one topic-partition with
//!   strictly increasing offsets; an invalid batch is an error, never a panic.
//! * [`Sink`]: `open`, `consume`, `close`, `describe`, all on `&self`: one instance serves every
//!   partition of a process. `consume` returns only after the destination has durably accepted
//!   the batch, and may be called again with the same or an overlapping batch at any time, from
//!   a new process, and its future may be dropped at any await point.
//! * [`Outcome`]: what `consume` did — written, already present, and the records the
//!   destination cannot take ([`RejectedRecord`], each with its offset and reason). `Ok` means
//!   the offset may be committed.
//! * [`SinkError`]: `Retryable` (try the same batch again; may carry `Retry-After`) or `Fatal`
//!   (misconfiguration: the message says what to change), each with its source error.
//! * [`CommitPolicy`]: the batch size a sink whose every `consume` is a costly commit asks of
//!   its runtime ([`Sink::commit_policy`]).
//! * [`Scenario`] and [`Claim`]: the vocabulary a sink uses in [`Sink::describe`] to say what a
//!   replay becomes; the conformance suite checks those claims against real servers.
//!
//! Beside it, one module per reader:
//!
//! * [`driver`], for a runtime author: the reference runtime loop — consume, commit only after
//!   success, retry the same batch with jittered exponential backoff, hand rejected records
//!   (whole, as [`DeadLetter`]s) to a dead-letter hook.
//! * [`kit`], for a sink author: splitting a batch until refused records are isolated,
//!   per-record conversion with rejection reasons, the JSON envelope and document shapes, mapped
//!   columns, conflict actions, and how configurations keep credentials out of `Debug`
//!   ([`kit::Secret`], [`kit::redact_url`]).
//! * [`config`], for a sink's configuration: serde helpers for durations, namespaces,
//!   credentials and header lists.
//! * `testing` (feature `testing`), for tests: batches built in one line, in-memory driver
//!   hooks, and the checks of a configuration's file form (`config::checks`).

mod batch;
mod claim;
pub mod config;
mod conflict;
mod connect_failure;
mod document;
pub mod driver;
mod envelope;
mod error;
mod isolate;
pub mod kit;
mod mapping;
mod own_client;
mod policy;
mod record;
mod secret;
mod sink;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use batch::{Batch, BatchError};
pub use claim::{Claim, Description, Scenario};
pub use error::{DeadLetter, ErrorSource, RejectedRecord, SinkError};
pub use pico_identity as identity;
pub use policy::CommitPolicy;
pub use record::{Header, Record};
pub use sink::{Outcome, Sink, WriteReport};

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
