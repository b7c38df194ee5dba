//! The failure scenarios, each written once and run against every destination.
//!
//! Every scenario goes through the reference [`Driver`], records what it sends in a
//! shared [`crate::ledger::Ledger`] (the counter outside the sink), and ends by reading the
//! destination back.
//! Like a runtime, a scenario never stops at a transient failure: opening a sink is retried, a
//! driver that gave up is restarted (as a supervisor restarts a pipeline) and the batch
//! delivered again, and reading back is retried.

mod bad_input;
mod cancelled;
mod concurrent;
mod flaky;
mod horizon;
mod lost_ack;
pub mod meter;
mod outage;
mod replay;
mod zombie;

use std::ops::RangeInclusive;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use pico_sink::driver::{Delivered, Driver, DriverError, DriverHooks, RetryPolicy};
use pico_sink::identity::{BatchId, RecordId};
use pico_sink::{Batch, DeadLetter, Outcome, Record, Scenario, Sink};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::evidence::FaultCount;
use crate::ledger::{Measured, SharedLedger};
use crate::target::{Destination, Readback, SinkUnderTest};

/// How large the long scenarios run (flaky-network): the main job runs them in full, CI at a
/// reduced but still meaningful size. The report records which size ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SuiteSize {
    /// The sizes the issues ask for (flaky-network: 2 000 batches).
    #[default]
    Full,
    /// A tenth of the batches (CI).
    Reduced,
}

impl SuiteSize {
    /// The size's name, as on the command line.
    pub fn id(self) -> &'static str {
        match self {
            SuiteSize::Full => "full",
            SuiteSize::Reduced => "reduced",
        }
    }
}

/// Why a scenario produced no measurement.
#[derive(Debug, Clone, Error)]
pub(crate) enum ScenarioError {
    /// The destination lacks a capability the scenario needs.
    #[error("not applicable: {0}")]
    NotApplicable(String),
    /// The scenario could not be carried out (setup, unexpected sink behaviour).
    #[error("{0}")]
    Failed(String),
}

/// What a scenario works with.
pub(crate) struct Ctx<'a> {
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
    /// How often each fault of the scenario happened (a zero: the cell is not exercised).
    pub faults: Vec<FaultCount>,
    /// How large the long scenarios run.
    pub size: SuiteSize,
    /// The scenario being run.
    pub scenario: Scenario,
    /// What the destination did to go past its replay horizon (replay-after-horizon).
    pub upkeep: Option<crate::horizon::Upkeep>,
}

/// The topic every scenario writes unless it says otherwise.
pub const TOPIC: &str = "pico.conformance";

/// Restarts of a stopped driver per batch before a scenario gives up: a supervisor restarts a
/// failed pipeline, but a destination that stays unreachable this long is a failed scenario.
pub(crate) const MAX_RESTARTS: u32 = 20;

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

/// Records a runtime hands over at once by default (pico-kafka's batch, Kafka Connect's
/// `max.poll.records`): every scenario family delivers batches this large too.
pub(crate) const RUNTIME_BATCH: u64 = 500;
/// Records of the large batch (of 1 KiB each: 10 MiB of values, at the 10 MiB
/// body caps some destinations set), delivered through a first write and its replay.
pub const LARGE_BATCH: u64 = 10_240;
/// Bytes of each value of the large batch.
pub(crate) const LARGE_RECORD_BYTES: usize = 1024;

/// A sample record whose value is padded to `bytes` (at least the plain sample's size).
pub(crate) fn sized_record(topic: &str, partition: u32, offset: u64, bytes: usize) -> Record {
    let plain = sample_record(topic, partition, offset);
    // `{…,"pad":"xxx"}`: the plain document without its closing brace, a pad field, a brace.
    let head = &plain.value[..plain.value.len().saturating_sub(1)];
    let pad = bytes.saturating_sub(head.len() + r#","pad":""}"#.len());
    let mut value = Vec::with_capacity(bytes);
    value.extend_from_slice(head);
    value.extend_from_slice(br#","pad":""#);
    value.extend(std::iter::repeat_n(b'x', pad));
    value.extend_from_slice(br#""}"#);
    let mut record = plain;
    record.value = value.into();
    record
}

/// A batch of sized records (see [`sized_record`]) for an offset range.
pub(crate) fn sized_batch(
    topic: &str,
    partition: u32,
    offsets: RangeInclusive<u64>,
    bytes: usize,
) -> Batch {
    Batch::new(
        offsets
            .map(|o| sized_record(topic, partition, o, bytes))
            .collect(),
    )
    .unwrap_or_else(|e| unreachable!("a contiguous range is a valid batch: {e}"))
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

/// Hooks of a runtime that dies right after `consume`: dead letters reach the ledger (they
/// were handed over before the commit), the commit never happens.
struct CrashBeforeCommit(SharedLedger);

#[async_trait]
impl DriverHooks for CrashBeforeCommit {
    async fn commit(&mut self, _: &BatchId) -> Result<(), String> {
        Ok(())
    }

    async fn dead_letter(&mut self, letters: &[DeadLetter]) -> Result<(), String> {
        self.0.dead_letter(letters).await
    }
}

impl Ctx<'_> {
    /// Holds a sink that says it tells records already held apart
    /// ([`pico_sink::Description::tells_already_present`]) to it, for an exact replay of a
    /// batch the destination held whole, where the sink promises a single copy.
    pub fn exact_replay_reported(&self, sink: &dyn Sink, batch: &Batch, outcome: &Outcome) {
        let description = sink.describe();
        let promised = description.claim(self.scenario).promises_single_copy();
        if description.tells_already_present && promised {
            self.ledger.lock().replay_reported(batch, outcome);
        }
    }

    /// Counts a fault of the scenario (`count` occurrences of `fault`).
    /// Counted twice under one name, the counts add up.
    pub fn fault(&mut self, fault: impl Into<String>, count: u64) {
        let fault = fault.into();
        match self.faults.iter_mut().find(|f| f.fault == fault) {
            Some(known) => known.count += count,
            None => self.faults.push(FaultCount::new(fault, count)),
        }
    }

    /// A new sink instance (as after a restart), opened; building and opening are retried like
    /// a runtime retries them.
    pub async fn new_sink(&self) -> Result<SinkUnderTest, ScenarioError> {
        let mut last = String::new();
        for attempt in 0..self.policy.max_attempts.max(1) {
            if attempt > 0 {
                tokio::time::sleep(self.policy.backoff(attempt)).await;
            }
            let under_test = match self.dest.sink(&self.isolation).await {
                Ok(u) => u,
                Err(e) => {
                    last = format!("building the sink: {e}");
                    continue;
                }
            };
            let mut driver = Driver::with_policy(under_test.sink.clone(), self.policy.clone());
            match open(&mut driver).await {
                Ok(()) => return Ok(under_test),
                Err(e) => return Err(ScenarioError::Failed(format!("opening the sink: {e}"))),
            }
        }
        Err(ScenarioError::Failed(last))
    }

    /// A driver around a new sink instance.
    pub async fn new_driver(&self) -> Result<Driver<Arc<dyn Sink>>, ScenarioError> {
        Ok(self.driver_for(self.new_sink().await?.sink))
    }

    /// A driver around a given sink instance (several drivers may share one).
    pub fn driver_for(&self, sink: Arc<dyn Sink>) -> Driver<Arc<dyn Sink>> {
        Driver::with_policy(sink, self.policy.clone())
    }

    /// Delivers through the driver until committed, counting what is sent.
    pub(crate) async fn deliver(
        &self,
        driver: &mut Driver<Arc<dyn Sink>>,
        batch: &Batch,
    ) -> Result<Delivered, ScenarioError> {
        deliver(driver, batch, &self.ledger).await
    }

    /// The runtime dies after `consume` returned and before the commit: the batch is consumed
    /// (retried on transient failures, as the runtime would) and nothing is committed.
    pub async fn consume_then_crash(&self, batch: &Batch) -> Result<(), ScenarioError> {
        let under_test = self.new_sink().await?;
        let mut driver = self.driver_for(under_test.sink);
        self.ledger.lock().sent(batch);
        let mut hooks = CrashBeforeCommit(self.ledger.clone());
        let delivered = until_committed(&mut driver, batch, &mut hooks)
            .await
            .map_err(|e| ScenarioError::Failed(format!("first consume of {}: {e}", batch.id())))?;
        self.ledger
            .lock()
            .reported(batch, &delivered.outcome, !delivered.retried.is_empty());
        Ok(())
    }

    /// What the isolation holds once the destination settled; retried on failure.
    pub async fn read_back(&self) -> Result<Readback, ScenarioError> {
        read_settled(self.dest, &self.isolation).await
    }
}

/// Opens through the driver (retried per its policy), restarting it like a supervisor would.
async fn open(driver: &mut Driver<Arc<dyn Sink>>) -> Result<(), DriverError> {
    let mut restarts = 0;
    loop {
        match driver.open().await {
            Ok(()) => return Ok(()),
            Err(DriverError::GaveUp { .. }) if restarts < MAX_RESTARTS => {
                restarts += 1;
                driver.reset();
            }
            Err(e) => return Err(e),
        }
    }
}

/// Delivers until committed: a driver that gave up is reset and the batch delivered again (a
/// supervisor restarting the pipeline), up to [`MAX_RESTARTS`] times. A fatal error ends it.
async fn until_committed(
    driver: &mut Driver<Arc<dyn Sink>>,
    batch: &Batch,
    hooks: &mut dyn DriverHooks,
) -> Result<Delivered, DriverError> {
    let mut restarts = 0;
    let mut retried = Vec::new();
    loop {
        match driver.deliver(batch, hooks).await {
            Ok(mut delivered) => {
                retried.append(&mut delivered.retried);
                delivered.retried = retried;
                delivered.attempts = delivered.retried.len() as u32 + 1;
                return Ok(delivered);
            }
            Err(DriverError::GaveUp { last, attempts }) if restarts < MAX_RESTARTS => {
                restarts += 1;
                tracing::info!(batch = %batch.id(), restarts, attempts, error = %last, "driver gave up; restarting it");
                retried.extend(std::iter::repeat_n(last, attempts as usize));
                driver.reset();
            }
            Err(e) => return Err(e),
        }
    }
}

/// Delivers through a driver until committed, counting what is sent (usable from spawned
/// tasks).
pub(crate) async fn deliver(
    driver: &mut Driver<Arc<dyn Sink>>,
    batch: &Batch,
    ledger: &SharedLedger,
) -> Result<Delivered, ScenarioError> {
    ledger.lock().sent(batch);
    let mut hooks = ledger.clone();
    let delivered = until_committed(driver, batch, &mut hooks)
        .await
        .map_err(|e| ScenarioError::Failed(format!("delivering {}: {e}", batch.id())))?;
    ledger
        .lock()
        .reported(batch, &delivered.outcome, !delivered.retried.is_empty());
    Ok(delivered)
}

/// Attempts at settling, and at reading each page back, before a scenario fails.
const READ_ATTEMPTS: u32 = 6;

/// Runs `attempt` until it succeeds, [`READ_ATTEMPTS`] times at most, with backoff.
async fn retried<T, F>(what: &str, mut attempt: impl FnMut() -> F) -> Result<T, ScenarioError>
where
    F: std::future::Future<Output = Result<T, String>>,
{
    let mut last = String::new();
    for n in 0..READ_ATTEMPTS {
        if n > 0 {
            tokio::time::sleep(Duration::from_millis(200 << n.min(5))).await;
        }
        match attempt().await {
            Ok(done) => return Ok(done),
            Err(e) => last = e,
        }
    }
    Err(ScenarioError::Failed(format!(
        "{what}: {last} (after {READ_ATTEMPTS} attempts)"
    )))
}

/// Settles, then reads `isolation` back page by page ([`Destination::read_page`]); settling
/// and each page are retried with backoff.
pub(crate) async fn read_settled(
    dest: &dyn Destination,
    isolation: &str,
) -> Result<Readback, ScenarioError> {
    retried("waiting for the destination to settle", || {
        dest.settle(isolation)
    })
    .await?;
    let mut back = Readback::default();
    let mut cursor: Option<String> = None;
    let mut page = 1;
    loop {
        let read = retried(&format!("reading back page {page}"), || {
            dest.read_page(isolation, cursor.as_deref())
        })
        .await?;
        back.absorb(read.back);
        match read.next {
            Some(next) => cursor = Some(next),
            None => return Ok(back),
        }
        page += 1;
    }
}

/// How many batches a scenario hands over at `size`, where it is long enough to say
/// (flaky-network): the total of the progress line.
pub(crate) fn planned_batches(scenario: Scenario, size: SuiteSize) -> Option<u64> {
    (scenario == Scenario::FlakyNetwork).then(|| flaky::planned(size))
}

/// Runs one scenario in `isolation` and measures the destination afterwards; `ledger` (new,
/// comparing in the destination's payload form) counts what is handed over while it runs.
pub(crate) async fn run(
    scenario: Scenario,
    dest: &dyn Destination,
    isolation: &str,
    policy: RetryPolicy,
    size: SuiteSize,
    ledger: SharedLedger,
) -> Result<Measured, ScenarioError> {
    let mut ctx = Ctx {
        dest,
        isolation: isolation.to_owned(),
        policy,
        ledger,
        notes: Vec::new(),
        faults: Vec::new(),
        size,
        scenario,
        upkeep: None,
    };
    let mut measured = match scenario {
        // The workload reads back and compares per delivery mode itself.
        Scenario::MeterReadings => meter::run(&mut ctx).await?,
        _ => {
            drive(scenario, &mut ctx).await?;
            let back = ctx.read_back().await?;
            let mut measured = ctx.ledger.lock().compare(&back);
            measured.notes = ctx.notes;
            measured.notes.extend(back.notes);
            measured.faults = ctx.faults;
            measured.upkeep = ctx.upkeep;
            measured
        }
    };
    // Judged on every measurement, whichever scenario made it: outside bad-input every record
    // is valid, so each one rejected is a valid record the destination never got (inside it,
    // the ledger names the records every destination can take).
    if scenario != Scenario::BadInput {
        measured.rejected_valid = measured
            .dead_lettered
            .iter()
            .map(|(id, _)| id.clone())
            .collect();
    }
    if let Some(l) = measured.largest_batch {
        measured.notes.push(format!(
            "largest batch handed to the sink: {} records, {} bytes",
            l.records, l.bytes
        ));
    }
    Ok(measured)
}

/// Carries out one of the scenarios that deliver through `ctx` and leave the comparison to
/// [`run`].
async fn drive(scenario: Scenario, ctx: &mut Ctx<'_>) -> Result<(), ScenarioError> {
    match scenario {
        Scenario::ReplaySameBatch => replay::same_batch(ctx).await,
        Scenario::ReplayRebatched => replay::rebatched(ctx).await,
        Scenario::LostAck => lost_ack::run(ctx).await,
        Scenario::Outage => outage::run(ctx).await,
        Scenario::ConcurrentPartitions => concurrent::run(ctx).await,
        Scenario::ZombieWriter => zombie::run(ctx).await,
        Scenario::BadInput => bad_input::run(ctx).await,
        Scenario::CancelledConsume => cancelled::run(ctx).await,
        Scenario::FlakyNetwork => flaky::run(ctx).await,
        Scenario::ReplayAfterHorizon => horizon::run(ctx).await,
        other => Err(ScenarioError::NotApplicable(format!(
            "{} is not implemented by this version of the suite",
            other.id()
        ))),
    }
}
