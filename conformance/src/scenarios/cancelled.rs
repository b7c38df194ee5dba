//! cancelled-consume: a runtime drops `consume` futures halfway (shutdown, a rebalance taking
//! the partition away, a timeout). Each batch's future is dropped after a random delay within
//! the time a whole `consume` takes, so it stops at some await point inside the sink; then the
//! batch is redelivered, alternately to the same instance and to a new one (another process).

use std::time::{Duration, Instant};

use super::{Ctx, ScenarioError, TOPIC, sample_batch};

/// Batches whose `consume` is cut.
pub const ROUNDS: u64 = 8;
/// Records per batch.
const BATCH: u64 = 50;

/// Calibrates how long a `consume` takes, then cuts [`ROUNDS`] of them at random points and
/// redelivers each batch through a driver.
pub async fn run(ctx: &mut Ctx<'_>) -> Result<(), ScenarioError> {
    let first = ctx.new_sink().await?.sink;
    // Whole consumes of batches of the same size, on another partition, set the range in which
    // the cuts fall: the first one warms up (connections, table creation), the second is timed.
    let mut driver = ctx.driver_for(first.clone());
    ctx.deliver(&mut driver, &sample_batch(TOPIC, 1, 0..=BATCH - 1))
        .await?;
    let started = Instant::now();
    ctx.deliver(&mut driver, &sample_batch(TOPIC, 1, BATCH..=2 * BATCH - 1))
        .await?;
    let whole = started.elapsed().max(Duration::from_millis(2));

    let mut cut = 0;
    let mut completed = 0;
    let mut cut_at = Vec::new();
    for round in 0..ROUNDS {
        let batch = sample_batch(TOPIC, 0, round * BATCH..=round * BATCH + BATCH - 1);
        ctx.ledger.lock().sent(&batch);
        let after = whole.mul_f64(fastrand::f64());
        match tokio::time::timeout(after, first.consume(&batch)).await {
            Err(_) => {
                cut += 1;
                cut_at.push(after.as_millis());
            }
            // Whatever the cut future returned (even an error) is dropped with it: the
            // runtime never saw it, so the batch is redelivered either way.
            Ok(_) => completed += 1,
        }
        let redeliver_to = if round % 2 == 0 {
            first.clone()
        } else {
            ctx.new_sink().await?.sink
        };
        let mut driver = ctx.driver_for(redeliver_to);
        ctx.deliver(&mut driver, &batch).await?;
    }
    cut_at.sort_unstable();
    ctx.notes.push(format!(
        "a whole consume took {} ms; {cut} of {ROUNDS} consume futures dropped before they \
         finished (at {cut_at:?} ms), {completed} finished first; every batch redelivered, \
         alternately to the same instance and a new one",
        whole.as_millis()
    ));
    Ok(())
}
