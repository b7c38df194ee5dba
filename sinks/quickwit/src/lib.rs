//! A Quickwit sink. Quickwit's ingest API has no document ids, so the sink keeps replays out
//! with a per-partition watermark read from the index itself.
//!
//! Before each batch the sink searches the index for the highest `pico_offset` of the batch's
//! topic-partition — a `term` filter on `pico_partition_key`, sorted by the `pico_offset` fast
//! field — and ingests only the records above it, with `commit=wait_for` (or `force`), so the
//! documents are searchable, and visible to the next watermark search, before `consume`
//! returns. After the ingest it reads the batch's distinct offsets back (a terms aggregation,
//! so copies written by another writer cannot crowd offsets out of the answer); records Quickwit
//! dropped (a document its doc mapping cannot parse) are reported as rejected with their
//! offsets, never dropped silently.
//!
//! `pico_partition_key` is [`pico_sink::identity::Scope::term_partition_key`]: the readable
//! `[ns/]topic:partition` up to 254 bytes, a SHA-256 form above. Quickwit's `raw` tokenizer
//! drops tokens of 255 bytes or more (measured on Quickwit 0.9: a term query finds a 254-byte
//! topic and nothing for 255), so matching on `pico_topic` itself would miss long topics: their
//! watermark would always look empty and their documents dropped.
//!
//! What this covers and what it does not:
//!
//! * **Covered**: a replay of the same batch or of an overlapping one after the first one
//!   returned (crash before the runtime's commit, re-batched redelivery, one-record
//!   redeliveries, an outage followed by retries): skipped below the watermark.
//! * **Not covered — a lost answer before the commit published**: if the connection breaks
//!   while Quickwit is still waiting for its commit, the documents are in its write-ahead log
//!   but not yet searchable; the retry's watermark search misses them and they are ingested
//!   again. The same happens when a runtime drops the `consume` future while Quickwit waits
//!   (shutdown, rebalance). The conformance suite measures how often this leaves duplicates
//!   (scenarios lost-ack and cancelled-consume).
//! * **Not covered — two writers on one partition at once** (a zombie after a rebalance): both
//!   read the same watermark and both ingest.
//! * **Premise**: offsets at or below the watermark were written. That holds for an
//!   at-least-once runtime, which only commits an offset after `consume` returned; a writer
//!   that skips ahead of the committed offset would have the gap treated as written.
//!
//! With [`QuickwitSinkConfig::create_index`] the sink creates a missing index whose doc
//! mapping is dynamic plus the `pico_*` fields (`pico_topic` and `pico_partition_key` raw text,
//! `pico_partition` and `pico_offset` as fast u64). An existing index must map those fields the
//! same way.

mod config;
mod requests;
mod sink;

/// The HTTP client the sink is built on, so a caller's own client has the same version.
pub use reqwest;

pub use config::{Commit, QuickwitSinkConfig};
pub use sink::QuickwitSink;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
