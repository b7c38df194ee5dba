//! Per-record checks and conversions shared by the PostgreSQL-protocol sinks.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pico_sink::Record;
use pico_sink::identity::Scope;
use pico_sink::kit::Payload;

/// PostgreSQL's (and Redshift's) timestamptz range, in ms since the Unix epoch.
const TS_MIN_MS: i64 = -210_866_803_200_000;
const TS_MAX_MS: i64 = 9_224_318_015_999_999;

/// The identity and metadata columns of one record, checked.
#[derive(Debug, Clone)]
pub struct CommonFields {
    /// `pico_topic` (namespace-qualified).
    pub topic: String,
    /// `pico_partition`.
    pub partition: i32,
    /// `pico_offset`.
    pub offset: i64,
    /// `ts`.
    pub ts: Option<SystemTime>,
    /// `headers` as JSON text, `None` without headers.
    pub headers: Option<String>,
}

/// Checks what every PostgreSQL-protocol table needs; the error is the rejection reason.
pub fn common_fields(scope: &Scope, record: &Record) -> Result<CommonFields, String> {
    let topic = scope.qualified_topic(&record.id.topic).into_owned();
    if topic.contains('\0') {
        return Err("the topic holds a NUL character, which a text column cannot store".into());
    }
    let partition = i32::try_from(record.id.partition).map_err(|_| {
        format!(
            "partition {} is above 2147483647 and does not fit the integer column",
            record.id.partition
        )
    })?;
    let offset = i64::try_from(record.id.offset).map_err(|_| {
        format!(
            "offset {} is above 9223372036854775807 and does not fit the bigint column",
            record.id.offset
        )
    })?;
    Ok(CommonFields {
        topic,
        partition,
        offset,
        ts: record.timestamp_ms.map(timestamp).transpose()?,
        headers: headers_json(record)?,
    })
}

fn timestamp(ms: i64) -> Result<SystemTime, String> {
    if !(TS_MIN_MS..=TS_MAX_MS).contains(&ms) {
        return Err(format!(
            "timestamp {ms} ms is outside the timestamptz range"
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
/// base64, since neither text columns nor jsonb store it.
fn headers_json(record: &Record) -> Result<Option<String>, String> {
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

/// Whether parsed JSON holds a NUL character in any string or key.
pub fn json_has_nul(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::String(s) => s.contains('\0'),
        serde_json::Value::Array(a) => a.iter().any(json_has_nul),
        serde_json::Value::Object(o) => o.iter().any(|(k, v)| k.contains('\0') || json_has_nul(v)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use pico_sink::identity::RecordId;

    use super::*;

    #[test]
    fn limits_are_reasons() {
        let scope = Scope::default();
        let ok = Record::new(RecordId::new("t", 1, 2), "{}")
            .with_timestamp_ms(-1)
            .with_header("h", "a\0b");
        let f = common_fields(&scope, &ok).unwrap();
        assert_eq!((f.partition, f.offset), (1, 2));
        assert!(f.headers.unwrap().contains("base64"));
        for (record, needle) in [
            (
                Record::new(RecordId::new("t", u32::MAX, 0), "{}"),
                "partition",
            ),
            (Record::new(RecordId::new("t", 0, u64::MAX), "{}"), "offset"),
            (Record::new(RecordId::new("a\0b", 0, 0), "{}"), "NUL"),
            (
                Record::new(RecordId::new("t", 0, 0), "{}").with_timestamp_ms(i64::MAX),
                "timestamp",
            ),
            (
                Record::new(RecordId::new("t", 0, 0), "{}").with_header("a\0", "v"),
                "header",
            ),
        ] {
            let err = common_fields(&scope, &record).unwrap_err();
            assert!(err.contains(needle), "{err}");
        }
    }
}
