//! An InfluxDB server: external (`PICO_INFLUXDB_URL`, v1 API), docker (the pinned `influxdb:2`
//! image, set up with an org and a token: the sink writes through the v2 API and the suite reads
//! back through the v1-compatible `/query` after mapping each bucket to a database name, DBRP),
//! or native (the `influxd` 1.x installed here, on free ports with a temp dir; killed
//! afterwards).

use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use crate::serve::reaper::Tracked;

use crate::provide::{external_url, find_binary, free_port};
use crate::serve::Server;
use crate::serve::docker::{ContainerSpec, start};
use crate::serve::hosted::{Hosted, Kept};
use crate::serve::server::wait_http;
use pico_conformance::provider::ProviderKind;
use pico_conformance::target::ServerInfo;

/// Org and token of the docker provider's InfluxDB 2.
pub const V2_ORG: &str = "pico";
/// Operator token of the docker provider's InfluxDB 2.
pub const V2_TOKEN: &str = "pico-token-0123456789";

/// A running InfluxDB.
pub struct InfluxServer {
    url: String,
    child: Option<Tracked>,
    _dir: Option<tempfile::TempDir>,
    /// Set for InfluxDB 2 (v2 API): the container and the token.
    v2: Option<Hosted>,
}

impl InfluxServer {
    /// Starts or connects through `provider`.
    pub async fn provide(provider: ProviderKind) -> Result<Self, String> {
        let server = match provider {
            ProviderKind::External => Self {
                url: external_url("influxdb")?,
                child: None,
                _dir: None,
                v2: None,
            },
            ProviderKind::Native => Self::native().await?,
            ProviderKind::Docker => {
                let spec = ContainerSpec {
                    service: "influxdb",
                    port: 8086,
                    env: vec![
                        ("DOCKER_INFLUXDB_INIT_MODE", "setup".into()),
                        ("DOCKER_INFLUXDB_INIT_USERNAME", "pico".into()),
                        ("DOCKER_INFLUXDB_INIT_PASSWORD", "pico-password".into()),
                        ("DOCKER_INFLUXDB_INIT_ORG", V2_ORG.into()),
                        ("DOCKER_INFLUXDB_INIT_BUCKET", "pico".into()),
                        ("DOCKER_INFLUXDB_INIT_ADMIN_TOKEN", V2_TOKEN.into()),
                    ],
                    ..ContainerSpec::default()
                };
                let started = start(&spec).await?;
                let url = format!("http://{}", started.address);
                Self {
                    url: url.clone(),
                    child: None,
                    _dir: None,
                    v2: Some(Hosted::new(
                        url,
                        [Kept::Container(Box::new(started.container))],
                    )),
                }
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
            .map(Tracked::new)
            .map_err(|e| format!("starting influxd: {e}"))?;
        Ok(Self {
            url: format!("http://127.0.0.1:{http}"),
            child: Some(child),
            _dir: Some(dir),
            v2: None,
        })
    }

    async fn wait_ready(&self) -> Result<(), String> {
        wait_http(
            &format!("{}/ping", self.url),
            Duration::from_secs(15),
            &[],
            |s, _| (200..300).contains(&s),
        )
        .await
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

    /// The operator token when this is InfluxDB 2 (v2 API).
    pub fn v2_token(&self) -> Option<&str> {
        self.v2.as_ref().map(|_| V2_TOKEN)
    }

    /// InfluxDB 2: creates bucket `name` and maps it to database `name` (DBRP), so the v1
    /// `/query` reads it. Idempotent.
    pub async fn v2_bucket(&self, name: &str) -> Result<(), String> {
        let client = reqwest::Client::new();
        let auth = format!("Token {V2_TOKEN}");
        let orgs: serde_json::Value = client
            .get(format!("{}/api/v2/orgs?org={V2_ORG}", self.url))
            .header("Authorization", &auth)
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        let org_id = orgs["orgs"][0]["id"]
            .as_str()
            .ok_or_else(|| format!("no org {V2_ORG}: {orgs}"))?
            .to_owned();
        let bucket: serde_json::Value = client
            .post(format!("{}/api/v2/buckets", self.url))
            .header("Authorization", &auth)
            .json(&serde_json::json!({"orgID": org_id, "name": name, "retentionRules": []}))
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        let Some(bucket_id) = bucket["id"].as_str() else {
            // 422: the bucket exists, and so does its mapping.
            return Ok(());
        };
        let r = client
            .post(format!("{}/api/v2/dbrps", self.url))
            .header("Authorization", &auth)
            .json(&serde_json::json!({
                "orgID": org_id, "bucketID": bucket_id, "database": name,
                "retention_policy": "autogen", "default": true
            }))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if r.status().is_success() {
            Ok(())
        } else {
            Err(format!("DBRP for {name}: {}", r.status()))
        }
    }
}

#[async_trait::async_trait]
impl Server for InfluxServer {
    /// Base URL.
    fn url(&self) -> &str {
        &self.url
    }

    /// Stops what the provider started.
    async fn stop(mut self) -> Result<(), String> {
        if let Some(mut child) = self.child.take() {
            child.kill().await.map_err(|e| e.to_string())?;
        }
        if let Some(hosted) = self.v2.take() {
            hosted.stop().await?;
        }
        Ok(())
    }
}
