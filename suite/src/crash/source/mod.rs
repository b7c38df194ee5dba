//! The broker side of a crash case: what the suite does on the broker a runtime consumes from —
//! produce the case's records (the offsets the broker acknowledged are the counter outside the
//! runtime), read the position the runtime's group has committed, read back the dead letters —
//! and the pipeline sections that point the runtime at it. One implementation per broker
//! ([`kafka::KafkaSide`], [`iggy::IggySide`], [`nats::NatsSide`]); the judge and the faults of
//! [`super`] read only this.

pub mod iggy;
pub mod kafka;
pub mod nats;
mod pace;

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;

use super::Produced;
use super::broker_fault::GroupView;
use super::dead_letters::{BadRecords, Letter};
use super::shared_broker::SharedBroker;
use crate::serve::iggy::IggyServer;
use crate::serve::nats::NatsServer;
pub use pace::{Pace, Supply};

/// The broker a crash run's cases share.
#[derive(Clone, Copy)]
pub enum CaseSource<'a> {
    /// A Kafka broker under `pico-kafka`, shared with the cases running at once (the broker
    /// case holds it alone).
    Kafka(&'a SharedBroker),
    /// An Iggy server under `pico-iggy`, shared in the same way.
    Iggy(&'a SharedBroker<IggyServer>),
    /// A nats-server with JetStream under `pico-nats`, shared in the same way.
    Nats(&'a SharedBroker<NatsServer>),
}

/// How a consumer group gives a dead member's work to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handover {
    /// The group rebalances: the live members' partitions are revoked and assigned again.
    Rebalance,
    /// One member consumes and the others stand by; one of them takes over from a dead holder
    /// (pico-nats's lease on its durable): nothing is revoked from a live member.
    Takeover,
}

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
    /// The runtime that consumes from it (`pico-kafka`): the binary the case runs.
    fn runtime(&self) -> &'static str;

    /// The prefix of that runtime's metric names (`pico_kafka`).
    fn metrics_prefix(&self) -> &'static str;

    /// The topic as the records' identity names it (what the destination's rows, the
    /// dead letters' `pico.dlq.topic` and the metrics' `topic` label hold): by default the
    /// broker's topic.
    fn identity_topic(&self, topic: &str) -> String {
        topic.to_owned()
    }

    /// How many partitions the case's records are spread over on this broker: the suite's 4
    /// ([`super::PARTITIONS`]) by default; one where a consumer reads one ordered sequence
    /// (JetStream: a stream is one partition of the identity).
    fn partitions(&self) -> u32 {
        super::PARTITIONS as u32
    }

    /// How the group case's fault shows on this broker: partitions revoked from the members
    /// that live on (a consumer group's rebalance), by default.
    fn handover(&self) -> Handover {
        Handover::Rebalance
    }

    /// What of the case's stream this broker cannot hold, if anything: said in every case's
    /// notes.
    fn cannot_hold(&self) -> Option<&'static str> {
        None
    }

    /// The pipeline file's sections that point the runtime at the case's topic, group and
    /// dead-letter topic; `session` is how soon the broker gives a silent member's partitions
    /// to another.
    fn sections(&self, names: CaseNames<'_>, session: Duration) -> String;

    /// Produces the case's stream, its records handed out by `pace`: per `(partition, offset)`
    /// the broker acknowledged, the checksum of its payload as JSON, and which of them are bad.
    async fn produce(&self, topic: &str, pace: Pace) -> Result<(Produced, BadRecords), String>;

    /// The group's committed position per partition — the next offset it reads after a
    /// restart — 0 where none.
    async fn committed(&self, group: &str, topic: &str) -> Result<BTreeMap<u32, u64>, String>;

    /// Every dead letter of `topic`, as the broker physically holds them, in the order they
    /// were written.
    async fn letters(&self, topic: &str) -> Result<Vec<Letter>, String>;

    /// The group as the broker lists it, against its connected clients, for a broker that can
    /// keep a member whose connection is gone ([`super::broker_fault`]); `None` (the default)
    /// where it cannot: a Kafka coordinator expires a silent member after its session timeout.
    async fn group_view(&self, _group: &str, _topic: &str) -> Result<Option<GroupView>, String> {
        Ok(None)
    }

    /// The records of `partition` from offset `from` to its end as the broker holds them: per
    /// `(partition, offset)` the checksum of the payload as JSON. Read only where
    /// [`Self::group_view`] answers; nothing by default, so a record is never taken for held
    /// by a broker that was not read.
    async fn read_back(
        &self,
        _topic: &str,
        _partition: u32,
        _from: u64,
    ) -> Result<Produced, String> {
        Ok(Produced::new())
    }
}
