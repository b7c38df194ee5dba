//! replay-same-batch and replay-rebatched: the runtime dies after `consume`, before the commit,
//! and a new sink instance is handed the same range again.

use super::{Ctx, ScenarioError, TOPIC, sample_batch};

/// The fault, as counted.
const REDELIVERED: &str = "records consumed, not committed, and handed to a new instance again";

/// `[0..=99]` consumed, crash, `[0..=99]` delivered again by a new instance.
pub async fn same_batch(ctx: &mut Ctx<'_>) -> Result<(), ScenarioError> {
    let batch = sample_batch(TOPIC, 0, 0..=99);
    ctx.consume_then_crash(&batch).await?;
    let mut driver = ctx.new_driver().await?;
    let delivered = ctx.deliver(&mut driver, &batch).await?;
    ctx.fault(REDELIVERED, batch.len() as u64);
    ctx.notes.push(format!(
        "replay reported {} written, {} already present",
        delivered.outcome.written, delivered.outcome.already_present
    ));
    Ok(())
}

/// `[0..=99]` consumed, crash, then `[50..=149]` delivered by a new instance.
pub async fn rebatched(ctx: &mut Ctx<'_>) -> Result<(), ScenarioError> {
    ctx.consume_then_crash(&sample_batch(TOPIC, 0, 0..=99))
        .await?;
    let mut driver = ctx.new_driver().await?;
    let delivered = ctx
        .deliver(&mut driver, &sample_batch(TOPIC, 0, 50..=149))
        .await?;
    ctx.fault(REDELIVERED, 50);
    ctx.notes.push(format!(
        "replay [50..=149] reported {} written, {} already present",
        delivered.outcome.written, delivered.outcome.already_present
    ));
    Ok(())
}
