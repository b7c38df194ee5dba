//! A nats-server with JetStream for the tests (`PICO_NATS_SERVER_BIN` names another binary).
#![allow(dead_code, clippy::unwrap_used)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A nats-server with JetStream, killed on drop.
pub struct NatsServer {
    child: Child,
    /// `nats://127.0.0.1:<port>`.
    pub url: String,
    _store: tempfile::TempDir,
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts nats-server with JetStream on a free loopback port, and waits until it answers.
pub async fn nats_server() -> NatsServer {
    let bin = std::env::var("PICO_NATS_SERVER_BIN").unwrap_or_else(|_| "nats-server".into());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let store = tempfile::tempdir().unwrap();
    let child = Command::new(&bin)
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(store.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{bin}: {e} (scripts/setup.sh installs nats-server)"));
    let server = NatsServer {
        child,
        url: format!("nats://127.0.0.1:{port}"),
        _store: store,
    };
    let started = Instant::now();
    while async_nats::connect(&server.url).await.is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "nats-server did not start"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    server
}

/// A JetStream context on `server` with the stream ORDERS capturing `orders.>`, empty.
pub async fn orders_stream(server: &NatsServer) -> async_nats::jetstream::Context {
    let js = async_nats::jetstream::new(async_nats::connect(&server.url).await.unwrap());
    js.create_stream(async_nats::jetstream::stream::Config {
        name: "ORDERS".into(),
        subjects: vec!["orders.>".into()],
        ..async_nats::jetstream::stream::Config::default()
    })
    .await
    .unwrap();
    js
}
