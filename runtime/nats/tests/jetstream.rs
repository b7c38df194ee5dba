//! What pico-nats relies on, measured against a real nats-server (started here with
//! JetStream on a free port; `PICO_NATS_SERVER_BIN` names another binary): a redelivered
//! message keeps its stream sequence and so its identity; nothing acknowledged is delivered
//! again, and what is not acknowledged is, after `ack_wait`, also to a new connection; an
//! in-progress acknowledgement holds a redelivery back; one durable shared by two processes
//! loses nothing with explicit acks and loses with `AckPolicy::All`; a bounded `max_deliver`
//! gives a message up. Each loss is shown by a control beside the setting that prevents it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use async_nats::jetstream::consumer::{AckPolicy, PullConsumer, pull};
use async_nats::jetstream::{self, AckKind, Context, Message};
use futures_util::StreamExt;
use pico_nats::consumer::{ConsumerSettings, pull_config};
use pico_nats::record::to_record;
use pico_sink::identity::jetstream::JetStreamSource;

mod common;
use common::{NatsServer, nats_server};

/// A JetStream context on `server`, with the stream ORDERS on `orders.>` holding `n` messages
/// alternately on `orders.eu` and `orders.us` (sequence `s` on `orders.eu` when odd), each with
/// headers `b` and `a`.
async fn orders(server: &NatsServer, n: u64) -> Context {
    let js = common::orders_stream(server).await;
    for s in 1..=n {
        let subject = if s % 2 == 1 { "orders.eu" } else { "orders.us" };
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("b", "2");
        headers.insert("a", "1");
        js.publish_with_headers(subject, headers, format!("order {s}").into())
            .await
            .unwrap()
            .await
            .unwrap();
    }
    js
}

/// The durable `settings.durable` of `source` on ORDERS.
async fn consumer(
    js: &Context,
    source: &JetStreamSource,
    settings: &ConsumerSettings,
) -> PullConsumer {
    js.get_stream("ORDERS")
        .await
        .unwrap()
        .get_or_create_consumer(&settings.durable, pull_config(source, settings))
        .await
        .unwrap()
}

/// Up to `n` messages, waiting at most `wait` for them.
async fn fetch(consumer: &PullConsumer, n: usize, wait: Duration) -> Vec<Message> {
    let mut batch = consumer
        .fetch()
        .max_messages(n)
        .expires(wait)
        .messages()
        .await
        .unwrap();
    let mut out = Vec::new();
    while let Some(m) = batch.next().await {
        out.push(m.unwrap());
    }
    out
}

fn sequences(messages: &[Message]) -> Vec<u64> {
    messages
        .iter()
        .map(|m| m.info().unwrap().stream_sequence)
        .collect()
}

#[tokio::test]
async fn a_redelivered_message_keeps_its_stream_sequence_and_so_its_record() {
    let server = nats_server().await;
    let js = orders(&server, 10).await;
    let eu = JetStreamSource::new("ORDERS", Some("orders.eu")).unwrap();
    let settings = ConsumerSettings {
        ack_wait: Duration::from_secs(1),
        ..ConsumerSettings::new("pico-eu")
    };
    let c = consumer(&js, &eu, &settings).await;
    let first = fetch(&c, 10, Duration::from_secs(1)).await;
    assert_eq!(
        sequences(&first),
        [1, 3, 5, 7, 9],
        "the filter's part, in order"
    );
    let records: Vec<_> = first.iter().map(|m| to_record(&eu, m).unwrap()).collect();
    assert_eq!(records[1].id.to_string(), "ORDERS>orders.eu:0:3");
    assert_eq!(records[1].value.as_ref(), b"order 3");
    let names: Vec<&str> = records[1].headers.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(
        names,
        ["a", "b"],
        "headers by name, the same at every delivery"
    );

    // Nothing acknowledged: after ack_wait the same messages come again, counted.
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    let again = fetch(&c, 10, Duration::from_secs(2)).await;
    assert_eq!(sequences(&again), [1, 3, 5, 7, 9]);
    for (m, r) in again.iter().zip(&records) {
        assert_eq!(m.info().unwrap().delivered, 2, "a redelivery");
        assert_eq!(
            &to_record(&eu, m).unwrap(),
            r,
            "the same record, identity and all"
        );
    }
    println!(
        "redelivered after ack_wait 1 s: {} of 5 messages, each with its stream sequence",
        again.len()
    );
}

#[tokio::test]
async fn what_is_acknowledged_is_not_delivered_again_and_the_rest_is_even_to_a_new_connection() {
    let server = nats_server().await;
    let js = orders(&server, 10).await;
    let all = JetStreamSource::new("ORDERS", None).unwrap();
    let settings = ConsumerSettings {
        ack_wait: Duration::from_secs(1),
        ..ConsumerSettings::new("pico-all")
    };
    let c = consumer(&js, &all, &settings).await;
    let delivered = fetch(&c, 6, Duration::from_secs(1)).await;
    assert_eq!(sequences(&delivered), [1, 2, 3, 4, 5, 6]);
    for m in &delivered[..4] {
        m.double_ack().await.unwrap();
    }
    let mut c = c;
    let info = c.info().await.unwrap().clone();
    assert_eq!(
        info.ack_floor.stream_sequence, 4,
        "the position: every message up to 4"
    );
    assert_eq!(info.num_ack_pending, 2);

    // A process that died holding 5 and 6: a new connection gets them again, after ack_wait
    // (the server does not know the old connection is gone), then the rest.
    drop(c);
    drop(js);
    let js = jetstream::new(async_nats::connect(&server.url).await.unwrap());
    let c = consumer(&js, &all, &settings).await;
    let started = Instant::now();
    let mut seen = Vec::new();
    while seen.len() < 6 && started.elapsed() < Duration::from_secs(10) {
        seen.extend(sequences(&fetch(&c, 6, Duration::from_millis(500)).await));
    }
    seen.sort_unstable();
    assert_eq!(seen, [5, 6, 7, 8, 9, 10], "none of 1..=4 again, none lost");
    println!(
        "after a new connection: {seen:?} within {} ms (ack_wait 1 s)",
        started.elapsed().as_millis()
    );
}

#[tokio::test]
async fn in_progress_acknowledgements_hold_a_redelivery_back() {
    let server = nats_server().await;
    let js = orders(&server, 1).await;
    let all = JetStreamSource::new("ORDERS", None).unwrap();
    let settings = ConsumerSettings {
        ack_wait: Duration::from_secs(1),
        ..ConsumerSettings::new("pico-slow")
    };
    let c = consumer(&js, &all, &settings).await;
    let held = fetch(&c, 1, Duration::from_secs(1)).await;
    assert_eq!(sequences(&held), [1]);
    // A write of 3 s, three times ack_wait, with an in-progress ack every 400 ms.
    let started = Instant::now();
    let mut progress = 0;
    while started.elapsed() < Duration::from_secs(3) {
        held[0].ack_with(AckKind::Progress).await.unwrap();
        progress += 1;
        let early = fetch(&c, 1, Duration::from_millis(400)).await;
        assert!(
            early.is_empty(),
            "redelivered at {} ms despite {progress} in-progress acks",
            started.elapsed().as_millis()
        );
    }
    // Control: without them, the message comes again once ack_wait has passed.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let again = fetch(&c, 1, Duration::from_secs(2)).await;
    assert_eq!(
        sequences(&again),
        [1],
        "the control: redelivered once the acks stop"
    );
    println!("{progress} in-progress acks held the message 3 s (ack_wait 1 s); redelivered after");
}

/// Two processes share one durable: A holds 1..=3 (not written yet), B writes 4..=6 and
/// acknowledges them; then A dies. Returns the sequences delivered again afterwards.
async fn shared_durable_after_one_dies(
    server: &NatsServer,
    ack_policy: AckPolicy,
    name: &str,
) -> Vec<u64> {
    let js = orders(server, 6).await;
    let config = pull::Config {
        durable_name: Some(name.into()),
        ack_policy,
        ack_wait: Duration::from_secs(1),
        max_deliver: -1,
        ..pull::Config::default()
    };
    let stream = js.get_stream("ORDERS").await.unwrap();
    let a: PullConsumer = stream.get_or_create_consumer(name, config).await.unwrap();
    let held_by_a = fetch(&a, 3, Duration::from_secs(1)).await;
    assert_eq!(sequences(&held_by_a), [1, 2, 3]);
    let other = jetstream::new(async_nats::connect(&server.url).await.unwrap());
    let b: PullConsumer = other
        .get_stream("ORDERS")
        .await
        .unwrap()
        .get_consumer(name)
        .await
        .unwrap();
    let written_by_b = fetch(&b, 3, Duration::from_secs(1)).await;
    assert_eq!(sequences(&written_by_b), [4, 5, 6]);
    for m in &written_by_b {
        m.double_ack().await.unwrap();
    }
    drop(held_by_a);
    drop(a);
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    sequences(&fetch(&b, 6, Duration::from_secs(2)).await)
}

#[tokio::test]
async fn one_durable_shared_by_two_processes_loses_nothing_with_explicit_acks_only() {
    let server = nats_server().await;
    let explicit = shared_durable_after_one_dies(&server, AckPolicy::Explicit, "explicit").await;
    assert_eq!(
        explicit,
        [1, 2, 3],
        "explicit acks: what A held comes again"
    );
    let server = nats_server().await;
    let all = shared_durable_after_one_dies(&server, AckPolicy::All, "all").await;
    let version = async_nats::connect(&server.url)
        .await
        .unwrap()
        .server_info()
        .version;
    // The control: AckPolicy::All (which this server accepts on a pull consumer) takes B's
    // ack of 6 for 1..=6, and the messages A never wrote are not delivered again: lost.
    assert!(all.is_empty(), "AckPolicy::All delivered {all:?} again");
    println!(
        "nats-server {version}, one durable, two processes, the one holding 1..=3 dies: \
         explicit acks deliver {explicit:?} again; AckPolicy::All delivers {all:?} (3 lost)"
    );
}

/// Deliveries of message 1 within `rounds` rounds of `ack_wait` 1 s, never acknowledged.
async fn deliveries(server: &NatsServer, name: &str, max_deliver: i64, rounds: u32) -> usize {
    let js = orders(server, 1).await;
    let all = JetStreamSource::new("ORDERS", None).unwrap();
    let mut config = pull_config(
        &all,
        &ConsumerSettings {
            ack_wait: Duration::from_secs(1),
            ..ConsumerSettings::new(name)
        },
    );
    config.max_deliver = max_deliver;
    let c: PullConsumer = js
        .get_stream("ORDERS")
        .await
        .unwrap()
        .get_or_create_consumer(name, config)
        .await
        .unwrap();
    let mut count = 0;
    for _ in 0..rounds {
        count += fetch(&c, 1, Duration::from_millis(1_300)).await.len();
    }
    count
}

#[tokio::test]
async fn a_bounded_max_deliver_gives_a_message_up_and_ours_does_not() {
    let server = nats_server().await;
    let ours = deliveries(&server, "ours", pull_config_max_deliver(), 4).await;
    let server = nats_server().await;
    let bounded = deliveries(&server, "bounded", 2, 4).await;
    println!(
        "4 rounds of ack_wait, never acked: max_deliver -1 delivered {ours} times, 2 delivered {bounded}"
    );
    assert!(ours >= 3, "pico-nats's consumer keeps delivering: {ours}");
    assert_eq!(bounded, 2, "the control: a bounded max_deliver stops");
}

/// The `max_deliver` pico-nats sets.
fn pull_config_max_deliver() -> i64 {
    let all = JetStreamSource::new("ORDERS", None).unwrap();
    pull_config(&all, &ConsumerSettings::new("x")).max_deliver
}
