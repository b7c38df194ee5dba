//! replay-after-horizon: an old batch handed over again after the destination went past its
//! replay horizon — a consumer group reset to an old offset, a disaster-recovery replay from a
//! backup topic.
//!
//! The old batch is delivered and committed, then [`LATER_BATCHES`] batches of
//! [`RUNTIME_BATCH`] records follow on the same partition (past any window counted in writes),
//! then the destination carries out its own upkeep ([`Destination::pass_horizon`]: expire
//! snapshots, clean the log, vacuum, age idempotency keys), and a new sink instance is handed
//! the old batch again. Sizes do not depend on the suite's size: the horizon is the same in CI.
//!
//! [`Destination::pass_horizon`]: crate::target::Destination::pass_horizon

use super::{Ctx, RUNTIME_BATCH, ScenarioError, TOPIC, sample_batch};

/// Batches of [`RUNTIME_BATCH`] records delivered after the old batch: 20 000 records, more
/// than the largest batch any other scenario replays, in 40 writes.
pub const LATER_BATCHES: u64 = 40;

/// Records of the old batch.
const OLD_RECORDS: u64 = 100;

/// The fault, as counted: records of the old batch replayed after the traffic and the upkeep.
const REPLAYED: &str = "records of an old batch handed to a new instance after the horizon";
/// The traffic, as counted.
const LATER: &str = "records delivered on the partition after the old batch";

/// Old batch, later traffic, upkeep, the old batch again through a new instance.
pub async fn run(ctx: &mut Ctx<'_>) -> Result<(), ScenarioError> {
    let old = sample_batch(TOPIC, 0, 0..=OLD_RECORDS - 1);
    let mut driver = ctx.new_driver().await?;
    ctx.deliver(&mut driver, &old).await?;
    let mut later = 0;
    for n in 0..LATER_BATCHES {
        let first = OLD_RECORDS + n * RUNTIME_BATCH;
        let batch = sample_batch(TOPIC, 0, first..=first + RUNTIME_BATCH - 1);
        ctx.deliver(&mut driver, &batch).await?;
        later += batch.len() as u64;
    }
    drop(driver);
    ctx.fault(LATER, later);

    let upkeep = ctx
        .dest
        .pass_horizon(&ctx.isolation)
        .await
        .map_err(|e| ScenarioError::Failed(format!("going past the horizon: {e}")))?;
    let done = upkeep.steps_words();
    for step in &upkeep.done {
        ctx.fault(step.fault.clone(), step.count);
    }
    ctx.upkeep = Some(upkeep);

    let sink = ctx.new_sink().await?.sink;
    let mut driver = ctx.driver_for(sink.clone());
    let delivered = ctx.deliver(&mut driver, &old).await?;
    ctx.exact_replay_reported(sink.as_ref(), &old, &delivered.outcome);
    ctx.fault(REPLAYED, old.len() as u64);
    ctx.notes.push(format!(
        "replay of {} after {later} later records and the destination's upkeep ({}) reported \
         {} written, {} already present",
        old.id(),
        done,
        delivered.outcome.written,
        delivered.outcome.already_present
    ));
    Ok(())
}
