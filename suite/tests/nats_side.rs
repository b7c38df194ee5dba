//! The crash suite's JetStream side against a real nats-server (Debian's `nats-server`, which
//! scripts/setup.sh installs): what it counts as acknowledged is what the stream holds,
//! sequence by sequence; the committed position is the durable consumer's ack floor + 1 (0
//! before the consumer exists); the dead letters come back with their origin.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::{self, consumer::pull};
use futures_util::StreamExt;
use pico_conformance::target::{PayloadForm, payload_checksum};
use pico_suite::crash::Size;
use pico_suite::crash::dead_letters::BadKind;
use pico_suite::crash::source::nats::NatsSide;
use pico_suite::crash::source::{CaseBroker, Pace};
use pico_suite::serve::nats::NatsServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_nats_side_counts_what_the_stream_holds_and_reads_back_the_ack_floor_and_the_letters() {
    let server = NatsServer::start().await.unwrap();
    let side = NatsSide {
        url: server.url.clone(),
    };
    side.create("readings", "readings-dlq").await.unwrap();
    assert_eq!(
        side.partitions(),
        1,
        "a stream is one partition of the identity"
    );

    // 2 500 records hold one bad record of each kind; NATS cannot carry the oversized one.
    let size = Size {
        records: 2_500,
        kills: 0,
        outage_secs: 0,
        rate: 100_000,
    };
    let (produced, bad) = side.produce("readings", Pace::new(size)).await.unwrap();
    assert_eq!(produced.len(), 2_499);
    let kinds: BTreeSet<BadKind> = bad.values().copied().collect();
    let expected: BTreeSet<BadKind> = BadKind::ALL
        .into_iter()
        .filter(|k| *k != BadKind::Oversized)
        .collect();
    assert_eq!(kinds, expected);

    // What the stream holds, sequence by sequence, is what the side counted (partition 0).
    let js = jetstream::new(async_nats::connect(&server.url).await.unwrap());
    let stream = js.get_stream("readings").await.unwrap();
    let mut held = BTreeMap::new();
    for sequence in 1..=2_499u64 {
        let m = stream.get_raw_message(sequence).await.unwrap();
        held.insert(
            (0u32, m.sequence),
            payload_checksum(PayloadForm::Json, &m.payload),
        );
    }
    assert_eq!(held, produced, "the side's count is what the server holds");

    // The committed position: nothing before the consumer exists, the ack floor + 1 after
    // the first 5 messages were acknowledged.
    let nothing: BTreeMap<u32, u64> = [(0, 0)].into();
    assert_eq!(side.committed("sink", "readings").await.unwrap(), nothing);
    let consumer = stream
        .create_consumer(pull::Config {
            durable_name: Some("sink".into()),
            ..pull::Config::default()
        })
        .await
        .unwrap();
    let mut fetched = consumer
        .fetch()
        .max_messages(10)
        .expires(Duration::from_secs(2))
        .messages()
        .await
        .unwrap();
    let mut acked = 0;
    while let Some(m) = fetched.next().await {
        let m = m.unwrap();
        if acked < 5 {
            m.double_ack().await.unwrap();
            acked += 1;
        }
    }
    let after: BTreeMap<u32, u64> = [(0, 6)].into();
    assert_eq!(side.committed("sink", "readings").await.unwrap(), after);

    // A dead letter comes back with its origin and reason.
    assert!(side.letters("readings-dlq").await.unwrap().is_empty());
    let mut headers = HeaderMap::new();
    for (k, v) in [
        ("pico.dlq.topic", "readings"),
        ("pico.dlq.partition", "0"),
        ("pico.dlq.offset", "7"),
        ("pico.dlq.reason", "not JSON"),
    ] {
        headers.insert(k, v);
    }
    js.publish_with_headers("readings-dlq", headers, "reading 7 is not json".into())
        .await
        .unwrap()
        .await
        .unwrap();
    let letters = side.letters("readings-dlq").await.unwrap();
    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0].origin, Some(("readings".to_owned(), 0, 7)));
    assert_eq!(letters[0].reason, "not JSON");
    println!(
        "{} acknowledged = held, {} bad ({kinds:?}), committed {after:?} after 5 acks, 1 letter \
         read back",
        produced.len(),
        bad.len()
    );
    server.stop().await.unwrap();
}
