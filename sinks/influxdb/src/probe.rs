//! The replay probe: one InfluxQL query that tells whether a batch's points are all there with
//! the same content, so a replay is answered without rewriting them.
//!
//! For a batch with a fixed measurement (JSON payloads), the sink asks for
//! `count(pico_offset)` and `sum(pico_digest)` over the batch's tags `pico_topic`,
//! `pico_partition` and its time range (time is indexed; the query reads only those points).
//! Equal count and sum to the batch's own: every point is there with this content, and the
//! write is skipped. Anything else — or a probe that cannot run (line-protocol payloads with
//! their own measurements, a v2 bucket without a v1 mapping, an error) — is inconclusive: the
//! points are written, and a replay overwrites in place as before.

use serde::Deserialize;

/// An InfluxQL identifier: double-quoted, with `\` and `"` escaped.
pub(crate) fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('\\', "\\\\").replace('"', "\\\""))
}

/// An InfluxQL string literal: single-quoted, with `\` and `'` escaped.
pub(crate) fn literal(value: &str) -> String {
    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// The query of a probe.
pub(crate) fn query(measurement: &str, topic: &str, partition: u32, from: i64, to: i64) -> String {
    format!(
        "SELECT count(\"pico_offset\"), sum(\"pico_digest\") FROM {} WHERE \"pico_topic\" = {} \
         AND \"pico_partition\" = '{partition}' AND time >= {from} AND time <= {to}",
        ident(measurement),
        literal(topic)
    )
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    results: Vec<Statement>,
}

#[derive(Deserialize)]
struct Statement {
    #[serde(default)]
    series: Vec<Series>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct Series {
    #[serde(default)]
    values: Vec<Vec<serde_json::Value>>,
}

/// The first row of a `/query` answer: `Some(None)` when nothing matched (no series), `None`
/// when the answer is an error or not understood (a series without rows included).
pub(crate) fn first_row(body: &str) -> Option<Option<Vec<serde_json::Value>>> {
    let answer: Answer = serde_json::from_str(body).ok()?;
    let statement = answer.results.into_iter().next()?;
    if statement.error.is_some() {
        return None;
    }
    let Some(series) = statement.series.into_iter().next() else {
        return Some(None);
    };
    series.values.into_iter().next().map(Some)
}

/// `(count, sum)` from a `/query` answer; `(0, 0)` when no point matched; `None` when the
/// answer is an error or not understood.
pub(crate) fn read(body: &str) -> Option<(i64, i64)> {
    let Some(row) = first_row(body)? else {
        return Some((0, 0));
    };
    Some((row.get(1)?.as_i64()?, row.get(2)?.as_i64()?))
}

/// The time of a line-protocol point: its last space-separated token.
pub(crate) fn line_time(line: &str) -> Option<i64> {
    line.rsplit(' ').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_and_queries() {
        assert_eq!(
            read(
                r#"{"results":[{"statement_id":0,"series":[{"name":"m","columns":["time","count","sum"],"values":[[0,10,12345]]}]}]}"#
            ),
            Some((10, 12345))
        );
        assert_eq!(read(r#"{"results":[{"statement_id":0}]}"#), Some((0, 0)));
        assert_eq!(
            read(r#"{"results":[{"statement_id":0,"error":"database not found"}]}"#),
            None
        );
        assert_eq!(read("not json"), None);
        let q = query("read\"ings", "it's", 3, 1, 2);
        assert!(q.contains("FROM \"read\\\"ings\""), "{q}");
        assert!(q.contains("'it\\'s'"), "{q}");
        assert_eq!(
            line_time("m,a=b f=1i 1700000000000000007"),
            Some(1_700_000_000_000_000_007)
        );
    }
}
