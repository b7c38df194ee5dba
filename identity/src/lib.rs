//! Stable identities for records delivered at least once.
//!
//! A connector runtime hands a sink the same record again after a crash, a lost acknowledgement
//! or a plugin error. The record arrives at the same `topic:partition:offset` every time, so that
//! triple is a stable identity: a destination that upserts on it (or on a batch token derived
//! from a [`BatchId`]) turns a replay into a no-op.
//!
//! This crate owns that identity and every way of writing it down:
//!
//! * [`RecordId`] and [`BatchId`] with a canonical text form (`topic:partition:offset`,
//!   `topic:partition:first..=last`) that is parsed from the right, so any topic string —
//!   empty, full of `:`, unicode, 10 KB long — round-trips.
//! * [`Scope`]: an optional [`Namespace`] (source cluster or runtime name) that prefixes every
//!   identity, so two clusters with the same topic names cannot collide in one destination.
//! * Per-destination encodings on [`Scope`] that respect each destination's alphabet and length
//!   limit. Each is listed in [`ENCODINGS`] with whether it is injective or hash-shortened.
//! * The column names every table-shaped destination uses ([`columns`]).
//! * How other brokers' positions map onto the identity: NATS JetStream's stream sequence
//!   ([`jetstream`]), Apache Iggy's partition offset ([`iggy`]).
//!
//! ```
//! use pico_identity::{BatchId, Namespace, RecordId, Scope};
//!
//! let id = RecordId::new("orders:eu", 3, 42);
//! assert_eq!(id.to_string(), "orders:eu:3:42");
//! assert_eq!("orders:eu:3:42".parse::<RecordId>().unwrap(), id);
//!
//! let scope = Scope::new(Some(Namespace::new("prod-1").unwrap()));
//! assert_eq!(scope.record_text(&id), "prod-1/orders:eu:3:42");
//! assert_eq!(scope.meilisearch_key(&id), "prod-1_2Forders_3Aeu_3A3_3A42");
//!
//! let batch = BatchId::new("orders:eu", 3, 0, 99).unwrap();
//! assert_eq!(scope.doris_label(&batch), "prod-1_2Forders:eu:3:0_2E_2E_3D99");
//! ```

mod batch_id;
pub mod columns;
mod encodings;
mod error;
mod escape;
pub mod iggy;
pub mod jetstream;
mod namespace;
mod record_id;

pub use batch_id::BatchId;
pub use encodings::{
    ENCODINGS, EncodingInfo, IdempotencyKeyStyle, Injectivity, SurrealRecordKey, TERM_KEY_MAX,
};
pub use error::IdentityError;
pub use namespace::{Namespace, Scope};
pub use record_id::RecordId;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
