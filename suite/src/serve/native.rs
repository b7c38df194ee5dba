//! The native provider for destinations whose server is one binary on the machine
//! (Meilisearch, Quickwit): found through `PICO_<SINK>_BIN` or on `PATH`, started on free
//! ports with a throwaway data directory, ready when its health endpoint says so, stopped with
//! SIGTERM (then killed after a grace period) and cleaned after.
//!
//! A server describes itself with a small [`BinaryServer`] impl; everything else is here.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use crate::serve::reaper::Tracked;

use crate::provide::{find_binary, free_ports};
use crate::serve::server::wait_http;

/// What differs between single-binary servers.
pub trait BinaryServer: Send + Sync {
    /// The sink it serves (`meilisearch`): names the `PICO_<SINK>_BIN` variable.
    fn sink(&self) -> &'static str;
    /// File names to look for on `PATH`.
    fn binary_names(&self) -> &'static [&'static str];
    /// Consecutive ports it needs from the first one (Quickwit: REST and gRPC).
    fn ports(&self) -> u16 {
        1
    }
    /// The command that starts it on `port` with its data under `dir` (config files may be
    /// written there); the working directory is `dir`.
    fn command(&self, bin: &Path, dir: &Path, port: u16) -> Result<Command, String>;
    /// The path that answers once it is ready, and when the answer means ready.
    fn health(&self) -> &'static str;
    /// Whether a health answer means ready.
    fn ready(&self, status: u16, body: &str) -> bool {
        let _ = body;
        status == 200
    }
    /// How long it may take to get ready.
    fn startup(&self) -> Duration {
        Duration::from_secs(60)
    }
    /// How long SIGTERM may take before the process is killed.
    fn grace(&self) -> Duration {
        Duration::from_secs(5)
    }
}

/// The variable naming a server binary for `sink` (`PICO_MEILISEARCH_BIN`).
pub fn binary_var(sink: &str) -> String {
    format!("PICO_{}_BIN", sink.to_ascii_uppercase().replace('-', "_"))
}

/// The binary for `server`: the variable's path, or one of its names on `PATH`.
pub fn locate(server: &dyn BinaryServer) -> Result<PathBuf, String> {
    let var = binary_var(server.sink());
    if let Some(path) = std::env::var_os(&var) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("{var}={} is not a file", path.display()))
        };
    }
    find_binary(server.binary_names(), &[]).ok_or_else(|| {
        format!(
            "no {} binary: set {var} or put {} on PATH",
            server.sink(),
            server.binary_names().join(" or ")
        )
    })
}

/// A server process started by [`start`]; stopped by [`NativeProcess::stop`] (or killed when
/// dropped).
pub struct NativeProcess {
    child: Tracked,
    dir: tempfile::TempDir,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    grace: Duration,
}

impl NativeProcess {
    /// The `n`-th port after the one its health answers on (a server with several ports).
    pub fn port_after(&self, n: u16) -> Result<u16, String> {
        self.url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse::<u16>().ok())
            .and_then(|p| p.checked_add(n))
            .ok_or_else(|| format!("no port {n} after the one of {}", self.url))
    }
}

/// What `bin --version` printed, without `prefix` (`server `, `nats-server: v`).
pub async fn printed_version(bin: &Path, prefix: &str) -> Result<String, String> {
    let printed = tokio::process::Command::new(bin)
        .arg("--version")
        .output()
        .await
        .map_err(|e| format!("{} --version: {e}", bin.display()))?;
    let text = String::from_utf8_lossy(&printed.stdout);
    let text = text.trim();
    Ok(text.strip_prefix(prefix).unwrap_or(text).to_owned())
}

/// Finds, starts and waits for `server`.
pub async fn start(server: &dyn BinaryServer) -> Result<NativeProcess, String> {
    let bin = locate(server)?;
    let dir = tempfile::Builder::new()
        .prefix(&format!("pico-{}-", server.sink()))
        .tempdir()
        .map_err(|e| e.to_string())?;
    let port = free_ports(server.ports()).map_err(|e| e.to_string())?;
    let child = spawn(server, &bin, dir.path(), port)?;
    let process = NativeProcess {
        child,
        dir,
        url: format!("http://127.0.0.1:{port}"),
        grace: server.grace(),
    };
    if let Err(e) = process.ready(server).await {
        let _ = process.stop().await;
        return Err(e);
    }
    tracing::info!(sink = server.sink(), url = %process.url, bin = %bin.display(), "native server ready");
    Ok(process)
}

/// Starts `bin` for `server` on `port` with its data under `dir`, its output appended to
/// `dir/server.log`.
fn spawn(server: &dyn BinaryServer, bin: &Path, dir: &Path, port: u16) -> Result<Tracked, String> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("server.log"))
        .map_err(|e| e.to_string())?;
    let log_err = log.try_clone().map_err(|e| e.to_string())?;
    server
        .command(bin, dir, port)?
        .current_dir(dir)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .kill_on_drop(true)
        .spawn()
        .map(Tracked::new)
        .map_err(|e| format!("starting {}: {e}", bin.display()))
}

impl NativeProcess {
    /// Waits until `server`'s health endpoint says ready ([`BinaryServer::startup`] at most).
    async fn ready(&self, server: &dyn BinaryServer) -> Result<(), String> {
        let health = format!("{}{}", self.url, server.health());
        wait_http(&health, server.startup(), &[], |s, b| server.ready(s, b))
            .await
            .map_err(|e| format!("{e}; its log ends: {}", self.log_tail()))
    }

    /// A crash and a restart: kills the server (SIGKILL), keeps its data, waits `down`, then
    /// starts it again on the same ports and waits until it is ready.
    pub async fn crash_for(
        &mut self,
        server: &dyn BinaryServer,
        down: Duration,
    ) -> Result<(), String> {
        self.child.kill().await.map_err(|e| e.to_string())?;
        tokio::time::sleep(down).await;
        let port: u16 = self
            .url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| format!("no port in {}", self.url))?;
        self.child = spawn(server, &locate(server)?, self.dir.path(), port)?;
        self.ready(server).await
    }

    /// The last lines of the server's log (before any stack backtrace).
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
        let before_trace = text.split("Stack backtrace").next().unwrap_or_default();
        let lines: Vec<&str> = before_trace
            .lines()
            .filter(|l| !l.trim().is_empty())
            .rev()
            .take(5)
            .collect();
        lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
    }

    /// SIGTERM, then SIGKILL after the grace period; the data directory is removed.
    pub async fn stop(mut self) -> Result<(), String> {
        if let Some(pid) = self.child.id() {
            let _ = Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status()
                .await;
            if tokio::time::timeout(self.grace, self.child.wait())
                .await
                .is_ok()
            {
                return Ok(());
            }
        }
        self.child.kill().await.map_err(|e| e.to_string())
    }
}
