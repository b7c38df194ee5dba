//! Everything the suite knows about one destination, one folder each: its server when it has a
//! start recipe of its own (`server.rs`), its conformance target (`target.rs`), and what the
//! crash suite and the benchmarks read through. [`targets`] is the registry of the conformance
//! targets. Servers several destinations share are in [`crate::serve`] (the S3 object store of
//! s3, delta-s3 and iceberg-s3); read-back helpers they share are in [`read`]. See
//! `docs/architecture.md`.

pub mod clickhouse;
pub mod delta;
pub mod doris;
pub mod elasticsearch;
pub mod http;
pub mod iceberg;
pub mod influxdb;
pub mod meilisearch;
pub mod mongodb;
pub mod postgres;
pub mod quickwit;
pub mod read;
pub mod runtime;
pub mod s3;
pub mod stdout;
#[cfg(feature = "surrealdb")]
pub mod surrealdb;

use pico_conformance::target::Target;

use runtime::{Runtime, boxed};

/// Every conformance target, in table order.
pub fn targets() -> Vec<Box<dyn Target>> {
    vec![
        Box::new(stdout::StdoutTarget),
        Box::new(http::HttpTarget::honouring()),
        Box::new(http::HttpTarget::ignoring()),
        Box::new(postgres::PostgresTarget),
        Box::new(postgres::RedshiftTarget),
        Box::new(influxdb::InfluxTarget),
        Box::new(s3::S3Target),
        Box::new(clickhouse::ClickHouseTarget),
        Box::new(delta::DeltaTarget),
        Box::new(delta::DeltaS3Target),
        Box::new(iceberg::IcebergTarget),
        Box::new(iceberg::IcebergS3Target),
        #[cfg(feature = "surrealdb")]
        Box::new(surrealdb::SurrealTarget),
        Box::new(elasticsearch::ElasticsearchTarget),
        Box::new(mongodb::MongoTarget),
        Box::new(meilisearch::MeilisearchTarget),
        Box::new(quickwit::QuickwitTarget),
        Box::new(doris::DorisTarget),
    ]
}

/// Every destination the crash suite runs pico-kafka against, in report order.
pub const RUNTIMES: &[Runtime] = &[
    Runtime {
        id: "postgres",
        serde_name: "postgres",
        keyed: true,
        provide: || boxed(postgres::runtime::PgRuntime::provide),
    },
    Runtime {
        id: "clickhouse",
        serde_name: "clickhouse",
        keyed: true,
        provide: || boxed(clickhouse::runtime::ChRuntime::provide),
    },
    Runtime {
        id: "s3",
        serde_name: "s3",
        keyed: true,
        provide: || boxed(s3::runtime::S3Runtime::provide),
    },
    Runtime {
        id: "delta-s3",
        serde_name: "delta-s3",
        keyed: true,
        provide: || boxed(delta::runtime::DeltaS3Runtime::provide),
    },
    Runtime {
        id: "http-honouring",
        serde_name: "http",
        keyed: false,
        provide: || boxed(http::runtime::HttpRuntime::provide),
    },
];
