//! A Redshift sink that makes replays invisible although Redshift does not enforce keys.
//!
//! Redshift accepts `PRIMARY KEY` but never enforces it, so `INSERT … ON CONFLICT` does not
//! exist there and a plain insert of a replay repeats rows. Each batch is instead one
//! transaction that
//!
//! 1. `LOCK`s the target table (Redshift would otherwise abort one of two concurrent writers
//!    with a serializable-isolation error, and two zombie writers could both insert),
//! 2. stages the rows in a temporary table (multi-row parameterized `INSERT`s),
//! 3. counts the staged rows already present, and
//! 4. `MERGE INTO target USING stage ON (pico_topic, pico_partition, pico_offset)` —
//!    `WHEN MATCHED THEN UPDATE … WHEN NOT MATCHED THEN INSERT …` — or, with
//!    [`UpsertStrategy::DeleteInsert`] for clusters without MERGE, `DELETE … USING stage` then
//!    `INSERT … SELECT`; with [`ConflictAction::Nothing`], an `INSERT … WHERE NOT EXISTS`.
//!
//! Column layout (Redshift types; `key` is base64 text since `VARBYTE` is Redshift-only):
//! `pico_topic VARCHAR(1024)`, `pico_partition INTEGER`, `pico_offset BIGINT`,
//! `key VARCHAR(65535)`, `value VARCHAR(65535)`, `headers VARCHAR(65535)`, `ts TIMESTAMPTZ`,
//! mapped columns, `SORTKEY (pico_topic, pico_partition, pico_offset)`.
//!
//! Records Redshift cannot hold are rejected with their offset: a value that is not UTF-8,
//! holds NUL, or exceeds 65535 bytes; a topic over 1024 bytes; the identity limits shared with
//! the Postgres sink.
//!
//! ## Verified on PostgreSQL, and what that does not cover
//!
//! The conformance suite runs this sink against PostgreSQL with [`Dialect::PostgresStandIn`]:
//! the same statements, a table created **without** a primary key (so nothing but the sink's
//! own MERGE keeps duplicates out, as on Redshift) and without `SORTKEY`. Not covered there:
//!
//! * Redshift's MERGE restrictions: the source may not match one target row twice (a batch
//!   never holds one offset twice, so it cannot), the target must be a permanent table, and
//!   MERGE is unavailable on some older clusters (use `DeleteInsert`).
//! * Serializable isolation errors (SQLSTATE XX000 "1023") that Redshift raises for
//!   concurrent writers without the lock; they are classified retryable.
//! * `COPY` from S3 for large batches: not implemented. Staging goes through parameterized
//!   multi-row `INSERT`s, which Redshift handles well up to tens of thousands of rows per batch;
//!   beyond that a manifest-based S3 `COPY` would be faster, and no S3 + Redshift pair runs
//!   here to verify one.
//! * `SUPER` values: payloads are stored as `VARCHAR` text (JSON stays JSON text).

mod config;
mod rows;
mod schema;
mod sink;
mod write;

pub use config::{Dialect, RedshiftSinkConfig, UpsertStrategy};
pub use pico_pg_common::{
    ConflictAction, ConnectionConfig, MappedColumn, Pool, QualifiedTable, deadpool_postgres,
    tokio_postgres,
};
pub use sink::RedshiftSink;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
