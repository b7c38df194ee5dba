//! Records to validated rows; what PostgreSQL cannot hold is rejected here, per record.

use std::time::SystemTime;

use bytes::Bytes;
use pico_pg_common::{common_fields, extract_mapped, json_has_nul};
use pico_sink::kit::convert_records;
use pico_sink::{Batch, RejectedRecord};

use crate::config::{PostgresSinkConfig, ValueColumn};

/// The value as it goes to the server.
#[derive(Debug, Clone)]
pub(crate) enum Value {
    /// UTF-8 JSON text for a jsonb column, sent as is: the server parses and validates it (a
    /// value it refuses fails the batch with a data error, and the batch is split until that
    /// record is isolated and rejected with the server's reason).
    Json(Bytes),
    /// Bytes for a bytea column.
    Bytes(Bytes),
}
/// One record ready to write.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    /// Position in the batch, to name the record in rejections.
    pub index: usize,
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub key: Option<Bytes>,
    pub value: Option<Value>,
    pub headers: Option<String>,
    pub ts: Option<SystemTime>,
    pub mapped: Vec<Option<String>>,
    /// [`pico_pg_common::record_digest`] of the record.
    pub digest: i64,
}

/// Validates every record of `batch`.
pub(crate) fn prepare(
    config: &PostgresSinkConfig,
    batch: &Batch,
) -> (Vec<Row>, Vec<RejectedRecord>) {
    convert_records(batch, |index, record| row(config, index, record))
}

fn row(
    config: &PostgresSinkConfig,
    index: usize,
    record: &pico_sink::Record,
) -> Result<Row, String> {
    let common = common_fields(&config.scope, record)?;
    let json_value = config.value_column == ValueColumn::Jsonb && config.keep_value;
    if json_value || !config.mapped_columns.is_empty() {
        // Cheap checks with clear reasons; the full JSON check is the server's (jsonb input),
        // so a first write does not parse every payload twice.
        std::str::from_utf8(&record.value)
            .map_err(|_| "value is not UTF-8, so not JSON".to_owned())?;
        if record.value.is_empty() {
            return Err("value is empty (a tombstone?), not JSON".into());
        }
    }
    let mapped = if config.mapped_columns.is_empty() {
        Vec::new()
    } else {
        // Mapped columns need the parsed document.
        let v: serde_json::Value =
            serde_json::from_slice(&record.value).map_err(|e| format!("value is not JSON: {e}"))?;
        if json_has_nul(&v) {
            return Err("value holds \\u0000, which jsonb cannot store".into());
        }
        extract_mapped(&v, &config.mapped_columns)?
    };
    let value = match (config.keep_value, json_value) {
        (false, _) => None,
        (true, true) => Some(Value::Json(record.value.clone())),
        (true, false) => Some(Value::Bytes(record.value.clone())),
    };
    Ok(Row {
        index,
        topic: common.topic,
        partition: common.partition,
        offset: common.offset,
        key: record.key.clone(),
        value,
        headers: common.headers,
        ts: common.ts,
        mapped,
        digest: pico_pg_common::record_digest(record),
    })
}
