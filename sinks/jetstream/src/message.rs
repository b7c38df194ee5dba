//! A record as the message JetStream stores: its value as the payload, its identity as
//! `Nats-Msg-Id` and `Pico-*` headers, its key and headers as headers.

use std::str::FromStr;

use async_nats::HeaderMap;
use async_nats::header::{HeaderName, HeaderValue, NATS_MESSAGE_ID};
use async_nats::jetstream::message::PublishMessage;
use pico_sink::Record;
use pico_sink::identity::Scope;

/// Header holding the topic, `%`-escaped like the key ([`header_text`]), namespace included.
pub const TOPIC: &str = "Pico-Topic";
/// Header holding the partition, in decimal.
pub const PARTITION: &str = "Pico-Partition";
/// Header holding the offset, in decimal.
pub const OFFSET: &str = "Pico-Offset";
/// Header holding the record key, `%`-escaped ([`header_text`]); absent when the record has none.
pub const KEY: &str = "Pico-Key";
/// Header holding the record timestamp in milliseconds; absent when the record has none.
pub const TIMESTAMP: &str = "Pico-Ts";

/// Bytes as header text: printable ASCII and space stay, `%` and every other byte become `%XX`.
/// Lossless (read back with [`header_bytes`]), and never holds the `\r`/`\n` that would break
/// the protocol.
pub fn header_text(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if (b' '..=b'~').contains(&b) && b != b'%' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Reverses [`header_text`]; `None` for text it does not produce.
pub fn header_bytes(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

/// A header value from text [`header_text`] produced (it cannot fail on such text).
fn value(text: String) -> Result<HeaderValue, String> {
    HeaderValue::try_from(text).map_err(|e| e.to_string())
}

/// The message for `record`, or why JetStream cannot carry it ([`headers`]).
pub fn publish(scope: &Scope, record: &Record) -> Result<PublishMessage, String> {
    Ok(PublishMessage::build()
        .headers(headers(scope, record)?)
        .payload(record.value.clone()))
}

/// The headers of `record`'s message, or why JetStream cannot carry them: a record header whose
/// name is not a header token (values are escaped, names cannot be without changing them).
pub fn headers(scope: &Scope, record: &Record) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    for h in &record.headers {
        let name = HeaderName::from_str(&h.name)
            .ok()
            .filter(|_| !h.name.is_empty())
            .ok_or_else(|| {
                format!(
                    "header name {:?} cannot be a NATS header name (printable ASCII without ':' \
                     or space); rename the header upstream",
                    h.name
                )
            })?;
        if h.name.starts_with("Nats-") || h.name.starts_with("Pico-") {
            return Err(format!(
                "header name {:?} is reserved (Nats-* for the server, Pico-* for the record \
                 identity); rename the header upstream",
                h.name
            ));
        }
        headers.append(name, value(header_text(&h.value))?);
    }
    let id = &record.id;
    headers.insert(
        TOPIC,
        value(header_text(scope.qualified_topic(&id.topic).as_bytes()))?,
    );
    headers.insert(PARTITION, id.partition.to_string().as_str());
    headers.insert(OFFSET, id.offset.to_string().as_str());
    if let Some(key) = &record.key {
        headers.insert(KEY, value(header_text(key))?);
    }
    if let Some(ts) = record.timestamp_ms {
        headers.insert(TIMESTAMP, ts.to_string().as_str());
    }
    headers.insert(NATS_MESSAGE_ID, value(scope.nats_message_id(id))?);
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pico_sink::Header;
    use pico_sink::identity::RecordId;

    #[test]
    fn header_text_is_lossless_and_never_breaks_a_line() {
        let all: Vec<u8> = (0..=255).collect();
        let text = header_text(&all);
        assert!(text.bytes().all(|b| (b' '..=b'~').contains(&b)));
        assert_eq!(header_bytes(&text).as_deref(), Some(all.as_slice()));
        assert_eq!(header_text(b"plain text 1"), "plain text 1");
        assert_eq!(header_text(b"50%\r\n"), "50%25%0D%0A");
        assert_eq!(header_bytes("%G0"), None);
        assert_eq!(header_bytes("%4"), None);
    }

    #[test]
    fn a_record_carries_its_identity_key_and_headers() {
        let mut record = Record::new(RecordId::new("orders\r\n", 3, 42), &b"v"[..]);
        record.key = Some(vec![0xff, b'k'].into());
        record.timestamp_ms = Some(1_700_000_000_000);
        record.headers.push(Header {
            name: "trace".into(),
            value: b"a\nb".to_vec().into(),
        });
        let h = headers(&Scope::default(), &record).unwrap_or_else(|e| panic!("{e}"));
        let get = |n: &str| h.get(n).map(|v| v.as_str().to_owned());
        assert_eq!(get(TOPIC).as_deref(), Some("orders%0D%0A"));
        assert_eq!(get(PARTITION).as_deref(), Some("3"));
        assert_eq!(get(OFFSET).as_deref(), Some("42"));
        assert_eq!(get(KEY).as_deref(), Some("%FFk"));
        assert_eq!(get(TIMESTAMP).as_deref(), Some("1700000000000"));
        assert_eq!(get("trace").as_deref(), Some("a%0Ab"));
        let msg_id = get("Nats-Msg-Id").unwrap_or_default();
        assert_eq!(
            Scope::default().parse_nats_message_id(&msg_id),
            Some(record.id.clone())
        );
    }

    #[test]
    fn a_header_name_no_server_takes_is_refused_with_the_reason() {
        for name in ["bad name", "a:b", "Nats-Msg-Id", "Pico-Offset", ""] {
            let mut record = Record::new(RecordId::new("t", 0, 1), &b"v"[..]);
            record.headers.push(Header {
                name: name.into(),
                value: b"x".to_vec().into(),
            });
            let why = headers(&Scope::default(), &record).expect_err(name);
            assert!(why.contains("rename the header upstream"), "{why}");
        }
    }
}
