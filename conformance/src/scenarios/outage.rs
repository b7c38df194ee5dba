//! outage: the destination is unreachable for several attempts, then returns.

use std::time::Duration;

use crate::fault::FaultMode;

use super::{Ctx, RUNTIME_BATCH, ScenarioError, TOPIC, sample_batch};

/// How long the destination stays unreachable: with the spec's backoff (attempts at 0, 0.2,
/// 0.6, 1.4, 3.0 s) the first three attempts fail and the fourth succeeds.
pub const OUTAGE: Duration = Duration::from_millis(1000);

/// Refuses connections for [`OUTAGE`] while the driver delivers a runtime-sized batch, then
/// delivers one more batch.
pub async fn run(ctx: &mut Ctx<'_>) -> Result<(), ScenarioError> {
    let under_test = ctx.new_sink().await?;
    let Some(faults) = under_test.faults.clone() else {
        return Err(ScenarioError::NotApplicable(
            "no fault path between sink and destination".into(),
        ));
    };
    let mut driver = ctx.driver_for(under_test.sink);
    ctx.deliver(&mut driver, &sample_batch(TOPIC, 0, 0..=49))
        .await?;
    faults.set(FaultMode::Refuse);
    let restore = {
        let faults = faults.clone();
        tokio::spawn(async move {
            tokio::time::sleep(OUTAGE).await;
            faults.set(FaultMode::Pass);
        })
    };
    let after = 50 + RUNTIME_BATCH;
    let during = ctx
        .deliver(&mut driver, &sample_batch(TOPIC, 0, 50..=after - 1))
        .await;
    restore
        .await
        .map_err(|e| ScenarioError::Failed(format!("outage timer: {e}")))?;
    let during = during?;
    let refused = faults.stats().refused;
    if refused == 0 {
        return Err(ScenarioError::Failed(
            "the outage never took effect: nothing was refused".into(),
        ));
    }
    ctx.deliver(&mut driver, &sample_batch(TOPIC, 0, after..=after + 49))
        .await?;
    ctx.fault("connections or writes refused during the outage", refused);
    ctx.notes.push(if during.attempts >= 2 {
        format!(
            "destination down {} ms: {} attempts for the batch during the outage ({refused} \
             refused writes/connections)",
            OUTAGE.as_millis(),
            during.attempts,
        )
    } else {
        format!(
            "destination down {} ms: {refused} writes/connections refused, absorbed by the \
             destination client's own retries inside one attempt",
            OUTAGE.as_millis(),
        )
    });
    Ok(())
}
