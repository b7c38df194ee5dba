//! The Iceberg sink with the real iceberg-rust library and its SQL catalog on a SQLite file, the
//! warehouse in a temp directory (embedded) or on S3 (SeaweedFS natively, MinIO through
//! docker, or `PICO_S3_URL`). Every sink instance opens its own catalog connection, as separate
//! processes would. Read back by scanning the table's current snapshot. The commit point is the
//! catalog's row in the local SQLite file, so there is no network path to cut at the commit:
//! lost-ack and outage are not applicable.

use super::ICEBERG_RUST_VERSION;
use std::sync::Arc;

use async_trait::async_trait;
use pico_sink::identity::RecordId;
use pico_sink_iceberg::{
    IcebergSink, IcebergSinkConfig, read_table, sqlite_catalog, sqlite_catalog_s3,
};
use std::collections::HashMap;
use std::net::SocketAddr;

use serde::Serialize;

use crate::destinations::runtime::sink_section;

use crate::serve::Served;
use crate::serve::s3::S3Server;

use crate::provide::ANY_SERVER;
use pico_conformance::horizon::{Horizon, Upkeep};
use pico_conformance::provider::ProviderKind;
use pico_conformance::target::{
    Destination, ReadRow, Readback, ServerInfo, SinkUnderTest, Target, checksum,
};

const NAMESPACE: &str = "pico";

/// The Iceberg sink on a SQLite catalog and a local warehouse.
pub struct IcebergTarget;

#[async_trait]
impl Target for IcebergTarget {
    fn name(&self) -> &'static str {
        "iceberg"
    }
    fn title(&self) -> &'static str {
        "SQLite catalog, local warehouse"
    }
    fn sink_crate(&self) -> &'static str {
        "pico-sink-iceberg"
    }
    fn providers(&self) -> Vec<ProviderKind> {
        vec![ProviderKind::Embedded]
    }
    async fn provision(&self, _: ProviderKind) -> Result<Box<dyn Destination>, String> {
        let dir = tempfile::Builder::new()
            .prefix("pico-iceberg-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        Ok(Box::new(IcebergDestination {
            dir: Arc::new(dir),
            s3: None,
            on: "local filesystem".into(),
        }))
    }
}

/// The Iceberg sink on a SQLite catalog with its warehouse on S3.
pub struct IcebergS3Target;

/// The bucket of the S3 warehouse.
const BUCKET: &str = "pico-iceberg";

#[async_trait]
impl Target for IcebergS3Target {
    fn name(&self) -> &'static str {
        "iceberg-s3"
    }
    fn title(&self) -> &'static str {
        "SQLite catalog, S3 warehouse"
    }
    fn sink_crate(&self) -> &'static str {
        "pico-sink-iceberg"
    }
    fn providers(&self) -> Vec<ProviderKind> {
        ANY_SERVER.to_vec()
    }
    async fn provision(&self, provider: ProviderKind) -> Result<Box<dyn Destination>, String> {
        Ok(Box::new(serve_s3(provider).await?))
    }
}

/// The S3 warehouse through `provider`, its catalog in a temp directory of its own.
pub(super) async fn serve_s3(provider: ProviderKind) -> Result<IcebergDestination, String> {
    let server = S3Server::provide(provider).await?;
    server.ensure_bucket(BUCKET).await?;
    let dir = tempfile::Builder::new()
        .prefix("pico-iceberg-s3-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let info = server.info();
    Ok(IcebergDestination {
        dir: Arc::new(dir),
        s3: Some(Served::new(server)),
        on: format!("{} {}", info.name, info.version),
    })
}

/// Iceberg's (OpenDAL's) S3 properties for `server`.
pub(crate) fn iceberg_s3_properties(server: &S3Server) -> HashMap<String, String> {
    HashMap::from([
        ("s3.endpoint".to_owned(), server.endpoint.clone()),
        ("s3.access-key-id".to_owned(), server.access_key.clone()),
        ("s3.secret-access-key".to_owned(), server.secret_key.clone()),
        ("s3.region".to_owned(), "us-east-1".to_owned()),
        ("s3.path-style-access".to_owned(), "true".to_owned()),
    ])
}

/// An Iceberg warehouse with its SQLite catalog, as the conformance suite and the crash suite
/// see it.
pub(super) struct IcebergDestination {
    dir: Arc<tempfile::TempDir>,
    /// The S3 server, for the S3 warehouse.
    s3: Option<Served<S3Server>>,
    /// Where the warehouse is, in words.
    on: String,
}

fn table(isolation: &str) -> String {
    isolation.replace('-', "_")
}

impl IcebergDestination {
    /// The SQLite file of the catalog.
    fn catalog_path(&self) -> String {
        self.dir.path().join("catalog.db").display().to_string()
    }

    /// The S3 warehouse's location (`s3://bucket/run`), distinct per provisioned destination.
    fn s3_location(&self) -> String {
        let run = self
            .dir
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!("s3://{BUCKET}/{run}")
    }

    /// The S3 server of an S3 warehouse.
    pub(super) fn s3(&self) -> Option<&Served<S3Server>> {
        self.s3.as_ref()
    }

    /// The pico-kafka `[sink]` section writing into `isolation`'s table of this catalog, the
    /// S3 warehouse reached through `via`.
    pub(super) fn sink_section(&self, isolation: &str, via: SocketAddr) -> Result<String, String> {
        #[derive(Serialize)]
        struct WithCatalog {
            #[serde(flatten)]
            table: IcebergSinkConfig,
            catalog: Catalog,
        }
        #[derive(Serialize)]
        struct Catalog {
            path: String,
            warehouse: String,
            properties: HashMap<String, String>,
        }
        let s3 = self
            .s3
            .as_ref()
            .ok_or("a local warehouse is not run under pico-kafka: it has no server")?;
        let mut properties = iceberg_s3_properties(s3.server());
        properties.insert("s3.endpoint".to_owned(), format!("http://{via}"));
        let section = WithCatalog {
            table: IcebergSinkConfig::new(NAMESPACE, table(isolation)),
            catalog: Catalog {
                path: self.catalog_path(),
                warehouse: self.s3_location(),
                properties,
            },
        };
        sink_section("iceberg", &section)
    }

    /// A catalog connection of its own (as a separate process would open), reaching the S3
    /// warehouse at `endpoint` when given (a fault proxy), else directly.
    async fn catalog(
        &self,
        endpoint: Option<String>,
    ) -> Result<Arc<dyn pico_sink_iceberg::Catalog>, String> {
        let db = self.catalog_path();
        match &self.s3 {
            None => {
                let warehouse = self.dir.path().join("warehouse");
                sqlite_catalog(&db, &warehouse.display().to_string()).await
            }
            Some(s3) => {
                let mut properties = iceberg_s3_properties(s3.server());
                if let Some(endpoint) = endpoint {
                    properties.insert("s3.endpoint".to_owned(), endpoint);
                }
                sqlite_catalog_s3(&db, &self.s3_location(), properties).await
            }
        }
        .map_err(|e| e.to_string())
    }
}

#[async_trait]
impl Destination for IcebergDestination {
    fn server(&self) -> ServerInfo {
        ServerInfo {
            name: "iceberg-rust".into(),
            version: format!(
                "{ICEBERG_RUST_VERSION}, SQL catalog on SQLite, warehouse on {}",
                self.on
            ),
        }
    }

    fn commit_off_the_fault_path(&self) -> Option<String> {
        self.s3.as_ref().map(|_| {
            "the commit is the SQLite catalog row on this machine; the fault path carries only \
             the S3 data and metadata files"
                .to_owned()
        })
    }

    async fn sink(&self, isolation: &str) -> Result<SinkUnderTest, String> {
        let (endpoint, proxy) = match &self.s3 {
            Some(s3) => {
                let (endpoint, proxy) = s3.proxied("http").await?;
                (Some(endpoint), Some(proxy))
            }
            None => (None, None),
        };
        let sink = IcebergSink::with_catalog(
            self.catalog(endpoint).await?,
            IcebergSinkConfig::new(NAMESPACE, table(isolation)),
        )
        .map_err(|e| e.to_string())?;
        Ok(match proxy {
            Some(proxy) => SinkUnderTest::with_faults(sink, proxy),
            None => SinkUnderTest::new(sink),
        })
    }

    async fn read_back(&self, isolation: &str) -> Result<Readback, String> {
        let catalog = self.catalog(None).await?;
        let ident = iceberg_ident(&table(isolation))?;
        if !catalog
            .table_exists(&ident)
            .await
            .map_err(|e| e.to_string())?
        {
            return Ok(Readback::default());
        }
        let contents = read_table(catalog.as_ref(), &ident).await?;
        let rows = contents
            .rows
            .into_iter()
            .map(|r| {
                let value = bytes::Bytes::from(r.value);
                ReadRow {
                    id: RecordId::new(r.topic, r.partition, r.offset),
                    checksum: checksum(&value),
                    value,
                }
            })
            .collect();
        Ok(Readback {
            rows,
            physical_rows: None,
            notes: vec![format!(
                "{} snapshots, {} data files",
                contents.snapshots, contents.data_files
            )],
        })
    }

    /// The table's upkeep as a lakehouse runs it: another engine commits a snapshot of its own
    /// (a compaction or a second writer: it carries no `pico.watermarks`), then every snapshot
    /// but the current one is expired (iceberg-rust's `expire_snapshots`, metadata only), so
    /// none of the sink's own snapshots is left.
    async fn pass_horizon(&self, isolation: &str) -> Result<Upkeep, String> {
        use pico_sink_iceberg::iceberg::transaction::{ApplyTransactionAction, Transaction};
        let catalog = self.catalog(None).await?;
        let ident = iceberg_ident(&table(isolation))?;
        let loaded = catalog
            .load_table(&ident)
            .await
            .map_err(|e| e.to_string())?;
        let tx = Transaction::new(&loaded);
        let tx = tx
            .fast_append()
            .set_snapshot_properties(HashMap::from([(
                "engine".to_owned(),
                "another engine's maintenance commit".to_owned(),
            )]))
            .apply(tx)
            .map_err(|e| format!("another engine's commit: {e}"))?;
        let loaded = tx
            .commit(catalog.as_ref())
            .await
            .map_err(|e| format!("committing another engine's snapshot: {e}"))?;
        let before = loaded.metadata().snapshots().count();
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|e| e.to_string())?
            .as_millis() as i64;
        let tx = Transaction::new(&loaded);
        let tx = tx
            .expire_snapshots()
            .expire_older_than_ms(now_ms + 1)
            .retain_last(1)
            .apply(tx)
            .map_err(|e| format!("expiring snapshots: {e}"))?;
        let expired = tx
            .commit(catalog.as_ref())
            .await
            .map_err(|e| format!("committing the expiry: {e}"))?;
        let after = expired.metadata().snapshots().count();
        Ok(Upkeep::of(Horizon::unbounded(
            "pico.watermarks in every snapshot summary and as a table property, set in each commit",
        ))
        .did("snapshots committed by another engine", 1)
        .did("snapshots expired", before.saturating_sub(after) as u64))
    }

    async fn shutdown(self: Box<Self>) -> Result<(), String> {
        match self.s3 {
            Some(s3) => s3.stop().await,
            None => Ok(()),
        }
    }
}

fn iceberg_ident(table: &str) -> Result<pico_sink_iceberg::TableIdent, String> {
    pico_sink_iceberg::TableIdent::from_strs([NAMESPACE, table]).map_err(|e| e.to_string())
}
