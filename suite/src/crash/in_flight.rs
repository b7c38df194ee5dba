//! What was in flight at each interruption of a case: the records the destination held at or
//! beyond the group's committed offset of their partition. A successor starts every partition
//! at its committed offset, so an interruption can make a sink that cannot deduplicate a replay
//! store again at most these records; their sum over the case's interruptions is the duplicate
//! bound the case is judged by, measured rather than assumed.
//!
//! When it is measured: a process that ended (killed, aborted, exited with an error) while
//! still down, before the supervisor starts its successor (for a sink that cannot deduplicate,
//! once two readings in a row agree: a request it sent whole may be stored after its death);
//! every member of a stall restart once all are stopped, the same way; a broker outage and a group member's death, where the processes that
//! live on go on writing until the group forms again, as the most found in samples taken until
//! the group has had time to form again; and each revoke of a partition from a live member, as
//! what that member had read and not committed, from its own log line at the revoke.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::Place;
use super::destinations::HeldRow;

/// How long one measurement may take before it counts as not measured.
const MEASURE_TIMEOUT: Duration = Duration::from_secs(15);
/// Pause between the samples of a window.
const SAMPLE_EVERY: Duration = Duration::from_millis(500);
/// Pause between the readings of a measurement that waits for the destination to settle.
const SETTLE_EVERY: Duration = Duration::from_millis(250);

/// One interruption and what was in flight at it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Interruption {
    /// What it was: how a process ended (`killed`, `abort`, `exit 2`), `broker outage`,
    /// `rebalance` or `stall restart`.
    pub what: String,
    /// Records at or beyond their partition's committed offset; none when the destination or
    /// the group could not be read.
    pub in_flight: Option<u64>,
}

/// The interruptions of a case, in the order they happened.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct InFlight {
    /// Each interruption.
    pub at: Vec<Interruption>,
}

/// Measures what `place` holds beyond its committed offsets, for `what`. With `settle` (a sink
/// whose bound is what was in flight), readings every [`SETTLE_EVERY`] until two in a row agree,
/// the most of them kept: a request the ended process sent whole may still be stored after its
/// death, and a single reading would leave it out of the bound, its replay then counting as a
/// duplicate above it. Without (a keyed sink, bound 0, the count only shown), one reading: a
/// large destination's read-back takes seconds, and the kill case's pace counts them.
pub(crate) async fn at_once(place: &Place<'_>, what: &str, settle: bool) -> Interruption {
    let in_flight = if settle {
        settled(|| once(place), SETTLE_EVERY, MEASURE_TIMEOUT).await
    } else {
        once(place).await
    };
    Interruption {
        what: what.to_owned(),
        in_flight,
    }
}

/// Takes readings `every` until two in a row agree or `within` has passed; the most read, or
/// `None` when no reading succeeded.
async fn settled<F, Fut>(mut read: F, every: Duration, within: Duration) -> Option<u64>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<u64>>,
{
    let until = Instant::now() + within;
    let (mut most, mut previous): (Option<u64>, Option<u64>) = (None, None);
    loop {
        let now = read().await;
        if let Some(n) = now {
            most = Some(most.map_or(n, |m| m.max(n)));
        }
        if (now.is_some() && now == previous) || Instant::now() >= until {
            return most;
        }
        previous = now;
        tokio::time::sleep(every).await;
    }
}

/// Measures for `window`, every [`SAMPLE_EVERY`], and keeps the most found, for `what`.
pub(crate) async fn most_within(place: &Place<'_>, what: &str, window: Duration) -> Interruption {
    let until = Instant::now() + window;
    let mut most: Option<u64> = None;
    loop {
        if let Some(n) = once(place).await {
            most = Some(most.map_or(n, |m| m.max(n)));
        }
        if Instant::now() >= until {
            break;
        }
        tokio::time::sleep(SAMPLE_EVERY).await;
    }
    Interruption {
        what: what.to_owned(),
        in_flight: most,
    }
}

/// Each revoke of a partition from a live member that had read records it had not committed,
/// from the members' logs (`read_not_committed` of pico-kafka's `partition revoked` line):
/// whatever of them the member wrote, the partition's next owner may write again. Measured by
/// the runtime at the revoke itself, which a sample of the destination would miss (a revoke
/// aborts a batch between its write and its commit, a window of milliseconds).
pub(crate) fn at_revokes(dir: &std::path::Path, processes: usize) -> Vec<Interruption> {
    super::faults::logs(dir, processes)
        .iter()
        .flat_map(|log| super::faults::live_revoke_lines(log))
        .filter_map(|line| {
            let n: u64 = super::faults::field(line, "read_not_committed=")?
                .parse()
                .ok()?;
            let partition = super::faults::field(line, "partition=").unwrap_or("?");
            (n > 0).then(|| Interruption {
                what: format!("revoke of p{partition}"),
                in_flight: Some(n),
            })
        })
        .collect()
}

impl InFlight {
    /// The duplicate bound: the records in flight summed over the interruptions, one that was
    /// not measured counting `unmeasured`.
    pub fn bound(&self, unmeasured: u64) -> u64 {
        self.at
            .iter()
            .map(|i| i.in_flight.unwrap_or(unmeasured))
            .sum()
    }

    /// Interruptions that could not be measured.
    pub fn unmeasured(&self) -> usize {
        self.at.iter().filter(|i| i.in_flight.is_none()).count()
    }

    /// The report's note: each interruption's count, in order, and the sum.
    pub fn note(&self) -> String {
        if self.at.is_empty() {
            return "no interruption, nothing in flight".into();
        }
        let each: Vec<String> = self
            .at
            .iter()
            .map(|i| match i.in_flight {
                Some(n) => format!("{} {n}", i.what),
                None => format!("{} not measured", i.what),
            })
            .collect();
        let mut note = format!(
            "in flight (records held at or beyond the committed offset) at the {} \
             interruptions: {}; {} in all",
            self.at.len(),
            each.join(", "),
            self.at.iter().filter_map(|i| i.in_flight).sum::<u64>()
        );
        let unmeasured = self.unmeasured();
        if unmeasured > 0 {
            note.push_str(&format!(
                "; {unmeasured} not measured, each bounded by one batch per partition"
            ));
        }
        note
    }
}

/// One measurement, `None` when it failed or timed out.
async fn once(place: &Place<'_>) -> Option<u64> {
    let read = async {
        let held = place.held().await?;
        let committed = place.committed().await?;
        Ok::<_, String>(beyond(&held.rows, &committed))
    };
    match tokio::time::timeout(MEASURE_TIMEOUT, read).await {
        Ok(Ok(n)) => Some(n),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "measuring what was in flight");
            None
        }
        Err(_) => {
            tracing::warn!("measuring what was in flight timed out");
            None
        }
    }
}

/// Distinct records in `rows` at or beyond their partition's offset in `committed` (0 for a
/// partition with none).
pub(crate) fn beyond(rows: &[HeldRow], committed: &BTreeMap<u32, u64>) -> u64 {
    rows.iter()
        .filter(|r| r.offset >= committed.get(&r.partition).copied().unwrap_or(0))
        .map(|r| (r.partition, r.offset))
        .collect::<BTreeSet<_>>()
        .len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revoke_counts_what_the_live_member_read_and_had_not_committed() {
        let dir = tempfile::tempdir().expect("a temp dir");
        std::fs::write(
            dir.path().join("runtime-1.log"),
            "2026-12-04T18:46:38Z INFO pico_kafka::runtime: partition revoked: fetching stopped, \
             nothing committed past what was confirmed topic=t read_not_committed=91 partition=3\n\
             2026-12-04T18:46:51Z INFO pico_kafka::runtime: partition revoked: fetching stopped, \
             nothing committed past what was confirmed topic=t read_not_committed=0 partition=3\n\
             2026-12-04T18:46:52Z INFO pico_kafka::runtime: consuming group=g\n\
             2026-12-04T18:46:53Z ERROR pico_kafka::runtime: delivery stopped batch=t:3:0..=9\n\
             2026-12-04T18:46:53Z INFO pico_kafka::runtime: partition revoked: fetching stopped, \
             nothing committed past what was confirmed topic=t read_not_committed=800 partition=3\n",
        )
        .expect("a log");
        assert_eq!(
            at_revokes(dir.path(), 3),
            vec![Interruption {
                what: "revoke of p3".into(),
                in_flight: Some(91)
            }],
            "neither a revoke with nothing read and not committed nor one of a process ending with \
             an error (its end is measured by itself) is an interruption"
        );
    }

    fn row(partition: u32, offset: u64) -> HeldRow {
        HeldRow {
            partition,
            offset,
            payload: 0,
        }
    }

    #[test]
    fn in_flight_counts_each_record_at_or_beyond_its_commit_once() {
        let rows = [
            row(0, 4),
            row(0, 5),
            row(0, 5),
            row(0, 6),
            row(1, 0),
            row(2, 9),
        ];
        let committed = BTreeMap::from([(0, 5), (2, 10)]);
        // p0: 5 and 6 (5 twice counts once); p1: nothing committed, 0; p2: all committed.
        assert_eq!(beyond(&rows, &committed), 3);
        assert_eq!(beyond(&[], &committed), 0);
    }

    #[test]
    fn the_bound_sums_what_was_in_flight_and_names_what_was_not_measured() {
        let flight = InFlight {
            at: vec![
                Interruption {
                    what: "killed".into(),
                    in_flight: Some(120),
                },
                Interruption {
                    what: "exit 2".into(),
                    in_flight: None,
                },
                Interruption {
                    what: "killed".into(),
                    in_flight: Some(0),
                },
            ],
        };
        assert_eq!(flight.bound(800), 920);
        assert_eq!(flight.unmeasured(), 1);
        let note = flight.note();
        assert!(
            note.contains("3 interruptions: killed 120, exit 2 not measured, killed 0; 120 in all"),
            "{note}"
        );
        assert!(note.contains("1 not measured"), "{note}");
        assert_eq!(InFlight::default().bound(800), 0);
    }

    #[tokio::test]
    async fn a_settled_measurement_waits_for_two_agreeing_readings_and_keeps_the_most() {
        let script = |values: Vec<Option<u64>>| {
            let values = std::sync::Mutex::new(values.into_iter());
            move || {
                let next = values
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .next()
                    .flatten();
                async move { next }
            }
        };
        let every = Duration::from_millis(1);
        let within = Duration::from_secs(10);
        // A write stored after the death shows in the second reading: the first would miss it.
        let late = settled(
            script(vec![Some(3), Some(5), Some(5), Some(9)]),
            every,
            within,
        );
        assert_eq!(late.await, Some(5));
        // A failed reading never counts as agreeing.
        let failed = settled(script(vec![None, None, Some(2), Some(2)]), every, within);
        assert_eq!(failed.await, Some(2));
        let never = settled(script(vec![]), every, Duration::from_millis(20));
        assert_eq!(never.await, None);
    }
}
