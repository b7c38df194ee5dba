//! The suite's judgement on deliberately broken sinks, against an in-memory destination (these
//! check the suite, not a destination): a lost-ack scenario that waits for the destination to
//! settle still catches a sink that loses the batch; a record rejected as refused but stored is
//! a failed claim; an honest sink on a task-queue destination passes once the queue settles.

#![allow(clippy::unwrap_used)] // test helpers may panic

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use pico_conformance::fault::FaultState;
use pico_conformance::report::Verdict;
use pico_conformance::runner::{RunOptions, Silent, run_destination};
use pico_conformance::target::{
    Destination, Page, ReadRow, Readback, ServerInfo, SinkUnderTest, checksum,
};
use pico_sink::{
    Batch, Claim, Description, Outcome, Record, RejectedRecord, Scenario, Sink, SinkError,
    WriteReport,
};

/// Per isolation: applied records, and writes accepted but not applied yet (a task queue).
#[derive(Default)]
struct Store {
    applied: HashMap<String, Vec<Record>>,
    queued: HashMap<String, Vec<Record>>,
}

type Shared = Arc<Mutex<Store>>;

#[derive(Clone, Copy)]
enum Behaviour {
    /// Upserts by identity, applied at once.
    Honest,
    /// Accepts the batch into a queue the destination applies when it settles.
    Queued,
    /// Answers `Ok` and stores nothing.
    Forgets,
    /// Stores everything, and reports offset 3 as refused (or as possibly stored).
    RejectsOffset3 { uncertain: bool },
    /// Stores everything, and reports each value that is not JSON as possibly stored.
    RejectsNonJsonUncertain,
    /// Upserts like `Honest`, on a destination without a fault path.
    HonestUnproxied,
    /// Upserts like `Honest` after yielding for a few milliseconds (a write that takes time).
    Slow,
    /// Upserts like `Honest`, says it tells records already held apart, and reports a replay as
    /// written.
    ClaimsToTell,
    /// Upserts like `Honest` and reports one record fewer than the batch as written.
    Undercounts,
    /// Upserts like `Honest`, and appends a changed copy of a record it already holds.
    AppendsChanged,
    /// Stores its first batch, then fails it with an error of its own (no injected fault).
    FailsFirstAfterStoring,
    /// Upserts like `Honest`, on a destination read back in pages of 2 000 rows whose every
    /// page fails at its first attempt.
    HonestPagedFlaky,
    /// Upserts like `Honest`; its `open` sends one request on its fault path and answers
    /// `Fatal` when that request is cut (a network fault taken for misconfiguration).
    FatalWhenOpenIsCut,
}

struct MemorySink {
    store: Shared,
    isolation: String,
    behaviour: Behaviour,
    failed_once: AtomicBool,
    /// The fault path `open` sends its request on ([`Behaviour::FatalWhenOpenIsCut`]).
    network: Option<Arc<FaultState>>,
}

fn upsert(into: &mut Vec<Record>, records: &[Record]) {
    for r in records {
        if !into.iter().any(|o| o.id == r.id) {
            into.push(r.clone());
        }
    }
}

#[async_trait]
impl Sink for MemorySink {
    async fn open(&self) -> Result<(), SinkError> {
        match &self.network {
            Some(network) if network.take_request_cut() => Err(SinkError::fatal(
                "opening: connection closed; check the url",
            )),
            _ => Ok(()),
        }
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        if matches!(self.behaviour, Behaviour::Slow) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let mut store = self.store.lock().unwrap();
        let mut rejected = Vec::new();
        match self.behaviour {
            Behaviour::Honest
            | Behaviour::HonestUnproxied
            | Behaviour::Slow
            | Behaviour::HonestPagedFlaky
            | Behaviour::FatalWhenOpenIsCut
            | Behaviour::ClaimsToTell => upsert(
                store.applied.entry(self.isolation.clone()).or_default(),
                batch.records(),
            ),
            Behaviour::Queued => store
                .queued
                .entry(self.isolation.clone())
                .or_default()
                .extend_from_slice(batch.records()),
            Behaviour::Forgets => {}
            Behaviour::Undercounts => {
                upsert(
                    store.applied.entry(self.isolation.clone()).or_default(),
                    batch.records(),
                );
                return Ok(WriteReport::written(batch.len() - 1).into());
            }
            Behaviour::AppendsChanged => {
                let held = store.applied.entry(self.isolation.clone()).or_default();
                let changed: Vec<Record> = batch
                    .records()
                    .iter()
                    .filter(|r| held.iter().any(|o| o.id == r.id))
                    .map(|r| Record::new(r.id.clone(), "changed"))
                    .collect();
                upsert(held, batch.records());
                held.extend(changed);
            }
            Behaviour::FailsFirstAfterStoring => {
                upsert(
                    store.applied.entry(self.isolation.clone()).or_default(),
                    batch.records(),
                );
                if !self.failed_once.swap(true, Ordering::SeqCst) {
                    return Err(SinkError::retryable("an error of the sink's own"));
                }
            }
            Behaviour::RejectsNonJsonUncertain => {
                upsert(
                    store.applied.entry(self.isolation.clone()).or_default(),
                    batch.records(),
                );
                rejected.extend(
                    batch
                        .records()
                        .iter()
                        .filter(|r| serde_json::from_slice::<serde_json::Value>(&r.value).is_err())
                        .map(|r| RejectedRecord::uncertain(r.id.clone(), "not JSON")),
                );
            }
            Behaviour::RejectsOffset3 { uncertain } => {
                upsert(
                    store.applied.entry(self.isolation.clone()).or_default(),
                    batch.records(),
                );
                if let Some(r) = batch.get(3) {
                    rejected.push(if uncertain {
                        RejectedRecord::uncertain(r.id.clone(), "lost track of it")
                    } else {
                        RejectedRecord::new(r.id.clone(), "refused")
                    });
                }
            }
        }
        Ok(Outcome::new(
            WriteReport::written(batch.len() - rejected.len()),
            rejected,
        ))
    }

    fn describe(&self) -> Description {
        let d = Description::new("memory", "test double", Claim::NoVisibleDuplicate);
        match self.behaviour {
            Behaviour::ClaimsToTell => d.telling_already_present(),
            _ => d,
        }
    }
}

struct Memory {
    store: Shared,
    behaviour: Behaviour,
    /// Pages (isolation, first row) whose first attempt failed already.
    failed_pages: Mutex<HashSet<(String, usize)>>,
}

/// Rows per page of [`Behaviour::HonestPagedFlaky`].
const PAGE: usize = 2_000;

#[async_trait]
impl Destination for Memory {
    fn server(&self) -> ServerInfo {
        ServerInfo {
            name: "memory".into(),
            version: "test".into(),
        }
    }

    async fn sink(&self, isolation: &str) -> Result<SinkUnderTest, String> {
        let network = Arc::new(FaultState::default());
        let sink = MemorySink {
            store: self.store.clone(),
            isolation: isolation.to_owned(),
            behaviour: self.behaviour,
            failed_once: AtomicBool::new(false),
            network: matches!(self.behaviour, Behaviour::FatalWhenOpenIsCut)
                .then(|| network.clone()),
        };
        Ok(match self.behaviour {
            Behaviour::HonestUnproxied => SinkUnderTest::new(sink),
            Behaviour::FatalWhenOpenIsCut => SinkUnderTest::with_faults(sink, network),
            _ => SinkUnderTest::in_process(sink),
        })
    }

    async fn settle(&self, isolation: &str) -> Result<(), String> {
        let mut store = self.store.lock().unwrap();
        let queued = store.queued.remove(isolation).unwrap_or_default();
        upsert(
            store.applied.entry(isolation.to_owned()).or_default(),
            &queued,
        );
        Ok(())
    }

    async fn read_back(&self, isolation: &str) -> Result<Readback, String> {
        let store = self.store.lock().unwrap();
        Ok(Readback::of_rows(
            store
                .applied
                .get(isolation)
                .into_iter()
                .flatten()
                .map(|r| ReadRow {
                    id: r.id.clone(),
                    checksum: checksum(&r.value),
                    value: r.value.clone(),
                })
                .collect(),
        ))
    }

    async fn read_page(&self, isolation: &str, cursor: Option<&str>) -> Result<Page, String> {
        if !matches!(self.behaviour, Behaviour::HonestPagedFlaky) {
            return self
                .read_back(isolation)
                .await
                .map(|back| Page { back, next: None });
        }
        let from = cursor
            .map_or(Ok(0), str::parse::<usize>)
            .map_err(|e| e.to_string())?;
        if self
            .failed_pages
            .lock()
            .unwrap()
            .insert((isolation.to_owned(), from))
        {
            return Err(format!("page at {from}: connection reset (first attempt)"));
        }
        let mut all = self.read_back(isolation).await?.rows;
        let to = (from + PAGE).min(all.len());
        let next = (to < all.len()).then(|| to.to_string());
        Ok(Page {
            back: Readback::of_rows(all.drain(from..to).collect()),
            next,
        })
    }

    async fn shutdown(self: Box<Self>) -> Result<(), String> {
        Ok(())
    }
}

async fn verdict(behaviour: Behaviour, scenario: Scenario) -> (Verdict, String) {
    let dest = Memory {
        store: Shared::default(),
        behaviour,
        failed_pages: Mutex::default(),
    };
    let row = run_destination(
        "memory",
        "test",
        None,
        &dest,
        &[scenario],
        &RunOptions::default(),
        &Silent,
    )
    .await;
    let cell = &row.scenarios[0];
    (cell.verdict.clone(), cell.outcome.clone())
}

#[tokio::test]
async fn lost_ack_passes_an_honest_sink_and_one_on_a_task_queue_once_settled() {
    for behaviour in [Behaviour::Honest, Behaviour::Queued] {
        let (v, outcome) = verdict(behaviour, Scenario::LostAck).await;
        assert_eq!(v, Verdict::Pass, "{outcome}");
    }
}

#[tokio::test]
async fn lost_ack_still_catches_a_sink_that_loses_the_batch_after_the_cut() {
    let (v, outcome) = verdict(Behaviour::Forgets, Scenario::LostAck).await;
    assert!(v.is_failure(), "{outcome}");
    assert!(outcome.contains("holds 0 of 100"), "{outcome}");
}

#[tokio::test]
async fn a_forgetful_sink_is_caught_as_loss_everywhere_else() {
    let (v, outcome) = verdict(Behaviour::Forgets, Scenario::ReplaySameBatch).await;
    assert!(matches!(v, Verdict::Lost(_)), "{outcome}");
}

#[tokio::test]
async fn a_record_rejected_as_refused_but_stored_fails_the_claim() {
    let (v, outcome) = verdict(
        Behaviour::RejectsOffset3 { uncertain: false },
        Scenario::BadInput,
    )
    .await;
    assert!(matches!(v, Verdict::Contradicted(_)), "{outcome}");
    assert!(outcome.contains("rejected but stored"), "{outcome}");
}

#[tokio::test]
async fn a_rejection_that_says_it_may_be_stored_is_not_a_contradiction() {
    let (v, outcome) = verdict(Behaviour::RejectsNonJsonUncertain, Scenario::BadInput).await;
    assert_eq!(v, Verdict::Pass, "{outcome}");
    assert!(outcome.contains("rejected "), "{outcome}");
}

#[tokio::test]
async fn a_valid_record_rejected_outside_bad_input_fails_every_scenario() {
    // The rejection says the record may be stored, and it is: still a valid record the
    // runtime dead-letters. Every scenario that hands over a batch of 4 or more must see it.
    for scenario in [
        Scenario::ReplaySameBatch,
        Scenario::LostAck,
        Scenario::ConcurrentPartitions,
        Scenario::MeterReadings,
        Scenario::FlakyNetwork,
    ] {
        let (v, outcome) = verdict(Behaviour::RejectsOffset3 { uncertain: true }, scenario).await;
        assert!(matches!(v, Verdict::Failed(_)), "{scenario:?}: {outcome}");
        assert!(outcome.contains("valid record"), "{scenario:?}: {outcome}");
    }
}

#[tokio::test]
async fn an_outcome_that_does_not_account_for_its_batch_fails() {
    let (v, outcome) = verdict(Behaviour::Undercounts, Scenario::ReplaySameBatch).await;
    assert!(matches!(v, Verdict::Failed(_)), "{outcome}");
    assert!(outcome.contains("reported outcome is wrong"), "{outcome}");
    assert!(outcome.contains("= 99 of 100"), "{outcome}");
}

#[tokio::test]
async fn a_changed_payload_in_a_second_copy_is_corruption() {
    let (v, outcome) = verdict(Behaviour::AppendsChanged, Scenario::ReplaySameBatch).await;
    assert!(matches!(v, Verdict::Failed(_)), "{outcome}");
    assert!(outcome.contains("corrupted"), "{outcome}");
}

#[tokio::test]
async fn lost_ack_fails_when_the_sink_failed_without_a_cut_answer() {
    let (v, outcome) = verdict(Behaviour::FailsFirstAfterStoring, Scenario::LostAck).await;
    assert!(matches!(v, Verdict::Failed(_)), "{outcome}");
    assert!(outcome.contains("no answer was cut"), "{outcome}");
}

#[tokio::test]
async fn a_cancellation_that_cannot_fall_inside_the_write_is_not_exercised() {
    // The honest memory sink writes without yielding, and no fault path slows its answer: no
    // drop can stop it halfway.
    let (v, outcome) = verdict(Behaviour::HonestUnproxied, Scenario::CancelledConsume).await;
    assert!(matches!(v, Verdict::NotExercised(_)), "{outcome}");
    assert!(outcome.contains("without yielding"), "{outcome}");
    assert!(!v.is_failure(), "{outcome}");
}

#[tokio::test]
async fn cancellations_inside_a_write_are_counted() {
    // Slow on its own, or answering through a slow fault path.
    for behaviour in [Behaviour::Slow, Behaviour::Honest] {
        let (v, outcome) = verdict(behaviour, Scenario::CancelledConsume).await;
        assert_eq!(v, Verdict::Pass, "{outcome}");
        assert!(outcome.contains("faults: "), "{outcome}");
        assert!(
            !outcome.contains("faults: 0 "),
            "a pass must count its drops: {outcome}"
        );
    }
}

#[tokio::test]
async fn flaky_network_counts_its_cuts_and_a_redelivery_after_a_cut_answer() {
    let (v, outcome) = verdict(Behaviour::Honest, Scenario::FlakyNetwork).await;
    assert_eq!(v, Verdict::Pass, "{outcome}");
    assert!(
        outcome
            .contains("1 batches handed to the sink again after a consume failed on a cut answer"),
        "{outcome}"
    );
}

#[tokio::test]
async fn flaky_network_cuts_open_and_fails_a_sink_that_answers_fatal_to_a_cut() {
    let (v, outcome) = verdict(Behaviour::FatalWhenOpenIsCut, Scenario::FlakyNetwork).await;
    assert!(matches!(v, Verdict::Failed(_)), "{outcome}");
    assert!(
        outcome.contains("open answered Fatal after its request 1 was cut"),
        "{outcome}"
    );
}

#[tokio::test]
async fn a_sink_that_says_it_tells_replays_apart_is_held_to_it() {
    for scenario in [Scenario::ReplaySameBatch, Scenario::LostAck] {
        let (v, outcome) = verdict(Behaviour::ClaimsToTell, scenario).await;
        assert!(matches!(v, Verdict::Failed(_)), "{scenario:?}: {outcome}");
        assert!(
            outcome.contains("exact replay of"),
            "{scenario:?}: {outcome}"
        );
        // The same sink without the claim passes: it never said it could tell.
        let (v, outcome) = verdict(Behaviour::Honest, scenario).await;
        assert_eq!(v, Verdict::Pass, "{scenario:?}: {outcome}");
    }
}

#[tokio::test]
async fn bad_input_fails_a_sink_that_refuses_a_plain_record_among_hostile_ones() {
    // Offset 3 of the runtime-sized mixed batch (partition 3) is a plain record every
    // destination can take; the hostile records of the batch sit at 100, 250 and 400.
    let (v, outcome) = verdict(
        Behaviour::RejectsOffset3 { uncertain: true },
        Scenario::BadInput,
    )
    .await;
    assert!(matches!(v, Verdict::Failed(_)), "{outcome}");
    assert!(outcome.contains("valid record"), "{outcome}");
    assert!(outcome.contains("pico.conformance:3:3"), "{outcome}");
}

#[tokio::test]
async fn the_judge_reads_back_page_by_page_retrying_each_page() {
    // Every page fails at its first attempt. Retried whole, the read would get one page
    // further per attempt and need 7 attempts for the 6 pages (10 340 rows); a judge that read
    // the first page only would find loss. Page by page, each page is retried once.
    let (v, outcome) = verdict(Behaviour::HonestPagedFlaky, Scenario::ReplaySameBatch).await;
    assert_eq!(v, Verdict::Pass, "{outcome}");
    assert!(outcome.contains("no visible duplicate"), "{outcome}");
}
