//! zombie-writer: two writers own one partition at once during a rebalance and write
//! overlapping ranges concurrently.
//!
//! Both resume from the committed consumer offset (0 here), as a runtime that commits only after
//! the write guarantees: the zombie still holds its uncommitted batches, the new owner fetches
//! from the committed offset with its own batch boundaries. (A new owner can never start above
//! records that were not written: that would need an offset committed before its write.)

use crate::overlap::Overlap;

use super::{Ctx, RUNTIME_BATCH, ScenarioError, TOPIC, deliver, sample_batch};

/// Writer A delivers `[0..=99]`, `[100..=199]`, then a runtime-sized `[200..=699]`; writer B,
/// at the same time, `[0..=49]`, `[50..=149]`, `[150..=199]`, then `[200..=699]` too.
pub async fn run(ctx: &mut Ctx<'_>) -> Result<(), ScenarioError> {
    let last = 200 + RUNTIME_BATCH - 1;
    let overlap = Overlap::default();
    let mut a = ctx.driver_for(overlap.wrap(ctx.new_sink().await?.sink));
    let mut b = ctx.driver_for(overlap.wrap(ctx.new_sink().await?.sink));
    let (la, lb) = (ctx.ledger.clone(), ctx.ledger.clone());
    let writer_a = tokio::spawn(async move {
        for range in [0..=99, 100..=199, 200..=last] {
            deliver(&mut a, &sample_batch(TOPIC, 0, range), &la).await?;
        }
        Ok::<_, ScenarioError>(())
    });
    let writer_b = tokio::spawn(async move {
        for range in [0..=49, 50..=149, 150..=199, 200..=last] {
            deliver(&mut b, &sample_batch(TOPIC, 0, range), &lb).await?;
        }
        Ok::<_, ScenarioError>(())
    });
    let (ra, rb) = tokio::join!(writer_a, writer_b);
    ra.map_err(|e| ScenarioError::Failed(format!("writer A: {e}")))??;
    rb.map_err(|e| ScenarioError::Failed(format!("writer B: {e}")))??;
    // Both writers are handed every record of [0..=last].
    ctx.fault("records handed to both writers", last + 1);
    ctx.notes.push(format!(
        "consumes of the two writers in flight at once, at the peak: {}",
        overlap.peak()
    ));
    ctx.notes.push(format!(
        "A: [0..=99],[100..=199],[200..={last}]; B: [0..=49],[50..=149],[150..=199],[200..={last}]; \
         concurrently, both from the committed offset"
    ));
    Ok(())
}
