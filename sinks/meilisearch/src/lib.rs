//! A Meilisearch sink whose replays replace the same documents, and whose `consume` returns
//! only once Meilisearch has indexed the batch.
//!
//! Every record becomes a document whose primary key (field `pico_key` by default) is
//! [`pico_sink::identity::Scope::meilisearch_key`]: the identity with every byte outside
//! `[A-Za-z0-9-]` escaped as `_XX` (Meilisearch keys allow no `:`), or a SHA-256 form above the
//! 511-byte limit. Documents are sent with `POST /indexes/{uid}/documents?primaryKey=…`
//! (add-or-replace), so any replay — same batch, re-batched, a lost answer, a second writer —
//! replaces documents with identical content: no visible duplicate.
//!
//! Before writing, one `POST /indexes/{uid}/documents/fetch` by the batch's keys (only the key
//! field comes back) tells which documents the index already holds: a replay sends nothing
//! and reports them as already present, a partial replay sends only the missing ones. This
//! read is cheaper than re-indexing (Meilisearch re-tokenizes every replaced document), and
//! it is the only way to tell: a finished task's `indexedDocuments` counts replaced documents
//! as indexed. A document being indexed by another writer at that moment is simply sent
//! again (add-or-replace). On a server that cannot fetch by ids, everything is sent.
//!
//! A `202 Accepted` only means *enqueued*. The sink then polls `GET /tasks/{taskUid}` until the
//! task is `succeeded`; `consume` never reports a batch written before that.
//!
//! * `failed` with a document error (`invalid_document_id`, `invalid_document_fields`,
//!   `document_fields_limit`, …) or a `413`/malformed payload: Meilisearch refuses a whole
//!   task for one document, so the batch is split in halves down to the offending records,
//!   which are rejected with their offsets and Meilisearch's message.
//! * `failed` with a primary-key conflict (the index already has another primary key) or an
//!   `auth` error: `Fatal`, saying what to change.
//! * `failed` with an `internal`/`system` error, `canceled`, or still not finished after
//!   [`MeilisearchSinkConfig::task_timeout`]: `Retryable` — the retry enqueues the same
//!   documents again, which is harmless.
//!
//! Index creation: Meilisearch creates a missing index on the first write, with the primary
//! key given. Plain HTTP through `reqwest` is used instead of `meilisearch-sdk`, which would
//! bring a second HTTP client stack for two endpoints.

mod config;
mod sink;
mod task;

/// The HTTP client the sink is built on, so a caller's own client has the same version.
pub use reqwest;

pub use config::MeilisearchSinkConfig;
pub use sink::MeilisearchSink;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
