//! concurrent-partitions: one sink instance serves several partitions at once, as in a
//! runtime that consumes many partitions in one process; one destination.

use tokio::task::JoinSet;

use crate::overlap::Overlap;

use super::{Ctx, RUNTIME_BATCH, ScenarioError, TOPIC, deliver, sample_batch};

/// Partitions written at once.
pub const WRITERS: u32 = 8;

/// Eight partitions, each with its own driver around the same sink instance, deliver three
/// batches of 50 and one of [`RUNTIME_BATCH`] each, concurrently.
pub async fn run(ctx: &mut Ctx<'_>) -> Result<(), ScenarioError> {
    let overlap = Overlap::default();
    let shared = overlap.wrap(ctx.new_sink().await?.sink);
    let mut tasks = JoinSet::new();
    for partition in 0..WRITERS {
        let mut driver = ctx.driver_for(shared.clone());
        let ledger = ctx.ledger.clone();
        tasks.spawn(async move {
            let mut retries = 0;
            // Three batches of 50, then one as large as a runtime hands over.
            for (start, len) in [(0u64, 50), (50, 50), (100, 50), (150, RUNTIME_BATCH)] {
                let delivered = deliver(
                    &mut driver,
                    &sample_batch(TOPIC, partition, start..=start + len - 1),
                    &ledger,
                )
                .await?;
                retries += delivered.retried.len();
            }
            Ok::<_, ScenarioError>(retries)
        });
    }
    let mut retries = 0;
    while let Some(done) = tasks.join_next().await {
        retries += done.map_err(|e| ScenarioError::Failed(format!("writer task: {e}")))??;
    }
    ctx.fault(
        "partitions written through one sink instance",
        u64::from(WRITERS),
    );
    // How far the consumes overlapped in time depends on scheduling (a sink that never yields
    // overlaps only across worker threads): a note, not a condition of the cell.
    ctx.notes.push(format!(
        "consumes in flight at once, at the peak: {}",
        overlap.peak()
    ));
    ctx.notes.push(format!(
        "{WRITERS} partitions x (3 batches x 50 records + 1 x {RUNTIME_BATCH}) through one \
         shared sink instance, concurrently ({retries} retried attempts)"
    ));
    Ok(())
}
