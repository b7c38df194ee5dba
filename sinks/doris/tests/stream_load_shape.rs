//! Request shape of a Stream Load against an in-process listener playing FE and BE: the FE's
//! 307 is followed with the credentials, the label comes from the batch identity, and a
//! repeated label is read as "already written". A unit test of the HTTP exchange only; Doris's
//! own behaviour is verified by the conformance suite against a real cluster.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::put;
use pico_sink::identity::RecordId;
use pico_sink::{Batch, Record, Sink};
use pico_sink_doris::{DorisSink, DorisSinkConfig};

#[derive(Default)]
struct Seen {
    labels: HashMap<String, usize>,
    auth_on_be: Vec<bool>,
    expect_on_fe: Vec<bool>,
    rows: usize,
}

type Shared = Arc<Mutex<Seen>>;

async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, router).await.expect("serve") });
    format!("http://{addr}")
}

#[tokio::test]
async fn redirect_keeps_credentials_and_labels_dedupe() {
    let seen: Shared = Arc::default();
    let be = serve(
        Router::new()
            .route(
                "/api/pico/events/_stream_load",
                put(|State(seen): State<Shared>, headers: HeaderMap, body: String| async move {
                    let mut s = seen.lock().expect("state lock");
                    s.auth_on_be.push(headers.contains_key(header::AUTHORIZATION));
                    let label = headers["label"].to_str().unwrap().to_owned();
                    let n = body.lines().count();
                    let runs = s.labels.entry(label.clone()).or_insert(0);
                    *runs += 1;
                    if *runs > 1 {
                        format!(r#"{{"Label":"{label}","Status":"Label Already Exists","ExistingJobStatus":"FINISHED"}}"#)
                    } else {
                        s.rows += n;
                        format!(r#"{{"Label":"{label}","Status":"Success","NumberLoadedRows":{n}}}"#)
                    }
                }),
            )
            .with_state(seen.clone()),
    )
    .await;
    let be_target = format!("{be}/api/pico/events/_stream_load");
    let fe = serve(
        Router::new()
            .route(
                "/api/pico/events/_stream_load",
                put(move |State(seen): State<Shared>, headers: HeaderMap| {
                    let location = be_target.clone();
                    async move {
                        seen.lock().expect("state lock").expect_on_fe.push(
                            headers
                                .get(header::EXPECT)
                                .is_some_and(|v| v == "100-continue"),
                        );
                        (
                            StatusCode::TEMPORARY_REDIRECT,
                            [(header::LOCATION, location)],
                        )
                            .into_response()
                    }
                }),
            )
            .with_state(seen.clone()),
    )
    .await;

    let mut config = DorisSinkConfig::new(fe, "pico", "events");
    config.create_table = false;
    let sink = DorisSink::new(config).unwrap();
    let batch = Batch::new(
        (10..13)
            .map(|o| Record::new(RecordId::new("orders", 2, o), format!("{{\"n\":{o}}}")))
            .collect(),
    )
    .unwrap();
    let first = sink.consume(&batch).await.unwrap();
    let again = sink.consume(&batch).await.unwrap();
    assert_eq!((first.written, first.already_present), (3, 0));
    assert_eq!((again.written, again.already_present), (0, 3));

    let s = seen.lock().expect("state lock");
    assert_eq!(s.rows, 3, "the rows were loaded once");
    assert_eq!(s.auth_on_be, vec![true, true], "credentials reach the BE");
    assert_eq!(s.expect_on_fe, vec![true, true]);
    let labels: Vec<&String> = s.labels.keys().collect();
    assert_eq!(
        labels,
        vec!["orders:2:10_2E_2E_3D12"],
        "label from the batch identity"
    );
}

#[tokio::test]
async fn bad_names_and_unreachable_servers_map_to_the_contract() {
    let bad = DorisSinkConfig::new("http://127.0.0.1:1", "pico", "my-table");
    assert!(matches!(
        DorisSink::new(bad),
        Err(pico_sink::SinkError::Fatal { .. })
    ));
    let mut config = DorisSinkConfig::new("http://127.0.0.1:1", "pico", "events");
    config.create_table = false;
    let sink = DorisSink::new(config).unwrap();
    let batch = Batch::new(vec![Record::new(RecordId::new("t", 0, 0), "x")]).unwrap();
    assert!(sink.consume(&batch).await.unwrap_err().is_retryable());
}
