//! [`Progress`]: what one partition has read, handed to the sink, and confirmed, and the one
//! offset that may be committed.
//!
//! The rule (an outbox's): the committed cursor never passes the oldest record that was read
//! but not confirmed — neither a batch in the sink nor a record still buffered. In Kafka terms
//! the committed offset (the next one to read) is the lowest unconfirmed offset, or the read
//! position when nothing is unconfirmed. So `cursor == read position` holds exactly when
//! nothing is unacknowledged: the progress line logs that comparison.

use std::collections::BTreeMap;

/// A topic and partition, as the broker names them (JetStream: the identity's topic, partition
/// 0).
pub type Tp = (String, i32);

/// One partition's offsets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    /// The next offset to read (one past the highest offset read), once something was read.
    read: Option<u64>,
    /// The lowest offset read by this process.
    first_read: Option<u64>,
    /// The lowest offset read but not yet handed to the sink (buffered).
    buffered_from: Option<u64>,
    /// Batches handed to the sink and not confirmed: first → last offset.
    in_flight: BTreeMap<u64, u64>,
    /// The last offset committed to the broker (the next offset to read after a restart).
    committed: Option<u64>,
}

impl Progress {
    /// A record at `offset` was read and buffered.
    pub fn read(&mut self, offset: u64) {
        let next = offset.saturating_add(1);
        self.read = Some(self.read.map_or(next, |r| r.max(next)));
        self.first_read = Some(self.first_read.map_or(offset, |f| f.min(offset)));
        self.buffered_from = Some(self.buffered_from.map_or(offset, |b| b.min(offset)));
    }

    /// Buffered records `first..=last` became a batch handed to the sink; `rest` is the lowest
    /// offset still buffered, if any.
    pub fn handed(&mut self, first: u64, last: u64, rest: Option<u64>) {
        self.in_flight.insert(first, last);
        self.buffered_from = rest;
    }

    /// The sink confirmed the batch starting at `first`. Returns the offset to commit, if the
    /// cursor moves.
    pub fn confirmed(&mut self, first: u64) -> Option<u64> {
        self.in_flight.remove(&first);
        let cursor = self.commit_point()?;
        if self.committed.is_some_and(|c| c >= cursor) {
            return None;
        }
        Some(cursor)
    }

    /// The commit reached the broker.
    pub fn committed(&mut self, offset: u64) {
        self.committed = Some(self.committed.map_or(offset, |c| c.max(offset)));
    }

    /// The offset that may be committed: the lowest unconfirmed offset (in flight or buffered),
    /// else the read position.
    pub fn commit_point(&self) -> Option<u64> {
        let oldest_in_flight = self.in_flight.keys().next().copied();
        match (oldest_in_flight, self.buffered_from) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (Some(a), None) | (None, Some(a)) => Some(a),
            (None, None) => self.read,
        }
    }

    /// Batches in the sink now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// The last committed offset.
    pub fn cursor(&self) -> Option<u64> {
        self.committed
    }

    /// The read position.
    pub fn read_position(&self) -> Option<u64> {
        self.read
    }

    /// Records read and not committed (from the last commit, or from the first record read
    /// when nothing was committed): all a sink can have written past the committed offset, so
    /// all a new owner of the partition can write again.
    pub fn read_not_committed(&self) -> u64 {
        let Some(read) = self.read else { return 0 };
        let from = self.committed.or(self.first_read).unwrap_or(read);
        read.saturating_sub(from)
    }

    /// `cursor == read position`: everything read is confirmed and committed.
    pub fn nothing_unacked(&self) -> bool {
        self.read.is_none() || self.committed == self.read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cursor_never_passes_the_oldest_unconfirmed_batch() {
        let mut p = Progress::default();
        for o in 0..30 {
            p.read(o);
        }
        // Two overlapping deliveries at once: [0..=9] and [10..=19]; [20..=29] buffered.
        p.handed(0, 9, Some(10));
        p.handed(10, 19, Some(20));
        assert_eq!(p.commit_point(), Some(0));
        // The later batch confirms first: nothing may be committed yet.
        assert_eq!(p.confirmed(10), Some(0));
        p.committed(0);
        assert!(!p.nothing_unacked());
        // The older one confirms: the cursor moves to the buffered records, not past them.
        assert_eq!(p.confirmed(0), Some(20));
        p.committed(20);
        assert_eq!(p.cursor(), Some(20));
        assert_eq!(p.read_position(), Some(30));
        assert!(!p.nothing_unacked(), "20..30 are still buffered");
        assert_eq!(p.read_not_committed(), 10, "20..30 read, not committed");
        p.handed(20, 29, None);
        assert_eq!(p.confirmed(20), Some(30));
        p.committed(30);
        assert!(p.nothing_unacked(), "cursor == read position");
        assert_eq!(p.read_not_committed(), 0);
        assert_eq!(
            p.confirmed(20),
            None,
            "a repeated confirmation moves nothing"
        );
    }

    #[test]
    fn gaps_of_compacted_topics_are_covered_by_the_read_position() {
        let mut p = Progress::default();
        for o in [3, 7, 12] {
            p.read(o);
        }
        p.handed(3, 12, None);
        assert_eq!(p.confirmed(3), Some(13));
    }
}
