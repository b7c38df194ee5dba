//! [`Ledger`]: the identity counter outside the sink.
//!
//! It records every record sent (with a checksum of its value) and every record the driver
//! dead-lettered, and compares that with what the destination holds: visible duplicates, loss
//! (zero tolerance, every missing offset named), corrupted payloads, foreign rows, and records
//! the sink rejected although the destination holds them (a dead-letter queue replayed later
//! would write those twice), and records reported already present that the destination
//! cannot have held before the call (the shape of a loss: a runtime commits past them).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use pico_sink::driver::DriverHooks;
use pico_sink::identity::{BatchId, RecordId};
use pico_sink::{Batch, DeadLetter, Outcome};
use serde::{Deserialize, Serialize};

use crate::target::{PayloadForm, Readback, payload_checksum};

/// What was sent and dead-lettered.
#[derive(Debug, Default)]
pub struct Ledger {
    form: PayloadForm,
    sent: BTreeMap<RecordId, u64>,
    dead: BTreeMap<RecordId, Rejection>,
    committed: Vec<BatchId>,
    miscounted: Vec<String>,
    largest: Option<BatchSize>,
    must_store: BTreeSet<RecordId>,
    batches_sent: u64,
    handed: BTreeMap<RecordId, Handed>,
    present_unheld: Vec<String>,
}

/// How often a record was handed to the sink, and how many of those deliveries ended with the
/// record refused (the sink did not store it then).
#[derive(Debug, Default, Clone, Copy)]
struct Handed {
    deliveries: u32,
    refused: u32,
}

/// The size of one batch handed to the sink.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct BatchSize {
    /// Records in the batch.
    pub records: u64,
    /// Bytes of the records' values.
    pub bytes: u64,
}

impl BatchSize {
    /// The size of `batch`.
    pub fn of(batch: &Batch) -> Self {
        Self {
            records: batch.len() as u64,
            bytes: batch.records().iter().map(|r| r.value.len() as u64).sum(),
        }
    }
}

#[derive(Debug, Clone)]
struct Rejection {
    reason: String,
    may_be_stored: bool,
}

/// The comparison of a ledger with a read-back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Distinct records sent (a record sent twice counts once).
    pub sent: usize,
    /// Rows read back (visible).
    pub read: usize,
    /// Distinct sent records found.
    pub distinct: usize,
    /// Visible rows beyond the first copy of each record.
    pub visible_duplicates: usize,
    /// Records with more than one visible copy.
    pub repeated_records: usize,
    /// Physical rows beyond the distinct records, where the destination tells them apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_duplicates: Option<u64>,
    /// Records neither read back nor dead-lettered (canonical ids).
    pub lost: Vec<String>,
    /// Records the sink rejected, with the reason (canonical id, reason).
    pub dead_lettered: Vec<(String, String)>,
    /// Valid records the sink rejected (any rejection outside bad-input; inside it, a
    /// rejection of a record every destination can take): a record a runtime dead-letters is
    /// not in the destination, so a sink that refuses valid records loses them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected_valid: Vec<String>,
    /// Batches with more records reported already present than the destination can have
    /// held before the call: records never handed to the sink before (nor at the same time),
    /// or only refused. A runtime commits past them; where the destination does not hold them
    /// they are lost, whatever the read-back finds later.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub present_unheld: Vec<String>,
    /// Batches whose reported outcome is wrong (what a runtime meters and an operator reads):
    /// written + already present + rejected must equal the batch, and a sink that tells
    /// records already held apart must report an exact replay as already present.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub miscounted: Vec<String>,
    /// Records the sink rejected as refused that the destination holds anyway.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected_but_stored: Vec<String>,
    /// Records read back with another value than was sent.
    pub corrupted: Vec<String>,
    /// Rows whose identity was never sent.
    pub foreign: usize,
    /// How often each fault of the scenario happened; a zero makes the cell "not exercised".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<crate::evidence::FaultCount>,
    /// The largest batch the scenario handed to the sink (by records, then bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub largest_batch: Option<BatchSize>,
    /// Observations of the scenario (attempts, faults injected).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Figures per delivery mode (meter-readings only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub meter: Vec<crate::scenarios::meter::ModeFigures>,
    /// Where the measurement disagrees with what the sink's claim implies (meter-readings).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mismatches: Vec<String>,
    /// The horizon the destination named and the upkeep it ran before the old batch came
    /// again (replay-after-horizon only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upkeep: Option<crate::horizon::Upkeep>,
}

impl Ledger {
    /// A ledger comparing payloads in `form`.
    pub fn new(form: PayloadForm) -> Self {
        Self {
            form,
            ..Self::default()
        }
    }

    /// Records a batch as sent, about to be handed to the sink.
    pub fn sent(&mut self, batch: &Batch) {
        self.batches_sent += 1;
        let size = BatchSize::of(batch);
        if self.largest.is_none_or(|l| size > l) {
            self.largest = Some(size);
        }
        self.produced(batch);
        for r in batch.records() {
            self.handed.entry(r.id.clone()).or_default().deliveries += 1;
        }
    }

    /// Records a batch as produced by the source, whether or not a delivery hands it to the
    /// sink (an at-most-once delivery may leave records out).
    pub fn produced(&mut self, batch: &Batch) {
        for r in batch.records() {
            self.sent
                .insert(r.id.clone(), payload_checksum(self.form, &r.value));
        }
    }

    /// Marks a record every destination can take: rejecting it is a failure even where the
    /// scenario feeds records a destination may refuse (bad-input).
    pub fn must_store(&mut self, id: &RecordId) {
        self.must_store.insert(id.clone());
    }

    /// Records dead letters.
    pub fn dead_lettered(&mut self, letters: &[DeadLetter]) {
        for l in letters {
            self.dead.insert(
                l.record.id.clone(),
                Rejection {
                    reason: l.reason.clone(),
                    may_be_stored: l.may_be_stored,
                },
            );
        }
    }

    /// Checks what the sink reported for a delivered batch: every record written, already
    /// present or rejected, none counted twice or left out, and no more already present than
    /// the destination can have held before the call ([`Measured::present_unheld`]).
    /// `retried`: an attempt of this delivery failed before the one that answered (it may
    /// have stored any record of the batch).
    pub fn reported(&mut self, batch: &Batch, outcome: &Outcome, retried: bool) {
        self.check_present(batch, outcome, retried);
        let accounted = outcome.written + outcome.already_present + outcome.rejected.len() as u64;
        if accounted != batch.len() as u64 {
            self.miscounted.push(format!(
                "{}: {} written + {} already present + {} rejected = {accounted} of {} records",
                batch.id(),
                outcome.written,
                outcome.already_present,
                outcome.rejected.len(),
                batch.len()
            ));
        }
    }

    /// "Already present" is a claim that the destination held the record before the call:
    /// at most the records some other delivery (before this one, or at the same time) handed
    /// to the sink without their refusal, or any record when an earlier attempt of this
    /// delivery failed. Then counts this delivery's refusals.
    fn check_present(&mut self, batch: &Batch, outcome: &Outcome, retried: bool) {
        let rejected: BTreeSet<&RecordId> = outcome.rejected.iter().map(|r| &r.id).collect();
        let may_be_held = batch
            .records()
            .iter()
            .filter(|r| !rejected.contains(&r.id))
            .filter(|r| {
                retried
                    || self
                        .handed
                        .get(&r.id)
                        .is_some_and(|h| h.deliveries > h.refused + 1)
            })
            .count() as u64;
        if outcome.already_present > may_be_held {
            self.present_unheld.push(format!(
                "{}: {} reported already present, but at most {may_be_held} of its records can \
                 have been held before the call (the others were never handed to the sink \
                 before, or only refused)",
                batch.id(),
                outcome.already_present
            ));
        }
        for r in outcome.rejected.iter().filter(|r| !r.may_be_stored) {
            if let Some(h) = self.handed.get_mut(&r.id) {
                h.refused += 1;
            }
        }
    }

    /// Checks what a sink that tells records already held from new ones
    /// ([`pico_sink::Description::tells_already_present`]) reported for an exact replay of a
    /// batch the destination held whole: every record already present, none written.
    pub fn replay_reported(&mut self, batch: &Batch, outcome: &Outcome) {
        let held = batch.len() as u64 - outcome.rejected.len() as u64;
        if outcome.written != 0 || outcome.already_present != held {
            self.miscounted.push(format!(
                "exact replay of {}, which the destination held: reported {} written, {} \
                 already present (the sink says it tells them apart)",
                batch.id(),
                outcome.written,
                outcome.already_present
            ));
        }
    }

    /// Batches handed to the sink so far (a redelivery counts again), and distinct records.
    pub fn handed(&self) -> (u64, usize) {
        (self.batches_sent, self.sent.len())
    }

    /// Every offset sent so far.
    pub fn sent_ids(&self) -> impl Iterator<Item = &RecordId> {
        self.sent.keys()
    }

    /// Batches committed so far.
    pub fn committed(&self) -> &[BatchId] {
        &self.committed
    }

    /// Compares with what the destination holds.
    pub fn compare(&self, back: &Readback) -> Measured {
        let mut copies: HashMap<&RecordId, usize> = HashMap::new();
        let mut corrupted = Vec::new();
        let mut foreign = 0;
        for row in &back.rows {
            match self.sent.get(&row.id) {
                Some(sum) => {
                    let n = copies.entry(&row.id).or_default();
                    *n += 1;
                    // Every copy is checked: a replay that stored a changed payload beside
                    // the first copy is corruption too. Each record is named once.
                    let id = row.id.to_string();
                    if *sum != row.checksum && !corrupted.contains(&id) {
                        corrupted.push(id);
                    }
                }
                None => foreign += 1,
            }
        }
        let lost = self
            .sent
            .keys()
            .filter(|id| !copies.contains_key(id) && !self.dead.contains_key(*id))
            .map(ToString::to_string)
            .collect();
        let distinct = copies.len();
        let rejected_but_stored = self
            .dead
            .iter()
            .filter(|(id, r)| !r.may_be_stored && copies.contains_key(id))
            .map(|(id, _)| id.to_string())
            .collect();
        Measured {
            sent: self.sent.len(),
            read: back.rows.len(),
            distinct,
            visible_duplicates: copies.values().map(|n| n - 1).sum(),
            repeated_records: copies.values().filter(|n| **n > 1).count(),
            physical_duplicates: back
                .physical_rows
                .map(|p| p.saturating_sub(distinct as u64)),
            lost,
            dead_lettered: self
                .dead
                .iter()
                .map(|(id, r)| (id.to_string(), r.reason.clone()))
                .collect(),
            rejected_valid: self
                .dead
                .keys()
                .filter(|id| self.must_store.contains(*id))
                .map(ToString::to_string)
                .collect(),
            miscounted: self.miscounted.clone(),
            present_unheld: self.present_unheld.clone(),
            rejected_but_stored,
            corrupted,
            foreign,
            faults: Vec::new(),
            upkeep: None,
            largest_batch: self.largest,
            notes: Vec::new(),
            meter: Vec::new(),
            mismatches: Vec::new(),
        }
    }
}

/// A shareable ledger that also serves as the driver's hooks.
#[derive(Debug, Clone, Default)]
pub(crate) struct SharedLedger(Arc<Mutex<Ledger>>);

impl SharedLedger {
    /// A ledger comparing payloads in `form`.
    pub fn new(form: PayloadForm) -> Self {
        Self(Arc::new(Mutex::new(Ledger::new(form))))
    }

    /// Locks the ledger.
    pub fn lock(&self) -> MutexGuard<'_, Ledger> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl DriverHooks for SharedLedger {
    async fn commit(&mut self, batch: &BatchId) -> Result<(), String> {
        self.lock().committed.push(batch.clone());
        Ok(())
    }

    async fn dead_letter(&mut self, letters: &[DeadLetter]) -> Result<(), String> {
        self.lock().dead_lettered(letters);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use pico_sink::{RejectedRecord, WriteReport};

    use super::*;
    use crate::scenarios::sample_batch;

    fn outcome(written: u64, already_present: u64, refused: &[u64]) -> Outcome {
        let rejected = refused
            .iter()
            .map(|o| RejectedRecord::new(RecordId::new("t", 0, *o), "refused"))
            .collect();
        Outcome::new(
            WriteReport {
                written,
                already_present,
            },
            rejected,
        )
    }

    fn delivered(ledger: &mut Ledger, batch: &Batch, outcome: &Outcome, retried: bool) {
        ledger.sent(batch);
        ledger.reported(batch, outcome, retried);
    }

    #[test]
    fn a_refused_record_replayed_is_never_already_present() {
        let batch = sample_batch("t", 0, 0..=9);
        let mut ledger = Ledger::default();
        delivered(&mut ledger, &batch, &outcome(9, 0, &[3]), false);
        assert!(ledger.present_unheld.is_empty());
        // Refused again, or stored: right. Already present: the shape of a loss.
        delivered(&mut ledger, &batch, &outcome(0, 9, &[3]), false);
        delivered(&mut ledger, &batch, &outcome(1, 9, &[]), false);
        assert!(
            ledger.present_unheld.is_empty(),
            "{:?}",
            ledger.present_unheld
        );
        let mut lied = Ledger::default();
        delivered(&mut lied, &batch, &outcome(9, 0, &[3]), false);
        delivered(&mut lied, &batch, &outcome(0, 10, &[]), false);
        assert_eq!(lied.present_unheld.len(), 1, "{:?}", lied.present_unheld);
        assert!(lied.present_unheld[0].contains("at most 9"));
    }

    #[test]
    fn an_earlier_batch_after_a_later_one_was_never_held() {
        let mut ledger = Ledger::default();
        delivered(
            &mut ledger,
            &sample_batch("t", 0, 10..=19),
            &outcome(10, 0, &[]),
            false,
        );
        delivered(
            &mut ledger,
            &sample_batch("t", 0, 0..=9),
            &outcome(0, 10, &[]),
            false,
        );
        assert_eq!(ledger.present_unheld.len(), 1);
        // After a failed attempt of the same delivery, any record may be held.
        let mut retried = Ledger::default();
        delivered(
            &mut retried,
            &sample_batch("t", 0, 0..=9),
            &outcome(0, 10, &[]),
            true,
        );
        assert!(retried.present_unheld.is_empty());
    }

    #[test]
    fn a_record_handed_to_another_writer_at_the_same_time_may_be_held() {
        let batch = sample_batch("t", 0, 0..=9);
        let mut ledger = Ledger::default();
        // Both writers were handed the batch before either answered.
        ledger.sent(&batch);
        ledger.sent(&batch);
        ledger.reported(&batch, &outcome(10, 0, &[]), false);
        ledger.reported(&batch, &outcome(0, 10, &[]), false);
        assert!(
            ledger.present_unheld.is_empty(),
            "{:?}",
            ledger.present_unheld
        );
    }
}
