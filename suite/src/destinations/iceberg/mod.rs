//! Apache Iceberg on a SQLite catalog, with its warehouse on a local directory or on the S3
//! object store: the conformance targets, the S3 properties of a warehouse, and the crash
//! suite's smoke test under pico-kafka (S3 warehouse).

pub mod runtime;
mod target;

pub(crate) use target::iceberg_s3_properties;
pub use target::{IcebergS3Target, IcebergTarget};

/// The iceberg-rust version the Iceberg targets and benchmarks run (the lock file's `iceberg`).
pub const ICEBERG_RUST_VERSION: &str = "0.10.1";
