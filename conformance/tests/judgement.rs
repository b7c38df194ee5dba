//! The suite's judgement on deliberately broken sinks, against an in-memory destination (these
//! check the suite, not a destination): a lost-ack scenario that waits for the destination to
//! settle still catches a sink that loses the batch; a record rejected as refused but stored is
//! a failed claim; an honest sink on a task-queue destination passes once the queue settles.

#![allow(clippy::unwrap_used)] // test helpers may panic

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use pico_conformance::report::Verdict;
use pico_conformance::runner::{RunOptions, Silent, run_destination};
use pico_conformance::target::{
    Destination, ReadRow, Readback, ServerInfo, SinkUnderTest, checksum,
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
}

struct MemorySink {
    store: Shared,
    isolation: String,
    behaviour: Behaviour,
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
        Ok(())
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let mut store = self.store.lock().unwrap();
        let mut rejected = Vec::new();
        match self.behaviour {
            Behaviour::Honest => upsert(
                store.applied.entry(self.isolation.clone()).or_default(),
                batch.records(),
            ),
            Behaviour::Queued => store
                .queued
                .entry(self.isolation.clone())
                .or_default()
                .extend_from_slice(batch.records()),
            Behaviour::Forgets => {}
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

    async fn close(&self) -> Result<(), SinkError> {
        Ok(())
    }

    fn describe(&self) -> Description {
        Description::new("memory", "test double", Claim::NoVisibleDuplicate)
    }
}

struct Memory {
    store: Shared,
    behaviour: Behaviour,
}

#[async_trait]
impl Destination for Memory {
    fn server(&self) -> ServerInfo {
        ServerInfo {
            name: "memory".into(),
            version: "test".into(),
        }
    }

    async fn sink(&self, isolation: &str) -> Result<SinkUnderTest, String> {
        Ok(SinkUnderTest::in_process(MemorySink {
            store: self.store.clone(),
            isolation: isolation.to_owned(),
            behaviour: self.behaviour,
        }))
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

    async fn shutdown(self: Box<Self>) -> Result<(), String> {
        Ok(())
    }
}

async fn verdict(behaviour: Behaviour, scenario: Scenario) -> (Verdict, String) {
    let dest = Memory {
        store: Shared::default(),
        behaviour,
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
        Scenario::ReplaySameBatch,
    )
    .await;
    assert!(matches!(v, Verdict::Contradicted(_)), "{outcome}");
    assert!(outcome.contains("rejected but stored"), "{outcome}");
}

#[tokio::test]
async fn a_rejection_that_says_it_may_be_stored_is_not_a_contradiction() {
    let (v, outcome) = verdict(
        Behaviour::RejectsOffset3 { uncertain: true },
        Scenario::ReplaySameBatch,
    )
    .await;
    assert_eq!(v, Verdict::Pass, "{outcome}");
}
