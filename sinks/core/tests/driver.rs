//! The reference driver: exact backoff schedule on a paused clock, commit only after success,
//! dead letters before the commit, stop after the last failure.

#![allow(clippy::unwrap_used)] // test helpers may panic

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use pico_sink::identity::{BatchId, RecordId};
use pico_sink::{
    Batch, Claim, Description, Driver, DriverError, DriverHooks, MemoryHooks, Record,
    RejectedRecord, RetryPolicy, Sink, SinkError, WriteReport,
};
use tokio::time::Instant;

/// A sink that answers from a script and records when each `consume` happened.
struct ScriptedSink {
    script: VecDeque<Result<WriteReport, SinkError>>,
    calls: Arc<Mutex<Vec<Instant>>>,
}

impl ScriptedSink {
    fn new(script: Vec<Result<WriteReport, SinkError>>) -> (Self, Arc<Mutex<Vec<Instant>>>) {
        let calls = Arc::new(Mutex::new(Vec::new()));
        (
            Self {
                script: script.into(),
                calls: calls.clone(),
            },
            calls,
        )
    }
}

#[async_trait]
impl Sink for ScriptedSink {
    async fn open(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
    async fn consume(&mut self, batch: &Batch) -> Result<WriteReport, SinkError> {
        self.calls.lock().unwrap().push(Instant::now());
        self.script.pop_front().unwrap_or(Ok(WriteReport {
            written: batch.len() as u64,
            already_present: 0,
        }))
    }
    async fn close(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
    fn describe(&self) -> Description {
        Description {
            sink: "scripted".into(),
            mechanism: "test script".into(),
            claims: vec![],
            default_claim: Claim::Repeats,
        }
    }
}

fn batch(first: u64, n: u64) -> Batch {
    Batch::new(
        (first..first + n)
            .map(|o| Record::new(RecordId::new("t", 0, o), format!("{{\"o\":{o}}}")))
            .collect(),
    )
    .unwrap()
}

fn gaps(calls: &[Instant]) -> Vec<Duration> {
    calls.windows(2).map(|w| w[1] - w[0]).collect()
}

fn ms(v: &[u64]) -> Vec<Duration> {
    v.iter().map(|m| Duration::from_millis(*m)).collect()
}

#[tokio::test(start_paused = true)]
async fn five_failures_follow_the_spec_schedule_then_stop() {
    let (sink, calls) = ScriptedSink::new(
        (0..5)
            .map(|i| Err(SinkError::retryable(format!("boom {i}"))))
            .collect(),
    );
    let mut driver = Driver::new(sink);
    let mut hooks = MemoryHooks::default();
    let err = driver.deliver(&batch(0, 10), &mut hooks).await.unwrap_err();
    assert!(
        matches!(err, DriverError::GaveUp { attempts: 5, .. }),
        "{err}"
    );
    assert_eq!(gaps(&calls.lock().unwrap()), ms(&[200, 400, 800, 1600]));
    assert!(hooks.committed.is_empty(), "offset must not move");
    // A stopped driver refuses further batches without calling the sink.
    let again = driver.deliver(&batch(10, 1), &mut hooks).await.unwrap_err();
    assert!(matches!(again, DriverError::Stopped { .. }));
    assert_eq!(calls.lock().unwrap().len(), 5);
    assert!(driver.stopped().is_some());
}

#[tokio::test(start_paused = true)]
async fn success_on_the_last_attempt_commits_once() {
    let mut script: Vec<_> = (0..4).map(|_| Err(SinkError::retryable("down"))).collect();
    script.push(Ok(WriteReport {
        written: 10,
        already_present: 0,
    }));
    let (sink, calls) = ScriptedSink::new(script);
    let mut driver = Driver::new(sink);
    let mut hooks = MemoryHooks::default();
    let started = Instant::now();
    let delivered = driver.deliver(&batch(0, 10), &mut hooks).await.unwrap();
    assert_eq!(delivered.attempts, 5);
    assert_eq!(Instant::now() - started, Duration::from_millis(3000));
    assert_eq!(calls.lock().unwrap().len(), 5);
    assert_eq!(hooks.committed, vec![BatchId::new("t", 0, 0, 9).unwrap()]);
}

#[tokio::test(start_paused = true)]
async fn backoff_doubles_up_to_the_cap() {
    let policy = RetryPolicy {
        max_attempts: 8,
        ..RetryPolicy::default()
    };
    let (sink, calls) =
        ScriptedSink::new((0..8).map(|_| Err(SinkError::retryable("down"))).collect());
    let mut driver = Driver::with_policy(sink, policy);
    driver
        .deliver(&batch(0, 1), &mut MemoryHooks::default())
        .await
        .unwrap_err();
    assert_eq!(
        gaps(&calls.lock().unwrap()),
        ms(&[200, 400, 800, 1600, 3200, 5000, 5000])
    );
}

#[tokio::test(start_paused = true)]
async fn retry_after_lengthens_but_never_shortens_the_wait() {
    let (sink, calls) = ScriptedSink::new(vec![
        Err(SinkError::Retryable {
            message: "429".into(),
            retry_after: Some(Duration::from_secs(3)),
        }),
        Err(SinkError::Retryable {
            message: "429".into(),
            retry_after: Some(Duration::from_millis(10)),
        }),
        Err(SinkError::Retryable {
            message: "429".into(),
            retry_after: Some(Duration::from_secs(3600)),
        }),
    ]);
    let mut driver = Driver::new(sink);
    driver
        .deliver(&batch(0, 1), &mut MemoryHooks::default())
        .await
        .unwrap();
    // 3 s asked > 200 ms backoff; 10 ms asked < 400 ms backoff; 1 h asked, capped at 60 s.
    assert_eq!(gaps(&calls.lock().unwrap()), ms(&[3000, 400, 60_000]));
}

#[tokio::test(start_paused = true)]
async fn fatal_stops_at_once() {
    let (sink, calls) = ScriptedSink::new(vec![Err(SinkError::fatal("table missing: set create"))]);
    let mut driver = Driver::new(sink);
    let mut hooks = MemoryHooks::default();
    let err = driver.deliver(&batch(0, 1), &mut hooks).await.unwrap_err();
    assert!(matches!(err, DriverError::Fatal(_)), "{err}");
    assert!(err.to_string().contains("table missing"));
    assert_eq!(calls.lock().unwrap().len(), 1);
    assert!(hooks.committed.is_empty());
}

#[tokio::test(start_paused = true)]
async fn rejected_records_are_dead_lettered_before_the_commit() {
    let rejected = vec![RejectedRecord {
        id: RecordId::new("t", 0, 3),
        reason: "not JSON".into(),
    }];
    let (sink, _) = ScriptedSink::new(vec![Err(SinkError::Rejected {
        records: rejected.clone(),
        written: WriteReport {
            written: 9,
            already_present: 0,
        },
    })]);
    let mut driver = Driver::new(sink);
    let mut hooks = OrderHooks::default();
    let delivered = driver.deliver(&batch(0, 10), &mut hooks).await.unwrap();
    assert_eq!(delivered.attempts, 1, "a rejection is not retried");
    assert_eq!(delivered.dead_lettered, 1);
    assert_eq!(delivered.report.written, 9);
    assert_eq!(hooks.events, vec!["dead-letter t:0:3", "commit t:0:0..=9"]);
}

#[tokio::test(start_paused = true)]
async fn a_failing_dead_letter_hook_blocks_the_commit() {
    let (sink, _) = ScriptedSink::new(vec![Err(SinkError::Rejected {
        records: vec![RejectedRecord {
            id: RecordId::new("t", 0, 0),
            reason: "bad".into(),
        }],
        written: WriteReport::default(),
    })]);
    let mut driver = Driver::new(sink);
    let mut hooks = OrderHooks {
        fail_dead_letter: true,
        ..OrderHooks::default()
    };
    let err = driver.deliver(&batch(0, 1), &mut hooks).await.unwrap_err();
    assert!(matches!(err, DriverError::DeadLetter(_)));
    assert!(!hooks.events.iter().any(|e| e.starts_with("commit")));
}

#[derive(Default)]
struct OrderHooks {
    events: Vec<String>,
    fail_dead_letter: bool,
}

#[async_trait]
impl DriverHooks for OrderHooks {
    async fn commit(&mut self, batch: &BatchId) -> Result<(), String> {
        self.events.push(format!("commit {batch}"));
        Ok(())
    }
    async fn dead_letter(&mut self, records: &[RejectedRecord]) -> Result<(), String> {
        if self.fail_dead_letter {
            return Err("dlq unavailable".into());
        }
        self.events
            .extend(records.iter().map(|r| format!("dead-letter {}", r.id)));
        Ok(())
    }
}
