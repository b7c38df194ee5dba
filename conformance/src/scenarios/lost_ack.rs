//! lost-ack: the destination commits, the answer never reaches the sink, the driver retries.

use crate::fault::FaultMode;

use super::{Ctx, ScenarioError, TOPIC, sample_batch};

/// The fault, as counted.
const ACKS_CUT: &str = "answers cut after the destination received the request";

/// Arms a lost acknowledgement, checks that the sink saw an error while the destination holds
/// the batch (once it settled: a task queue may apply an accepted request later), then lets the
/// driver retry the same batch with the same sink instance.
///
/// A destination that does not hold the whole batch after the cut fails the scenario: either
/// the fault did not fall after the commit, or the sink lost what it had sent. A sink whose own
/// stack recovers from the cut answer before returning (its client retries the request) passes
/// on its read-back alone, and the note says so; a cut that never happened fails.
pub async fn run(ctx: &mut Ctx<'_>) -> Result<(), ScenarioError> {
    if let Some(why) = ctx.dest.commit_off_the_fault_path() {
        return Err(ScenarioError::NotApplicable(why));
    }
    let under_test = ctx.new_sink().await?;
    let Some(faults) = under_test.faults.clone() else {
        return Err(ScenarioError::NotApplicable(
            "no fault path between sink and destination".into(),
        ));
    };
    let batch = sample_batch(TOPIC, 0, 0..=99);
    ctx.ledger.lock().sent(&batch);
    faults.set(FaultMode::LoseNextAck {
        trigger: ctx.dest.lost_ack_trigger(),
    });
    let first = under_test.sink.consume(&batch).await;
    faults.set(FaultMode::Pass);
    let err = match first {
        Ok(outcome) if faults.stats().acks_lost > 0 => {
            // The sink's own stack answered the lost acknowledgement (a client that retries
            // the request and meets "already exists", say): the runtime sees a success and has
            // nothing to redeliver. The read-back still judges duplicates and loss.
            if !outcome.rejected.is_empty() {
                return Err(ScenarioError::Failed(format!(
                    "the sink rejected {} records of a clean batch",
                    outcome.rejected.len()
                )));
            }
            ctx.fault(ACKS_CUT, faults.stats().acks_lost);
            ctx.notes.push(format!(
                "ack cut {} time(s); the sink recovered before answering ({} written, {} \
                 already present): nothing for the runtime to redeliver",
                faults.stats().acks_lost,
                outcome.written,
                outcome.already_present
            ));
            return Ok(());
        }
        Ok(_) => {
            return Err(ScenarioError::Failed(
                "the acknowledgement was not lost: the trigger never matched a request and \
                 consume succeeded"
                    .into(),
            ));
        }
        Err(e) if faults.stats().acks_lost == 0 => {
            return Err(ScenarioError::Failed(format!(
                "consume failed but no answer was cut, so the error is not the scenario's \
                 fault: {e}"
            )));
        }
        Err(e) => e,
    };
    ctx.fault(ACKS_CUT, faults.stats().acks_lost);
    let held = ctx.read_back().await?.rows.len();
    if held < batch.len() {
        return Err(ScenarioError::Failed(format!(
            "the destination holds {held} of {} records after the cut, once settled: it had not \
             committed (the sink saw: {err})",
            batch.len()
        )));
    }
    ctx.notes.push(format!(
        "ack cut {} time(s); the sink saw: {err}; the destination already held all {} records",
        faults.stats().acks_lost,
        batch.len()
    ));
    let mut driver = ctx.driver_for(under_test.sink.clone());
    let delivered = ctx.deliver(&mut driver, &batch).await?;
    ctx.exact_replay_reported(under_test.sink.as_ref(), &batch, &delivered.outcome);
    ctx.fault("batches handed to the sink again after the cut answer", 1);
    ctx.notes.push(format!(
        "retry reported {} written, {} already present",
        delivered.outcome.written, delivered.outcome.already_present
    ));
    Ok(())
}
