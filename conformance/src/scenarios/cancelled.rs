//! cancelled-consume: a runtime drops `consume` futures halfway (shutdown, a rebalance taking
//! the partition away, a timeout), then redelivers the batch, alternately to the same instance
//! and to a new one (another process).
//!
//! A drop proves something only when it falls inside the sink's write. Each round therefore
//! waits until the consume is under way — its first request reached the destination (counted on
//! the fault path) or, for a sink without one, its future yielded inside the sink — and drops it
//! after a random part of the time a whole consume takes, so the drops spread across the write.
//! While a round is cut, the fault path adds [`LATENCY_MS`] to every chunk each way (a local
//! server answers in well under a millisecond, before any drop could fall between a request and
//! its answer). Rounds added while no drop fell inside a write cut ever sooner, the last ones at
//! once. A consume that finishes first is redelivered all the same. The cell is "not exercised"
//! when no drop fell inside a write.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use pico_sink::{Batch, Sink};

use crate::evidence::FaultCount;
use crate::fault::{FaultMode, FaultSwitch};

use super::{Ctx, RUNTIME_BATCH, ScenarioError, TOPIC, sample_batch};

/// Batches whose `consume` is cut.
pub const ROUNDS: u64 = 8;
/// Rounds added, each cutting sooner, while no drop has fallen inside a write.
const EXTRA_ROUNDS: u64 = 8;
/// Records per batch: a runtime's batch, so a drop can fall inside a write of several requests.
const BATCH: u64 = RUNTIME_BATCH;
/// Milliseconds the fault path adds to each chunk while a round is cut.
pub const LATENCY_MS: u64 = 5;

/// What became of one consume the scenario meant to cut.
enum Cut {
    /// Dropped while pending; `requests` reached the destination since it began (when the
    /// fault path counts them).
    Dropped { requests: Option<u64> },
    /// Finished before the cut; `yielded` says whether it ever returned `Pending`.
    Finished { yielded: bool },
}

/// Polls `sink.consume(batch)` until it is under way, waits `delay`, and drops it unless it
/// finished first. "Under way": a request reached the destination, where `faults` counts
/// requests; otherwise the future yielded inside the sink.
async fn cut_midway(
    sink: &dyn Sink,
    batch: &Batch,
    faults: Option<&dyn FaultSwitch>,
    delay: Duration,
) -> Cut {
    let sent = || faults.map(|f| f.stats().requests_sent);
    let before = sent();
    let mut consume = pin!(sink.consume(batch));
    // A sink whose consume finishes at its first poll cannot be dropped halfway.
    if poll_fn(|cx| Poll::Ready(consume.as_mut().poll(cx).is_ready())).await {
        return Cut::Finished { yielded: false };
    }
    // Without a fault path, "at once" is right after the first `Pending`.
    if delay.is_zero() && before.is_none() {
        return Cut::Dropped { requests: None };
    }
    let under_way = async {
        while before.is_some() && sent() == before {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
    };
    tokio::select! {
        biased;
        _ = &mut consume => Cut::Finished { yielded: true },
        () = under_way => Cut::Dropped {
            requests: sent().zip(before).map(|(now, then)| now - then),
        },
    }
}

/// Calibrates how long a `consume` takes, then cuts at least [`ROUNDS`] of them inside their
/// write and redelivers each batch through a driver.
pub async fn run(ctx: &mut Ctx<'_>) -> Result<(), ScenarioError> {
    let under_test = ctx.new_sink().await?;
    let first = under_test.sink;
    let faults = under_test.faults;
    // Whole consumes of batches of the same size, on another partition, set the range in which
    // the cuts fall: the first one warms up (connections, table creation), the second is timed.
    let mut driver = ctx.driver_for(first.clone());
    ctx.deliver(&mut driver, &sample_batch(TOPIC, 1, 0..=BATCH - 1))
        .await?;
    let started = Instant::now();
    ctx.deliver(&mut driver, &sample_batch(TOPIC, 1, BATCH..=2 * BATCH - 1))
        .await?;
    let whole = started.elapsed().max(Duration::from_millis(2));

    let (mut dropped, mut finished, mut never_yielded) = (0u64, 0u64, 0u64);
    let mut requests_before_drop = Vec::new();
    let mut cut_at = Vec::new();
    let mut round = 0;
    while round < ROUNDS || (dropped == 0 && round < ROUNDS + EXTRA_ROUNDS) {
        let batch = sample_batch(TOPIC, 0, round * BATCH..=round * BATCH + BATCH - 1);
        ctx.ledger.lock().sent(&batch);
        let delay = cut_delay(whole, round);
        // Whatever a cut future would have returned (even an error) is dropped with it: the
        // runtime never saw it, so the batch is redelivered either way.
        if let Some(f) = &faults {
            f.set(FaultMode::Latency { millis: LATENCY_MS });
        }
        let cut = cut_midway(first.as_ref(), &batch, faults.as_deref(), delay).await;
        if let Some(f) = &faults {
            f.set(FaultMode::Pass);
        }
        match cut {
            Cut::Dropped { requests } => {
                dropped += 1;
                cut_at.push(delay.as_millis());
                requests_before_drop.extend(requests);
            }
            Cut::Finished { yielded } => {
                finished += 1;
                never_yielded += u64::from(!yielded);
            }
        }
        let redeliver_to = if round % 2 == 0 {
            first.clone()
        } else {
            ctx.new_sink().await?.sink
        };
        let mut driver = ctx.driver_for(redeliver_to);
        ctx.deliver(&mut driver, &batch).await?;
        round += 1;
    }
    cut_at.sort_unstable();
    let fault = if faults.is_some() {
        "consume futures dropped after their first request reached the destination"
    } else {
        "consume futures dropped while pending inside the sink"
    };
    ctx.faults
        .push(if dropped == 0 && never_yielded == finished {
            FaultCount::impossible(
                fault,
                "every consume finished at its first poll: the sink writes without yielding, so no \
             drop can fall inside its write",
            )
        } else {
            FaultCount::new(fault, dropped)
        });
    ctx.notes.push(format!(
        "a whole consume took {} ms; {dropped} of {round} consume futures dropped inside their \
         write (at {} ms after it was under way{}), {finished} finished first ({never_yielded} \
         without yielding); every batch redelivered, alternately to the same instance and a new \
         one",
        whole.as_millis(),
        list(&cut_at),
        if requests_before_drop.is_empty() {
            String::new()
        } else {
            format!(
                "; requests at the destination before each drop: {}",
                list(&requests_before_drop)
            )
        },
    ));
    Ok(())
}

/// When round `round` cuts, after its consume is under way: a random part of a whole consume
/// for the first [`ROUNDS`], then ever sooner, the last two extra rounds at once.
fn cut_delay(whole: Duration, round: u64) -> Duration {
    if round + 2 >= ROUNDS + EXTRA_ROUNDS {
        return Duration::ZERO;
    }
    let sooner = 1u32 << round.saturating_sub(ROUNDS - 1).min(16);
    whole.mul_f64(fastrand::f64()) / sooner
}

fn list<T: ToString>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
