//! A MongoDB sink whose replays replace the same documents.
//!
//! Every record becomes a document with `_id` = the canonical record identity
//! (`[namespace/]topic:partition:offset`, [`pico_sink::identity::Scope::record_text`]); a batch
//! is written with the `update` command as an unordered list of
//! `{q: {_id}, u: document, upsert: true}` statements (at most
//! [`MongoSinkConfig::max_statements`] per command). Any replay — same batch, re-batched, a
//! lost answer, a second writer — replaces documents with identical content: no visible
//! duplicate. The answer tells new documents (`upserted`) from replaced ones, which the sink
//! reports as written and already present.
//!
//! The `update` command is used rather than the driver's `bulk_write`, which needs MongoDB 8.0;
//! this works on every server the driver supports.
//!
//! Per-statement errors decide per record: `E11000` (two concurrent upserts of one `_id` both
//! tried to insert) and transient server codes make the batch `Retryable` — the retry finds the
//! document and replaces it; other write errors (a `$`-prefixed top-level field, a document
//! the server refuses) reject that record with its offset and the server's message. A
//! write-concern error is `Retryable`. Documents above 16 MiB and integers outside the signed
//! 64-bit range are rejected before sending. Authentication failures are `Fatal`.
//!
//! Payloads are converted from JSON to BSON by the sink itself (not as Extended JSON), so a
//! payload key such as `$date` stays a plain field.

mod bson_convert;
mod config;
mod sink;

/// The driver the sink is built on, so a caller's own client has the same version.
pub use mongodb;

pub use config::MongoSinkConfig;
pub use sink::MongoSink;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
