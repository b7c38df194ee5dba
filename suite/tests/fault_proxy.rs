//! The fault proxy really sits between sink and destination: a lost acknowledgement leaves the
//! batch committed at the destination while the sink sees an error.

#![allow(clippy::unwrap_used)] // test helpers may panic

use std::time::Duration;

use pico_conformance::fault::{FaultMode, FaultSwitch};
use pico_conformance::proxy::FaultProxy;
use pico_conformance::scenarios::sample_batch;
use pico_http_endpoint::{Endpoint, EndpointConfig, KeyPolicy};
use pico_sink::Sink;
use pico_sink_http::{HttpSink, HttpSinkConfig};

/// A real endpoint, a proxy in front of it, and an HTTP sink writing through the proxy.
async fn through_proxy(policy: KeyPolicy) -> (Endpoint, FaultProxy, HttpSink) {
    let endpoint = Endpoint::start(EndpointConfig::new(policy)).await.unwrap();
    let proxy = FaultProxy::start(endpoint.addr()).await.unwrap();
    let sink = HttpSink::new(HttpSinkConfig::new(format!(
        "http://{}/ingest",
        proxy.addr()
    )))
    .unwrap();
    (endpoint, proxy, sink)
}

#[tokio::test]
async fn a_lost_ack_means_stored_at_the_destination_and_an_error_at_the_sink() {
    let (endpoint, proxy, sink) = through_proxy(KeyPolicy::Honour).await;
    let batch = sample_batch("t", 0, 0..=9);

    proxy.set(FaultMode::LoseNextAck { trigger: None });
    let err = sink.consume(&batch).await.unwrap_err();
    assert!(err.is_retryable(), "{err}");
    assert_eq!(
        endpoint.stored().len(),
        10,
        "the endpoint committed before the cut"
    );
    assert_eq!(proxy.stats().acks_lost, 1);

    // The retry carries the same key: answered from the key table, nothing stored twice.
    sink.consume(&batch).await.unwrap();
    assert_eq!(endpoint.stored().len(), 10);
    assert_eq!(endpoint.stats().replayed, 1);
}

#[tokio::test]
async fn refusing_cuts_pooled_connections_and_passing_restores_them() {
    let (endpoint, proxy, sink) = through_proxy(KeyPolicy::Ignore).await;
    sink.consume(&sample_batch("t", 0, 0..=0)).await.unwrap();
    proxy.set(FaultMode::Refuse);
    assert!(
        sink.consume(&sample_batch("t", 0, 1..=1))
            .await
            .unwrap_err()
            .is_retryable()
    );
    assert!(proxy.stats().refused >= 1);
    proxy.set(FaultMode::Pass);
    sink.consume(&sample_batch("t", 0, 1..=1)).await.unwrap();
    assert_eq!(endpoint.stored().len(), 2);
}

#[tokio::test]
async fn a_trigger_picks_the_committing_request() {
    let (endpoint, proxy, sink) = through_proxy(KeyPolicy::Ignore).await;
    // Only a request mentioning offset 5 loses its answer.
    proxy.set(FaultMode::LoseNextAck {
        trigger: Some(b"\"pico_offset\":5".to_vec()),
    });
    sink.consume(&sample_batch("t", 0, 0..=0)).await.unwrap();
    assert!(sink.consume(&sample_batch("t", 0, 5..=5)).await.is_err());
    assert_eq!(proxy.stats().acks_lost, 1);
    assert_eq!(endpoint.stored().len(), 2);
}

#[tokio::test]
async fn latency_delays_but_delivers() {
    let (endpoint, proxy, sink) = through_proxy(KeyPolicy::Ignore).await;
    proxy.set(FaultMode::Latency { millis: 150 });
    let started = std::time::Instant::now();
    sink.consume(&sample_batch("t", 0, 0..=3)).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(endpoint.stored().len(), 4);
}
