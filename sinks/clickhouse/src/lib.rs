//! A ClickHouse sink whose replays leave no visible duplicate.
//!
//! ClickHouse has no unique keys and no upsert; it has three tools, and the sink uses each:
//!
//! 1. **A per-partition watermark.** Before each INSERT the sink asks for
//!    `max(pico_offset)` of the batch's topic-partition and inserts only the records above it.
//!    A replay of a committed batch (crash before the offset commit, a retry after a lost
//!    response) inserts nothing; a re-batched replay inserts only its new tail. One INSERT of
//!    fewer than `max_insert_block_size` rows is one block, written atomically, so the watermark
//!    and the data it describes cannot disagree.
//!    This relies on the runtime committing offsets only after the write: every writer of a
//!    partition resumes from the committed offset, so nothing below the maximum is missing.
//! 2. **`insert_deduplication_token`** from the batch identity, where the server supports it
//!    (22.2 and later; the table gets `non_replicated_deduplication_window`): two INSERTs of the
//!    same range — two writers that both read the watermark before either inserted — are
//!    deduplicated by the server itself.
//! 3. **`ReplacingMergeTree` ordered by `(pico_topic, pico_partition, pico_offset)`**: whatever
//!    still lands twice (overlapping ranges from two zombie writers on a server without tokens)
//!    collapses at merge time, and reads with `FINAL` never show it. Physical rows before the
//!    merge are reported by the conformance suite beside the visible ones.
//!
//! The server version is detected at `open` and [`ClickHouseSink::active_mechanisms`] says which
//! of these are in force. Everything travels through the official `clickhouse` client over the
//! HTTP interface: the fixed columns as `RowBinary` blocks compressed with LZ4, queries with
//! bound parameters. Any topic, key or value bytes round-trip; records are never rejected for
//! their content. The client's schema validation is off: it needs
//! `RowBinaryWithNamesAndTypes`, which servers before 22.x (such as the 18.16 that Debian ships)
//! lack; the sink checks the table's columns itself at `open`. Server exceptions reach the
//! client as text, so their code is read from `Code: N`.
//!
//! Mapped columns ([`ClickHouseSinkConfig::mapped_columns`]) write JSON payload fields to
//! `Nullable` columns of their own; a payload that is not a JSON object, or a value the server
//! cannot parse into the column type, rejects its record (the INSERT is split until the record is
//! isolated, each part with its own deduplication token).
//!
//! Table (created when missing): `pico_topic String, pico_partition UInt32, pico_offset UInt64,
//! key String, value String, headers String, ts Nullable(Int64)` (ms since the epoch),
//! `ENGINE = ReplacingMergeTree ORDER BY (pico_topic, pico_partition, pico_offset)`.

mod config;
mod shape;
mod sink;
mod tsv;

/// The client crate the sink is built on, so a caller's own client has the same version.
pub use clickhouse;

pub use config::ClickHouseSinkConfig;
pub use sink::ClickHouseSink;
pub use tsv::{escape, unescape_field};

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
