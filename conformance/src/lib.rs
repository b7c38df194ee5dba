//! The pico-sinks conformance suite.
//!
//! It replays batches against real destinations and measures what a duplicate becomes, per sink
//! and per failure scenario, counting loss against the set of offsets sent with zero tolerance.
//! It generates `docs/duplicate-behaviour.md` and `.json`, the table users consult.
//!
//! The pieces:
//! * [`target::Target`] — what a sink provides to be tested: provision its destination through a
//!   [`provider::ProviderKind`], build sinks into an isolated table/index/bucket, read back what
//!   the destination holds. Modelled on object_store's shared integration functions: every
//!   scenario is written once, generic over targets; fault scenarios need a fault path, which a
//!   destination provides with each sink (`SinkUnderTest::faults`) or not.
//! * [`proxy::FaultProxy`] — a TCP proxy between sink and destination that loses
//!   acknowledgements, refuses connections (outage) or adds latency.
//! * how often each scenario's fault happened is counted beside the cell; a cell whose fault
//!   never happened is "not exercised", never a pass.
//! * [`ledger::Ledger`] — the identity counter outside the sink: what was sent, what was
//!   dead-lettered, and the comparison with what was read back.
//! * [`scenarios`] — replay-same-batch, replay-rebatched, lost-ack, outage,
//!   concurrent-partitions, zombie-writer, bad-input, meter-readings, cancelled-consume,
//!   flaky-network, replay-after-horizon.
//! * [`horizon::Horizon`] — how far back a destination recognises a replay, and
//!   [`horizon::Upkeep`], what a destination did to go past it.
//! * [`report`] — results and verdicts against each sink's `describe()` claim: the JSON record
//!   of a run. The pages users read are rendered from it by the project's suite.
//!
//! An outside sink author needs only the names at the root: implement [`Destination`] (build a
//! [`SinkUnderTest`] on an isolated table, read back what it holds as [`ReadRow`]s in a
//! [`Readback`], with the [`PayloadForm`] and [`payload_checksum`] the judge compares), then
//! [`run_destination`] it with [`RunOptions`] and a [`SuiteSize`], and [`assert_conformant`] the
//! [`TargetReport`] (or look at each cell's [`Verdict`]). `examples/sqlite-sink` does exactly
//! that. The modules hold what a destination with a fault path, a replay horizon or
//! its own server provider needs, and the report's data.

pub mod evidence;
pub mod fault;
pub mod horizon;
pub mod ledger;
pub mod meter;
mod overlap;
pub mod provider;
pub mod proxy;
pub mod report;
pub mod runner;
pub mod scenarios;
pub mod target;

pub use report::{TargetReport, Verdict};
pub use runner::{RunOptions, Silent, assert_conformant, run_destination};
pub use scenarios::SuiteSize;
pub use target::{
    Destination, PayloadForm, ReadRow, Readback, ServerInfo, SinkUnderTest, payload_checksum,
};
