//! An InfluxDB sink whose replays overwrite the points they wrote.
//!
//! InfluxDB identifies a point by measurement, tag set and timestamp, and a second write of the
//! same point replaces its fields. So the sink makes every point a function of the record
//! identity alone:
//!
//! * tags `pico_topic` (namespace-qualified) and `pico_partition` are added to the point;
//! * the timestamp is the record's millisecond timestamp (or a payload field) in nanoseconds
//!   **plus `offset mod 1 000 000` in the sub-millisecond digits**;
//! * the offset is also written as the integer field `pico_offset`.
//!
//! A replay of a record lands on exactly the point it wrote before: **overwritten in place**.
//! An exact replay of a batch is not even rewritten: the batch's last point carries a seal
//! written after the batch (see [`SEAL_FIRST`]), and one query of that point answers it.
//! Two distinct records could share a point only if one partition held two offsets a multiple of
//! 1 000 000 apart with the same millisecond timestamp (a million records in one millisecond of
//! one partition), and records of different partitions or topics differ in their tags.
//!
//! The price is series cardinality: each series (measurement + your tags) is multiplied by the
//! number of topic-partitions that write it — not by the number of records, which an offset
//! *tag* would do. The conformance suite reports the series it measured.
//!
//! The timestamp's millisecond part keeps its meaning for queries; the sub-millisecond part is
//! the offset, so precision below a millisecond is not available for your own data.
//!
//! Payloads are JSON objects mapped by [`PointMapping`] (measurement, tags, fields, time field) or
//! single lines of line protocol ([`Payload::LineProtocol`]; the sink adds the pico tags and the
//! timestamp when the line has none). A record without a usable timestamp is `Rejected` unless
//! [`TimestampPolicy::RecordOffset`] is chosen; so are values InfluxDB cannot hold (nested
//! values are written as JSON strings; strings with line breaks, empty topics, offsets above
//! `i64::MAX` are rejected), each with its offset and reason.
//!
//! APIs: InfluxDB 1.x `/write?db=` ([`Api::V1`]) and 2.x `/api/v2/write` ([`Api::V2`]), plain
//! HTTP through reqwest.

mod config;
mod line;
mod probe;
mod seal;
mod sink;

/// The HTTP client the sink is built on, so a caller's own client has the same version.
pub use reqwest;

pub use config::{Api, InfluxSinkConfig, Payload, PointMapping, TimestampPolicy};
pub use line::{
    DIGEST_FIELD, OFFSET_FIELD, PARTITION_TAG, SUB_MS, TOPIC_TAG, digest31, point_time_ns,
};
pub use seal::{SEAL_COUNT, SEAL_DIGEST, SEAL_FIELDS, SEAL_FIRST};
pub use sink::InfluxSink;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
