//! The crash suite's Iggy side against a real `iggy-server` (scripts/servers.sh sets
//! `PICO_IGGY_SERVER_BIN`): what it counts as acknowledged is what the server holds, offset by
//! offset; the group's position is read from the server (0 before the group exists, the
//! stored offset + 1 after a store); the dead letters come back with their origin.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;

use iggy::prelude::{
    Client, Consumer, ConsumerGroupClient, ConsumerOffsetClient, HeaderKey, HeaderValue,
    Identifier, IggyMessage, MessageClient, Partitioning, PollingStrategy, TcpClient, UserClient,
};
use pico_conformance::target::{PayloadForm, payload_checksum};
use pico_suite::crash::dead_letters::BadKind;
use pico_suite::crash::source::iggy::{IggySide, STREAM};
use pico_suite::crash::source::{CaseBroker, Pace};
use pico_suite::crash::{PARTITIONS, Size};
use pico_suite::serve::iggy::{IggyServer, PASSWORD, USER};

async fn client(url: &str) -> TcpClient {
    let client = TcpClient::from_connection_string(url).unwrap();
    client.connect().await.unwrap();
    client.login_user(USER, PASSWORD).await.unwrap();
    client
}

fn id(name: &str) -> Identifier {
    Identifier::named(name).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_iggy_side_counts_what_the_server_holds_and_reads_back_the_group_and_the_letters() {
    let server = IggyServer::start().await.unwrap();
    let side = IggySide {
        url: server.url.clone(),
    };
    side.create("readings", "readings-dlq", PARTITIONS as u32)
        .await
        .unwrap();

    // 2 500 records hold one bad record of each kind; Iggy cannot hold the empty one.
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
        .filter(|k| *k != BadKind::Empty)
        .collect();
    assert_eq!(kinds, expected);

    // What the server holds, offset by offset, is what the side counted.
    let c = client(&server.url).await;
    let reader = Consumer::new(id("test-reader"));
    let mut held = BTreeMap::new();
    for p in 0..PARTITIONS as u32 {
        loop {
            let from = held.keys().filter(|(q, _)| *q == p).count() as u64;
            let polled = c
                .poll_messages(
                    &id(STREAM),
                    &id("readings"),
                    Some(p),
                    &reader,
                    &PollingStrategy::offset(from),
                    200,
                    false,
                )
                .await
                .unwrap();
            if polled.messages.is_empty() {
                break;
            }
            for m in polled.messages {
                held.insert(
                    (p, m.header.offset),
                    payload_checksum(PayloadForm::Json, &m.payload),
                );
            }
        }
    }
    assert_eq!(held, produced, "the side's count is what the server holds");

    // The group's position: nothing before the group exists, stored + 1 after a store.
    let zeros: BTreeMap<u32, u64> = (0..PARTITIONS as u32).map(|p| (p, 0)).collect();
    assert_eq!(side.committed("sink", "readings").await.unwrap(), zeros);
    assert_eq!(side.group_view("sink", "readings").await.unwrap(), None);
    c.create_consumer_group(&id(STREAM), &id("readings"), "sink")
        .await
        .unwrap();
    c.join_consumer_group(&id(STREAM), &id("readings"), &id("sink"))
        .await
        .unwrap();
    c.store_consumer_offset(
        &Consumer::group(id("sink")),
        &id(STREAM),
        &id("readings"),
        Some(2),
        41,
    )
    .await
    .unwrap();
    let mut expected = zeros.clone();
    expected.insert(2, 42);
    assert_eq!(side.committed("sink", "readings").await.unwrap(), expected);
    // The one member holds every partition and is a connected client in the group.
    let view = side.group_view("sink", "readings").await.unwrap().unwrap();
    assert_eq!(view.connected, 1);
    assert_eq!(
        view.members,
        vec![(0..PARTITIONS as u32).collect::<Vec<_>>()]
    );
    // Read back from an offset: what the broker holds there, as produced.
    let back = side.read_back("readings", 1, 3).await.unwrap();
    assert!(!back.is_empty());
    for (at, sum) in &back {
        assert!(at.0 == 1 && at.1 >= 3, "{at:?}");
        assert_eq!(produced.get(at), Some(sum), "{at:?}");
    }

    // A dead letter comes back with its origin and reason.
    assert!(side.letters("readings-dlq").await.unwrap().is_empty());
    let headers: BTreeMap<HeaderKey, HeaderValue> = [
        ("pico.dlq.topic", "pico-crash/readings"),
        ("pico.dlq.partition", "1"),
        ("pico.dlq.offset", "7"),
        ("pico.dlq.reason", "not JSON"),
    ]
    .into_iter()
    .map(|(k, v)| {
        (
            HeaderKey::from_str(k).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        )
    })
    .collect();
    let mut letter = vec![
        IggyMessage::builder()
            .payload(b"reading 7 is not json".to_vec().into())
            .user_headers(headers)
            .build()
            .unwrap(),
    ];
    c.send_messages(
        &id(STREAM),
        &id("readings-dlq"),
        &Partitioning::partition_id(0),
        &mut letter,
    )
    .await
    .unwrap();
    let letters = side.letters("readings-dlq").await.unwrap();
    assert_eq!(letters.len(), 1);
    assert_eq!(
        letters[0].origin,
        Some(("pico-crash/readings".to_owned(), 1, 7))
    );
    assert_eq!(letters[0].reason, "not JSON");
    println!(
        "{} acknowledged = held over {PARTITIONS} partitions, {} bad ({kinds:?}), group position \
         {expected:?}, 1 letter read back",
        produced.len(),
        bad.len()
    );
    server.stop().await.unwrap();
}
