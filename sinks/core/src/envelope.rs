//! [`Envelope`]: the JSON form of a record for text destinations (stdout, HTTP bodies).
//!
//! The identity travels with every record (`pico_id` plus the three `pico_*` fields), so a
//! consumer can dedupe. Payloads are lossless and unambiguous: a value that is valid JSON is
//! embedded verbatim as `{"json": …}`, other UTF-8 as `{"text": …}`, anything else as `{"base64": …}`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use pico_identity::{RecordId, Scope};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use thiserror::Error;

use crate::record::{Header, Record};

/// A payload (key, value or header value) in JSON.
///
/// Every form gives back exactly the bytes it was made from: JSON is embedded verbatim (only
/// when it has no surrounding whitespace and no line breaks, so JSON lines stay one line).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Payload {
    /// The bytes were a single-line JSON document, embedded as is.
    Json(Box<RawValue>),
    /// The bytes were UTF-8 but not (single-line) JSON.
    Text(String),
    /// Anything else, base64 (standard alphabet, padded).
    Base64(String),
}

impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Payload::Json(a), Payload::Json(b)) => a.get() == b.get(),
            (Payload::Text(a), Payload::Text(b)) | (Payload::Base64(a), Payload::Base64(b)) => {
                a == b
            }
            _ => false,
        }
    }
}

impl Payload {
    /// Chooses the form for `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        match std::str::from_utf8(bytes) {
            Ok(text) if embeddable(text) => match RawValue::from_string(text.to_owned()) {
                Ok(raw) => Payload::Json(raw),
                Err(_) => Payload::Text(text.to_owned()),
            },
            Ok(text) => Payload::Text(text.to_owned()),
            Err(_) => Payload::Base64(STANDARD.encode(bytes)),
        }
    }

    /// The base64 form of `bytes`, whatever they hold (for destinations that cannot store some
    /// text, such as NUL characters).
    pub fn base64_of(bytes: &[u8]) -> Self {
        Payload::Base64(STANDARD.encode(bytes))
    }

    /// Exactly the bytes the payload was made from.
    pub fn to_bytes(&self) -> Result<Bytes, EnvelopeError> {
        Ok(match self {
            Payload::Json(v) => Bytes::copy_from_slice(v.get().as_bytes()),
            Payload::Text(t) => Bytes::from(t.clone()),
            Payload::Base64(b) => Bytes::from(STANDARD.decode(b).map_err(EnvelopeError::Base64)?),
        })
    }
}

/// JSON is embedded only if it has no surrounding whitespace and no line breaks.
fn embeddable(text: &str) -> bool {
    !text.is_empty() && text.trim() == text && !text.contains(['\n', '\r'])
}

/// A header in JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvelopeHeader {
    /// Header name.
    pub name: String,
    /// Header value.
    pub value: Payload,
}

impl EnvelopeHeader {
    /// The envelope form of every header: `[{"name": …, "value": {json|text|base64: …}}]`.
    pub fn all_of(headers: &[Header]) -> Vec<EnvelopeHeader> {
        headers
            .iter()
            .map(|h| EnvelopeHeader {
                name: h.name.clone(),
                value: Payload::from_bytes(&h.value),
            })
            .collect()
    }

    /// The envelope form of `headers` as JSON text, `None` when there are none (what table
    /// destinations store in their `headers` column).
    pub fn json_text(headers: &[Header]) -> Option<String> {
        if headers.is_empty() {
            return None;
        }
        serde_json::to_string(&Self::all_of(headers)).ok()
    }
}

/// One record as a JSON object with its identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// The canonical identity text, namespace included ([`Scope::record_text`]).
    pub pico_id: String,
    /// Topic, namespace-qualified ([`Scope::qualified_topic`]).
    pub pico_topic: String,
    /// Partition.
    pub pico_partition: u32,
    /// Offset.
    pub pico_offset: u64,
    /// Key, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<Payload>,
    /// Value.
    pub value: Payload,
    /// Headers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<EnvelopeHeader>,
    /// Timestamp, ms since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp_ms: Option<i64>,
}

/// Why an envelope could not be read back.
#[derive(Debug, Error)]
pub enum EnvelopeError {
    /// Not JSON of the envelope's shape.
    #[error("not an envelope: {0}")]
    Json(serde_json::Error),
    /// A base64 payload that does not decode.
    #[error("bad base64 payload: {0}")]
    Base64(base64::DecodeError),
    /// `pico_id` does not parse in the reader's scope.
    #[error("bad pico_id: {0}")]
    Identity(pico_identity::IdentityError),
}

impl Envelope {
    /// The envelope of `record` in `scope`.
    pub fn from_record(scope: &Scope, record: &Record) -> Self {
        Self {
            pico_id: scope.record_text(&record.id),
            pico_topic: scope.qualified_topic(&record.id.topic).into_owned(),
            pico_partition: record.id.partition,
            pico_offset: record.id.offset,
            key: record.key.as_deref().map(Payload::from_bytes),
            value: Payload::from_bytes(&record.value),
            headers: EnvelopeHeader::all_of(&record.headers),
            timestamp_ms: record.timestamp_ms,
        }
    }

    /// The record identity, parsed from `pico_id` in `scope`.
    pub fn record_id(&self, scope: &Scope) -> Result<RecordId, EnvelopeError> {
        scope
            .parse_record(&self.pico_id)
            .map_err(EnvelopeError::Identity)
    }

    /// The record back.
    pub fn to_record(&self, scope: &Scope) -> Result<Record, EnvelopeError> {
        Ok(Record {
            id: self.record_id(scope)?,
            key: self.key.as_ref().map(Payload::to_bytes).transpose()?,
            value: self.value.to_bytes()?,
            headers: self
                .headers
                .iter()
                .map(|h| {
                    Ok(Header {
                        name: h.name.clone(),
                        value: h.value.to_bytes()?,
                    })
                })
                .collect::<Result<_, EnvelopeError>>()?,
            timestamp_ms: self.timestamp_ms,
        })
    }
}
