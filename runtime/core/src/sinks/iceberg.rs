//! [`IcebergSettings`]: the `iceberg` kind, the crate's table configuration plus the catalog the
//! table lives in (`[sink.catalog]`).

use std::collections::HashMap;

use pico_sink::SinkError;
use pico_sink_iceberg::{IcebergSink, IcebergSinkConfig};
use serde::Deserialize;

/// `kind = "iceberg"`: every key of `[sink]` but `catalog` is [`IcebergSinkConfig`]'s
/// (read by hand: `catalog` is taken out first).
///
/// ```toml
/// [sink]
/// kind = "iceberg"
/// table_namespace = ["pico"]
/// table = "orders"
///
/// [sink.catalog]
/// path = "/var/lib/pico/catalog.sqlite"
/// warehouse = "s3://lake/warehouse"
/// properties = { "s3.endpoint" = "http://127.0.0.1:8333", "s3.region" = "us-east-1" }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct IcebergSettings {
    /// Where the table's metadata pointer is kept.
    pub catalog: CatalogSettings,
    /// The table and how the sink commits to it.
    pub table: IcebergSinkConfig,
}

/// The SQL catalog on a SQLite file, the catalog this runtime opens (in your own runtime
/// `IcebergSink::with_catalog` takes any `iceberg::Catalog`).
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct CatalogSettings {
    /// The SQLite database holding the catalog (created when missing).
    pub path: String,
    /// The warehouse: a local directory, or `s3://bucket/prefix`.
    pub warehouse: String,
    /// Iceberg's storage properties for an `s3://` warehouse (`s3.endpoint`,
    /// `s3.access-key-id`, `s3.secret-access-key`, `s3.region`, `s3.path-style-access`, …).
    #[serde(default)]
    pub properties: HashMap<String, String>,
}

impl std::fmt::Debug for CatalogSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The properties may hold keys: only their names are shown.
        let mut names: Vec<&String> = self.properties.keys().collect();
        names.sort();
        f.debug_struct("CatalogSettings")
            .field("path", &self.path)
            .field("warehouse", &self.warehouse)
            .field("properties", &names)
            .finish()
    }
}

impl IcebergSettings {
    /// The `[sink]` section of the `iceberg` kind: `catalog` as [`CatalogSettings`], every
    /// other key as [`IcebergSinkConfig`]'s; an error names the key path under `sink.`.
    pub(super) fn read(mut section: toml::Table) -> Result<Self, String> {
        let catalog = section.remove("catalog").ok_or(
            "sink: the iceberg sink needs [sink.catalog] with path (a SQLite file) and warehouse",
        )?;
        Ok(Self {
            catalog: super::read_at("sink.catalog", catalog)?,
            table: super::read_at("sink", toml::Value::Table(section))?,
        })
    }

    /// The sink on this catalog, opened (the catalog's database is created when missing).
    pub async fn open(self) -> Result<IcebergSink, SinkError> {
        let CatalogSettings {
            path,
            warehouse,
            properties,
        } = self.catalog;
        let catalog = if warehouse.starts_with("s3://") {
            pico_sink_iceberg::sqlite_catalog_s3(&path, &warehouse, properties).await?
        } else {
            if !properties.is_empty() {
                return Err(SinkError::fatal(format!(
                    "sink.catalog.properties are for an s3:// warehouse; {warehouse} is a local \
                     directory: remove them or name an s3:// warehouse"
                )));
            }
            pico_sink_iceberg::sqlite_catalog(&path, &warehouse).await?
        };
        IcebergSink::with_catalog(catalog, self.table)
    }
}
