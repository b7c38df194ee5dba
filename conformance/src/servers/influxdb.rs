//! An InfluxDB 1.x server: external (`PICO_INFLUXDB_URL`, v1 API) or native (the `influxd`
//! installed here, on free ports with a temp dir; killed afterwards). The official
//! `influxdb:2` image speaks the v2 API, whose read-back (Flux) this suite does not implement.

use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

use crate::provider::{ProviderKind, external_url, find_binary, free_port};
use crate::target::ServerInfo;

/// A running InfluxDB.
pub struct InfluxServer {
    url: String,
    child: Option<Child>,
    _dir: Option<tempfile::TempDir>,
}

impl InfluxServer {
    /// Starts or connects through `provider`.
    pub async fn provide(provider: ProviderKind) -> Result<Self, String> {
        let server = match provider {
            ProviderKind::External => Self {
                url: external_url("influxdb")?,
                child: None,
                _dir: None,
            },
            ProviderKind::Native => Self::native().await?,
            ProviderKind::Docker => {
                return Err("the influxdb:2 image speaks only the v2 API; reading points back through Flux is not implemented".into());
            }
            ProviderKind::Embedded => return Err("InfluxDB cannot run in-process".into()),
        };
        server.wait_ready().await?;
        Ok(server)
    }

    async fn native() -> Result<Self, String> {
        let bin = find_binary(&["influxd"], &["/usr/bin"]).ok_or("no influxd installed")?;
        let dir = tempfile::Builder::new()
            .prefix("pico-influx-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let (http, rpc) = (
            free_port().map_err(|e| e.to_string())?,
            free_port().map_err(|e| e.to_string())?,
        );
        let d = dir.path().display();
        let conf = format!(
            "reporting-disabled = true\nbind-address = \"127.0.0.1:{rpc}\"\n\
             [meta]\n  dir = \"{d}/meta\"\n\
             [data]\n  dir = \"{d}/data\"\n  wal-dir = \"{d}/wal\"\n  query-log-enabled = false\n\
             [monitor]\n  store-enabled = false\n\
             [http]\n  enabled = true\n  bind-address = \"127.0.0.1:{http}\"\n  auth-enabled = false\n  log-enabled = false\n\
             [continuous_queries]\n  enabled = false\n"
        );
        let path = dir.path().join("influxdb.conf");
        std::fs::write(&path, conf).map_err(|e| e.to_string())?;
        let log =
            std::fs::File::create(dir.path().join("influxd.log")).map_err(|e| e.to_string())?;
        let child = Command::new(bin)
            .arg("-config")
            .arg(&path)
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("starting influxd: {e}"))?;
        Ok(Self {
            url: format!("http://127.0.0.1:{http}"),
            child: Some(child),
            _dir: Some(dir),
        })
    }

    async fn wait_ready(&self) -> Result<(), String> {
        let client = reqwest::Client::new();
        for _ in 0..150 {
            if let Ok(r) = client.get(format!("{}/ping", self.url)).send().await
                && r.status().is_success()
            {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(format!("InfluxDB at {} never answered /ping", self.url))
    }

    /// Base URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Name and version from `/ping`.
    pub async fn info(&self) -> ServerInfo {
        let version = match reqwest::Client::new()
            .get(format!("{}/ping", self.url))
            .send()
            .await
        {
            Ok(r) => r
                .headers()
                .get("X-Influxdb-Version")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("unknown")
                .to_owned(),
            Err(e) => format!("unknown ({e})"),
        };
        ServerInfo {
            name: "InfluxDB".into(),
            version,
        }
    }

    /// Stops what the provider started.
    pub async fn stop(mut self) -> Result<(), String> {
        if let Some(mut child) = self.child.take() {
            child.kill().await.map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}
