//! Deliberately broken runtimes and sinks, the crash suite's controls: each breaks the
//! at-least-once contract in one way a real runtime has, and the suite must catch it (count the
//! records it loses). Built only with the `mutants` feature, which the crash suite's build
//! turns on and no release build does; selected by `[chaos] mutant = "…"` in the pipeline file.
//!
//! * [`Mutant::CommitAtPoll`]: a batch's offset is committed when the batch is cut from what
//!   was polled, before the sink saw it (Apache Iggy's connector runtime commits at poll).
//! * [`Mutant::CommitOtherPartitions`]: when one partition commits, every other partition is
//!   committed at its read position, past the batches its own worker still has in flight.
//! * [`Mutant::AckBeforeDurable`]: the sink confirms a batch at once and writes it later
//!   ([`AckBeforeDurable`]), so the runtime commits what the destination does not hold yet.
//! * [`Mutant::ReplaysAsWritten`]: the sink reports the records the destination already held
//!   as written ([`ReplaysAsWritten`]) while it says it tells them apart: nothing is lost, but
//!   `pico_kafka_records_already_present_total` stays at 0 through every replay, and an
//!   operator reads replays as new writes.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use pico_sink::{Batch, Description, Outcome, Sink, SinkError, WriteReport};
use serde::Deserialize;

use crate::tracker::{Progress, Tp};

/// One way to break the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mutant {
    /// Commit each batch's end as soon as the batch is cut, before the sink wrote it.
    CommitAtPoll,
    /// On each commit, commit every other partition at its read position.
    CommitOtherPartitions,
    /// The sink confirms before its write is durable ([`AckBeforeDurable`]).
    AckBeforeDurable,
    /// The sink reports replays as written ([`ReplaysAsWritten`]).
    ReplaysAsWritten,
}

impl Mutant {
    /// Offsets to commit once the batch `first..=last` of `tp` was handed to its worker.
    pub fn on_handed(self, tp: &Tp, last: u64) -> Vec<(Tp, u64)> {
        match self {
            Mutant::CommitAtPoll => vec![(tp.clone(), last.saturating_add(1))],
            Mutant::CommitOtherPartitions | Mutant::AckBeforeDurable | Mutant::ReplaysAsWritten => {
                Vec::new()
            }
        }
    }

    /// Offsets to commit once `tp` committed its own: with [`Mutant::CommitOtherPartitions`],
    /// every other partition's read position where it is past that partition's last commit.
    pub fn on_committed(self, tp: &Tp, progress: &HashMap<Tp, Progress>) -> Vec<(Tp, u64)> {
        if self != Mutant::CommitOtherPartitions {
            return Vec::new();
        }
        progress
            .iter()
            .filter(|(other, _)| *other != tp)
            .filter_map(|(other, p)| {
                let read = p.read_position()?;
                (p.cursor() < Some(read)).then(|| (other.clone(), read))
            })
            .collect()
    }
}

/// How long [`AckBeforeDurable`] waits before it writes a batch it already confirmed: longer
/// than the crash suite's hold before a commit, so a kill finds committed batches unwritten.
pub const ACK_BEFORE_DURABLE_DELAY: Duration = Duration::from_secs(3);

/// A sink that confirms every batch at once and writes it through the inner sink
/// [`ACK_BEFORE_DURABLE_DELAY`] later, in a task of its own; a write that fails then is only
/// logged. A process killed meanwhile loses batches whose offsets were committed.
pub struct AckBeforeDurable {
    inner: Arc<dyn Sink>,
}

impl AckBeforeDurable {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Sink>) -> Self {
        Self { inner }
    }
}

#[async_trait]
impl Sink for AckBeforeDurable {
    async fn open(&self) -> Result<(), SinkError> {
        self.inner.open().await
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let inner = self.inner.clone();
        let later = batch.clone();
        tokio::spawn(async move {
            tokio::time::sleep(ACK_BEFORE_DURABLE_DELAY).await;
            if let Err(e) = inner.consume(&later).await {
                tracing::warn!(batch = %later.id(), error = %e, "mutant: a batch already confirmed failed to write");
            }
        });
        Ok(WriteReport::written(batch.len()).into())
    }

    async fn close(&self) -> Result<(), SinkError> {
        self.inner.close().await
    }

    fn describe(&self) -> Description {
        self.inner.describe()
    }

    fn commit_policy(&self) -> Option<pico_sink::CommitPolicy> {
        self.inner.commit_policy()
    }
}

/// A sink whose outcomes count the records the destination already held as written.
pub struct ReplaysAsWritten {
    inner: Arc<dyn Sink>,
}

impl ReplaysAsWritten {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Sink>) -> Self {
        Self { inner }
    }
}

#[async_trait]
impl Sink for ReplaysAsWritten {
    async fn open(&self) -> Result<(), SinkError> {
        self.inner.open().await
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let mut outcome = self.inner.consume(batch).await?;
        outcome.written += std::mem::take(&mut outcome.already_present);
        Ok(outcome)
    }

    async fn close(&self) -> Result<(), SinkError> {
        self.inner.close().await
    }

    fn describe(&self) -> Description {
        self.inner.describe()
    }

    fn commit_policy(&self) -> Option<pico_sink::CommitPolicy> {
        self.inner.commit_policy()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn tp(p: i32) -> Tp {
        ("t".to_owned(), p)
    }

    #[test]
    fn mutant_names_are_those_of_the_pipeline_file() {
        #[derive(Deserialize)]
        struct Chaos {
            mutant: Mutant,
        }
        for (name, mutant) in [
            ("commit-at-poll", Mutant::CommitAtPoll),
            ("commit-other-partitions", Mutant::CommitOtherPartitions),
            ("ack-before-durable", Mutant::AckBeforeDurable),
            ("replays-as-written", Mutant::ReplaysAsWritten),
        ] {
            let parsed: Chaos = toml::from_str(&format!("mutant = \"{name}\"")).unwrap();
            assert_eq!(parsed.mutant, mutant);
        }
    }

    #[tokio::test]
    async fn ack_before_durable_confirms_a_batch_the_destination_does_not_hold_yet() {
        use pico_sink::Record;
        use pico_sink::identity::{RecordId, Scope};
        use pico_sink_stdout::StdoutSink;

        let stdout = Arc::new(StdoutSink::to_writer(Vec::new(), Scope::default()));
        let lines =
            |s: &StdoutSink<Vec<u8>>| s.with_writer(|w| w.split(|b| *b == b'\n').count() - 1);
        let sink = AckBeforeDurable::new(stdout.clone());
        let batch = Batch::new(
            (0..4)
                .map(|o| Record::new(RecordId::new("t", 0, o), format!("v{o}")))
                .collect(),
        )
        .unwrap();
        let outcome = sink.consume(&batch).await.unwrap();
        assert_eq!(outcome.written, 4, "confirmed as written");
        assert_eq!(lines(&stdout), 0, "but nothing is in the destination yet");
        tokio::time::sleep(ACK_BEFORE_DURABLE_DELAY + Duration::from_millis(500)).await;
        assert_eq!(lines(&stdout), 4, "written later, in a task of its own");
    }

    #[test]
    fn commit_at_poll_commits_a_batch_before_its_sink_saw_it() {
        assert_eq!(
            Mutant::CommitAtPoll.on_handed(&tp(1), 41),
            vec![(tp(1), 42)]
        );
        assert!(
            Mutant::CommitOtherPartitions
                .on_handed(&tp(1), 41)
                .is_empty()
        );
        assert!(Mutant::AckBeforeDurable.on_handed(&tp(1), 41).is_empty());
    }

    #[test]
    fn commit_other_partitions_commits_past_their_batches_in_flight() {
        let mut progress = HashMap::new();
        let mut own = Progress::default();
        own.read(0);
        progress.insert(tp(0), own);
        // Partition 1: 0..=9 read, 0..=4 in its worker, 5..=9 buffered, nothing committed.
        let mut other = Progress::default();
        for o in 0..10 {
            other.read(o);
        }
        other.handed(0, 4, Some(5));
        progress.insert(tp(1), other);
        // Partition 2: everything committed already.
        let mut done = Progress::default();
        done.read(3);
        done.committed(4);
        progress.insert(tp(2), done);
        assert_eq!(
            Mutant::CommitOtherPartitions.on_committed(&tp(0), &progress),
            vec![(tp(1), 10)]
        );
        assert!(
            Mutant::CommitAtPoll
                .on_committed(&tp(0), &progress)
                .is_empty()
        );
    }
}
