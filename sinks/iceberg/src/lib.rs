//! An Apache Iceberg sink: each batch is one fast-append snapshot whose summary carries the
//! per-partition offset watermarks, so a replay is skipped instead of appended — with no
//! coordinator and no side store.
//!
//! # Mechanism
//! * Each batch is written as a Parquet data file and committed with a fast append whose
//!   snapshot summary holds `pico.watermarks`: a JSON map from `[ns/]topic:partition`
//!   ([`pico_sink::identity::Scope::partition_text`]) to the highest offset written.
//! * Before writing, the sink loads the table and reads that map from the current snapshot,
//!   walking back through parent snapshots past any written by other engines (compaction,
//!   maintenance). Only offsets above the partition's watermark are written.
//! * **Carried forward**: every snapshot the sink writes carries the whole map (all partitions,
//!   all namespaces), not only its own partition's entry. Expiring old snapshots therefore
//!   never loses a watermark as long as the newest snapshot written by this sink is kept —
//!   the failure that loses offsets in connectors which keep each partition's offset only in
//!   the snapshot that wrote it. The map grows with the number of partitions written, in every
//!   snapshot summary.
//! * **Also a table property**: the same commit sets the table property `pico.watermarks` to
//!   the same map. Another engine's snapshots on top of the sink's, followed by an expiry that
//!   keeps only the newest, leave no summary with the map; the property is read then, so the
//!   replay is still recognised (measured by the conformance scenario
//!   `replay-after-horizon`, which does exactly that).
//! * **No rebase**: iceberg-rust's `Transaction::commit` reloads the table and re-applies an
//!   append onto whatever is current, which would append a batch another writer already
//!   committed. The sink commits through a catalog view that pins the table it read the
//!   watermark from, so the append carries a requirement on that snapshot; if anything
//!   committed in between, the catalog refuses with a conflict and the sink starts over:
//!   reload, re-read the watermark, write only what is still missing (new data file), commit.
//!   The data file of a refused attempt is left unreferenced (remove it with the usual
//!   orphan-file maintenance).
//! * Concurrent writers of different partitions conflict on the catalog pointer and retry;
//!   two writers of one partition (a zombie) cannot both commit the same offsets.
//!
//! # Premise
//! Offsets at or below a partition's watermark are taken as written, which holds for an
//! at-least-once runtime (it commits an offset only after `consume` returned).
//!
//! # Catalogs
//! [`IcebergSink::with_catalog`] takes any [`iceberg::Catalog`] (REST, Glue, …) — the
//! pinned-table view works with any catalog that checks commit requirements. With the feature
//! `sql-catalog`, `IcebergSink::sqlite` opens the SQL catalog on a SQLite file with a warehouse
//! on the local filesystem; with `s3`, `sqlite_catalog_s3` puts the warehouse on S3 through
//! OpenDAL. The table is
//! created when missing with the columns `pico_topic`, `pico_partition`, `pico_offset`,
//! `key`, `value` (binary: any payload), `headers` (JSON text), `ts` (milliseconds); offsets above
//! `i64::MAX` are rejected (Iceberg `long`).

mod catalog;
mod config;
mod readback;
mod rows;
mod sink;
#[cfg(feature = "sql-catalog")]
mod sql_catalog;
mod watermark;

/// The Iceberg library the sink is built on, so a caller's own catalog has the version the
/// sink takes ([`IcebergSink::with_catalog`]).
pub use iceberg;

pub use config::IcebergSinkConfig;
pub use iceberg::{Catalog, TableIdent};
pub use readback::{StoredRow, TableContents, read_table, table_stats};
pub use rows::{COLUMNS, table_schema};
pub use sink::IcebergSink;
#[cfg(feature = "sql-catalog")]
pub use sql_catalog::sqlite_catalog;
#[cfg(feature = "s3")]
pub use sql_catalog::sqlite_catalog_s3;
pub use watermark::{WATERMARK_PROPERTY, watermarks};

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
