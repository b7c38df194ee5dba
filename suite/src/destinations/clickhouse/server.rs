//! A ClickHouse server: external (`PICO_CLICKHOUSE_URL`, the HTTP interface), docker (the
//! pinned official image, where deduplication tokens exist), or native (the
//! `clickhouse-server` installed here — Debian's 18.16 — with a generated config on free ports
//! and a temp dir; killed afterwards).

use std::process::Stdio;
use std::time::Duration;

use testcontainers_modules::clickhouse::ClickHouse;
use testcontainers_modules::testcontainers::core::IntoContainerPort;
use testcontainers_modules::testcontainers::runners::AsyncRunner;
use testcontainers_modules::testcontainers::{ContainerAsync, ImageExt};
use tokio::process::Command;

use crate::serve::reaper::Tracked;

use crate::images::image;
use crate::provide::{docker_engine, external_url, find_binary, free_port};
use crate::serve::Server;
use crate::serve::server::wait_http;
use pico_conformance::provider::ProviderKind;
use pico_conformance::target::ServerInfo;

/// A running ClickHouse.
pub struct ClickHouseServer {
    url: String,
    keep: Keep,
}

enum Keep {
    External,
    Docker(Box<ContainerAsync<ClickHouse>>),
    Native(Box<(Tracked, tempfile::TempDir)>),
}

impl ClickHouseServer {
    /// Starts or connects through `provider`.
    pub async fn provide(provider: ProviderKind) -> Result<Self, String> {
        let server = match provider {
            ProviderKind::External => Self {
                url: external_url("clickhouse")?,
                keep: Keep::External,
            },
            ProviderKind::Docker => {
                docker_engine()?;
                let full = image("clickhouse").ok_or("no image pinned for clickhouse")?;
                let (name, tag) = full.rsplit_once(':').ok_or("image without a tag")?;
                let port = free_port().map_err(|e| e.to_string())?;
                let container = ClickHouse::default()
                    .with_name(name)
                    .with_tag(tag)
                    .with_mapped_port(port, 8123.tcp())
                    .start()
                    .await
                    .map_err(|e| format!("starting {full}: {e}"))?;
                Self {
                    url: format!("http://127.0.0.1:{port}"),
                    keep: Keep::Docker(Box::new(container)),
                }
            }
            ProviderKind::Native => Self::native()?,
            ProviderKind::Embedded => return Err("ClickHouse cannot run in-process here".into()),
        };
        server.wait_ready().await?;
        Ok(server)
    }

    fn native() -> Result<Self, String> {
        let bin = find_binary(&["clickhouse-server"], &["/usr/sbin", "/usr/bin"])
            .ok_or("no clickhouse-server installed")?;
        let dir = tempfile::Builder::new()
            .prefix("pico-ch-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let d = dir.path().display().to_string();
        for sub in ["data", "tmp", "user_files", "format_schemas", "log"] {
            std::fs::create_dir_all(dir.path().join(sub)).map_err(|e| e.to_string())?;
        }
        let (http, tcp) = (
            free_port().map_err(|e| e.to_string())?,
            free_port().map_err(|e| e.to_string())?,
        );
        let users = "<yandex><profiles><default/></profiles>\
            <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>\
            <profile>default</profile><quota>default</quota></default></users><quotas><default/></quotas></yandex>";
        std::fs::write(dir.path().join("users.xml"), users).map_err(|e| e.to_string())?;
        let config = format!(
            "<yandex>\
             <logger><level>warning</level><log>{d}/log/server.log</log><errorlog>{d}/log/err.log</errorlog><console>0</console></logger>\
             <http_port>{http}</http_port><tcp_port>{tcp}</tcp_port><listen_host>127.0.0.1</listen_host>\
             <path>{d}/data/</path><tmp_path>{d}/tmp/</tmp_path><user_files_path>{d}/user_files/</user_files_path>\
             <format_schema_path>{d}/format_schemas/</format_schema_path><users_config>{d}/users.xml</users_config>\
             <default_profile>default</default_profile><default_database>default</default_database>\
             <mark_cache_size>536870912</mark_cache_size><uncompressed_cache_size>0</uncompressed_cache_size>\
             <mlock_executable>false</mlock_executable></yandex>"
        );
        let path = dir.path().join("config.xml");
        std::fs::write(&path, config).map_err(|e| e.to_string())?;
        let child = Command::new(bin)
            .arg(format!("--config-file={}", path.display()))
            .arg(format!("--pid-file={d}/ch.pid"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map(Tracked::new)
            .map_err(|e| format!("starting clickhouse-server: {e}"))?;
        Ok(Self {
            url: format!("http://127.0.0.1:{http}"),
            keep: Keep::Native(Box::new((child, dir))),
        })
    }

    async fn wait_ready(&self) -> Result<(), String> {
        wait_http(
            &format!("{}/ping", self.url),
            Duration::from_secs(30),
            &[],
            |s, _| (200..300).contains(&s),
        )
        .await
    }

    /// Whether the server is the user's (connected to, not started here): nothing server-wide
    /// may be changed on it.
    pub fn is_external(&self) -> bool {
        matches!(self.keep, Keep::External)
    }

    /// Runs a query over HTTP and returns the answer text.
    pub async fn query(&self, sql: &str) -> Result<Vec<u8>, String> {
        let url = reqwest::Url::parse(&self.url).map_err(|e| e.to_string())?;
        let r = reqwest::Client::new()
            .post(url)
            .body(sql.to_owned())
            .send()
            .await
            .map_err(|e| format!("{sql}: {e}"))?;
        let ok = r.status().is_success();
        let body = r.bytes().await.map_err(|e| e.to_string())?.to_vec();
        if ok {
            Ok(body)
        } else {
            Err(format!("{sql}: {}", String::from_utf8_lossy(&body)))
        }
    }

    /// Name and version.
    pub async fn info(&self) -> ServerInfo {
        let version = self
            .query("SELECT version()")
            .await
            .map(|v| String::from_utf8_lossy(&v).trim().to_owned())
            .unwrap_or_else(|e| format!("unknown ({e})"));
        ServerInfo {
            name: "ClickHouse".into(),
            version,
        }
    }
}

#[async_trait::async_trait]
impl Server for ClickHouseServer {
    /// HTTP interface URL.
    fn url(&self) -> &str {
        &self.url
    }

    /// Stops what the provider started.
    async fn stop(self) -> Result<(), String> {
        match self.keep {
            Keep::External => Ok(()),
            Keep::Docker(c) => c.rm().await.map_err(|e| e.to_string()),
            Keep::Native(native) => {
                let (mut child, _dir) = *native;
                child.kill().await.map_err(|e| e.to_string())
            }
        }
    }
}
