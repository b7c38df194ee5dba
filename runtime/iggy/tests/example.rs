//! The `own_iggy_loop` example, run against a real Iggy server: every message written once, then
//! its offset stored; a second run of the same group writes nothing (everything stored), and a
//! fresh group — as after a crash before any store — writes the same records again, identical,
//! for the sink to recognise.
#![allow(clippy::unwrap_used)]

use pico_sink::identity::Scope;
use pico_sink_stdout::StdoutSink;

mod common;

#[allow(dead_code)]
#[path = "../examples/own_iggy_loop.rs"]
mod own_loop;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_writes_each_message_once_and_stores_after() {
    let server = common::iggy_server().await;
    let partitions = common::topic(&server.url, "orders", "payments", 2).await;
    for &p in &partitions {
        common::produce(&server.url, "orders", "payments", p, "payment", 125).await;
    }
    let sink = StdoutSink::to_writer(Vec::new(), Scope::default());
    let names = ("orders", "payments", "example");
    let first = own_loop::own_loop(&server.url, names, &sink).await.unwrap();
    let again = own_loop::own_loop(&server.url, names, &sink).await.unwrap();
    let lines = sink.with_writer(|w| String::from_utf8(w.clone()).unwrap());
    assert_eq!(
        (first, again),
        (250, 0),
        "all written, then nothing left to write"
    );
    assert_eq!(lines.lines().count(), 250);
    assert!(
        lines.contains("orders/payments:1:124"),
        "{}",
        &lines[..200.min(lines.len())]
    );

    // A crash before any store: a fresh group is handed everything again, as the same records
    // (the identity from the partition and offset).
    let replay = StdoutSink::to_writer(Vec::new(), Scope::default());
    let fresh = ("orders", "payments", "replay");
    let replayed = own_loop::own_loop(&server.url, fresh, &replay)
        .await
        .unwrap();
    let replay_lines = replay.with_writer(|w| String::from_utf8(w.clone()).unwrap());
    assert_eq!(replayed, 250);
    assert_eq!(
        replay_lines, lines,
        "the redelivery is the same records, line for line"
    );
    println!(
        "{first} written and stored, {again} on the second run, {replayed} replayed identically"
    );
}
