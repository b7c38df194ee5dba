//! A message a JetStream consumer delivered, as the record a sink writes.

use async_nats::jetstream::Message;
use pico_sink::Record;
use pico_sink::identity::jetstream::JetStreamSource;

/// Why a delivered message cannot become a record.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The message carries no JetStream metadata (its reply subject): it was not delivered by
    /// a consumer, so it has no stream sequence and cannot be acknowledged.
    #[error("message on {subject} has no JetStream metadata: {reason}")]
    NotFromAConsumer {
        /// The message's subject.
        subject: String,
        /// What the client said of its reply subject.
        reason: String,
    },
    /// The message comes from another stream than the consumer's source.
    #[error("message of stream {found} delivered to a consumer of {expected}")]
    OtherStream {
        /// The source's stream.
        expected: String,
        /// The message's stream.
        found: String,
    },
}

/// The record of `message` from `source`: identity from the stream sequence, the payload as
/// its value, its headers (every value of a repeated header, in order), the time the server
/// stored it as its timestamp. JetStream has no message key: the record has none.
pub fn to_record(source: &JetStreamSource, message: &Message) -> Result<Record, RecordError> {
    let info = message.info().map_err(|e| RecordError::NotFromAConsumer {
        subject: message.subject.to_string(),
        reason: e.to_string(),
    })?;
    if info.stream != source.stream() {
        return Err(RecordError::OtherStream {
            expected: source.stream().to_owned(),
            found: info.stream.to_owned(),
        });
    }
    let stored_ms = info.published.unix_timestamp_nanos() / 1_000_000;
    let mut record = Record::new(
        source.record_id(info.stream_sequence),
        message.payload.clone(),
    )
    .with_timestamp_ms(i64::try_from(stored_ms).unwrap_or(i64::MAX));
    if let Some(headers) = &message.headers {
        // By name, so a redelivery carries its headers in the same order (the client keeps
        // them in a hash map).
        let mut named: Vec<_> = headers.iter().collect();
        named.sort_by(|a, b| AsRef::<str>::as_ref(a.0).cmp(b.0.as_ref()));
        for (name, values) in named {
            for value in values {
                let name: &str = name.as_ref();
                record = record.with_header(name, value.as_str().as_bytes().to_vec());
            }
        }
    }
    Ok(record)
}
