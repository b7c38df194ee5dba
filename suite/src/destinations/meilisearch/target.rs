//! The Meilisearch sink against a real Meilisearch: a server named by `PICO_MEILISEARCH_URL`
//! (key in `PICO_MEILISEARCH_KEY`), the pinned image through the docker provider, or the
//! `meilisearch` binary on this machine (`PICO_MEILISEARCH_BIN` or `PATH`) started natively;
//! the docker and native servers get a master key. The fault proxy cuts the answer to the
//! document POST. Reading back waits until the index has no enqueued or processing task: a
//! `202` only means enqueued.

use std::sync::Arc;

use std::time::Duration;

use async_trait::async_trait;
use pico_sink_meilisearch::{MeilisearchSink, MeilisearchSinkConfig};

use crate::destinations::read::row_from_document;
use crate::destinations::runtime::sink_section;
use crate::provide::ANY_SERVER;
use crate::serve::docker::ContainerSpec;
use crate::serve::hosted::{Hosted, provide};
use crate::serve::native::BinaryServer;
use crate::serve::server::wait_http;
use crate::serve::{Served, ServedDestination, Store};
use pico_conformance::horizon::{Horizon, Upkeep};
use pico_conformance::provider::ProviderKind;
use pico_conformance::target::{
    Destination, PayloadForm, Readback, ServerInfo, SinkUnderTest, Target,
};

/// The master key of the container the docker provider starts.
const MASTER_KEY: &str = "pico-master-key-0123456789";

/// The Meilisearch sink.
pub struct MeilisearchTarget;

#[async_trait]
impl Target for MeilisearchTarget {
    fn name(&self) -> &'static str {
        "meilisearch"
    }
    fn sink_crate(&self) -> &'static str {
        "pico-sink-meilisearch"
    }
    fn providers(&self) -> Vec<ProviderKind> {
        ANY_SERVER.to_vec()
    }
    fn docker_image(&self) -> Option<String> {
        crate::images::image("meilisearch")
    }
    async fn provision(&self, provider: ProviderKind) -> Result<Box<dyn Destination>, String> {
        Ok(Box::new(serve(provider).await?))
    }
}

/// A Meilisearch through `provider`, ready, with the key the sink needs.
pub(super) async fn serve(provider: ProviderKind) -> Result<ServedDestination<Meili>, String> {
    let spec = ContainerSpec {
        service: "meilisearch",
        port: 7700,
        env: vec![
            ("MEILI_NO_ANALYTICS", "true".into()),
            ("MEILI_MASTER_KEY", MASTER_KEY.into()),
        ],
        ..ContainerSpec::default()
    };
    let hosted = provide("meilisearch", provider, spec, "http", Some(&MeiliBinary)).await?;
    let key = match provider {
        ProviderKind::External => std::env::var("PICO_MEILISEARCH_KEY").ok(),
        _ => Some(MASTER_KEY.to_owned()),
    };
    wait_http(
        &format!("{}/health", hosted.url),
        Duration::from_secs(120),
        &[],
        |s, _| s == 200,
    )
    .await?;
    let store = Meili { key };
    let version = store
        .get(&hosted, "version")
        .await
        .map(|v| v["pkgVersion"].as_str().unwrap_or("unknown").to_owned())
        .unwrap_or_else(|e| format!("unknown ({e})"));
    Ok(ServedDestination {
        served: Served::new(hosted),
        info: ServerInfo {
            name: "Meilisearch".into(),
            version,
        },
        form: PayloadForm::Json,
        store,
    })
}

/// Meilisearch as a single binary (the native provider).
struct MeiliBinary;

impl BinaryServer for MeiliBinary {
    fn sink(&self) -> &'static str {
        "meilisearch"
    }
    fn binary_names(&self) -> &'static [&'static str] {
        &["meilisearch"]
    }
    fn command(
        &self,
        bin: &std::path::Path,
        dir: &std::path::Path,
        port: u16,
    ) -> Result<tokio::process::Command, String> {
        let mut command = tokio::process::Command::new(bin);
        command
            .arg("--http-addr")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--master-key")
            .arg(MASTER_KEY)
            .arg("--db-path")
            .arg(dir.join("data.ms"))
            .arg("--dump-dir")
            .arg(dir.join("dumps"))
            .arg("--snapshot-dir")
            .arg(dir.join("snapshots"))
            .arg("--no-analytics")
            .arg("--env")
            .arg("development");
        Ok(command)
    }
    fn health(&self) -> &'static str {
        "/health"
    }
    fn ready(&self, status: u16, body: &str) -> bool {
        status == 200 && body.contains("available")
    }
}

/// Meilisearch as the sink and the suite see it: the key they send.
pub(super) struct Meili {
    key: Option<String>,
}

impl Meili {
    /// The sink's configuration writing into index `isolation` at `url`.
    fn config(&self, url: String, isolation: &str) -> MeilisearchSinkConfig {
        let mut config = MeilisearchSinkConfig::new(url, isolation);
        config.api_key = self.key.clone().map(Into::into);
        config
    }

    /// GET a path; `Ok(Null)` for 404.
    async fn get(&self, hosted: &Hosted, path: &str) -> Result<serde_json::Value, String> {
        let mut request = reqwest::Client::new().get(format!("{}/{path}", hosted.url));
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| e.to_string())?;
        if response.status().as_u16() == 404 {
            return Ok(serde_json::Value::Null);
        }
        if !response.status().is_success() {
            return Err(format!("GET {path}: {}", response.status()));
        }
        response.json().await.map_err(|e| e.to_string())
    }
}

#[async_trait]
impl Store for Meili {
    type Server = Hosted;

    /// The document write (`POST /indexes/{uid}/documents?primaryKey=…`), not the pre-read
    /// (`POST /indexes/{uid}/documents/fetch`).
    fn lost_ack_trigger(&self) -> Option<&'static [u8]> {
        Some(b"/documents?primaryKey=")
    }

    async fn sink(
        &self,
        served: &Served<Hosted>,
        isolation: &str,
    ) -> Result<SinkUnderTest, String> {
        let (url, proxy) = served.proxied("http").await?;
        let sink = MeilisearchSink::new(self.config(url, isolation)).map_err(|e| e.to_string())?;
        Ok(SinkUnderTest {
            sink: Arc::new(sink),
            faults: Some(proxy),
        })
    }

    async fn sink_section(
        &self,
        _served: &Served<Hosted>,
        isolation: &str,
        via: std::net::SocketAddr,
    ) -> Result<String, String> {
        sink_section(
            "meilisearch",
            &self.config(format!("http://{via}"), isolation),
        )
    }

    async fn settle(&self, served: &Served<Hosted>, isolation: &str) -> Result<(), String> {
        let started = std::time::Instant::now();
        loop {
            let answer = self
                .get(
                    served.server(),
                    &format!("tasks?indexUids={isolation}&statuses=enqueued,processing&limit=1"),
                )
                .await?;
            if answer["total"].as_u64() == Some(0) || answer.is_null() {
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(120) {
                return Err(format!(
                    "index {isolation} still has tasks after 120 s: {answer}"
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// No upkeep to run on demand.
    async fn pass_horizon(&self, _: &Served<Hosted>, _: &str) -> Result<Upkeep, String> {
        Ok(Upkeep::of(Horizon::unbounded(
            "the primary key from the identity: as long as the document is held",
        )))
    }

    async fn read_back(
        &self,
        served: &Served<Hosted>,
        isolation: &str,
    ) -> Result<Readback, String> {
        let answer = self
            .get(
                served.server(),
                &format!("indexes/{isolation}/documents?limit=100000"),
            )
            .await?;
        let rows = match answer["results"].as_array() {
            Some(docs) => docs
                .iter()
                .map(|d| row_from_document(d.clone()))
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        Ok(Readback::of_rows(rows))
    }
}
