//! [`RecordId`]: the identity of one record, `topic:partition:offset`.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{IdentityError, clip};

/// The identity of one record: the topic, partition and offset it was read at.
///
/// The canonical text is `topic:partition:offset` with decimal numbers and no leading zeros.
/// Parsing splits at the last two `:`, so the topic may hold any string, `:` included, and
/// `parse(display(id)) == id` for every id. Only the canonical spelling of the numbers is
/// accepted (`07` or `+7` are rejected), which keeps the text form injective both ways.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RecordId {
    /// Topic the record was read from (any string).
    pub topic: Arc<str>,
    /// Partition within the topic.
    pub partition: u32,
    /// Offset within the partition.
    pub offset: u64,
}

impl RecordId {
    /// Builds an identity.
    pub fn new(topic: impl Into<Arc<str>>, partition: u32, offset: u64) -> Self {
        Self {
            topic: topic.into(),
            partition,
            offset,
        }
    }
}

impl fmt::Display for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.topic, self.partition, self.offset)
    }
}

impl FromStr for RecordId {
    type Err = IdentityError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (rest, offset) = split_last(text, "missing ':offset'")?;
        let (topic, partition) = split_last(rest, "missing ':partition'")?;
        Ok(Self {
            topic: topic.into(),
            partition: parse_decimal(text, partition, "partition")?,
            offset: parse_decimal(text, offset, "offset")?,
        })
    }
}

/// Splits at the last `:`.
pub(crate) fn split_last<'a>(
    text: &'a str,
    reason: &'static str,
) -> Result<(&'a str, &'a str), IdentityError> {
    text.rsplit_once(':').ok_or_else(|| malformed(text, reason))
}

/// Parses a canonical decimal: digits only, no sign, no leading zero unless the value is 0.
pub(crate) fn parse_decimal<T: FromStr>(
    whole: &str,
    digits: &str,
    what: &'static str,
) -> Result<T, IdentityError> {
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if !canonical {
        return Err(malformed(
            whole,
            match what {
                "partition" => "partition is not a canonical decimal",
                "first" => "first offset is not a canonical decimal",
                "last" => "last offset is not a canonical decimal",
                _ => "offset is not a canonical decimal",
            },
        ));
    }
    digits.parse::<T>().map_err(|_| {
        malformed(
            whole,
            match what {
                "partition" => "partition does not fit in u32",
                _ => "offset does not fit in u64",
            },
        )
    })
}

pub(crate) fn malformed(text: &str, reason: &'static str) -> IdentityError {
    IdentityError::Malformed {
        text: clip(text),
        reason,
    }
}
