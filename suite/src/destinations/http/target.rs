//! The HTTP sink against real local HTTP endpoints: one that honours `Idempotency-Key` as the
//! draft describes and one that ignores it (both `pico-http-endpoint`, started in-process on a
//! TCP port), with a fault proxy between sink and endpoint.

use std::sync::Arc;

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use pico_http_endpoint::{Endpoint, EndpointConfig, KEY_RETENTION, KeyPolicy};
use pico_sink::kit::Envelope;
use pico_sink_http::{HttpSink, HttpSinkConfig};
use tokio::sync::Mutex;

use pico_conformance::horizon::{Horizon, Upkeep};
use pico_conformance::provider::ProviderKind;
use pico_conformance::proxy::FaultProxies;
use pico_conformance::target::{Destination, Readback, ServerInfo, SinkUnderTest, Target};

use crate::destinations::read::row_from_envelope;

/// The HTTP sink against an endpoint with a given key policy.
pub struct HttpTarget {
    policy: KeyPolicy,
}

impl HttpTarget {
    /// Against an endpoint that honours `Idempotency-Key`.
    pub fn honouring() -> Self {
        Self {
            policy: KeyPolicy::Honour,
        }
    }

    /// Against an endpoint that ignores `Idempotency-Key`.
    pub fn ignoring() -> Self {
        Self {
            policy: KeyPolicy::Ignore,
        }
    }
}

#[async_trait]
impl Target for HttpTarget {
    fn name(&self) -> &'static str {
        match self.policy {
            KeyPolicy::Honour => "http-honouring",
            KeyPolicy::Ignore => "http-ignoring",
        }
    }
    fn title(&self) -> &'static str {
        match self.policy {
            KeyPolicy::Honour => "endpoint honouring Idempotency-Key",
            KeyPolicy::Ignore => "endpoint ignoring Idempotency-Key",
        }
    }
    fn sink_crate(&self) -> &'static str {
        "pico-sink-http"
    }
    fn providers(&self) -> Vec<ProviderKind> {
        vec![ProviderKind::Embedded]
    }
    async fn provision(&self, _: ProviderKind) -> Result<Box<dyn Destination>, String> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Box::new(HttpDestination {
            policy: self.policy,
            endpoints: Mutex::default(),
            proxies: FaultProxies::default(),
            client,
        }))
    }
}

struct HttpDestination {
    policy: KeyPolicy,
    /// One endpoint per isolation.
    endpoints: Mutex<HashMap<String, Endpoint>>,
    /// Proxies live as long as the destination, so sinks built on them keep working.
    proxies: FaultProxies,
    client: reqwest::Client,
}

impl HttpDestination {
    async fn endpoint_addr(&self, isolation: &str) -> Result<std::net::SocketAddr, String> {
        let mut endpoints = self.endpoints.lock().await;
        if let Some(ep) = endpoints.get(isolation) {
            return Ok(ep.addr());
        }
        let ep = Endpoint::start(EndpointConfig::new(self.policy))
            .await
            .map_err(|e| format!("starting the endpoint: {e}"))?;
        let addr = ep.addr();
        endpoints.insert(isolation.to_owned(), ep);
        Ok(addr)
    }
}

#[async_trait]
impl Destination for HttpDestination {
    fn server(&self) -> ServerInfo {
        ServerInfo {
            name: "pico-http-endpoint".into(),
            version: match self.policy {
                KeyPolicy::Honour => format!(
                    "{} (honours Idempotency-Key per draft-ietf-httpapi-idempotency-key-header)",
                    env!("CARGO_PKG_VERSION")
                ),
                KeyPolicy::Ignore => {
                    format!("{} (ignores Idempotency-Key)", env!("CARGO_PKG_VERSION"))
                }
            },
        }
    }

    async fn sink(&self, isolation: &str) -> Result<SinkUnderTest, String> {
        let upstream = self.endpoint_addr(isolation).await?;
        let proxy = self.proxies.in_front_of(upstream).await?;
        let mut config = HttpSinkConfig::new(format!("http://{}/ingest", proxy.addr()));
        config.endpoint_honours_key = self.policy == KeyPolicy::Honour;
        config.request_timeout = Duration::from_secs(20);
        let sink = HttpSink::new(config).map_err(|e| e.to_string())?;
        Ok(SinkUnderTest {
            sink: Arc::new(sink),
            faults: Some(proxy),
        })
    }

    /// Honouring: the endpoint's key clock moves one retention ahead, so every key it answered
    /// is forgotten. Ignoring: nothing to pass.
    async fn pass_horizon(&self, isolation: &str) -> Result<Upkeep, String> {
        if self.policy == KeyPolicy::Ignore {
            return Ok(Upkeep::of(Horizon::NoDedupe));
        }
        let endpoints = self.endpoints.lock().await;
        let endpoint = endpoints
            .get(isolation)
            .ok_or_else(|| format!("no endpoint was started for {isolation}"))?;
        let expired = endpoint.age_keys(KEY_RETENTION);
        Ok(Upkeep::of(Horizon::Duration {
            seconds: KEY_RETENTION.as_secs(),
            of: "idempotency keys at the endpoint".into(),
        })
        .did(
            "idempotency keys aged past the endpoint's retention",
            expired,
        ))
    }

    async fn read_back(&self, isolation: &str) -> Result<Readback, String> {
        let addr = self.endpoint_addr(isolation).await?;
        let elements: Vec<Envelope> = self
            .client
            .get(format!("http://{addr}/records"))
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| format!("GET /records: {e}"))?
            .json()
            .await
            .map_err(|e| format!("GET /records body: {e}"))?;
        let rows = elements
            .iter()
            .map(row_from_envelope)
            .collect::<Result<_, _>>()?;
        Ok(Readback::of_rows(rows))
    }

    async fn shutdown(self: Box<Self>) -> Result<(), String> {
        self.proxies.clear().await;
        let endpoints: Vec<Endpoint> = self
            .endpoints
            .lock()
            .await
            .drain()
            .map(|(_, e)| e)
            .collect();
        for ep in endpoints {
            ep.stop().await.map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}
