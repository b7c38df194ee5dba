//! One pico sink inside your own JetStream loop, without the pico-nats runtime: fetch a batch
//! from a durable consumer, write it, acknowledge only what the sink confirmed. A crash
//! anywhere before the acknowledgement means the server delivers the batch again, with the
//! same stream sequences, and the sink turns that into no visible duplicate.
//!
//! `cargo run -p pico-nats --example own_loop -- nats://127.0.0.1:4222 ORDERS my-durable`
//! (the stream must exist); `tests/example.rs` runs it against a real nats-server.

use async_nats::jetstream::{self, consumer::PullConsumer};
use futures_util::StreamExt;
use pico_nats::consumer::{ConsumerSettings, pull_config};
use pico_nats::record::to_record;
use pico_sink::identity::jetstream::JetStreamSource;
use pico_sink::{Batch, Sink};

/// Delivers `stream` into `sink` until a fetch comes back empty; returns the messages written.
pub async fn own_loop(
    url: &str,
    stream: &str,
    durable: &str,
    sink: &dyn Sink,
) -> Result<usize, async_nats::Error> {
    let js = jetstream::new(async_nats::connect(url).await?);
    let source = JetStreamSource::new(stream, None)?;
    let config = pull_config(&source, &ConsumerSettings::new(durable));
    let consumer: PullConsumer = js
        .get_stream(stream)
        .await?
        .get_or_create_consumer(durable, config)
        .await?;
    sink.open().await?;
    let mut written = 0;
    loop {
        let mut fetched = consumer
            .fetch()
            .max_messages(100)
            .expires(std::time::Duration::from_secs(1))
            .messages()
            .await?;
        let mut messages = Vec::new();
        while let Some(m) = fetched.next().await {
            messages.push(m?);
        }
        let records = messages
            .iter()
            .map(|m| to_record(&source, m))
            .collect::<Result<Vec<_>, _>>()?;
        let Ok(batch) = Batch::new(records) else {
            break;
        }; // nothing fetched
        let outcome = sink.consume(&batch).await?; // an error: nothing acked, delivered again
        assert!(
            outcome.rejected.is_empty(),
            "a real loop dead-letters these"
        );
        for m in &messages {
            m.double_ack().await?; // only now: the sink confirmed the whole batch
        }
        written += messages.len();
    }
    sink.close().await?;
    Ok(written)
}

#[tokio::main]
async fn main() -> Result<(), async_nats::Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, stream, durable] = args.as_slice() else {
        return Err("usage: own_loop NATS_URL STREAM DURABLE".into());
    };
    let sink = pico_sink_stdout::StdoutSink::stdout(pico_sink::identity::Scope::default());
    let written = own_loop(url, stream, durable, &sink).await?;
    eprintln!("{written} messages written and acknowledged");
    Ok(())
}
