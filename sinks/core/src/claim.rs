//! What a sink claims a replay becomes: [`Scenario`], [`Claim`], [`Description`].

use serde::{Deserialize, Serialize};

/// The failures a sink states its claims against ([`Description::with_claim`]): what a runtime
/// can do to a batch (hand it over again, lose its answer, cancel it, ...). They are part of the
/// contract because a claim is; the workloads that bring each one about, and judge the claim,
/// are the conformance suite's (`pico_conformance::scenarios`). [`Scenario::ALL`] is the one list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Scenario {
    /// The runtime dies after `consume`, before the commit; a new sink instance gets the same batch.
    ReplaySameBatch,
    /// The replay has other boundaries (`[0..99]` then `[50..149]`).
    ReplayRebatched,
    /// The destination commits but the response never reaches the sink; the driver retries.
    LostAck,
    /// The destination is down for several attempts, then returns; the driver resumes.
    Outage,
    /// Several writers, different partitions, one destination, at once.
    ConcurrentPartitions,
    /// Two writers on one partition with overlapping batches at once (a rebalance).
    ZombieWriter,
    /// Malformed payload, oversized record, hostile topic names, extreme offsets.
    BadInput,
    /// The meter-readings reference workload, read back from the destination.
    MeterReadings,
    /// `consume` futures dropped at random await points (shutdown, rebalance, timeout), each
    /// batch then redelivered.
    CancelledConsume,
    /// Many batches through a network that cuts a random share of requests and answers; the
    /// runtime retries and restarts as it would.
    FlakyNetwork,
    /// An old batch handed over again after heavy later traffic and the destination's own
    /// upkeep drove it past its replay horizon (a consumer group reset to an old offset).
    ReplayAfterHorizon,
}

impl Scenario {
    /// Every scenario, in table order.
    pub const ALL: [Scenario; 11] = [
        Scenario::ReplaySameBatch,
        Scenario::ReplayRebatched,
        Scenario::LostAck,
        Scenario::Outage,
        Scenario::ConcurrentPartitions,
        Scenario::ZombieWriter,
        Scenario::BadInput,
        Scenario::MeterReadings,
        Scenario::CancelledConsume,
        Scenario::FlakyNetwork,
        Scenario::ReplayAfterHorizon,
    ];

    /// The scenario's id, as used on the command line and in the table.
    pub fn id(self) -> &'static str {
        match self {
            Scenario::ReplaySameBatch => "replay-same-batch",
            Scenario::ReplayRebatched => "replay-rebatched",
            Scenario::LostAck => "lost-ack",
            Scenario::Outage => "outage",
            Scenario::ConcurrentPartitions => "concurrent-partitions",
            Scenario::ZombieWriter => "zombie-writer",
            Scenario::BadInput => "bad-input",
            Scenario::MeterReadings => "meter-readings",
            Scenario::CancelledConsume => "cancelled-consume",
            Scenario::FlakyNetwork => "flaky-network",
            Scenario::ReplayAfterHorizon => "replay-after-horizon",
        }
    }

    /// Looks a scenario up by its id.
    pub fn from_id(id: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.id() == id)
    }
}

/// What a sink claims the destination holds after a scenario. Loss is never claimable: every
/// scenario also checks that every offset sent arrived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "detail")]
#[non_exhaustive]
pub enum Claim {
    /// Every record is visible exactly once.
    NoVisibleDuplicate,
    /// A replay lands on the same entry and overwrites it (a point, a key); one visible copy.
    OverwrittenInPlace,
    /// Replayed records are visible again (append-only destinations, stdout).
    Repeats,
    /// The sink makes no claim for this scenario; the suite measures and reports.
    Measured {
        /// Why the sink cannot claim more.
        why: String,
    },
}

impl Claim {
    /// Whether this claim promises at most one visible copy per record.
    pub fn promises_single_copy(&self) -> bool {
        matches!(self, Claim::NoVisibleDuplicate | Claim::OverwrittenInPlace)
    }
}

/// A sink's own account of its mechanism and of what each scenario leaves behind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Description {
    /// Short sink name (`postgres`, `http`, ...).
    pub sink: String,
    /// The idempotency mechanism, in words.
    pub mechanism: String,
    /// The claim per scenario; scenarios not listed default to [`Description::default_claim`].
    pub claims: Vec<(Scenario, Claim)>,
    /// The claim for scenarios not listed in `claims`.
    pub default_claim: Claim,
    /// Whether the sink's [`crate::Outcome`] tells records the destination already held
    /// (`already_present`) from records it wrote: a runtime meters replays by it. The
    /// conformance suite holds a sink that says so to it on every exact replay.
    pub tells_already_present: bool,
}

impl Description {
    /// A description claiming `default_claim` for every scenario.
    pub fn new(
        sink: impl Into<String>,
        mechanism: impl Into<String>,
        default_claim: Claim,
    ) -> Self {
        Self {
            sink: sink.into(),
            mechanism: mechanism.into(),
            claims: Vec::new(),
            default_claim,
            tells_already_present: false,
        }
    }

    /// The same description, saying the sink reports records the destination already held as
    /// `already_present` rather than `written`.
    pub fn telling_already_present(mut self) -> Self {
        self.tells_already_present = true;
        self
    }

    /// The same description with `claim` for `scenario`.
    pub fn with_claim(mut self, scenario: Scenario, claim: Claim) -> Self {
        self.claims.retain(|(s, _)| *s != scenario);
        self.claims.push((scenario, claim));
        self
    }

    /// A claim that the suite measures and reports, with why the sink cannot claim more.
    pub fn measured(why: impl Into<String>) -> Claim {
        Claim::Measured { why: why.into() }
    }

    /// The claim for one scenario.
    pub fn claim(&self, scenario: Scenario) -> &Claim {
        self.claims
            .iter()
            .find(|(s, _)| *s == scenario)
            .map(|(_, c)| c)
            .unwrap_or(&self.default_claim)
    }
}
