//! The Delta Lake sink with the real delta-rs library, on a local temp directory (embedded; no
//! network path, so lost-ack and outage are not applicable) or on S3 (SeaweedFS natively, MinIO
//! through docker, or `PICO_S3_URL`), with the fault proxy cutting the answer to the PUT of a
//! log entry. Read back from the table's current snapshot: every data file it references,
//! fetched through the table's object store and read with the parquet reader.

use super::DELTA_RS_VERSION;
use std::sync::Arc;

use async_trait::async_trait;
use deltalake::arrow::array::{Array, BinaryArray, Int64Array, StringArray};
use deltalake::logstore::object_store::ObjectStoreExt;
use deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use pico_sink::identity::RecordId;
use pico_sink_delta::{DeltaSink, DeltaSinkConfig};
use std::collections::HashMap;

use crate::serve::Served;
use crate::serve::s3::S3Server;
use pico_conformance::proxy::FaultProxy;

use crate::provide::ANY_SERVER;
use pico_conformance::horizon::{Horizon, Upkeep};
use pico_conformance::provider::ProviderKind;
use pico_conformance::target::{
    Destination, ReadRow, Readback, ServerInfo, SinkUnderTest, Target, checksum,
};

/// The Delta Lake sink on a local directory.
pub struct DeltaTarget;

#[async_trait]
impl Target for DeltaTarget {
    fn name(&self) -> &'static str {
        "delta"
    }
    fn title(&self) -> &'static str {
        "local filesystem"
    }
    fn sink_crate(&self) -> &'static str {
        "pico-sink-delta"
    }
    fn providers(&self) -> Vec<ProviderKind> {
        vec![ProviderKind::Embedded]
    }
    async fn provision(&self, _: ProviderKind) -> Result<Box<dyn Destination>, String> {
        let dir = tempfile::Builder::new()
            .prefix("pico-delta-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        Ok(Box::new(DeltaDestination {
            store: Store::Local(Arc::new(dir)),
        }))
    }
}

/// The Delta Lake sink on an S3-compatible store.
pub struct DeltaS3Target;

/// The bucket every scenario's table lives in (one table per scenario, under its own prefix).
const BUCKET: &str = "pico-delta";

#[async_trait]
impl Target for DeltaS3Target {
    fn name(&self) -> &'static str {
        "delta-s3"
    }
    fn title(&self) -> &'static str {
        "S3 object store"
    }
    fn sink_crate(&self) -> &'static str {
        "pico-sink-delta"
    }
    fn providers(&self) -> Vec<ProviderKind> {
        ANY_SERVER.to_vec()
    }
    async fn provision(&self, provider: ProviderKind) -> Result<Box<dyn Destination>, String> {
        let server = S3Server::provide(provider).await?;
        server.ensure_bucket(BUCKET).await?;
        Ok(Box::new(DeltaDestination {
            store: Store::S3(Box::new(Served::new(server))),
        }))
    }
}

enum Store {
    Local(Arc<tempfile::TempDir>),
    S3(Box<Served<S3Server>>),
}

struct DeltaDestination {
    store: Store,
}

impl DeltaDestination {
    /// Table location, storage options for an endpoint (`None`: the server itself), and the
    /// fault proxy in front of the store when one was asked for.
    async fn table(
        &self,
        isolation: &str,
        proxied: bool,
    ) -> Result<(String, HashMap<String, String>, Option<Arc<FaultProxy>>), String> {
        match &self.store {
            Store::Local(dir) => Ok((
                dir.path().join(isolation).display().to_string(),
                HashMap::new(),
                None,
            )),
            Store::S3(s3) => {
                let server = s3.server();
                let (endpoint, proxy) = if proxied {
                    let (endpoint, proxy) = s3.proxied("http").await?;
                    (endpoint, Some(proxy))
                } else {
                    (server.endpoint.clone(), None)
                };
                let options = delta_s3_options(server, &endpoint);
                Ok((format!("s3://{BUCKET}/{isolation}"), options, proxy))
            }
        }
    }
}

/// delta-rs storage options for `server`, reached at `endpoint` (the server's own, or a fault
/// proxy in front of it).
pub(crate) fn delta_s3_options(server: &S3Server, endpoint: &str) -> HashMap<String, String> {
    HashMap::from([
        ("AWS_ENDPOINT_URL".to_owned(), endpoint.to_owned()),
        ("AWS_ACCESS_KEY_ID".to_owned(), server.access_key.clone()),
        (
            "AWS_SECRET_ACCESS_KEY".to_owned(),
            server.secret_key.clone(),
        ),
        ("AWS_REGION".to_owned(), "us-east-1".to_owned()),
        ("AWS_ALLOW_HTTP".to_owned(), "true".to_owned()),
        // A few retries per request, as any production store client has (the
        // default is 10). Without them a log read of N objects fails with
        // probability 1 - 0.96^N under flaky-network's random cuts, and so does
        // every checkpoint: measured, the log segment grew past 80 commits, 91 of
        // 98 checkpoints failed and no attempt could finish. A lost answer to the
        // conditional commit PUT still reaches the sink: the retried PUT meets 412
        // and the sink re-reads its watermark.
        ("max_retries".to_owned(), "3".to_owned()),
        ("retry_timeout".to_owned(), "30s".to_owned()),
    ])
}

fn column<'a, T: 'static>(
    batch: &'a deltalake::arrow::record_batch::RecordBatch,
    name: &str,
) -> Result<&'a T, String> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .ok_or_else(|| format!("column {name} missing or of another type"))
}

#[async_trait]
impl Destination for DeltaDestination {
    fn server(&self) -> ServerInfo {
        let on = match &self.store {
            Store::Local(_) => "local filesystem".to_owned(),
            Store::S3(s3) => {
                let info = s3.server().info();
                format!("on {} {}", info.name, info.version)
            }
        };
        ServerInfo {
            name: "delta-rs (deltalake)".into(),
            version: format!("{DELTA_RS_VERSION}, {on}"),
        }
    }

    fn lost_ack_trigger(&self) -> Option<Vec<u8>> {
        // The commit is the only conditional request: the PUT of the next log entry with
        // If-None-Match (data files are plain PUTs).
        matches!(self.store, Store::S3(_)).then(|| b"if-none-match".to_vec())
    }

    async fn sink(&self, isolation: &str) -> Result<SinkUnderTest, String> {
        let (location, options, proxy) = self.table(isolation, true).await?;
        let mut config = DeltaSinkConfig::new(location);
        config.storage_options = options;
        Ok(SinkUnderTest {
            sink: Arc::new(DeltaSink::new(config)),
            faults: proxy.map(|p| p as Arc<dyn pico_conformance::fault::FaultSwitch>),
        })
    }

    async fn read_back(&self, isolation: &str) -> Result<Readback, String> {
        let (location, options, _) = self.table(isolation, false).await?;
        read_delta(&location, options).await
    }

    /// The table's own upkeep as if its log retention had passed: a checkpoint at the current
    /// version, then log cleanup removes every log entry before it. The sink's watermarks are
    /// `txn` actions, which checkpoints carry (the sink sets no
    /// `delta.setTransactionRetentionDuration`, which would expire them).
    async fn pass_horizon(&self, isolation: &str) -> Result<Upkeep, String> {
        let (location, options, _) = self.table(isolation, false).await?;
        let table = deltalake::open_table_with_storage_options(table_url(&location)?, options)
            .await
            .map_err(|e| format!("opening {location}: {e}"))?;
        let version = table
            .version()
            .ok_or_else(|| format!("{location} has no version"))?;
        deltalake::checkpoints::create_checkpoint(&table, None)
            .await
            .map_err(|e| format!("checkpoint of {location} at version {version}: {e}"))?;
        // Everything written so far counts as past the retention.
        let cutoff = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|e| e.to_string())?
            + std::time::Duration::from_secs(1);
        let removed = deltalake::checkpoints::cleanup_expired_logs_for(
            version,
            table.log_store().as_ref(),
            cutoff.as_millis() as i64,
            None,
        )
        .await
        .map_err(|e| format!("log cleanup of {location}: {e}"))?;
        Ok(Upkeep::of(Horizon::unbounded(
            "txn actions per partition, carried into every checkpoint",
        ))
        .did("checkpoints written", 1)
        .did("log files removed by log cleanup", removed as u64))
    }

    async fn shutdown(self: Box<Self>) -> Result<(), String> {
        match self.store {
            Store::Local(_) => Ok(()),
            Store::S3(s3) => s3.stop().await,
        }
    }
}

/// The URL of a table location (a URL, or an absolute directory path).
fn table_url(location: &str) -> Result<url::Url, String> {
    if location.contains("://") {
        url::Url::parse(location).map_err(|e| e.to_string())
    } else {
        url::Url::from_directory_path(location).map_err(|()| format!("{location} is not absolute"))
    }
}

/// Every row of the Delta table at `location` (a path or URL), by reading the data files of its
/// current version; an absent table reads as empty.
pub async fn read_delta(
    location: &str,
    options: std::collections::HashMap<String, String>,
) -> Result<Readback, String> {
    let url = table_url(location)?;
    let table = match deltalake::open_table_with_storage_options(url, options).await {
        Ok(t) => t,
        Err(deltalake::DeltaTableError::NotATable(_)) => return Ok(Readback::default()),
        Err(e) => return Err(format!("opening {location}: {e}")),
    };
    let version = table.version().unwrap_or_default();
    let paths: Vec<deltalake::Path> = table
        .snapshot()
        .map_err(|e| e.to_string())?
        .log_data()
        .into_iter()
        .map(|add| add.object_store_path())
        .collect();
    let store = table.object_store();
    let mut rows = Vec::new();
    for path in &paths {
        let bytes = store
            .get(path)
            .await
            .map_err(|e| format!("{path}: {e}"))?
            .bytes()
            .await
            .map_err(|e| format!("{path}: {e}"))?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
            .and_then(|b| b.build())
            .map_err(|e| format!("{path}: {e}"))?;
        for batch in reader {
            let batch = batch.map_err(|e| e.to_string())?;
            let topics = column::<StringArray>(&batch, "pico_topic")?;
            let partitions = column::<Int64Array>(&batch, "pico_partition")?;
            let offsets = column::<Int64Array>(&batch, "pico_offset")?;
            let values = column::<BinaryArray>(&batch, "value")?;
            for i in 0..batch.num_rows() {
                let value = bytes::Bytes::copy_from_slice(if values.is_null(i) {
                    b""
                } else {
                    values.value(i)
                });
                rows.push(ReadRow {
                    id: RecordId::new(
                        topics.value(i),
                        partitions.value(i) as u32,
                        offsets.value(i) as u64,
                    ),
                    checksum: checksum(&value),
                    value,
                });
            }
        }
    }
    Ok(Readback {
        rows,
        physical_rows: None,
        notes: vec![format!(
            "table version {version}, {} data files",
            paths.len()
        )],
    })
}
