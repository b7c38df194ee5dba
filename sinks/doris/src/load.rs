//! The Stream Load body (JSON lines, one row per record) and what an answer means.

use pico_sink::Record;
use pico_sink::identity::{Scope, columns};
use pico_sink::kit::EnvelopeHeader;
use serde::Deserialize;
use serde_json::json;

fn text<'a>(bytes: &'a [u8], what: &str) -> Result<&'a str, String> {
    std::str::from_utf8(bytes).map_err(|e| {
        format!("the {what} is not UTF-8 ({e}); Doris STRING columns over a JSON load take text")
    })
}

/// One JSON line for `record`.
pub(crate) fn row(scope: &Scope, record: &Record) -> Result<String, String> {
    let value = text(&record.value, "value")?;
    let key = record.key.as_deref().map(|k| text(k, "key")).transpose()?;
    let headers = EnvelopeHeader::json_text(&record.headers);
    let row = json!({
        columns::TOPIC: scope.qualified_topic(&record.id.topic),
        columns::PARTITION: record.id.partition,
        // As text: LARGEINT takes the whole u64 range, JSON numbers above i64 may not.
        columns::OFFSET: record.id.offset.to_string(),
        columns::RECORD_KEY: key,
        columns::VALUE: value,
        columns::HEADERS: headers,
        columns::TIMESTAMP: record.timestamp_ms,
    });
    Ok(row.to_string())
}

/// A Stream Load answer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct LoadAnswer {
    pub status: String,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub number_loaded_rows: Option<u64>,
    #[serde(default)]
    pub number_filtered_rows: Option<u64>,
    #[serde(default)]
    pub existing_job_status: Option<String>,
    #[serde(rename = "ErrorURL", default)]
    pub error_url: Option<String>,
}

/// What a load came to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LoadOutcome {
    /// Loaded (or committed and publishing): rows loaded.
    Loaded(u64),
    /// The label already finished: the batch is there.
    AlreadyLoaded,
    /// The label is held by a load still running: ask again shortly.
    Running,
    /// Doris filtered rows of this range: split it.
    Refused(String),
    /// Transient.
    Retry(String),
    /// Configuration.
    Fatal(String),
}

impl LoadAnswer {
    pub(crate) fn outcome(&self, rows: usize) -> LoadOutcome {
        let message = self.message.clone().unwrap_or_default();
        let lower = message.to_ascii_lowercase();
        match self.status.as_str() {
            // "Publish Timeout": committed, visible once published; a replay finds the label.
            "Success" | "Publish Timeout" => {
                LoadOutcome::Loaded(self.number_loaded_rows.unwrap_or(rows as u64))
            }
            "Label Already Exists" => match self.existing_job_status.as_deref() {
                Some("FINISHED" | "VISIBLE" | "COMMITTED") => LoadOutcome::AlreadyLoaded,
                _ => LoadOutcome::Running,
            },
            _ if self.number_filtered_rows.unwrap_or(0) > 0
                || lower.contains("too many filtered rows")
                || lower.contains("data_quality") =>
            {
                let url = self
                    .error_url
                    .as_deref()
                    .map(|u| format!(" (rows: {u})"))
                    .unwrap_or_default();
                LoadOutcome::Refused(format!("Doris filtered rows: {message}{url}"))
            }
            _ if lower.contains("unknown table")
                || lower.contains("unknown database")
                || lower.contains("does not exist")
                || lower.contains("access denied") =>
            {
                LoadOutcome::Fatal(format!(
                    "{message} — check database, table and user (or set create_table)"
                ))
            }
            _ => LoadOutcome::Retry(format!("{}: {message}", self.status)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pico_sink::identity::RecordId;

    fn answer(text: &str) -> LoadAnswer {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn rows_are_text_and_refuse_binary() {
        let mut r = Record::new(RecordId::new("orders", 1, u64::MAX), r#"{"a":1}"#);
        r.key = Some("k".into());
        let line = row(&Scope::default(), &r).unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["pico_offset"], u64::MAX.to_string());
        assert_eq!(v["value"], r#"{"a":1}"#);
        assert_eq!(v["key"], "k");
        assert!(v["headers"].is_null());
        let binary = Record::new(RecordId::new("orders", 1, 2), vec![0xff, 0xfe]);
        assert!(
            row(&Scope::default(), &binary)
                .unwrap_err()
                .contains("UTF-8")
        );
    }

    #[test]
    fn answers_map_to_outcomes() {
        assert_eq!(
            answer(r#"{"TxnId":1,"Label":"l","Status":"Success","NumberLoadedRows":5}"#).outcome(5),
            LoadOutcome::Loaded(5)
        );
        assert_eq!(
            answer(r#"{"Status":"Label Already Exists","ExistingJobStatus":"FINISHED"}"#)
                .outcome(5),
            LoadOutcome::AlreadyLoaded
        );
        assert_eq!(
            answer(r#"{"Status":"Label Already Exists","ExistingJobStatus":"RUNNING"}"#).outcome(5),
            LoadOutcome::Running
        );
        assert!(matches!(
            answer(r#"{"Status":"Fail","Message":"[DATA_QUALITY_ERROR]too many filtered rows","NumberFilteredRows":1,"ErrorURL":"http://be/x"}"#).outcome(5),
            LoadOutcome::Refused(m) if m.contains("http://be/x")
        ));
        assert!(matches!(
            answer(
                r#"{"Status":"Fail","Message":"errCode = 2, detailMessage = Unknown table 't'"}"#
            )
            .outcome(5),
            LoadOutcome::Fatal(_)
        ));
        assert!(matches!(
            answer(r#"{"Status":"Fail","Message":"tablet writer write failed"}"#).outcome(5),
            LoadOutcome::Retry(_)
        ));
    }
}
