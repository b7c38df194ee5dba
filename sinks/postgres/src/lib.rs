//! A Postgres sink that makes replays invisible.
//!
//! Every record lands in a row keyed by `PRIMARY KEY (pico_topic, pico_partition, pico_offset)`.
//! Each batch is one transaction. One index probe reads `count(*)` and the sum of the
//! `pico_digest` column (a 64-bit digest of each record's content) over the batch's offset
//! range. If the table holds exactly the batch (an exact replay), nothing is written and the
//! batch is reported as already present. If no row is there (a first write), the rows are binary-`COPY`ed straight
//! into the table inside a savepoint. Otherwise (a replay), or if a concurrent writer inserts
//! one of those keys meanwhile (the COPY then fails with a unique violation and the savepoint is
//! rolled back), the rows are staged — binary `COPY` into a temporary table for large batches,
//! one `INSERT … SELECT FROM unnest(…)` for small ones — and moved with
//! `INSERT … ON CONFLICT (pico_*) DO UPDATE` (skipping identical rows) or `DO NOTHING`. A replay — same batch, another
//! batch boundary, a retry after a lost acknowledgement, a second writer on the same partition —
//! lands on the rows already there: no visible duplicate, and nothing is committed unless the
//! whole batch is.
//!
//! Default table (created when `create_if_missing`):
//!
//! ```sql
//! CREATE TABLE "public"."events" (
//!   pico_topic text NOT NULL, pico_partition int NOT NULL, pico_offset bigint NOT NULL,
//!   key bytea, value jsonb,            -- or bytea (ValueColumn::Bytea)
//!   headers jsonb, ts timestamptz,
//!   -- mapped columns, one per MappedColumn
//!   pico_digest bigint,                -- tables without it: replays take the upsert path
//!   PRIMARY KEY (pico_topic, pico_partition, pico_offset));
//! ```
//!
//! Bad input is reported per record in [`pico_sink::Outcome::rejected`] while the rest of the
//! batch is written: a value that is not JSON (for a `jsonb` column; the server's jsonb input
//! judges it, the sink checks only UTF-8 and emptiness itself) or holds `\u0000`, a NUL in
//! the topic or a header name, an offset above `i64::MAX`, a partition above `i32::MAX`, a
//! timestamp outside PostgreSQL's range, and anything the server refuses with a data error
//! (class 22/23: a mapped field that does not cast, say) — the batch is split until the
//! offending records are isolated. Misconfiguration (missing table without
//! `create_if_missing`, wrong column types, no unique key on the pico columns) is `Fatal` with
//! what to change.

mod config;
mod copy_binary;
mod rows;
mod schema;
mod sink;
mod write;

pub use write::RawJsonb;

pub use config::{PostgresSinkConfig, ValueColumn};
pub use pico_pg_common::{
    ConflictAction, ConnectionConfig, MappedColumn, Pool, QualifiedTable, deadpool_postgres,
    tokio_postgres,
};
pub use sink::PostgresSink;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
