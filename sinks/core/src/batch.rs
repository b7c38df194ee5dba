//! [`Batch`]: records of one topic-partition with strictly increasing offsets.

use std::sync::Arc;

use pico_identity::BatchId;
use thiserror::Error;

use crate::record::Record;

/// Why a batch could not be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BatchError {
    /// A batch needs at least one record.
    #[error("a batch needs at least one record")]
    Empty,
    /// Records of more than one topic-partition.
    #[error(
        "record at index {index} is from {topic:?} partition {partition}, the batch is for {expected_topic:?} partition {expected_partition}"
    )]
    MixedPartitions {
        /// Index of the first offending record.
        index: usize,
        /// Its topic.
        topic: String,
        /// Its partition.
        partition: u32,
        /// Topic of the first record.
        expected_topic: String,
        /// Partition of the first record.
        expected_partition: u32,
    },
    /// Offsets not strictly increasing.
    #[error("offset {offset} at index {index} does not follow offset {previous}")]
    OffsetsNotIncreasing {
        /// Index of the first offending record.
        index: usize,
        /// Its offset.
        offset: u64,
        /// Offset of the record before it.
        previous: u64,
    },
}

/// Records of one topic-partition, offsets strictly increasing (gaps allowed: compacted topics).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    id: BatchId,
    records: Arc<[Record]>,
}

impl Batch {
    /// Validates and wraps records.
    pub fn new(records: Vec<Record>) -> Result<Self, BatchError> {
        let first = records.first().ok_or(BatchError::Empty)?;
        let (topic, partition) = (first.id.topic.clone(), first.id.partition);
        for (index, pair) in records.windows(2).enumerate() {
            let (prev, rec) = (&pair[0], &pair[1]);
            if rec.id.topic != topic || rec.id.partition != partition {
                return Err(BatchError::MixedPartitions {
                    index: index + 1,
                    topic: rec.id.topic.to_string(),
                    partition: rec.id.partition,
                    expected_topic: topic.to_string(),
                    expected_partition: partition,
                });
            }
            if rec.id.offset <= prev.id.offset {
                return Err(BatchError::OffsetsNotIncreasing {
                    index: index + 1,
                    offset: rec.id.offset,
                    previous: prev.id.offset,
                });
            }
        }
        let first = records[0].id.offset;
        let last = records[records.len() - 1].id.offset;
        let id = BatchId {
            topic,
            partition,
            first,
            last,
        };
        Ok(Self {
            id,
            records: records.into(),
        })
    }

    /// The identity of the batch: topic, partition, first and last offset.
    pub fn id(&self) -> &BatchId {
        &self.id
    }

    /// Topic of every record.
    pub fn topic(&self) -> &str {
        &self.id.topic
    }

    /// Partition of every record.
    pub fn partition(&self) -> u32 {
        self.id.partition
    }

    /// The records, offsets strictly increasing.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// Number of records (never 0).
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Always false: a batch holds at least one record.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The record at `offset`, if the batch holds it (binary search).
    pub fn get(&self, offset: u64) -> Option<&Record> {
        self.records
            .binary_search_by_key(&offset, |r| r.id.offset)
            .ok()
            .map(|i| &self.records[i])
    }

    /// The records with offsets above `watermark`, as a batch; `None` if there are none.
    /// Sinks with a committed watermark use it to write only the new tail of a replay.
    pub fn after(&self, watermark: u64) -> Option<Batch> {
        let start = self.records.partition_point(|r| r.id.offset <= watermark);
        if start == 0 {
            return Some(self.clone());
        }
        let rest = self.records[start..].to_vec();
        Batch::new(rest).ok()
    }
}
