//! A destination outage as an operating state: the clock of one outage (when its first round
//! of attempts failed, how many rounds failed since, whether the operator's
//! `retry.max_retry_duration_ms` has passed), and opening the sink through one.
//!
//! The same rule holds when the sink is opened and when a batch is delivered: a round of
//! attempts (the driver's policy) that failed with `Retryable` is followed by the longest
//! backoff (with jitter, or the destination's `Retry-After`) and another round, until the
//! destination answers, the limit passes, or the operator asks to stop. Only a `Fatal` error
//! ends it at once.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use pico_sink::driver::{Delivered, Driver, DriverError, DriverHooks, RetryPolicy};
use pico_sink::kit::error_chain;
use pico_sink::{Batch, Sink, SinkError};
use tracing::{error, info, warn};

use crate::Exit;

/// One outage: from the first failed round of attempts until the destination answers.
pub struct Outage {
    since: Instant,
    rounds: u32,
    attempts: u32,
    limit: Option<Duration>,
}

impl Outage {
    /// A round of `attempts` failed: the outage in `slot` goes on, or one begins there, bounded
    /// by `limit` (`retry.max_retry_duration_ms`; `None`: unbounded).
    pub fn round_failed(
        slot: &mut Option<Outage>,
        attempts: u32,
        limit: Option<Duration>,
    ) -> &mut Outage {
        match slot {
            Some(o) => {
                o.rounds += 1;
                o.attempts = o.attempts.saturating_add(attempts);
                o
            }
            None => slot.insert(Self {
                since: Instant::now(),
                rounds: 1,
                attempts,
                limit,
            }),
        }
    }

    /// Whether `retry.max_retry_duration_ms` has passed since the first failed round.
    pub fn past_limit(&self) -> bool {
        self.limit.is_some_and(|max| self.since.elapsed() >= max)
    }

    /// How long to wait before the next round: the policy's longest backoff (with its jitter),
    /// or the destination's `Retry-After`.
    pub fn wait(policy: &RetryPolicy, last: &SinkError) -> Duration {
        policy.delay(u32::MAX, last)
    }

    /// Failed rounds so far.
    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    /// Attempts made over every round.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Whole seconds since the first failed round.
    pub fn seconds(&self) -> u64 {
        self.since.elapsed().as_secs()
    }

    /// The operator's limit, for the log line that gives up.
    pub fn limit(&self) -> Option<Duration> {
        self.limit
    }
}

/// Opens the sink before the consumer joins the group (or subscribes), riding out a destination that is down
/// (a process started, or restarted, during an outage holds no partition meanwhile, so the
/// group does not rebalance on its account). Ends with the [`Exit`] that `run` returns when
/// the sink reports misconfiguration (`Fatal`), when the outage passes
/// `retry.max_retry_duration_ms` (`GaveUp`), or when `shutdown` completes first (`Drained`:
/// nothing was read).
pub async fn open_through_outage<F: Future<Output = ()>>(
    sink: Arc<dyn Sink>,
    policy: RetryPolicy,
    limit: Option<Duration>,
    mut shutdown: Pin<&mut F>,
) -> Result<(), Exit> {
    let mut driver = Driver::with_policy(sink, policy.clone());
    let mut outage: Option<Outage> = None;
    loop {
        let opened = tokio::select! {
            biased;
            () = shutdown.as_mut() => return Err(stopped_while_opening(outage.as_ref())),
            opened = driver.open() => opened,
        };
        let (made, last) = match opened {
            Ok(()) => {
                if let Some(o) = &outage {
                    info!(
                        failed_rounds = o.rounds(),
                        outage_s = o.seconds(),
                        "destination back: sink opened"
                    );
                }
                return Ok(());
            }
            Err(DriverError::GaveUp { attempts, last }) => (attempts, last),
            Err(DriverError::Fatal(e)) => {
                return Err(Exit::Fatal(format!(
                    "opening the sink: {}",
                    error_chain(&e)
                )));
            }
            Err(other) => return Err(Exit::GaveUp(format!("opening the sink: {other}"))),
        };
        let o = Outage::round_failed(&mut outage, made, limit);
        if o.past_limit() {
            error!(attempts = o.attempts(), outage_s = o.seconds(), max_retry_duration = ?o.limit(), "destination unavailable: giving up opening the sink");
            return Err(Exit::GaveUp(format!(
                "opening the sink: gave up after {} attempts over {} s \
                 (retry.max_retry_duration_ms = {}): {}",
                o.attempts(),
                o.seconds(),
                o.limit().map_or(0, |l| l.as_millis()),
                error_chain(&last)
            )));
        }
        let wait = Outage::wait(&policy, &last);
        warn!(failed_rounds = o.rounds(), outage_s = o.seconds(), ?wait, error = %error_chain(&last), "destination unavailable: opening the sink again after the wait, no partition held meanwhile");
        tokio::select! {
            biased;
            () = shutdown.as_mut() => return Err(stopped_while_opening(outage.as_ref())),
            () = tokio::time::sleep(wait) => {}
        }
        driver.reset();
    }
}

/// A stop requested before the sink opened: nothing was read, so nothing is left to deliver.
fn stopped_while_opening(outage: Option<&Outage>) -> Exit {
    info!(
        failed_rounds = outage.map_or(0, Outage::rounds),
        "shutdown requested before the sink opened: nothing was read"
    );
    Exit::Drained
}

/// Delivers one batch and rides out a destination outage: when every attempt of a round failed
/// with `Retryable`, the partition waits the longest backoff (with jitter, or the destination's
/// `Retry-After`) and delivers the same batch again. The runtime keeps its partitions and goes
/// on polling, so its broker does not hand them to another consumer; the batches behind this
/// one wait in its buffer, which pauses fetching at its bound
/// ([`crate::settings::BatchLimits::pause_at`]). It gives up (the driver's error) once `limit`
/// (`retry.max_retry_duration_ms`) passed since the first failed round, or when `draining`.
pub async fn deliver_through_outage(
    driver: &mut Driver<Arc<dyn Sink>>,
    batch: &Batch,
    hooks: &mut dyn DriverHooks,
    limit: Option<Duration>,
    draining: &AtomicBool,
) -> Result<Delivered, DriverError> {
    let mut outage: Option<Outage> = None;
    loop {
        let delivered = driver.deliver(batch, hooks).await;
        let (made, last) = match delivered {
            Err(DriverError::GaveUp { attempts, last }) => (attempts, last),
            _ => {
                if let (Ok(_), Some(o)) = (&delivered, &outage) {
                    info!(batch = %batch.id(), failed_rounds = o.rounds(), outage_s = o.seconds(), "destination back: batch delivered");
                }
                return delivered;
            }
        };
        let o = Outage::round_failed(&mut outage, made, limit);
        let over = o.past_limit();
        if over || draining.load(Ordering::SeqCst) {
            error!(batch = %batch.id(), attempts = o.attempts(), outage_s = o.seconds(), max_retry_duration = ?o.limit(), draining = !over, "destination unavailable: giving up the batch, nothing committed past it");
            return Err(DriverError::GaveUp {
                attempts: o.attempts(),
                last,
            });
        }
        let wait = Outage::wait(driver.policy(), &last);
        warn!(batch = %batch.id(), failed_rounds = o.rounds(), outage_s = o.seconds(), ?wait, error = %error_chain(&last), "destination unavailable: the partition keeps the batch and delivers it again after the wait");
        tokio::time::sleep(wait).await;
        driver.reset();
    }
}
