//! [`FaultSwitch`]: how a scenario injects faults between a sink and its destination.
//!
//! Network destinations get a [`crate::proxy::FaultProxy`] (a TCP proxy). A destination with no
//! network path (an in-process engine, a file, a captured writer) can wrap its sink in
//! [`FaultySink`], which injects the same faults at the sink's boundary.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use pico_sink::{Batch, Description, Outcome, Sink, SinkError};
use serde::{Deserialize, Serialize};

/// Random faults, as a flaky network produces them: each request and each answer is cut with
/// its own probability, independently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flaky {
    /// Per mille of requests cut before they reach the destination (nothing happened there).
    pub requests_per_mille: u16,
    /// Per mille of answers cut after the destination processed the request (it may have
    /// committed: a lost acknowledgement).
    pub answers_per_mille: u16,
}

impl Flaky {
    /// The flaky network of the suite: 1 % of requests and 3 % of answers cut.
    pub const SUITE: Flaky = Flaky {
        requests_per_mille: 10,
        answers_per_mille: 30,
    };

    fn hit(per_mille: u16) -> bool {
        per_mille > 0 && fastrand::u16(0..1000) < per_mille
    }

    /// Whether to cut the next request (a random draw).
    pub fn cut_request(&self) -> bool {
        Self::hit(self.requests_per_mille)
    }

    /// Whether to cut the next answer (a random draw).
    pub fn cut_answer(&self) -> bool {
        Self::hit(self.answers_per_mille)
    }
}

/// The fault to inject from now on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
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
    /// Cut requests and answers at random until set back to `Pass`.
    Flaky(Flaky),
    /// Cut the `nth` request from now (1: the next one) before it reaches the destination,
    /// then pass again: a cut at a chosen point of a conversation, such as the second request
    /// of a sink's `open`.
    CutRequest {
        /// Which request, counted from 1.
        nth: u32,
    },
}

/// What the switch did, for assertions and reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct FaultStats {
    /// Answers cut after the destination received the request.
    pub acks_lost: u64,
    /// Connections or writes refused, and open connections cut when an outage began.
    pub refused: u64,
    /// Requests cut before they reached the destination (flaky mode).
    pub requests_cut: u64,
    /// Requests that reached the destination (a new turn of the client on a proxied
    /// connection, a call into the wrapped sink, a write into a captured writer): evidence that
    /// a write was in progress when a scenario cut a `consume` short.
    pub requests_sent: u64,
}

/// Turns faults on and off for one sink's path to its destination.
pub trait FaultSwitch: Send + Sync {
    /// Sets the mode.
    fn set(&self, mode: FaultMode);
    /// Counters so far.
    fn stats(&self) -> FaultStats;
}

/// A fault mode and its counters behind locks: the state every switch keeps.
#[derive(Debug, Default)]
pub struct FaultState {
    mode: Mutex<FaultMode>,
    stats: Mutex<FaultStats>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl FaultState {
    /// The current mode.
    pub fn mode(&self) -> FaultMode {
        lock(&self.mode).clone()
    }

    /// Runs `f` on the mode (to disarm a one-shot fault atomically).
    pub fn with_mode<T>(&self, f: impl FnOnce(&mut FaultMode) -> T) -> T {
        f(&mut lock(&self.mode))
    }

    /// Updates the counters.
    pub fn count(&self, f: impl FnOnce(&mut FaultStats)) {
        f(&mut lock(&self.stats));
    }

    /// Whether the request about to be sent is the one a [`FaultMode::CutRequest`] cuts:
    /// counts the mode down, and on the request it cuts switches back to `Pass` and counts
    /// the cut. `false` in every other mode.
    pub fn take_request_cut(&self) -> bool {
        let cut = self.with_mode(|m| {
            let FaultMode::CutRequest { nth } = m else {
                return false;
            };
            if *nth > 1 {
                *nth -= 1;
                return false;
            }
            *m = FaultMode::Pass;
            true
        });
        if cut {
            self.count(|s| s.requests_cut += 1);
        }
        cut
    }
}

impl FaultSwitch for FaultState {
    fn set(&self, mode: FaultMode) {
        *lock(&self.mode) = mode;
    }

    fn stats(&self) -> FaultStats {
        *lock(&self.stats)
    }
}

/// A sink with faults injected at its boundary, for destinations without a network path
/// between sink and destination. `Refuse` and a cut request fail `consume` without calling the
/// sink; a lost acknowledgement (or a cut answer) lets the sink write, then reports a
/// retryable error as if the answer had been lost on the way. `Latency` delays each call and
/// its answer.
pub struct FaultySink<S> {
    inner: S,
    faults: Arc<FaultState>,
}

impl<S: Sink> FaultySink<S> {
    /// Wraps `inner`; the switch is [`FaultySink::switch`].
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            faults: Arc::new(FaultState::default()),
        }
    }

    /// The switch that controls this sink's faults.
    pub fn switch(&self) -> Arc<FaultState> {
        self.faults.clone()
    }

    /// The wrapped sink.
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

#[async_trait]
impl<S: Sink> Sink for FaultySink<S> {
    async fn open(&self) -> Result<(), SinkError> {
        if self.faults.mode() == FaultMode::Refuse {
            self.faults.count(|s| s.refused += 1);
            return Err(SinkError::retryable("destination unavailable (injected)"));
        }
        if self.faults.take_request_cut() {
            return Err(SinkError::retryable("request cut (injected)"));
        }
        self.inner.open().await
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        if self.faults.take_request_cut() {
            return Err(SinkError::retryable("request cut (injected)"));
        }
        let mode = self.faults.mode();
        let lose_answer = match &mode {
            FaultMode::Refuse => {
                self.faults.count(|s| s.refused += 1);
                return Err(SinkError::retryable("destination unavailable (injected)"));
            }
            FaultMode::Flaky(flaky) if flaky.cut_request() => {
                self.faults.count(|s| s.requests_cut += 1);
                return Err(SinkError::retryable("request cut (injected)"));
            }
            FaultMode::Flaky(flaky) => flaky.cut_answer(),
            FaultMode::LoseNextAck { .. } => self.faults.with_mode(|m| {
                let armed = matches!(m, FaultMode::LoseNextAck { .. });
                if armed {
                    *m = FaultMode::Pass;
                }
                armed
            }),
            FaultMode::Latency { millis } => {
                tokio::time::sleep(Duration::from_millis(*millis)).await;
                false
            }
            FaultMode::Pass | FaultMode::CutRequest { .. } => false,
        };
        self.faults.count(|s| s.requests_sent += 1);
        let outcome = self.inner.consume(batch).await;
        // The answer travels back as slowly as the request went.
        if let FaultMode::Latency { millis } = mode {
            tokio::time::sleep(Duration::from_millis(millis)).await;
        }
        let outcome = outcome?;
        if lose_answer {
            self.faults.count(|s| s.acks_lost += 1);
            return Err(SinkError::retryable(
                "written, but the acknowledgement was lost (injected)",
            ));
        }
        Ok(outcome)
    }

    async fn close(&self) -> Result<(), SinkError> {
        self.inner.close().await
    }

    fn describe(&self) -> Description {
        self.inner.describe()
    }

    fn commit_policy(&self) -> Option<pico_sink::CommitPolicy> {
        self.inner.commit_policy()
    }
}
