//! A message an Iggy partition served, as the record a sink writes.

use iggy::prelude::{HeaderKind, IggyMessage};
use pico_sink::Record;
use pico_sink::identity::iggy::IggySource;

/// Why a served message cannot become a record.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The message's user headers do not decode.
    #[error(
        "message at offset {offset} of partition {partition}: its user headers do not decode: {reason}"
    )]
    Headers {
        /// The partition.
        partition: u32,
        /// The message's offset.
        offset: u64,
        /// What the client said.
        reason: String,
    },
}

/// The record of the message at `message.header.offset` of `partition` of `source`: identity
/// from the partition and offset, the payload as its value, the time the server appended it
/// (microseconds, cut to milliseconds) as its timestamp, and its user headers in key order: a
/// string or raw header as its bytes, a typed one (number, bool) as its text (`42`, `true`).
/// Iggy keeps no message key (a partitioning key chooses the partition and is not stored): the
/// record has none. The message id is not carried: it is not the identity (see
/// [`pico_sink::identity::iggy`]).
pub fn to_record(
    source: &IggySource,
    partition: u32,
    message: &IggyMessage,
) -> Result<Record, RecordError> {
    let offset = message.header.offset;
    let appended_ms = message.header.timestamp / 1_000;
    let mut record = Record::new(source.record_id(partition, offset), message.payload.clone())
        .with_timestamp_ms(i64::try_from(appended_ms).unwrap_or(i64::MAX));
    let headers = message
        .user_headers_map()
        .map_err(|e| RecordError::Headers {
            partition,
            offset,
            reason: e.to_string(),
        })?;
    // The wire holds headers that do not decode as no map at all: refuse the message rather
    // than write it without them.
    if headers.is_none() && message.header.user_headers_length > 0 {
        return Err(RecordError::Headers {
            partition,
            offset,
            reason: format!(
                "{} bytes of user headers, none readable",
                message.header.user_headers_length
            ),
        });
    }
    for (key, value) in headers.into_iter().flatten() {
        let name = match key.kind() {
            HeaderKind::String | HeaderKind::Raw => {
                String::from_utf8_lossy(key.as_bytes()).into_owned()
            }
            _ => key.to_string_value(),
        };
        let bytes = match value.kind() {
            HeaderKind::String | HeaderKind::Raw => value.as_bytes().to_vec(),
            _ => value.to_string_value().into_bytes(),
        };
        record = record.with_header(name, bytes);
    }
    Ok(record)
}
