//! A Delta Lake sink that commits each batch with its offset watermark, atomically.
//!
//! Every commit carries a Delta `txn` action — application id
//! `pico:{namespace/}topic:partition`, version = the batch's last offset — in the same atomic log
//! entry as the data files it adds. Before writing, the sink reads the committed version of that
//! application id and writes only records above it; a replay (same or re-batched) is skipped or
//! trimmed to its new tail. No coordinator, no side store: the table is its own watermark.
//!
//! **Concurrent writers.** delta-rs does not refuse a second commit carrying an application id
//! it has already seen (delta-rs #2580): with its automatic retry, a commit that lost the race
//! for a table version would be rebased and appended again. This sink therefore commits with
//! retries off: when another writer took the version it was writing against, the commit fails,
//! the sink reloads the table, re-reads its application version, recomputes the tail and tries
//! again (up to [`DeltaSinkConfig::commit_attempts`] times). Writers of different partitions
//! simply retry; two writers of one partition (a zombie after a rebalance) end with the loser
//! writing only what the winner did not.
//!
//! **Commit cost.** The sink writes each commit's log entry itself, with the log store's
//! create-if-absent, and keeps the version and the watermarks it committed on top of the table
//! state it loaded; delta-rs's own commit would replay every live file into that state after
//! each commit. The state is reloaded after a lost race and around each checkpoint.
//!
//! **The premise of every watermark.** Skipping offsets at or below the committed version is
//! safe because a runtime commits a consumer offset only after the write: whoever writes a
//! partition resumes from the committed offset, so everything below the highest committed
//! version was written. A writer that started *above* unwritten records (which needs an offset
//! committed without its write — at-most-once) would have those records skipped by the others.
//!
//! **Retention.** Delta keeps `txn` actions for `delta.setTransactionRetentionDuration` (unset:
//! forever). If that property is set and a partition writes nothing for longer, its watermark
//! is dropped at the next checkpoint, and a replay older than that would be appended again. Leave
//! it unset, or longer than any replay horizon of your runtime. Checkpoints are written every
//! [`DeltaSinkConfig::checkpoint_interval`] commits (`delta.checkpointInterval`).
//!
//! **On S3** (cargo feature `s3`; `s3://bucket/path` with the endpoint and credentials in
//! [`DeltaSinkConfig::storage_options`]): a commit is a conditional PUT of the next log entry
//! (`If-None-Match: *`), so two writers cannot both create a version and no DynamoDB lock table
//! is needed — the store must honour conditional PUT (AWS S3, MinIO, SeaweedFS do). A lost answer
//! to that PUT is safe: the retry either meets 412 (the object store's own retry) or re-reads
//! the committed `txn` version (the sink's), and skips the batch. Verified against SeaweedFS
//! with the answer to the commit PUT cut.
//!
//! Table (created when missing): `pico_topic string, pico_partition long, pico_offset long,
//! key binary, value binary, headers string, ts long` (ms since the epoch). Offsets above
//! `i64::MAX` are rejected with their offset (a Delta `long` and the `txn` version are signed).

mod arrow_rows;
mod config;
mod held;
mod sink;

/// The Delta library the sink is built on (and its `logstore::object_store`), so a caller's own
/// object store has the version the sink takes.
pub use deltalake;

pub use config::DeltaSinkConfig;
pub use sink::{DeltaSink, app_id};

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
