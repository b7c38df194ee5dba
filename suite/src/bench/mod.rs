//! `pico-bench`: each sink beside its destination's raw bulk path, measured on the same server
//! in the same run and reported as ratios ([`report`]). The anchors of single destinations live
//! in their folders (`destinations/<x>/bench.rs`) and measure with [`crate::measure`]; here are
//! the benchmarks that span destinations (the lakehouse formats, the commit-cost soak, the
//! pico-kafka runtime end to end), the identity timings, and the report.

pub mod end_to_end;
mod identity;
mod lakehouse;
pub mod report;
mod soak;

pub use crate::destinations::clickhouse::bench::clickhouse;
pub use crate::destinations::influxdb::bench::influxdb;
pub use crate::destinations::postgres::bench::{postgres, redshift};
pub use crate::destinations::quickwit::bench::quickwit;
pub use crate::destinations::s3::bench::s3;
pub use crate::measure::{
    HISTORY_BATCH_RECORDS, Place, SIZES, batch, compare, median, payload_bytes, record, time_sink,
};
pub use identity::identity;
pub use lakehouse::{Lakehouse, lakehouse};
pub use soak::{SOAK_BATCH, Store, soak, soak_commits, soak_window, soaks};
