//! Request bodies for Quickwit and the parts of its answers the sink reads.

use pico_sink::identity::columns;
use serde::Deserialize;
use serde_json::{Value, json};

/// Most distinct offsets one presence check asks for (a terms aggregation's bucket count).
pub(crate) const MAX_BUCKETS: usize = 10_000;

/// The field holding [`pico_sink::identity::Scope::term_partition_key`].
pub(crate) const PARTITION_KEY: &str = "pico_partition_key";

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
                {"name": columns::ID, "type": "text", "tokenizer": "raw"},
                {"name": columns::TOPIC, "type": "text", "tokenizer": "raw", "fast": true},
                {"name": PARTITION_KEY, "type": "text", "tokenizer": "raw", "fast": true},
                {"name": columns::PARTITION, "type": "u64", "fast": true},
                {"name": columns::OFFSET, "type": "u64", "fast": true}
            ]
        },
        "indexing_settings": {"commit_timeout_secs": commit_timeout_secs}
    })
}

/// Filters on one term: the partition's key. (Not `pico_topic`: Quickwit's raw tokenizer drops
/// tokens of 255 bytes or more, so a long topic could never be matched.)
fn partition_filter(partition_key: &str) -> Vec<Value> {
    vec![json!({"term": {PARTITION_KEY: {"value": partition_key}}})]
}

/// The partition's document with the highest offset.
pub(crate) fn watermark_query(partition_key: &str) -> Value {
    json!({
        "size": 1,
        "query": {"bool": {"filter": partition_filter(partition_key)}},
        "sort": [{columns::OFFSET: {"order": "desc"}}]
    })
}

/// The distinct offsets of the partition in `first..=last` (at most `buckets`), as a terms
/// aggregation: copies of one offset (a second writer's) count once, so they cannot hide other
/// offsets as a page of hits would.
pub(crate) fn offsets_query(partition_key: &str, first: u64, last: u64, buckets: usize) -> Value {
    let mut filter = partition_filter(partition_key);
    filter.push(json!({"range": {columns::OFFSET: {"gte": first, "lte": last}}}));
    json!({
        "size": 0,
        "query": {"bool": {"filter": filter}},
        "aggs": {"offsets": {"terms": {"field": columns::OFFSET, "size": buckets}}}
    })
}

/// An Elasticsearch-compatible search answer.
#[derive(Debug, Deserialize)]
pub(crate) struct SearchAnswer {
    pub hits: Hits,
    #[serde(default)]
    pub aggregations: Option<Aggregations>,
}

/// The `offsets` terms aggregation.
#[derive(Debug, Deserialize)]
pub(crate) struct Aggregations {
    pub offsets: Buckets,
}

/// Its buckets.
#[derive(Debug, Deserialize)]
pub(crate) struct Buckets {
    #[serde(default)]
    pub buckets: Vec<Bucket>,
}

/// One distinct offset.
#[derive(Debug, Deserialize)]
pub(crate) struct Bucket {
    /// A number (some versions answer a float for u64 fast fields).
    pub key: Value,
}

/// Its hits.
#[derive(Debug, Deserialize)]
pub(crate) struct Hits {
    #[serde(default)]
    pub hits: Vec<Hit>,
}

/// One hit.
#[derive(Debug, Deserialize)]
pub(crate) struct Hit {
    #[serde(rename = "_source", default)]
    pub source: Value,
}

impl SearchAnswer {
    /// The distinct offsets of the `offsets` aggregation.
    pub(crate) fn distinct_offsets(&self) -> Result<Vec<u64>, String> {
        let Some(aggs) = &self.aggregations else {
            return Err("the answer has no offsets aggregation".into());
        };
        aggs.offsets
            .buckets
            .iter()
            .map(|b| {
                b.key
                    .as_u64()
                    .or_else(|| {
                        b.key
                            .as_f64()
                            .filter(|f| f.fract() == 0.0)
                            .map(|f| f as u64)
                    })
                    .ok_or_else(|| format!("an offset bucket key that is not a u64: {}", b.key))
            })
            .collect()
    }

    /// `pico_offset` of every hit.
    pub(crate) fn offsets(&self) -> Result<Vec<u64>, String> {
        self.hits
            .hits
            .iter()
            .map(|h| {
                h.source
                    .get(columns::OFFSET)
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
        let q = watermark_query("orders \"eu\":3");
        assert_eq!(
            q["query"]["bool"]["filter"][0]["term"][PARTITION_KEY]["value"],
            "orders \"eu\":3"
        );
        assert_eq!(q["sort"][0]["pico_offset"]["order"], "desc");
        let r = offsets_query("t:0", 5, 9, 5);
        assert_eq!(
            r["query"]["bool"]["filter"][1]["range"]["pico_offset"]["lte"],
            9
        );
        assert_eq!(r["aggs"]["offsets"]["terms"]["size"], 5);
        let agg: SearchAnswer = serde_json::from_str(
            r#"{"hits":{"hits":[]},"aggregations":{"offsets":{"buckets":[{"key":5,"doc_count":2},{"key":7.0,"doc_count":1}]}}}"#,
        )
        .unwrap();
        assert_eq!(agg.distinct_offsets().unwrap(), vec![5, 7]);
        let answer: SearchAnswer = serde_json::from_str(
            r#"{"took":1,"hits":{"total":{"value":2,"relation":"eq"},"hits":[{"_source":{"pico_offset":7}},{"_source":{"pico_offset":9}}]}}"#,
        )
        .unwrap();
        assert_eq!(answer.offsets().unwrap(), vec![7, 9]);
        assert!(check_index_id("pico-events_1.x").is_ok());
        for bad in ["1abc", "ab", "a b", "a:b"] {
            assert!(check_index_id(bad).is_err(), "{bad}");
        }
        let c = index_config("idx", 5);
        assert_eq!(c["doc_mapping"]["field_mappings"][2]["name"], PARTITION_KEY);
        assert_eq!(c["doc_mapping"]["field_mappings"][4]["name"], "pico_offset");
    }
}
