//! For tests (feature `testing`): batches built in one line, and the driver hooks that keep
//! what they were handed in memory ([`MemoryHooks`]). Tests of sinks, runtimes and the suite use
//! these instead of each writing its own.

use std::ops::RangeInclusive;

use pico_identity::RecordId;

use crate::{Batch, Record};

pub use crate::driver::MemoryHooks;

/// A batch of `topic`/`partition` with one record per offset of `offsets`, whose value is
/// `value(offset)`. Panics on an empty range (a batch holds at least one record).
pub fn batch_with(
    topic: &str,
    partition: u32,
    offsets: RangeInclusive<u64>,
    value: impl Fn(u64) -> String,
) -> Batch {
    records(
        offsets
            .map(|o| Record::new(RecordId::new(topic, partition, o), value(o)))
            .collect(),
    )
}

/// A batch of `topic`/`partition` whose records at `offsets` hold `{"o":<offset>}`.
pub fn json_batch(topic: &str, partition: u32, offsets: RangeInclusive<u64>) -> Batch {
    batch_with(topic, partition, offsets, |o| format!("{{\"o\":{o}}}"))
}

/// A batch of `topic`/`partition` with the given `(offset, value)` records, offsets
/// increasing. Panics otherwise.
pub fn batch_of(topic: &str, partition: u32, values: &[(u64, &str)]) -> Batch {
    records(
        values
            .iter()
            .map(|(o, v)| Record::new(RecordId::new(topic, partition, *o), (*v).to_owned()))
            .collect(),
    )
}

/// `Batch::new`, panicking with the reason on records that are not a batch.
pub fn records(records: Vec<Record>) -> Batch {
    match Batch::new(records) {
        Ok(batch) => batch,
        Err(e) => panic!("not a batch: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_make_the_batches_they_say() {
        let b = json_batch("t", 2, 5..=7);
        assert_eq!(b.len(), 3);
        assert_eq!(b.records()[0].id, RecordId::new("t", 2, 5));
        assert_eq!(&b.records()[2].value[..], b"{\"o\":7}");
        let b = batch_of("t", 0, &[(1, "a"), (4, "b")]);
        assert_eq!(b.records()[1].id.offset, 4);
        assert_eq!(&b.records()[1].value[..], b"b");
        let b = batch_with("x", 1, 0..=0, |o| format!("v{o}"));
        assert_eq!(&b.records()[0].value[..], b"v0");
    }

    #[test]
    #[should_panic(expected = "not a batch")]
    fn offsets_that_do_not_increase_are_refused_loudly() {
        batch_of("t", 0, &[(2, "a"), (1, "b")]);
    }
}
