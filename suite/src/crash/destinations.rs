//! The destinations of the crash suite: which sinks it runs ([`CrashSink`]), each destination's
//! [`RuntimeDestination`] (its folder under `destinations/` says how to start it, the `[sink]`
//! section that points a `pico-kafka` process at it, and how to read back what one topic left
//! there), and what a read-back holds as the crash suite counts it ([`Held`]).

use std::sync::Arc;

use pico_conformance::proxy::{FaultProxies, FaultProxy};
use pico_conformance::target::{PayloadForm, ReadRow, ServerInfo, payload_checksum};

use crate::destinations::clickhouse::runtime::ChRuntime;
use crate::destinations::delta::runtime::DeltaS3Runtime;
use crate::destinations::http::runtime::HttpRuntime;
use crate::destinations::postgres::runtime::PgRuntime;
use crate::destinations::runtime::RuntimeDestination;
use crate::destinations::s3::runtime::S3Runtime;

/// The sinks the crash suite runs.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum CrashSink {
    /// Upsert on the identity.
    Postgres,
    /// ReplacingMergeTree with a watermark (read with FINAL).
    Clickhouse,
    /// One object per batch, conditional PUT, LIST watermark.
    S3,
    /// Delta on S3: a txn watermark in every commit.
    DeltaS3,
    /// The key-honouring HTTP endpoint: one Idempotency-Key per batch.
    Http,
}

impl CrashSink {
    /// Every sink, in report order.
    pub const ALL: [CrashSink; 5] = [
        CrashSink::Postgres,
        CrashSink::Clickhouse,
        CrashSink::S3,
        CrashSink::DeltaS3,
        CrashSink::Http,
    ];

    /// The id on the command line and in the report.
    pub fn id(self) -> &'static str {
        match self {
            CrashSink::Postgres => "postgres",
            CrashSink::Clickhouse => "clickhouse",
            CrashSink::S3 => "s3",
            CrashSink::DeltaS3 => "delta-s3",
            CrashSink::Http => "http-honouring",
        }
    }

    /// Whether a replay leaves no visible duplicate (the sink dedupes on the record identity
    /// or a watermark); otherwise a replay with other batch boundaries repeats records, at most
    /// one batch per interruption.
    pub fn keyed(self) -> bool {
        !matches!(self, CrashSink::Http)
    }
}

/// One row a destination holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldRow {
    /// The record's partition.
    pub partition: u32,
    /// The record's offset.
    pub offset: u64,
    /// [`payload_checksum`] of its payload as JSON (every destination here stores the produced
    /// JSON, some normalized).
    pub payload: u64,
}

impl HeldRow {
    fn new(partition: u32, offset: u64, payload: &[u8]) -> Self {
        Self {
            partition,
            offset,
            payload: payload_checksum(PayloadForm::Json, payload),
        }
    }

    fn of(row: &ReadRow) -> Self {
        Self::new(row.id.partition, row.id.offset, &row.value)
    }
}

/// What a destination holds for one topic.
#[derive(Debug, Default)]
pub struct Held {
    /// Every visible row (for ClickHouse the `FINAL` view; elsewhere every physical row).
    pub rows: Vec<HeldRow>,
    /// Rows physically stored where the visible view collapses them (ClickHouse before a
    /// merge), with whether merges were stopped so that none collapsed.
    pub physical: Option<(u64, bool)>,
    /// Something worth a note (objects, table version).
    pub note: Option<String>,
}

/// A running destination: the crash suite's handle on a [`RuntimeDestination`].
pub struct CrashDestination(Box<dyn RuntimeDestination>);

impl CrashDestination {
    /// Starts (or connects to) the server of `sink`.
    pub async fn provide(sink: CrashSink) -> Result<Self, String> {
        Ok(Self(match sink {
            CrashSink::Postgres => Box::new(PgRuntime::provide().await?),
            CrashSink::Clickhouse => Box::new(ChRuntime::provide().await?),
            CrashSink::S3 => Box::new(S3Runtime::provide().await?),
            CrashSink::DeltaS3 => Box::new(DeltaS3Runtime::provide().await?),
            CrashSink::Http => Box::new(HttpRuntime::provide().await?),
        }))
    }

    /// Name and version of the server.
    pub async fn info(&self) -> ServerInfo {
        self.0.info().await
    }

    /// A proxy in front of the destination.
    pub async fn proxy(&self, proxies: &FaultProxies) -> Result<Arc<FaultProxy>, String> {
        proxies.in_front_of(self.0.upstream()?).await
    }

    /// The `[sink]` section writing into `isolation`, connecting through `via` (the proxy).
    pub fn sink_toml(&self, isolation: &str, via: std::net::SocketAddr) -> Result<String, String> {
        self.0.sink_toml(isolation, via)
    }

    /// What `isolation` holds for `topic`.
    pub async fn read(&self, isolation: &str, topic: &str) -> Result<Held, String> {
        let stored = self.0.read(isolation, topic).await?;
        Ok(Held {
            rows: stored.rows.iter().map(HeldRow::of).collect(),
            physical: stored.physical,
            note: stored.note,
        })
    }

    /// Stops what was started.
    pub async fn stop(self) -> Result<(), String> {
        self.0.stop().await
    }
}
