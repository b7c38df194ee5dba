//! The Elasticsearch sink against a real Elasticsearch: the pinned image through the docker
//! provider (single node, security off), or a cluster named by `PICO_ELASTICSEARCH_URL`. The
//! fault proxy cuts the answer to a `_bulk` request. Read back after a `_refresh`.

use std::time::Duration;

use async_trait::async_trait;
use pico_sink_elasticsearch::{ElasticsearchSink, ElasticsearchSinkConfig};

use crate::provider::ProviderKind;
use crate::servers::container::{ContainerSpec, Hosted, provide, wait_http};
use crate::target::{Destination, PayloadForm, Readback, ServerInfo, SinkUnderTest, Target};
use crate::targets::row_from_document;

/// The Elasticsearch sink.
pub struct ElasticsearchTarget;

#[async_trait]
impl Target for ElasticsearchTarget {
    fn name(&self) -> &'static str {
        "elasticsearch"
    }
    fn sink_crate(&self) -> &'static str {
        "pico-sink-elasticsearch"
    }
    fn providers(&self) -> Vec<ProviderKind> {
        vec![ProviderKind::External, ProviderKind::Docker]
    }
    async fn provision(&self, provider: ProviderKind) -> Result<Box<dyn Destination>, String> {
        let spec = ContainerSpec {
            service: "elasticsearch",
            port: 9200,
            env: vec![
                ("discovery.type", "single-node".into()),
                ("xpack.security.enabled", "false".into()),
                ("ES_JAVA_OPTS", "-Xms512m -Xmx512m".into()),
            ],
            ..ContainerSpec::default()
        };
        let (url, container) = provide("elasticsearch", provider, spec, "http").await?;
        let url = url.trim_end_matches('/').to_owned();
        wait_http(
            &format!("{url}/_cluster/health?wait_for_status=yellow&timeout=5s"),
            Duration::from_secs(300),
            &[],
            |status, _| status == 200,
        )
        .await?;
        let root: serde_json::Value = reqwest::get(&url)
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        let version = root["version"]["number"]
            .as_str()
            .unwrap_or("unknown")
            .to_owned();
        Ok(Box::new(EsDestination {
            hosted: Hosted::new(url, container.into_iter().collect()),
            info: ServerInfo {
                name: "Elasticsearch".into(),
                version,
            },
        }))
    }
}

struct EsDestination {
    hosted: Hosted,
    info: ServerInfo,
}

#[async_trait]
impl Destination for EsDestination {
    fn server(&self) -> ServerInfo {
        self.info.clone()
    }

    fn payload_form(&self) -> PayloadForm {
        PayloadForm::Json
    }

    fn lost_ack_trigger(&self) -> Option<Vec<u8>> {
        Some(b"/_bulk".to_vec())
    }

    async fn sink(&self, isolation: &str) -> Result<SinkUnderTest, String> {
        let (url, proxy) = self.hosted.proxied(&self.hosted.url, "http").await?;
        let sink = ElasticsearchSink::new(ElasticsearchSinkConfig::new(url, isolation))
            .map_err(|e| e.to_string())?;
        Ok(SinkUnderTest {
            sink: Box::new(sink),
            faults: Some(proxy),
        })
    }

    async fn read_back(&self, isolation: &str) -> Result<Readback, String> {
        let client = reqwest::Client::new();
        let base = &self.hosted.url;
        let refresh = client
            .post(format!("{base}/{isolation}/_refresh"))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if refresh.status().as_u16() == 404 {
            return Ok(Readback::default());
        }
        let answer: serde_json::Value = client
            .post(format!("{base}/{isolation}/_search"))
            .json(&serde_json::json!({"size": 10000, "query": {"match_all": {}}}))
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        let hits = answer["hits"]["hits"]
            .as_array()
            .ok_or_else(|| format!("unexpected search answer: {answer}"))?;
        let rows = hits
            .iter()
            .map(|h| row_from_document(h["_source"].clone()))
            .collect::<Result<_, _>>()?;
        Ok(Readback {
            rows,
            physical_rows: None,
            notes: Vec::new(),
        })
    }

    async fn shutdown(self: Box<Self>) -> Result<(), String> {
        self.hosted.stop().await
    }
}
