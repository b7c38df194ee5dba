//! The HTTP sink against a real local HTTP server: one that honours Idempotency-Key as the draft
//! describes, and one that ignores it.

#![allow(clippy::unwrap_used)] // test helpers may panic

use pico_sink::testing::json_batch;
use std::time::Duration;

use pico_http_endpoint::{Endpoint, EndpointConfig, KeyPolicy};
use pico_sink::driver::{Driver, DriverError, MemoryHooks, RetryPolicy};
use pico_sink::identity::{IdempotencyKeyStyle, RecordId};
use pico_sink::{Batch, Record, Sink, SinkError};
use pico_sink_http::{BodyFormat, HttpSink, HttpSinkConfig};

fn batch(first: u64, n: u64) -> Batch {
    json_batch("orders", 0, first..=first + n - 1)
}

fn offsets(endpoint: &Endpoint) -> Vec<u64> {
    endpoint
        .stored()
        .iter()
        .map(|e| e["pico_offset"].as_u64().unwrap())
        .collect()
}

async fn endpoint(policy: KeyPolicy) -> Endpoint {
    Endpoint::start(EndpointConfig::new(policy)).await.unwrap()
}

#[tokio::test]
async fn replay_is_stored_once_where_the_key_is_honoured() {
    let ep = endpoint(KeyPolicy::Honour).await;
    let b = batch(0, 20);
    HttpSink::new(HttpSinkConfig::new(ep.ingest_url()))
        .unwrap()
        .consume(&b)
        .await
        .unwrap();
    // A new sink (a restarted runtime) replays the same batch.
    HttpSink::new(HttpSinkConfig::new(ep.ingest_url()))
        .unwrap()
        .consume(&b)
        .await
        .unwrap();
    assert_eq!(offsets(&ep), (0..20).collect::<Vec<_>>());
    let stats = ep.stats();
    assert_eq!((stats.stored_requests, stats.replayed), (1, 1));
}

#[tokio::test]
async fn replay_is_stored_twice_where_the_key_is_ignored() {
    let ep = endpoint(KeyPolicy::Ignore).await;
    let b = batch(0, 20);
    for _ in 0..2 {
        HttpSink::new(HttpSinkConfig::new(ep.ingest_url()))
            .unwrap()
            .consume(&b)
            .await
            .unwrap();
    }
    let stored = offsets(&ep);
    assert_eq!(stored.len(), 40);
    assert_eq!(stored[..20], stored[20..]);
}

#[tokio::test]
async fn ndjson_and_keyed_keys_work_end_to_end() {
    let ep = endpoint(KeyPolicy::Honour).await;
    let mut config = HttpSinkConfig::new(ep.ingest_url());
    config.format = BodyFormat::Ndjson;
    config.key_style = IdempotencyKeyStyle::Keyed {
        secret: b"k".to_vec(),
    };
    let sink = HttpSink::new(config).unwrap();
    sink.consume(&batch(0, 5)).await.unwrap();
    sink.consume(&batch(0, 5)).await.unwrap();
    assert_eq!(offsets(&ep), vec![0, 1, 2, 3, 4]);
    assert_eq!(ep.stats().replayed, 1);
}

#[tokio::test]
async fn an_oversized_record_is_rejected_with_its_offset_and_the_rest_is_stored() {
    let mut cfg = EndpointConfig::new(KeyPolicy::Honour);
    cfg.max_element_bytes = 300;
    let ep = Endpoint::start(cfg).await.unwrap();
    let mut records: Vec<Record> = batch(0, 9).records().to_vec();
    records[6] = Record::new(
        RecordId::new("orders", 0, 6),
        format!("\"{}\"", "x".repeat(1000)),
    );
    let b = Batch::new(records).unwrap();
    let sink = HttpSink::new(HttpSinkConfig::new(ep.ingest_url())).unwrap();
    let mut driver = Driver::new(sink);
    let mut hooks = MemoryHooks::default();
    let delivered = driver.deliver(&b, &mut hooks).await.unwrap();
    assert_eq!(delivered.dead_lettered(), 1);
    assert_eq!(
        hooks.dead_letters[0].record.id,
        RecordId::new("orders", 0, 6)
    );
    assert!(
        hooks.dead_letters[0].reason.contains("413"),
        "{}",
        hooks.dead_letters[0].reason
    );
    let mut stored = offsets(&ep);
    stored.sort();
    assert_eq!(stored, vec![0, 1, 2, 3, 4, 5, 7, 8]);
    // Replaying the batch sends the same split with the same keys: nothing new is stored.
    driver.deliver(&b, &mut hooks).await.unwrap();
    assert_eq!(offsets(&ep).len(), 8);
}

#[tokio::test]
async fn a_key_reused_with_another_payload_is_fatal_and_named() {
    let ep = endpoint(KeyPolicy::Honour).await;
    let sink = HttpSink::new(HttpSinkConfig::new(ep.ingest_url())).unwrap();
    sink.consume(&batch(0, 2)).await.unwrap();
    let changed = Batch::new(vec![
        Record::new(RecordId::new("orders", 0, 0), "{\"changed\":true}"),
        Record::new(RecordId::new("orders", 0, 1), "{}"),
    ])
    .unwrap();
    match sink.consume(&changed).await {
        Err(e @ SinkError::Fatal { .. }) => {
            let message = e.message();
            assert!(
                message.contains("422") && message.contains("\"orders:0:0..=1\""),
                "{message}"
            )
        }
        other => panic!("expected Fatal, got {other:?}"),
    }
}

#[tokio::test]
async fn a_concurrent_duplicate_gets_409_then_succeeds_without_storing_twice() {
    let mut cfg = EndpointConfig::new(KeyPolicy::Honour);
    cfg.processing_delay = Duration::from_millis(400);
    let ep = Endpoint::start(cfg).await.unwrap();
    let b = batch(0, 10);
    let first = {
        let (url, b) = (ep.ingest_url(), b.clone());
        tokio::spawn(async move {
            HttpSink::new(HttpSinkConfig::new(url))
                .unwrap()
                .consume(&b)
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = HttpSink::new(HttpSinkConfig::new(ep.ingest_url())).unwrap();
    let err = second.consume(&b).await.unwrap_err();
    assert!(
        err.is_retryable() && err.to_string().contains("409"),
        "{err}"
    );
    first.await.unwrap().unwrap();
    // Retried through the driver, it now gets the stored answer.
    Driver::new(second)
        .deliver(&b, &mut MemoryHooks::default())
        .await
        .unwrap();
    assert_eq!(offsets(&ep).len(), 10);
    assert_eq!(ep.stats().in_flight_conflicts, 1);
}

#[tokio::test]
async fn an_unreachable_endpoint_is_retryable_then_gives_up() {
    // Bind and drop a listener to get a port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut config = HttpSinkConfig::new(format!("http://127.0.0.1:{port}/ingest"));
    config.connect_timeout = Duration::from_millis(200);
    let sink = HttpSink::new(config).unwrap();
    let policy =
        RetryPolicy::default().with_backoff(Duration::from_millis(1), Duration::from_secs(5));
    let mut driver = Driver::with_policy(sink, policy);
    let err = driver
        .deliver(&batch(0, 1), &mut MemoryHooks::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, DriverError::GaveUp { attempts: 5, ref last } if last.is_retryable()),
        "{err}"
    );
}

#[test]
fn misconfiguration_is_fatal_with_what_to_change() {
    for (url, needle) in [
        ("not a url", "not a valid URL"),
        ("ftp://x/y", "http or https"),
    ] {
        match HttpSink::new(HttpSinkConfig::new(url)) {
            Err(e @ SinkError::Fatal { .. }) => assert!(e.message().contains(needle), "{e}"),
            _ => panic!("{url} must be fatal"),
        }
    }
}

/// The endpoint forgets an answered key after its retention, by the real clock or by
/// `age_keys`: a replay within the retention is answered from the key, one past it is stored
/// again (what conformance's replay-after-horizon measures as the HTTP sink's horizon).
#[tokio::test]
async fn a_replay_past_the_endpoints_key_retention_is_stored_again() {
    let b = batch(0, 10);
    let deliver = |url: String| {
        let b = b.clone();
        async move {
            HttpSink::new(HttpSinkConfig::new(url))
                .unwrap()
                .consume(&b)
                .await
                .unwrap();
        }
    };

    // Aged by the key clock: one second short of the retention still answers from the key.
    let ep = endpoint(KeyPolicy::Honour).await;
    deliver(ep.ingest_url()).await;
    let retention = pico_http_endpoint::KEY_RETENTION;
    assert_eq!(ep.age_keys(retention - Duration::from_secs(1)), 0);
    deliver(ep.ingest_url()).await;
    assert_eq!(offsets(&ep).len(), 10, "a replay within the retention");
    assert_eq!(ep.age_keys(Duration::from_secs(1)), 1, "the key ages out");
    deliver(ep.ingest_url()).await;
    assert_eq!(offsets(&ep).len(), 20, "a replay past the retention");
    let stats = ep.stats();
    assert_eq!((stats.replayed, stats.keys_expired), (1, 1));

    // By the real clock, with a short retention.
    let mut config = EndpointConfig::new(KeyPolicy::Honour);
    config.key_retention = Duration::from_millis(200);
    let ep = Endpoint::start(config).await.unwrap();
    deliver(ep.ingest_url()).await;
    deliver(ep.ingest_url()).await;
    assert_eq!(offsets(&ep).len(), 10);
    tokio::time::sleep(Duration::from_millis(300)).await;
    deliver(ep.ingest_url()).await;
    assert_eq!(offsets(&ep).len(), 20);
    assert_eq!(ep.stats().keys_expired, 1);
}
