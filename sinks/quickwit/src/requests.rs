//! Request bodies for Quickwit and the parts of its answers the sink reads.

use serde::Deserialize;
use serde_json::{Value, json};

/// Largest page a search may ask for (Quickwit's default `max_hits` bound).
pub(crate) const MAX_HITS: usize = 10_000;

/// An index id Quickwit accepts, or why not.
pub(crate) fn check_index_id(id: &str) -> Result<(), String> {
    let mut chars = id.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if first_ok && rest_ok && (3..=255).contains(&id.len()) {
        Ok(())
    } else {
        Err(format!(
            "index {id:?} is not a valid Quickwit index id: a letter, then [A-Za-z0-9-_.], 3 to \
             255 characters"
        ))
    }
}

/// The config of an index the sink creates.
pub(crate) fn index_config(index: &str, commit_timeout_secs: u32) -> Value {
    json!({
        "version": "0.8",
        "index_id": index,
        "doc_mapping": {
            "mode": "dynamic",
            "field_mappings": [
                {"name": "pico_id", "type": "text", "tokenizer": "raw"},
                {"name": "pico_topic", "type": "text", "tokenizer": "raw", "fast": true},
                {"name": "pico_partition", "type": "u64", "fast": true},
                {"name": "pico_offset", "type": "u64", "fast": true}
            ]
        },
        "indexing_settings": {"commit_timeout_secs": commit_timeout_secs}
    })
}

fn partition_filter(topic: &str, partition: u32) -> Vec<Value> {
    vec![
        json!({"term": {"pico_topic": {"value": topic}}}),
        json!({"term": {"pico_partition": {"value": partition.to_string()}}}),
    ]
}

/// The partition's document with the highest offset.
pub(crate) fn watermark_query(topic: &str, partition: u32) -> Value {
    json!({
        "size": 1,
        "query": {"bool": {"filter": partition_filter(topic, partition)}},
        "sort": [{"pico_offset": {"order": "desc"}}]
    })
}

/// Documents of the partition with offsets in `first..=last`; `size` 0 counts only.
pub(crate) fn range_query(
    topic: &str,
    partition: u32,
    first: u64,
    last: u64,
    size: usize,
) -> Value {
    let mut filter = partition_filter(topic, partition);
    filter.push(json!({"range": {"pico_offset": {"gte": first, "lte": last}}}));
    json!({
        "size": size,
        "track_total_hits": true,
        "query": {"bool": {"filter": filter}},
        "sort": [{"pico_offset": {"order": "asc"}}]
    })
}

/// An Elasticsearch-compatible search answer.
#[derive(Debug, Deserialize)]
pub(crate) struct SearchAnswer {
    pub hits: Hits,
}

/// Its hits.
#[derive(Debug, Deserialize)]
pub(crate) struct Hits {
    #[serde(default)]
    pub total: Option<Total>,
    #[serde(default)]
    pub hits: Vec<Hit>,
}

/// Total hit count.
#[derive(Debug, Deserialize)]
pub(crate) struct Total {
    pub value: u64,
}

/// One hit.
#[derive(Debug, Deserialize)]
pub(crate) struct Hit {
    #[serde(rename = "_source", default)]
    pub source: Value,
}

impl SearchAnswer {
    /// `pico_offset` of every hit.
    pub(crate) fn offsets(&self) -> Result<Vec<u64>, String> {
        self.hits
            .hits
            .iter()
            .map(|h| {
                h.source
                    .get("pico_offset")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| format!("a hit without a numeric pico_offset: {}", h.source))
            })
            .collect()
    }
}

/// The ingest answer (fields differ between Quickwit versions; all optional).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct IngestAnswer {
    #[serde(default)]
    pub num_rejected_docs: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_and_answers() {
        let q = watermark_query("orders \"eu\"", 3);
        assert_eq!(
            q["query"]["bool"]["filter"][0]["term"]["pico_topic"]["value"],
            "orders \"eu\""
        );
        assert_eq!(
            q["query"]["bool"]["filter"][1]["term"]["pico_partition"]["value"],
            "3"
        );
        assert_eq!(q["sort"][0]["pico_offset"]["order"], "desc");
        let r = range_query("t", 0, 5, 9, 0);
        assert_eq!(
            r["query"]["bool"]["filter"][2]["range"]["pico_offset"]["lte"],
            9
        );
        let answer: SearchAnswer = serde_json::from_str(
            r#"{"took":1,"hits":{"total":{"value":2,"relation":"eq"},"hits":[{"_source":{"pico_offset":7}},{"_source":{"pico_offset":9}}]}}"#,
        )
        .unwrap();
        assert_eq!(answer.offsets().unwrap(), vec![7, 9]);
        assert_eq!(answer.hits.total.unwrap().value, 2);
        assert!(check_index_id("pico-events_1.x").is_ok());
        for bad in ["1abc", "ab", "a b", "a:b"] {
            assert!(check_index_id(bad).is_err(), "{bad}");
        }
        let c = index_config("idx", 5);
        assert_eq!(c["doc_mapping"]["field_mappings"][3]["name"], "pico_offset");
    }
}
