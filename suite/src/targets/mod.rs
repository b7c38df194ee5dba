//! One target per sink (per destination flavour). Adding a sink to the suite means adding one
//! module here and one line to [`all`].

mod clickhouse;
mod delta;
mod doris;
mod elasticsearch;
mod http;
mod iceberg;
mod influxdb;
mod meilisearch;
mod mongodb;
mod postgres;
pub mod quickwit;
mod redshift;
mod s3;
mod stdout;
#[cfg(feature = "surrealdb")]
mod surrealdb;

use pico_sink::Envelope;
use pico_sink::identity::Scope;

use pico_conformance::target::{
    PayloadForm, ReadRow, Readback, Target, checksum, payload_checksum,
};

/// The delta-rs version the Delta targets and benchmarks run (the lock file's `deltalake`).
pub const DELTA_RS_VERSION: &str = "1.1.2";
/// The iceberg-rust version the Iceberg targets and benchmarks run (the lock file's `iceberg`).
pub const ICEBERG_RUST_VERSION: &str = "0.10.1";

pub use clickhouse::ClickHouseTarget;
pub(crate) use clickhouse::read_rows as read_clickhouse_rows;
pub(crate) use delta::delta_s3_options;
pub use delta::{DeltaS3Target, DeltaTarget, read_delta};
pub use doris::DorisTarget;
pub use elasticsearch::ElasticsearchTarget;
pub use http::HttpTarget;
pub(crate) use iceberg::iceberg_s3_properties;
pub use iceberg::{IcebergS3Target, IcebergTarget};
pub use influxdb::InfluxTarget;
pub use meilisearch::MeilisearchTarget;
pub use mongodb::MongoTarget;
pub use postgres::PostgresTarget;
pub use quickwit::QuickwitTarget;
pub use redshift::RedshiftTarget;
pub use s3::S3Target;
pub(crate) use s3::read_objects;
pub use stdout::StdoutTarget;
#[cfg(feature = "surrealdb")]
pub use surrealdb::SurrealTarget;

/// Every target, in table order.
pub fn all() -> Vec<Box<dyn Target>> {
    vec![
        Box::new(StdoutTarget),
        Box::new(HttpTarget::honouring()),
        Box::new(HttpTarget::ignoring()),
        Box::new(PostgresTarget),
        Box::new(RedshiftTarget),
        Box::new(InfluxTarget),
        Box::new(S3Target),
        Box::new(ClickHouseTarget),
        Box::new(DeltaTarget),
        Box::new(DeltaS3Target),
        Box::new(IcebergTarget),
        Box::new(IcebergS3Target),
        #[cfg(feature = "surrealdb")]
        Box::new(SurrealTarget),
        Box::new(ElasticsearchTarget),
        Box::new(MongoTarget),
        Box::new(MeilisearchTarget),
        Box::new(QuickwitTarget),
        Box::new(DorisTarget),
    ]
}

/// Reads a stored JSON document in [`pico_sink::DocumentShape::Envelope`] (document stores
/// and search indexes, which normalize JSON) back into a row with a [`PayloadForm::Json`]
/// checksum.
pub(crate) fn row_from_document(document: serde_json::Value) -> Result<ReadRow, String> {
    let envelope: Envelope = serde_json::from_value(document.clone())
        .map_err(|e| format!("stored document is not an envelope ({e}): {document}"))?;
    let record = envelope
        .to_record(&Scope::default())
        .map_err(|e| format!("stored document is not a valid envelope: {e}"))?;
    Ok(ReadRow {
        id: record.id,
        checksum: payload_checksum(PayloadForm::Json, &record.value),
        value: record.value,
    })
}

/// Reads an envelope (stdout line, HTTP element) back into a row.
pub(crate) fn row_from_envelope(envelope: &Envelope) -> Result<ReadRow, String> {
    let record = envelope
        .to_record(&Scope::default())
        .map_err(|e| format!("stored element is not a valid envelope: {e}"))?;
    Ok(ReadRow {
        id: record.id,
        checksum: checksum(&record.value),
        value: record.value,
    })
}

/// The rows of an Elasticsearch-style search answer (`hits.hits[]._source`) holding envelope
/// documents.
pub(crate) fn rows_from_hits(answer: &serde_json::Value) -> Result<Readback, String> {
    let hits = answer["hits"]["hits"]
        .as_array()
        .ok_or_else(|| format!("unexpected search answer: {answer}"))?;
    let rows = hits
        .iter()
        .map(|h| row_from_document(h["_source"].clone()))
        .collect::<Result<_, _>>()?;
    Ok(Readback::of_rows(rows))
}
