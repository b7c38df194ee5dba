//! The `_bulk` request body and the per-item answer.

use pico_sink::Record;
use pico_sink::kit::document_json;
use serde::Deserialize;

use crate::config::{ElasticsearchSinkConfig, IndexMode};

/// An index or data stream name Elasticsearch accepts, or why not.
pub(crate) fn check_index_name(name: &str) -> Result<(), String> {
    let bad = name.is_empty()
        || name.len() > 255
        || name == "."
        || name == ".."
        || name.starts_with(['-', '_', '+'])
        || name.chars().any(|c| {
            c.is_uppercase()
                || matches!(
                    c,
                    '\\' | '/' | '*' | '?' | '"' | '<' | '>' | '|' | ' ' | ',' | '#' | ':'
                )
        });
    if bad {
        Err(format!(
            "index {name:?} is not a valid Elasticsearch index name: lowercase, at most 255 \
             bytes, none of \\ / * ? \" < > | space , # :, not starting with - _ +"
        ))
    } else {
        Ok(())
    }
}

/// The two NDJSON lines (action and document) of one record.
pub(crate) fn operation(
    config: &ElasticsearchSinkConfig,
    record: &Record,
) -> Result<String, String> {
    let id = config.scope.elasticsearch_id(&record.id);
    let (op, extra) = match config.mode {
        IndexMode::Index => ("index", Vec::new()),
        IndexMode::DataStream => {
            let ts = record
                .timestamp_ms
                .ok_or("data streams need @timestamp and this record has no timestamp")?;
            ("create", vec![("@timestamp", serde_json::Value::from(ts))])
        }
    };
    let action = serde_json::json!({ op: { "_index": config.index, "_id": id } });
    let doc = document_json(&config.scope, record, config.shape, &extra)?;
    Ok(format!("{action}\n{doc}\n"))
}

/// What one bulk item came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item {
    /// A new document.
    Created,
    /// An existing document was replaced (index) or found (create → 409).
    AlreadyPresent,
    /// Transient (429, 5xx): retry the batch.
    Retry(String),
    /// This record cannot be indexed.
    Reject(String),
    /// The index is missing or closed, or access is denied: configuration.
    Fatal(String),
}

#[derive(Deserialize)]
struct BulkAnswer {
    items: Vec<std::collections::HashMap<String, ItemAnswer>>,
}

#[derive(Deserialize)]
struct ItemAnswer {
    status: u16,
    #[serde(default)]
    result: Option<String>,
    #[serde(default)]
    error: Option<ItemError>,
}

#[derive(Deserialize)]
struct ItemError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    reason: Option<String>,
}

/// The items of a bulk answer, in request order; `Err` if the answer is not one of `expected`
/// items.
pub(crate) fn items(body: &str, expected: usize, mode: IndexMode) -> Result<Vec<Item>, String> {
    let answer: BulkAnswer =
        serde_json::from_str(body).map_err(|e| format!("not a bulk answer: {e}"))?;
    if answer.items.len() != expected {
        return Err(format!(
            "bulk answer has {} items for {expected} operations",
            answer.items.len()
        ));
    }
    Ok(answer
        .items
        .into_iter()
        .map(|item| {
            let Some(a) = item.into_values().next() else {
                return Item::Retry("empty bulk item".into());
            };
            let reason = a
                .error
                .as_ref()
                .map(|e| {
                    format!(
                        "{} {}: {}",
                        a.status,
                        e.kind,
                        e.reason.as_deref().unwrap_or("")
                    )
                })
                .unwrap_or_else(|| a.status.to_string());
            let kind = a.error.as_ref().map(|e| e.kind.as_str()).unwrap_or("");
            match a.status {
                200..=299 if a.result.as_deref() == Some("created") => Item::Created,
                200..=299 => Item::AlreadyPresent,
                409 if mode == IndexMode::DataStream => Item::AlreadyPresent,
                // A concurrent writer of the same _id: the retry replaces with the same content.
                409 => Item::Retry(reason),
                429 | 500..=599 => Item::Retry(reason),
                404 if kind == "index_not_found_exception" => Item::Fatal(format!(
                    "{reason} — create the index (or allow auto-creation)"
                )),
                401 | 403 => Item::Fatal(format!(
                    "{reason} — check the credentials and index privileges"
                )),
                400 if matches!(kind, "index_closed_exception" | "cluster_block_exception") => {
                    Item::Retry(reason)
                }
                _ => Item::Reject(reason),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pico_sink::identity::RecordId;

    #[test]
    fn operations_carry_the_identity_as_id() {
        let mut config = ElasticsearchSinkConfig::new("http://h", "events");
        let mut record = Record::new(RecordId::new("orders", 2, 9), r#"{"a":1}"#);
        let text = operation(&config, &record).unwrap();
        let mut lines = text.lines();
        let action: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
        assert_eq!(action["index"]["_id"], "orders:2:9");
        assert_eq!(action["index"]["_index"], "events");
        let doc: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
        assert_eq!(doc["value"]["json"]["a"], 1);
        assert!(text.ends_with('\n') && lines.next().is_none());

        config.mode = IndexMode::DataStream;
        assert!(
            operation(&config, &record)
                .unwrap_err()
                .contains("@timestamp")
        );
        record.timestamp_ms = Some(1_700_000_000_000);
        let text = operation(&config, &record).unwrap();
        assert!(text.starts_with(r#"{"create":"#), "{text}");
        assert!(text.contains(r#""@timestamp":1700000000000"#), "{text}");
    }

    #[test]
    fn item_statuses() {
        let body = r#"{"errors":true,"items":[
            {"index":{"status":201,"result":"created"}},
            {"index":{"status":200,"result":"updated"}},
            {"index":{"status":400,"error":{"type":"document_parsing_exception","reason":"failed to parse field [value.json.n]"}}},
            {"index":{"status":429,"error":{"type":"es_rejected_execution_exception","reason":"queue full"}}},
            {"index":{"status":404,"error":{"type":"index_not_found_exception","reason":"no such index [x]"}}}
        ]}"#;
        let got = items(body, 5, IndexMode::Index).unwrap();
        assert_eq!(got[0], Item::Created);
        assert_eq!(got[1], Item::AlreadyPresent);
        assert!(matches!(&got[2], Item::Reject(r) if r.contains("document_parsing_exception")));
        assert!(matches!(got[3], Item::Retry(_)));
        assert!(matches!(got[4], Item::Fatal(_)));
        let conflict = r#"{"items":[{"create":{"status":409,"error":{"type":"version_conflict_engine_exception"}}}]}"#;
        assert_eq!(
            items(conflict, 1, IndexMode::DataStream).unwrap(),
            vec![Item::AlreadyPresent]
        );
        assert!(items(conflict, 2, IndexMode::DataStream).is_err());
        assert!(check_index_name("events-2026").is_ok());
        for bad in ["Events", "_x", "a b", "a:b", ""] {
            assert!(check_index_name(bad).is_err(), "{bad}");
        }
    }
}
