//! An Apache Iggy server for the tests (`PICO_IGGY_SERVER_BIN`, or `iggy-server` on `PATH`),
//! TCP only, on a free loopback port, its data in a temporary directory.
#![allow(dead_code, clippy::unwrap_used)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use iggy::prelude::{
    Client, Identifier, IggyMessage, MessageClient, Partitioning, StreamClient, TcpClient,
    TopicClient, TopicCreateOptions, UserClient,
};

pub const USER: &str = "pico";
pub const PASSWORD: &str = "pico-tests-secret";

/// An Iggy server, killed on drop.
pub struct IggyServer {
    child: Child,
    /// `iggy://USER:PASSWORD@127.0.0.1:<port>`.
    pub url: String,
    /// `127.0.0.1:<port>`.
    pub address: String,
    data: tempfile::TempDir,
}

impl Drop for IggyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `iggy-server` (TCP only) on `address` with its data under `data`.
fn spawn(address: &str, data: &std::path::Path) -> Child {
    let bin = std::env::var("PICO_IGGY_SERVER_BIN").unwrap_or_else(|_| "iggy-server".into());
    Command::new(&bin)
        .current_dir(data)
        .env("IGGY_SYSTEM_PATH", data.join("data"))
        .env("IGGY_TCP_ADDRESS", address)
        .env("IGGY_HTTP_ENABLED", "false")
        .env("IGGY_QUIC_ENABLED", "false")
        .env("IGGY_WEBSOCKET_ENABLED", "false")
        .env("IGGY_ROOT_USERNAME", USER)
        .env("IGGY_ROOT_PASSWORD", PASSWORD)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "{bin}: {e} (scripts/servers.sh sets PICO_IGGY_SERVER_BIN; or build iggy-server \
                 from github.com/apache/iggy)"
            )
        })
}

impl IggyServer {
    /// Waits until a client signs in (20 s at most).
    async fn ready(&self) {
        let started = Instant::now();
        while signed_in(&self.url).await.is_none() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "iggy-server did not start"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A crash: SIGKILL, then the server started again on the same port with its data.
    pub async fn crash_and_restart(&mut self) {
        self.crash_for(Duration::ZERO).await;
    }

    /// A crash and `down` without a server before it starts again with its data.
    pub async fn crash_for(&mut self, down: Duration) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        tokio::time::sleep(down).await;
        self.child = spawn(&self.address, self.data.path());
        self.ready().await;
    }
}

/// Starts an Iggy server (TCP only) and waits until a client signs in.
pub async fn iggy_server() -> IggyServer {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let data = tempfile::tempdir().unwrap();
    let address = format!("127.0.0.1:{port}");
    let server = IggyServer {
        child: spawn(&address, data.path()),
        url: format!("iggy://{USER}:{PASSWORD}@{address}"),
        address,
        data,
    };
    server.ready().await;
    server
}

/// A client signed in as the tests' user, or `None`.
pub async fn signed_in(url: &str) -> Option<TcpClient> {
    let client = TcpClient::from_connection_string(url).ok()?;
    client.connect().await.ok()?;
    client.login_user(USER, PASSWORD).await.ok()?;
    Some(client)
}

/// Creates `stream` and its `topic` with `partitions` partitions; returns the ids of the
/// partitions, as the server numbers them.
pub async fn topic(url: &str, stream: &str, topic: &str, partitions: u32) -> Vec<u32> {
    topic_with(
        url,
        stream,
        topic,
        partitions,
        TopicCreateOptions::default(),
    )
    .await
}

/// [`topic`] with `options` (durability, flush cadence) for the topic.
pub async fn topic_with(
    url: &str,
    stream: &str,
    topic: &str,
    partitions: u32,
    options: TopicCreateOptions,
) -> Vec<u32> {
    let client = signed_in(url).await.unwrap();
    let stream_id = Identifier::named(stream).unwrap();
    if client.get_stream(&stream_id).await.unwrap().is_none() {
        client.create_stream(stream).await.unwrap();
    }
    let created = client
        .create_topic(
            &stream_id,
            topic,
            &TopicCreateOptions {
                partitions_count: Some(partitions),
                ..options
            },
        )
        .await
        .unwrap();
    let mut ids: Vec<u32> = created.partitions.iter().map(|p| p.id).collect();
    ids.sort_unstable();
    assert_eq!(ids.len(), partitions as usize, "{created:?}");
    ids
}

/// Appends `count` messages to `partition`, payloads `"{prefix}-{i}"`.
pub async fn produce(
    url: &str,
    stream: &str,
    topic: &str,
    partition: u32,
    prefix: &str,
    count: u32,
) {
    let client = signed_in(url).await.unwrap();
    let mut messages: Vec<IggyMessage> = (0..count)
        .map(|i| {
            IggyMessage::builder()
                .payload(format!("{prefix}-{i}").into())
                .build()
                .unwrap()
        })
        .collect();
    client
        .send_messages(
            &Identifier::named(stream).unwrap(),
            &Identifier::named(topic).unwrap(),
            &Partitioning::partition_id(partition),
            &mut messages,
        )
        .await
        .unwrap();
}
