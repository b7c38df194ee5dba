//! The Quickwit sink against a real Quickwit node: the pinned image (`quickwit run`) through the
//! docker provider, or a node named by `PICO_QUICKWIT_URL`. The fault proxy cuts the answer to
//! an ingest request. Indexes are created by the sink with a 1 s commit timeout.

use std::time::Duration;

use async_trait::async_trait;
use pico_sink_quickwit::{QuickwitSink, QuickwitSinkConfig};

use crate::provider::ProviderKind;
use crate::servers::container::{ContainerSpec, Hosted, provide, wait_http};
use crate::target::{Destination, PayloadForm, Readback, ServerInfo, SinkUnderTest, Target};
use crate::targets::hosted::{HostedDestination, HostedStore, rows_from_hits};

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
        Ok(Box::new(HostedDestination {
            hosted: Hosted::new(url, container.into_iter().collect()),
            info: ServerInfo {
                name: "Quickwit".into(),
                version,
            },
            form: PayloadForm::Json,
            store: Qw,
        }))
    }
}

struct Qw;

#[async_trait]
impl HostedStore for Qw {
    fn lost_ack_trigger(&self) -> &'static [u8] {
        b"/ingest"
    }

    async fn sink(&self, hosted: &Hosted, isolation: &str) -> Result<SinkUnderTest, String> {
        let (url, proxy) = hosted.proxied(&hosted.url, "http").await?;
        let mut config = QuickwitSinkConfig::new(url, isolation);
        config.commit_timeout_secs = 1;
        let sink = QuickwitSink::new(config).map_err(|e| e.to_string())?;
        Ok(SinkUnderTest {
            sink: Box::new(sink),
            faults: Some(proxy),
        })
    }

    async fn read_back(&self, hosted: &Hosted, isolation: &str) -> Result<Readback, String> {
        let response = reqwest::Client::new()
            .post(format!(
                "{}/api/v1/_elastic/{isolation}/_search",
                hosted.url
            ))
            .json(&serde_json::json!({"size": 10000, "query": {"match_all": {}}}))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if response.status().as_u16() == 404 {
            return Ok(Readback::default());
        }
        let answer: serde_json::Value = response.json().await.map_err(|e| e.to_string())?;
        rows_from_hits(&answer)
    }
}
