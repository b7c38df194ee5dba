//! The pico-sinks contract.
//!
//! * [`Record`] and [`Batch`]: what a runtime hands a sink — records of one topic-partition with
//!   strictly increasing offsets; an invalid batch is an error, never a panic.
//! * [`Sink`]: `open`, `consume`, `close`, `describe`. `consume` returns only after the
//!   destination has durably accepted the batch, and may be called again with the same or an
//!   overlapping batch at any time, from a new process.
//! * [`SinkError`]: `Retryable` (try the same batch again), `Fatal` (misconfiguration: the
//!   message says what to change), `Rejected` (records the destination cannot take, each with its
//!   offset and reason; the rest of the batch was written).
//! * [`Driver`]: the reference runtime loop — consume, commit only after success, retry the same
//!   batch with exponential backoff, hand rejected records to a dead-letter hook.
//! * [`Scenario`] and [`Claim`]: the vocabulary a sink uses in [`Sink::describe`] to say what a
//!   replay becomes; the conformance suite checks those claims against real servers.

mod batch;
mod claim;
mod document;
mod driver;
mod envelope;
mod error;
mod isolate;
mod mapping;
mod record;
mod sink;

pub use batch::{Batch, BatchError};
pub use claim::{Claim, Description, Scenario};
pub use document::{DocumentShape, RESERVED_PREFIX, document_json};
pub use driver::{Delivered, Driver, DriverError, DriverHooks, MemoryHooks, RetryPolicy};
pub use envelope::{Envelope, EnvelopeError, EnvelopeHeader, Payload};
pub use error::{RejectedRecord, SinkError, convert_records, error_chain};
pub use isolate::{Attempt, Isolator};
pub use mapping::{MappedColumn, extract_mapped};
pub use pico_identity as identity;
pub use record::{Header, Record};
pub use sink::{Sink, WriteReport};
