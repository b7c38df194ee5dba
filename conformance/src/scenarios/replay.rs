//! replay-same-batch and replay-rebatched: the runtime dies after `consume`, before the commit,
//! and a new sink instance is handed the same range again.
//!
//! Each also runs at the sizes runtimes hand over: replay-same-batch replays a batch of
//! [`LARGE_BATCH`] records of 1 KiB (past the 10 MiB body caps some destinations set; a sink
//! that splits it must recognise the replay of every part), replay-rebatched a
//! [`RUNTIME_BATCH`]-record batch re-cut at another boundary.

use pico_sink::Batch;

use super::{
    Ctx, LARGE_BATCH, LARGE_RECORD_BYTES, RUNTIME_BATCH, ScenarioError, TOPIC, sample_batch,
    sized_batch,
};

/// The fault, as counted.
const REDELIVERED: &str = "records consumed, not committed, and handed to a new instance again";

/// `first` consumed, crash, `again` delivered by a new instance; returns the replay's note.
async fn crash_and_replay(
    ctx: &mut Ctx<'_>,
    first: &Batch,
    again: &Batch,
) -> Result<String, ScenarioError> {
    ctx.consume_then_crash(first).await?;
    let sink = ctx.new_sink().await?.sink;
    let mut driver = ctx.driver_for(sink.clone());
    let delivered = ctx.deliver(&mut driver, again).await?;
    if first == again {
        ctx.exact_replay_reported(sink.as_ref(), again, &delivered.outcome);
    }
    let overlap = again
        .records()
        .iter()
        .filter(|r| r.id.offset >= first.id().first && r.id.offset <= first.id().last)
        .count();
    ctx.fault(REDELIVERED, overlap as u64);
    Ok(format!(
        "replay {} reported {} written, {} already present",
        again.id(),
        delivered.outcome.written,
        delivered.outcome.already_present
    ))
}

/// `[0..=99]` consumed, crash, `[0..=99]` delivered again by a new instance; then the same with
/// [`LARGE_BATCH`] records of 1 KiB on partition 1.
pub async fn same_batch(ctx: &mut Ctx<'_>) -> Result<(), ScenarioError> {
    let small = sample_batch(TOPIC, 0, 0..=99);
    let note = crash_and_replay(ctx, &small, &small).await?;
    ctx.notes.push(note);
    let large = sized_batch(TOPIC, 1, 0..=LARGE_BATCH - 1, LARGE_RECORD_BYTES);
    let note = crash_and_replay(ctx, &large, &large).await?;
    ctx.notes.push(note);
    Ok(())
}

/// `[0..=99]` consumed, crash, then `[50..=149]` delivered by a new instance; then the same at
/// [`RUNTIME_BATCH`] records on partition 1 (`[0..=499]`, then `[250..=749]`).
pub async fn rebatched(ctx: &mut Ctx<'_>) -> Result<(), ScenarioError> {
    let note = crash_and_replay(
        ctx,
        &sample_batch(TOPIC, 0, 0..=99),
        &sample_batch(TOPIC, 0, 50..=149),
    )
    .await?;
    ctx.notes.push(note);
    let half = RUNTIME_BATCH / 2;
    let note = crash_and_replay(
        ctx,
        &sample_batch(TOPIC, 1, 0..=RUNTIME_BATCH - 1),
        &sample_batch(TOPIC, 1, half..=half + RUNTIME_BATCH - 1),
    )
    .await?;
    ctx.notes.push(note);
    Ok(())
}
