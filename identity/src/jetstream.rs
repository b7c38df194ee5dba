//! NATS JetStream messages as record identities.
//!
//! A JetStream stream numbers every message it stores with its **stream sequence** (1, 2, 3,
//! …). A sequence is never given to another message of the same stream: purging or deleting
//! messages leaves a gap, it does not renumber. A durable consumer reads a stream (or the part
//! of it its filter subject selects) in sequence order, and after a crash or an ack that did
//! not arrive the server delivers the same message again **with the same stream sequence**. So
//! the stream, the filter and the sequence are what `topic:partition:offset` is under Kafka:
//!
//! | identity | JetStream |
//! |---|---|
//! | topic | the stream's name, or `stream>filter` when the consumer has a filter subject |
//! | partition | always [`JETSTREAM_PARTITION`] (0) |
//! | offset | the message's stream sequence |
//!
//! **What a partition is.** One consumer — one stream, one filter subject — is one partition:
//! its messages arrive in increasing sequence order, so sinks that keep a per-partition
//! watermark (ClickHouse, S3, Quickwit) see what they see under Kafka. Two consumers with
//! different filters on the same stream move independently, so they must not share a
//! partition: a watermark one of them raised would hide the other's older messages (lost).
//! The filter is therefore part of the topic (`orders>orders.eu.*`), which keeps the identity
//! injective: `>` never appears in a stream name (JetStream refuses `.`, `*`, `>` and
//! whitespace there), so the topic splits back into stream and filter at its first `>`.
//!
//! **What keeps it stable.** The filter is part of the identity: change it only together with
//! the durable consumer, never under data already delivered. Two consumers of one pipeline
//! whose filters overlap would deliver a message under two identities (a duplicate, not
//! deduplicated): [`JetStreamSource::overlaps`] tells, and a runtime refuses such a pipeline.
//! A stream deleted and created again under the same name restarts at sequence 1, as a Kafka
//! topic re-created restarts at offset 0: give the new stream another name, or the pipeline
//! another namespace ([`crate::Namespace`]), or its messages meet the old identities.

use crate::{IdentityError, RecordId};

/// The partition of every JetStream identity: one consumer (stream and filter) is one
/// partition, told apart by the topic.
pub const JETSTREAM_PARTITION: u32 = 0;

/// What a JetStream consumer reads: a stream, and the filter subject that selects part of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JetStreamSource {
    stream: String,
    filter: Option<String>,
    /// The identities' topic: the stream, or `stream>filter`.
    topic: std::sync::Arc<str>,
}

impl JetStreamSource {
    /// A consumer of `stream`, of the whole stream (`filter` `None`) or of the subjects that
    /// match `filter`. Refuses a stream name JetStream refuses (empty, or with whitespace, `.`,
    /// `*`, `>`, `/` or `\`) and a filter that is not a subject pattern (empty tokens, `>`
    /// before the last token, a wildcard inside a token).
    pub fn new(stream: &str, filter: Option<&str>) -> Result<Self, IdentityError> {
        if let Some(reason) = stream_name_problem(stream) {
            return Err(IdentityError::BadJetStreamSource {
                text: crate::error::clip(stream),
                reason,
            });
        }
        if let Some(reason) = filter.and_then(subject_problem) {
            return Err(IdentityError::BadJetStreamSource {
                text: crate::error::clip(filter.unwrap_or_default()),
                reason,
            });
        }
        let topic = match filter {
            Some(f) => format!("{stream}>{f}"),
            None => stream.to_owned(),
        };
        Ok(Self {
            stream: stream.to_owned(),
            filter: filter.map(str::to_owned),
            topic: topic.into(),
        })
    }

    /// The stream's name.
    pub fn stream(&self) -> &str {
        &self.stream
    }

    /// The filter subject, if the consumer has one.
    pub fn filter(&self) -> Option<&str> {
        self.filter.as_deref()
    }

    /// The topic of every identity of this source: the stream, or `stream>filter`.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The identity of the message at `stream_sequence`.
    pub fn record_id(&self, stream_sequence: u64) -> RecordId {
        RecordId::new(self.topic.clone(), JETSTREAM_PARTITION, stream_sequence)
    }

    /// The source an identity's topic names, if it is one ([`Self::topic`] read back).
    pub fn from_topic(topic: &str) -> Result<Self, IdentityError> {
        match topic.split_once('>') {
            Some((stream, filter)) => Self::new(stream, Some(filter)),
            None => Self::new(topic, None),
        }
    }

    /// Whether one message can reach both consumers: the same stream and either consumer
    /// unfiltered, or filters that some subject matches both.
    pub fn overlaps(&self, other: &Self) -> bool {
        if self.stream != other.stream {
            return false;
        }
        match (&self.filter, &other.filter) {
            (Some(a), Some(b)) => subjects_overlap(a, b),
            _ => true,
        }
    }
}

/// Why JetStream would refuse `name` as a stream name, if it would.
fn stream_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("a stream name is not empty");
    }
    let refused = |c: char| c.is_whitespace() || matches!(c, '.' | '*' | '>' | '/' | '\\');
    name.chars().any(refused).then_some(
        "a stream name has no whitespace, '.', '*', '>', '/' or '\\' (JetStream refuses them)",
    )
}

/// Why `subject` is not a subject pattern, if it is not.
fn subject_problem(subject: &str) -> Option<&'static str> {
    let tokens: Vec<&str> = subject.split('.').collect();
    for (i, token) in tokens.iter().enumerate() {
        if token.is_empty() || token.chars().any(char::is_whitespace) {
            return Some("a filter subject's tokens are not empty and hold no whitespace");
        }
        if token.len() > 1 && token.contains(['*', '>']) {
            return Some("'*' and '>' are whole tokens of a filter subject");
        }
        if *token == ">" && i + 1 != tokens.len() {
            return Some("'>' is only the last token of a filter subject");
        }
    }
    None
}

/// Whether some subject matches both patterns (`*` one token, `>` one or more at the end).
pub fn subjects_overlap(a: &str, b: &str) -> bool {
    let (mut a, mut b) = (a.split('.'), b.split('.'));
    loop {
        match (a.next(), b.next()) {
            (None, None) => return true,
            (Some(">"), Some(_)) | (Some(_), Some(">")) => return true,
            (Some(x), Some(y)) if x == y || x == "*" || y == "*" => {}
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(stream: &str, filter: Option<&str>) -> JetStreamSource {
        JetStreamSource::new(stream, filter).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_stream_sequence_is_the_offset_and_the_filter_part_of_the_topic() {
        let whole = source("ORDERS", None);
        assert_eq!(whole.record_id(42).to_string(), "ORDERS:0:42");
        let eu = source("ORDERS", Some("orders.eu.*"));
        let id = eu.record_id(42);
        assert_eq!(id.to_string(), "ORDERS>orders.eu.*:0:42");
        assert_eq!(id.to_string().parse::<RecordId>(), Ok(id.clone()));
        assert_ne!(
            id,
            whole.record_id(42),
            "another consumer, another partition"
        );
        assert_eq!(JetStreamSource::from_topic(&id.topic), Ok(eu));
        assert_eq!(JetStreamSource::from_topic("ORDERS"), Ok(whole));
    }

    #[test]
    fn names_and_filters_jetstream_refuses_are_refused() {
        for bad in ["", "or ders", "orders.eu", "orders*", "a>b", "a/b", "a\\b"] {
            assert!(
                matches!(
                    JetStreamSource::new(bad, None),
                    Err(IdentityError::BadJetStreamSource { .. })
                ),
                "{bad:?}"
            );
        }
        for bad in [
            "",
            "orders.",
            ".orders",
            "orders..eu",
            "orders.>.eu",
            "orders.e*",
            "a b",
        ] {
            assert!(
                JetStreamSource::new("ORDERS", Some(bad)).is_err(),
                "{bad:?}"
            );
        }
        for good in ["orders", "orders.*", "orders.>", "*.eu.>", ">"] {
            assert!(
                JetStreamSource::new("ORDERS", Some(good)).is_ok(),
                "{good:?}"
            );
        }
    }

    #[test]
    fn overlapping_consumers_are_told() {
        let on = |a: &str, b: &str| subjects_overlap(a, b);
        assert!(on("orders.eu", "orders.eu"));
        assert!(on("orders.*", "orders.eu"));
        assert!(on("orders.>", "orders.eu.paris"));
        assert!(on("*.eu", "orders.*"));
        assert!(on(">", "orders"));
        assert!(!on("orders.eu", "orders.us"));
        assert!(!on("orders.*", "orders.eu.paris"), "'*' is one token");
        assert!(!on("orders.>", "orders"), "'>' is at least one token");
        assert!(!on("orders.eu", "orders.eu.paris"));
        let s = |f: Option<&str>| source("ORDERS", f);
        assert!(s(None).overlaps(&s(Some("orders.eu"))));
        assert!(!s(Some("orders.eu")).overlaps(&s(Some("orders.us"))));
        assert!(!source("A", None).overlaps(&source("B", None)));
    }
}
