//! pico-nats used as a library against a real nats-server: every message reaches the sink
//! once, the first batch held three times `ack_wait` is not delivered again (in-progress
//! acknowledgements), refused records land on the dead-letter subject with their origin, and
//! after the drain the durable has acknowledged every message — judged by the server's own
//! consumer state and the dead-letter stream, not by the runtime's word.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, stream};
use async_trait::async_trait;
use futures_util::StreamExt;
use pico_nats::{Exit, Pipeline};
use pico_sink::{Batch, Claim, Description, Outcome, RejectedRecord, Sink, SinkError, WriteReport};
use tokio::sync::oneshot;

mod common;
use common::nats_server;

/// Messages in the stream; every 50th is refused by the sink.
const MESSAGES: u64 = 300;
/// How long the first batch's write takes: three times the consumer's `ack_wait`.
const FIRST_WRITE: Duration = Duration::from_millis(3_000);

/// Keeps the stream sequence of each record it wrote; refuses the values `bad`.
struct Recording {
    written: Arc<Mutex<Vec<u64>>>,
    calls: AtomicUsize,
}

#[async_trait]
impl Sink for Recording {
    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            tokio::time::sleep(FIRST_WRITE).await;
        }
        let mut rejected = Vec::new();
        let mut written = 0;
        for r in batch.records() {
            if r.value.as_ref() == b"bad" {
                rejected.push(RejectedRecord::new(r.id.clone(), "the value is bad"));
            } else {
                self.written.lock().unwrap().push(r.id.offset);
                written += 1;
            }
        }
        Ok(Outcome::new(WriteReport::written(written), rejected))
    }

    fn describe(&self) -> Description {
        Description::new("recording", "test", Claim::NoVisibleDuplicate)
    }
}

#[tokio::test]
async fn every_message_is_written_once_acknowledged_after_and_refused_ones_dead_lettered() {
    let server = nats_server().await;
    let js = jetstream::new(async_nats::connect(&server.url).await.unwrap());
    for (name, subjects) in [("ORDERS", "orders.>"), ("DLQ", "dlq.>")] {
        js.create_stream(stream::Config {
            name: name.into(),
            subjects: vec![subjects.into()],
            ..stream::Config::default()
        })
        .await
        .unwrap();
    }
    let mut bad = BTreeSet::new();
    for s in 1..=MESSAGES {
        let value = if s % 50 == 0 {
            bad.insert(s);
            "bad".to_owned()
        } else {
            format!("order {s}")
        };
        js.publish("orders.eu", value.into())
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let pipeline = Pipeline::from_toml(&format!(
        "[jetstream]\nurl = \"{}\"\nstream = \"ORDERS\"\nfilter = \"orders.>\"\n\
         durable = \"pico\"\nack_wait_ms = 1000\n\
         [batch]\nmax_records = 40\nlinger_ms = 50\n\
         [dead_letter]\nsubject = \"dlq.orders\"\n[sink]\nkind = \"stdout\"\n",
        server.url
    ))
    .unwrap();
    let written = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::new(Recording {
        written: written.clone(),
        calls: AtomicUsize::new(0),
    });
    let (stop, stopped) = oneshot::channel::<()>();
    let run = tokio::spawn(async move {
        pico_nats::run(&pipeline, sink, async {
            let _ = stopped.await;
        })
        .await
    });
    let good = MESSAGES as usize - bad.len();
    let started = Instant::now();
    while written.lock().unwrap().len() < good && started.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = stop.send(());
    let exit = run.await.unwrap().unwrap();
    assert_eq!(exit, Exit::Drained);

    let written = written.lock().unwrap().clone();
    let unique: BTreeSet<u64> = written.iter().copied().collect();
    assert_eq!(
        unique.len(),
        written.len(),
        "a record handed to the sink twice"
    );
    let expected: BTreeSet<u64> = (1..=MESSAGES).filter(|s| !bad.contains(s)).collect();
    assert_eq!(unique, expected, "every good message written");

    // The server's view: every message acknowledged, none delivered again although the first
    // batch took three times ack_wait.
    let mut consumer: jetstream::consumer::PullConsumer = js
        .get_stream("ORDERS")
        .await
        .unwrap()
        .get_consumer("pico")
        .await
        .unwrap();
    let info = consumer.info().await.unwrap().clone();
    assert_eq!(
        info.ack_floor.stream_sequence, MESSAGES,
        "acknowledged up to the last"
    );
    assert_eq!(info.num_ack_pending, 0);
    assert_eq!(
        info.num_redelivered, 0,
        "in-progress acks held the slow batch (ack_wait 1 s, write {FIRST_WRITE:?})"
    );

    // The dead letters: one per refused record, with where it came from.
    let dlq = js
        .get_stream("DLQ")
        .await
        .unwrap()
        .create_consumer(jetstream::consumer::pull::Config::default())
        .await
        .unwrap();
    let mut letters = dlq
        .fetch()
        .max_messages(100)
        .expires(Duration::from_secs(1))
        .messages()
        .await
        .unwrap();
    let mut origins = BTreeSet::new();
    while let Some(m) = letters.next().await {
        let m = m.unwrap();
        let headers = m.headers.clone().unwrap();
        assert_eq!(m.payload.as_ref(), b"bad");
        assert_eq!(
            headers.get("pico.dlq.topic").map(|v| v.as_str()),
            Some("ORDERS>orders.>")
        );
        assert_eq!(
            headers.get("pico.dlq.reason").map(|v| v.as_str()),
            Some("the value is bad")
        );
        origins.insert(
            headers
                .get("pico.dlq.offset")
                .unwrap()
                .as_str()
                .parse::<u64>()
                .unwrap(),
        );
    }
    assert_eq!(origins, bad, "one dead letter per refused record");
    println!(
        "{} written once, {} dead-lettered, ack floor {}, 0 redelivered (first write {:?}, \
         ack_wait 1 s), {} ms",
        written.len(),
        origins.len(),
        info.ack_floor.stream_sequence,
        FIRST_WRITE,
        started.elapsed().as_millis()
    );
}

/// Writes slowly: each batch takes 30 ms.
struct Slow {
    written: Arc<Mutex<Vec<u64>>>,
}

#[async_trait]
impl Sink for Slow {
    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        tokio::time::sleep(Duration::from_millis(30)).await;
        let mut written = self.written.lock().unwrap();
        written.extend(batch.records().iter().map(|r| r.id.offset));
        Ok(Outcome::new(
            WriteReport::written(batch.records().len()),
            Vec::new(),
        ))
    }

    fn describe(&self) -> Description {
        Description::new("slow", "test", Claim::NoVisibleDuplicate)
    }
}

#[tokio::test]
async fn a_drain_in_mid_stream_leaves_nothing_delivered_and_unacknowledged() {
    let server = nats_server().await;
    let js = common::orders_stream(&server).await;
    // More than the buffer holds before its partition pauses (16 batches of 20): the drain
    // comes while the stream still has messages.
    const MESSAGES: u64 = 3_000;
    for s in 1..=MESSAGES {
        js.publish("orders.eu", format!("order {s}").into())
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let pipeline = Pipeline::from_toml(&format!(
        "[jetstream]\nurl = \"{}\"\nstream = \"ORDERS\"\ndurable = \"pico\"\n\
         [batch]\nmax_records = 20\nlinger_ms = 50\n[sink]\nkind = \"stdout\"\n",
        server.url
    ))
    .unwrap();
    let written = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::new(Slow {
        written: written.clone(),
    });
    let (stop, stopped) = oneshot::channel::<()>();
    let run = tokio::spawn(async move {
        pico_nats::run(&pipeline, sink, async {
            let _ = stopped.await;
        })
        .await
    });
    while written.lock().unwrap().len() < 60 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let _ = stop.send(());
    assert_eq!(run.await.unwrap().unwrap(), Exit::Drained);
    let written = written.lock().unwrap().clone();
    let mut consumer: jetstream::consumer::PullConsumer = js
        .get_stream("ORDERS")
        .await
        .unwrap()
        .get_consumer("pico")
        .await
        .unwrap();
    let info = consumer.info().await.unwrap().clone();
    let floor = info.ack_floor.stream_sequence;
    assert!(
        floor < MESSAGES,
        "the drain came in mid-stream: floor {floor}"
    );
    assert_eq!(
        info.num_ack_pending, 0,
        "delivered to the stopped process and not acknowledged (ack floor {floor})"
    );
    assert_eq!(
        written,
        (1..=floor).collect::<Vec<_>>(),
        "written in order up to the floor"
    );
    assert_eq!(
        info.num_pending,
        MESSAGES - floor,
        "the rest waits for the next process"
    );
    println!(
        "drained after {} written: ack floor {floor}, 0 pending acknowledgement, {} left",
        written.len(),
        info.num_pending
    );
}
