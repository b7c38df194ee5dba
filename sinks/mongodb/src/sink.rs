//! [`MongoSink`].

use async_trait::async_trait;
use mongodb::bson::{Bson, Document, doc};
use mongodb::error::ErrorKind;
use mongodb::{Client, Database};
use pico_sink::kit::{convert_records, document_json, error_chain};
use pico_sink::{
    Batch, Claim, Description, Outcome, RejectedRecord, Scenario, Sink, SinkError, WriteReport,
};
use tokio::sync::OnceCell;
use tracing::warn;

use crate::bson_convert::to_document;
use crate::config::MongoSinkConfig;

/// Largest BSON document MongoDB stores.
const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;
/// More than the bytes a statement adds around its document and `_id`s (element headers, the
/// `q`, `u`, `upsert` keys and the boolean).
const STATEMENT_OVERHEAD: usize = 64;
/// Bytes of statements per command (well under the 48 MB message limit).
const MAX_COMMAND_BYTES: usize = 8 * 1024 * 1024;

/// Server error codes that may succeed when retried (network, elections, shutdown).
const TRANSIENT_CODES: &[i32] = &[
    6, 7, 89, 91, 189, 262, 9001, 10107, 11000, 11600, 11602, 13435, 13436, 50, 112,
];

/// Replaces documents keyed by the record identity, with upsert; see the crate docs. One
/// instance (one client and its connection pool) serves every partition of a process.
pub struct MongoSink {
    config: MongoSinkConfig,
    db: OnceCell<Database>,
}

/// A MongoDB error in the sink contract.
fn classify(e: &mongodb::error::Error, what: &str) -> SinkError {
    let message = format!("{what}: {}", error_chain(e));
    let error = match e.kind.as_ref() {
        ErrorKind::Authentication { .. } => {
            SinkError::fatal(format!("{message} — check the credentials in the uri"))
        }
        ErrorKind::InvalidArgument { .. } => SinkError::fatal(message),
        ErrorKind::Command(c) if matches!(c.code, 13 | 18 | 8000) => SinkError::fatal(format!(
            "{message} — the user needs readWrite on the database"
        )),
        _ => match pico_sink::kit::unhealable_connect_failure(&message) {
            Some(advice) => SinkError::fatal(format!("{message} — {advice}")),
            None => SinkError::retryable(message),
        },
    };
    error.with_source(e.clone())
}

impl MongoSink {
    /// A sink; the connection opens in [`Sink::open`].
    pub fn new(config: MongoSinkConfig) -> Self {
        Self {
            config,
            db: OnceCell::new(),
        }
    }

    /// A sink on a client the caller already has (its pool is shared), built with the
    /// [`mongodb`](crate::mongodb) crate this one re-exports. The configuration comes from
    /// [`MongoSinkConfig::for_collection`]: a `uri` in it would not be used, and is refused.
    pub fn with_client(client: &Client, config: MongoSinkConfig) -> Result<Self, SinkError> {
        pico_sink::kit::refuse_unused_setting(
            "uri",
            &config.uri,
            "MongoSink::with_client",
            "MongoSinkConfig::for_collection(database, collection)",
        )?;
        let db = client.database(&config.database);
        Ok(Self {
            config,
            db: OnceCell::new_with(Some(db)),
        })
    }

    async fn database(&self) -> Result<&Database, SinkError> {
        self.db
            .get_or_try_init(|| async {
                if self.config.uri.trim().is_empty() {
                    return Err(SinkError::fatal(
                        "uri is empty: name the deployment (mongodb://host:27017), or pass a \
                         mongodb::Client of your own with MongoSink::with_client",
                    ));
                }
                let client = Client::with_uri_str(&self.config.uri).await.map_err(|e| {
                    match e.kind.as_ref() {
                        ErrorKind::InvalidArgument { .. } => SinkError::fatal(format!(
                            "uri is not a valid MongoDB connection string: {}",
                            error_chain(&e)
                        ))
                        .with_source(e),
                        _ => classify(&e, "connecting"),
                    }
                })?;
                Ok(client.database(&self.config.database))
            })
            .await
    }

    /// The statement for one record, `{q: {_id}, u: doc, upsert: true}`, and an upper bound of
    /// its encoded size (the document's size plus the `_id` twice and the statement's keys), so
    /// commands are cut without encoding every statement again.
    fn statement(&self, record: &pico_sink::Record) -> Result<(Document, usize), String> {
        let text = document_json(&self.config.scope, record, self.config.shape, &[])?;
        let value: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&text).map_err(|e| format!("document: {e}"))?;
        let mut document = to_document(value)?;
        let id = self.config.scope.record_text(&record.id);
        document.insert("_id", id.clone());
        let size = mongodb::bson::to_vec(&document)
            .map_err(|e| format!("cannot encode BSON: {e}"))?
            .len();
        if size > MAX_DOCUMENT_BYTES {
            return Err(format!(
                "document is {size} bytes; MongoDB stores at most 16 MiB"
            ));
        }
        let bound = size + 2 * id.len() + STATEMENT_OVERHEAD;
        Ok((
            doc! { "q": { "_id": id }, "u": document, "upsert": true },
            bound,
        ))
    }
}

/// What one `update` command did.
#[derive(Default)]
struct CommandOutcome {
    report: WriteReport,
    /// (index in the command, code, message)
    errors: Vec<(usize, i32, String)>,
    retry: Option<String>,
}

fn read_answer(answer: &Document) -> CommandOutcome {
    let mut out = CommandOutcome::default();
    let n = answer
        .get("n")
        .and_then(Bson::as_i64)
        .or_else(|| answer.get_i32("n").ok().map(i64::from))
        .unwrap_or(0) as u64;
    let upserted = answer.get_array("upserted").map(|a| a.len()).unwrap_or(0) as u64;
    out.report = WriteReport {
        written: upserted,
        already_present: n.saturating_sub(upserted),
    };
    if let Ok(errors) = answer.get_array("writeErrors") {
        for e in errors.iter().filter_map(Bson::as_document) {
            let index = e.get_i32("index").unwrap_or(-1).max(0) as usize;
            let code = e.get_i32("code").unwrap_or(0);
            let message = e.get_str("errmsg").unwrap_or("").to_owned();
            out.errors.push((index, code, message));
        }
    }
    if let Ok(wc) = answer.get_document("writeConcernError") {
        out.retry = Some(format!(
            "write concern error {}: {}",
            wc.get_i32("code").unwrap_or(0),
            wc.get_str("errmsg").unwrap_or("")
        ));
    }
    out
}

#[async_trait]
impl Sink for MongoSink {
    async fn open(&self) -> Result<(), SinkError> {
        let db = self.database().await?;
        db.run_command(doc! { "ping": 1 })
            .await
            .map_err(|e| classify(&e, "ping"))?;
        Ok(())
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let records = batch.records();
        let (statements, mut rejected) = convert_records(batch, |i, r| {
            self.statement(r).map(|(s, bytes)| (i, s, bytes))
        });
        let collection = self.config.collection.clone();
        let majority = self.config.majority;
        let max_statements = self.config.max_statements.max(1);
        let db = self.database().await?.clone();
        let mut total = WriteReport::default();
        let mut retry: Option<String> = None;
        let mut start = 0;
        while start < statements.len() {
            // Cut commands by count and by bytes.
            let mut end = start;
            let mut bytes = 0;
            while end < statements.len() && end - start < max_statements {
                let size = statements[end].2;
                if end > start && bytes + size > MAX_COMMAND_BYTES {
                    break;
                }
                bytes += size;
                end += 1;
            }
            let part = &statements[start..end];
            let updates: Vec<Bson> = part
                .iter()
                .map(|(_, s, _)| Bson::Document(s.clone()))
                .collect();
            let mut command = doc! { "update": &collection, "updates": updates, "ordered": false };
            if majority {
                command.insert("writeConcern", doc! { "w": "majority" });
            }
            let answer = db
                .run_command(command)
                .await
                .map_err(|e| classify(&e, &format!("update {collection}")))?;
            let outcome = read_answer(&answer);
            total.written += outcome.report.written;
            total.already_present += outcome.report.already_present;
            if let Some(m) = outcome.retry {
                retry.get_or_insert(m);
            }
            for (index, code, message) in outcome.errors {
                let Some((record_index, _, _)) = part.get(index) else {
                    retry.get_or_insert(format!(
                        "write error for unknown statement {index}: {message}"
                    ));
                    continue;
                };
                let id = &records[*record_index].id;
                if TRANSIENT_CODES.contains(&code) {
                    retry.get_or_insert(format!("{id}: E{code} {message}"));
                } else {
                    warn!(record = %id, code, message, "MongoDB refused a document");
                    rejected.push(RejectedRecord::new(
                        id.clone(),
                        format!("E{code}: {message}"),
                    ));
                }
            }
            start = end;
        }
        if let Some(message) = retry {
            // Every statement is an idempotent replace-with-upsert: the batch is sent again.
            return Err(SinkError::retryable(message));
        }
        Ok(Outcome::new(total, rejected))
    }

    fn describe(&self) -> Description {
        Description::new(
            "mongodb",
            "unordered update command of replace-with-upsert statements keyed by _id = \
             [ns/]topic:partition:offset; E11000 races retried",
            Claim::NoVisibleDuplicate,
        )
        .telling_already_present()
        .with_claim(Scenario::ReplayRebatched, Claim::NoVisibleDuplicate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pico_sink::Record;
    use pico_sink::identity::RecordId;

    /// The driver builds a client without connecting: the refusals need no server.
    #[tokio::test]
    async fn a_uri_beside_the_callers_client_is_refused_and_an_empty_one_without_it() {
        let client = Client::with_uri_str("mongodb://127.0.0.1:1").await.unwrap();
        let e = MongoSink::with_client(
            &client,
            MongoSinkConfig::new("mongodb://app:hunter2@db:27017", "db", "c"),
        )
        .err()
        .unwrap();
        let text = e.to_string();
        println!("{text}");
        assert!(e.is_fatal(), "{text}");
        assert!(
            text.contains("MongoSinkConfig::for_collection(database, collection)")
                && !text.contains("hunter2"),
            "{text}"
        );
        assert!(
            MongoSink::with_client(&client, MongoSinkConfig::for_collection("db", "c")).is_ok()
        );
        let e = MongoSink::new(MongoSinkConfig::for_collection("db", "c"))
            .database()
            .await
            .err()
            .unwrap();
        assert!(
            e.is_fatal() && e.to_string().contains("uri is empty"),
            "{e}"
        );
    }

    #[test]
    fn statements_and_answers() {
        let sink = MongoSink::new(MongoSinkConfig::new("mongodb://127.0.0.1", "db", "c"));
        let (s, bound) = sink
            .statement(&Record::new(RecordId::new("orders", 1, 5), r#"{"a":1}"#))
            .unwrap();
        let encoded = mongodb::bson::to_vec(&s).unwrap().len();
        assert!(
            encoded <= bound,
            "size bound {bound} below the encoded {encoded}"
        );
        assert_eq!(
            s.get_document("q").unwrap().get_str("_id").unwrap(),
            "orders:1:5"
        );
        let u = s.get_document("u").unwrap();
        assert_eq!(u.get_str("_id").unwrap(), "orders:1:5");
        assert_eq!(u.get_i64("pico_offset").unwrap(), 5);
        assert!(s.get_bool("upsert").unwrap());
        let extreme = sink.statement(&Record::new(RecordId::new("orders", 1, u64::MAX), "x"));
        assert!(extreme.unwrap_err().contains("i64"));

        let answer = doc! {
            "n": 3, "nModified": 1, "ok": 1.0,
            "upserted": [{"index": 0, "_id": "a"}, {"index": 2, "_id": "c"}],
            "writeErrors": [{"index": 1, "code": 11000, "errmsg": "dup"}],
        };
        let out = read_answer(&answer);
        assert_eq!((out.report.written, out.report.already_present), (2, 1));
        assert_eq!(out.errors, vec![(1, 11000, "dup".to_owned())]);
        assert!(out.retry.is_none());
    }
}
