//! Request shape against an in-process listener playing Meilisearch's task queue: `consume`
//! returns only after the task finished, and a task failed by one document is narrowed down to
//! that record. A unit test of the exchange only; Meilisearch itself is verified by the
//! conformance suite against a real server.

use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use pico_sink::identity::RecordId;
use pico_sink::{Batch, Record, Sink};
use pico_sink_meilisearch::{MeilisearchSink, MeilisearchSinkConfig};
use serde_json::{Value, json};

#[derive(Default)]
struct Queue {
    /// Per task: its documents and how often it was polled.
    tasks: Vec<(Vec<Value>, u32)>,
    primary_keys: Vec<String>,
}

type Shared = Arc<Mutex<Queue>>;

async fn add(
    State(q): State<Shared>,
    Path(_index): Path<String>,
    Query(params): Query<std::collections::HashMap<String, String>>,
    Json(docs): Json<Vec<Value>>,
) -> (StatusCode, Json<Value>) {
    let mut q = q.lock().expect("state lock");
    q.primary_keys
        .push(params.get("primaryKey").cloned().unwrap_or_default());
    q.tasks.push((docs, 0));
    (
        StatusCode::ACCEPTED,
        Json(json!({"taskUid": q.tasks.len() - 1, "status": "enqueued"})),
    )
}

async fn task(State(q): State<Shared>, Path(uid): Path<usize>) -> Json<Value> {
    let mut q = q.lock().expect("state lock");
    let (docs, polls) = &mut q.tasks[uid];
    *polls += 1;
    if *polls < 2 {
        return Json(json!({"uid": uid, "status": "processing"}));
    }
    let bad = docs
        .iter()
        .any(|d| d["value"]["json"]["bad"] == json!(true));
    if bad {
        Json(json!({"uid": uid, "status": "failed", "error": {
            "message": "invalid document", "code": "invalid_document_fields", "type": "invalid_request"}}))
    } else {
        Json(
            json!({"uid": uid, "status": "succeeded", "details": {"indexedDocuments": docs.len()}}),
        )
    }
}

#[tokio::test]
async fn consume_waits_for_tasks_and_isolates_a_refused_document() {
    let queue: Shared = Arc::default();
    let app = Router::new()
        .route("/indexes/{index}/documents", post(add))
        .route("/tasks/{uid}", get(task))
        .with_state(queue.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });

    let sink = MeilisearchSink::new(MeilisearchSinkConfig::new(url, "events")).unwrap();
    let records: Vec<Record> = (0..4)
        .map(|o| {
            let body = if o == 2 {
                r#"{"bad":true}"#
            } else {
                r#"{"ok":1}"#
            };
            Record::new(RecordId::new("orders:eu", 1, o), body)
        })
        .collect();
    let outcome = sink.consume(&Batch::new(records).unwrap()).await.unwrap();
    let records = &outcome.rejected;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].id.offset, 2);
    assert!(records[0].reason.contains("invalid_document_fields"));
    assert_eq!(outcome.written, 3);

    let q = queue.lock().expect("state lock");
    assert!(
        q.tasks.iter().all(|(_, polls)| *polls >= 2),
        "every task was awaited"
    );
    assert!(q.primary_keys.iter().all(|k| k == "pico_key"));
    let first = &q.tasks[0].0[0];
    assert_eq!(first["pico_key"], "orders_3Aeu_3A1_3A0");
}
