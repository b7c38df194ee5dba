//! [`BatchId`]: the identity of a contiguous offset range of one topic-partition.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::IdentityError;
use crate::record_id::{RecordId, malformed, parse_decimal, split_last};

/// The identity of a contiguous range `first..=last` of one topic-partition.
///
/// Batch-level tokens (ClickHouse dedup token, Doris label, S3 object key, HTTP
/// `Idempotency-Key`, Delta app id + version, Iceberg snapshot property) derive from it, never
/// from random ids or clocks, so a replay of the same range produces the same token.
/// Canonical text: `topic:partition:first..=last`, parsed from the right like [`RecordId`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct BatchId {
    /// Topic of every record in the batch.
    pub topic: Arc<str>,
    /// Partition of every record in the batch.
    pub partition: u32,
    /// First offset of the range (inclusive).
    pub first: u64,
    /// Last offset of the range (inclusive).
    pub last: u64,
}

impl BatchId {
    /// Builds a batch identity; `first` must not be above `last`.
    pub fn new(
        topic: impl Into<Arc<str>>,
        partition: u32,
        first: u64,
        last: u64,
    ) -> Result<Self, IdentityError> {
        if first > last {
            return Err(IdentityError::EmptyRange { first, last });
        }
        Ok(Self {
            topic: topic.into(),
            partition,
            first,
            last,
        })
    }

    /// The identity of the first record of the range.
    pub fn first_record(&self) -> RecordId {
        RecordId::new(self.topic.clone(), self.partition, self.first)
    }

    /// The identity of the last record of the range.
    pub fn last_record(&self) -> RecordId {
        RecordId::new(self.topic.clone(), self.partition, self.last)
    }

    /// Whether `offset` lies inside the range.
    pub fn contains(&self, offset: u64) -> bool {
        (self.first..=self.last).contains(&offset)
    }
}

impl fmt::Display for BatchId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}..={}",
            self.topic, self.partition, self.first, self.last
        )
    }
}

impl FromStr for BatchId {
    type Err = IdentityError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (rest, range) = split_last(text, "missing ':first..=last'")?;
        let (topic, partition) = split_last(rest, "missing ':partition'")?;
        let (first, last) = range
            .split_once("..=")
            .ok_or_else(|| malformed(text, "range is not 'first..=last'"))?;
        let first = parse_decimal(text, first, "first")?;
        let last = parse_decimal(text, last, "last")?;
        Self::new(
            topic,
            parse_decimal(text, partition, "partition")?,
            first,
            last,
        )
    }
}
