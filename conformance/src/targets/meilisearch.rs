//! The Meilisearch sink against a real Meilisearch: the pinned image through the docker
//! provider (with a master key), or a server named by `PICO_MEILISEARCH_URL` (key in
//! `PICO_MEILISEARCH_KEY`). The fault proxy cuts the answer to the document POST.

use std::time::Duration;

use async_trait::async_trait;
use pico_sink_meilisearch::{MeilisearchSink, MeilisearchSinkConfig};

use crate::provider::ProviderKind;
use crate::servers::container::{ContainerSpec, Hosted, provide, wait_http};
use crate::target::{Destination, PayloadForm, Readback, ServerInfo, SinkUnderTest, Target};
use crate::targets::hosted::{HostedDestination, HostedStore};
use crate::targets::row_from_document;

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
        vec![ProviderKind::External, ProviderKind::Docker]
    }
    async fn provision(&self, provider: ProviderKind) -> Result<Box<dyn Destination>, String> {
        let spec = ContainerSpec {
            service: "meilisearch",
            port: 7700,
            env: vec![
                ("MEILI_NO_ANALYTICS", "true".into()),
                ("MEILI_MASTER_KEY", MASTER_KEY.into()),
            ],
            ..ContainerSpec::default()
        };
        let (url, container) = provide("meilisearch", provider, spec, "http").await?;
        let key = match provider {
            ProviderKind::External => std::env::var("PICO_MEILISEARCH_KEY").ok(),
            _ => Some(MASTER_KEY.to_owned()),
        };
        let url = url.trim_end_matches('/').to_owned();
        wait_http(
            &format!("{url}/health"),
            Duration::from_secs(120),
            &[],
            |s, _| s == 200,
        )
        .await?;
        let hosted = Hosted::new(url, container.into_iter().collect());
        let store = Meili { key };
        let version = store
            .get(&hosted, "version")
            .await
            .map(|v| v["pkgVersion"].as_str().unwrap_or("unknown").to_owned())
            .unwrap_or_else(|e| format!("unknown ({e})"));
        Ok(Box::new(HostedDestination {
            hosted,
            info: ServerInfo {
                name: "Meilisearch".into(),
                version,
            },
            form: PayloadForm::Json,
            store,
        }))
    }
}

struct Meili {
    key: Option<String>,
}

impl Meili {
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
impl HostedStore for Meili {
    fn lost_ack_trigger(&self) -> &'static [u8] {
        b"POST /indexes/"
    }

    async fn sink(&self, hosted: &Hosted, isolation: &str) -> Result<SinkUnderTest, String> {
        let (url, proxy) = hosted.proxied(&hosted.url, "http").await?;
        let mut config = MeilisearchSinkConfig::new(url, isolation);
        config.api_key = self.key.clone();
        let sink = MeilisearchSink::new(config).map_err(|e| e.to_string())?;
        Ok(SinkUnderTest {
            sink: Box::new(sink),
            faults: Some(proxy),
        })
    }

    async fn read_back(&self, hosted: &Hosted, isolation: &str) -> Result<Readback, String> {
        let answer = self
            .get(
                hosted,
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
