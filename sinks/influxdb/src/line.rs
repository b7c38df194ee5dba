//! Records to line protocol points whose identity is the record's.

use pico_sink::Record;
use pico_sink::identity::{Scope, columns};

use crate::config::{PointMapping, TimestampPolicy};

/// Tag holding the namespace-qualified topic.
pub const TOPIC_TAG: &str = columns::TOPIC;
/// Tag holding the partition.
pub const PARTITION_TAG: &str = columns::PARTITION;
/// Integer field holding the offset.
pub const OFFSET_FIELD: &str = columns::OFFSET;
/// Integer field holding 31 bits of the record's content digest (so that a sum over a batch
/// fits an InfluxDB integer), for the replay probe.
pub const DIGEST_FIELD: &str = columns::DIGEST;

/// The value of [`DIGEST_FIELD`] for a record.
pub fn digest31(record: &Record) -> i64 {
    (record.content_digest() & 0x7fff_ffff) as i64
}
/// Nanoseconds per millisecond: the offset modulo this fills the sub-millisecond digits.
pub const SUB_MS: u64 = 1_000_000;

/// InfluxDB's time range, in ns since the epoch.
const MIN_NS: i64 = -9_223_372_036_854_775_806;
const MAX_NS: i64 = 9_223_372_036_854_775_806;

/// The point time of a record: its millisecond time in ns plus `offset mod 1 000 000`.
pub fn point_time_ns(ms: i64, offset: u64) -> Option<i64> {
    let t = ms
        .checked_mul(SUB_MS as i64)?
        .checked_add((offset % SUB_MS) as i64)?;
    (MIN_NS..=MAX_NS).contains(&t).then_some(t)
}

/// Backslash-escapes `special` (and, in string values, the backslash itself). Every character
/// it escapes is ASCII, and an ASCII byte never occurs inside a multi-byte UTF-8 sequence, so
/// the text is scanned as bytes and copied in runs between the escapes (a kilobyte of payload
/// without a quote is one copy).
fn escape(text: &str, special: &[char], backslash: bool) -> String {
    debug_assert!(special.iter().all(char::is_ascii));
    let escaped =
        |b: u8| (backslash && b == b'\\') || special.iter().any(|&c| c as u32 == u32::from(b));
    let mut out = String::with_capacity(text.len() + 2);
    let mut from = 0;
    for (i, b) in text.bytes().enumerate() {
        if escaped(b) {
            out.push_str(&text[from..i]);
            out.push('\\');
            from = i;
        }
    }
    out.push_str(&text[from..]);
    out
}

/// In names and tag values InfluxDB unescapes only `\,`, `\=` and `\ `: any other backslash is
/// literal, so a backslash before one of those (or at the end) cannot be written unambiguously.
fn unambiguous(what: &str, text: &str, special: &[char]) -> Result<(), String> {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && chars
                .peek()
                .is_none_or(|n| special.contains(n) || *n == '\\')
        {
            return Err(format!(
                "{what} holds a backslash before {} or at its end, which line protocol cannot carry unambiguously",
                special
                    .iter()
                    .map(|c| format!("{c:?}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
        }
    }
    Ok(())
}

/// A measurement name.
fn measurement(text: &str) -> Result<String, String> {
    unambiguous("the measurement", text, &[',', ' '])?;
    Ok(escape(text, &[',', ' '], false))
}

/// A tag key, tag value or field key.
fn key(what: &str, text: &str) -> Result<String, String> {
    unambiguous(what, text, &[',', '=', ' '])?;
    Ok(escape(text, &[',', '=', ' '], false))
}

/// A string field value, quoted (here the backslash is escaped too).
fn string_value(text: &str) -> String {
    format!("\"{}\"", escape(text, &['"'], true))
}

/// Refuses a line break or a NUL, which no line-protocol text can carry (one pass over the
/// bytes: all three are ASCII).
fn no_breaks(what: &str, text: &str) -> Result<(), String> {
    match text.bytes().find(|b| matches!(b, b'\n' | b'\r' | 0)) {
        None => Ok(()),
        Some(0) => Err(format!("{what} holds a NUL character")),
        Some(_) => Err(format!(
            "{what} holds a line break, which line protocol cannot carry"
        )),
    }
}

/// The pico tags, `,pico_partition=…,pico_topic=…`.
fn pico_tags(scope: &Scope, record: &Record) -> Result<String, String> {
    let topic = scope.qualified_topic(&record.id.topic);
    if topic.is_empty() {
        return Err("the topic is empty, and InfluxDB drops empty tag values: its points could not be told apart".into());
    }
    no_breaks("the topic", &topic)?;
    Ok(format!(
        ",{PARTITION_TAG}={},{TOPIC_TAG}={}",
        record.id.partition,
        key("the topic", &topic)?
    ))
}

fn offset_field(record: &Record) -> Result<String, String> {
    let offset = i64::try_from(record.id.offset).map_err(|_| {
        format!(
            "offset {} is above i64::MAX and does not fit the integer field {OFFSET_FIELD}",
            record.id.offset
        )
    })?;
    Ok(format!(
        "{OFFSET_FIELD}={offset}i,{DIGEST_FIELD}={}i",
        digest31(record)
    ))
}

fn time(ms: Option<i64>, record: &Record, policy: TimestampPolicy) -> Result<i64, String> {
    let ms = match (ms, policy) {
        (Some(ms), _) => ms,
        (None, TimestampPolicy::RecordOffset) => i64::try_from(record.id.offset)
            .map_err(|_| "the offset is too large to serve as a time".to_owned())?,
        (None, TimestampPolicy::Reject) => {
            return Err(
                "no timestamp: the record has none and the payload gives none (set a time field or timestamp_policy)"
                    .into(),
            );
        }
    };
    point_time_ns(ms, record.id.offset)
        .ok_or_else(|| format!("timestamp {ms} ms is outside InfluxDB's time range"))
}

fn field_value(name: &str, v: &serde_json::Value) -> Result<Option<String>, String> {
    Ok(match v {
        serde_json::Value::Null => None,
        serde_json::Value::Bool(b) => Some(b.to_string()),
        serde_json::Value::Number(n) => Some(match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => format!("{i}i"),
            (None, Some(_)) if n.is_u64() => {
                return Err(format!("field {name} is an integer above i64::MAX"));
            }
            (None, Some(f)) => format!("{f:?}"),
            (None, None) => return Err(format!("field {name} is not a number InfluxDB can hold")),
        }),
        serde_json::Value::String(s) => {
            no_breaks(&format!("field {name}"), s)?;
            Some(string_value(s))
        }
        nested => {
            // Arrays and objects are not field types: keep them as their JSON text.
            Some(string_value(&nested.to_string()))
        }
    })
}

/// A JSON record's point: its line, and where it lands (for the batch seal's query).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonPoint {
    /// The line-protocol line.
    pub line: String,
    /// Every tag of the series, unescaped: each mapping tag (an empty value where the record
    /// has none, which InfluxQL matches as "no such tag"), then `pico_partition`, `pico_topic`.
    pub tags: Vec<(String, String)>,
    /// The point time, ns.
    pub time: i64,
}

/// The point of a JSON object payload.
pub(crate) fn json_point(
    mapping: &PointMapping,
    scope: &Scope,
    record: &Record,
    policy: TimestampPolicy,
) -> Result<JsonPoint, String> {
    let doc: serde_json::Value =
        serde_json::from_slice(&record.value).map_err(|e| format!("value is not JSON: {e}"))?;
    let obj = doc
        .as_object()
        .ok_or("value is not a JSON object, so it has no fields")?;
    let ms = match &mapping.time_field {
        Some(f) => Some(
            obj.get(f)
                .and_then(serde_json::Value::as_i64)
                .ok_or_else(|| format!("time field {f} is missing or not an integer of ms"))?,
        ),
        None => record.timestamp_ms,
    };
    let mut tags = Vec::new();
    let mut series = Vec::with_capacity(mapping.tags.len() + 2);
    for t in &mapping.tags {
        let text = match obj.get(t) {
            None | Some(serde_json::Value::Null) => String::new(),
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
        };
        if t.starts_with("pico_") {
            return Err(format!("tag {t} collides with the sink's pico_ tags"));
        }
        series.push((t.clone(), text.clone()));
        if !text.is_empty() {
            no_breaks(&format!("tag {t}"), &text)?;
            tags.push(format!(
                ",{}={}",
                key("a tag name", t)?,
                key(&format!("tag {t}"), &text)?
            ));
        }
    }
    let mut fields = vec![offset_field(record)?];
    // Sorted by name: the same record gives the same line whatever map order serde_json was
    // built with (its `preserve_order` feature is switched on by other crates).
    let mut entries: Vec<_> = obj.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    for (name, v) in entries {
        let chosen = if mapping.fields.is_empty() {
            !mapping.tags.contains(name) && mapping.time_field.as_ref() != Some(name)
        } else {
            mapping.fields.contains(name)
        };
        if !chosen {
            continue;
        }
        if name == OFFSET_FIELD || name == DIGEST_FIELD {
            return Err(format!(
                "payload field {name} collides with the sink's field"
            ));
        }
        no_breaks(&format!("field name {name}"), name)?;
        if let Some(value) = field_value(name, v)? {
            fields.push(format!("{}={value}", key("a field name", name)?));
        }
    }
    let time = time(ms, record, policy)?;
    series.push((PARTITION_TAG.to_owned(), record.id.partition.to_string()));
    series.push((
        TOPIC_TAG.to_owned(),
        scope.qualified_topic(&record.id.topic).into_owned(),
    ));
    Ok(JsonPoint {
        line: format!(
            "{}{}{} {} {time}",
            measurement(&mapping.measurement)?,
            tags.concat(),
            pico_tags(scope, record)?,
            fields.join(","),
        ),
        tags: series,
        time,
    })
}

/// The series key of a line (measurement and tags, as written): everything before the first
/// unescaped space.
pub(crate) fn series_key(line: &str) -> &str {
    &line[..section_end(line, 0, false)]
}

/// End of the section starting at `from` (first unescaped space, outside quotes when `quotes`).
fn section_end(line: &str, from: usize, quotes: bool) -> usize {
    let bytes = line.as_bytes();
    let (mut i, mut quoted) = (from, false);
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'"' if quotes => quoted = !quoted,
            b' ' if !quoted => return i,
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}

/// A line-protocol payload with the pico tags and field added, and the computed time when the
/// line has none (a line's own time is kept: then its identity is the line's).
pub(crate) fn line_point(
    scope: &Scope,
    record: &Record,
    policy: TimestampPolicy,
) -> Result<String, String> {
    let text = std::str::from_utf8(&record.value)
        .map_err(|_| "value is not UTF-8 line protocol".to_owned())?;
    let line = text.trim_end_matches(['\n', '\r']);
    no_breaks("the line", line)?;
    if line.trim().is_empty() {
        return Err("value is an empty line".into());
    }
    let series_end = section_end(line, 0, false);
    let fields_end = section_end(line, series_end + 1, true);
    if series_end >= line.len() || fields_end == series_end + 1 {
        return Err("value is not line protocol: no field set".into());
    }
    let own_time = line
        .get(fields_end + 1..)
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let time = match own_time {
        Some(t) => t.to_owned(),
        None => time(record.timestamp_ms, record, policy)?.to_string(),
    };
    Ok(format!(
        "{}{} {},{} {}",
        &line[..series_end],
        pico_tags(scope, record)?,
        &line[series_end + 1..fields_end],
        offset_field(record)?,
        time
    ))
}

#[cfg(test)]
mod tests {
    use pico_sink::identity::RecordId;

    use super::*;

    fn mapping() -> PointMapping {
        PointMapping {
            measurement: "readings".into(),
            tags: vec!["region".into()],
            fields: vec![],
            time_field: None,
        }
    }

    #[test]
    fn escaping_scans_bytes_and_keeps_every_other_character() {
        assert_eq!(
            escape("naïve, 東京=x", &[',', '=', ' '], false),
            r"naïve\,\ 東京\=x"
        );
        assert_eq!(escape(r#"a\"b"é"#, &['"'], true), r#"a\\\"b\"é"#);
        assert_eq!(escape("", &[','], false), "");
        assert!(no_breaks("t", "é\u{0}").is_err_and(|e| e.contains("NUL")));
        assert!(no_breaks("t", "é\r").is_err_and(|e| e.contains("line break")));
        assert!(no_breaks("t", "東京").is_ok());
    }

    #[test]
    fn json_points_carry_the_identity() {
        let r = Record::new(
            RecordId::new("a b,c", 3, 1_000_007),
            r#"{"region":"east","m3":12,"ok":true,"note":"say \"hi\"","tags":[1]}"#,
        )
        .with_timestamp_ms(1_700_000_000_000);
        let p = json_point(&mapping(), &Scope::default(), &r, TimestampPolicy::Reject).unwrap();
        assert_eq!(p.time, 1_700_000_000_000_000_007);
        assert_eq!(
            p.tags,
            [
                ("region", "east"),
                ("pico_partition", "3"),
                ("pico_topic", "a b,c")
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
        );
        assert_eq!(
            series_key(&p.line),
            r"readings,region=east,pico_partition=3,pico_topic=a\ b\,c"
        );
        let p = p.line;
        assert_eq!(
            p,
            format!(
                r#"readings,region=east,pico_partition=3,pico_topic=a\ b\,c pico_offset=1000007i,pico_digest={}i,m3=12i,note="say \"hi\"",ok=true,tags="[1]" 1700000000000000007"#,
                digest31(&r)
            )
        );
    }

    #[test]
    fn backslashes_stay_literal_where_influx_keeps_them() {
        let r = Record::new(RecordId::new("a\\;b", 0, 1), "{}").with_timestamp_ms(1);
        let p = json_point(&mapping(), &Scope::default(), &r, TimestampPolicy::Reject).unwrap();
        assert!(p.line.contains("pico_topic=a\\;b "), "{p:?}");
        assert_eq!(p.tags[0], ("region".to_owned(), String::new()));
    }

    #[test]
    fn replays_land_on_the_same_time_and_neighbours_do_not() {
        assert_eq!(point_time_ns(5, 42), point_time_ns(5, 42));
        assert_ne!(point_time_ns(5, 42), point_time_ns(5, 43));
        assert_eq!(point_time_ns(5, 42), Some(5_000_042));
        assert_eq!(point_time_ns(i64::MAX, 0), None);
    }

    #[test]
    fn line_protocol_gets_tags_field_and_time() {
        let r = Record::new(
            RecordId::new("t", 0, 9),
            "cpu,host=a\\ b usage=0.5,msg=\"x y\"",
        )
        .with_timestamp_ms(2);
        assert_eq!(
            line_point(&Scope::default(), &r, TimestampPolicy::Reject).unwrap(),
            format!(
                "cpu,host=a\\ b,pico_partition=0,pico_topic=t usage=0.5,msg=\"x y\",pico_offset=9i,pico_digest={}i 2000009",
                digest31(&r)
            )
        );
        let own = Record::new(RecordId::new("t", 0, 9), "cpu v=1 123");
        assert_eq!(
            line_point(&Scope::default(), &own, TimestampPolicy::Reject).unwrap(),
            format!(
                "cpu,pico_partition=0,pico_topic=t v=1,pico_offset=9i,pico_digest={}i 123",
                digest31(&own)
            )
        );
    }

    #[test]
    fn what_influx_cannot_hold_is_a_reason() {
        let s = Scope::default();
        for (r, needle) in [
            (Record::new(RecordId::new("t", 0, 1), "{}"), "no timestamp"),
            (
                Record::new(RecordId::new("", 0, 1), "{}").with_timestamp_ms(1),
                "empty",
            ),
            (
                Record::new(RecordId::new("t", 0, u64::MAX), "{}").with_timestamp_ms(1),
                "i64",
            ),
            (
                Record::new(RecordId::new("t", 0, 1), "[1]").with_timestamp_ms(1),
                "object",
            ),
            (
                Record::new(RecordId::new("t", 0, 1), r#"{"a":"x\ny"}"#).with_timestamp_ms(1),
                "line break",
            ),
        ] {
            let err = json_point(&mapping(), &s, &r, TimestampPolicy::Reject).unwrap_err();
            assert!(err.contains(needle), "{err}");
        }
    }
}
