//! concurrent-partitions: several writers, one partition each, one destination, at once.

use tokio::task::JoinSet;

use super::{Ctx, ScenarioError, TOPIC, deliver, sample_batch};

/// Writers at once.
pub const WRITERS: u32 = 4;

/// Four writers deliver three batches of 50 each to partitions 0..4 concurrently.
pub async fn run(ctx: &mut Ctx<'_>) -> Result<(), ScenarioError> {
    let mut tasks = JoinSet::new();
    for partition in 0..WRITERS {
        let mut driver = ctx.new_driver().await?;
        let ledger = ctx.ledger.clone();
        tasks.spawn(async move {
            for start in [0u64, 50, 100] {
                deliver(
                    &mut driver,
                    &sample_batch(TOPIC, partition, start..=start + 49),
                    &ledger,
                )
                .await?;
            }
            Ok::<_, ScenarioError>(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.map_err(|e| ScenarioError::Failed(format!("writer task: {e}")))??;
    }
    ctx.notes.push(format!(
        "{WRITERS} writers x 3 batches x 50 records, concurrently"
    ));
    Ok(())
}
