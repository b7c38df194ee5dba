//! An Apache Iggy server (`iggy-server`, `PICO_IGGY_SERVER_BIN` or on `PATH`) started natively
//! for the crash suite's Iggy cases: HTTP on the first of two free ports (its `/ping` says when
//! it is ready), the TCP protocol `pico-iggy` speaks on the second, its root user the suite's.
//! Test infrastructure only: users point `pico-iggy` at their own server.

use std::path::Path;

use tokio::process::Command;

use pico_conformance::target::ServerInfo;

use crate::serve::native::{BinaryServer, NativeProcess, locate, printed_version, start};

/// The root user the suite starts the server with.
pub const USER: &str = "pico";
/// Its password (a throwaway server on the loopback interface).
pub const PASSWORD: &str = "pico-crash-secret";

/// How the suite starts `iggy-server`.
struct IggyBinary;

impl BinaryServer for IggyBinary {
    fn sink(&self) -> &'static str {
        "iggy-server"
    }

    fn binary_names(&self) -> &'static [&'static str] {
        &["iggy-server"]
    }

    fn ports(&self) -> u16 {
        2
    }

    fn command(&self, bin: &Path, dir: &Path, port: u16) -> Result<Command, String> {
        let tcp = port
            .checked_add(1)
            .ok_or_else(|| format!("no port after {port} for Iggy's TCP listener"))?;
        let mut command = Command::new(bin);
        command
            .env("IGGY_SYSTEM_PATH", dir.join("data"))
            .env("IGGY_HTTP_ADDRESS", format!("127.0.0.1:{port}"))
            .env("IGGY_TCP_ADDRESS", format!("127.0.0.1:{tcp}"))
            .env("IGGY_QUIC_ENABLED", "false")
            .env("IGGY_WEBSOCKET_ENABLED", "false")
            .env("IGGY_ROOT_USERNAME", USER)
            .env("IGGY_ROOT_PASSWORD", PASSWORD);
        Ok(command)
    }

    fn health(&self) -> &'static str {
        "/ping"
    }
}

/// A running Iggy server.
pub struct IggyServer {
    process: NativeProcess,
    /// `iggy://USER:PASSWORD@127.0.0.1:<tcp port>`, as `pico-iggy`'s `[iggy] url` takes it.
    pub url: String,
    /// What `iggy-server --version` printed (`server 0.9.0-edge.5`), without `server `.
    pub version: String,
}

impl IggyServer {
    /// Finds and starts `iggy-server`, ready once it answers `/ping`.
    pub async fn start() -> Result<Self, String> {
        let bin = locate(&IggyBinary)?;
        let version = printed_version(&bin, "server ").await?;
        let process = start(&IggyBinary).await?;
        let url = format!(
            "iggy://{USER}:{PASSWORD}@127.0.0.1:{}",
            process.port_after(1)?
        );
        Ok(Self {
            process,
            url,
            version,
        })
    }

    /// Name and version, as the reports name servers.
    pub fn info(&self) -> ServerInfo {
        ServerInfo {
            name: "Apache Iggy (iggy-server)".into(),
            version: self.version.clone(),
        }
    }

    /// A crash and a restart: kills the server, waits `down`, starts it again on the same
    /// ports with its data.
    pub async fn crash_for(&mut self, down: std::time::Duration) -> Result<(), String> {
        self.process.crash_for(&IggyBinary, down).await
    }

    /// Stops the server and removes its data.
    pub async fn stop(self) -> Result<(), String> {
        self.process.stop().await
    }
}
