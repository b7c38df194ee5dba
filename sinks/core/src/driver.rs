//! The reference driver: the runtime loop of the delivery-guarantees spec, for embedding and for
//! the conformance suite.
//!
//! For each batch: `consume`; on success hand rejected records (if any) to the dead-letter hook,
//! then commit the offset. On a retryable error, retry the same batch, offset unmoved, up to
//! [`RetryPolicy::max_attempts`] attempts with exponential backoff (200 ms doubling to at most
//! 5 s by default; a longer `Retry-After` from the destination is honoured up to
//! [`RetryPolicy::max_retry_after`]). The last failure stops the driver with an error: every later
//! `deliver` fails at once, as a runtime marks the sink `Error`.
//!
//! One deliberate difference from the spec's runtime: a [`SinkError::Fatal`] (misconfiguration)
//! stops at once instead of being retried four more times, since no retry can fix it.

use std::time::Duration;

use async_trait::async_trait;
use pico_identity::BatchId;
use thiserror::Error;
use tracing::{debug, warn};

use crate::batch::Batch;
use crate::error::{RejectedRecord, SinkError};
use crate::sink::{Sink, WriteReport};

/// Retry schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts per batch, the first included (spec: 5).
    pub max_attempts: u32,
    /// Wait after the first failure (spec: 200 ms); doubles after each further failure.
    pub initial_backoff: Duration,
    /// Upper bound of the doubling (spec: 5 s).
    pub max_backoff: Duration,
    /// Upper bound for a destination-given `Retry-After`.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(5),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait after the `failures`-th consecutive failure (1-based), before any `Retry-After`.
    pub fn backoff(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(31);
        self.initial_backoff
            .saturating_mul(1u32 << doublings)
            .min(self.max_backoff)
    }

    /// The wait after the `failures`-th failure given the error's own `Retry-After`.
    pub fn delay(&self, failures: u32, error: &SinkError) -> Duration {
        let backoff = self.backoff(failures);
        match error {
            SinkError::Retryable {
                retry_after: Some(after),
                ..
            } => backoff.max((*after).min(self.max_retry_after)),
            _ => backoff,
        }
    }
}

/// Where the driver reports progress: the offset commit and the dead-letter queue.
#[async_trait]
pub trait DriverHooks: Send {
    /// Commits the consumer offset past `batch` (called only after the sink succeeded).
    async fn commit(&mut self, batch: &BatchId) -> Result<(), String>;
    /// Receives records the destination refused, before the commit.
    async fn dead_letter(&mut self, records: &[RejectedRecord]) -> Result<(), String>;
}

/// Hooks that keep commits and dead letters in memory (tests, conformance, examples).
#[derive(Debug, Default, Clone)]
pub struct MemoryHooks {
    /// Every committed batch, in order.
    pub committed: Vec<BatchId>,
    /// Every dead-lettered record, in order.
    pub dead_letters: Vec<RejectedRecord>,
}

#[async_trait]
impl DriverHooks for MemoryHooks {
    async fn commit(&mut self, batch: &BatchId) -> Result<(), String> {
        self.committed.push(batch.clone());
        Ok(())
    }

    async fn dead_letter(&mut self, records: &[RejectedRecord]) -> Result<(), String> {
        self.dead_letters.extend_from_slice(records);
        Ok(())
    }
}

/// A batch the driver delivered and committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// Attempts it took (1 = first try).
    pub attempts: u32,
    /// What the sink reported.
    pub report: WriteReport,
    /// Records handed to the dead-letter hook.
    pub dead_lettered: usize,
}

/// Why the driver did not commit a batch.
#[derive(Debug, Clone, Error)]
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

    /// The sink, mutably.
    pub fn sink_mut(&mut self) -> &mut S {
        &mut self.sink
    }

    /// Why the driver stopped, if it did.
    pub fn stopped(&self) -> Option<&str> {
        self.stopped.as_deref()
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
            self.wait_or_stop(failures, err).await?;
        }
    }

    /// Delivers one batch: consume, dead-letter rejections, commit; retries per the policy.
    pub async fn deliver(
        &mut self,
        batch: &Batch,
        hooks: &mut dyn DriverHooks,
    ) -> Result<Delivered, DriverError> {
        self.check_running()?;
        let mut failures = 0;
        loop {
            let (report, rejected) = match self.sink.consume(batch).await {
                Ok(report) => (report, Vec::new()),
                Err(SinkError::Rejected { records, written }) => (written, records),
                Err(err) => {
                    failures += 1;
                    warn!(batch = %batch.id(), attempt = failures, error = %err, "consume failed");
                    self.wait_or_stop(failures, err).await?;
                    continue;
                }
            };
            if !rejected.is_empty() {
                warn!(batch = %batch.id(), count = rejected.len(), "records rejected, dead-lettering");
                if let Err(e) = hooks.dead_letter(&rejected).await {
                    return Err(self.stop(DriverError::DeadLetter(e)));
                }
            }
            if let Err(e) = hooks.commit(batch.id()).await {
                return Err(self.stop(DriverError::Commit(e)));
            }
            debug!(batch = %batch.id(), attempts = failures + 1, "committed");
            return Ok(Delivered {
                attempts: failures + 1,
                report,
                dead_lettered: rejected.len(),
            });
        }
    }

    /// Closes the sink and returns it.
    pub async fn close(mut self) -> Result<S, SinkError> {
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
    async fn wait_or_stop(&mut self, failures: u32, err: SinkError) -> Result<(), DriverError> {
        if matches!(err, SinkError::Fatal { .. }) {
            return Err(self.stop(DriverError::Fatal(err)));
        }
        if failures >= self.policy.max_attempts {
            return Err(self.stop(DriverError::GaveUp {
                attempts: failures,
                last: err,
            }));
        }
        tokio::time::sleep(self.policy.delay(failures, &err)).await;
        Ok(())
    }
}
