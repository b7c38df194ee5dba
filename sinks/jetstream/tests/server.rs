//! Against a real nats-server with JetStream (`nats-server` on `PATH` or
//! `PICO_NATS_SERVER_BIN`; the test says SKIPPED without one): replays inside the duplicate
//! window are acknowledged as duplicates and stored once, a replay past it is stored again,
//! what the stream cannot take is rejected with its offset, and misconfiguration is `Fatal`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use pico_sink::identity::RecordId;
use pico_sink::testing::json_batch;
use pico_sink::{Record, Sink};
use pico_sink_jetstream::async_nats::jetstream::{self, consumer, stream};
use pico_sink_jetstream::{JetStreamSink, JetStreamSinkConfig, OFFSET};
use tokio::process::{Child, Command};

/// A nats-server on a free port, killed on drop.
struct Server {
    _child: Child,
    _dir: tempfile::TempDir,
    url: String,
}

fn binary() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("PICO_NATS_SERVER_BIN") {
        return Some(bin.into());
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("nats-server"))
            .find(|p| p.is_file())
    })
}

async fn start() -> Option<Server> {
    let Some(bin) = binary() else {
        eprintln!("SKIPPED — nats-server not found (install Debian's nats-server)");
        return None;
    };
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(bin)
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let url = format!("nats://127.0.0.1:{port}");
    let started = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "nats-server did not start"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Some(Server {
        _child: child,
        _dir: dir,
        url,
    })
}

/// Every message the stream physically holds, as offsets (from `Pico-Offset`).
async fn held(url: &str, stream_name: &str) -> Vec<u64> {
    let client = pico_sink_jetstream::async_nats::connect(url).await.unwrap();
    let js = jetstream::new(client);
    let mut s = js.get_stream(stream_name).await.unwrap();
    let count = s.info().await.unwrap().state.messages as usize;
    let consumer = s
        .create_consumer(consumer::pull::OrderedConfig::default())
        .await
        .unwrap();
    let mut messages = consumer.messages().await.unwrap();
    let mut offsets = Vec::with_capacity(count);
    while offsets.len() < count {
        let m = messages.next().await.unwrap().unwrap();
        let h = m.headers.as_ref().unwrap();
        offsets.push(h.get(OFFSET).unwrap().as_str().parse().unwrap());
    }
    offsets.sort_unstable();
    offsets
}

fn config(url: &str, name: &str) -> JetStreamSinkConfig {
    let mut c = JetStreamSinkConfig::new(url, name, format!("pico.{name}"));
    c.create_stream = true;
    c
}

#[tokio::test]
async fn a_replay_inside_the_window_is_dropped_and_one_past_it_is_stored_again() {
    let Some(server) = start().await else { return };
    let mut c = config(&server.url, "WINDOW");
    c.duplicate_window = Duration::from_secs(2);
    let sink = JetStreamSink::connect(c).await.unwrap();
    let batch = json_batch("t", 0, 0..=99);
    let first = sink.consume(&batch).await.unwrap();
    assert_eq!((first.written, first.already_present), (100, 0));
    assert_eq!(sink.duplicate_window(), Some(Duration::from_secs(2)));
    // The same batch, and another cut over it: nothing stored again, every record told.
    let again = sink.consume(&batch).await.unwrap();
    assert_eq!((again.written, again.already_present), (0, 100));
    let rebatched = sink.consume(&json_batch("t", 0, 50..=149)).await.unwrap();
    assert_eq!((rebatched.written, rebatched.already_present), (50, 50));
    assert_eq!(
        held(&server.url, "WINDOW").await,
        (0..150).collect::<Vec<_>>()
    );
    // Past the window the ids are forgotten: the replay is stored a second time (the horizon).
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let late = sink.consume(&json_batch("t", 0, 0..=9)).await.unwrap();
    assert_eq!((late.written, late.already_present), (10, 0));
    let offsets = held(&server.url, "WINDOW").await;
    assert_eq!(
        offsets.len(),
        160,
        "ten records past the window stored again"
    );
}

#[tokio::test]
async fn what_the_stream_cannot_take_is_rejected_with_its_offset() {
    let Some(server) = start().await else { return };
    let sink = JetStreamSink::connect(config(&server.url, "REFUSE"))
        .await
        .unwrap();
    let mut records: Vec<Record> = (0..4)
        .map(|o| Record::new(RecordId::new("t", 1, o), format!("v{o}")))
        .collect();
    records[1].value = vec![b'x'; 2 << 20].into();
    records[2].headers.push(pico_sink::Header {
        name: "a b".into(),
        value: b"x".to_vec().into(),
    });
    let batch = pico_sink::Batch::new(records).unwrap();
    let out = sink.consume(&batch).await.unwrap();
    let rejected: Vec<u64> = out.rejected.iter().map(|r| r.id.offset).collect();
    assert_eq!(rejected, [1, 2], "{:?}", out.rejected);
    assert!(
        out.rejected[0].reason.contains("max_payload"),
        "{:?}",
        out.rejected
    );
    assert_eq!(out.written, 2);
    assert_eq!(held(&server.url, "REFUSE").await, [0, 3]);
}

#[tokio::test]
async fn a_missing_stream_or_a_subject_of_another_stream_is_fatal_with_what_to_change() {
    let Some(server) = start().await else { return };
    let mut c = config(&server.url, "MISSING");
    c.create_stream = false;
    let e = JetStreamSink::connect(c)
        .await
        .unwrap()
        .open()
        .await
        .unwrap_err();
    assert!(
        e.is_fatal() && e.message().contains("create_stream = true"),
        "{e}"
    );

    let client = pico_sink_jetstream::async_nats::connect(&server.url)
        .await
        .unwrap();
    jetstream::new(client.clone())
        .create_stream(stream::Config {
            name: "OTHER".into(),
            subjects: vec!["shared.>".into()],
            ..stream::Config::default()
        })
        .await
        .unwrap();
    let mut c = JetStreamSinkConfig::new("", "MINE", "shared.orders");
    c.create_stream = true;
    let sink = JetStreamSink::with_client(client, c).unwrap();
    let e = sink.consume(&json_batch("t", 0, 0..=0)).await.unwrap_err();
    assert!(e.is_fatal(), "{e}");
    assert!(e.message().contains("shared.orders"), "{e}");
}

#[tokio::test]
async fn building_makes_no_connection_and_a_server_that_does_not_answer_is_retryable() {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let mut c = JetStreamSinkConfig::new(format!("nats://127.0.0.1:{port}"), "DOWN", "pico.down");
    c.ack_timeout = Duration::from_millis(500);
    let sink = JetStreamSink::connect(c).await.unwrap();
    let e = sink.consume(&json_batch("t", 0, 0..=0)).await.unwrap_err();
    assert!(e.is_retryable(), "{e}");
    assert!(
        e.message()
            .contains("check url, token and credentials_file"),
        "{e}"
    );
}

/// A relay in front of the server that, while armed, holds back the first request whose bytes
/// contain `trigger` (and everything after it on that connection) until released: a request
/// cut on its way, deterministically.
struct Holding {
    addr: std::net::SocketAddr,
    held: std::sync::Arc<std::sync::atomic::AtomicU32>,
    release: tokio::sync::watch::Sender<bool>,
}

impl Holding {
    async fn start(upstream: &str, trigger: &'static [u8]) -> Self {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicU32, Ordering};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let upstream = upstream.trim_start_matches("nats://").to_owned();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let held = Arc::new(AtomicU32::new(0));
        let (release, released) = tokio::sync::watch::channel(false);
        let counter = held.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = tokio::net::TcpStream::connect(&upstream).await.unwrap();
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
                });
                let (counter, mut released) = (counter.clone(), released.clone());
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    loop {
                        let n = match client_read.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => n,
                        };
                        let chunk = &buf[..n];
                        if !*released.borrow() && chunk.windows(trigger.len()).any(|w| w == trigger)
                        {
                            counter.fetch_add(1, Ordering::SeqCst);
                            let _ = released.wait_for(|r| *r).await;
                        }
                        if server_write.write_all(chunk).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Self {
            addr,
            held,
            release,
        }
    }

    fn url(&self) -> String {
        format!("nats://{}", self.addr)
    }

    fn held(&self) -> u32 {
        self.held.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[tokio::test]
async fn a_lookup_of_the_subject_cut_on_its_way_is_retryable_and_the_next_open_succeeds() {
    let Some(server) = start().await else { return };
    // The stream is found (its info request passes), then the request asking which stream
    // captures the subject never reaches the server.
    let relay = Holding::start(&server.url, b"$JS.API.STREAM.NAMES").await;
    let mut c = config(&relay.url(), "CUT");
    c.ack_timeout = Duration::from_secs(1);
    let sink = JetStreamSink::connect(c).await.unwrap();
    let e = sink.open().await.unwrap_err();
    eprintln!("requests held back: {}; open answered: {e}", relay.held());
    assert_eq!(relay.held(), 1, "the fault did not happen");
    assert!(
        e.is_retryable(),
        "a request that timed out is not fatal: {e}"
    );
    relay.release.send_replace(true);
    sink.open().await.unwrap();
    let out = sink.consume(&json_batch("t", 0, 0..=9)).await.unwrap();
    assert_eq!(out.written, 10);
    assert_eq!(held(&server.url, "CUT").await, (0..10).collect::<Vec<_>>());
}
