//! Records to validated rows; what PostgreSQL cannot hold is rejected here, per record.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use pico_pg_common::extract_mapped;
use pico_sink::{Batch, Payload, RejectedRecord};

use crate::config::{PostgresSinkConfig, ValueColumn};

/// PostgreSQL's timestamptz range, in ms since the Unix epoch (4713 BC to 294276 AD).
const TS_MIN_MS: i64 = -210_866_803_200_000;
const TS_MAX_MS: i64 = 9_224_318_015_999_999;

/// The value as it goes to the server.
#[derive(Debug, Clone)]
pub(crate) enum Value {
    /// JSON text for a jsonb column (sent as is; the server parses it).
    Json(String),
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
}

fn has_nul(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::String(s) => s.contains('\0'),
        serde_json::Value::Array(a) => a.iter().any(has_nul),
        serde_json::Value::Object(o) => o.iter().any(|(k, v)| k.contains('\0') || has_nul(v)),
        _ => false,
    }
}

fn timestamp(ms: i64) -> Result<SystemTime, String> {
    if !(TS_MIN_MS..=TS_MAX_MS).contains(&ms) {
        return Err(format!(
            "timestamp {ms} ms is outside PostgreSQL's timestamptz range"
        ));
    }
    let magnitude = Duration::from_millis(ms.unsigned_abs());
    let t = if ms >= 0 {
        UNIX_EPOCH.checked_add(magnitude)
    } else {
        UNIX_EPOCH.checked_sub(magnitude)
    };
    t.ok_or_else(|| format!("timestamp {ms} ms does not fit this platform's clock"))
}

/// Headers as a JSON array of `{name, value}`; values holding NUL (raw or as `\u0000`) go as
/// base64, since jsonb cannot store `\u0000`.
fn headers_json(record: &pico_sink::Record) -> Result<Option<String>, String> {
    if record.headers.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(record.headers.len());
    for h in &record.headers {
        if h.name.contains('\0') {
            return Err("a header name holds a NUL character".into());
        }
        let holds_nul = h.value.contains(&0) || h.value.windows(6).any(|w| w == b"\\u0000");
        let value = if holds_nul {
            Payload::base64_of(&h.value)
        } else {
            Payload::from_bytes(&h.value)
        };
        out.push(serde_json::json!({ "name": h.name, "value": value }));
    }
    serde_json::to_string(&out)
        .map(Some)
        .map_err(|e| format!("headers do not serialize: {e}"))
}

/// Validates every record of `batch`.
pub(crate) fn prepare(
    config: &PostgresSinkConfig,
    batch: &Batch,
) -> (Vec<Row>, Vec<RejectedRecord>) {
    let mut rows = Vec::with_capacity(batch.len());
    let mut rejected = Vec::new();
    for (index, record) in batch.records().iter().enumerate() {
        match row(config, index, record) {
            Ok(row) => rows.push(row),
            Err(reason) => rejected.push(RejectedRecord {
                id: record.id.clone(),
                reason,
            }),
        }
    }
    (rows, rejected)
}

fn row(
    config: &PostgresSinkConfig,
    index: usize,
    record: &pico_sink::Record,
) -> Result<Row, String> {
    let topic = config.scope.qualified_topic(&record.id.topic).into_owned();
    if topic.contains('\0') {
        return Err("the topic holds a NUL character, which a text column cannot store".into());
    }
    let partition = i32::try_from(record.id.partition).map_err(|_| {
        format!(
            "partition {} is above 2147483647 and does not fit the int column",
            record.id.partition
        )
    })?;
    let offset = i64::try_from(record.id.offset).map_err(|_| {
        format!(
            "offset {} is above 9223372036854775807 and does not fit the bigint column",
            record.id.offset
        )
    })?;
    let needs_json = config.value_column == ValueColumn::Jsonb && config.keep_value
        || !config.mapped_columns.is_empty();
    let parsed = if needs_json {
        let text = std::str::from_utf8(&record.value)
            .map_err(|_| "value is not UTF-8, so not JSON".to_owned())?;
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            if record.value.is_empty() {
                "value is empty (a tombstone?), not JSON".to_owned()
            } else {
                format!("value is not JSON: {e}")
            }
        })?;
        if has_nul(&v) {
            return Err("value holds \\u0000, which jsonb cannot store".into());
        }
        Some((text, v))
    } else {
        None
    };
    let mapped = match &parsed {
        Some((_, v)) if !config.mapped_columns.is_empty() => {
            extract_mapped(v, &config.mapped_columns)?
        }
        _ => Vec::new(),
    };
    let value = if !config.keep_value {
        None
    } else {
        match (config.value_column, &parsed) {
            (ValueColumn::Jsonb, Some((text, _))) => Some(Value::Json((*text).to_owned())),
            _ => Some(Value::Bytes(record.value.clone())),
        }
    };
    Ok(Row {
        index,
        topic,
        partition,
        offset,
        key: record.key.clone(),
        value,
        headers: headers_json(record)?,
        ts: record.timestamp_ms.map(timestamp).transpose()?,
        mapped,
    })
}
