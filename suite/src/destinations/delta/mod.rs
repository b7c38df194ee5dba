//! Delta Lake on a local directory or on the S3 object store: the conformance targets, the
//! read-back of a table, the storage options of a table on S3, and the Delta-on-S3 destination
//! pico-kafka writes into in the crash suite ([`runtime`]).

pub mod runtime;
mod target;

pub(crate) use target::delta_s3_options;
pub use target::{DeltaS3Target, DeltaTarget, read_delta};

/// The delta-rs version the Delta targets and benchmarks run (the lock file's `deltalake`).
pub const DELTA_RS_VERSION: &str = "1.1.2";
