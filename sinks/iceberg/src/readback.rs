//! Reading back what the sink wrote (for audits and the conformance suite).

use arrow_array::{Array, Int64Array, LargeBinaryArray, RecordBatch, StringArray};
use futures_util::TryStreamExt;
use iceberg::Catalog;
use iceberg::TableIdent;
use iceberg::scan::TableScan;
use pico_sink::identity::columns;

/// One stored row: identity and value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRow {
    /// `pico_topic` (namespace-qualified).
    pub topic: String,
    /// `pico_partition`.
    pub partition: u32,
    /// `pico_offset`.
    pub offset: u64,
    /// `value`.
    pub value: Vec<u8>,
}

/// What the table holds: every row of its current snapshot, and the number of snapshots and
/// of data files.
#[derive(Debug, Clone, Default)]
pub struct TableContents {
    /// Rows in scan order.
    pub rows: Vec<StoredRow>,
    /// Snapshots in the table metadata.
    pub snapshots: usize,
    /// Data files scanned.
    pub data_files: usize,
}

fn column<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> Result<&'a T, String> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .ok_or_else(|| format!("column {name} missing or of another type"))
}

/// The table, its snapshot count, and a scan of its current snapshot with the number of data
/// files it reads (`None` for a table without snapshots).
async fn plan(
    catalog: &dyn Catalog,
    ident: &TableIdent,
) -> Result<(usize, Option<(TableScan, usize)>), String> {
    let table = catalog
        .load_table(ident)
        .await
        .map_err(|e| format!("loading {ident}: {e}"))?;
    let snapshots = table.metadata().snapshots().count();
    if table.metadata().current_snapshot().is_none() {
        return Ok((snapshots, None));
    }
    let scan = table
        .scan()
        .select_all()
        .build()
        .map_err(|e| format!("scan: {e}"))?;
    let files = scan
        .plan_files()
        .await
        .map_err(|e| format!("planning: {e}"))?
        .try_collect::<Vec<_>>()
        .await
        .map_err(|e| format!("planning: {e}"))?
        .len();
    Ok((snapshots, Some((scan, files))))
}

/// Snapshots in the metadata and data files in the current snapshot of `ident`, without
/// reading any data.
pub async fn table_stats(
    catalog: &dyn Catalog,
    ident: &TableIdent,
) -> Result<(usize, usize), String> {
    let (snapshots, planned) = plan(catalog, ident).await?;
    Ok((snapshots, planned.map_or(0, |(_, files)| files)))
}

/// Scans the current snapshot of `ident`.
pub async fn read_table(
    catalog: &dyn Catalog,
    ident: &TableIdent,
) -> Result<TableContents, String> {
    let (snapshots, planned) = plan(catalog, ident).await?;
    let Some((scan, data_files)) = planned else {
        return Ok(TableContents {
            snapshots,
            ..TableContents::default()
        });
    };
    let batches: Vec<RecordBatch> = scan
        .to_arrow()
        .await
        .map_err(|e| format!("scan: {e}"))?
        .try_collect()
        .await
        .map_err(|e| format!("scan: {e}"))?;
    let mut rows = Vec::new();
    for batch in &batches {
        let topics = column::<StringArray>(batch, columns::TOPIC)?;
        let partitions = column::<Int64Array>(batch, columns::PARTITION)?;
        let offsets = column::<Int64Array>(batch, columns::OFFSET)?;
        let values = column::<LargeBinaryArray>(batch, columns::VALUE)?;
        for i in 0..batch.num_rows() {
            rows.push(StoredRow {
                topic: topics.value(i).to_owned(),
                partition: u32::try_from(partitions.value(i))
                    .map_err(|_| format!("pico_partition {} is not a u32", partitions.value(i)))?,
                offset: offsets.value(i) as u64,
                value: if values.is_null(i) {
                    Vec::new()
                } else {
                    values.value(i).to_vec()
                },
            });
        }
    }
    Ok(TableContents {
        rows,
        snapshots,
        data_files,
    })
}
