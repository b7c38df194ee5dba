//! The InfluxDB sink against a real InfluxDB: 1.x (native or external, v1 API) or 2.x (docker,
//! v2 API, one bucket per scenario mapped to a database name), a fault proxy between; each
//! scenario writes its own database or bucket, read back with InfluxQL `SELECT *` and rebuilt
//! into the JSON payloads from tags and fields.

use std::sync::Arc;

use super::server::{InfluxServer, V2_ORG};
use crate::destinations::runtime::sink_section;
use crate::provide::ANY_SERVER;
use crate::serve::{Served, ServedDestination, Server, Store};
use async_trait::async_trait;
use pico_conformance::horizon::{Horizon, Upkeep};
use pico_conformance::provider::ProviderKind;
use pico_conformance::target::{
    Destination, PayloadForm, ReadRow, Readback, SinkUnderTest, Target, payload_checksum,
};
use pico_sink::identity::RecordId;
use pico_sink_influxdb::{
    DIGEST_FIELD, InfluxSink, InfluxSinkConfig, OFFSET_FIELD, PARTITION_TAG, Payload, PointMapping,
    SEAL_FIELDS, TOPIC_TAG,
};

/// Measurement every scenario writes.
const MEASUREMENT: &str = "records";

/// The InfluxDB sink.
pub struct InfluxTarget;

#[async_trait]
impl Target for InfluxTarget {
    fn name(&self) -> &'static str {
        "influxdb"
    }
    fn sink_crate(&self) -> &'static str {
        "pico-sink-influxdb"
    }
    fn providers(&self) -> Vec<ProviderKind> {
        ANY_SERVER.to_vec()
    }
    async fn provision(&self, provider: ProviderKind) -> Result<Box<dyn Destination>, String> {
        Ok(Box::new(serve(provider).await?))
    }
}

/// An InfluxDB through `provider` as the sink and the suite see it.
pub(super) async fn serve(
    provider: ProviderKind,
) -> Result<ServedDestination<InfluxStore>, String> {
    let server = InfluxServer::provide(provider).await?;
    let info = server.info().await;
    Ok(ServedDestination {
        served: Served::new(server),
        info,
        form: PayloadForm::Json,
        store: InfluxStore::new(reqwest::Client::new()),
    })
}

/// InfluxDB as the sink and the suite see it.
pub(super) struct InfluxStore {
    client: reqwest::Client,
}

fn database(isolation: &str) -> String {
    isolation.replace('-', "_")
}

impl InfluxStore {
    /// A store that queries with `client`.
    pub(super) fn new(client: reqwest::Client) -> Self {
        Self { client }
    }

    /// The sink's configuration writing into the database (v1) or bucket (v2, created here)
    /// of `isolation` at `url`: JSON payloads, `unit` and `region` as tags.
    async fn config(
        &self,
        server: &InfluxServer,
        url: String,
        isolation: &str,
    ) -> Result<InfluxSinkConfig, String> {
        let mapping = PointMapping {
            measurement: MEASUREMENT.into(),
            tags: vec!["unit".into(), "region".into()],
            fields: Vec::new(),
            time_field: None,
        };
        Ok(match server.v2_token() {
            Some(token) => {
                server.v2_bucket(&database(isolation)).await?;
                InfluxSinkConfig::v2(
                    url,
                    V2_ORG,
                    database(isolation),
                    token,
                    Payload::Json(mapping),
                )
            }
            None => InfluxSinkConfig::v1(url, database(isolation), Payload::Json(mapping)),
        })
    }

    async fn query(
        &self,
        server: &InfluxServer,
        db: &str,
        q: &str,
    ) -> Result<serde_json::Value, String> {
        let mut url = reqwest::Url::parse(server.url()).map_err(|e| e.to_string())?;
        url.set_path("/query");
        url.query_pairs_mut()
            .append_pair("db", db)
            .append_pair("epoch", "ns")
            .append_pair("q", q);
        let mut request = self.client.get(url);
        if let Some(token) = server.v2_token() {
            request = request.header("Authorization", format!("Token {token}"));
        }
        request
            .send()
            .await
            .map_err(|e| format!("{q}: {e}"))?
            .json()
            .await
            .map_err(|e| format!("{q}: {e}"))
    }
}

#[async_trait]
impl Store for InfluxStore {
    type Server = InfluxServer;

    /// The write request, not the replay probe's query that precedes it.
    fn lost_ack_trigger(&self) -> Option<&'static [u8]> {
        Some(b"write?")
    }

    async fn sink(
        &self,
        served: &Served<InfluxServer>,
        isolation: &str,
    ) -> Result<SinkUnderTest, String> {
        let (url, proxy) = served.proxied("http").await?;
        let config = self.config(served.server(), url, isolation).await?;
        let sink = InfluxSink::new(config).map_err(|e| e.to_string())?;
        Ok(SinkUnderTest {
            sink: Arc::new(sink),
            faults: Some(proxy),
        })
    }

    async fn sink_section(
        &self,
        served: &Served<InfluxServer>,
        isolation: &str,
        via: std::net::SocketAddr,
    ) -> Result<String, String> {
        let url = format!("http://{via}");
        let config = self.config(served.server(), url, isolation).await?;
        sink_section("influxdb", &config)
    }

    /// No upkeep to run on demand (compaction is the server's own).
    async fn pass_horizon(&self, _: &Served<InfluxServer>, _: &str) -> Result<Upkeep, String> {
        Ok(Upkeep::of(Horizon::unbounded(
            "the points themselves, series and time from the identity: as long as the retention policy keeps them",
        )))
    }

    async fn read_back(
        &self,
        served: &Served<InfluxServer>,
        isolation: &str,
    ) -> Result<Readback, String> {
        self.read_measurement(served.server(), &database(isolation), MEASUREMENT)
            .await
    }
}

impl InfluxStore {
    /// Every point of `measurement` in database `db`, read back into rows (the sink's identity
    /// from its tags and offset field, the payload from the other fields). The conformance
    /// target and the benchmarks read InfluxDB through it.
    pub(super) async fn read_measurement(
        &self,
        server: &InfluxServer,
        db: &str,
        measurement: &str,
    ) -> Result<Readback, String> {
        let db = db.to_owned();
        let answer = self
            .query(server, &db, &format!("SELECT * FROM \"{measurement}\""))
            .await?;
        let mut rows = Vec::new();
        if let Some(series) = answer
            .pointer("/results/0/series")
            .and_then(|s| s.as_array())
        {
            for s in series {
                let columns: Vec<&str> = s["columns"]
                    .as_array()
                    .map(|c| c.iter().filter_map(|v| v.as_str()).collect())
                    .unwrap_or_default();
                for values in s["values"].as_array().into_iter().flatten() {
                    let mut doc = serde_json::Map::new();
                    let (mut topic, mut partition, mut offset) = (None, None, None);
                    for (c, v) in columns.iter().zip(values.as_array().into_iter().flatten()) {
                        match *c {
                            "time" => {}
                            TOPIC_TAG => topic = v.as_str().map(str::to_owned),
                            PARTITION_TAG => {
                                partition = v.as_str().and_then(|p| p.parse::<u32>().ok())
                            }
                            OFFSET_FIELD => offset = v.as_u64(),
                            // The sink's content digest and batch seals, for its replay
                            // probes: not payload.
                            DIGEST_FIELD => {}
                            name if SEAL_FIELDS.contains(&name) => {}
                            _ if v.is_null() => {}
                            name => {
                                doc.insert(name.to_owned(), v.clone());
                            }
                        }
                    }
                    let (Some(t), Some(p), Some(o)) = (topic, partition, offset) else {
                        return Err(format!("a point without the pico identity: {values}"));
                    };
                    let value = bytes::Bytes::from(serde_json::Value::Object(doc).to_string());
                    rows.push(ReadRow {
                        id: RecordId::new(t, p, o),
                        checksum: payload_checksum(PayloadForm::Json, &value),
                        value,
                    });
                }
            }
        }
        let cardinality = self.query(server, &db, "SHOW SERIES").await?;
        let note = match cardinality.pointer("/results/0/error") {
            Some(e) => format!("series count not available: {e}"),
            None => {
                let series = cardinality
                    .pointer("/results/0/series/0/values")
                    .and_then(|v| v.as_array())
                    .map_or(0, Vec::len);
                format!("{series} series in the database")
            }
        };
        Ok(Readback {
            rows,
            physical_rows: None,
            notes: vec![note],
        })
    }
}
