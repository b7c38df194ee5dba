//! The Delta Lake sink, embedded: the real delta-rs library on a temp directory. Read back from
//! the table's current snapshot: every data file it references, read with the parquet reader.
//! There is no network path in-process, so lost-ack and outage are not applicable here.

use std::sync::Arc;

use async_trait::async_trait;
use deltalake::arrow::array::{Array, BinaryArray, Int64Array, StringArray};
use deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use pico_sink::identity::RecordId;
use pico_sink_delta::{DeltaSink, DeltaSinkConfig};

use crate::provider::ProviderKind;
use crate::target::{Destination, ReadRow, Readback, ServerInfo, SinkUnderTest, Target, checksum};

/// The Delta Lake sink on a local directory.
pub struct DeltaTarget;

#[async_trait]
impl Target for DeltaTarget {
    fn name(&self) -> &'static str {
        "delta (local filesystem)"
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
        Ok(Box::new(DeltaDestination { dir: Arc::new(dir) }))
    }
}

struct DeltaDestination {
    dir: Arc<tempfile::TempDir>,
}

impl DeltaDestination {
    fn location(&self, isolation: &str) -> String {
        self.dir.path().join(isolation).display().to_string()
    }
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
        ServerInfo {
            name: "delta-rs (deltalake)".into(),
            version: "1.1.2, local filesystem".into(),
        }
    }

    async fn sink(&self, isolation: &str) -> Result<SinkUnderTest, String> {
        Ok(SinkUnderTest {
            sink: Box::new(DeltaSink::new(DeltaSinkConfig::new(
                self.location(isolation),
            ))),
            faults: None,
        })
    }

    async fn read_back(&self, isolation: &str) -> Result<Readback, String> {
        let location = self.location(isolation);
        let url = url::Url::from_directory_path(&location)
            .map_err(|()| format!("{location} is not absolute"))?;
        let table = match deltalake::open_table(url).await {
            Ok(t) => t,
            Err(deltalake::DeltaTableError::NotATable(_)) => return Ok(Readback::default()),
            Err(e) => return Err(format!("opening {location}: {e}")),
        };
        let version = table.version().unwrap_or_default();
        let uris: Vec<String> = table.get_file_uris().map_err(|e| e.to_string())?.collect();
        let mut rows = Vec::new();
        for uri in &uris {
            let path = url::Url::parse(uri)
                .ok()
                .and_then(|u| u.to_file_path().ok())
                .unwrap_or_else(|| uri.into());
            let file =
                std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let reader = ParquetRecordBatchReaderBuilder::try_new(file)
                .and_then(|b| b.build())
                .map_err(|e| format!("{}: {e}", path.display()))?;
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
                uris.len()
            )],
        })
    }

    async fn shutdown(self: Box<Self>) -> Result<(), String> {
        Ok(())
    }
}
