//! A nats-server with JetStream (`nats-server`, `PICO_NATS_SERVER_BIN` or on `PATH`; Debian's
//! `nats-server` package) started natively for the crash suite's JetStream cases: its HTTP
//! monitoring on the first of two free ports (`/healthz` says when JetStream is ready), the
//! client port on the second, JetStream's store under the server's directory. Test
//! infrastructure only: users point `pico-nats` at their own server.

use std::path::Path;

use tokio::process::Command;

use pico_conformance::target::ServerInfo;

use crate::serve::native::{BinaryServer, NativeProcess, locate, printed_version, start};
use crate::serve::server::Server;

/// How the suite starts `nats-server`.
struct NatsBinary;

impl BinaryServer for NatsBinary {
    fn sink(&self) -> &'static str {
        "nats-server"
    }

    fn binary_names(&self) -> &'static [&'static str] {
        &["nats-server"]
    }

    fn ports(&self) -> u16 {
        2
    }

    fn command(&self, bin: &Path, dir: &Path, port: u16) -> Result<Command, String> {
        let client = port
            .checked_add(1)
            .ok_or_else(|| format!("no port after {port} for NATS clients"))?;
        let mut command = Command::new(bin);
        command
            .args(["-js", "-a", "127.0.0.1", "-m"])
            .arg(port.to_string())
            .arg("-p")
            .arg(client.to_string())
            .arg("-sd")
            .arg(dir.join("jetstream"));
        Ok(command)
    }

    fn health(&self) -> &'static str {
        "/healthz"
    }
}

/// A running nats-server.
pub struct NatsServer {
    process: NativeProcess,
    /// `nats://127.0.0.1:<client port>`, as `pico-nats`'s `[jetstream] url` takes it.
    pub url: String,
    /// What `nats-server --version` printed (`nats-server: v2.9.10`), as `2.9.10`.
    pub version: String,
}

impl NatsServer {
    /// Finds and starts `nats-server`, ready once `/healthz` answers.
    pub async fn start() -> Result<Self, String> {
        let bin = locate(&NatsBinary)?;
        let version = printed_version(&bin, "nats-server: v").await?;
        let process = start(&NatsBinary).await?;
        let url = format!("nats://127.0.0.1:{}", process.port_after(1)?);
        Ok(Self {
            process,
            url,
            version,
        })
    }

    /// Name and version, as the reports name servers.
    pub fn info(&self) -> ServerInfo {
        ServerInfo {
            name: "NATS (nats-server, JetStream)".into(),
            version: self.version.clone(),
        }
    }

    /// A crash and a restart: kills the server, waits `down`, starts it again on the same
    /// ports with its data.
    pub async fn crash_for(&mut self, down: std::time::Duration) -> Result<(), String> {
        self.process.crash_for(&NatsBinary, down).await
    }

    /// Stops the server and removes its data.
    pub async fn stop(self) -> Result<(), String> {
        self.process.stop().await
    }
}

#[async_trait::async_trait]
impl Server for NatsServer {
    fn url(&self) -> &str {
        &self.url
    }

    async fn stop(self) -> Result<(), String> {
        NatsServer::stop(self).await
    }
}
