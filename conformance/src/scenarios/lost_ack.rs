//! lost-ack: the destination commits, the answer never reaches the sink, the driver retries.

use pico_sink::Batch;

use crate::fault::{FaultMode, FaultSwitch};
use crate::target::SinkUnderTest;

use super::{
    Ctx, LARGE_BATCH, LARGE_RECORD_BYTES, ScenarioError, TOPIC, sample_batch, sized_batch,
};

/// The fault, as counted.
const ACKS_CUT: &str = "answers cut after the destination received the request";

/// Arms a lost acknowledgement, checks that the sink saw an error while the destination holds
/// the batch (once it settled: a task queue may apply an accepted request later), then lets the
/// driver retry the same batch with the same sink instance. Done twice: for a 100-record batch,
/// then for the large batch (10 MiB), which a sink may split into several requests.
///
/// A destination that does not hold the whole 100-record batch after the cut fails the
/// scenario: either the fault did not fall after the commit, or the sink lost what it had sent
/// (a destination committing record by record must hold part of it, as of the large batch).
/// Of the large batch it must hold at least part (the request whose answer was cut); the
/// read-back after the retry judges the rest. A sink whose own stack recovers from the cut
/// answer before returning (its client retries the request) passes on its read-back alone, and
/// the note says so; a cut that never happened fails.
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
    let small = sample_batch(TOPIC, 0, 0..=99);
    let hold = if ctx.dest.commits_record_by_record() {
        Hold::Part
    } else {
        Hold::Whole
    };
    cut_once(ctx, &under_test, faults.as_ref(), &small, hold).await?;
    let large = sized_batch(TOPIC, 1, 0..=LARGE_BATCH - 1, LARGE_RECORD_BYTES);
    cut_once(ctx, &under_test, faults.as_ref(), &large, Hold::Part).await
}

/// How much of the batch the destination must hold after its answer was cut.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// Every record: one request carries the batch.
    Whole,
    /// At least one record: the sink may split the batch (or commit record by record), and
    /// only one answer is cut.
    Part,
}

/// Records of `batch`'s partition the destination holds, once settled.
async fn held(ctx: &Ctx<'_>, batch: &Batch) -> Result<usize, ScenarioError> {
    let partition = batch.records().first().map(|r| r.id.partition);
    Ok(ctx
        .read_back()
        .await?
        .rows
        .iter()
        .filter(|r| Some(r.id.partition) == partition)
        .count())
}

/// Cuts the answer of the request that commits `batch`, checks what the destination holds,
/// and redelivers the batch through a driver on the same sink instance.
async fn cut_once(
    ctx: &mut Ctx<'_>,
    under_test: &SinkUnderTest,
    faults: &dyn FaultSwitch,
    batch: &Batch,
    hold: Hold,
) -> Result<(), ScenarioError> {
    ctx.ledger.lock().sent(batch);
    let cut_before = faults.stats().acks_lost;
    faults.set(FaultMode::LoseNextAck {
        trigger: ctx.dest.lost_ack_trigger(),
    });
    let first = under_test.sink.consume(batch).await;
    faults.set(FaultMode::Pass);
    let cut = faults.stats().acks_lost - cut_before;
    let records = batch.len();
    let err = match first {
        Ok(outcome) if cut > 0 => {
            // The sink's own stack answered the lost acknowledgement (a client that retries
            // the request and meets "already exists", say): the runtime sees a success and has
            // nothing to redeliver. The read-back still judges duplicates and loss.
            if !outcome.rejected.is_empty() {
                return Err(ScenarioError::Failed(format!(
                    "the sink rejected {} records of a clean batch of {records}",
                    outcome.rejected.len()
                )));
            }
            ctx.fault(ACKS_CUT, cut);
            ctx.notes.push(format!(
                "{records} records: ack cut {cut} time(s); the sink recovered before answering \
                 ({} written, {} already present): nothing for the runtime to redeliver",
                outcome.written, outcome.already_present
            ));
            return Ok(());
        }
        Ok(_) => {
            return Err(ScenarioError::Failed(format!(
                "{records} records: the acknowledgement was not lost: the trigger never matched \
                 a request and consume succeeded"
            )));
        }
        Err(e) if cut == 0 => {
            return Err(ScenarioError::Failed(format!(
                "{records} records: consume failed but no answer was cut, so the error is not \
                 the scenario's fault: {e}"
            )));
        }
        Err(e) => e,
    };
    ctx.fault(ACKS_CUT, cut);
    let held = held(ctx, batch).await?;
    let enough = match hold {
        Hold::Whole => held >= records,
        Hold::Part => held > 0,
    };
    if !enough {
        return Err(ScenarioError::Failed(format!(
            "the destination holds {held} of {records} records after the cut, once settled: it \
             had not committed (the sink saw: {err})"
        )));
    }
    ctx.notes.push(format!(
        "{records} records: ack cut {cut} time(s); the sink saw: {err}; the destination already \
         held {held} of them"
    ));
    let mut driver = ctx.driver_for(under_test.sink.clone());
    let delivered = ctx.deliver(&mut driver, batch).await?;
    if held >= records {
        ctx.exact_replay_reported(under_test.sink.as_ref(), batch, &delivered.outcome);
    }
    ctx.fault("batches handed to the sink again after the cut answer", 1);
    ctx.notes.push(format!(
        "{records} records: retry reported {} written, {} already present",
        delivered.outcome.written, delivered.outcome.already_present
    ));
    Ok(())
}
