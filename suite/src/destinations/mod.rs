//! Everything the suite knows about one destination, one folder each: its server when it has a
//! start recipe of its own (`server.rs`), its conformance target (`target.rs`), and what the
//! crash suite and the benchmarks read through. [`ALL`] is the one registry: an [`Entry`] per
//! destination naming its conformance targets, its crash-suite runtime and its benchmark.
//! Servers several destinations share are in [`crate::serve`] (the S3 object store of s3,
//! delta-s3 and iceberg-s3); read-back helpers they share are in [`read`]. See
//! `docs/architecture.md`.

pub mod clickhouse;
pub mod delta;
pub mod doris;
pub mod elasticsearch;
pub mod http;
pub mod iceberg;
pub mod influxdb;
pub mod jetstream;
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

use crate::measure::{BenchSize, Measuring};
use runtime::Runtime;

/// What the suite knows about one destination: the one list of them is [`ALL`].
#[derive(Debug)]
pub struct Entry {
    /// Its id (the sink crate's name without `pico-sink-`).
    pub id: &'static str,
    /// Its conformance targets, in table order (a destination may run in several flavours:
    /// local and on S3, honouring and ignoring a key).
    pub targets: fn() -> Vec<Box<dyn Target>>,
    /// Its entry in the crash suite, which runs pico-kafka against it, if it has one.
    pub runtime: Option<&'static Runtime>,
    /// Its benchmark beside the destination's raw path, if it has one of its own (the
    /// lakehouse formats are measured by `bench::lakehouse`, which spans them).
    pub bench: Option<fn(BenchSize) -> Measuring>,
}

impl Entry {
    /// A destination with conformance targets only; add a `runtime` or a `bench` with
    /// `Entry { bench: Some(…), ..Entry::of(…) }`.
    pub const fn of(id: &'static str, targets: fn() -> Vec<Box<dyn Target>>) -> Entry {
        Entry {
            id,
            targets,
            runtime: None,
            bench: None,
        }
    }
}

/// Every destination, in table order: the conformance targets, the crash suite's sinks and
/// pico-bench's sinks are read from here.
pub const ALL: &[Entry] = &[
    Entry {
        runtime: Some(&stdout::runtime::RUNTIME),
        ..Entry::of("stdout", || vec![Box::new(stdout::StdoutTarget)])
    },
    Entry {
        runtime: Some(&http::runtime::RUNTIME),
        ..Entry::of("http", || {
            vec![
                Box::new(http::HttpTarget::honouring()),
                Box::new(http::HttpTarget::ignoring()),
            ]
        })
    },
    Entry {
        runtime: Some(&postgres::runtime::RUNTIME),
        bench: Some(|size| Box::pin(postgres::bench::postgres(size))),
        ..Entry::of("postgres", || vec![Box::new(postgres::PostgresTarget)])
    },
    Entry {
        runtime: Some(&postgres::redshift_runtime::RUNTIME),
        bench: Some(|size| Box::pin(postgres::bench::redshift(size))),
        ..Entry::of("redshift", || vec![Box::new(postgres::RedshiftTarget)])
    },
    Entry {
        runtime: Some(&influxdb::runtime::RUNTIME),
        bench: Some(|size| Box::pin(influxdb::bench::influxdb(size))),
        ..Entry::of("influxdb", || vec![Box::new(influxdb::InfluxTarget)])
    },
    Entry {
        runtime: Some(&s3::runtime::RUNTIME),
        bench: Some(|size| Box::pin(s3::bench::s3(size))),
        ..Entry::of("s3", || vec![Box::new(s3::S3Target)])
    },
    Entry {
        runtime: Some(&clickhouse::runtime::RUNTIME),
        bench: Some(|size| Box::pin(clickhouse::bench::clickhouse(size))),
        ..Entry::of("clickhouse", || {
            vec![Box::new(clickhouse::ClickHouseTarget)]
        })
    },
    Entry {
        runtime: Some(&delta::runtime::RUNTIME),
        ..Entry::of("delta", || {
            vec![Box::new(delta::DeltaTarget), Box::new(delta::DeltaS3Target)]
        })
    },
    Entry {
        runtime: Some(&iceberg::runtime::RUNTIME),
        ..Entry::of("iceberg", || {
            vec![
                Box::new(iceberg::IcebergTarget),
                Box::new(iceberg::IcebergS3Target),
            ]
        })
    },
    #[cfg(feature = "surrealdb")]
    Entry::of("surrealdb", || vec![Box::new(surrealdb::SurrealTarget)]),
    Entry::of("elasticsearch", || {
        vec![Box::new(elasticsearch::ElasticsearchTarget)]
    }),
    Entry::of("mongodb", || vec![Box::new(mongodb::MongoTarget)]),
    Entry {
        runtime: Some(&jetstream::runtime::RUNTIME),
        ..Entry::of("jetstream", || vec![Box::new(jetstream::JetStreamTarget)])
    },
    Entry {
        runtime: Some(&meilisearch::runtime::RUNTIME),
        ..Entry::of("meilisearch", || {
            vec![Box::new(meilisearch::MeilisearchTarget)]
        })
    },
    Entry {
        runtime: Some(&quickwit::runtime::RUNTIME),
        bench: Some(|size| Box::pin(quickwit::bench::quickwit(size))),
        ..Entry::of("quickwit", || vec![Box::new(quickwit::QuickwitTarget)])
    },
    Entry::of("doris", || vec![Box::new(doris::DorisTarget)]),
];

/// Every conformance target, in table order.
pub fn targets() -> Vec<Box<dyn Target>> {
    ALL.iter().flat_map(|e| (e.targets)()).collect()
}

/// Every destination the crash suite runs pico-kafka against, in report order.
pub fn runtimes() -> impl Iterator<Item = &'static Runtime> {
    ALL.iter().filter_map(|e| e.runtime)
}
