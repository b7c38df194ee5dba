//! A PostgreSQL server from any provider: external (`PICO_POSTGRES_URL`), docker (the official
//! image), or native (a throwaway cluster from the binaries installed here: `initdb` in a temp
//! dir, a free port, fsync off; stopped and removed afterwards).

use std::path::{Path, PathBuf};
use std::time::Duration;

use testcontainers_modules::postgres::Postgres;
use testcontainers_modules::testcontainers::core::IntoContainerPort;
use testcontainers_modules::testcontainers::runners::AsyncRunner;
use testcontainers_modules::testcontainers::{ContainerAsync, ImageExt};
use tokio::process::Command;

use crate::images::image;
use crate::provide::{docker_engine, external_url, free_port};
use crate::serve::Server;
use crate::serve::reaper;
use pico_conformance::provider::ProviderKind;
use pico_conformance::target::ServerInfo;

/// A running PostgreSQL and what keeps it alive.
pub struct PgServer {
    url: String,
    keep: Keep,
}

enum Keep {
    External,
    Docker(Box<ContainerAsync<Postgres>>),
    Native(Throwaway),
}

impl PgServer {
    /// Starts or connects through `provider`; `Err` says why that provider cannot here.
    pub async fn provide(provider: ProviderKind) -> Result<Self, String> {
        let server = match provider {
            ProviderKind::External => Self {
                url: external_url("postgres")?,
                keep: Keep::External,
            },
            ProviderKind::Docker => docker().await?,
            ProviderKind::Native => {
                let t = Throwaway::start().await?;
                Self {
                    url: t.url(),
                    keep: Keep::Native(t),
                }
            }
            ProviderKind::Embedded => return Err("PostgreSQL cannot run in-process".into()),
        };
        wait_ready(&server.url).await?;
        Ok(server)
    }

    /// `host:port` of the server, for a fault proxy.
    pub fn socket_addr(&self) -> Result<std::net::SocketAddr, String> {
        let config: tokio_postgres::Config = self.url.parse().map_err(|e| format!("{e}"))?;
        let host = match config.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
            _ => return Err("the url names no TCP host".into()),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        use std::net::ToSocketAddrs;
        (host.as_str(), port)
            .to_socket_addrs()
            .map_err(|e| e.to_string())?
            .next()
            .ok_or_else(|| format!("{host} does not resolve"))
    }

    /// The URL with another host:port (the fault proxy in front of the server); the URL itself
    /// for the server's own address.
    pub fn url_via(&self, addr: std::net::SocketAddr) -> Result<String, String> {
        let real = self.socket_addr()?;
        if addr == real {
            return Ok(self.url.clone());
        }
        let url = self.url.replace(
            &format!("127.0.0.1:{}", real.port()),
            &format!("127.0.0.1:{}", addr.port()),
        );
        if url == self.url {
            return Err(format!(
                "cannot route {} through the fault proxy: use a url with 127.0.0.1:port",
                self.url
            ));
        }
        Ok(url)
    }

    /// Name and version as the server reports them.
    pub async fn info(&self) -> ServerInfo {
        let version = match connect(&self.url).await {
            Ok(client) => client
                .query_one("SHOW server_version", &[])
                .await
                .map(|r| r.get::<_, String>(0))
                .unwrap_or_else(|e| format!("unknown ({e})")),
            Err(e) => format!("unknown ({e})"),
        };
        ServerInfo {
            name: "PostgreSQL".into(),
            version,
        }
    }
}

#[async_trait::async_trait]
impl Server for PgServer {
    /// Connection URL.
    fn url(&self) -> &str {
        &self.url
    }

    /// Stops what the provider started.
    async fn stop(self) -> Result<(), String> {
        match self.keep {
            Keep::External => Ok(()),
            Keep::Docker(c) => c.rm().await.map_err(|e| e.to_string()),
            Keep::Native(t) => t.stop().await,
        }
    }
}

/// A client on its own connection task.
pub async fn connect(url: &str) -> Result<tokio_postgres::Client, String> {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .map_err(|e| match e.as_db_error() {
            Some(db) => format!("{} ({})", db.message(), db.code().code()),
            None => e.to_string(),
        })?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

async fn wait_ready(url: &str) -> Result<(), String> {
    let mut last = String::new();
    for _ in 0..150 {
        match connect(url).await {
            Ok(c) if c.simple_query("SELECT 1").await.is_ok() => return Ok(()),
            Ok(_) => last = "SELECT 1 failed".into(),
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(format!("server at {url} never became ready: {last}"))
}

async fn docker() -> Result<PgServer, String> {
    docker_engine()?;
    let full = image("postgres").ok_or("no image pinned for postgres")?;
    let (name, tag) = full.rsplit_once(':').ok_or("image without a tag")?;
    // podman 4 reports no host port to testcontainers: map a chosen free port explicitly.
    let port = free_port().map_err(|e| e.to_string())?;
    let container = Postgres::default()
        .with_name(name)
        .with_tag(tag)
        .with_mapped_port(port, 5432.tcp())
        .start()
        .await
        .map_err(|e| format!("starting {full}: {e}"))?;
    Ok(PgServer {
        url: format!("postgres://postgres:postgres@127.0.0.1:{port}/postgres"),
        keep: Keep::Docker(Box::new(container)),
    })
}

/// The newest `initdb` installed (Debian layout first, then PATH).
fn bin_dir() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
        .collect();
    dirs.sort_by_key(|d| {
        d.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    dirs.pop().or_else(|| {
        crate::provide::find_binary(&["initdb"], &[])
            .and_then(|p| p.parent().map(Path::to_path_buf))
    })
}

fn is_root() -> bool {
    std::env::var("USER").is_ok_and(|u| u == "root")
        || std::process::Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// A throwaway cluster started from the installed binaries.
pub struct Throwaway {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    as_postgres: bool,
    /// The postmaster (a daemon, not our child), registered with the reaper while it runs.
    postmaster: Option<u32>,
}

impl Throwaway {
    /// `initdb` into a temp dir and `pg_ctl start` on a free port. PostgreSQL refuses to run as
    /// root, so as root the cluster belongs to the `postgres` user (run through `runuser`).
    pub async fn start() -> Result<Self, String> {
        let bin = bin_dir().ok_or("no PostgreSQL server binaries (initdb, pg_ctl) installed")?;
        let dir = tempfile::Builder::new()
            .prefix("pico-pg-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let as_postgres = is_root();
        if as_postgres {
            run(Command::new("chown").arg("postgres:").arg(dir.path())).await?;
        }
        let port = free_port().map_err(|e| e.to_string())?;
        let mut t = Self {
            dir,
            bin,
            port,
            as_postgres,
            postmaster: None,
        };
        let data = t.data();
        t.pg(&[
            "initdb",
            "-D",
            &data,
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-sync",
        ])
        .await?;
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off \
             -c full_page_writes=off -c max_connections=200",
            t.port,
            t.dir.path().display()
        );
        let log = t.dir.path().join("pg.log").display().to_string();
        t.pg(&[
            "pg_ctl", "-D", &data, "-l", &log, "-w", "-t", "60", "start", "-o", &opts,
        ])
        .await
        .map_err(|e| {
            let tail = std::fs::read_to_string(&log).unwrap_or_default();
            format!("{e}; server log: {tail}")
        })?;
        // postmaster.pid starts with the postmaster's pid.
        t.postmaster = std::fs::read_to_string(t.dir.path().join("data/postmaster.pid"))
            .ok()
            .and_then(|text| text.lines().next().and_then(|l| l.trim().parse().ok()));
        if let Some(pid) = t.postmaster {
            reaper::adopt(pid);
        }
        Ok(t)
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    /// Connection URL.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    async fn pg(&self, args: &[&str]) -> Result<(), String> {
        let program = self.bin.join(args[0]);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        };
        cmd.args(&args[1..]);
        run(&mut cmd).await
    }

    /// `pg_ctl stop -m immediate`, then the temp dir goes.
    pub async fn stop(mut self) -> Result<(), String> {
        let data = self.data();
        let stopped = self
            .pg(&["pg_ctl", "-D", &data, "-m", "immediate", "-w", "stop"])
            .await;
        if stopped.is_ok()
            && let Some(pid) = self.postmaster.take()
        {
            reaper::forget(pid);
        }
        stopped
    }
}

impl Drop for Throwaway {
    /// A cluster dropped without [`Throwaway::stop`] (a failed scenario, a panic) is killed:
    /// the postmaster is a daemon and would outlive its deleted data directory.
    fn drop(&mut self) {
        if let Some(pid) = self.postmaster.take() {
            reaper::stop_adopted(pid, "-QUIT");
        }
    }
}

async fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{:?} failed ({}): {}",
            cmd.as_std().get_program(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
