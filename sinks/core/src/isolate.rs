//! [`Isolator`]: finding the records a destination refuses by splitting the batch.
//!
//! Many destinations refuse a whole request for one bad record (an HTTP 400 or 413, a SQL data
//! error rolling back a transaction, a line-protocol parse error). The isolator plans the
//! requests: the whole range first; a refused range is split in halves until single records are
//! isolated. Those are reported (by index) with the destination's reason, and everything else is
//! written. Each range must be written idempotently (the same range always gives the same
//! request), so a retry of the batch repeats the same plan.
//!
//! Halving costs about two requests per bad record per halving step (16 for one bad record in
//! 200), and a transient failure on any of them restarts the whole plan. A sink that can tell
//! which records look bad, once the destination refused a range, names them
//! ([`Isolator::suspect`]): a refused range holding suspects is split around them instead —
//! each suspect alone, the runs between them whole — so one bad record costs three more
//! requests. The destination still decides: a suspect it takes is written, and a run it
//! refuses is halved as before.

use pico_identity::RecordId;

use crate::error::RejectedRecord;
use crate::sink::WriteReport;

/// How writing one range went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// The range was written.
    Written(WriteReport),
    /// The destination refused the range because of its data; the reason.
    Refused(String),
}

/// Plans the writes of `len` records; see the module docs.
///
/// ```
/// use pico_sink::WriteReport;
/// use pico_sink::kit::{Attempt, Isolator};
/// let mut plan = Isolator::new(4);
/// while let Some((start, end)) = plan.next_range() {
///     let attempt = if (start..end).contains(&2) {
///         Attempt::Refused("bad".into())
///     } else {
///         Attempt::Written(WriteReport { written: (end - start) as u64, already_present: 0 })
///     };
///     plan.record(start, end, attempt);
/// }
/// let (report, refused) = plan.finish();
/// assert_eq!((report.written, refused), (3, vec![(2, "bad".to_owned())]));
/// ```
#[derive(Debug)]
pub struct Isolator {
    pending: Vec<(usize, usize)>,
    total: WriteReport,
    refused: Vec<(usize, String)>,
    /// Records the sink suspects, in index order.
    suspects: Vec<usize>,
}

impl Isolator {
    /// A plan for records `0..len`.
    pub fn new(len: usize) -> Self {
        Self {
            pending: if len == 0 { Vec::new() } else { vec![(0, len)] },
            total: WriteReport::default(),
            refused: Vec::new(),
            suspects: Vec::new(),
        }
    }

    /// Names records the sink expects the destination to refuse: a refused range holding any
    /// of them is split around them rather than halved (see the module docs).
    pub fn suspect(&mut self, indices: impl IntoIterator<Item = usize>) {
        self.suspects.extend(indices);
        self.suspects.sort_unstable();
        self.suspects.dedup();
    }

    /// `start..end` split around its suspects (each alone, the runs between them whole), if
    /// it holds any.
    fn around_suspects(&self, start: usize, end: usize) -> Option<Vec<(usize, usize)>> {
        let inside: Vec<usize> = self
            .suspects
            .iter()
            .copied()
            .filter(|i| (start..end).contains(i))
            .collect();
        if inside.is_empty() {
            return None;
        }
        let mut pieces = Vec::new();
        let mut from = start;
        for i in inside {
            if from < i {
                pieces.push((from, i));
            }
            pieces.push((i, i + 1));
            from = i + 1;
        }
        if from < end {
            pieces.push((from, end));
        }
        Some(pieces)
    }

    /// The next range to write as one request.
    pub fn next_range(&mut self) -> Option<(usize, usize)> {
        self.pending.pop()
    }

    /// Records how writing `start..end` went.
    pub fn record(&mut self, start: usize, end: usize, attempt: Attempt) {
        match attempt {
            Attempt::Written(r) => {
                self.total.written += r.written;
                self.total.already_present += r.already_present;
            }
            Attempt::Refused(reason) if end - start > 1 => {
                tracing::debug!(reason, start, end, "range refused, splitting");
                let pieces = self.around_suspects(start, end).unwrap_or_else(|| {
                    let mid = start + (end - start) / 2;
                    vec![(start, mid), (mid, end)]
                });
                // Written in index order: the last piece is pushed first.
                self.pending.extend(pieces.into_iter().rev());
            }
            Attempt::Refused(reason) => self.refused.push((start, reason)),
        }
    }

    /// What was written, and the refused records (index, reason) in index order.
    pub fn finish(mut self) -> (WriteReport, Vec<(usize, String)>) {
        self.refused.sort_by_key(|(i, _)| *i);
        (self.total, self.refused)
    }

    /// What was written, and the refused records as rejections (`id_of` names record `i`).
    pub fn finish_rejecting(
        self,
        id_of: impl Fn(usize) -> RecordId,
    ) -> (WriteReport, Vec<RejectedRecord>) {
        let (report, refused) = self.finish();
        let rejected = refused
            .into_iter()
            .map(|(i, reason)| RejectedRecord::new(id_of(i), reason))
            .collect();
        (report, rejected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_records_are_isolated_in_few_requests() {
        let bad = [3usize, 4, 9];
        let mut plan = Isolator::new(10);
        let mut requests = 0;
        while let Some((s, e)) = plan.next_range() {
            requests += 1;
            let attempt = if (s..e).any(|i| bad.contains(&i)) {
                Attempt::Refused(format!("bad record in {s}..{e}"))
            } else {
                Attempt::Written(WriteReport {
                    written: (e - s) as u64,
                    already_present: 0,
                })
            };
            plan.record(s, e, attempt);
        }
        let (report, refused) = plan.finish();
        assert_eq!(report.written, 7);
        assert_eq!(
            refused.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
            vec![3, 4, 9]
        );
        assert!(requests < 20, "{requests} requests");
    }

    /// Runs a plan against a destination refusing `bad`; the requests it took and the result.
    fn run(plan: &mut Isolator, len: usize, bad: &[usize]) -> (usize, WriteReport) {
        let mut requests = 0;
        let mut total = WriteReport::default();
        while let Some((s, e)) = plan.next_range() {
            requests += 1;
            let attempt = if (s..e).any(|i| bad.contains(&i)) {
                Attempt::Refused("bad".into())
            } else {
                total.written += (e - s) as u64;
                Attempt::Written(WriteReport {
                    written: (e - s) as u64,
                    already_present: 0,
                })
            };
            plan.record(s, e, attempt);
        }
        assert!(requests <= 2 * len, "{requests} requests for {len} records");
        (requests, total)
    }

    #[test]
    fn suspects_are_split_out_in_three_requests_and_the_destination_still_decides() {
        let mut halving = Isolator::new(200);
        let (halved, _) = run(&mut halving, 200, &[120]);
        let mut plan = Isolator::new(200);
        plan.suspect([120]);
        let (requests, _) = run(&mut plan, 200, &[120]);
        assert_eq!(requests, 4, "the whole, then 0..120, 120, 121..200");
        assert!(halved > 10, "halving took {halved}");
        let (report, refused) = plan.finish();
        assert_eq!(report.written, 199);
        assert_eq!(refused, vec![(120, "bad".to_owned())]);

        // A wrong suspect is written; a bad record nobody suspected is still found.
        let mut plan = Isolator::new(50);
        plan.suspect([7, 7, 49]);
        run(&mut plan, 50, &[30]);
        let (report, refused) = plan.finish();
        assert_eq!(report.written, 49);
        assert_eq!(
            refused.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
            vec![30]
        );
    }
}
