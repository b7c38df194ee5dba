//! Meilisearch answers: the enqueued task, and what a finished task means.

use serde::Deserialize;

/// `202` answer to a document write.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Enqueued {
    pub task_uid: u64,
}

/// A task as `GET /tasks/{uid}` shows it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Task {
    pub status: String,
    #[serde(default)]
    pub details: Option<TaskDetails>,
    #[serde(default)]
    pub error: Option<MeiliError>,
}

/// Counts of a document task.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskDetails {
    #[serde(default)]
    pub indexed_documents: Option<u64>,
}

/// Meilisearch's error object (in failed tasks and in 4xx answers).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct MeiliError {
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub code: String,
    #[serde(rename = "type", default)]
    pub kind: String,
}

/// What an error means for the batch.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A document in the range is refused: split the range.
    Refused(String),
    /// Try again later.
    Retry(String),
    /// Configuration.
    Fatal(String),
}

impl MeiliError {
    pub(crate) fn verdict(&self, primary_key: &str) -> Verdict {
        let text = format!("{} ({}): {}", self.code, self.kind, self.message);
        match (self.kind.as_str(), self.code.as_str()) {
            (_, code)
                if code.starts_with("index_primary_key")
                    || code == "primary_key_inference_failed" =>
            {
                Verdict::Fatal(format!(
                    "{text} — the index must have primary key {primary_key:?}: write to a new \
                     index, or set primary_key to the index's key"
                ))
            }
            ("auth", _) => Verdict::Fatal(format!(
                "{text} — the API key needs documents.add and tasks.get on this index"
            )),
            (_, "index_not_found" | "invalid_index_uid") => {
                Verdict::Fatal(format!("{text} — check the index uid"))
            }
            (_, "payload_too_large" | "malformed_payload" | "missing_payload") => {
                Verdict::Refused(text)
            }
            (_, code) if code.contains("document") => Verdict::Refused(text),
            ("invalid_request", _) => Verdict::Refused(text),
            _ => Verdict::Retry(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(code: &str, kind: &str) -> MeiliError {
        MeiliError {
            message: "m".into(),
            code: code.into(),
            kind: kind.into(),
        }
    }

    #[test]
    fn task_errors_map_to_the_contract() {
        assert!(matches!(
            err("invalid_document_id", "invalid_request").verdict("k"),
            Verdict::Refused(_)
        ));
        assert!(matches!(
            err("document_fields_limit", "invalid_request").verdict("k"),
            Verdict::Refused(_)
        ));
        assert!(matches!(
            err("payload_too_large", "invalid_request").verdict("k"),
            Verdict::Refused(_)
        ));
        assert!(
            matches!(err("index_primary_key_already_exists", "invalid_request").verdict("k"), Verdict::Fatal(m) if m.contains("\"k\""))
        );
        assert!(matches!(
            err("invalid_api_key", "auth").verdict("k"),
            Verdict::Fatal(_)
        ));
        assert!(matches!(
            err("internal", "internal").verdict("k"),
            Verdict::Retry(_)
        ));
        assert!(matches!(
            err("no_space_left_on_device", "system").verdict("k"),
            Verdict::Retry(_)
        ));
        let task: Task = serde_json::from_str(
            r#"{"uid":4,"status":"succeeded","type":"documentAdditionOrUpdate","details":{"receivedDocuments":3,"indexedDocuments":3},"error":null}"#,
        )
        .unwrap();
        assert_eq!(task.details.unwrap().indexed_documents, Some(3));
        let e: Enqueued =
            serde_json::from_str(r#"{"taskUid":12,"indexUid":"x","status":"enqueued"}"#).unwrap();
        assert_eq!(e.task_uid, 12);
    }
}
