//! The key-honouring HTTP endpoint under pico-kafka: the `http` sink section and the elements
//! of one topic the endpoint stored.

use std::net::SocketAddr;

use async_trait::async_trait;
use pico_conformance::target::ServerInfo;
use pico_http_endpoint::{Endpoint, EndpointConfig, KeyPolicy};
use pico_sink::kit::Envelope;

use crate::destinations::read::row_from_envelope;
use crate::destinations::runtime::{Runtime, RuntimeDestination, Stored, boxed};

/// Its entry in the crash suite (`http` in the committed JSON): not keyed, so a replay with
/// other batch boundaries repeats records, at most what was in flight.
pub const RUNTIME: Runtime = Runtime {
    id: "http-honouring",
    serde_name: "http",
    keyed: false,
    replays_told_per_record: false,
    smoke: false,
    provide: || boxed(HttpRuntime::provide),
};

/// An HTTP endpoint in this process that honours `Idempotency-Key`.
pub struct HttpRuntime(Endpoint);

impl HttpRuntime {
    /// Starts the endpoint.
    pub async fn provide() -> Result<Self, String> {
        Endpoint::start(EndpointConfig::new(KeyPolicy::Honour))
            .await
            .map(Self)
            .map_err(|e| e.to_string())
    }
}

#[async_trait]
impl RuntimeDestination for HttpRuntime {
    async fn info(&self) -> ServerInfo {
        ServerInfo {
            name: "pico-http-endpoint".into(),
            version: "honours Idempotency-Key".into(),
        }
    }

    fn upstream(&self) -> Result<String, String> {
        Ok(format!("http://{}", self.0.addr()))
    }

    async fn sink_toml(&self, _isolation: &str, via: SocketAddr) -> Result<String, String> {
        Ok(format!(
            "[sink]\nkind = \"http\"\nurl = \"http://{via}/ingest\"\n"
        ))
    }

    async fn read(&self, _isolation: &str, topic: &str) -> Result<Stored, String> {
        let rows = self
            .0
            .stored()
            .iter()
            .filter(|d| d["pico_topic"] == topic)
            .map(|d| {
                let envelope: Envelope = serde_json::from_value(d.clone())
                    .map_err(|e| format!("stored document: {e}"))?;
                row_from_envelope(&envelope)
            })
            .collect::<Result<_, String>>()?;
        Ok(Stored {
            rows,
            physical: None,
            note: None,
        })
    }

    async fn stop(self: Box<Self>) -> Result<(), String> {
        Ok(())
    }
}
