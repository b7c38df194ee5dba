//! The failure scenarios, each written once and run against every target.
//!
//! Every scenario goes through the reference [`Driver`], records what it sends in a
//! [`SharedLedger`] (the counter outside the sink), and ends by reading the destination back.

mod bad_input;
mod concurrent;
mod lost_ack;
pub mod meter;
mod outage;
mod replay;
mod zombie;

use std::ops::RangeInclusive;

use pico_sink::identity::RecordId;
use pico_sink::{Batch, Delivered, Driver, Record, RetryPolicy, Scenario, Sink};
use thiserror::Error;

use crate::ledger::{Measured, SharedLedger};
use crate::target::{Destination, SinkUnderTest};

/// The scenarios this suite implements, in table order.
pub const IMPLEMENTED: [Scenario; 8] = [
    Scenario::ReplaySameBatch,
    Scenario::ReplayRebatched,
    Scenario::LostAck,
    Scenario::Outage,
    Scenario::ConcurrentPartitions,
    Scenario::ZombieWriter,
    Scenario::BadInput,
    Scenario::MeterReadings,
];

/// Why a scenario produced no measurement.
#[derive(Debug, Clone, Error)]
pub enum ScenarioError {
    /// The destination lacks a capability the scenario needs.
    #[error("not applicable: {0}")]
    NotApplicable(String),
    /// The scenario could not be carried out (setup, unexpected sink behaviour).
    #[error("{0}")]
    Failed(String),
}

/// What a scenario works with.
pub struct Ctx<'a> {
    /// The destination under test.
    pub dest: &'a dyn Destination,
    /// This scenario's table/index/bucket.
    pub isolation: String,
    /// The driver's retry policy.
    pub policy: RetryPolicy,
    /// The counter outside the sink.
    pub ledger: SharedLedger,
    /// Observations for the report.
    pub notes: Vec<String>,
}

/// The topic every scenario writes unless it says otherwise.
pub const TOPIC: &str = "pico.conformance";

/// A record whose value is a small JSON document derived from its identity.
pub fn sample_record(topic: &str, partition: u32, offset: u64) -> Record {
    Record::new(
        RecordId::new(topic, partition, offset),
        format!(
            "{{\"partition\":{partition},\"offset\":{offset},\"reading\":{},\"unit\":\"m3\"}}",
            offset.wrapping_mul(7919) % 10_000
        ),
    )
    .with_key(format!("k{}", offset % 17))
    .with_header("source", "pico-conformance")
    .with_timestamp_ms(1_767_225_600_000 + (offset as i64 % 1_000_000) * 1000)
}

/// A batch of sample records for an offset range.
pub fn sample_batch(topic: &str, partition: u32, offsets: RangeInclusive<u64>) -> Batch {
    Batch::new(
        offsets
            .map(|o| sample_record(topic, partition, o))
            .collect(),
    )
    .unwrap_or_else(|e| unreachable!("a contiguous range is a valid batch: {e}"))
}

impl Ctx<'_> {
    /// A new sink instance (as after a restart), opened.
    pub async fn new_sink(&self) -> Result<SinkUnderTest, ScenarioError> {
        let mut under_test = self
            .dest
            .sink(&self.isolation)
            .await
            .map_err(|e| ScenarioError::Failed(format!("building the sink: {e}")))?;
        under_test
            .sink
            .open()
            .await
            .map_err(|e| ScenarioError::Failed(format!("opening the sink: {e}")))?;
        Ok(under_test)
    }

    /// A driver around a new sink instance.
    pub async fn new_driver(&self) -> Result<Driver<Box<dyn Sink>>, ScenarioError> {
        Ok(Driver::with_policy(
            self.new_sink().await?.sink,
            self.policy.clone(),
        ))
    }

    /// Delivers through the driver, counting what is sent.
    pub async fn deliver(
        &self,
        driver: &mut Driver<Box<dyn Sink>>,
        batch: &Batch,
    ) -> Result<Delivered, ScenarioError> {
        deliver(driver, batch, &self.ledger).await
    }

    /// The runtime dies after `consume` returned and before the commit: a sink consumes the
    /// batch and is dropped without commit or close.
    pub async fn consume_then_crash(&self, batch: &Batch) -> Result<(), ScenarioError> {
        let mut under_test = self.new_sink().await?;
        self.ledger.lock().sent(batch);
        under_test
            .sink
            .consume(batch)
            .await
            .map_err(|e| ScenarioError::Failed(format!("first consume of {}: {e}", batch.id())))?;
        drop(under_test);
        Ok(())
    }
}

/// Delivers through a driver, counting what is sent (usable from spawned tasks).
pub async fn deliver(
    driver: &mut Driver<Box<dyn Sink>>,
    batch: &Batch,
    ledger: &SharedLedger,
) -> Result<Delivered, ScenarioError> {
    ledger.lock().sent(batch);
    let mut hooks = ledger.clone();
    driver
        .deliver(batch, &mut hooks)
        .await
        .map_err(|e| ScenarioError::Failed(format!("delivering {}: {e}", batch.id())))
}

/// Runs one scenario in `isolation` and measures the destination afterwards.
pub async fn run(
    scenario: Scenario,
    dest: &dyn Destination,
    isolation: &str,
    policy: RetryPolicy,
) -> Result<Measured, ScenarioError> {
    let mut ctx = Ctx {
        dest,
        isolation: isolation.to_owned(),
        policy,
        ledger: SharedLedger::new(dest.payload_form()),
        notes: Vec::new(),
    };
    match scenario {
        Scenario::ReplaySameBatch => replay::same_batch(&mut ctx).await?,
        Scenario::ReplayRebatched => replay::rebatched(&mut ctx).await?,
        Scenario::LostAck => lost_ack::run(&mut ctx).await?,
        Scenario::Outage => outage::run(&mut ctx).await?,
        Scenario::ConcurrentPartitions => concurrent::run(&mut ctx).await?,
        Scenario::ZombieWriter => zombie::run(&mut ctx).await?,
        Scenario::BadInput => bad_input::run(&mut ctx).await?,
        Scenario::MeterReadings => return meter::run(&mut ctx).await,
    }
    let back = dest
        .read_back(isolation)
        .await
        .map_err(|e| ScenarioError::Failed(format!("reading back: {e}")))?;
    let mut measured = ctx.ledger.lock().compare(&back);
    measured.notes = ctx.notes;
    measured.notes.extend(back.notes);
    Ok(measured)
}
