//! An Elasticsearch sink whose replays overwrite the same documents.
//!
//! Every record becomes one document whose `_id` is the record identity
//! ([`pico_sink::identity::Scope::elasticsearch_id`]: `[namespace/]topic:partition:offset`, or a
//! SHA-256 form above Elasticsearch's 512-byte `_id` limit). Batches go through the `_bulk` API:
//!
//! * **Index mode** (the default, for regular indices): `index` operations. A replay — same
//!   batch, re-batched, a lost answer, a second writer on the same partition — writes the same
//!   `_id`s again, which replaces each document with identical content: no visible duplicate.
//!   Items report `created` or `updated`; the sink counts them as written and already present.
//! * **Data-stream mode**: data streams only take `create`. The sink sends `create` with the same
//!   `_id`s and counts `409 version_conflict_engine_exception` as *already written*. Limit: a
//!   data stream checks `_id` only within its current backing index, so a replay that arrives
//!   after a rollover is indexed again. Documents need `@timestamp`: the record timestamp is
//!   used, and a record without one is rejected.
//!
//! Per-item results decide per record: 2xx written; 409 (create) already present; 429 and 5xx
//! items make the batch `Retryable` (retrying repeats idempotent operations); 400-class
//! mapping and parsing errors reject that record with its offset and Elasticsearch's reason;
//! a missing index (with auto-creation off) is `Fatal`. A whole request answered 413 is split in
//! halves; 401/403 are `Fatal`; 429/5xx honour `Retry-After`. Requests are cut at
//! [`ElasticsearchSinkConfig::max_bulk_bytes`].
//!
//! `_bulk` answers after the primary and replicas have the operations in their translogs
//! (durable by default); visibility to search follows the refresh interval unless
//! [`Refresh`] says otherwise.
//!
//! The `elasticsearch` client crate is not used: only pre-releases of it exist for the 9.x
//! API, while `_bulk` is plain NDJSON over HTTP.

mod bulk;
mod config;
mod sink;

/// The HTTP client the sink is built on, so a caller's own client has the same version.
pub use reqwest;

pub use config::{ElasticsearchSinkConfig, IndexMode, Refresh};
pub use sink::ElasticsearchSink;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
