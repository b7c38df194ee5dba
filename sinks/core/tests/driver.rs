//! The reference driver: backoff schedule on a paused clock (exact without jitter, inside the
//! envelope with it), commit only after success, whole records to the dead-letter hook before
//! the commit, stop after the last failure, reset, and one sink instance shared by drivers.

#![allow(clippy::unwrap_used)] // test helpers may panic

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use pico_sink::driver::{Driver, DriverError, DriverHooks, MemoryHooks, RetryPolicy};
use pico_sink::identity::{BatchId, RecordId};
use pico_sink::{
    Batch, Claim, DeadLetter, Description, Outcome, Record, RejectedRecord, Sink, SinkError,
    WriteReport,
};
use tokio::time::Instant;

/// A sink that answers from a script and records when each `consume` happened.
struct ScriptedSink {
    script: Mutex<VecDeque<Result<Outcome, SinkError>>>,
    calls: Arc<Mutex<Vec<Instant>>>,
}

impl ScriptedSink {
    fn new(script: Vec<Result<Outcome, SinkError>>) -> (Self, Arc<Mutex<Vec<Instant>>>) {
        let calls = Arc::new(Mutex::new(Vec::new()));
        (
            Self {
                script: Mutex::new(script.into()),
                calls: calls.clone(),
            },
            calls,
        )
    }
}

#[async_trait]
impl Sink for ScriptedSink {
    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        self.calls.lock().unwrap().push(Instant::now());
        let next = self.script.lock().unwrap().pop_front();
        next.unwrap_or(Ok(WriteReport::written(batch.len()).into()))
    }
    fn describe(&self) -> Description {
        Description::new("scripted", "test script", Claim::Repeats)
    }
}

fn batch(first: u64, n: u64) -> Batch {
    Batch::new(
        (first..first + n)
            .map(|o| {
                Record::new(RecordId::new("t", 0, o), format!("{{\"o\":{o}}}"))
                    .with_key(format!("k{o}"))
                    .with_header("trace", "abc")
                    .with_timestamp_ms(1_000 + o as i64)
            })
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

fn exact() -> RetryPolicy {
    RetryPolicy::default().with_jitter(false)
}

#[tokio::test(start_paused = true)]
async fn five_failures_follow_the_spec_schedule_then_stop() {
    let (sink, calls) = ScriptedSink::new(
        (0..5)
            .map(|i| Err(SinkError::retryable(format!("boom {i}"))))
            .collect(),
    );
    let mut driver = Driver::with_policy(sink, exact());
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
async fn a_reset_driver_delivers_the_batch_that_stopped_it() {
    let (sink, calls) =
        ScriptedSink::new((0..5).map(|_| Err(SinkError::retryable("down"))).collect());
    let mut driver = Driver::new(sink);
    let mut hooks = MemoryHooks::default();
    driver.deliver(&batch(0, 10), &mut hooks).await.unwrap_err();
    assert!(driver.stopped().is_some());
    driver.reset();
    assert!(driver.stopped().is_none());
    let delivered = driver.deliver(&batch(0, 10), &mut hooks).await.unwrap();
    assert_eq!(delivered.attempts, 1);
    assert_eq!(calls.lock().unwrap().len(), 6);
    assert_eq!(hooks.committed, vec![BatchId::new("t", 0, 0, 9).unwrap()]);
}

#[tokio::test(start_paused = true)]
async fn success_on_the_last_attempt_commits_once_and_lists_the_retried_errors() {
    let mut script: Vec<_> = (0..4)
        .map(|i| Err(SinkError::retryable(format!("down {i}"))))
        .collect();
    script.push(Ok(WriteReport::written(10).into()));
    let (sink, calls) = ScriptedSink::new(script);
    let mut driver = Driver::with_policy(sink, exact());
    let mut hooks = MemoryHooks::default();
    let started = Instant::now();
    let delivered = driver.deliver(&batch(0, 10), &mut hooks).await.unwrap();
    assert_eq!(delivered.attempts, 5);
    assert_eq!(delivered.retried.len(), 4);
    assert_eq!(delivered.retried[3].message(), "down 3");
    assert_eq!(Instant::now() - started, Duration::from_millis(3000));
    assert_eq!(calls.lock().unwrap().len(), 5);
    assert_eq!(hooks.committed, vec![BatchId::new("t", 0, 0, 9).unwrap()]);
}

#[tokio::test(start_paused = true)]
async fn backoff_doubles_up_to_the_cap() {
    let policy = RetryPolicy::attempts(8).with_jitter(false);
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
async fn jittered_waits_stay_inside_the_envelope_and_differ_between_workers() {
    // 40 workers, 8 failures each: every wait within [max(200, d/2), d], d = 200·2^(n-1) ≤ 5 s.
    let mut waits_of_second_retry = Vec::new();
    for _ in 0..40 {
        let (sink, calls) =
            ScriptedSink::new((0..8).map(|_| Err(SinkError::retryable("down"))).collect());
        let mut driver = Driver::with_policy(sink, RetryPolicy::attempts(8));
        driver
            .deliver(&batch(0, 1), &mut MemoryHooks::default())
            .await
            .unwrap_err();
        let gaps = gaps(&calls.lock().unwrap());
        for (i, gap) in gaps.iter().enumerate() {
            let nominal = (200u64 << i).min(5000);
            let low = (nominal / 2).max(200);
            assert!(
                *gap >= Duration::from_millis(low) && *gap <= Duration::from_millis(nominal),
                "wait {} was {gap:?}, outside [{low}, {nominal}] ms",
                i + 1
            );
        }
        waits_of_second_retry.push(gaps[2]);
    }
    waits_of_second_retry.sort();
    waits_of_second_retry.dedup();
    assert!(
        waits_of_second_retry.len() > 10,
        "workers retried in lockstep: {waits_of_second_retry:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn retry_after_lengthens_but_never_shortens_the_wait() {
    let asked = |d| Err(SinkError::retryable("429").with_retry_after(Some(d)));
    let (sink, calls) = ScriptedSink::new(vec![
        asked(Duration::from_secs(3)),
        asked(Duration::from_millis(10)),
        asked(Duration::from_secs(3600)),
    ]);
    let mut driver = Driver::with_policy(sink, exact());
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
async fn rejected_records_are_dead_lettered_whole_before_the_commit() {
    let rejected = vec![RejectedRecord::new(RecordId::new("t", 0, 3), "not JSON")];
    let (sink, _) = ScriptedSink::new(vec![Ok(Outcome::new(
        WriteReport::written(9),
        rejected.clone(),
    ))]);
    let mut driver = Driver::new(sink);
    let mut hooks = OrderHooks::default();
    let sent = batch(0, 10);
    let delivered = driver.deliver(&sent, &mut hooks).await.unwrap();
    assert_eq!(delivered.attempts, 1, "a rejection is not retried");
    assert_eq!(delivered.dead_lettered(), 1);
    assert_eq!(delivered.outcome.written, 9);
    assert_eq!(hooks.events, vec!["dead-letter t:0:3", "commit t:0:0..=9"]);
    let letter = &hooks.letters[0];
    assert_eq!(
        letter.record,
        sent.records()[3],
        "key, value, headers, timestamp"
    );
    assert_eq!(letter.reason, "not JSON");
}

#[tokio::test(start_paused = true)]
async fn a_failing_dead_letter_hook_blocks_the_commit() {
    let (sink, _) = ScriptedSink::new(vec![Ok(Outcome::new(
        WriteReport::default(),
        vec![RejectedRecord::new(RecordId::new("t", 0, 0), "bad")],
    ))]);
    let mut driver = Driver::new(sink);
    let mut hooks = OrderHooks {
        fail_dead_letter: true,
        ..OrderHooks::default()
    };
    let err = driver.deliver(&batch(0, 1), &mut hooks).await.unwrap_err();
    assert!(matches!(err, DriverError::DeadLetter(_)));
    assert!(!hooks.events.iter().any(|e| e.starts_with("commit")));
}

#[tokio::test(start_paused = true)]
async fn one_sink_instance_serves_drivers_of_many_partitions_at_once() {
    let (sink, calls) = ScriptedSink::new(Vec::new());
    let sink = Arc::new(sink);
    let tasks: Vec<_> = (0..16u32)
        .map(|p| {
            let sink = Arc::clone(&sink);
            tokio::spawn(async move {
                let mut driver = Driver::new(sink);
                let mut hooks = MemoryHooks::default();
                let b = Batch::new(vec![Record::new(RecordId::new("t", p, 0), "{}")]).unwrap();
                driver.deliver(&b, &mut hooks).await.unwrap();
                hooks.committed
            })
        })
        .collect();
    let mut committed = Vec::new();
    for t in tasks {
        committed.extend(t.await.unwrap());
    }
    assert_eq!(committed.len(), 16);
    assert_eq!(calls.lock().unwrap().len(), 16);
    assert_eq!(
        Arc::strong_count(&sink),
        1,
        "every driver released the shared sink"
    );
}

#[derive(Default)]
struct OrderHooks {
    events: Vec<String>,
    letters: Vec<DeadLetter>,
    fail_dead_letter: bool,
}

#[async_trait]
impl DriverHooks for OrderHooks {
    async fn commit(&mut self, batch: &BatchId) -> Result<(), String> {
        self.events.push(format!("commit {batch}"));
        Ok(())
    }
    async fn dead_letter(&mut self, letters: &[DeadLetter]) -> Result<(), String> {
        if self.fail_dead_letter {
            return Err("dlq unavailable".into());
        }
        self.events.extend(
            letters
                .iter()
                .map(|l| format!("dead-letter {}", l.record.id)),
        );
        self.letters.extend_from_slice(letters);
        Ok(())
    }
}
