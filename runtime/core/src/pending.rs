//! A partition's records read and not yet handed to its worker, and how a batch is cut from
//! them.

use std::time::Instant;

use pico_sink::{Batch, Record};

use crate::settings::BatchLimits;

/// A partition's records read and not yet handed to its worker.
pub struct Pending {
    /// The records, in offset order.
    pub records: Vec<Record>,
    /// Their payload bytes ([`record_bytes`]).
    pub bytes: usize,
    /// Since when the oldest of them waits.
    pub since: Instant,
    /// Whether the partition is paused at the broker.
    pub paused: bool,
    /// A batch could not be formed: nothing more is cut.
    stopped: bool,
}

impl Default for Pending {
    fn default() -> Self {
        Self::new()
    }
}

impl Pending {
    /// An empty buffer, its linger clock started now.
    pub fn new() -> Self {
        Self {
            records: Vec::new(),
            bytes: 0,
            since: Instant::now(),
            paused: false,
            stopped: false,
        }
    }

    /// Appends a record read from the partition.
    pub fn push(&mut self, record: Record) {
        if self.records.is_empty() {
            self.since = Instant::now();
        }
        self.bytes += record_bytes(&record);
        self.records.push(record);
    }

    /// Cuts the next batch off the front of the buffer: as many records as `limits` allow, if
    /// that is less than the whole buffer, or the batch is full, or the buffer waited past the
    /// linger, or `whole` asks for it; else `None`. A batch that cannot be formed is an error,
    /// after which the buffer cuts nothing more: no later record of the partition is handed on
    /// (and committed) past the ones that failed.
    pub fn cut(&mut self, limits: &BatchLimits, whole: bool) -> Result<Option<Batch>, String> {
        if self.stopped {
            return Ok(None);
        }
        let mut count = 0;
        let mut bytes = 0;
        for r in &self.records {
            if count > 0
                && (count >= limits.max_records || bytes + record_bytes(r) > limits.max_bytes)
            {
                break;
            }
            count += 1;
            bytes += record_bytes(r);
        }
        let due = count < self.records.len()
            || whole
            || self.since.elapsed() >= limits.linger()
            || count >= limits.max_records
            || bytes >= limits.max_bytes;
        if count == 0 || !due {
            return Ok(None);
        }
        let first = self.records[0].id.clone();
        let records: Vec<Record> = self.records.drain(..count).collect();
        self.bytes -= bytes;
        self.since = Instant::now();
        match Batch::new(records) {
            Ok(batch) => Ok(Some(batch)),
            Err(e) => {
                self.stopped = true;
                Err(format!(
                    "the records of {}:{} from offset {} cannot form a batch ({e}); nothing of \
                     the partition from that offset on is delivered or committed",
                    first.topic, first.partition, first.offset
                ))
            }
        }
    }
}

/// A record's payload bytes, as batches are limited by: its value and its key.
pub fn record_bytes(r: &Record) -> usize {
    r.value.len() + r.key.as_ref().map_or(0, |k| k.len())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use pico_sink::Record;
    use pico_sink::identity::RecordId;

    use super::Pending;
    use crate::settings::BatchLimits;

    fn record(offset: u64) -> Record {
        Record::new(RecordId::new("t", 1, offset), "{}")
    }

    fn limits(max_records: usize) -> BatchLimits {
        BatchLimits {
            max_records,
            max_bytes: 1 << 20,
            linger_ms: 60_000,
        }
    }

    #[test]
    fn a_full_batch_is_cut_and_the_rest_waits_for_its_linger() {
        let mut pending = Pending::new();
        for offset in 10..15 {
            pending.push(record(offset));
        }
        let batch = pending.cut(&limits(3), false).unwrap().unwrap();
        assert_eq!((batch.id().first, batch.id().last), (10, 12));
        assert!(pending.cut(&limits(3), false).unwrap().is_none());
        assert_eq!(pending.records.len(), 2);
        let rest = pending.cut(&limits(3), true).unwrap().unwrap();
        assert_eq!((rest.id().first, rest.id().last), (13, 14));
        assert_eq!(pending.bytes, 0);
    }

    #[test]
    fn a_batch_that_cannot_be_formed_stops_the_buffer_and_skips_nothing() {
        let mut pending = Pending::new();
        for offset in [5, 3, 6, 7] {
            pending.push(record(offset));
        }
        let why = pending.cut(&limits(2), false).unwrap_err();
        assert!(why.contains("t:1 from offset 5"), "{why}");
        // The records after the failed batch are never handed on: a later batch delivered and
        // committed would skip the ones that failed.
        pending.push(record(8));
        assert!(pending.cut(&limits(2), true).unwrap().is_none());
        assert!(pending.cut(&limits(2), false).unwrap().is_none());
    }
}
