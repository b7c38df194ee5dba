//! The interface between the suite and a sink under test.
//!
//! [`Destination`] is all a sink's author implements to run every scenario on their own sink:
//! build a sink writing into an isolated table/index/bucket (one per scenario), read back what
//! that isolation holds (identities with payloads), and name the server. A [`Target`] adds
//! provisioning — where the destination comes from ([`ProviderKind`]) — for suites that start
//! their own servers, as the project's CLI does. Scenarios are written once against these
//! traits.

use std::sync::Arc;

use async_trait::async_trait;
use pico_sink::Sink;
use pico_sink::identity::RecordId;
use serde::{Deserialize, Serialize};

use crate::fault::{FaultSwitch, FaultySink};
use crate::horizon::Upkeep;
use crate::provider::ProviderKind;

/// The server a destination runs on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// Product name.
    pub name: String,
    /// Version as the server reports it.
    pub version: String,
}

/// A sink built for a scenario, with the switch for faults on its path.
pub struct SinkUnderTest {
    /// The sink (one instance may serve several partitions at once, as in a runtime).
    pub sink: Arc<dyn Sink>,
    /// Fault injection between this sink and its destination, if the destination supports it.
    pub faults: Option<Arc<dyn FaultSwitch>>,
}

impl SinkUnderTest {
    /// A sink with no fault path (the fault scenarios are then not applicable).
    pub fn new(sink: impl Sink + 'static) -> Self {
        Self {
            sink: Arc::new(sink),
            faults: None,
        }
    }

    /// A sink with the switch for faults on its path.
    pub fn with_faults(sink: impl Sink + 'static, faults: Arc<dyn FaultSwitch>) -> Self {
        Self {
            sink: Arc::new(sink),
            faults: Some(faults),
        }
    }

    /// A sink wrapped in [`FaultySink`]: faults injected at the sink's boundary, for
    /// destinations without a network path to put a proxy on.
    pub fn in_process(sink: impl Sink + 'static) -> Self {
        let faulty = FaultySink::new(sink);
        let switch = faulty.switch();
        Self {
            sink: Arc::new(faulty),
            faults: Some(switch),
        }
    }
}

/// One stored record as read back: its identity, its value and a checksum of the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRow {
    /// Identity parsed from what the destination holds.
    pub id: RecordId,
    /// The value as the destination holds it (normalized JSON text for jsonb).
    pub value: bytes::Bytes,
    /// [`payload_checksum`] of the stored value, in the destination's [`PayloadForm`].
    pub checksum: u64,
}

/// What an isolation holds.
#[derive(Debug, Clone, Default)]
pub struct Readback {
    /// Every visible row (a duplicate appears twice).
    pub rows: Vec<ReadRow>,
    /// Physical rows where the destination distinguishes them from visible ones.
    pub physical_rows: Option<u64>,
    /// What the destination says about itself (series cardinality, parts before merge, ...).
    pub notes: Vec<String>,
}

impl Readback {
    /// Visible rows only, nothing else to say.
    pub fn of_rows(rows: Vec<ReadRow>) -> Self {
        Self {
            rows,
            physical_rows: None,
            notes: Vec::new(),
        }
    }

    /// Adds a page's rows, physical rows and notes to what was read so far.
    pub fn absorb(&mut self, page: Readback) {
        self.rows.extend(page.rows);
        self.physical_rows = match (self.physical_rows, page.physical_rows) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        for note in page.notes {
            if !self.notes.contains(&note) {
                self.notes.push(note);
            }
        }
    }
}

/// One page of a read-back ([`Destination::read_page`]).
#[derive(Debug, Clone, Default)]
pub struct Page {
    /// What this page holds.
    pub back: Readback,
    /// Where the next page starts, opaque to the suite (`None`: this page was the last).
    pub next: Option<String>,
}

/// FNV-1a 64 of a value, for comparing what was sent with what is stored.
pub fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// How a destination stores payloads, and so how sent and stored payloads are compared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PayloadForm {
    /// Byte for byte.
    #[default]
    Exact,
    /// As parsed JSON (jsonb and document stores normalize whitespace, key order and
    /// escapes): both sides are compared in canonical form (sorted keys, compact); non-JSON
    /// bytes byte for byte.
    Json,
}

fn canonical_json(v: &serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(map) => {
            let sorted: std::collections::BTreeMap<&String, serde_json::Value> =
                map.iter().map(|(k, v)| (k, canonical_json(v))).collect();
            serde_json::to_value(sorted).unwrap_or(serde_json::Value::Null)
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.iter().map(canonical_json).collect())
        }
        other => other.clone(),
    }
}

/// The checksum of a payload in a destination's form.
pub fn payload_checksum(form: PayloadForm, bytes: &[u8]) -> u64 {
    if form == PayloadForm::Json
        && let Ok(v) = serde_json::from_slice::<serde_json::Value>(bytes)
        && let Ok(text) = serde_json::to_vec(&canonical_json(&v))
    {
        return checksum(&text);
    }
    checksum(bytes)
}

/// A running destination: the read-back side of a sink under test. Implement it for your own
/// sink and [`crate::runner::run_destination`] runs every scenario on it.
///
/// Errors are plain strings: they end up in the report. A `read_back` that fails is retried a
/// few times (the network between the suite and the destination may be as flaky as the one
/// between sink and destination).
#[async_trait]
pub trait Destination: Send + Sync {
    /// The server it runs on.
    fn server(&self) -> ServerInfo;
    /// How payloads are stored (how the ledger compares them).
    fn payload_form(&self) -> PayloadForm {
        PayloadForm::Exact
    }
    /// Bytes in the sink's request stream that mark the committing request (lost-ack trigger);
    /// `None` when every request commits (HTTP).
    fn lost_ack_trigger(&self) -> Option<Vec<u8>> {
        None
    }
    /// Why an answer lost on the fault path cannot follow a commit, if it cannot (the commit
    /// happens elsewhere, e.g. in a local catalog while the path carries data files): the
    /// lost-ack scenario is then not applicable, the other fault scenarios still are.
    fn commit_off_the_fault_path(&self) -> Option<String> {
        None
    }
    /// Whether the sink commits each record on a request of its own (a broker's publish with
    /// its own acknowledgement), so a lost answer follows the commit of some records of a batch,
    /// not of all: the lost-ack scenario then asks the destination to hold part of the batch
    /// after the cut, and the read-back after the retry judges the rest.
    fn commits_record_by_record(&self) -> bool {
        false
    }
    /// A new sink (a new instance, as after a restart) writing into `isolation`.
    async fn sink(&self, isolation: &str) -> Result<SinkUnderTest, String>;
    /// Waits until everything the destination accepted for `isolation` is visible to
    /// `read_back` (a task queue drained, a refresh done). The default returns at once, for
    /// destinations whose accepted writes are visible immediately.
    async fn settle(&self, isolation: &str) -> Result<(), String> {
        let _ = isolation;
        Ok(())
    }
    /// What `isolation` holds, read from the destination (after [`Destination::settle`]).
    async fn read_back(&self, isolation: &str) -> Result<Readback, String>;
    /// One page of what `isolation` holds, from `cursor` (`None`: the first page). The suite
    /// reads page after page until one names no next page, retrying each page on its own, so
    /// a failed answer costs one page rather than the whole read. The default is a single
    /// page: [`Destination::read_back`].
    async fn read_page(&self, isolation: &str, cursor: Option<&str>) -> Result<Page, String> {
        let _ = cursor;
        self.read_back(isolation)
            .await
            .map(|back| Page { back, next: None })
    }
    /// Drives `isolation` past the destination's replay horizon with its own upkeep (expire
    /// snapshots, clean the log, vacuum, age idempotency keys), after the scenario
    /// `replay-after-horizon` delivered heavy later traffic; says which horizon that is and
    /// counts each step. The default does no upkeep and names no horizon.
    async fn pass_horizon(&self, isolation: &str) -> Result<Upkeep, String> {
        let _ = isolation;
        Ok(Upkeep::unstated())
    }
    /// Stops what the provider started.
    async fn shutdown(self: Box<Self>) -> Result<(), String>;
}

/// A sink under conformance test.
#[async_trait]
pub trait Target: Send + Sync {
    /// Stable short id: the row's name in the table and what `--sink` selects
    /// (`postgres`, `iceberg-s3`, `http-honouring`).
    fn name(&self) -> &'static str;
    /// What distinguishes this target from others of the same sink (`S3 warehouse`), if
    /// anything.
    fn title(&self) -> &'static str {
        ""
    }
    /// The crate under test (`pico-sink-http`).
    fn sink_crate(&self) -> &'static str;
    /// The container image the docker provider runs (its pin), to show beside the version
    /// that actually ran.
    fn docker_image(&self) -> Option<String> {
        None
    }
    /// Providers this target supports, in the order `auto` tries them.
    fn providers(&self) -> Vec<ProviderKind>;
    /// Starts (or connects to) the destination; `Err` says why this provider cannot.
    async fn provision(&self, provider: ProviderKind) -> Result<Box<dyn Destination>, String>;
}
