//! stdout: a replay prints again with the identity visible; a closed pipe is fatal.

#![allow(clippy::unwrap_used)] // test helpers may panic

use pico_sink::testing::json_batch;
use std::io::{self, Write};

use pico_sink::identity::Scope;
use pico_sink::kit::Envelope;
use pico_sink::{Batch, Sink, SinkError};
use pico_sink_stdout::StdoutSink;

fn batch() -> Batch {
    json_batch("t", 0, 0..=2)
}

#[tokio::test]
async fn replay_prints_again_and_identities_let_a_reader_dedupe() {
    let sink = StdoutSink::to_writer(Vec::new(), Scope::default());
    sink.consume(&batch()).await.unwrap();
    // A new sink instance (a restarted process) gets the same batch.
    let out = sink.into_writer();
    let sink = StdoutSink::to_writer(out, Scope::default());
    sink.consume(&batch()).await.unwrap();
    let text = String::from_utf8(sink.into_writer()).unwrap();
    let ids: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<Envelope>(l).unwrap().pico_id)
        .collect();
    assert_eq!(ids.len(), 6, "printed twice");
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique, vec!["t:0:0", "t:0:1", "t:0:2"]);
}

struct ClosedPipe;
impl Write for ClosedPipe {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::Error::from(io::ErrorKind::BrokenPipe))
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_closed_pipe_is_fatal_and_says_so() {
    let sink = StdoutSink::to_writer(ClosedPipe, Scope::default());
    match sink.consume(&batch()).await {
        Err(e @ SinkError::Fatal { .. }) => {
            assert!(e.message().contains("output closed"), "{e}");
            let source = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<io::Error>());
            assert_eq!(source.map(io::Error::kind), Some(io::ErrorKind::BrokenPipe));
        }
        other => panic!("expected Fatal, got {other:?}"),
    }
}
