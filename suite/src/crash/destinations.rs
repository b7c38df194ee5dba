//! The destinations of the crash suite: which sinks it runs ([`CrashSink`]), each destination's
//! [`RuntimeDestination`] (its folder under `destinations/` says how to start it, the `[sink]`
//! section that points a `pico-kafka` process at it, and how to read back what one topic left
//! there), and what a read-back holds as the crash suite counts it ([`Held`]).

use std::sync::Arc;

use pico_conformance::proxy::{FaultProxies, FaultProxy};
use pico_conformance::target::{PayloadForm, ReadRow, ServerInfo, payload_checksum};

use crate::destinations;
use crate::destinations::runtime::{Runtime, RuntimeDestination};

/// A sink the crash suite runs: a handle on its destination's [`Runtime`] in the one registry,
/// [`destinations::ALL`].
#[derive(Clone, Copy)]
pub struct CrashSink(&'static Runtime);

impl CrashSink {
    /// PostgreSQL, the sink the controls run against.
    pub const POSTGRES: CrashSink = CrashSink(&destinations::postgres::runtime::RUNTIME);

    /// Every sink, in report order.
    pub fn all() -> Vec<CrashSink> {
        destinations::runtimes().map(CrashSink).collect()
    }

    /// The sink whose id is `id` (`postgres`, `http-honouring`).
    pub fn named(id: &str) -> Option<CrashSink> {
        destinations::runtimes().find(|r| r.id == id).map(CrashSink)
    }

    /// The id on the command line and in the report.
    pub fn id(self) -> &'static str {
        self.0.id
    }

    /// Whether a replay leaves no visible duplicate (the sink dedupes on the record identity
    /// or a watermark); otherwise a replay with other batch boundaries repeats records, at most
    /// one batch per interruption.
    pub fn keyed(self) -> bool {
        self.0.keyed
    }

    /// Whether its sink tells every replayed record as already present, whatever the replay's
    /// batch boundaries.
    pub fn replays_told_per_record(self) -> bool {
        self.0.replays_told_per_record
    }

    /// Whether only its smoke test runs ([`Runtime::smoke`]).
    pub fn smoke(self) -> bool {
        self.0.smoke
    }

    /// Its place in the registry: report order. By id, which is unique: the registry is a
    /// `const`, so two references to one entry need not be one address.
    fn position(self) -> usize {
        destinations::runtimes()
            .position(|r| r.id == self.0.id)
            .unwrap_or(usize::MAX)
    }
}

impl std::fmt::Debug for CrashSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.id)
    }
}

impl PartialEq for CrashSink {
    fn eq(&self, other: &Self) -> bool {
        self.0.id == other.0.id
    }
}

impl Eq for CrashSink {}

impl PartialOrd for CrashSink {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for CrashSink {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.position().cmp(&other.position())
    }
}

impl serde::Serialize for CrashSink {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0.serde_name)
    }
}

impl<'de> serde::Deserialize<'de> for CrashSink {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        destinations::runtimes()
            .find(|r| r.serde_name == name)
            .map(CrashSink)
            .ok_or_else(|| serde::de::Error::custom(format!("no crash-suite sink named {name:?}")))
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
        Ok(Self((sink.0.provide)().await?))
    }

    /// Name and version of the server.
    pub async fn info(&self) -> ServerInfo {
        self.0.info().await
    }

    /// A proxy in front of the destination.
    pub async fn proxy(&self, proxies: &FaultProxies) -> Result<Arc<FaultProxy>, String> {
        proxies.in_front_of_url(&self.0.upstream()?).await
    }

    /// The `[sink]` section writing into `isolation`, connecting through `via` (the proxy).
    pub async fn sink_toml(
        &self,
        isolation: &str,
        via: std::net::SocketAddr,
    ) -> Result<String, String> {
        self.0.sink_toml(isolation, via).await
    }

    /// Where the runtime processes writing into `isolation` put their output
    /// ([`RuntimeDestination::output_in`]).
    pub fn output_in(&self, isolation: &str, dir: &std::path::Path) {
        self.0.output_in(isolation, dir);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sinks_keep_their_ids_order_and_report_names() {
        let ids: Vec<&str> = CrashSink::all().iter().map(|s| s.id()).collect();
        assert_eq!(
            ids,
            [
                "stdout",
                "http-honouring",
                "postgres",
                "redshift",
                "influxdb",
                "s3",
                "clickhouse",
                "delta-s3",
                "iceberg-s3",
                "jetstream",
                "meilisearch",
                "quickwit"
            ]
        );
        let smoke: Vec<&str> = CrashSink::all()
            .into_iter()
            .filter(|s| s.smoke())
            .map(CrashSink::id)
            .collect();
        assert_eq!(
            smoke,
            [
                "stdout",
                "redshift",
                "influxdb",
                "iceberg-s3",
                "jetstream",
                "meilisearch",
                "quickwit"
            ]
        );
        let unique: std::collections::HashSet<&str> = ids.iter().copied().collect();
        assert_eq!(unique.len(), ids.len(), "ids are unique");
        assert_eq!(CrashSink::POSTGRES.id(), "postgres");
        let http = CrashSink::named("http-honouring").unwrap();
        assert!(!http.keyed() && CrashSink::POSTGRES.keyed());
        assert!(http < CrashSink::POSTGRES);
        assert_eq!(serde_json::to_string(&http).unwrap(), "\"http\"");
        let back: CrashSink = serde_json::from_str("\"delta-s3\"").unwrap();
        assert_eq!(back.id(), "delta-s3");
        assert!(serde_json::from_str::<CrashSink>("\"mongodb\"").is_err());
    }
}
