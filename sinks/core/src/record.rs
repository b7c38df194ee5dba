//! [`Record`]: one record as a runtime hands it to a sink.

use bytes::Bytes;
use pico_identity::RecordId;
use serde::{Deserialize, Serialize};

/// A record header: a name and an opaque value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Header name.
    pub name: String,
    /// Header value (bytes).
    pub value: Bytes,
}

/// One record: its identity, optional key, value, headers and timestamp.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Where the record was read: topic, partition, offset.
    pub id: RecordId,
    /// The record key, if any.
    pub key: Option<Bytes>,
    /// The record value (payload).
    pub value: Bytes,
    /// Headers, in the order they were produced.
    pub headers: Vec<Header>,
    /// Producer or broker timestamp in milliseconds since the Unix epoch, if any.
    pub timestamp_ms: Option<i64>,
}

impl Record {
    /// A record with a value and nothing else.
    pub fn new(id: RecordId, value: impl Into<Bytes>) -> Self {
        Self {
            id,
            key: None,
            value: value.into(),
            headers: Vec::new(),
            timestamp_ms: None,
        }
    }

    /// Sets the key.
    pub fn with_key(mut self, key: impl Into<Bytes>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Sets the timestamp (milliseconds since the Unix epoch).
    pub fn with_timestamp_ms(mut self, timestamp_ms: i64) -> Self {
        self.timestamp_ms = Some(timestamp_ms);
        self
    }

    /// Adds a header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<Bytes>) -> Self {
        self.headers.push(Header {
            name: name.into(),
            value: value.into(),
        });
        self
    }
}
