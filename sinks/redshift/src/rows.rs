//! Records to rows of VARCHAR columns; what Redshift cannot hold is rejected per record.

use std::time::SystemTime;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use pico_pg_common::{common_fields, extract_mapped};
use pico_sink::kit::convert_records;
use pico_sink::{Batch, RejectedRecord};

use crate::config::RedshiftSinkConfig;

/// Redshift's largest VARCHAR, in bytes.
pub(crate) const VARCHAR_MAX: usize = 65_535;
/// Width of `pico_topic`, in bytes.
pub(crate) const TOPIC_MAX: usize = 1024;

/// One record ready to stage.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub index: usize,
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub key: Option<String>,
    pub value: Option<String>,
    pub headers: Option<String>,
    pub ts: Option<SystemTime>,
    pub mapped: Vec<Option<String>>,
    /// [`pico_pg_common::record_digest`] of the record.
    pub digest: i64,
}

fn fits(what: &str, text: &str, max: usize) -> Result<(), String> {
    if text.len() > max {
        return Err(format!(
            "{what} is {} bytes, above the VARCHAR({max}) column",
            text.len()
        ));
    }
    if text.contains('\0') {
        return Err(format!(
            "{what} holds a NUL character, which VARCHAR cannot store"
        ));
    }
    Ok(())
}

fn row(
    config: &RedshiftSinkConfig,
    index: usize,
    record: &pico_sink::Record,
) -> Result<Row, String> {
    let common = common_fields(&config.scope, record)?;
    fits("the topic", &common.topic, TOPIC_MAX)?;
    let text = std::str::from_utf8(&record.value)
        .map_err(|_| "value is not UTF-8, which a Redshift VARCHAR column requires".to_owned());
    let value = if config.keep_value {
        let text = text.clone()?;
        fits("the value", text, VARCHAR_MAX)?;
        Some(text.to_owned())
    } else {
        None
    };
    let mapped = if config.mapped_columns.is_empty() {
        Vec::new()
    } else {
        let parsed: serde_json::Value = serde_json::from_str(text?)
            .map_err(|e| format!("mapped columns need a JSON payload: {e}"))?;
        extract_mapped(&parsed, &config.mapped_columns)?
    };
    let key = record.key.as_ref().map(|k| STANDARD.encode(k));
    if let Some(k) = &key {
        fits("the key (base64)", k, VARCHAR_MAX)?;
    }
    if let Some(h) = &common.headers {
        fits("the headers (JSON)", h, VARCHAR_MAX)?;
    }
    Ok(Row {
        index,
        topic: common.topic,
        partition: common.partition,
        offset: common.offset,
        key,
        value,
        headers: common.headers,
        ts: common.ts,
        mapped,
        digest: pico_pg_common::record_digest(record),
    })
}

/// Validates every record of `batch`.
pub(crate) fn prepare(
    config: &RedshiftSinkConfig,
    batch: &Batch,
) -> (Vec<Row>, Vec<RejectedRecord>) {
    convert_records(batch, |index, record| row(config, index, record))
}
