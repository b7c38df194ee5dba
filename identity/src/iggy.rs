//! Apache Iggy messages as record identities.
//!
//! An Iggy server holds **streams**, a stream holds **topics**, a topic holds **partitions**,
//! and every message appended to a partition gets the next **offset** of that partition (0, 1,
//! 2, …), which no other message of the partition is given. A consumer group stores one offset
//! per partition, and after a crash a member polls again from the stored offset: the same
//! messages come back at the same offsets. So the stream and topic names, the partition and
//! the offset are what `topic:partition:offset` is under Kafka:
//!
//! | identity | Iggy |
//! |---|---|
//! | topic | `stream/topic`, the two names (a `/` or `%` in the stream name written `%2F`, `%25`) |
//! | partition | the partition id, as the server numbers it |
//! | offset | the message's offset in its partition |
//!
//! **Why names, and how they stay apart.** Streams and topics also have numeric ids, but a
//! name is what a user configures and what survives a server's metadata being rebuilt. Iggy
//! takes any name of 1 to 255 bytes, `/` included, so the stream name is escaped (`%` as
//! `%25`, `/` as `%2F`) and the topic splits back into its two names at its first `/`: two
//! different sources never share a topic. Names without `/` or `%` read as written
//! (`orders/payments`).
//!
//! **Not the message id.** Each Iggy message also carries a 128-bit id, which the producer
//! may set or leave to the server: it says nothing about a redelivery unless every producer
//! sets it, so it is not the identity. A topic deleted and created again under the same names
//! restarts at offset 0, as a re-created Kafka topic does: give it other names, or the
//! pipeline another namespace ([`crate::Namespace`]), or its messages meet the old identities.

use std::sync::Arc;

use crate::{IdentityError, RecordId};

/// The longest stream or topic name Iggy takes, bytes.
pub const IGGY_NAME_MAX: usize = 255;

/// What an Iggy consumer reads: a topic of a stream, by their names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IggySource {
    stream: String,
    topic_name: String,
    /// The identities' topic: `stream/topic`, the stream name escaped.
    topic: Arc<str>,
}

impl IggySource {
    /// The topic `topic` of the stream `stream`. Refuses a name Iggy refuses (empty, or over
    /// [`IGGY_NAME_MAX`] bytes).
    pub fn new(stream: &str, topic: &str) -> Result<Self, IdentityError> {
        for name in [stream, topic] {
            if name.is_empty() || name.len() > IGGY_NAME_MAX {
                return Err(IdentityError::BadIggySource {
                    text: crate::error::clip(name),
                    reason: "an Iggy stream or topic name has 1 to 255 bytes",
                });
            }
        }
        let escaped = stream.replace('%', "%25").replace('/', "%2F");
        Ok(Self {
            stream: stream.to_owned(),
            topic_name: topic.to_owned(),
            topic: format!("{escaped}/{topic}").into(),
        })
    }

    /// The stream's name.
    pub fn stream(&self) -> &str {
        &self.stream
    }

    /// The Iggy topic's name.
    pub fn topic_name(&self) -> &str {
        &self.topic_name
    }

    /// The topic of every identity of this source: `stream/topic`, the stream name escaped.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The identity of the message at `offset` of partition `partition`.
    pub fn record_id(&self, partition: u32, offset: u64) -> RecordId {
        RecordId::new(self.topic.clone(), partition, offset)
    }

    /// The source an identity's topic names, if it is one ([`Self::topic`] read back).
    pub fn from_topic(topic: &str) -> Result<Self, IdentityError> {
        let bad = |reason| IdentityError::BadIggySource {
            text: crate::error::clip(topic),
            reason,
        };
        let (escaped, name) = topic
            .split_once('/')
            .ok_or_else(|| bad("an Iggy source's topic is `stream/topic`"))?;
        let stream =
            unescape(escaped).ok_or_else(|| bad("a '%' in the stream part is '%25' or '%2F'"))?;
        let source = Self::new(&stream, name)?;
        // `a%2fb` would unescape like `a%2Fb`; only the form `new` writes reads back.
        if source.topic() == topic {
            Ok(source)
        } else {
            Err(bad(
                "the stream part is not written as IggySource::new writes it",
            ))
        }
    }
}

/// `%25` → `%`, `%2F` → `/`; `None` for any other `%`.
fn unescape(escaped: &str) -> Option<String> {
    let mut out = String::with_capacity(escaped.len());
    let mut rest = escaped;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 3)?;
        out.push(match code {
            "25" => '%',
            "2F" | "2f" => '/',
            _ => return None,
        });
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_partition_and_offset_are_iggys_and_the_topic_names_both() {
        let s = IggySource::new("orders", "payments").unwrap();
        assert_eq!(s.topic(), "orders/payments");
        let id = s.record_id(2, 41);
        assert_eq!(id.to_string(), "orders/payments:2:41");
        assert_eq!(IggySource::from_topic(s.topic()), Ok(s));
    }

    #[test]
    fn names_with_slashes_and_percents_stay_apart() {
        // Without the escape, ("a/b", "c") and ("a", "b/c") would share the topic "a/b/c".
        let pairs = [
            ("a/b", "c"),
            ("a", "b/c"),
            ("a%2Fb", "c"),
            ("a%", "b"),
            ("a", "%2Fb"),
            ("%", "/"),
            ("/", "%"),
            ("é/ü", "ß/%"),
        ];
        let mut topics = std::collections::HashSet::new();
        for (stream, topic) in pairs {
            let s = IggySource::new(stream, topic).unwrap();
            assert!(topics.insert(s.topic().to_owned()), "{stream:?} {topic:?}");
            let back = IggySource::from_topic(s.topic()).unwrap();
            assert_eq!((back.stream(), back.topic_name()), (stream, topic));
        }
        assert_eq!(IggySource::new("a/b", "c").unwrap().topic(), "a%2Fb/c");
    }

    #[test]
    fn names_iggy_refuses_and_topics_not_written_by_new_are_refused() {
        let long = "x".repeat(IGGY_NAME_MAX + 1);
        for (stream, topic) in [
            ("", "t"),
            ("s", ""),
            (long.as_str(), "t"),
            ("s", long.as_str()),
        ] {
            assert!(
                matches!(
                    IggySource::new(stream, topic),
                    Err(IdentityError::BadIggySource { .. })
                ),
                "{stream:?} {topic:?}"
            );
        }
        assert!(IggySource::new(&"x".repeat(IGGY_NAME_MAX), "t").is_ok());
        for topic in ["no-slash", "a%2fb/c", "a%41/c", "a%/c", "/t", "s/"] {
            assert!(IggySource::from_topic(topic).is_err(), "{topic:?}");
        }
    }
}
