//! concurrent-partitions: one sink instance serves several partitions at once, as in a
//! runtime that consumes many partitions in one process; one destination.

use tokio::task::JoinSet;

use super::{Ctx, ScenarioError, TOPIC, deliver, sample_batch};

/// Partitions written at once.
pub const WRITERS: u32 = 8;

/// Eight partitions, each with its own driver around the same sink instance, deliver three
/// batches of 50 each concurrently.
pub async fn run(ctx: &mut Ctx<'_>) -> Result<(), ScenarioError> {
    let shared = ctx.new_sink().await?.sink;
    let mut tasks = JoinSet::new();
    for partition in 0..WRITERS {
        let mut driver = ctx.driver_for(shared.clone());
        let ledger = ctx.ledger.clone();
        tasks.spawn(async move {
            let mut retries = 0;
            for start in [0u64, 50, 100] {
                let delivered = deliver(
                    &mut driver,
                    &sample_batch(TOPIC, partition, start..=start + 49),
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
    ctx.notes.push(format!(
        "{WRITERS} partitions x 3 batches x 50 records through one shared sink instance, \
         concurrently ({retries} retried attempts)"
    ));
    Ok(())
}
