//! A message an Iggy partition served, as the record a sink writes.

use iggy::prelude::{HeaderKind, IggyMessage};
use pico_sink::Record;
use pico_sink::identity::iggy::IggySource;

/// The header that carries a message's user headers as their wire bytes when they do not
/// decode.
pub const UNDECODED_HEADERS: &str = "pico.iggy.undecoded_headers";

/// The record of the message at `message.header.offset` of `partition` of `source`: identity
/// from the partition and offset, the payload as its value, the time the server appended it
/// (microseconds, cut to milliseconds) as its timestamp, and its user headers in key order: a
/// string or raw header as its bytes, a typed one (number, bool) as its text (`42`, `true`).
/// User headers that do not decode are carried whole, as one header [`UNDECODED_HEADERS`]
/// holding their wire bytes: nothing of a message is dropped. Iggy keeps no message key (a
/// partitioning key chooses the partition and is not stored): the record has none. The message
/// id is not carried: it is not the identity (see [`pico_sink::identity::iggy`]).
pub fn to_record(source: &IggySource, partition: u32, message: &IggyMessage) -> Record {
    let offset = message.header.offset;
    let appended_ms = message.header.timestamp / 1_000;
    let mut record = Record::new(source.record_id(partition, offset), message.payload.clone())
        .with_timestamp_ms(i64::try_from(appended_ms).unwrap_or(i64::MAX));
    let headers = match message.user_headers_map() {
        Ok(Some(headers)) => headers,
        // The client reads headers that do not decode as none at all: carried as they came.
        Ok(None) | Err(_) => {
            return match &message.user_headers {
                Some(raw) if !raw.is_empty() => record.with_header(UNDECODED_HEADERS, raw.clone()),
                _ => record,
            };
        }
    };
    for (key, value) in headers {
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
    record
}
