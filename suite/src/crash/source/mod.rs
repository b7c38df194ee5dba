//! The broker side of a crash case: what the suite does on the broker a runtime consumes from —
//! produce the case's records (the offsets the broker acknowledged are the counter outside the
//! runtime), read the position the runtime's group has committed, read back the dead letters —
//! and the pipeline sections that point the runtime at it. One implementation per broker
//! ([`kafka::KafkaSide`], [`iggy::IggySide`]); the judge and the faults of [`super`] read only this.

pub mod iggy;
pub mod kafka;

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;

use super::Produced;
use super::Size;
use super::dead_letters::{BadRecords, Letter};

/// The names one case uses on its broker.
#[derive(Debug, Clone, Copy)]
pub struct CaseNames<'a> {
    /// The topic the producer writes and the runtime reads.
    pub topic: &'a str,
    /// The runtime's consumer group.
    pub group: &'a str,
    /// Where the runtime sends dead letters.
    pub dead_letters: &'a str,
}

/// A broker as a crash case uses it.
#[async_trait]
pub trait CaseBroker: Send + Sync {
    /// The pipeline file's sections that point the runtime at the case's topic, group and
    /// dead-letter topic; `session` is how soon the broker gives a silent member's partitions
    /// to another.
    fn sections(&self, names: CaseNames<'_>, session: Duration) -> String;

    /// Produces `size.records` records of the case's stream at `size.rate`: per
    /// `(partition, offset)` the broker acknowledged, the checksum of its payload as JSON, and
    /// which of them are bad.
    async fn produce(&self, topic: &str, size: Size) -> Result<(Produced, BadRecords), String>;

    /// The group's committed position per partition — the next offset it reads after a
    /// restart — 0 where none.
    async fn committed(&self, group: &str, topic: &str) -> Result<BTreeMap<u32, u64>, String>;

    /// Every dead letter of `topic`, as the broker physically holds them, in the order they
    /// were written.
    async fn letters(&self, topic: &str) -> Result<Vec<Letter>, String>;
}
