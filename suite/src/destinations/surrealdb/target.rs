//! The SurrealDB sink against the real SurrealDB engine: embedded (`mem://`, in-process) here,
//! the pinned official image through the docker provider (ws, root/root), or a server named by
//! `PICO_SURREALDB_URL` (ws://…, root/root unless `PICO_SURREALDB_USER` /
//! `PICO_SURREALDB_PASS`) elsewhere. Sink instances share one client, as processes would share a
//! server; there is no network path in-process, so lost-ack and outage are not applicable.

use std::sync::Arc;

use async_trait::async_trait;
use pico_sink::identity::RecordId;
use pico_sink::kit::Payload;
use pico_sink_surrealdb::{SurrealSink, SurrealSinkConfig};
use surrealdb::Surreal;
use surrealdb::engine::any::Any;

use crate::provide::external_url;
use crate::serve::Server;
use crate::serve::docker::{ContainerSpec, start};
use crate::serve::hosted::{Hosted, Kept};
use crate::serve::server::wait_http;
use pico_conformance::horizon::{Horizon, Upkeep};
use pico_conformance::provider::ProviderKind;
use pico_conformance::target::{
    Destination, PayloadForm, ReadRow, Readback, ServerInfo, SinkUnderTest, Target,
    payload_checksum,
};

/// The SurrealDB sink.
pub struct SurrealTarget;

#[async_trait]
impl Target for SurrealTarget {
    fn name(&self) -> &'static str {
        "surrealdb"
    }
    fn sink_crate(&self) -> &'static str {
        "pico-sink-surrealdb"
    }
    fn providers(&self) -> Vec<ProviderKind> {
        vec![
            ProviderKind::External,
            ProviderKind::Docker,
            ProviderKind::Embedded,
        ]
    }
    async fn provision(&self, provider: ProviderKind) -> Result<Box<dyn Destination>, String> {
        let mut container = None;
        let (url, credentials) = match provider {
            ProviderKind::Docker => {
                let started = start(&ContainerSpec {
                    service: "surrealdb",
                    port: 8000,
                    cmd: vec!["start", "--user", "root", "--pass", "root", "memory"],
                    ..ContainerSpec::default()
                })
                .await?;
                let url = format!("ws://{}", started.address);
                wait_http(
                    &format!("http://{}/health", started.address),
                    std::time::Duration::from_secs(120),
                    &[],
                    |s, _| s == 200,
                )
                .await?;
                container = Some(Hosted::new(
                    url.clone(),
                    [Kept::Container(Box::new(started.container))],
                ));
                (url, Some(("root".to_owned(), "root".to_owned())))
            }
            ProviderKind::External => (
                external_url("surrealdb")?,
                Some((
                    std::env::var("PICO_SURREALDB_USER").unwrap_or_else(|_| "root".into()),
                    std::env::var("PICO_SURREALDB_PASS").unwrap_or_else(|_| "root".into()),
                )),
            ),
            ProviderKind::Embedded => ("mem://".to_owned(), None),
            other => return Err(format!("no {other} provider for SurrealDB")),
        };
        let db = surrealdb::engine::any::connect(url.as_str())
            .await
            .map_err(|e| format!("connecting to {url}: {e}"))?;
        if let Some((username, password)) = &credentials {
            db.signin(surrealdb::opt::auth::Root {
                username: username.clone(),
                password: password.clone(),
            })
            .await
            .map_err(|e| format!("signing in: {e}"))?;
        }
        let version = db
            .version()
            .await
            .map(|v| v.to_string())
            .unwrap_or_else(|e| format!("unknown ({e})"));
        Ok(Box::new(SurrealDestination {
            db,
            container,
            info: ServerInfo {
                name: "SurrealDB".into(),
                version: if provider == ProviderKind::Embedded {
                    format!("{version} (embedded kv-mem engine)")
                } else {
                    version
                },
            },
        }))
    }
}

struct SurrealDestination {
    db: Surreal<Any>,
    /// The docker provider's container.
    container: Option<Hosted>,
    info: ServerInfo,
}

fn table(isolation: &str) -> String {
    isolation.replace('-', "_")
}

fn payload_bytes(v: &serde_json::Value) -> Vec<u8> {
    if let Some(json) = v.get("json") {
        json.to_string().into_bytes()
    } else if let Some(serde_json::Value::String(text)) = v.get("text") {
        text.clone().into_bytes()
    } else if let Some(serde_json::Value::String(b64)) = v.get("base64") {
        Payload::Base64(b64.clone())
            .to_bytes()
            .map(|b| b.to_vec())
            .unwrap_or_default()
    } else {
        Vec::new()
    }
}

#[async_trait]
impl Destination for SurrealDestination {
    fn server(&self) -> ServerInfo {
        self.info.clone()
    }

    fn payload_form(&self) -> PayloadForm {
        PayloadForm::Json
    }

    async fn sink(&self, isolation: &str) -> Result<SinkUnderTest, String> {
        let config = SurrealSinkConfig::for_table(table(isolation));
        let sink = SurrealSink::with_client(self.db.clone(), config).map_err(|e| e.to_string())?;
        Ok(SinkUnderTest {
            sink: Arc::new(sink),
            faults: None,
        })
    }

    /// No upkeep to run on demand.
    async fn pass_horizon(&self, _: &str) -> Result<Upkeep, String> {
        Ok(Upkeep::of(Horizon::unbounded(
            "record ids from the identity: as long as the record is held",
        )))
    }

    async fn read_back(&self, isolation: &str) -> Result<Readback, String> {
        self.db
            .use_ns("pico")
            .use_db("pico")
            .await
            .map_err(|e| e.to_string())?;
        let mut answer = self
            .db
            .query("SELECT pico_topic, pico_partition, pico_offset, value FROM type::table($tb)")
            .bind(serde_json::json!({ "tb": table(isolation) }))
            .await
            .map_err(|e| format!("SELECT: {e}"))?;
        let rows: Vec<serde_json::Value> = answer.take(0).map_err(|e| format!("SELECT: {e}"))?;
        let rows = rows
            .iter()
            .map(|r| {
                let value = bytes::Bytes::from(payload_bytes(&r["value"]));
                Ok(ReadRow {
                    id: RecordId::new(
                        r["pico_topic"].as_str().ok_or("row without pico_topic")?,
                        r["pico_partition"]
                            .as_u64()
                            .ok_or("row without pico_partition")? as u32,
                        r["pico_offset"].as_u64().ok_or("row without pico_offset")?,
                    ),
                    checksum: payload_checksum(PayloadForm::Json, &value),
                    value,
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(Readback::of_rows(rows))
    }

    async fn shutdown(self: Box<Self>) -> Result<(), String> {
        match self.container {
            Some(hosted) => hosted.stop().await,
            None => Ok(()),
        }
    }
}
