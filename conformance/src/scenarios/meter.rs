//! meter-readings: the reference workload delivered at-most-once, at-least-once and keyed into
//! the destination, read back from it, and run through the pipeline with its dedupe stage off.
//!
//! The 2 400 readings are offsets 0..2400 of one topic-partition, delivered in batches of 500
//! (a runtime's batch).
//! A reading the delivery duplicates is a redelivery of the same offset as a one-record replay
//! batch after its batch; a reading it loses is never handed to the sink, although the runtime
//! moved past it — the offset counter outside the sink must name it.

use pico_sink::identity::RecordId;
use pico_sink::{Batch, Claim, Record, Scenario};
use serde::{Deserialize, Serialize};

use crate::evidence::FaultCount;
use crate::ledger::{Measured, SharedLedger};
use crate::meter::{
    DeliveryMode, Figures, Pipeline, Reading, deliver, generate_source, run_pipeline, serving_diff,
};

use super::{Ctx, ScenarioError, deliver as deliver_batch, open, read_settled};

/// Topic of the workload.
pub const TOPIC: &str = "meter.readings";
/// Records per batch: a runtime's batch.
pub const BATCH: usize = super::RUNTIME_BATCH as usize;

/// What one delivery mode left in the destination, run through the pipeline without dedupe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModeFigures {
    /// Delivery mode.
    pub mode: DeliveryMode,
    /// Rows read back from the destination.
    pub rows_read: usize,
    /// Offsets the counter found missing.
    pub lost: Vec<u64>,
    /// Offsets the delivery itself dropped (at-most-once).
    pub dropped_by_delivery: Vec<u64>,
    /// Visible rows beyond the first copy of each reading.
    pub visible_duplicates: usize,
    /// Rows read back that are not readings (screened out).
    pub screened_out: usize,
    /// Rows out of the consumption stage.
    pub consumption_rows: usize,
    /// Summary cells that differ from the baseline (of 55).
    pub polluted_cells: usize,
    /// Summary cells in the baseline.
    pub summary_cells: usize,
    /// Serving difference per region against the baseline (empty: none).
    pub serving_diff: Vec<(String, f64)>,
}

fn record(offset: usize, reading: &Reading) -> Result<Record, ScenarioError> {
    let value = serde_json::to_vec(reading)
        .map_err(|e| ScenarioError::Failed(format!("serializing a reading: {e}")))?;
    // One reading a minute from 2026-01-01, so time-keyed destinations get a real time.
    Ok(Record::new(RecordId::new(TOPIC, 0, offset as u64), value)
        .with_timestamp_ms(1_767_225_600_000 + offset as i64 * 60_000))
}

fn batch(records: Vec<Record>) -> Result<Batch, ScenarioError> {
    Batch::new(records).map_err(|e| ScenarioError::Failed(format!("building a batch: {e}")))
}

async fn run_mode(
    ctx: &Ctx<'_>,
    mode: DeliveryMode,
    raw: &[Reading],
    base: &Figures,
) -> Result<(ModeFigures, Measured), ScenarioError> {
    let delivered = deliver(raw, mode);
    let isolation = format!("{}-{}", ctx.isolation, mode.id());
    let ledger = SharedLedger::new(ctx.dest.payload_form());
    let sink = ctx
        .dest
        .sink(&isolation)
        .await
        .map_err(|e| ScenarioError::Failed(format!("building the sink: {e}")))?;
    let mut driver = ctx.driver_for(sink.sink);
    open(&mut driver)
        .await
        .map_err(|e| ScenarioError::Failed(format!("opening the sink: {e}")))?;
    let mut replays = 0;
    for (chunk_no, chunk) in raw.chunks(BATCH).enumerate() {
        let first = chunk_no * BATCH;
        let all: Vec<Record> = chunk
            .iter()
            .enumerate()
            .map(|(i, r)| record(first + i, r))
            .collect::<Result<_, _>>()?;
        // The source produced every offset, whatever the delivery did with it.
        ledger.lock().produced(&batch(all.clone())?);
        let handed: Vec<Record> = all
            .iter()
            .filter(|r| !delivered.lost.contains(&(r.id.offset as usize)))
            .cloned()
            .collect();
        if !handed.is_empty() {
            deliver_batch(&mut driver, &batch(handed)?, &ledger).await?;
        }
        for dup in delivered
            .duplicated
            .iter()
            .filter(|p| (first..first + chunk.len()).contains(*p))
        {
            let again = all[dup - first].clone();
            deliver_batch(&mut driver, &batch(vec![again])?, &ledger).await?;
            replays += 1;
        }
    }
    let back = read_settled(ctx.dest, &isolation).await?;
    let mut measured = ledger.lock().compare(&back);
    measured.faults.push(FaultCount::new(
        format!(
            "readings handed again as one-record replays ({})",
            mode.id()
        ),
        replays,
    ));
    let mut rows: Vec<(u64, Reading)> = Vec::new();
    let mut screened_out = 0;
    for row in &back.rows {
        match serde_json::from_slice::<Reading>(&row.value) {
            Ok(r) => rows.push((row.id.offset, r)),
            Err(_) => screened_out += 1,
        }
    }
    rows.sort_by_key(|(o, _)| *o);
    let readings: Vec<Reading> = rows.into_iter().map(|(_, r)| r).collect();
    let figures = run_pipeline(&readings, Pipeline::WithoutDedupe);
    let lost = measured
        .lost
        .iter()
        .filter_map(|id| id.parse::<RecordId>().ok().map(|r| r.offset))
        .collect();
    Ok((
        ModeFigures {
            mode,
            rows_read: back.rows.len(),
            lost,
            dropped_by_delivery: delivered.lost.iter().map(|p| *p as u64).collect(),
            visible_duplicates: measured.visible_duplicates,
            screened_out,
            consumption_rows: figures.consumption_rows,
            polluted_cells: figures.polluted_cells(base),
            summary_cells: base.summary.len(),
            serving_diff: serving_diff(&figures.serving, &base.serving),
        },
        measured,
    ))
}

/// What the claim implies the destination shows for a mode, as mismatches.
fn check(claim: &Claim, f: &ModeFigures, raw: &[Reading], base: &Figures) -> Vec<String> {
    let mut out = Vec::new();
    let mode = f.mode.id();
    match f.mode {
        DeliveryMode::AtMostOnce => {
            if f.lost != f.dropped_by_delivery {
                out.push(format!(
                    "{mode}: the counter found {} missing offsets, the delivery dropped {}",
                    f.lost.len(),
                    f.dropped_by_delivery.len()
                ));
            }
        }
        DeliveryMode::AtLeastOnce | DeliveryMode::Keyed => {
            if !f.lost.is_empty() {
                out.push(format!("{mode}: {} offsets lost", f.lost.len()));
            }
            let single = claim.promises_single_copy() || f.mode == DeliveryMode::Keyed;
            // An append-only destination must show what the delivery produced.
            let expected = if single {
                base.clone()
            } else {
                run_pipeline(&deliver(raw, f.mode).records, Pipeline::WithoutDedupe)
            };
            let expected_polluted = expected.polluted_cells(base);
            if f.consumption_rows != expected.consumption_rows
                || f.polluted_cells != expected_polluted
                || f.serving_diff != serving_diff(&expected.serving, &base.serving)
            {
                out.push(format!(
                    "{mode}: {} consumption rows and {} polluted cells, the claim implies {} and {}",
                    f.consumption_rows, f.polluted_cells, expected.consumption_rows, expected_polluted
                ));
            }
        }
    }
    out
}

/// Folds what another delivery mode's measurement found wrong into the cell's (records named
/// with their mode): a corruption, a foreign row, a rejection or a miscount in any mode fails
/// the cell as it would in at-least-once.
fn fold_mode(into: &mut Measured, mode: DeliveryMode, other: Measured) {
    let named = |id: String| format!("{} {id}", mode.id());
    into.corrupted
        .extend(other.corrupted.into_iter().map(named));
    into.rejected_but_stored
        .extend(other.rejected_but_stored.into_iter().map(named));
    into.dead_lettered.extend(
        other
            .dead_lettered
            .into_iter()
            .map(|(id, why)| (named(id), why)),
    );
    into.miscounted.extend(
        other
            .miscounted
            .into_iter()
            .map(|m| format!("{}: {m}", mode.id())),
    );
    into.present_unheld.extend(
        other
            .present_unheld
            .into_iter()
            .map(|m| format!("{}: {m}", mode.id())),
    );
    into.foreign += other.foreign;
    into.largest_batch = into.largest_batch.max(other.largest_batch);
}

/// Runs the three modes; the table cell reports at-least-once's figures, the section every
/// mode, and what any mode found wrong fails the cell.
pub(crate) async fn run(ctx: &mut Ctx<'_>) -> Result<Measured, ScenarioError> {
    let raw = generate_source();
    let base = run_pipeline(&raw, Pipeline::WithDedupe);
    let claim = ctx
        .dest
        .sink("pico-describe")
        .await
        .map(|s| s.sink.describe().claim(Scenario::MeterReadings).clone())
        .map_err(|e| ScenarioError::Failed(format!("building the sink: {e}")))?;
    let mut cell = None;
    let mut others = Vec::new();
    let mut figures = Vec::new();
    let mut mismatches = Vec::new();
    let mut unexpected_loss = Vec::new();
    for mode in DeliveryMode::ALL {
        let (f, measured) = run_mode(ctx, mode, &raw, &base).await?;
        mismatches.extend(check(&claim, &f, &raw, &base));
        if mode != DeliveryMode::AtMostOnce {
            unexpected_loss.extend(measured.lost.iter().cloned());
        }
        if mode == DeliveryMode::AtLeastOnce {
            cell = Some(measured);
        } else {
            others.push((mode, measured));
        }
        figures.push(f);
    }
    let mut measured = cell.unwrap_or_default();
    for (mode, other) in others {
        fold_mode(&mut measured, mode, other);
    }
    measured.lost = unexpected_loss;
    measured.meter = figures;
    measured.mismatches = mismatches;
    measured.notes.push(format!(
        "2400 readings, batches of {BATCH}, redeliveries as one-record replays; at-most-once loss is the delivery's, counted separately"
    ));
    Ok(measured)
}
