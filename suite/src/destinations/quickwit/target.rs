//! The Quickwit sink against a real Quickwit node: a node named by `PICO_QUICKWIT_URL`, the
//! pinned image (`quickwit run`) through the docker provider, or the `quickwit` binary on this
//! machine (`PICO_QUICKWIT_BIN` or `PATH`) started natively with a generated node config. The
//! fault proxy cuts the answer to an ingest request. Indexes are created by the sink with a
//! 1 s commit timeout; reading back first waits past that commit.

use std::sync::Arc;

use std::time::Duration;

use async_trait::async_trait;
use pico_sink_quickwit::{QuickwitSink, QuickwitSinkConfig};

use crate::destinations::read::rows_from_hits;
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
        ANY_SERVER.to_vec()
    }
    fn docker_image(&self) -> Option<String> {
        crate::images::image("quickwit")
    }
    async fn provision(&self, provider: ProviderKind) -> Result<Box<dyn Destination>, String> {
        Ok(Box::new(serve(provider).await?))
    }
}

/// A Quickwit node through `provider` as the sink and the suite see it.
pub(super) async fn serve(provider: ProviderKind) -> Result<ServedDestination<Qw>, String> {
    let (hosted, info) = start(provider).await?;
    Ok(ServedDestination {
        served: Served::new(hosted),
        info,
        form: PayloadForm::Json,
        store: Qw,
    })
}

/// A Quickwit node through `provider`, ready, with its version.
pub async fn start(provider: ProviderKind) -> Result<(Hosted, ServerInfo), String> {
    let spec = ContainerSpec {
        service: "quickwit",
        port: 7280,
        env: vec![("QW_DISABLE_TELEMETRY", "1".into())],
        cmd: vec!["run"],
        ..ContainerSpec::default()
    };
    let hosted = provide("quickwit", provider, spec, "http", Some(&QuickwitBinary)).await?;
    let url = &hosted.url;
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
    let info = ServerInfo {
        name: "Quickwit".into(),
        version,
    };
    Ok((hosted, info))
}

/// The commit timeout of the indexes the target's sinks create.
const COMMIT_TIMEOUT_SECS: u32 = 1;

/// Quickwit as a single binary (the native provider): REST on the port, gRPC on the next one,
/// gossip on UDP at the REST port; file metastore and local storage under the data dir.
struct QuickwitBinary;

impl BinaryServer for QuickwitBinary {
    fn sink(&self) -> &'static str {
        "quickwit"
    }
    fn binary_names(&self) -> &'static [&'static str] {
        &["quickwit"]
    }
    fn ports(&self) -> u16 {
        2
    }
    fn command(
        &self,
        bin: &std::path::Path,
        dir: &std::path::Path,
        port: u16,
    ) -> Result<tokio::process::Command, String> {
        // The node config format of this release is still version 0.8 (index configs use 0.9).
        let config = format!(
            "version: 0.8\nnode_id: pico-{port}\ncluster_id: pico-{port}\nlisten_address: 127.0.0.1\n\
             rest:\n  listen_port: {port}\ngrpc_listen_port: {grpc}\ndata_dir: {data}\n",
            grpc = port + 1,
            data = dir.join("qwdata").display()
        );
        std::fs::create_dir_all(dir.join("qwdata")).map_err(|e| e.to_string())?;
        let path = dir.join("node.yaml");
        std::fs::write(&path, config).map_err(|e| format!("writing {}: {e}", path.display()))?;
        let mut command = tokio::process::Command::new(bin);
        command
            .arg("run")
            .arg("--config")
            .arg(&path)
            .env("QW_DISABLE_TELEMETRY", "1")
            .env("RUST_LOG", "warn");
        Ok(command)
    }
    fn health(&self) -> &'static str {
        "/health/readyz"
    }
    fn ready(&self, status: u16, body: &str) -> bool {
        status == 200 && body.trim() == "true"
    }
    fn startup(&self) -> Duration {
        Duration::from_secs(90)
    }
    fn grace(&self) -> Duration {
        Duration::from_secs(20)
    }
}

/// Quickwit as the sink and the suite see it.
pub(super) struct Qw;

impl Qw {
    /// The sink's configuration writing into index `isolation` at `url`.
    fn config(&self, url: String, isolation: &str) -> QuickwitSinkConfig {
        let mut config = QuickwitSinkConfig::new(url, isolation);
        config.commit_timeout_secs = COMMIT_TIMEOUT_SECS;
        config
    }
}

#[async_trait]
impl Store for Qw {
    type Server = Hosted;

    fn lost_ack_trigger(&self) -> Option<&'static [u8]> {
        Some(b"/ingest")
    }

    async fn sink(
        &self,
        served: &Served<Hosted>,
        isolation: &str,
    ) -> Result<SinkUnderTest, String> {
        let (url, proxy) = served.proxied("http").await?;
        let sink = QuickwitSink::new(self.config(url, isolation)).map_err(|e| e.to_string())?;
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
        sink_section("quickwit", &self.config(format!("http://{via}"), isolation))
    }

    /// Documents of an ingest whose answer was lost become searchable at the index's next
    /// commit: wait past it.
    async fn settle(&self, _: &Served<Hosted>, _: &str) -> Result<(), String> {
        tokio::time::sleep(Duration::from_secs(u64::from(COMMIT_TIMEOUT_SECS) + 1)).await;
        Ok(())
    }

    /// No upkeep to run on demand (merges are the indexer's own).
    async fn pass_horizon(&self, _: &Served<Hosted>, _: &str) -> Result<Upkeep, String> {
        Ok(Upkeep::of(Horizon::unbounded(
            "the partition's highest pico_offset in the index: as long as its newest document is kept",
        )))
    }

    async fn read_back(
        &self,
        served: &Served<Hosted>,
        isolation: &str,
    ) -> Result<Readback, String> {
        read_index(&served.server().url, isolation).await
    }
}

/// Every document of `index` at `url`, through the scroll API (a search page holds at most
/// 10 000 hits, the flaky-network scenario writes 20 000); an absent index holds none. The
/// conformance target and the benchmarks read Quickwit through it.
pub(crate) async fn read_index(url: &str, index: &str) -> Result<Readback, String> {
    let client = reqwest::Client::new();
    let first = client
        .post(format!("{}/api/v1/_elastic/{index}/_search?scroll=5m", url))
        .json(&serde_json::json!({"size": 5000, "query": {"match_all": {}}}))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if first.status().as_u16() == 404 {
        return Ok(Readback::default());
    }
    let mut answer: serde_json::Value = first.json().await.map_err(|e| e.to_string())?;
    let mut back = Readback::default();
    loop {
        let page = rows_from_hits(&answer)?;
        if page.rows.is_empty() {
            return Ok(back);
        }
        back.rows.extend(page.rows);
        let scroll_id = answer["_scroll_id"]
            .as_str()
            .ok_or_else(|| format!("a page without _scroll_id: {answer}"))?
            .to_owned();
        answer = client
            .post(format!("{}/api/v1/_elastic/_search/scroll", url))
            .json(&serde_json::json!({"scroll": "5m", "scroll_id": scroll_id}))
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
    }
}
