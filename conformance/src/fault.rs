//! [`FaultSwitch`]: how a scenario injects faults between a sink and its destination.
//!
//! Network destinations get a [`crate::proxy::FaultProxy`]; in-process destinations (stdout)
//! implement the same switch on their writer.

use serde::Serialize;

/// The fault to inject from now on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum FaultMode {
    /// Forward everything.
    #[default]
    Pass,
    /// Forward the next request that matches the trigger, let the destination commit it, and cut
    /// the connection before its answer reaches the sink; then pass again.
    LoseNextAck {
        /// Bytes that identify the committing request in the client's stream (`None`: any).
        trigger: Option<Vec<u8>>,
    },
    /// Refuse every connection (and cut open ones) until set back to `Pass`.
    Refuse,
    /// Delay every chunk by this many milliseconds.
    Latency {
        /// Delay per chunk, in milliseconds.
        millis: u64,
    },
}

/// What the switch did, for assertions and reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct FaultStats {
    /// Answers cut after the destination received the request.
    pub acks_lost: u64,
    /// Connections or writes refused, and open connections cut when an outage began.
    pub refused: u64,
}

/// Turns faults on and off for one sink's path to its destination.
pub trait FaultSwitch: Send + Sync {
    /// Sets the mode.
    fn set(&self, mode: FaultMode);
    /// Counters so far.
    fn stats(&self) -> FaultStats;
}
