//! Writing rows while isolating the ones the server refuses.

use crate::classify::Failure;

/// Rows written (inserted or changed) and rows the destination already held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteCounts {
    /// Inserted or changed.
    pub written: u64,
    /// Already present (replayed).
    pub already_present: u64,
}

/// Plans the transactions for `len` rows: the whole range first; a range that fails with a data
/// error (class 22/23) is split in halves until single rows are isolated, and those are
/// refused with the server's reason, while everything else is written.
///
/// ```
/// use pico_pg_common::{Failure, Isolator, WriteCounts};
/// let mut iso = Isolator::new(4);
/// while let Some((start, end)) = iso.next_range() {
///     let result = if (start..end).contains(&2) {
///         Err(Failure::Data("bad".into()))
///     } else {
///         Ok(WriteCounts { written: (end - start) as u64, already_present: 0 })
///     };
///     iso.record(start, end, result).unwrap();
/// }
/// let (counts, refused) = iso.finish();
/// assert_eq!((counts.written, refused.len(), refused[0].0), (3, 1, 2));
/// ```
#[derive(Debug)]
pub struct Isolator {
    pending: Vec<(usize, usize)>,
    total: WriteCounts,
    refused: Vec<(usize, String)>,
}

impl Isolator {
    /// A plan for rows `0..len`.
    pub fn new(len: usize) -> Self {
        Self {
            pending: if len == 0 { Vec::new() } else { vec![(0, len)] },
            total: WriteCounts::default(),
            refused: Vec::new(),
        }
    }

    /// The next range to write in its own transaction.
    pub fn next_range(&mut self) -> Option<(usize, usize)> {
        self.pending.pop()
    }

    /// Records how writing `start..end` went; a failure other than a data error is returned.
    pub fn record(
        &mut self,
        start: usize,
        end: usize,
        result: Result<WriteCounts, Failure>,
    ) -> Result<(), Failure> {
        match result {
            Ok(c) => {
                self.total.written += c.written;
                self.total.already_present += c.already_present;
            }
            Err(Failure::Data(reason)) if end - start > 1 => {
                tracing::debug!(reason, start, end, "data error, splitting");
                let mid = start + (end - start) / 2;
                self.pending.push((mid, end));
                self.pending.push((start, mid));
            }
            Err(Failure::Data(reason)) => self.refused.push((start, reason)),
            Err(other) => return Err(other),
        }
        Ok(())
    }

    /// What was written, and the refused rows (index, reason).
    pub fn finish(self) -> (WriteCounts, Vec<(usize, String)>) {
        (self.total, self.refused)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_rows_are_isolated_and_the_rest_written() {
        let bad = [3usize, 4, 9];
        let mut iso = Isolator::new(10);
        let mut calls = 0;
        while let Some((s, e)) = iso.next_range() {
            calls += 1;
            let r = if (s..e).any(|i| bad.contains(&i)) {
                Err(Failure::Data(format!("bad row in {s}..{e}")))
            } else {
                Ok(WriteCounts {
                    written: (e - s) as u64,
                    already_present: 0,
                })
            };
            iso.record(s, e, r).unwrap();
        }
        let (counts, refused) = iso.finish();
        assert_eq!(counts.written, 7);
        assert_eq!(
            refused.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
            vec![3, 4, 9]
        );
        assert!(calls < 20, "{calls} transactions");
        let mut iso = Isolator::new(3);
        let (s, e) = iso.next_range().unwrap();
        assert!(
            iso.record(s, e, Err(Failure::Retryable("down".into())))
                .is_err()
        );
    }
}
