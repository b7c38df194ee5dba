//! The Quickwit sink against a real Quickwit node: the pinned image (`quickwit run`) through the
//! docker provider, or a node named by `PICO_QUICKWIT_URL`. The fault proxy cuts the answer to
//! an ingest request. Indexes are created by the sink with a 1 s commit timeout.

use std::time::Duration;

use async_trait::async_trait;
use pico_sink_quickwit::{QuickwitSink, QuickwitSinkConfig};

use crate::provider::ProviderKind;
use crate::servers::container::{ContainerSpec, Hosted, provide, wait_http};
use crate::target::{Destination, PayloadForm, Readback, ServerInfo, SinkUnderTest, Target};
use crate::targets::row_from_document;

/// The Quickwit sink.
pub struct QuickwitTarget;

#[async_trait]
impl Target for QuickwitTarget {
    fn name(&self) -> &'static str {
        "quickwit"
    }
    fn sink_crate(&self) -> &'static str {
        "pico-sink-quickwit"
    }
    fn providers(&self) -> Vec<ProviderKind> {
        vec![ProviderKind::External, ProviderKind::Docker]
    }
    async fn provision(&self, provider: ProviderKind) -> Result<Box<dyn Destination>, String> {
        let spec = ContainerSpec {
            service: "quickwit",
            port: 7280,
            env: vec![("QW_DISABLE_TELEMETRY", "1".into())],
            cmd: vec!["run"],
            ..ContainerSpec::default()
        };
        let (url, container) = provide("quickwit", provider, spec, "http").await?;
        let url = url.trim_end_matches('/').to_owned();
        wait_http(
            &format!("{url}/health/readyz"),
            Duration::from_secs(180),
            &[],
            |s, _| s == 200,
        )
        .await?;
        let version = match reqwest::get(format!("{url}/api/v1/version")).await {
            Ok(r) => r
                .json::<serde_json::Value>()
                .await
                .ok()
                .and_then(|v| {
                    v["build"]["version"]
                        .as_str()
                        .or(v["version"].as_str())
                        .map(str::to_owned)
                })
                .unwrap_or_else(|| "unknown".into()),
            Err(e) => format!("unknown ({e})"),
        };
        Ok(Box::new(QwDestination {
            hosted: Hosted::new(url, container.into_iter().collect()),
            info: ServerInfo {
                name: "Quickwit".into(),
                version,
            },
        }))
    }
}

struct QwDestination {
    hosted: Hosted,
    info: ServerInfo,
}

#[async_trait]
impl Destination for QwDestination {
    fn server(&self) -> ServerInfo {
        self.info.clone()
    }

    fn payload_form(&self) -> PayloadForm {
        PayloadForm::Json
    }

    fn lost_ack_trigger(&self) -> Option<Vec<u8>> {
        Some(b"/ingest".to_vec())
    }

    async fn sink(&self, isolation: &str) -> Result<SinkUnderTest, String> {
        let (url, proxy) = self.hosted.proxied(&self.hosted.url, "http").await?;
        let mut config = QuickwitSinkConfig::new(url, isolation);
        config.commit_timeout_secs = 1;
        let sink = QuickwitSink::new(config).map_err(|e| e.to_string())?;
        Ok(SinkUnderTest {
            sink: Box::new(sink),
            faults: Some(proxy),
        })
    }

    async fn read_back(&self, isolation: &str) -> Result<Readback, String> {
        let response = reqwest::Client::new()
            .post(format!(
                "{}/api/v1/_elastic/{isolation}/_search",
                self.hosted.url
            ))
            .json(&serde_json::json!({"size": 10000, "query": {"match_all": {}}}))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if response.status().as_u16() == 404 {
            return Ok(Readback::default());
        }
        let answer: serde_json::Value = response.json().await.map_err(|e| e.to_string())?;
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
