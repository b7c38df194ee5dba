//! The Doris sink against a real Apache Doris: the pinned FE and BE images on the host network
//! through the docker provider (as Doris's own quick start runs them), or a cluster named by
//! `PICO_DORIS_URL` (FE HTTP) with `PICO_DORIS_LOAD_URL` (a BE HTTP address) when the BE the FE
//! advertises is not reachable. The fault proxy sits in front of the BE and cuts the answer to
//! a Stream Load.

use std::sync::Arc;

use std::time::Duration;

use async_trait::async_trait;
use pico_sink::identity::RecordId;
use pico_sink_doris::{DorisSink, DorisSinkConfig};

use crate::serve::docker::{ContainerSpec, start};
use crate::serve::hosted::{Hosted, Kept, provide};
use crate::serve::server::wait_http;
use crate::serve::{Served, ServedDestination, Store};
use pico_conformance::horizon::{Horizon, Upkeep};
use pico_conformance::provider::ProviderKind;
use pico_conformance::target::{
    Destination, PayloadForm, ReadRow, Readback, ServerInfo, SinkUnderTest, Target, checksum,
};

const DATABASE: &str = "pico";
const FE_SERVERS: &str = "fe1:127.0.0.1:9010";

/// The Doris sink.
pub struct DorisTarget;

#[async_trait]
impl Target for DorisTarget {
    fn name(&self) -> &'static str {
        "doris"
    }
    fn sink_crate(&self) -> &'static str {
        "pico-sink-doris"
    }
    fn providers(&self) -> Vec<ProviderKind> {
        vec![ProviderKind::External, ProviderKind::Docker]
    }
    async fn provision(&self, provider: ProviderKind) -> Result<Box<dyn Destination>, String> {
        let fe = ContainerSpec {
            service: "doris-fe",
            port: 8030,
            env: vec![("FE_SERVERS", FE_SERVERS.into()), ("FE_ID", "1".into())],
            host_network: true,
            ..ContainerSpec::default()
        };
        let mut hosted = provide("doris", provider, fe, "http", None).await?;
        let load_url = if hosted.is_external() {
            std::env::var("PICO_DORIS_LOAD_URL").ok()
        } else {
            let be = ContainerSpec {
                service: "doris-be",
                port: 8040,
                env: vec![
                    ("FE_SERVERS", FE_SERVERS.into()),
                    ("BE_ADDR", "127.0.0.1:9050".into()),
                ],
                host_network: true,
                ..ContainerSpec::default()
            };
            let started = start(&be).await?;
            hosted.keep(Kept::Container(Box::new(started.container)));
            Some(format!("http://{}", started.address))
        };
        let fe_url = hosted.url.clone();
        // Ready when the FE counts an alive BE.
        wait_http(
            &format!("{fe_url}/api/health"),
            Duration::from_secs(300),
            &[],
            |s, body| {
                s == 200
                    && serde_json::from_str::<serde_json::Value>(body)
                        .ok()
                        .and_then(|v| v["data"]["online_backend_num"].as_u64())
                        .is_some_and(|n| n > 0)
            },
        )
        .await?;
        let admin = DorisSink::new(config(&fe_url, None, "probe")).map_err(|e| e.to_string())?;
        let version = admin
            .sql("information_schema", "SELECT @@version_comment")
            .await
            .map(|v| v.to_string())
            .unwrap_or_else(|e| format!("unknown ({e})"));
        Ok(Box::new(ServedDestination {
            served: Served::new(hosted),
            info: ServerInfo {
                name: "Apache Doris".into(),
                version,
            },
            form: PayloadForm::Exact,
            store: Doris { load_url },
        }))
    }
}

fn table(isolation: &str) -> String {
    isolation.replace('-', "_")
}

fn config(fe_url: &str, load_url: Option<String>, table: &str) -> DorisSinkConfig {
    let mut c = DorisSinkConfig::new(fe_url, DATABASE, table);
    c.load_url = load_url;
    c.replication_num = Some(1);
    if let Ok(user) = std::env::var("PICO_DORIS_USER") {
        c.user = user;
    }
    if let Ok(password) = std::env::var("PICO_DORIS_PASSWORD") {
        c.password = password.into();
    }
    c
}

struct Doris {
    load_url: Option<String>,
}

#[async_trait]
impl Store for Doris {
    type Server = Hosted;

    fn lost_ack_trigger(&self) -> Option<&'static [u8]> {
        Some(b"_stream_load")
    }

    async fn sink(
        &self,
        served: &Served<Hosted>,
        isolation: &str,
    ) -> Result<SinkUnderTest, String> {
        // The proxy stands where the loads go: the BE when known, else the FE.
        let upstream = self
            .load_url
            .clone()
            .unwrap_or_else(|| served.server().url.clone());
        let (proxied, proxy) = served.proxied_to(&upstream, "http").await?;
        let (fe, load) = match &self.load_url {
            Some(_) => (served.server().url.clone(), Some(proxied)),
            None => (proxied, None),
        };
        let sink =
            DorisSink::new(config(&fe, load, &table(isolation))).map_err(|e| e.to_string())?;
        Ok(SinkUnderTest {
            sink: Arc::new(sink),
            faults: Some(proxy),
        })
    }

    /// No upkeep to run on demand (Stream Load labels expire after label_keep_max_second; the Unique Key does not).
    async fn pass_horizon(&self, _: &Served<Hosted>, _: &str) -> Result<Upkeep, String> {
        Ok(Upkeep::of(Horizon::unbounded(
            "the Unique Key on the identity columns: as long as the row is held",
        )))
    }

    async fn read_back(
        &self,
        served: &Served<Hosted>,
        isolation: &str,
    ) -> Result<Readback, String> {
        let t = table(isolation);
        let admin =
            DorisSink::new(config(&served.server().url, None, &t)).map_err(|e| e.to_string())?;
        let data = admin
            .sql(
                DATABASE,
                &format!("SELECT pico_topic, pico_partition, CAST(pico_offset AS STRING), value FROM `{DATABASE}`.`{t}`"),
            )
            .await;
        let data = match data {
            Ok(d) => d,
            Err(e) if e.to_string().to_ascii_lowercase().contains("unknown table") => {
                return Ok(Readback::default());
            }
            Err(e) => return Err(e.to_string()),
        };
        let rows = data["data"]
            .as_array()
            .ok_or_else(|| format!("unexpected SQL answer: {data}"))?
            .iter()
            .map(|r| {
                let text = |i: usize| -> Result<String, String> {
                    match &r[i] {
                        serde_json::Value::String(s) => Ok(s.clone()),
                        serde_json::Value::Number(n) => Ok(n.to_string()),
                        other => Err(format!("unexpected cell {other}")),
                    }
                };
                let value = bytes::Bytes::from(text(3)?);
                Ok(ReadRow {
                    id: RecordId::new(
                        text(0)?,
                        text(1)?.parse::<u32>().map_err(|e| e.to_string())?,
                        text(2)?.parse::<u64>().map_err(|e| e.to_string())?,
                    ),
                    checksum: checksum(&value),
                    value,
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(Readback::of_rows(rows))
    }
}
