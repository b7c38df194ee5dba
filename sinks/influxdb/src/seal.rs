//! The batch seal: a replay answered by reading one point.
//!
//! The count probe ([`crate::probe`]) reads every point of a batch; when the batch spans many
//! series (one per meter, say) InfluxDB opens a cursor per series and the probe costs about as
//! much as the write it saves. So once every point of a batch is written (the write answered
//! 2xx, nothing rejected), the sink writes three more integer fields onto the batch's **last**
//! point — [`SEAL_FIRST`], [`SEAL_COUNT`], [`SEAL_DIGEST`]: the batch's first offset, its record
//! count and the sum of its records' `pico_digest` values. InfluxDB merges fields written to an
//! existing point (same series, same time), so the point keeps its data.
//!
//! A batch whose last point carries its own seal was written whole with this content: the
//! replay is answered by one query of one series at one time, without converting the batch.
//! The seal is written only after the data, so a write cut short leaves no seal and the replay
//! falls back to the count probe, then to rewriting (overwrite in place). What the seal cannot
//! see: points deleted behind the sink's back while the last one stays (a `DELETE` of part of a
//! batch's time range) — a replay of that batch is then skipped. Dropping the measurement or the
//! series drops the seal with it.

use crate::line::{DIGEST_FIELD, series_key};
use crate::probe::{first_row, ident, literal};

/// Integer field on a batch's last point: the batch's first offset.
pub const SEAL_FIRST: &str = "pico_seal_first";
/// Integer field on a batch's last point: the batch's record count.
pub const SEAL_COUNT: &str = "pico_seal_count";
/// Integer field on a batch's last point: the sum of the batch's `pico_digest` values.
pub const SEAL_DIGEST: &str = "pico_seal_digest";
/// Every seal field (not payload: a reader of the measurement skips them).
pub const SEAL_FIELDS: [&str; 3] = [SEAL_FIRST, SEAL_COUNT, SEAL_DIGEST];

/// What a batch's seal says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seal {
    /// First offset of the batch.
    pub first: i64,
    /// Records in the batch.
    pub count: i64,
    /// Sum of the records' `pico_digest` values.
    pub digest: i64,
}

/// What the last point of a batch holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// The point carries this batch's seal: the batch is stored whole.
    Sealed,
    /// The point is there with the record's content but without this seal (a write cut before
    /// its seal, another batch boundary, an older sink): the count probe decides.
    Unsealed,
    /// No such point with this content: a first write.
    Absent,
}

/// The line that seals a batch: `data_line`'s series and time with the seal fields.
pub(crate) fn line(data_line: &str, time: i64, seal: Seal) -> String {
    format!(
        "{} {SEAL_FIRST}={}i,{SEAL_COUNT}={}i,{SEAL_DIGEST}={}i {time}",
        series_key(data_line),
        seal.first,
        seal.count,
        seal.digest
    )
}

/// The query for the last point: every tag of its series pinned (an index lookup of one
/// series) and its exact time.
pub(crate) fn query(measurement: &str, tags: &[(String, String)], time: i64) -> String {
    let mut q = format!(
        "SELECT {}, {}, {}, {} FROM {} WHERE time = {time}",
        ident(DIGEST_FIELD),
        ident(SEAL_FIRST),
        ident(SEAL_COUNT),
        ident(SEAL_DIGEST),
        ident(measurement)
    );
    for (name, value) in tags {
        q.push_str(&format!(" AND {} = {}", ident(name), literal(value)));
    }
    q
}

/// Reads the answer of [`query`] for a batch with `expected` seal whose last record has
/// `last_digest`; `None` when the answer is an error or not understood.
pub(crate) fn read(body: &str, expected: Seal, last_digest: i64) -> Option<Found> {
    let Some(row) = first_row(body)? else {
        return Some(Found::Absent);
    };
    let int = |i: usize| row.get(i).and_then(serde_json::Value::as_i64);
    if int(1) != Some(last_digest) {
        return Some(Found::Absent);
    }
    let found = (|| {
        Some(Seal {
            first: int(2)?,
            count: int(3)?,
            digest: int(4)?,
        })
    })();
    Some(if found == Some(expected) {
        Found::Sealed
    } else {
        Found::Unsealed
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEAL: Seal = Seal {
        first: 10,
        count: 3,
        digest: 99,
    };

    #[test]
    fn the_seal_lands_on_the_last_point() {
        assert_eq!(
            line(
                r#"m,a=x\ y,pico_topic=t f="a b",pico_offset=12i 1700"#,
                1700,
                SEAL
            ),
            r"m,a=x\ y,pico_topic=t pico_seal_first=10i,pico_seal_count=3i,pico_seal_digest=99i 1700"
        );
    }

    #[test]
    fn the_query_pins_one_series_at_one_time() {
        let q = query(
            "read\"ings",
            &[
                ("meter".into(), "it's".into()),
                ("pico_topic".into(), "t".into()),
            ],
            5,
        );
        assert_eq!(
            q,
            "SELECT \"pico_digest\", \"pico_seal_first\", \"pico_seal_count\", \"pico_seal_digest\" \
             FROM \"read\\\"ings\" WHERE time = 5 AND \"meter\" = 'it\\'s' AND \"pico_topic\" = 't'"
        );
    }

    #[test]
    fn answers_are_read() {
        let row = |v: &str| {
            format!(
                r#"{{"results":[{{"statement_id":0,"series":[{{"name":"m","columns":["time","pico_digest","a","b","c"],"values":[[5,{v}]]}}]}}]}}"#
            )
        };
        assert_eq!(read(&row("7,10,3,99"), SEAL, 7), Some(Found::Sealed));
        assert_eq!(read(&row("7,0,3,99"), SEAL, 7), Some(Found::Unsealed));
        assert_eq!(
            read(&row("7,null,null,null"), SEAL, 7),
            Some(Found::Unsealed)
        );
        assert_eq!(read(&row("8,10,3,99"), SEAL, 7), Some(Found::Absent));
        assert_eq!(
            read(r#"{"results":[{"statement_id":0}]}"#, SEAL, 7),
            Some(Found::Absent)
        );
        assert_eq!(read(r#"{"results":[{"error":"x"}]}"#, SEAL, 7), None);
    }
}
