//! What each case's fault did, counted outside the runtime or from its own log: a case whose
//! fault left no trace fails (the kill case has its own tally, [`super::kills::KillTally`]).
//!
//! - panic: the records of the cut batch that the destination held before the process ended
//!   (read while the process waits between its partial write and its panic), the panics the
//!   workers reported and the exits they caused;
//! - broker: the consumer errors the runtime logged while the broker was down, and the records
//!   committed after it came back;
//! - destination: the connections the fault proxy refused, and the records committed after the
//!   destination came back;
//! - group: partitions that moved from one member to another;
//! - flaky: requests and answers cut, and the retries: batches the runtime retried and requests
//!   the sink's own client retried. One answer is cut for certain (`cut_one_answer`): the
//!   random draws alone cut nothing in some short runs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use pico_conformance::fault::{FaultMode, FaultSwitch, Flaky};
use pico_kafka::chaos::CutBatch;
use serde::{Deserialize, Serialize};

use super::Place;
use super::supervisor::Supervisor;

/// Requests that reach the destination before the flaky case makes sure of a cut: past the
/// sink's opening, into the batches.
pub(crate) const REQUESTS_BEFORE_CERTAIN_CUT: u64 = 3;

/// Makes the flaky case's fault certain. A random draw at a few per cent may cut nothing in a
/// short run of a sink that sends one request per batch over one connection (0 cuts seen at the
/// reduced size for the HTTP endpoint). Under `flaky` from the start, once `after` requests
/// reached the destination and no answer was cut yet, the proxy cuts the next answer (the
/// destination processed the request: a lost acknowledgement), then turns flaky again. Gives up
/// waiting after `patience` (the run may have delivered everything by then). Returns the note.
pub(crate) async fn cut_one_answer(
    proxy: &dyn FaultSwitch,
    flaky: Flaky,
    after: u64,
    patience: Duration,
) -> String {
    let deadline = Instant::now() + patience;
    while Instant::now() < deadline {
        let s = proxy.stats();
        if s.requests_sent >= after || s.acks_lost > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if proxy.stats().acks_lost > 0 {
        return "an answer was cut at random before the certain cut was due".to_owned();
    }
    proxy.set(FaultMode::LoseNextAck { trigger: None });
    while proxy.stats().acks_lost == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A request armed meanwhile still has its answer cut; the next ones draw at random again.
    proxy.set(FaultMode::Flaky(flaky));
    let s = proxy.stats();
    if s.acks_lost > 0 {
        format!(
            "one answer cut for certain after {} requests reached the destination",
            s.requests_sent
        )
    } else {
        format!(
            "no answer to cut within {patience:?}: {} requests reached the destination",
            s.requests_sent
        )
    }
}

/// One thing a fault did, counted.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FaultCount {
    /// What was counted, in full.
    pub what: String,
    /// A few words for the summary table.
    pub short: String,
    /// How many.
    pub count: u64,
}

/// What a case's fault did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct FaultTally {
    /// The counts; each must be above 0.
    pub counts: Vec<FaultCount>,
    /// Why the fault did not do what the case needs, beyond a zero count.
    #[serde(default)]
    pub problem: Option<String>,
}

impl FaultTally {
    /// Adds a count.
    pub fn count(mut self, short: &str, what: &str, count: u64) -> Self {
        self.counts.push(FaultCount {
            what: what.into(),
            short: short.into(),
            count,
        });
        self
    }

    /// The tally in words, for the notes.
    pub fn note(&self) -> String {
        let counts: Vec<String> = self
            .counts
            .iter()
            .map(|c| format!("{} {}", c.count, c.what))
            .collect();
        format!("fault: {}", counts.join(", "))
    }

    /// The first count, for the summary table.
    pub fn headline(&self) -> Option<String> {
        self.counts
            .first()
            .map(|c| format!("{} {}", c.count, c.short))
    }

    /// Why the case fails for its fault, if it does: a problem, or a count of 0.
    pub fn failure(&self) -> Option<String> {
        if let Some(p) = &self.problem {
            return Some(format!("the fault did not do what the case needs: {p}"));
        }
        self.counts
            .iter()
            .find(|c| c.count == 0)
            .map(|c| format!("the fault left no trace: 0 {}", c.what))
    }
}

/// Lines of the runtime logs of `processes` slots in `dir` that contain `needle`.
pub(crate) fn log_lines(dir: &Path, processes: usize, needle: &str) -> u64 {
    logs(dir, processes)
        .iter()
        .map(|log| log.lines().filter(|l| l.contains(needle)).count() as u64)
        .sum()
}

/// Panics a partition's worker caught, from every member's log: its `delivery stopped` line
/// names the panic (the process's own `stopped with an error` line repeats it, and is not
/// counted).
pub(crate) fn worker_panics(dir: &Path, processes: usize) -> u64 {
    logs(dir, processes)
        .iter()
        .map(|log| {
            log.lines()
                .filter(|l| l.contains("delivery stopped") && l.contains("panicked delivering"))
                .count() as u64
        })
        .sum()
}

/// The runtime log of each of `processes` slots in `dir` (empty where there is none).
pub(crate) fn logs(dir: &Path, processes: usize) -> Vec<String> {
    (0..processes)
        .map(|slot| {
            std::fs::read_to_string(dir.join(format!("runtime-{slot}.log"))).unwrap_or_default()
        })
        .collect()
}

/// The retries a flaky path caused, in words and in all: batches the runtime's driver retried
/// after a failed `consume`, and requests the sink's own client retried before `consume`
/// returned (object_store logs each; the Delta sink never fails a batch for one cut).
pub(crate) fn retries(dir: &Path, processes: usize) -> (String, u64) {
    let batches = retried_batches(dir, processes);
    let requests = log_lines(dir, processes, "object_store::client::retry");
    (
        format!(
            "retries ({batches} batches the runtime retried after a failed consume, {requests} \
             requests the sink's client retried)"
        ),
        batches + requests,
    )
}

/// Batches the runtime's driver retried after a failed `consume` (distinct batch ids of its
/// `consume failed` warnings).
pub(crate) fn retried_batches(dir: &Path, processes: usize) -> u64 {
    let mut batches = BTreeSet::new();
    for log in logs(dir, processes) {
        for line in log.lines().filter(|l| l.contains("consume failed")) {
            if let Some(id) = field(line, "batch=") {
                batches.insert(id.to_owned());
            }
        }
    }
    batches.len() as u64
}

/// The value of `name` (`batch=`) in a log line: up to the next space.
pub(crate) fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let rest = line.split_once(name)?.1;
    rest.split_whitespace().next()
}

/// The `partition revoked` lines of one member's log while it was running, not once it was
/// ending: after `shutdown requested` (a drain) or `delivery stopped` (an exit with an error,
/// whose end is measured as an interruption of its own), until it starts again.
pub(crate) fn live_revoke_lines(log: &str) -> Vec<&str> {
    let mut ending = false;
    let mut lines = Vec::new();
    for line in log.lines() {
        if line.contains("consuming group=") {
            ending = false;
        } else if line.contains("shutdown requested") || line.contains("delivery stopped") {
            ending = true;
        } else if line.contains("partition revoked") && !ending {
            lines.push(line);
        }
    }
    lines
}

/// Partitions revoked from a running member ([`live_revoke_lines`]): the rebalances the live
/// members went through, from every member's log.
pub(crate) fn live_revokes(dir: &Path, processes: usize) -> u64 {
    logs(dir, processes)
        .iter()
        .map(|log| live_revoke_lines(log).len() as u64)
        .sum()
}

/// Assignments of a partition to a member other than the one that held it last, from the
/// timestamped `partition assigned` lines of every member's log.
pub(crate) fn partition_moves(dir: &Path, processes: usize) -> u64 {
    let mut assigned: Vec<(String, usize, String)> = Vec::new();
    for (slot, log) in logs(dir, processes).iter().enumerate() {
        for line in log.lines().filter(|l| l.contains("partition assigned")) {
            let stamp = line
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned();
            let partition = field(line, "partition=").unwrap_or_default().to_owned();
            assigned.push((stamp, slot, partition));
        }
    }
    // RFC 3339 timestamps of one clock sort as text.
    assigned.sort();
    let mut last: BTreeMap<String, usize> = BTreeMap::new();
    let mut moves = 0;
    for (_, slot, partition) in assigned {
        if last
            .insert(partition, slot)
            .is_some_and(|before| before != slot)
        {
            moves += 1;
        }
    }
    moves
}

/// Sum of committed offsets advanced from `before` to `after`: records committed in between.
pub(crate) fn committed_between(before: &BTreeMap<u32, u64>, after: &BTreeMap<u32, u64>) -> u64 {
    after
        .iter()
        .map(|(p, a)| a.saturating_sub(before.get(p).copied().unwrap_or(0)))
        .sum()
}

/// Where the panic case looks.
pub(crate) struct PanicWatch<'a> {
    /// The case's topic, group and destination.
    pub place: &'a Place<'a>,
    /// The marker file the runtime writes once it has written part of a batch.
    pub marker: &'a Path,
}

/// How long the runtime waits between its partial write and its panic (`panic_hold_ms`):
/// the window in which the destination is read.
pub(crate) const PANIC_HOLD: Duration = Duration::from_secs(3);

/// Waits for the runtime's marker, then, before the process ends, reads what the destination
/// holds of the cut batch and the group's committed offset of its partition.
pub(crate) async fn cut_batch_seen(watch: &PanicWatch<'_>, supervisor: &Supervisor) -> FaultTally {
    let deadline = Instant::now() + Duration::from_secs(60);
    let cut = loop {
        let text = std::fs::read_to_string(watch.marker).unwrap_or_default();
        if let Some(cut) = CutBatch::from_marker(&text) {
            break cut;
        }
        if Instant::now() > deadline {
            return FaultTally {
                problem: Some("the runtime wrote no panic marker within 60 s".into()),
                ..FaultTally::default()
            };
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let mut tally = FaultTally::default();
    let (held, committed) = tokio::join!(watch.place.held(), watch.place.committed());
    let ended_meanwhile = supervisor.stats().exits.values().sum::<u32>() > 0;
    let present: BTreeSet<u64> = match held {
        Ok(held) => held
            .rows
            .iter()
            .filter(|r| {
                r.partition == cut.partition && (cut.first..=cut.last_written).contains(&r.offset)
            })
            .map(|r| r.offset)
            .collect(),
        Err(e) => {
            tally.problem = Some(format!("reading the destination before the panic: {e}"));
            BTreeSet::new()
        }
    };
    // Records the sink refused are not in the destination: they go to the dead-letter topic
    // once the batch is replayed.
    let written = (cut.last_written - cut.first + 1).saturating_sub(cut.refused);
    let committed = committed
        .ok()
        .and_then(|c| c.get(&cut.partition).copied())
        .unwrap_or(0);
    tally.problem = tally.problem.or_else(|| {
        if ended_meanwhile {
            Some(format!(
                "the process ended before the destination was read: raise PANIC_HOLD ({} s)",
                PANIC_HOLD.as_secs()
            ))
        } else if (present.len() as u64) < written {
            Some(format!(
                "{} of the {written} records written before the panic (p{} {}..={}) were in the \
                 destination",
                present.len(),
                cut.partition,
                cut.first,
                cut.last_written
            ))
        } else if committed > cut.first {
            Some(format!(
                "the cut batch was committed before the panic (p{} committed {committed}, batch \
                 from {})",
                cut.partition, cut.first
            ))
        } else {
            None
        }
    });
    tally.count(
        "cut-batch rows before the panic",
        &format!(
            "of the {written} records of batch p{} {}..={} written before the panic in the \
             destination, with p{} committed at {committed}, before the process ended",
            cut.partition, cut.first, cut.last, cut.partition
        ),
        present.len() as u64,
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn dir_with_logs(logs: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (slot, log) in logs.iter().enumerate() {
            std::fs::write(dir.path().join(format!("runtime-{slot}.log")), log).unwrap();
        }
        dir
    }

    /// One panic is one count, though the process's exit line names it again.
    #[test]
    fn a_worker_panic_counts_once() {
        let log = "2026-12-05T00:00:01Z ERROR pico_kafka::runtime: delivery stopped batch=t:3:0..=51 \
                   error=the worker of t:3 panicked delivering t:3:0..=51: chaos\n\
                   2026-12-05T00:00:01Z ERROR pico_kafka: stopped with an error other=GaveUp(\"the \
                   worker of t:3 panicked delivering t:3:0..=51: chaos\")\n\
                   2026-12-05T00:00:02Z ERROR pico_kafka::runtime: delivery stopped batch=t:1:0..=9 \
                   error=offset 9 of t:1 not committed\n";
        let dir = dir_with_logs(&[log]);
        assert_eq!(worker_panics(dir.path(), 1), 1);
    }

    #[test]
    fn a_partition_counts_as_moved_only_when_another_member_takes_it() {
        let a = "2026-12-03T10:00:01Z INFO partition assigned: x topic=t partition=0\n\
                 2026-12-03T10:00:01Z INFO partition assigned: x topic=t partition=1\n\
                 2026-12-03T10:00:09Z INFO partition assigned: x topic=t partition=0\n";
        let b = "2026-12-03T10:00:05Z INFO partition assigned: x topic=t partition=0\n\
                 2026-12-03T10:00:05Z INFO partition assigned: x topic=t partition=2\n";
        let dir = dir_with_logs(&[a, b]);
        // p0: a, then b, then a again: two moves; p1 and p2 assigned once.
        assert_eq!(partition_moves(dir.path(), 2), 2);
        let still = dir_with_logs(&[a]);
        assert_eq!(partition_moves(still.path(), 1), 0);
    }

    #[test]
    fn a_revoke_counts_as_a_rebalance_unless_the_member_was_draining() {
        let a = "I consuming group=g\n\
                 I partition revoked: x topic=t read_not_committed=3 partition=0\n\
                 I shutdown requested: draining\n\
                 I partition revoked: x topic=t read_not_committed=0 partition=1\n\
                 I consuming group=g\n\
                 I partition revoked: x topic=t read_not_committed=0 partition=1\n";
        let b = "I consuming group=g\nI shutdown requested: draining\n\
                 I partition revoked: x topic=t read_not_committed=0 partition=2\n";
        let c = "I consuming group=g\nE delivery stopped batch=t:0:0..=9\n\
                 I partition revoked: x topic=t read_not_committed=40 partition=0\n";
        assert_eq!(live_revokes(dir_with_logs(&[a, b, c]).path(), 3), 2);
    }

    #[test]
    fn retried_batches_are_counted_once_each() {
        let log = "W pico_sink::driver: consume failed batch=t:0:0..=9 attempt=1 error=x\n\
                   W pico_sink::driver: consume failed batch=t:0:0..=9 attempt=2 error=x\n\
                   W pico_sink::driver: consume failed batch=t:1:0..=4 attempt=1 error=x\n\
                   I pico_kafka::runtime: consuming group=g\n";
        let dir = dir_with_logs(&[log]);
        assert_eq!(retried_batches(dir.path(), 1), 2);
        assert_eq!(log_lines(dir.path(), 1, "consuming group="), 1);
    }

    #[test]
    fn a_fault_without_trace_fails_and_says_which() {
        let tally = FaultTally::default()
            .count("refused", "connections refused", 12)
            .count("committed after", "records committed after", 0);
        assert_eq!(tally.headline().unwrap(), "12 refused");
        assert!(
            tally
                .failure()
                .unwrap()
                .contains("0 records committed after")
        );
        let fine = FaultTally::default().count("refused", "connections refused", 1);
        assert_eq!(fine.failure(), None);
    }

    #[test]
    fn committed_between_adds_what_each_partition_advanced() {
        let before = BTreeMap::from([(0, 10), (1, 5)]);
        let after = BTreeMap::from([(0, 30), (1, 5), (2, 7)]);
        assert_eq!(committed_between(&before, &after), 27);
    }
}
