//! The reference driver: the runtime loop of the delivery-guarantees spec, for embedding and for
//! the conformance suite.
//!
//! For each batch: `consume`; on success hand rejected records (if any, whole records with their
//! reasons) to the dead-letter hook, then commit the offset. On a retryable error, retry the
//! same batch, offset unmoved, up to [`RetryPolicy::max_attempts`] attempts with jittered
//! exponential backoff (by default the n-th wait is drawn from `[max(200 ms, d/2), d]` with
//! `d = 200 ms · 2^(n-1)` capped at 5 s, so many workers retrying a recovered destination do not
//! move in lockstep, and every wait stays inside the spec's 200 ms → 5 s envelope; a longer
//! `Retry-After` from the destination is honoured up to [`RetryPolicy::max_retry_after`]). The
//! last failure stops the driver with an error: every later `deliver` fails at once, as a
//! runtime marks the sink `Error`, until [`Driver::reset`] (an operator's restart).
//!
//! One deliberate difference from the spec's runtime: a [`SinkError::Fatal`] (misconfiguration)
//! stops at once instead of being retried four more times, since no retry can fix it.
//!
//! A driver holds its sink by value; to serve many partitions with one sink instance, give each
//! partition's driver an `Arc` of the same sink (`Arc<S>` is a [`Sink`]).

use std::time::Duration;

use async_trait::async_trait;
use pico_identity::BatchId;
use thiserror::Error;
use tracing::{debug, warn};

use crate::batch::Batch;
use crate::error::{DeadLetter, SinkError};
use crate::sink::{Outcome, Sink};

/// Retry schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Attempts per batch, the first included (spec: 5).
    pub max_attempts: u32,
    /// Wait after the first failure (spec: 200 ms); doubles after each further failure.
    pub initial_backoff: Duration,
    /// Upper bound of the doubling (spec: 5 s).
    pub max_backoff: Duration,
    /// Upper bound for a destination-given `Retry-After`.
    pub max_retry_after: Duration,
    /// Draw each wait from `[max(initial, d/2), d]` instead of waiting exactly `d`.
    pub jitter: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(5),
            max_retry_after: Duration::from_secs(60),
            jitter: true,
        }
    }
}

impl RetryPolicy {
    /// A policy of `max_attempts` attempts, the rest as the spec's default.
    pub fn attempts(max_attempts: u32) -> Self {
        Self {
            max_attempts,
            ..Self::default()
        }
    }

    /// The same policy with jitter on or off (off: exact doubling, for reproducible tests).
    pub fn with_jitter(mut self, jitter: bool) -> Self {
        self.jitter = jitter;
        self
    }

    /// The same policy with another backoff envelope.
    pub fn with_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max;
        self
    }

    /// The nominal wait after the `failures`-th consecutive failure (1-based): `initial`
    /// doubled per further failure, capped at `max_backoff`.
    pub fn backoff(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(31);
        self.initial_backoff
            .saturating_mul(1u32 << doublings)
            .min(self.max_backoff)
    }

    /// The range a jittered wait after the `failures`-th failure is drawn from.
    pub fn backoff_range(&self, failures: u32) -> (Duration, Duration) {
        let nominal = self.backoff(failures);
        if !self.jitter {
            return (nominal, nominal);
        }
        (
            (nominal / 2).max(self.initial_backoff).min(nominal),
            nominal,
        )
    }

    /// The wait after the `failures`-th failure given the error's own `Retry-After`, with
    /// `unit` in `[0, 1]` placing it inside [`RetryPolicy::backoff_range`].
    pub fn delay_at(&self, failures: u32, error: &SinkError, unit: f64) -> Duration {
        let (low, high) = self.backoff_range(failures);
        let backoff = low + (high - low).mul_f64(unit.clamp(0.0, 1.0));
        match error.retry_after() {
            Some(after) => backoff.max(after.min(self.max_retry_after)),
            None => backoff,
        }
    }

    /// The wait after the `failures`-th failure, jittered when the policy says so.
    pub fn delay(&self, failures: u32, error: &SinkError) -> Duration {
        self.delay_at(failures, error, fastrand::f64())
    }
}

/// Where the driver reports progress: the offset commit and the dead-letter queue.
#[async_trait]
pub trait DriverHooks: Send {
    /// Commits the consumer offset past `batch` (called only after the sink succeeded).
    async fn commit(&mut self, batch: &BatchId) -> Result<(), String>;
    /// Receives the records the destination refused (whole records with their reasons), before
    /// the commit. If it fails, nothing is committed and the batch will be delivered again.
    async fn dead_letter(&mut self, letters: &[DeadLetter]) -> Result<(), String>;
}

/// Hooks that keep commits and dead letters in memory (tests, conformance, examples).
#[derive(Debug, Default, Clone)]
pub struct MemoryHooks {
    /// Every committed batch, in order.
    pub committed: Vec<BatchId>,
    /// Every dead letter, in order.
    pub dead_letters: Vec<DeadLetter>,
}

#[async_trait]
impl DriverHooks for MemoryHooks {
    async fn commit(&mut self, batch: &BatchId) -> Result<(), String> {
        self.committed.push(batch.clone());
        Ok(())
    }

    async fn dead_letter(&mut self, letters: &[DeadLetter]) -> Result<(), String> {
        self.dead_letters.extend_from_slice(letters);
        Ok(())
    }
}

/// A batch the driver delivered and committed.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Delivered {
    /// Attempts it took (1 = first try).
    pub attempts: u32,
    /// What the sink reported (its rejections went to the dead-letter hook).
    pub outcome: Outcome,
    /// The errors of the failed attempts before the success, in order.
    pub retried: Vec<SinkError>,
}

impl Delivered {
    /// Records handed to the dead-letter hook.
    pub fn dead_lettered(&self) -> usize {
        self.outcome.rejected.len()
    }
}

/// Why the driver did not commit a batch.
#[derive(Debug, Clone, Error)]
#[non_exhaustive]
pub enum DriverError {
    /// Every attempt failed; the driver is stopped.
    #[error("gave up after {attempts} attempts, driver stopped: {last}")]
    GaveUp {
        /// Attempts made.
        attempts: u32,
        /// The last error.
        last: SinkError,
    },
    /// The sink reported misconfiguration; the driver is stopped.
    #[error("fatal sink error, driver stopped: {0}")]
    Fatal(SinkError),
    /// The driver stopped earlier and takes no more batches.
    #[error("driver is stopped: {reason}")]
    Stopped {
        /// Why it stopped.
        reason: String,
    },
    /// The commit hook failed; the offset did not move and the batch will be delivered again.
    #[error("offset commit failed, driver stopped: {0}")]
    Commit(String),
    /// The dead-letter hook failed; nothing was committed, so the batch will be delivered again.
    #[error("dead-letter hook failed, driver stopped: {0}")]
    DeadLetter(String),
}

/// The reference at-least-once loop around one [`Sink`].
pub struct Driver<S> {
    sink: S,
    policy: RetryPolicy,
    stopped: Option<String>,
}

impl<S: Sink> Driver<S> {
    /// A driver with the spec's retry policy.
    pub fn new(sink: S) -> Self {
        Self::with_policy(sink, RetryPolicy::default())
    }

    /// A driver with a given retry policy.
    pub fn with_policy(sink: S, policy: RetryPolicy) -> Self {
        Self {
            sink,
            policy,
            stopped: None,
        }
    }

    /// The sink.
    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// The retry policy.
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// Why the driver stopped, if it did.
    pub fn stopped(&self) -> Option<&str> {
        self.stopped.as_deref()
    }

    /// Lets a stopped driver take batches again (an operator fixed the cause, or a supervisor
    /// restarts the pipeline). The batch that stopped it was not committed: deliver it again.
    pub fn reset(&mut self) {
        self.stopped = None;
    }

    /// Opens the sink, retrying like a batch.
    pub async fn open(&mut self) -> Result<(), DriverError> {
        self.check_running()?;
        let mut failures = 0;
        loop {
            let err = match self.sink.open().await {
                Ok(()) => return Ok(()),
                Err(err) => err,
            };
            failures += 1;
            warn!(attempt = failures, error = %crate::kit::error_chain(&err), "open failed");
            self.wait_or_stop(failures, &err).await?;
        }
    }

    /// Delivers one batch: consume, dead-letter rejections, commit; retries per the policy.
    pub async fn deliver(
        &mut self,
        batch: &Batch,
        hooks: &mut dyn DriverHooks,
    ) -> Result<Delivered, DriverError> {
        self.check_running()?;
        let mut retried = Vec::new();
        loop {
            let outcome = match self.sink.consume(batch).await {
                Ok(outcome) => outcome,
                Err(err) => {
                    let failures = retried.len() as u32 + 1;
                    warn!(batch = %batch.id(), attempt = failures, error = %crate::kit::error_chain(&err), "consume failed");
                    self.wait_or_stop(failures, &err).await?;
                    retried.push(err);
                    continue;
                }
            };
            if !outcome.rejected.is_empty() {
                warn!(batch = %batch.id(), count = outcome.rejected.len(), first = %outcome.rejected[0].id, reason = %outcome.rejected[0].reason, "records rejected, dead-lettering");
                if let Err(e) = hooks.dead_letter(&outcome.dead_letters(batch)).await {
                    return Err(self.stop(DriverError::DeadLetter(e)));
                }
            }
            if let Err(e) = hooks.commit(batch.id()).await {
                return Err(self.stop(DriverError::Commit(e)));
            }
            debug!(batch = %batch.id(), attempts = retried.len() + 1, "committed");
            return Ok(Delivered {
                attempts: retried.len() as u32 + 1,
                outcome,
                retried,
            });
        }
    }

    /// Closes the sink and returns it.
    pub async fn close(self) -> Result<S, SinkError> {
        self.sink.close().await?;
        Ok(self.sink)
    }

    fn check_running(&self) -> Result<(), DriverError> {
        match &self.stopped {
            Some(reason) => Err(DriverError::Stopped {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    fn stop(&mut self, error: DriverError) -> DriverError {
        self.stopped = Some(error.to_string());
        error
    }

    /// After the `failures`-th failure: sleep per the policy, or stop the driver.
    async fn wait_or_stop(&mut self, failures: u32, err: &SinkError) -> Result<(), DriverError> {
        if !err.is_retryable() {
            return Err(self.stop(DriverError::Fatal(err.clone())));
        }
        if failures >= self.policy.max_attempts {
            return Err(self.stop(DriverError::GaveUp {
                attempts: failures,
                last: err.clone(),
            }));
        }
        tokio::time::sleep(self.policy.delay(failures, err)).await;
        Ok(())
    }
}
