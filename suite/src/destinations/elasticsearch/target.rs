//! The Elasticsearch sink against a real Elasticsearch: the pinned image through the docker
//! provider (single node, security off), or a cluster named by `PICO_ELASTICSEARCH_URL`. The
//! fault proxy cuts the answer to a `_bulk` request. Read back after a `_refresh`.

use std::sync::Arc;

use std::time::Duration;

use async_trait::async_trait;
use pico_sink_elasticsearch::{ElasticsearchSink, ElasticsearchSinkConfig};

use crate::destinations::read::rows_from_hits;
use crate::serve::docker::ContainerSpec;
use crate::serve::hosted::{Hosted, provide};
use crate::serve::server::wait_http;
use crate::serve::{Served, ServedDestination, Store};
use pico_conformance::horizon::{Horizon, Upkeep};
use pico_conformance::provider::ProviderKind;
use pico_conformance::target::{
    Destination, PayloadForm, Readback, ServerInfo, SinkUnderTest, Target,
};

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
        let hosted = provide("elasticsearch", provider, spec, "http", None).await?;
        let url = &hosted.url;
        wait_http(
            &format!("{url}/_cluster/health?wait_for_status=yellow&timeout=5s"),
            Duration::from_secs(300),
            &[],
            |status, _| status == 200,
        )
        .await?;
        let root: serde_json::Value = reqwest::get(url)
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        let version = root["version"]["number"]
            .as_str()
            .unwrap_or("unknown")
            .to_owned();
        Ok(Box::new(ServedDestination {
            served: Served::new(hosted),
            info: ServerInfo {
                name: "Elasticsearch".into(),
                version,
            },
            form: PayloadForm::Json,
            store: Es,
        }))
    }
}

struct Es;

#[async_trait]
impl Store for Es {
    type Server = Hosted;

    fn lost_ack_trigger(&self) -> Option<&'static [u8]> {
        Some(b"/_bulk")
    }

    async fn sink(
        &self,
        served: &Served<Hosted>,
        isolation: &str,
    ) -> Result<SinkUnderTest, String> {
        let (url, proxy) = served.proxied("http").await?;
        let sink = ElasticsearchSink::new(ElasticsearchSinkConfig::new(url, isolation))
            .map_err(|e| e.to_string())?;
        Ok(SinkUnderTest {
            sink: Arc::new(sink),
            faults: Some(proxy),
        })
    }

    /// No upkeep to run on demand.
    async fn pass_horizon(&self, _: &Served<Hosted>, _: &str) -> Result<Upkeep, String> {
        Ok(Upkeep::of(Horizon::unbounded(
            "the document _id from the identity: as long as the document is held",
        )))
    }

    async fn read_back(
        &self,
        served: &Served<Hosted>,
        isolation: &str,
    ) -> Result<Readback, String> {
        let client = reqwest::Client::new();
        let base = &served.server().url;
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
        rows_from_hits(&answer)
    }
}
