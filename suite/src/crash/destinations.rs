//! The destinations of the crash suite: a server each (provided like the conformance suite's),
//! the `[sink]` section that points a `pico-kafka` process at it through a fault proxy, and a
//! read-back of what one topic left there, as `(partition, offset)` rows.

use std::sync::Arc;

use pico_conformance::proxy::{FaultProxies, FaultProxy};
use pico_conformance::target::{PayloadForm, ReadRow, ServerInfo, payload_checksum};
use pico_http_endpoint::{Endpoint, EndpointConfig, KeyPolicy};

use pico_sink::Envelope;

use crate::destinations::clickhouse::read_rows as read_clickhouse_rows;
use crate::destinations::clickhouse::server::ClickHouseServer;
use crate::destinations::delta::{delta_s3_options, read_delta};
use crate::destinations::postgres::server::{PgServer, connect};
use crate::destinations::read::row_from_envelope;
use crate::destinations::s3::read_objects;
use crate::provide::first_available;
use crate::serve::Server;
use crate::serve::s3::S3Server;

/// The sinks the crash suite runs.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum CrashSink {
    /// Upsert on the identity.
    Postgres,
    /// ReplacingMergeTree with a watermark (read with FINAL).
    Clickhouse,
    /// One object per batch, conditional PUT, LIST watermark.
    S3,
    /// Delta on S3: a txn watermark in every commit.
    DeltaS3,
    /// The key-honouring HTTP endpoint: one Idempotency-Key per batch.
    Http,
}

impl CrashSink {
    /// Every sink, in report order.
    pub const ALL: [CrashSink; 5] = [
        CrashSink::Postgres,
        CrashSink::Clickhouse,
        CrashSink::S3,
        CrashSink::DeltaS3,
        CrashSink::Http,
    ];

    /// The id on the command line and in the report.
    pub fn id(self) -> &'static str {
        match self {
            CrashSink::Postgres => "postgres",
            CrashSink::Clickhouse => "clickhouse",
            CrashSink::S3 => "s3",
            CrashSink::DeltaS3 => "delta-s3",
            CrashSink::Http => "http-honouring",
        }
    }

    /// Whether a replay leaves no visible duplicate (the sink dedupes on the record identity
    /// or a watermark); otherwise a replay with other batch boundaries repeats records, at most
    /// one batch per interruption.
    pub fn keyed(self) -> bool {
        !matches!(self, CrashSink::Http)
    }
}

/// One row a destination holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldRow {
    /// The record's partition.
    pub partition: u32,
    /// The record's offset.
    pub offset: u64,
    /// [`payload_checksum`] of its payload as JSON (every destination here stores the produced
    /// JSON, some normalized).
    pub payload: u64,
}

impl HeldRow {
    fn new(partition: u32, offset: u64, payload: &[u8]) -> Self {
        Self {
            partition,
            offset,
            payload: payload_checksum(PayloadForm::Json, payload),
        }
    }

    fn of(row: &ReadRow) -> Self {
        Self::new(row.id.partition, row.id.offset, &row.value)
    }
}

/// What a destination holds for one topic.
#[derive(Debug, Default)]
pub struct Held {
    /// Every visible row (for ClickHouse the `FINAL` view; elsewhere every physical row).
    pub rows: Vec<HeldRow>,
    /// Rows physically stored where the visible view collapses them (ClickHouse before a
    /// merge), with whether merges were stopped so that none collapsed.
    pub physical: Option<(u64, bool)>,
    /// Something worth a note (objects, table version).
    pub note: Option<String>,
}

/// A running destination.
pub enum CrashDestination {
    /// PostgreSQL.
    Postgres(PgServer),
    /// ClickHouse.
    Clickhouse(ClickHouseServer),
    /// S3 (and Delta on S3, which shares the server).
    S3 {
        /// The server.
        server: S3Server,
        /// Delta tables rather than objects.
        delta: bool,
    },
    /// The HTTP endpoint, in this process.
    Http(Endpoint),
}

const BUCKET: &str = "pico-crash";

impl CrashDestination {
    /// Starts (or connects to) the server of `sink`.
    pub async fn provide(sink: CrashSink) -> Result<Self, String> {
        Ok(match sink {
            CrashSink::Postgres => Self::Postgres(first_available(PgServer::provide).await?),
            CrashSink::Clickhouse => {
                let server = first_available(ClickHouseServer::provide).await?;
                // On a server started for the suite, no merge collapses a duplicate row before
                // the physical rows are counted.
                if !server.is_external() {
                    server.query("SYSTEM STOP MERGES").await?;
                }
                Self::Clickhouse(server)
            }
            CrashSink::S3 | CrashSink::DeltaS3 => {
                let server = first_available(S3Server::provide).await?;
                server.ensure_bucket(BUCKET).await?;
                Self::S3 {
                    server,
                    delta: sink == CrashSink::DeltaS3,
                }
            }
            CrashSink::Http => Self::Http(
                Endpoint::start(EndpointConfig::new(KeyPolicy::Honour))
                    .await
                    .map_err(|e| e.to_string())?,
            ),
        })
    }

    /// Name and version of the server.
    pub async fn info(&self) -> ServerInfo {
        match self {
            Self::Postgres(s) => s.info().await,
            Self::Clickhouse(s) => s.info().await,
            Self::S3 { server, .. } => server.info(),
            Self::Http(_) => ServerInfo {
                name: "pico-http-endpoint".into(),
                version: "honours Idempotency-Key".into(),
            },
        }
    }

    /// The address the runtime's sink connects to (a fault proxy goes in front of it).
    pub fn upstream(&self) -> Result<std::net::SocketAddr, String> {
        let url = match self {
            Self::Postgres(s) => return s.socket_addr(),
            Self::Clickhouse(s) => s.url().to_owned(),
            Self::S3 { server, .. } => server.endpoint.clone(),
            Self::Http(e) => return Ok(e.addr()),
        };
        let authority = url
            .split("://")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .ok_or_else(|| format!("{url}: no host"))?;
        use std::net::ToSocketAddrs;
        authority
            .to_socket_addrs()
            .map_err(|e| format!("{url}: {e}"))?
            .next()
            .ok_or_else(|| format!("{url} does not resolve"))
    }

    /// A proxy in front of the destination.
    pub async fn proxy(&self, proxies: &FaultProxies) -> Result<Arc<FaultProxy>, String> {
        proxies.in_front_of(self.upstream()?).await
    }

    /// The `[sink]` section writing into `isolation`, connecting through `via` (the proxy).
    pub fn sink_toml(&self, isolation: &str, via: std::net::SocketAddr) -> Result<String, String> {
        let table = isolation.replace('-', "_");
        Ok(match self {
            Self::Postgres(s) => format!(
                "[sink]\nkind = \"postgres\"\nurl = {}\ntable = {}\npool_size = 4\n",
                toml_string(&s.url_via(via)?),
                toml_string(&table)
            ),
            Self::Clickhouse(_) => format!(
                "[sink]\nkind = \"clickhouse\"\nurl = \"http://{via}\"\ndatabase = \"pico_crash\"\ntable = {}\n",
                toml_string(&table)
            ),
            Self::S3 {
                server,
                delta: false,
            } => format!(
                "[sink]\nkind = \"s3\"\nbucket = \"{BUCKET}\"\nprefix = {}\nendpoint = \"http://{via}\"\naccess_key = {}\nsecret_key = {}\n",
                toml_string(isolation),
                toml_string(&server.access_key),
                toml_string(&server.secret_key)
            ),
            Self::S3 {
                server,
                delta: true,
            } => format!(
                "[sink]\nkind = \"delta\"\nlocation = \"s3://{BUCKET}/{isolation}\"\n[sink.storage_options]\n\
                 AWS_ENDPOINT_URL = \"http://{via}\"\nAWS_ACCESS_KEY_ID = {}\nAWS_SECRET_ACCESS_KEY = {}\n\
                 AWS_REGION = \"us-east-1\"\nAWS_ALLOW_HTTP = \"true\"\n",
                toml_string(&server.access_key),
                toml_string(&server.secret_key)
            ),
            Self::Http(_) => format!("[sink]\nkind = \"http\"\nurl = \"http://{via}/ingest\"\n"),
        })
    }

    /// What `isolation` holds for `topic`.
    pub async fn read(&self, isolation: &str, topic: &str) -> Result<Held, String> {
        let table = isolation.replace('-', "_");
        match self {
            Self::Postgres(s) => {
                let c = connect(s.url()).await?;
                let sql = format!(
                    "SELECT pico_partition, pico_offset, value::text FROM public.\"{table}\" \
                     WHERE pico_topic = $1"
                );
                let rows = c
                    .query(&sql, &[&topic])
                    .await
                    .map_err(|e| format!("{sql}: {e}"))?;
                Ok(Held {
                    rows: rows
                        .iter()
                        .map(|r| {
                            let value: Option<String> = r.get(2);
                            HeldRow::new(
                                r.get::<_, i32>(0) as u32,
                                r.get::<_, i64>(1) as u64,
                                value.unwrap_or_default().as_bytes(),
                            )
                        })
                        .collect(),
                    physical: None,
                    note: None,
                })
            }
            Self::Clickhouse(s) => {
                let filter = format!("WHERE pico_topic = '{topic}'");
                let (rows, physical) =
                    read_clickhouse_rows(s, &format!("pico_crash.`{table}`"), &filter).await?;
                Ok(Held {
                    rows: rows.iter().map(HeldRow::of).collect(),
                    physical: Some((physical, !s.is_external())),
                    note: None,
                })
            }
            Self::S3 {
                server,
                delta: false,
            } => {
                let (rows, objects) =
                    read_objects(&server.client(), BUCKET, &format!("{isolation}/")).await?;
                Ok(Held {
                    rows: rows.iter().map(HeldRow::of).collect(),
                    physical: None,
                    note: Some(format!("{objects} objects")),
                })
            }
            Self::S3 {
                server,
                delta: true,
            } => {
                let options = delta_s3_options(server, &server.endpoint);
                let back = read_delta(&format!("s3://{BUCKET}/{isolation}"), options).await?;
                Ok(Held {
                    rows: back.rows.iter().map(HeldRow::of).collect(),
                    physical: None,
                    note: back.notes.first().cloned(),
                })
            }
            Self::Http(e) => Ok(Held {
                rows: e
                    .stored()
                    .iter()
                    .filter(|d| d["pico_topic"] == topic)
                    .map(|d| {
                        let envelope: Envelope = serde_json::from_value(d.clone())
                            .map_err(|e| format!("stored document: {e}"))?;
                        row_from_envelope(&envelope).map(|r| HeldRow::of(&r))
                    })
                    .collect::<Result<_, String>>()?,
                physical: None,
                note: None,
            }),
        }
    }

    /// Stops what was started.
    pub async fn stop(self) -> Result<(), String> {
        match self {
            Self::Postgres(s) => s.stop().await,
            Self::Clickhouse(s) => s.stop().await,
            Self::S3 { server, .. } => server.stop().await,
            Self::Http(_) => Ok(()),
        }
    }
}

fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}
