//! The SQL catalog on SQLite (feature `sql-catalog`), its warehouse local or on S3 (feature
//! `s3`, through OpenDAL).

use std::collections::HashMap;
use std::sync::Arc;

use iceberg::io::{LocalFsStorageFactory, StorageFactory};
use iceberg::{Catalog, CatalogBuilder};
use iceberg_catalog_sql::{SqlBindStyle, SqlCatalogBuilder};
use pico_sink::SinkError;

/// The SQL catalog on the SQLite database at `path` (created if missing), with its warehouse
/// in the local directory `warehouse`.
pub async fn sqlite_catalog(
    path: &str,
    warehouse: &str,
) -> std::result::Result<Arc<dyn Catalog>, SinkError> {
    std::fs::create_dir_all(warehouse).map_err(|e| {
        SinkError::fatal(format!(
            "cannot create the warehouse directory {warehouse}: {e}"
        ))
    })?;
    open_sql_catalog(
        path,
        warehouse,
        Arc::new(LocalFsStorageFactory),
        HashMap::new(),
    )
    .await
}

#[cfg(feature = "s3")]
/// The SQL catalog on the SQLite database at `path`, with its warehouse on S3 at `location`
/// (`s3://bucket/prefix`). `properties` are Iceberg's S3 properties: `s3.endpoint`,
/// `s3.access-key-id`, `s3.secret-access-key`, `s3.region`, `s3.path-style-access`, …
pub async fn sqlite_catalog_s3(
    path: &str,
    location: &str,
    properties: HashMap<String, String>,
) -> std::result::Result<Arc<dyn Catalog>, SinkError> {
    let factory = iceberg_storage_opendal::OpenDalStorageFactory::S3 {
        customized_credential_load: None,
    };
    open_sql_catalog(path, location, Arc::new(factory), properties).await
}

async fn open_sql_catalog(
    path: &str,
    warehouse: &str,
    storage: Arc<dyn StorageFactory>,
    properties: HashMap<String, String>,
) -> std::result::Result<Arc<dyn Catalog>, SinkError> {
    let mut props = HashMap::from([
        ("uri".to_owned(), format!("sqlite:{path}?mode=rwc")),
        ("warehouse".to_owned(), warehouse.to_owned()),
        ("sql_bind_style".to_owned(), SqlBindStyle::QMark.to_string()),
    ]);
    props.extend(properties);
    let catalog = SqlCatalogBuilder::default()
        .with_storage_factory(storage)
        .load("pico", props)
        .await
        .map_err(|e| SinkError::fatal(format!("cannot open the SQLite catalog {path}: {e}")))?;
    Ok(Arc::new(catalog))
}
