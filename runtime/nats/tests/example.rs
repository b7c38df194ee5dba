//! The `own_loop` example, run against a real nats-server: every message written once, then
//! acknowledged; a second run of the same durable writes nothing (all acknowledged), and a
//! fresh durable — as after a crash before any acknowledgement — writes the same records
//! again, identical, for the sink to recognise.
#![allow(clippy::unwrap_used)]

use pico_sink::identity::Scope;
use pico_sink_stdout::StdoutSink;

mod common;

#[allow(dead_code)]
#[path = "../examples/own_loop.rs"]
mod own_loop;

#[tokio::test]
async fn the_example_writes_each_message_once_and_acknowledges_after() {
    let server = common::nats_server().await;
    let js = common::orders_stream(&server).await;
    for s in 1..=250 {
        js.publish("orders.eu", format!("{{\"order\":{s}}}").into())
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let sink = StdoutSink::to_writer(Vec::new(), Scope::default());
    let first = own_loop::own_loop(&server.url, "ORDERS", "example", &sink)
        .await
        .unwrap();
    let again = own_loop::own_loop(&server.url, "ORDERS", "example", &sink)
        .await
        .unwrap();
    let lines = sink.with_writer(|w| String::from_utf8(w.clone()).unwrap());
    assert_eq!(
        (first, again),
        (250, 0),
        "all written, then nothing left to write"
    );
    assert_eq!(lines.lines().count(), 250);
    assert!(
        lines.contains("ORDERS:0:250"),
        "{}",
        &lines[..200.min(lines.len())]
    );

    // A crash before any acknowledgement: a fresh durable is delivered everything again, as the
    // same records (the identity from the stream sequence).
    let replay = StdoutSink::to_writer(Vec::new(), Scope::default());
    let replayed = own_loop::own_loop(&server.url, "ORDERS", "replay", &replay)
        .await
        .unwrap();
    let replay_lines = replay.with_writer(|w| String::from_utf8(w.clone()).unwrap());
    assert_eq!(replayed, 250);
    assert_eq!(
        replay_lines, lines,
        "the redelivery is the same records, line for line"
    );
}
