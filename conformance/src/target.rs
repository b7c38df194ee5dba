//! The target interface: what a sink provides to be tested.
//!
//! A [`Target`] provisions its destination through a provider ([`Target::provision`]); the
//! resulting [`Destination`] builds sinks writing into an isolated table/index/bucket (one per
//! scenario), reads back what that isolation holds as identities with payload checksums, and
//! names the server it runs against. Scenarios are written once against these traits.

use std::sync::Arc;

use async_trait::async_trait;
use pico_sink::Sink;
use pico_sink::identity::RecordId;
use serde::{Deserialize, Serialize};

use crate::fault::FaultSwitch;
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
    /// The sink.
    pub sink: Box<dyn Sink>,
    /// Fault injection between this sink and its destination, if the destination supports it.
    pub faults: Option<Arc<dyn FaultSwitch>>,
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

/// A running destination of one target.
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
    /// A new sink (a new instance, as after a restart) writing into `isolation`.
    async fn sink(&self, isolation: &str) -> Result<SinkUnderTest, String>;
    /// What `isolation` holds, read from the destination.
    async fn read_back(&self, isolation: &str) -> Result<Readback, String>;
    /// Stops what the provider started.
    async fn shutdown(self: Box<Self>) -> Result<(), String>;
}

/// A sink under conformance test.
#[async_trait]
pub trait Target: Send + Sync {
    /// Row name in the table (`http-honouring`).
    fn name(&self) -> &'static str;
    /// The crate under test (`pico-sink-http`).
    fn sink_crate(&self) -> &'static str;
    /// Providers this target supports, in the order `auto` tries them.
    fn providers(&self) -> Vec<ProviderKind>;
    /// Starts (or connects to) the destination; `Err` says why this provider cannot.
    async fn provision(&self, provider: ProviderKind) -> Result<Box<dyn Destination>, String>;
}
