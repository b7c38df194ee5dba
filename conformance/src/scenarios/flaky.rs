//! flaky-network: thousands of batches through a network that cuts a random 1 % of requests and
//! 3 % of answers ([`Flaky::SUITE`]), from the moment the sink opens. The driver retries with
//! its policy, a driver that gives up is restarted (a supervisor), the read-back is retried.
//! Pass: every offset arrives, and duplicates match the sink's claim.
//!
//! The scenario exists for the redelivery path: a batch handed to the sink again after a cut.
//! A client that retries on its own can absorb every random cut, and with many partitions at
//! once no failed consume can be tied to the answer that was cut. So the scenario goes on, on
//! one more partition, cutting a growing share of answers ([`ESCALATION`]) until a consume
//! fails on a cut answer, and redelivers that batch. The cell counts the cuts and that
//! redelivery; a zero is "not exercised".
//!
//! Before the random cuts, `open` meets a cut at every point of its conversation
//! ([`open_under_cuts`]): fresh sinks open with their first, second, … request cut. A cut
//! network is never a reason to stop a pipeline for good: each such open must succeed or fail
//! `Retryable`, never `Fatal`.

use std::sync::Arc;
use std::time::Duration;

use pico_sink::Sink;
use tokio::task::JoinSet;

use crate::fault::{FaultMode, FaultSwitch, Flaky};
use crate::target::SinkUnderTest;

use super::{
    Ctx, MAX_RESTARTS, RUNTIME_BATCH, ScenarioError, SuiteSize, TOPIC, deliver, open, sample_batch,
};

/// Batches at full size.
pub const FULL_BATCHES: u64 = 2_000;
/// Batches at reduced size (CI).
pub const REDUCED_BATCHES: u64 = 200;
/// Records per batch.
const BATCH: u64 = 10;
/// Partitions written at once, by one shared sink instance (many, so destinations that answer
/// at their next commit — Quickwit, Meilisearch — serve several batches per commit).
const PARTITIONS: u32 = 16;

/// Shares of answers cut (per mille) while no batch came back to the sink after a cut answer.
pub const ESCALATION: [u16; 4] = [300, 600, 900, 1000];
/// How long one consume may take under [`ESCALATION`] before the caller gives up on it (drops
/// it, as a runtime's timeout does) and redelivers.
const ESCALATED_CONSUME: Duration = Duration::from_secs(60);

/// Batches the scenario hands over at `size` before its escalation (one to four more).
pub fn planned(size: SuiteSize) -> u64 {
    let batches = match size {
        SuiteSize::Full => FULL_BATCHES,
        SuiteSize::Reduced => REDUCED_BATCHES,
    };
    batches.div_ceil(u64::from(PARTITIONS)) * u64::from(PARTITIONS)
}

/// The most requests of one `open` cut in turn, one per fresh sink.
const OPEN_CUTS: u32 = 16;

/// A new sink instance, built and not opened.
async fn built(ctx: &Ctx<'_>) -> Result<SinkUnderTest, ScenarioError> {
    ctx.dest
        .sink(&ctx.isolation)
        .await
        .map_err(|e| ScenarioError::Failed(format!("building the sink: {e}")))
}

/// Opens a sink under random faults and delivers the batches over [`PARTITIONS`] partitions.
pub async fn run(ctx: &mut Ctx<'_>) -> Result<(), ScenarioError> {
    if let Some(note) = open_under_cuts(ctx).await? {
        ctx.notes.push(note);
    }
    let under_test = built(ctx).await?;
    let Some(faults) = under_test.faults.clone() else {
        return Err(ScenarioError::NotApplicable(
            "no fault path between sink and destination".into(),
        ));
    };
    faults.set(FaultMode::Flaky(Flaky::SUITE));
    let mut opener = ctx.driver_for(under_test.sink.clone());
    let opened = open(&mut opener).await;
    let sink = under_test.sink;
    let per_partition = planned(ctx.size) / u64::from(PARTITIONS);
    let mut tasks = JoinSet::new();
    if opened.is_ok() {
        for partition in 0..PARTITIONS {
            let mut driver = ctx.driver_for(Arc::clone(&sink));
            let ledger = ctx.ledger.clone();
            tasks.spawn(async move {
                let (mut retried, mut again) = (0, 0);
                for b in 0..per_partition {
                    let first = b * BATCH;
                    let delivered = deliver(
                        &mut driver,
                        &sample_batch(TOPIC, partition, first..=first + BATCH - 1),
                        &ledger,
                    )
                    .await?;
                    retried += delivered.retried.len();
                    again += usize::from(!delivered.retried.is_empty());
                }
                Ok::<_, ScenarioError>((retried, again))
            });
        }
    }
    let (mut retried, mut again) = (0, 0);
    let mut failure = opened
        .err()
        .map(|e| ScenarioError::Failed(format!("opening under faults: {e}")));
    while let Some(done) = tasks.join_next().await {
        match done.map_err(|e| ScenarioError::Failed(format!("writer task: {e}"))) {
            Ok(Ok((r, a))) => {
                retried += r;
                again += a;
            }
            Ok(Err(e)) | Err(e) => {
                failure.get_or_insert(e);
            }
        }
    }
    faults.set(FaultMode::Pass);
    if let Some(e) = failure {
        return Err(e);
    }
    let stats = faults.stats();
    ctx.notes.push(format!(
        "size {}: {} batches of {BATCH} over {PARTITIONS} partitions through one sink instance; \
         {} requests and {} answers cut at random (1 % / 3 %); {retried} failed attempts \
         retried, {again} batches handed to the sink again (a stopped driver restarted up to \
         {MAX_RESTARTS} times per batch)",
        ctx.size.id(),
        per_partition * u64::from(PARTITIONS),
        stats.requests_cut,
        stats.acks_lost,
    ));
    // The redelivery after a cut answer is made sure of on its own partition, where a failed
    // consume can be told apart from the others.
    let after_cut_answer = escalate(ctx, &sink, faults.as_ref()).await?;
    let stats = faults.stats();
    ctx.fault(
        "requests or answers cut",
        stats.requests_cut + stats.acks_lost,
    );
    ctx.fault(
        "batches handed to the sink again after a consume failed on a cut answer",
        after_cut_answer,
    );
    Ok(())
}

/// Cuts a growing share of answers ([`ESCALATION`]) of runtime-sized batches
/// ([`RUNTIME_BATCH`]) on one more partition until a consume
/// fails (or hangs past [`ESCALATED_CONSUME`]) after an answer was cut, then redelivers that
/// batch through a driver. Returns the batches redelivered after a cut answer (0 or 1).
async fn escalate(
    ctx: &mut Ctx<'_>,
    sink: &Arc<dyn Sink>,
    faults: &dyn FaultSwitch,
) -> Result<u64, ScenarioError> {
    for (step, per_mille) in ESCALATION.into_iter().enumerate() {
        let first = step as u64 * RUNTIME_BATCH;
        let batch = sample_batch(TOPIC, PARTITIONS, first..=first + RUNTIME_BATCH - 1);
        ctx.ledger.lock().sent(&batch);
        let cut_before = faults.stats().acks_lost;
        faults.set(FaultMode::Flaky(Flaky {
            requests_per_mille: 0,
            answers_per_mille: per_mille,
        }));
        let consumed = tokio::time::timeout(ESCALATED_CONSUME, sink.consume(&batch)).await;
        faults.set(FaultMode::Pass);
        let cut = faults.stats().acks_lost - cut_before;
        let failed = !matches!(consumed, Ok(Ok(_)));
        // Handed to the sink again in every case: after a failure as a runtime does, after a
        // success so the partition ends like the others.
        let mut driver = ctx.driver_for(Arc::clone(sink));
        ctx.deliver(&mut driver, &batch).await?;
        ctx.notes.push(format!(
            "escalation: {} % of answers cut: {cut} cut, the consume {}",
            per_mille / 10,
            match consumed {
                Ok(Ok(_)) => "succeeded (the sink's client absorbed the cuts)".to_owned(),
                Ok(Err(e)) => format!("failed ({e}); the batch was handed to the sink again"),
                Err(_) => format!(
                    "did not return within {} s and was dropped; the batch was handed to the \
                     sink again",
                    ESCALATED_CONSUME.as_secs()
                ),
            }
        ));
        if failed && cut > 0 {
            return Ok(1);
        }
    }
    Ok(0)
}

/// Opens fresh sinks with their first, second, … request cut (at most [`OPEN_CUTS`]), until
/// one opens without its cut request having been sent (its `open` needs fewer requests). Each
/// open must return within [`ESCALATED_CONSUME`], `Ok` or `Retryable` — a `Fatal` answer to a
/// network fault would stop a pipeline for good — and the sink must open once the network is
/// whole. Returns the note (`None` for a destination with no fault path).
async fn open_under_cuts(ctx: &Ctx<'_>) -> Result<Option<String>, ScenarioError> {
    let (mut retryable, mut absorbed) = (Vec::new(), Vec::new());
    let mut needed = None;
    for nth in 1..=OPEN_CUTS {
        let under_test = built(ctx).await?;
        let Some(faults) = under_test.faults.clone() else {
            return Ok(None);
        };
        let cut_before = faults.stats().requests_cut;
        faults.set(FaultMode::CutRequest { nth });
        let opened = tokio::time::timeout(ESCALATED_CONSUME, under_test.sink.open()).await;
        let cut = faults.stats().requests_cut > cut_before;
        faults.set(FaultMode::Pass);
        match opened {
            Err(_) => {
                return Err(ScenarioError::Failed(format!(
                    "open did not return within {} s after its request {nth} was cut",
                    ESCALATED_CONSUME.as_secs()
                )));
            }
            Ok(Err(e)) if e.is_fatal() => {
                return Err(ScenarioError::Failed(format!(
                    "open answered Fatal after its request {nth} was cut (a network fault, not \
                     a configuration to change): {e}"
                )));
            }
            Ok(Err(_)) => retryable.push(nth),
            Ok(Ok(())) if cut => absorbed.push(nth),
            Ok(Ok(())) => {
                needed = Some(nth - 1);
                break;
            }
        }
        let mut driver = ctx.driver_for(Arc::clone(&under_test.sink));
        open(&mut driver).await.map_err(|e| {
            ScenarioError::Failed(format!(
                "opening again after request {nth} of an open was cut: {e}"
            ))
        })?;
    }
    Ok(Some(open_cuts_note(needed, &retryable, &absorbed)))
}

/// The note of [`open_under_cuts`]: how many requests `open` sends (`None`: more than
/// [`OPEN_CUTS`]), and with which of them cut it answered `Retryable` or succeeded.
fn open_cuts_note(needed: Option<u32>, retryable: &[u32], absorbed: &[u32]) -> String {
    let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    let mut note = match needed {
        Some(0) => "open under cuts: open sent no request (it connects on first use)".to_owned(),
        Some(1) => "open under cuts: open sends 1 request".to_owned(),
        Some(n) => format!("open under cuts: open sends {n} requests"),
        None => format!(
            "open under cuts: open sends more than {OPEN_CUTS} requests; the first {OPEN_CUTS} \
             were cut"
        ),
    };
    if !retryable.is_empty() {
        note.push_str(&format!(
            "; open answered Retryable with request {} cut",
            list(retryable)
        ));
    }
    if !absorbed.is_empty() {
        note.push_str(&format!(
            "; open succeeded all the same (its client retried) with request {} cut",
            list(absorbed)
        ));
    }
    if needed != Some(0) {
        note.push_str("; each sink opened once the network was whole");
    }
    note
}
