//! The Iceberg sink, embedded: the real iceberg-rust library with its SQL catalog on a SQLite
//! file and the warehouse in a temp directory. Every sink instance opens its own catalog
//! connection, as separate processes would. Read back by scanning the table's current
//! snapshot. There is no network path in-process, so lost-ack and outage are not applicable.

use std::sync::Arc;

use async_trait::async_trait;
use pico_sink::identity::RecordId;
use pico_sink_iceberg::{IcebergSink, IcebergSinkConfig, read_table, sqlite_catalog};

use crate::provider::ProviderKind;
use crate::target::{Destination, ReadRow, Readback, ServerInfo, SinkUnderTest, Target, checksum};

const NAMESPACE: &str = "pico";

/// The Iceberg sink on a SQLite catalog and a local warehouse.
pub struct IcebergTarget;

#[async_trait]
impl Target for IcebergTarget {
    fn name(&self) -> &'static str {
        "iceberg (SQLite catalog, local warehouse)"
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
        Ok(Box::new(IcebergDestination { dir: Arc::new(dir) }))
    }
}

struct IcebergDestination {
    dir: Arc<tempfile::TempDir>,
}

fn table(isolation: &str) -> String {
    isolation.replace('-', "_")
}

impl IcebergDestination {
    fn paths(&self) -> (String, String) {
        let root = self.dir.path();
        (
            root.join("catalog.db").display().to_string(),
            root.join("warehouse").display().to_string(),
        )
    }
}

#[async_trait]
impl Destination for IcebergDestination {
    fn server(&self) -> ServerInfo {
        ServerInfo {
            name: "iceberg-rust".into(),
            version: "0.10.1, SQL catalog on SQLite, local filesystem".into(),
        }
    }

    async fn sink(&self, isolation: &str) -> Result<SinkUnderTest, String> {
        let (catalog, warehouse) = self.paths();
        let sink = IcebergSink::sqlite(
            &catalog,
            &warehouse,
            IcebergSinkConfig::new(NAMESPACE, table(isolation)),
        )
        .await
        .map_err(|e| e.to_string())?;
        Ok(SinkUnderTest {
            sink: Box::new(sink),
            faults: None,
        })
    }

    async fn read_back(&self, isolation: &str) -> Result<Readback, String> {
        let (catalog, warehouse) = self.paths();
        let catalog = sqlite_catalog(&catalog, &warehouse)
            .await
            .map_err(|e| e.to_string())?;
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

    async fn shutdown(self: Box<Self>) -> Result<(), String> {
        Ok(())
    }
}

fn iceberg_ident(table: &str) -> Result<pico_sink_iceberg::TableIdent, String> {
    pico_sink_iceberg::TableIdent::from_strs([NAMESPACE, table]).map_err(|e| e.to_string())
}
