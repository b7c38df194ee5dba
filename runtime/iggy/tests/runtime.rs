//! pico-iggy used as a library against a real Iggy server: every message reaches the sink
//! once, refused records land in the dead-letter topic with their origin, and after the drain
//! the group's stored offset of each partition is its last message — judged by what the server
//! holds (the stored offsets, the dead-letter topic), not by the runtime's word.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use iggy::prelude::{
    Consumer, ConsumerOffsetClient, Identifier, IggyMessage, MessageClient, Partitioning,
    PollingStrategy,
};
use pico_iggy::{Exit, Pipeline};
use pico_sink::{Batch, Claim, Description, Outcome, RejectedRecord, Sink, SinkError, WriteReport};
use tokio::sync::oneshot;

mod common;
use common::{iggy_server, signed_in, topic};

/// Messages per partition; every 50th is refused by the sink.
const PER_PARTITION: u64 = 150;

/// Keeps the (partition, offset) of each record it wrote; refuses the value `bad`. The first
/// write is slow, so batches queue behind it.
struct Recording {
    written: Arc<Mutex<Vec<(u32, u64)>>>,
    calls: AtomicUsize,
}

#[async_trait]
impl Sink for Recording {
    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(1_500)).await;
        }
        let mut rejected = Vec::new();
        let mut written = 0;
        for r in batch.records() {
            if r.value.as_ref() == b"bad" {
                rejected.push(RejectedRecord::new(r.id.clone(), "the value is bad"));
            } else {
                self.written
                    .lock()
                    .unwrap()
                    .push((r.id.partition, r.id.offset));
                written += 1;
            }
        }
        Ok(Outcome::new(WriteReport::written(written), rejected))
    }

    fn describe(&self) -> Description {
        Description::new("recording", "test", Claim::NoVisibleDuplicate)
    }
}

/// Runs `pipeline` into `sink` until the sender is used (or dropped): the run's handle.
fn start(
    pipeline: Pipeline,
    sink: Arc<Recording>,
) -> (
    oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<Exit, pico_iggy::runtime::StartError>>,
) {
    let (stop, stopped) = oneshot::channel::<()>();
    let run = tokio::spawn(async move {
        pico_iggy::run(&pipeline, sink, async {
            let _ = stopped.await;
        })
        .await
    });
    (stop, run)
}

/// Sends `count` messages to each of `partitions` of orders/payments: `"bad"` (which the
/// [`Recording`] sink refuses) at the offsets `is_bad` picks, a payment elsewhere. Returns
/// the bad ones.
async fn send_payments(
    url: &str,
    partitions: &[u32],
    count: u64,
    is_bad: impl Fn(u64) -> bool,
) -> BTreeSet<(u32, u64)> {
    let client = signed_in(url).await.unwrap();
    let (stream, topic) = (
        Identifier::named("orders").unwrap(),
        Identifier::named("payments").unwrap(),
    );
    let mut bad = BTreeSet::new();
    for &p in partitions {
        let mut messages: Vec<IggyMessage> = (0..count)
            .map(|o| {
                let value = if is_bad(o) {
                    bad.insert((p, o));
                    "bad".to_owned()
                } else {
                    format!("payment {p}/{o}")
                };
                IggyMessage::builder()
                    .payload(value.into())
                    .build()
                    .unwrap()
            })
            .collect();
        client
            .send_messages(
                &stream,
                &topic,
                &Partitioning::partition_id(p),
                &mut messages,
            )
            .await
            .unwrap();
    }
    bad
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_is_written_once_its_offset_stored_after_and_refused_ones_dead_lettered() {
    let server = iggy_server().await;
    let partitions = topic(&server.url, "orders", "payments", 2).await;
    topic(&server.url, "orders", "payments-dlq", 1).await;
    let client = signed_in(&server.url).await.unwrap();
    let (stream, source_topic) = (
        Identifier::named("orders").unwrap(),
        Identifier::named("payments").unwrap(),
    );
    let bad = send_payments(&server.url, &partitions, PER_PARTITION, |o| o % 50 == 49).await;
    let pipeline = Pipeline::from_toml(&format!(
        "[iggy]\nurl = \"{}\"\nstream = \"orders\"\ntopic = \"payments\"\ngroup = \"pico\"\n\
         assignment_interval_ms = 200\n\
         [batch]\nmax_records = 40\nlinger_ms = 50\n\
         [dead_letter]\ntopic = \"payments-dlq\"\n[sink]\nkind = \"stdout\"\n",
        server.url
    ))
    .unwrap();
    let written = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::new(Recording {
        written: written.clone(),
        calls: AtomicUsize::new(0),
    });
    let (stop, run) = start(pipeline, sink);
    let good = partitions.len() * PER_PARTITION as usize - bad.len();
    let started = Instant::now();
    while written.lock().unwrap().len() < good && started.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = stop.send(());
    let exit = run.await.unwrap().unwrap();
    assert_eq!(exit, Exit::Drained);

    let written = written.lock().unwrap().clone();
    let unique: BTreeSet<(u32, u64)> = written.iter().copied().collect();
    assert_eq!(
        unique.len(),
        written.len(),
        "a record handed to the sink twice"
    );
    let expected: BTreeSet<(u32, u64)> = partitions
        .iter()
        .flat_map(|&p| (0..PER_PARTITION).map(move |o| (p, o)))
        .filter(|po| !bad.contains(po))
        .collect();
    assert_eq!(unique, expected, "every good message written");

    // The server's view: the group stored each partition's last offset.
    let group = Consumer::group(Identifier::named("pico").unwrap());
    let mut stored = Vec::new();
    for &p in &partitions {
        let info = client
            .get_consumer_offset(&group, &stream, &source_topic, Some(p))
            .await
            .unwrap()
            .expect("an offset stored");
        stored.push(info.stored_offset);
    }
    assert_eq!(stored, vec![PER_PARTITION - 1; partitions.len()]);

    // The dead letters: one per refused record, with where it came from.
    let dlq_topic = Identifier::named("payments-dlq").unwrap();
    let reader = Consumer::new(Identifier::named("test-reader").unwrap());
    let letters = client
        .poll_messages(
            &stream,
            &dlq_topic,
            Some(0),
            &reader,
            &PollingStrategy::offset(0),
            100,
            false,
        )
        .await
        .unwrap()
        .messages;
    let mut origins = BTreeSet::new();
    for m in &letters {
        assert_eq!(m.payload.as_ref(), b"bad");
        let headers = m.user_headers_map().unwrap().expect("headers");
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k.as_bytes() == name.as_bytes())
                .map(|(_, v)| String::from_utf8_lossy(v.as_bytes()).into_owned())
        };
        assert_eq!(header("pico.dlq.topic").as_deref(), Some("orders/payments"));
        assert_eq!(
            header("pico.dlq.reason").as_deref(),
            Some("the value is bad")
        );
        origins.insert((
            header("pico.dlq.partition")
                .unwrap()
                .parse::<u32>()
                .unwrap(),
            header("pico.dlq.offset").unwrap().parse::<u64>().unwrap(),
        ));
    }
    assert_eq!(origins, bad, "one dead letter per refused record");
    println!(
        "{} written once over {} partitions, {} dead-lettered, stored offsets {stored:?}, {} ms",
        written.len(),
        partitions.len(),
        letters.len(),
        started.elapsed().as_millis()
    );
}

/// `GET /metrics` of the process listening on `port`, or `None`.
async fn scrape(port: u16) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).await.ok()?;
    Some(text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_resuming_at_the_end_of_a_partition_reports_a_lag_of_0() {
    let server = iggy_server().await;
    let partitions = topic(&server.url, "orders", "payments", 1).await;
    let p = partitions[0];
    common::produce(&server.url, "orders", "payments", p, "m", 10).await;
    // The group has stored the partition's last offset: nothing is left to read.
    let source = pico_sink::identity::iggy::IggySource::new("orders", "payments").unwrap();
    let before = pico_iggy::GroupMember::join(&server.url, &source, "pico")
        .await
        .unwrap();
    before.store(p, 9).await.unwrap();
    before.leave().await.unwrap();
    drop(before);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let pipeline = Pipeline::from_toml(&format!(
        "[iggy]\nurl = \"{}\"\nstream = \"orders\"\ntopic = \"payments\"\ngroup = \"pico\"\n\
         assignment_interval_ms = 200\n[sink]\nkind = \"stdout\"\n\
         [metrics]\nlisten = \"127.0.0.1:{port}\"\nlag_interval_ms = 100\n",
        server.url
    ))
    .unwrap();
    let sink = Arc::new(Recording {
        written: Arc::default(),
        calls: AtomicUsize::new(0),
    });
    let (stop, run) = start(pipeline, sink);
    let lag_line = format!("pico_iggy_consumer_lag{{topic=\"orders/payments\",partition=\"{p}\"}}");
    let started = Instant::now();
    let (mut seen, mut lags) = (None, Vec::new());
    while started.elapsed() < Duration::from_secs(10) {
        if let Some(text) = scrape(port).await {
            lags = text
                .lines()
                .filter(|l| l.contains("consumer_lag"))
                .map(str::to_owned)
                .collect();
            seen = text
                .lines()
                .find(|l| l.starts_with(&lag_line))
                .map(str::to_owned);
            if seen.as_deref().is_some_and(|l| l.ends_with(" 0")) {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = stop.send(());
    let exit = run.await.unwrap().unwrap();
    println!("after {:?}: {seen:?}, {exit:?}", started.elapsed());
    assert!(
        seen.as_deref().is_some_and(|l| l.ends_with(" 0")),
        "no lag of 0 reported for a partition read to its end: {seen:?}; lag lines: {lags:?}"
    );
}

/// A server down for 10 s under a running pipeline (SIGKILL, then started again with its
/// data), while a batch is in the sink and one of its records is refused: the member's
/// connection comes back — a new client joins the group again —, the dead letter waits for the
/// server instead of stopping the run, and the pipeline reads on. Judged by what the sink wrote
/// of messages sent after the restart and by the dead-letter topic. (The server keeps the
/// crashed member in the group with some of its partitions — tests/group.rs — so only the
/// partitions the live member is given can be read.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_server_outage_the_member_connects_again_and_reads_on() {
    // The runtime's log, shown by the test harness when the test fails.
    let _ = tracing_subscriber::fmt()
        .with_env_filter("info")
        .with_test_writer()
        .try_init();
    let mut server = iggy_server().await;
    let saved = || iggy::prelude::TopicCreateOptions {
        enforce_fsync: Some(true),
        messages_required_to_save: Some(1),
        ..iggy::prelude::TopicCreateOptions::default()
    };
    let partitions = common::topic_with(&server.url, "orders", "payments", 2, saved()).await;
    common::topic_with(&server.url, "orders", "payments-dlq", 1, saved()).await;
    // Offset 5 of each partition is refused by the sink.
    send_payments(&server.url, &partitions, 50, |o| o == 5).await;
    let pipeline = Pipeline::from_toml(&format!(
        "[iggy]\nurl = \"{}\"\nstream = \"orders\"\ntopic = \"payments\"\ngroup = \"pico\"\n\
         assignment_interval_ms = 200\n[batch]\nmax_records = 20\nlinger_ms = 50\n\
         [dead_letter]\ntopic = \"payments-dlq\"\n[sink]\nkind = \"stdout\"\n",
        server.url
    ))
    .unwrap();
    let written = Arc::new(Mutex::new(Vec::new()));
    // The first write takes 1.5 s: the server dies under it.
    let sink = Arc::new(Recording {
        written: written.clone(),
        calls: AtomicUsize::new(0),
    });
    let (stop, run) = start(pipeline, sink);
    tokio::time::sleep(Duration::from_millis(700)).await;
    server.crash_for(Duration::from_secs(10)).await;
    for &p in &partitions {
        common::produce(&server.url, "orders", "payments", p, "after", 50).await;
    }
    // Each partition's messages after the restart are at offsets 50..100.
    let started = Instant::now();
    let read_on = loop {
        let after: Vec<usize> = partitions
            .iter()
            .map(|&p| {
                let w = written.lock().unwrap();
                w.iter().filter(|(q, o)| *q == p && *o >= 50).count()
            })
            .collect();
        if after.contains(&50) || started.elapsed() > Duration::from_secs(60) {
            break after;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    println!(
        "after the outage, {:?} later: messages sent after the restart written per partition {read_on:?}",
        started.elapsed()
    );
    assert!(!run.is_finished(), "the pipeline ended");
    assert!(
        read_on.contains(&50),
        "the pipeline did not read on after the server came back"
    );
    let letters = signed_in(&server.url)
        .await
        .unwrap()
        .poll_messages(
            &Identifier::named("orders").unwrap(),
            &Identifier::named("payments-dlq").unwrap(),
            Some(0),
            &Consumer::new(Identifier::named("reader").unwrap()),
            &PollingStrategy::offset(0),
            100,
            false,
        )
        .await
        .unwrap();
    println!("dead letters: {}", letters.messages.len());
    assert!(!letters.messages.is_empty(), "no dead letter");
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(20), run).await;
}
