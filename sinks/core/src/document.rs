//! [`DocumentShape`] and [`document_json`]: a record as a JSON document for document stores and
//! search indexes (Elasticsearch, MongoDB, Meilisearch, Quickwit, Doris JSON loads).
//!
//! Payload bytes are never re-encoded on the way: JSON values are carried as raw JSON text, so
//! numbers keep every digit and keys keep their order.

use std::collections::BTreeMap;

use pico_identity::{Scope, columns};
use serde_json::value::RawValue;

use crate::envelope::Envelope;
use crate::record::Record;

/// How a record becomes a document. In a configuration file: `"envelope"` or `"merged"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DocumentShape {
    /// The [`Envelope`]: identity fields, `key`, `value`, `headers`, `timestamp_ms`, with
    /// payloads as `{json|text|base64: …}`. Takes any record and gives back its exact bytes.
    #[default]
    Envelope,
    /// The value's own top-level fields plus the identity fields `pico_id`, `pico_topic`,
    /// `pico_partition`, `pico_offset` (and `pico_timestamp_ms` when the record has one): what
    /// a search index wants to query. The value must be a JSON object without `pico_*` fields;
    /// other records are refused with the reason. Keys and headers are not stored.
    Merged,
}

/// The fields this crate writes next to a merged payload; a payload may not carry them.
pub const RESERVED_PREFIX: &str = columns::RESERVED_PREFIX;

/// The JSON text of `record` as a document of `shape`, with `extra` fields added (a sink's own
/// key field, `@timestamp`, ...). `Err` says why the record cannot become a document.
pub fn document_json(
    scope: &Scope,
    record: &Record,
    shape: DocumentShape,
    extra: &[(&str, serde_json::Value)],
) -> Result<String, String> {
    let mut fields: BTreeMap<String, Box<RawValue>> = match shape {
        DocumentShape::Envelope => {
            let text = serde_json::to_string(&Envelope::from_record(scope, record))
                .map_err(|e| format!("cannot serialize the envelope: {e}"))?;
            if extra.is_empty() {
                return Ok(text);
            }
            serde_json::from_str(&text).map_err(|e| format!("envelope is not an object: {e}"))?
        }
        DocumentShape::Merged => {
            let payload: BTreeMap<String, Box<RawValue>> = serde_json::from_slice(&record.value)
                .map_err(|e| {
                    format!("the merged document shape needs a JSON object value ({e})")
                })?;
            if let Some(key) = payload.keys().find(|k| k.starts_with(RESERVED_PREFIX)) {
                return Err(format!(
                    "the value has a field {key:?}; fields starting with {RESERVED_PREFIX:?} \
                     are reserved for the record identity in the merged document shape"
                ));
            }
            let mut fields = payload;
            let id = &record.id;
            let identity = [
                (columns::ID, raw(&scope.record_text(id))?),
                (columns::TOPIC, raw(&scope.qualified_topic(&id.topic))?),
                (columns::PARTITION, raw(&id.partition)?),
                (columns::OFFSET, raw(&id.offset)?),
            ];
            for (name, value) in identity {
                fields.insert(name.to_owned(), value);
            }
            if let Some(ts) = record.timestamp_ms {
                fields.insert("pico_timestamp_ms".to_owned(), raw(&ts)?);
            }
            fields
        }
    };
    for (name, value) in extra {
        fields.insert((*name).to_owned(), raw(value)?);
    }
    serde_json::to_string(&fields).map_err(|e| format!("cannot serialize the document: {e}"))
}

fn raw<T: serde::Serialize + ?Sized>(value: &T) -> Result<Box<RawValue>, String> {
    serde_json::value::to_raw_value(value).map_err(|e| format!("cannot serialize a field: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pico_identity::{Namespace, RecordId};
    use serde_json::json;

    fn record(value: &str) -> Record {
        Record::new(RecordId::new("orders:eu", 3, 42), value.to_owned())
    }

    #[test]
    fn envelope_shape_is_the_envelope_with_extras() {
        let r = record(r#"{"big":123456789012345678901234567890}"#);
        let plain = document_json(&Scope::default(), &r, DocumentShape::Envelope, &[]).unwrap();
        let envelope: Envelope = serde_json::from_str(&plain).unwrap();
        assert_eq!(
            envelope.to_record(&Scope::default()).unwrap().value,
            r.value
        );
        let with = document_json(
            &Scope::default(),
            &r,
            DocumentShape::Envelope,
            &[("pico_key", json!("k1"))],
        )
        .unwrap();
        assert!(with.contains(r#""pico_key":"k1""#), "{with}");
        // Digits survive: no trip through f64.
        assert!(with.contains("123456789012345678901234567890"), "{with}");
    }

    #[test]
    fn merged_shape_lifts_fields_and_guards_identity() {
        let scope = Scope::new(Some(Namespace::new("prod").unwrap()));
        let mut r = record(r#"{"meter":"m-1","kwh":1.50}"#);
        r.timestamp_ms = Some(7);
        let doc = document_json(&scope, &r, DocumentShape::Merged, &[]).unwrap();
        let v: serde_json::Value = serde_json::from_str(&doc).unwrap();
        assert_eq!(v["meter"], "m-1");
        assert!(doc.contains(r#""kwh":1.50"#), "raw number text kept: {doc}");
        assert_eq!(v["pico_offset"], 42);
        assert_eq!(v["pico_partition"], 3);
        assert_eq!(v["pico_timestamp_ms"], 7);
        assert_eq!(
            scope.parse_record(v["pico_id"].as_str().unwrap()).unwrap(),
            r.id
        );
        for bad in [r#"[1]"#, "not json", r#"{"pico_offset":1}"#] {
            let err = document_json(&scope, &record(bad), DocumentShape::Merged, &[]).unwrap_err();
            assert!(err.contains("merged") || err.contains("reserved"), "{err}");
        }
    }
}
