//! [`Record`]: one record as a runtime hands it to a sink.

use bytes::Bytes;
use pico_identity::RecordId;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3;

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

    /// A 64-bit digest (XXH3) of what the record carries besides its identity: key, value,
    /// headers and timestamp, each length-prefixed so parts cannot run into each other. Sinks
    /// store it beside the record to tell an exact replay from a changed one with one probe.
    /// Stable across versions of this crate (changing it would make every replay look
    /// changed).
    pub fn content_digest(&self) -> u64 {
        let mut h = Xxh3::new();
        let part = |h: &mut Xxh3, bytes: &[u8]| {
            h.update(&(bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        match &self.key {
            Some(k) => part(&mut h, k),
            None => h.update(&u64::MAX.to_le_bytes()),
        }
        part(&mut h, &self.value);
        h.update(&(self.headers.len() as u64).to_le_bytes());
        for header in &self.headers {
            part(&mut h, header.name.as_bytes());
            part(&mut h, &header.value);
        }
        h.update(&self.timestamp_ms.unwrap_or(i64::MIN).to_le_bytes());
        h.digest()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(v: &str) -> Record {
        Record::new(RecordId::new("t", 0, 1), v.to_owned())
    }

    #[test]
    fn the_content_digest_covers_everything_but_the_identity() {
        let base = record("{\"a\":1}");
        let d = base.content_digest();
        assert_eq!(d, record("{\"a\":1}").content_digest(), "stable");
        assert_eq!(
            d,
            Record::new(RecordId::new("other", 9, 9), "{\"a\":1}").content_digest(),
            "the identity is not content"
        );
        assert_ne!(d, record("{\"a\":2}").content_digest(), "value");
        assert_ne!(d, base.clone().with_key("k").content_digest(), "key");
        assert_ne!(
            d,
            base.clone().with_header("h", "x").content_digest(),
            "headers"
        );
        assert_ne!(
            d,
            base.clone().with_timestamp_ms(5).content_digest(),
            "timestamp"
        );
        // Length prefixes keep parts apart: key "ab" + value "c" is not key "a" + value "bc".
        let split = |k: &str, v: &str| record(v).with_key(k.to_owned()).content_digest();
        assert_ne!(split("ab", "c"), split("a", "bc"));
    }
}
