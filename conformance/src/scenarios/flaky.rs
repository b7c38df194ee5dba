//! flaky-network: thousands of batches through a network that cuts a random 1 % of requests and
//! 3 % of answers ([`Flaky::SUITE`]), from the moment the sink opens. The driver retries with
//! its policy, a driver that gives up is restarted (a supervisor), the read-back is retried.
//! Pass: every offset arrives, and duplicates match the sink's claim.

use std::sync::Arc;

use tokio::task::JoinSet;

use crate::fault::{FaultMode, Flaky};

use super::{Ctx, MAX_RESTARTS, ScenarioError, SuiteSize, TOPIC, deliver, open, sample_batch};

/// Batches at full size.
pub const FULL_BATCHES: u64 = 2_000;
/// Batches at reduced size (CI).
pub const REDUCED_BATCHES: u64 = 200;
/// Records per batch.
const BATCH: u64 = 10;
/// Partitions written at once, by one shared sink instance (many, so destinations that answer
/// at their next commit — Quickwit, Meilisearch — serve several batches per commit).
const PARTITIONS: u32 = 16;

/// Opens a sink under random faults and delivers the batches over [`PARTITIONS`] partitions.
pub async fn run(ctx: &mut Ctx<'_>) -> Result<(), ScenarioError> {
    let batches = match ctx.size {
        SuiteSize::Full => FULL_BATCHES,
        SuiteSize::Reduced => REDUCED_BATCHES,
    };
    let under_test = ctx
        .dest
        .sink(&ctx.isolation)
        .await
        .map_err(|e| ScenarioError::Failed(format!("building the sink: {e}")))?;
    let Some(faults) = under_test.faults.clone() else {
        return Err(ScenarioError::NotApplicable(
            "no fault path between sink and destination".into(),
        ));
    };
    faults.set(FaultMode::Flaky(Flaky::SUITE));
    let mut opener = ctx.driver_for(under_test.sink.clone());
    let opened = open(&mut opener).await;
    let sink = under_test.sink;
    let per_partition = batches.div_ceil(u64::from(PARTITIONS));
    let mut tasks = JoinSet::new();
    if opened.is_ok() {
        for partition in 0..PARTITIONS {
            let mut driver = ctx.driver_for(Arc::clone(&sink));
            let ledger = ctx.ledger.clone();
            tasks.spawn(async move {
                let mut retried = 0;
                for b in 0..per_partition {
                    let first = b * BATCH;
                    let delivered = deliver(
                        &mut driver,
                        &sample_batch(TOPIC, partition, first..=first + BATCH - 1),
                        &ledger,
                    )
                    .await?;
                    retried += delivered.retried.len();
                }
                Ok::<_, ScenarioError>(retried)
            });
        }
    }
    let mut retried = 0;
    let mut failure = opened
        .err()
        .map(|e| ScenarioError::Failed(format!("opening under faults: {e}")));
    while let Some(done) = tasks.join_next().await {
        match done.map_err(|e| ScenarioError::Failed(format!("writer task: {e}"))) {
            Ok(Ok(n)) => retried += n,
            Ok(Err(e)) | Err(e) => {
                failure.get_or_insert(e);
            }
        }
    }
    faults.set(FaultMode::Pass);
    let stats = faults.stats();
    if let Some(e) = failure {
        return Err(e);
    }
    ctx.notes.push(format!(
        "size {}: {} batches of {BATCH} over {PARTITIONS} partitions through one sink instance; \
         {} requests and {} answers cut at random (1 % / 3 %); {retried} failed attempts retried \
         (a stopped driver restarted up to {MAX_RESTARTS} times per batch)",
        ctx.size.id(),
        per_partition * u64::from(PARTITIONS),
        stats.requests_cut,
        stats.acks_lost,
    ));
    Ok(())
}
